"""Checkpoints: safetensors round trips, optimizer state, bad files load nothing."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from lamina import autograd as ag
from lamina import nn, optim
from safetensors import safe_open
from safetensors.numpy import load_file, save_file


def _trained():
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    opt = optim.AdamW(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        nn.CrossEntropyLoss()(model(ag.randn(6, 4)), ag.tensor([0, 1, 2, 0, 1, 2])).backward()
        opt.step()
    return model, opt


def test_state_dict_round_trip(tmp_path):
    model, opt = _trained()
    path = tmp_path / "model.safetensors"
    nn.save(model.state_dict(), path)
    loaded = nn.load(path)
    assert list(loaded) == list(model.state_dict())
    fresh = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    fresh.load_state_dict(loaded)
    for (k, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
        assert a.dtype == b.dtype
    plain = load_file(str(path))  # any safetensors reader sees ordinary named tensors
    assert plain["0.weight"].shape == (8, 4) and plain["1.num_batches_tracked"].dtype == np.int64


def test_model_and_optimizer_in_one_file(tmp_path):
    model, opt = _trained()
    path = tmp_path / "ckpt.safetensors"
    nn.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 7}, path)
    ckpt = nn.load(path)
    assert ckpt["epoch"] == 7
    saved = ckpt["optimizer"]
    assert saved["param_groups"][0]["betas"] == (0.9, 0.999)
    assert saved["state"][0]["step"] == 2
    model2 = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    model2.load_state_dict(ckpt["model"])
    opt2 = optim.AdamW(model2.parameters(), lr=0.5)
    opt2.load_state_dict(saved)
    x, y = ag.randn(6, 4), ag.tensor([2, 1, 0, 2, 1, 0])
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        nn.CrossEntropyLoss()(m(x), y).backward()
        o.step()
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)


def test_nested_values_round_trip(tmp_path):
    obj = {"a": [1, 2.5, None, "x", True], "b": (np.arange(3), {"c": ag.ones(2)}),
           4: "no"}
    with pytest.raises(TypeError, match="keys"):
        nn.save(obj, tmp_path / "bad.safetensors")
    del obj[4]
    nn.save(obj, tmp_path / "ok.safetensors")
    back = nn.load(tmp_path / "ok.safetensors")
    assert back["a"] == [1, 2.5, None, "x", True]
    assert isinstance(back["b"], tuple) and back["b"][0].tolist() == [0, 1, 2]
    assert isinstance(back["b"][1]["c"], ag.Tensor)
    with pytest.raises(TypeError, match="no pickle"):
        nn.save({"f": object()}, tmp_path / "obj.safetensors")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "empty"])
def test_corrupt_checkpoint_raises_and_loads_nothing(tmp_path, damage):
    model, _ = _trained()
    path = tmp_path / "model.safetensors"
    nn.save(model.state_dict(), path)
    raw = bytearray(path.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) - 20]
    elif damage == "garbage":
        raw = bytearray(b"\x00" * 8) + raw[8:]
    elif damage == "flip":
        raw[-5] ^= 0xFF
    else:
        raw = bytearray()
    path.write_bytes(bytes(raw))
    target = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    before = {k: v.numpy().copy() for k, v in target.state_dict().items()}
    with pytest.raises(nn.CheckpointError, match="corrupt"):
        target.load_state_dict(nn.load(path))
    for k, v in target.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_wrong_keys_and_shapes_are_all_listed(tmp_path):
    path = tmp_path / "other.safetensors"
    nn.save(nn.Sequential(nn.Linear(4, 5), nn.Linear(5, 3)).state_dict(), path)
    target = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    with pytest.raises(nn.StateDictError) as info:
        target.load_state_dict(nn.load(path))
    text = str(info.value)
    for fragment in ("0.weight: shape (5, 4)", "missing keys: 2.weight, 2.bias",
                     "unexpected keys: 1.weight, 1.bias"):
        assert fragment in text


def test_plain_safetensors_and_missing_file(tmp_path):
    path = tmp_path / "plain.safetensors"
    save_file({"w": np.ones((2, 2), np.float32)}, str(path), metadata={"x": json.dumps(1)})
    assert nn.load(path)["w"].shape == (2, 2)
    assert isinstance(nn.load(path, as_numpy=True)["w"], np.ndarray)
    with pytest.raises(FileNotFoundError, match="no such checkpoint"):
        nn.load(tmp_path / "absent.safetensors")


@pytest.mark.parametrize("stored,want", [
    (np.array([0, 2**63 - 1], np.uint64), np.array([0, 2**63 - 1], np.int64)),
    (np.array([0, 255], np.uint8), np.array([0, 255], np.int64)),
    (np.array([-128, 127], np.int8), np.array([-128, 127], np.int64)),
    (np.array([2**32 - 1], np.uint32), np.array([2**32 - 1], np.int64)),
    (np.array([True, False]), np.array([True, False])),  # a mask stays a mask
    (np.array([1.5, -2.25], np.float16), np.array([1.5, -2.25], np.float16)),
], ids=lambda v: v.dtype.name if isinstance(v, np.ndarray) else None)
def test_other_dtypes_load_only_where_every_value_is_kept(tmp_path, stored, want):
    path = tmp_path / "plain.safetensors"
    save_file({"w": stored}, str(path))
    got = nn.load(path)["w"].numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert nn.load(path, as_numpy=True)["w"].dtype == stored.dtype


@pytest.mark.parametrize("stored,why", [
    (np.array([2**64 - 1], np.uint64), "uint64 and has values of 2\\*\\*63 or more"),
    (np.array([1 + 2j], np.complex64), "complex64 and has no Lamina dtype"),
], ids=["uint64-2**64-1", "complex64"])
def test_other_dtypes_that_would_change_values_raise(tmp_path, stored, why):
    path = tmp_path / "plain.safetensors"
    save_file({"w": stored}, str(path))
    with pytest.raises(nn.CheckpointError, match=f"entry 'w' of .*plain.safetensors is {why}"):
        nn.load(path)
    np.testing.assert_array_equal(nn.load(path, as_numpy=True)["w"], stored)


def test_a_structure_nested_100k_deep_is_a_checkpoint_error(tmp_path):
    from lamina.nn._serialization import _FORMAT, _digest, _header

    depth = 100_000
    tree = '{"__list__": [' * depth + '{"__value__": 1}' + "]}" * depth
    path = tmp_path / "deep.safetensors"
    save_file({"w": np.ones(1, np.float32)}, str(path), metadata={
        "format": _FORMAT, "tree": tree,
        "sha256": _digest({"w": np.ones(1, np.float32)}, _header(_FORMAT, tree))})
    with pytest.raises(nn.CheckpointError, match="nested deeper than the interpreter's "
                       "recursion limit"):
        nn.load(path)


def test_bool_tensors_round_trip_as_bool_and_still_mask(tmp_path, device):
    x = ag.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3), device=device)
    mask = ag.tensor(np.array([True, False, True, False]), device=device)
    path = tmp_path / "mask.safetensors"
    nn.save({"mask": mask, "x": x}, path)
    back = nn.load(path, device=device)
    assert back["mask"].dtype == mask.dtype and back["mask"].device == mask.device
    assert load_file(str(path))["mask"].dtype == np.bool_  # stored as safetensors BOOL
    np.testing.assert_array_equal(back["x"][back["mask"]].numpy(), x[mask].numpy())
    assert back["x"][back["mask"]].shape == (2, 3)  # masked rows, not rows 1, 0, 1, 0
    torch = pytest.importorskip("torch")
    t = torch.arange(12.0).reshape(4, 3)
    assert tuple(t[torch.tensor([True, False, True, False])].shape) == (2, 3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_float_tensors_come_back_in_their_dtype(tmp_path, device, dtype):
    if dtype not in ag.tensor(0.0, device=device).device.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    x = ag.tensor(np.random.default_rng(0).standard_normal(7), dtype=dtype, device=device)
    net = nn.Linear(3, 2).to(device=device, dtype=dtype)
    path = tmp_path / "narrow.safetensors"
    nn.save({"x": x, "net": net.state_dict()}, path)
    back = nn.load(path, device=device)
    assert back["x"].dtype == dtype and back["net"]["weight"].dtype == dtype
    np.testing.assert_array_equal(back["x"].float().numpy(), x.float().numpy())
    nn.Linear(3, 2).to(device=device, dtype=dtype).load_state_dict(back["net"])
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file as torch_load_file

    # PyTorch reads the entries in their dtype and to the bit
    stored = torch_load_file(str(path))["x"]
    assert stored.dtype is getattr(torch, dtype)
    np.testing.assert_array_equal(stored.float().numpy(), x.float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pytorch_narrow_checkpoints_load_in_their_dtype(tmp_path, dtype):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as torch_save_file

    src = torch.randn(3, 5).to(getattr(torch, dtype))
    path = tmp_path / "torch.safetensors"
    torch_save_file({"w": src, "n": torch.arange(4)}, str(path))
    back = nn.load(path)
    assert back["w"].dtype == dtype and back["n"].dtype == "int64"
    np.testing.assert_array_equal(back["w"].float().numpy(), src.float().numpy())
    assert nn.load(path, as_numpy=True)["w"].dtype == (np.float16 if dtype == "float16"
                                                      else np.float32)
    np.testing.assert_array_equal(nn.load(io.BytesIO(path.read_bytes()))["w"].float().numpy(),
                                  src.float().numpy())


def test_checkpoints_of_bfloat16_as_f32_entries_still_load(tmp_path):
    """Before BF16 entries, a bfloat16 tensor was an F32 entry plus a dtype record."""
    from lamina.nn._serialization import _FORMAT, _digest, _header

    values = np.array([1.5, -2.0, 2.0**100], np.float32)  # bfloat16 values
    tree = json.dumps({"__dict__": [["w", {"__array__": "w", "kind": "tensor",
                                            "dtype": "bfloat16"}]]})
    path = tmp_path / "old.safetensors"
    save_file({"w": values}, str(path), metadata={
        "format": _FORMAT, "tree": tree, "sha256": _digest({"w": values}, _header(_FORMAT, tree))})
    back = nn.load(path)["w"]
    assert back.dtype == "bfloat16"
    np.testing.assert_array_equal(back.float().numpy(), values)


def _rewrite_metadata(path, **changes):
    """The file with metadata entries changed and its arrays and checksum kept."""
    with safe_open(str(path), framework="numpy") as f:
        metadata = f.metadata()
        tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    metadata.update(changes)
    save_file(tensors, str(path), metadata=metadata)
    return metadata


@pytest.mark.parametrize("edit", ["value", "key", "format"])
def test_an_edited_structure_record_is_rejected(tmp_path, edit):
    path = tmp_path / "ck.safetensors"
    nn.save({"epoch": 7, "options": {"lr": 0.1}, "w": np.ones(2, np.float32)}, path)
    with safe_open(str(path), framework="numpy") as f:
        tree = f.metadata()["tree"]
    if edit == "value":
        _rewrite_metadata(path, tree=tree.replace('{"__value__": 7}', '{"__value__": 2}'))
    elif edit == "key":
        _rewrite_metadata(path, tree=tree.replace('"lr"', '"momentum"'))
    else:  # claims the older format, whose checksum covered the arrays only
        _rewrite_metadata(path, format="lamina-checkpoint-1")
    with pytest.raises(nn.CheckpointError, match="corrupt or was edited: its data or "
                       "metadata does not match|corrupt or was edited: its data does not"):
        nn.load(path)


def test_a_checkpoint_of_the_first_format_loads_with_a_warning(tmp_path):
    from lamina.nn._serialization import _LEGACY_FORMAT, _digest

    w = np.arange(3, dtype=np.float32)
    tree = json.dumps({"__dict__": [["w", {"__array__": "w", "kind": "numpy"}],
                                    ["epoch", {"__value__": 4}]]})
    path = tmp_path / "old.safetensors"
    # as lamina-checkpoint-1 wrote it: the checksum covers the arrays only
    save_file({"w": w}, str(path), metadata={"format": _LEGACY_FORMAT, "tree": tree,
                                             "sha256": _digest({"w": w})})
    with pytest.warns(UserWarning, match="predates the metadata checksum"):
        back = nn.load(path)
    assert back["epoch"] == 4
    np.testing.assert_array_equal(back["w"], w)
    save_file({"w": w + 1}, str(path), metadata={"format": _LEGACY_FORMAT, "tree": tree,
                                                 "sha256": _digest({"w": w})})
    with pytest.raises(nn.CheckpointError, match="corrupt"):  # its arrays are still checked
        nn.load(path)


def test_concurrent_saves_to_one_path_do_not_share_a_temporary_file(tmp_path, monkeypatch):
    import threading

    import lamina.nn._serialization as ser

    path = tmp_path / "ck.safetensors"
    both_written = threading.Barrier(2, timeout=30)
    real_save_file = ser.serialize_file

    def save_file_then_wait(tensors, filename, metadata=None):
        real_save_file(tensors, filename, metadata=metadata)
        both_written.wait()  # the two temporary files exist at the same time

    monkeypatch.setattr(ser, "serialize_file", save_file_then_wait)
    errors: list[BaseException] = []

    def save(value: float) -> None:
        try:
            nn.save({"w": np.full(1000, value, np.float32), "v": value}, path)
        except BaseException as exc:  # noqa: BLE001  (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(v,)) for v in (1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.safetensors"]
    back = nn.load(path, as_numpy=True)  # one of the two, whole
    assert back["v"] in (1.0, 2.0)
    np.testing.assert_array_equal(back["w"], np.full(1000, back["v"], np.float32))
