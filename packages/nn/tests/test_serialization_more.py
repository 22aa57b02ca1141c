"""nn.save/nn.load: paths and file objects, whole modules, and stored class paths that
must never run anything but an installed Module subclass."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from lamina import autograd as ag
from lamina import ndarray as nd
from lamina import nn
from safetensors import safe_open
from safetensors.numpy import save_file


class MLP(nn.Module):
    """Keeps its constructor arguments as attributes, so a whole save can rebuild it."""

    def __init__(self, sizes: tuple[int, ...], act: str = "relu", device=None) -> None:
        super().__init__()
        self.sizes, self.act = tuple(sizes), act
        self.layers = nn.ModuleList(nn.Linear(a, b, device=device)
                                    for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            x = x.relu() if i < len(self.layers) - 1 and self.act == "relu" else x
        return x


class ConvNet(nn.Module):
    """A conv net with buffers (BatchNorm running statistics and a persistent scale)."""

    def __init__(self, channels: int = 3, classes: int = 4, device=None) -> None:
        super().__init__()
        self.channels, self.classes = channels, classes
        self.conv = nn.Conv2d(1, channels, 3, padding=1, device=device)
        self.norm = nn.BatchNorm1d(channels * 16, device=device)
        self.head = nn.Linear(channels * 16, classes, device=device)
        self.register_buffer("scale", ag.tensor(np.full(classes, 0.5, np.float32),
                                                device=device))

    def forward(self, x):
        h = self.conv(x).relu().reshape(x.shape[0], -1)
        return self.head(self.norm(h)) * self.scale


class Unkept(nn.Module):
    """Does not keep its argument: saving it stores the class path only."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(2, width)


def _targets(tmp_path):
    """Write-then-read pairs: a path, a real binary file, an in-memory buffer."""
    path = tmp_path / "ck.safetensors"
    buffer = io.BytesIO()
    return {
        "path": (lambda obj: nn.save(obj, path), lambda **kw: nn.load(path, **kw)),
        "file": (lambda obj: _save_to_file(obj, path),
                 lambda **kw: _load_from_file(path, **kw)),
        "bytesio": (lambda obj: _save_to_buffer(obj, buffer),
                    lambda **kw: nn.load(io.BytesIO(buffer.getvalue()), **kw)),
    }


def _save_to_buffer(obj, buffer):
    buffer.seek(0)
    buffer.truncate()  # each save replaces the last, as a path's file does
    nn.save(obj, buffer)


def _save_to_file(obj, path):
    with open(path, "wb") as f:
        nn.save(obj, f)


def _load_from_file(path, **kw):
    with open(path, "rb") as f:
        return nn.load(f, **kw)


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, ag.Tensor):
        assert a.dtype == b.dtype and a.device == b.device and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("target", ["path", "file", "bytesio"])
def test_tensors_dicts_lists_and_state_dicts_round_trip(tmp_path, device, target):
    save, load = _targets(tmp_path)[target]
    ag.manual_seed(0)
    x = ag.randn(3, 4, device=device)
    objects = [x, {"a": x, "b": [x * 2, ag.tensor([1, 2], device=device)]},
               [x, (x + 1, "s", 3)], MLP((4, 5, 2), device=device).state_dict()]
    for obj in objects:
        save(obj)
        back = load(device=device)
        _same(dict(obj) if isinstance(obj, dict) else obj,
              dict(back) if isinstance(back, dict) else back)


@pytest.mark.parametrize("target", ["path", "file", "bytesio"])
@pytest.mark.parametrize("kind", ["mlp", "convnet", "linear-no-bias", "batchnorm"])
def test_whole_modules_round_trip(tmp_path, device, target, kind):
    save, load = _targets(tmp_path)[target]
    ag.manual_seed(1)
    model = {"mlp": lambda: MLP((4, 8, 3), device=device),
             "convnet": lambda: ConvNet(2, 3, device=device),
             "linear-no-bias": lambda: nn.Linear(4, 3, bias=False, device=device),
             "batchnorm": lambda: nn.BatchNorm1d(4, momentum=0.3, device=device)}[kind]()
    x = ag.randn(*((5, 1, 4, 4) if kind == "convnet" else (5, 4)), device=device)
    model(x)  # training-mode forward: BatchNorm running stats move off their defaults
    model.eval()
    save(model)
    nd.manual_seed(7)
    back = load()
    drawn_after_load = ag.randn(3).numpy()
    nd.manual_seed(7)
    np.testing.assert_array_equal(ag.randn(3).numpy(), drawn_after_load)  # load drew nothing
    assert type(back) is type(model) and back is not model and not back.training
    assert repr(back) == repr(model)
    _same(dict(back.state_dict()), dict(model.state_dict()))
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())


def test_a_rebuilt_module_goes_to_the_device_asked_for(tmp_path, device):
    model = MLP((2, 3), device=device)
    nn.save(model, tmp_path / "m.safetensors")
    back = nn.load(tmp_path / "m.safetensors", device="numpy")
    assert all(str(p.device) == "numpy" for p in back.parameters())
    saved_on = next(model.parameters()).device
    assert all(p.device == saved_on for p in nn.load(tmp_path / "m.safetensors").parameters())


def test_a_module_whose_arguments_are_not_kept_wants_module_or_a_factory(tmp_path, device):
    path = tmp_path / "m.safetensors"
    for model, make in ((Unkept(3), lambda: Unkept(3)),
                        (nn.Sequential(nn.Linear(2, 3, device=device), nn.ReLU()),
                         lambda: nn.Sequential(nn.Linear(2, 3, device=device), nn.ReLU()))):
        model.eval()
        nn.save(model, path)
        with pytest.raises(nn.CheckpointError, match="constructor arguments could not be "
                           "stored.*pass module="):
            nn.load(path)
        into = make()
        assert nn.load(path, module=into) is into and not into.training
        _same(dict(into.state_dict()), dict(model.state_dict()))
        built = nn.load(path, module=make)
        assert type(built) is type(model)
        _same(dict(built.state_dict()), dict(model.state_dict()))
        with pytest.raises(nn.StateDictError, match="missing keys"):
            nn.load(path, module=nn.Linear(2, 3))
        with pytest.raises(TypeError, match="module= must be a Module or a factory"):
            nn.load(path, module=lambda: "not a module")
        described = nn.load(path, as_numpy=True)  # inspects without building anything
        assert described["args"] is None and described["class"].endswith(
            type(model).__qualname__)
        assert isinstance(described["state_dict"]["0.weight" if "0.weight" in
                                                  described["state_dict"] else "fc.weight"],
                          np.ndarray)


def test_module_argument_loads_a_plain_state_dict_checkpoint(tmp_path):
    model = MLP((3, 2))
    nn.save(model.state_dict(), tmp_path / "sd.safetensors")
    into = MLP((3, 2))
    assert nn.load(tmp_path / "sd.safetensors", module=into) is into
    _same(dict(into.state_dict()), dict(model.state_dict()))
    nn.save([1, 2], tmp_path / "list.safetensors")
    with pytest.raises(TypeError, match="holds a list, not a state dict"):
        nn.load(tmp_path / "list.safetensors", module=into)


def test_a_changed_setting_is_caught_before_any_state_is_loaded(tmp_path):
    model = MLP((4, 8, 3))
    model.sizes = (4, 9, 3)  # the kept argument no longer describes the layers
    nn.save(model, tmp_path / "m.safetensors")
    with pytest.raises(nn.CheckpointError, match="(?s)does not take the saved state.*"
                       "pass module="):
        nn.load(tmp_path / "m.safetensors")


def test_text_mode_files_raise_type_error_naming_the_fix(tmp_path):
    path = tmp_path / "ck.safetensors"
    with open(path, "w") as f, pytest.raises(TypeError, match="text mode.*mode 'wb'"):
        nn.save({"w": ag.ones(2)}, f)
    nn.save({"w": ag.ones(2)}, path)
    with open(path) as f, pytest.raises(TypeError, match="text mode.*mode 'rb'"):
        nn.load(f)
    with pytest.raises(TypeError, match="text mode"):
        nn.save({"w": ag.ones(2)}, io.StringIO())


def test_a_module_inside_a_container_asks_for_its_state_dict(tmp_path):
    with pytest.raises(TypeError, match="at 'model'.*state_dict"):
        nn.save({"model": nn.Linear(2, 2)}, tmp_path / "x.safetensors")


def test_a_damaged_byte_stream_is_a_checkpoint_error():
    buffer = io.BytesIO()
    nn.save({"w": ag.ones(4)}, buffer)
    raw = bytearray(buffer.getvalue())
    for damaged in (bytes(raw[:-3]), b"", bytes(raw[:-5] + bytes([raw[-5] ^ 0xFF]) + raw[-4:])):
        with pytest.raises(nn.CheckpointError, match="corrupt"):
            nn.load(io.BytesIO(damaged))


def _with_class(path, new_class, args="keep"):
    """Rewrite a whole-module checkpoint to name ``new_class``, checksum recomputed as a
    tamperer would (the checksum guards against damage, not against an author)."""
    from lamina.nn._serialization import _FORMAT, _digest, _header

    with safe_open(str(path), framework="numpy") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
        tree = json.loads(f.metadata()["tree"])
    tree["__module__"]["class"] = new_class
    if args != "keep":
        tree["__module__"]["args"] = args
    text = json.dumps(tree)
    save_file(tensors, str(path), metadata={"format": _FORMAT, "tree": text,
                                            "sha256": _digest(tensors, _header(_FORMAT, text))})


@pytest.mark.parametrize("target,why", [
    ("os:system", "not a lamina.nn.Module subclass; refusing to call it"),
    ("builtins:eval", "not a lamina.nn.Module subclass"),
    ("subprocess:Popen", "not a lamina.nn.Module subclass"),
    ("collections:OrderedDict", "type, not a lamina.nn.Module subclass"),
    ("os:system('echo hi')", "not a 'package.module:QualName' path"),
    ("no_such_package_xyz:Model", "not installed here"),
])
def test_a_tampered_class_path_raises_without_calling_anything(tmp_path, monkeypatch,
                                                               target, why):
    import builtins
    import os
    import subprocess

    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(("system", a)))
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: calls.append(("popen", a)))
    path = tmp_path / "m.safetensors"
    nn.save(nn.Linear(2, 2), path)
    _with_class(path, target, args={"__dict__": [["command", {"__value__": "echo hi"}]]})
    real_eval = builtins.eval
    monkeypatch.setattr(builtins, "eval", lambda *a: calls.append(("eval", a)))
    try:
        with pytest.raises(nn.CheckpointError, match=why):
            nn.load(path)
    finally:
        monkeypatch.setattr(builtins, "eval", real_eval)
    assert calls == []


def test_a_module_class_path_with_wrong_arguments_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "m.safetensors"
    nn.save(nn.Linear(2, 2), path)
    _with_class(path, "lamina.nn:Linear",
                args={"__dict__": [["in_features", {"__value__": "two"}]]})
    with pytest.raises(nn.CheckpointError, match="do not build"):
        nn.load(path)
