"""PyTorch's Tensor one-liners and their functions (narrow, roll, repeat, tile, index_select,
unbind, all, any, new_*, type, to, ...) and indexing with negative entries and bools:
values and gradients against PyTorch on every device, and PyTorch's errors."""

from __future__ import annotations

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES

_I = [2, 0, -1]  # an index list, as a lamina and a torch int64 tensor below


def _idx(lib, device=None):
    return ag.tensor(_I[:2], device=device) if lib is ag else torch.tensor(_I[:2])


# (id, f(x, lib, device) for a lamina or torch tensor x of shape (3, 4, 2))
CASES = [
    ("view_as", lambda x, lib, d: x.view_as(x.reshape(4, 6) if lib is ag else x.reshape(4, 6))),
    ("reshape_as", lambda x, lib, d: x.transpose(0, 1).reshape_as(x.reshape(8, 3))),
    ("expand_as", lambda x, lib, d: x[:, :1].expand_as(x)),
    ("narrow", lambda x, lib, d: x.narrow(1, 1, 2)),
    ("narrow_negative_start", lambda x, lib, d: x.narrow(-2, -3, 3)),
    ("lib.narrow", lambda x, lib, d: lib.narrow(x, 0, 2, 1)),
    ("repeat", lambda x, lib, d: x.repeat(2, 1, 3)),
    ("repeat_new_dims", lambda x, lib, d: x.repeat((2, 1, 2, 1))),
    ("tile", lambda x, lib, d: x.tile(2)),
    ("lib.tile", lambda x, lib, d: lib.tile(x, (2, 1, 1, 2))),
    ("index_select", lambda x, lib, d: x.index_select(1, _idx(lib, d))),
    ("index_select_repeats", lambda x, lib, d: lib.index_select(
        x, -1, ag.tensor([1, 1, 0], device=d) if lib is ag else torch.tensor([1, 1, 0]))),
    ("index_select_0d", lambda x, lib, d: x.index_select(
        0, ag.tensor(2, device=d) if lib is ag else torch.tensor(2))),
    ("unbind", lambda x, lib, d: lib.stack([u * (i + 1) for i, u in enumerate(x.unbind(1))])),
    ("lib.unbind", lambda x, lib, d: lib.unbind(x)[2]),
    ("chunk", lambda x, lib, d: x.chunk(2, 1)[1]),
    ("flip", lambda x, lib, d: x.flip(0, 2)),
    ("flip_tuple", lambda x, lib, d: lib.flip(x, (1,))),
    ("roll", lambda x, lib, d: x.roll(1)),
    ("roll_dims", lambda x, lib, d: x.roll((1, -3), (0, 1))),
    ("lib.roll", lambda x, lib, d: lib.roll(x, 5, -1)),
    ("roll_zero", lambda x, lib, d: x.roll(4, 1)),
    ("where", lambda x, lib, d: x.where(x > 0, x * 3)),
    ("masked_fill_", lambda x, lib, d: (x * 1).masked_fill_(x > 0, 2.0)),
    ("clamp_", lambda x, lib, d: (x * 1).clamp_(-0.5, 0.5)),
    ("to_dtype", lambda x, lib, d: x.to(lib.float64) * 2),
    ("contiguous", lambda x, lib, d: x.transpose(0, 2).contiguous()),
    ("read_negative_list", lambda x, lib, d: x[:, [-1], :]),
    ("read_negative_first", lambda x, lib, d: x[[-1, 0]]),
    ("read_negative_tensor", lambda x, lib, d: x[
        ag.tensor([-1, 1], device=d) if lib is ag else torch.tensor([-1, 1])]),
    ("read_negative_mixed", lambda x, lib, d: x[[-1, 0], 1:, [-2, 1]]),
    ("read_true", lambda x, lib, d: x[True]),
    ("read_false", lambda x, lib, d: x[False]),
    ("read_true_inner", lambda x, lib, d: x[:, True, [0, -1]]),
    ("read_0d_bool_tensor", lambda x, lib, d: x[
        ag.tensor(True, device=d) if lib is ag else torch.tensor(True)]),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("name", "f"), CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(device, name, f):
    x0 = np.random.default_rng(0).standard_normal((3, 4, 2))
    x = ag.tensor(x0, device=device, requires_grad=True)
    t = torch.tensor(x0, requires_grad=True)
    y, u = f(x, ag, device), f(t, torch, None)
    assert y.shape == tuple(u.shape) and y.dtype.name == str(u.dtype).removeprefix("torch.")
    np.testing.assert_allclose(y.detach().numpy(), u.detach().numpy(), rtol=1e-12)
    w = np.random.default_rng(1).standard_normal(y.shape)
    (y * ag.tensor(w, device=device)).sum().backward()
    (u * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_writes_with_bool_and_negative_keys_match_torch(device):
    x0 = np.arange(24.0).reshape(2, 3, 4)
    for key, value in [(False, 1.0), (True, 2.0), ((0, True), 3.0), ((slice(None), [-1]), 4.0),
                       ([-1, 0], 5.0)]:
        x = ag.tensor(x0, device=device, requires_grad=True)
        t = torch.tensor(x0, requires_grad=True)
        y, u = x * 1.0, t * 1.0
        y[key] = value
        parts = tuple(torch.tensor(k) if isinstance(k, list) else k for k in key) \
            if isinstance(key, tuple) else torch.tensor(key) if isinstance(key, list) else key
        u[parts] = value
        np.testing.assert_array_equal(y.detach().numpy(), u.detach().numpy())
        y.sum().backward()
        u.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1], ids=repr)
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_and_any_match_torch(device, dim, keepdim):
    x0 = np.array([[1.0, 0.0, 2.0], [3.0, np.nan, 4.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    x, t = ag.tensor(x0, device=device), torch.tensor(x0)
    for name in ("all", "any"):
        want = getattr(t, name)() if dim is None and not keepdim else getattr(torch, name)(
            t, dim=dim if dim is not None else (0, 1), keepdim=keepdim)
        for got in (getattr(x, name)(dim, keepdim), getattr(ag, name)(x, dim, keepdim=keepdim)):
            assert got.dtype == ag.bool and got.shape == tuple(want.shape), name
            assert got.tolist() == want.tolist(), name


@pytest.mark.parametrize("device", DEVICES)
def test_all_and_any_of_empty_bool_and_int_tensors(device):
    assert ag.zeros(0, device=device).all().item() is torch.zeros(0).all().item() is True
    assert ag.zeros(0, device=device).any().item() is torch.zeros(0).any().item() is False
    assert ag.zeros(2, 0, device=device).any(1).tolist() == [False, False]
    b = ag.tensor([[True, False], [True, True]], device=device)
    assert b.all(1).tolist() == [False, True] and b.any(0).tolist() == [True, True]
    assert ag.tensor([3, 0], device=device).all().item() is False


@pytest.mark.parametrize("device", DEVICES)
def test_new_constructors_take_dtype_and_device_from_the_tensor(device):
    x = ag.zeros(2, dtype="float64", device=device)
    t = torch.zeros(2, dtype=torch.float64)
    for got, want in [(x.new_zeros(2, 3), t.new_zeros(2, 3)),
                      (x.new_ones((1, 2)), t.new_ones(1, 2)),
                      (x.new_full((2,), 7), t.new_full((2,), 7)),
                      (x.new_tensor([1, 2]), t.new_tensor([1, 2])),
                      (x.new_zeros([2], dtype="int64"), t.new_zeros([2], dtype=torch.int64))]:
        assert got.device == x.device and got.is_leaf
        assert got.dtype.name == str(want.dtype).removeprefix("torch.")
        assert got.tolist() == want.tolist()
    assert x.new_empty(3, 1).shape == (3, 1) and x.new_empty(3).dtype == "float64"
    assert x.new_ones(2, requires_grad=True).requires_grad
    src = ag.tensor([1.0, 2.0], device=device, requires_grad=True)
    copy = x.new_tensor(src)
    assert not copy.requires_grad and copy.dtype == "float64"
    copy[0] = 5.0
    assert src.tolist() == [1.0, 2.0]  # a copy, not a view


@pytest.mark.parametrize("device", DEVICES)
def test_type_names_and_conversions(device):
    x = ag.zeros(2, device=device)
    cuda = ".cuda" if x.device.type == "cuda" else ""
    for dtype, name, size in [("float32", "FloatTensor", 4), ("float64", "DoubleTensor", 8),
                              ("int64", "LongTensor", 8), ("bool", "BoolTensor", 1),
                              ("float16", "HalfTensor", 2), ("bfloat16", "BFloat16Tensor", 2)]:
        if dtype not in x.device.dtypes:
            continue
        y = x.to(dtype)
        assert y.type() == f"lamina{cuda}.{name}"
        assert y.element_size() == size == torch.zeros(1).to(getattr(torch, dtype)).element_size()
        assert x.type(f"lamina.{name}").dtype == dtype
        assert x.type(dtype).dtype == dtype
    assert torch.zeros(2).type() == "torch.FloatTensor"  # the names Lamina mirrors
    assert x.type(ag.float32) is x
    with pytest.raises(ValueError, match="type: invalid type 'lamina.ComplexFloatTensor'"):
        x.type("lamina.ComplexFloatTensor")


@pytest.mark.parametrize("device", DEVICES)
def test_to_other_and_to_device_and_dtype(device):
    x = ag.tensor([1.5, 2.5], device=device, requires_grad=True)
    other = ag.zeros(1, dtype="float64", device=device)
    y = x.to(other)
    assert y.dtype == "float64" and y.device == other.device
    assert x.to(device, "float64").dtype == "float64"
    assert x.to(ag.int64).tolist() == torch.tensor([1.5, 2.5]).to(torch.int64).tolist()
    assert x.to(x) is x and x.to(device) is x
    copied = x.to(device, copy=True)
    assert copied is not x and copied.tolist() == x.tolist()
    (y * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_item_numel_and_contiguous(device):
    assert ag.tensor([[[4.0]]], device=device).item() == torch.tensor([[[4.0]]]).item() == 4.0
    with pytest.raises(ValueError, match="item: only one-element"):
        ag.tensor([1.0, 2.0], device=device).item()
    x = ag.zeros(3, 4, device=device)
    assert x.numel() == ag.numel(x) == torch.numel(torch.zeros(3, 4)) == 12
    assert x.contiguous() is x and x.T.contiguous()._data.is_compact()


@pytest.mark.parametrize("device", DEVICES)
def test_masked_fill_in_place_follows_the_in_place_rules(device):
    leaf = ag.tensor([1.0, -1.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="masked_fill_: a leaf Variable that requires grad"):
        leaf.masked_fill_(ag.tensor([True, False], device=device), 0.0)
    x = ag.tensor([1.0, -1.0, 3.0], device=device)
    out = x.masked_fill_(x < 0, 9.0)
    assert out is x and x.tolist() == [1.0, 9.0, 3.0] and x._version == 1


def _raises_like_torch(device, f, lamina_error, torch_error, match):
    x = ag.zeros(3, 4, device=device)
    with pytest.raises(lamina_error, match=match):
        f(x, ag)
    with pytest.raises(torch_error):
        f(torch.zeros(3, 4), torch)


ERRORS = [  # (f, Lamina's error, PyTorch's, what Lamina's message says)
    (lambda x, lib: x.narrow(1, 3, 2), ValueError, RuntimeError,
     r"narrow: start \(3\) \+ length \(2\) exceeds the size \(4\) of dim 1"),
    (lambda x, lib: x.narrow(1, 5, 0), IndexError, IndexError,
     r"narrow: start 5 is out of range for dim 1 of size 4"),
    (lambda x, lib: x.narrow(1, 0, -1), ValueError, RuntimeError, "length must be non-neg"),
    (lambda x, lib: x.sum().narrow(0, 0, 1), ValueError, RuntimeError, "narrow: cannot be "),
    (lambda x, lib: x.repeat(2), ValueError, RuntimeError,
     r"repeat: 1 repeat sizes \(2,\) for a tensor of shape \(3, 4\)"),
    (lambda x, lib: x.roll((1, 2), 0), ValueError, RuntimeError,
     "roll: shifts and dims must align: 2 shifts, 1 dims"),
    (lambda x, lib: x.roll((1, 2)), ValueError, RuntimeError, "shifts and dims must align"),
    (lambda x, lib: x.index_select(0, [1]), TypeError, TypeError,
     "index_select: index must be a Tensor, not list"),
    (lambda x, lib: x.index_select(0, x.new_tensor([[1]]).long()), IndexError, IndexError,
     r"index_select: index must be 0-d or 1-d, got shape \(1, 1\)"),
    (lambda x, lib: x.index_select(0, x.new_tensor([1.0])), TypeError, RuntimeError,
     "index_select: index must be int64, got float32"),
    (lambda x, lib: x.index_select(0, x.new_tensor([-1]).long()), IndexError, IndexError,
     "index -1"),
    (lambda x, lib: x.sum().unbind(), ValueError, IndexError, "unbind: a 0-d tensor"),
    (lambda x, lib: x[[3]], IndexError, IndexError,
     "getitem: index 3 is out of bounds for dim 0 with size 3"),
    (lambda x, lib: x[:, [-5]], IndexError, IndexError,
     "getitem: index -5 is out of bounds for dim 1 with size 4"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("f", "error", "torch_error", "match"), ERRORS,
                         ids=[e[3][:30] for e in ERRORS])
def test_errors_match_torch(device, f, error, torch_error, match):
    _raises_like_torch(device, f, error, torch_error, match)
