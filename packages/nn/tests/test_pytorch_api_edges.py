"""PyTorch API edges (issue 30): writing ``Module._parameters``/``_buffers`` directly,
and ``chunk``/``split`` on empty dims and uneven sizes, each checked against PyTorch."""

from __future__ import annotations

import copy
import pickle
import weakref
from typing import Any

import numpy as np
import pytest
import torch
from lamina import autograd as ag
from lamina import nn
from lamina.ndarray import ShapeError


def _pair(device: str) -> tuple[nn.Linear, torch.nn.Linear]:
    return nn.Linear(2, 3).to(device), torch.nn.Linear(2, 3)


def _views(m: Any) -> dict[str, list[str]]:
    """Everything that lists a module's state, by name."""
    return {"parameters": [n for n, _ in m.named_parameters()],
            "buffers": [n for n, _ in m.named_buffers()],
            "state_dict": list(m.state_dict()),
            "count": [str(len(list(m.parameters())))]}


# ------------------------------------------------------------------ _parameters / _buffers
def test_writing_parameters_table_registers_like_torch(device):
    m, t = _pair(device)
    p = nn.Parameter(ag.ones(3, device=device))
    m._parameters["bias"] = p
    m._parameters["extra"] = nn.Parameter(ag.zeros(1, device=device))
    t._parameters["bias"] = torch.nn.Parameter(torch.ones(3))
    t._parameters["extra"] = torch.nn.Parameter(torch.zeros(1))
    assert m.bias is p
    assert tuple(m.extra.shape) == tuple(t.extra.shape) == (1,)
    assert _views(m) == _views(t)
    np.testing.assert_allclose(m(ag.ones(1, 2, device=device)).detach().numpy(),
                               (m.weight.detach().numpy().sum(1) + 1.0)[None], rtol=1e-6)


def test_deleting_from_tables_unregisters_like_torch(device):
    m, t = _pair(device)
    for mod in (m, t):
        del mod._parameters["bias"]
        assert not hasattr(mod, "bias")
    m._buffers["running"] = ag.zeros(2, device=device)
    t._buffers["running"] = torch.zeros(2)
    assert _views(m) == _views(t)
    assert m.running.tolist() == [0.0, 0.0]
    for mod in (m, t):
        assert mod._buffers.pop("running").tolist() == [0.0, 0.0]
        assert not hasattr(mod, "running")
    assert _views(m) == _views(t)


def test_table_methods_keep_attributes_in_sync(device):
    m, t = _pair(device)
    for mod, lib in ((m, ag), (t, torch)):
        mod._buffers.update({"a": lib.zeros(1), "b": lib.ones(1)})
        mod._buffers.setdefault("c", lib.zeros(2))
        mod._buffers.popitem()
        mod._parameters.clear()
    assert _views(m) == _views(t) == {"parameters": [], "buffers": ["a", "b"],
                                      "state_dict": ["a", "b"], "count": ["0"]}
    assert m.b.tolist() == t.b.tolist() == [1.0]
    for name in ("c", "weight", "bias"):
        assert not hasattr(m, name) and not hasattr(t, name)


def test_plain_attribute_shadows_table_entry_like_torch():
    m, t = nn.Linear(2, 2), torch.nn.Linear(2, 2)
    m.tag, t.tag = 3, 3
    m._parameters["tag"] = nn.Parameter(ag.zeros(1))
    t._parameters["tag"] = torch.nn.Parameter(torch.zeros(1))
    assert m.tag == t.tag == 3
    assert _views(m) == _views(t)


def test_modules_table_write_is_a_submodule():
    outer, touter = nn.Module(), torch.nn.Module()
    outer._modules["fc"] = nn.Linear(2, 2)
    touter._modules["fc"] = torch.nn.Linear(2, 2)
    assert isinstance(outer.fc, nn.Linear)
    assert _views(outer) == _views(touter)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_tables_of_a_copy_stay_in_sync_with_the_copy(how):
    m = nn.Linear(2, 3)
    c = {"copy": copy.copy, "deepcopy": copy.deepcopy,
         "pickle": lambda x: pickle.loads(pickle.dumps(x))}[how](m)
    before = m.bias.tolist()
    c._parameters["bias"] = nn.Parameter(ag.full((3,), 5.0))
    assert c.bias.tolist() == [5.0] * 3
    assert m.bias.tolist() == before


def test_module_is_freed_without_the_cycle_collector():
    # The tables hold their module weakly: dropping a model frees it (and its
    # device memory) at once.
    m = nn.Linear(2, 2)
    ref = weakref.ref(m)
    del m
    assert ref() is None


# ------------------------------------------------------------------------- chunk / split
SHAPES = [(0, 3), (5, 3), (6, 2), (1, 4)]


def _pieces(out: Any) -> list[tuple[int, ...]]:
    return [tuple(p.shape) for p in out]


def _check_values(ours: Any, theirs: Any) -> None:
    assert _pieces(ours) == _pieces(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("dim", [0, -1])
def test_chunk_matches_torch(device, shape, chunks, dim):
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = ag.tensor(values, device=device)
    _check_values(x.chunk(chunks, dim), torch.from_numpy(values).chunk(chunks, dim))
    _check_values(ag.chunk(x, chunks, dim=dim), torch.chunk(torch.from_numpy(values), chunks, dim))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 0])
def test_split_by_size_matches_torch(device, shape, size):
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    expected: Any
    try:
        expected = torch.from_numpy(values).split(size, 0)
    except RuntimeError:
        expected = None
    x = ag.tensor(values, device=device)
    if expected is None:
        with pytest.raises(ValueError, match="split_size"):
            x.split(size, 0)
    else:
        _check_values(x.split(size, 0), expected)


@pytest.mark.parametrize("shape, sizes", [((5, 3), [2, 3]), ((5, 3), (0, 5, 0)),
                                          ((0, 3), []), ((0, 3), [0]), ((0, 3), [0, 0]),
                                          ((6, 2), [1, 1, 4])])
def test_split_by_sections_matches_torch(device, shape, sizes):
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = ag.tensor(values, device=device)
    _check_values(x.split(sizes, 0), torch.from_numpy(values).split(sizes, 0))
    _check_values(ag.split(x, sizes), torch.split(torch.from_numpy(values), sizes))


def test_split_and_chunk_gradients_match_torch(device):
    values = np.arange(15, dtype=np.float32).reshape(5, 3)
    x = ag.tensor(values, device=device, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    for ours, theirs in ((x.chunk(4, 0), tx.chunk(4, 0)), (x.split([1, 2], 1), tx.split([1, 2], 1)),
                         (x.split(7, 0), tx.split(7, 0))):
        for k, (a, b) in enumerate(zip(ours, theirs)):
            (a * (k + 1.0)).sum().backward()
            (b * (k + 1.0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("call, error, torch_error", [
    (lambda x, m: m.chunk(x, 0), ValueError, RuntimeError),
    (lambda x, m: m.chunk(x, -1), ValueError, RuntimeError),
    (lambda x, m: m.chunk(x, 2.0), TypeError, TypeError),
    (lambda x, m: m.split(x, 0), ValueError, RuntimeError),
    (lambda x, m: m.split(x, -1), ValueError, RuntimeError),
    (lambda x, m: m.split(x, 2.0), TypeError, TypeError),
    (lambda x, m: m.split(x, True), TypeError, TypeError),
    (lambda x, m: m.split(x, []), ShapeError, RuntimeError),
    (lambda x, m: m.split(x, [2, 2]), ShapeError, RuntimeError),
    (lambda x, m: m.split(x, [6, -1]), ValueError, RuntimeError),
    (lambda x, m: m.split(x, [2.0, 3]), TypeError, TypeError),
    (lambda x, m: m.chunk(x[0, 0], 2), ShapeError, RuntimeError),
    (lambda x, m: m.split(x[0, 0], 1), ShapeError, RuntimeError),
])
def test_chunk_split_errors_match_torch(device, call, error, torch_error):
    values = np.zeros((5, 3), dtype=np.float32)
    with pytest.raises(torch_error):
        call(torch.from_numpy(values), torch)
    with pytest.raises(error, match="chunk|split"):
        call(ag.tensor(values, device=device), ag)


def test_split_size_may_be_a_0d_int_tensor_like_torch(device):
    values = np.zeros((5, 3), dtype=np.float32)
    ours = ag.tensor(values, device=device).split(ag.tensor(2), 0)
    assert _pieces(ours) == _pieces(torch.from_numpy(values).split(torch.tensor(2), 0))
