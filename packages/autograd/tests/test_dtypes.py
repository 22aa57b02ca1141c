"""Tensor dtypes against PyTorch: promotion through every binary op, gradients in
each input's own dtype, bool results, int64 arithmetic, and the conversions."""

from __future__ import annotations

import itertools
import operator

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES

TORCH = {"bool": torch.bool, "int64": torch.int64, "float32": torch.float32,
         "float64": torch.float64}
DTYPES = tuple(TORCH)
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
       "div": operator.truediv, "pow": operator.pow, "maximum": "maximum",
       "minimum": "minimum", "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
       "le": operator.le, "gt": operator.gt, "ge": operator.ge, "floordiv": operator.floordiv,
       "remainder": operator.mod, "bitwise_and": operator.and_, "bitwise_or": operator.or_,
       "bitwise_xor": operator.xor}
_DIVIDES = ("div", "floordiv", "remainder")  # a False divisor would divide ints by zero


def _int_devices() -> list[str]:
    """Devices whose add kernel takes int64 (interface v1.1)."""
    return [d for d in DEVICES if "int64" in nd.get_device(d).kernel_dtypes["ewise_add"]]


def _apply(op, lib, a, b):
    fn = OPS[op]
    return getattr(lib, fn)(a, b) if isinstance(fn, str) else fn(a, b)


def _values(dtype: str, shape) -> np.ndarray:
    rng = np.random.default_rng(abs(hash((dtype, shape))) % 2**32)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(1, 4, shape).astype(dtype)


@pytest.mark.parametrize("device", _int_devices())
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, repeat=2)))
def test_binary_ops_promote_and_grads_keep_each_inputs_dtype(device, op, da, db):
    if not {da, db} <= set(nd.get_device(device).dtypes):
        pytest.skip(f"device {device} lists no {da} or {db}")
    x, y = _values(da, (2, 3)), _values(db, (3,))
    if op in _DIVIDES and db == "bool":
        y = np.ones_like(y)
    tx, ty = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    for t in (tx, ty):
        t.requires_grad_(t.dtype.is_floating_point)
    try:
        want = _apply(op, torch, tx, ty)
    except RuntimeError:
        with pytest.raises(nd.DTypeError):
            _apply(op, ag, ag.tensor(x, device=device), ag.tensor(y, device=device))
        return
    a = ag.tensor(x, device=device, requires_grad=x.dtype.kind == "f")
    b = ag.tensor(y, device=device, requires_grad=y.dtype.kind == "f")
    try:
        got = _apply(op, ag, a, b)
    except nd.DTypeError as exc:  # only a backend without the kernel (cpu: int64 power)
        assert device != "numpy" and f"device {device} has no " in str(exc), exc
        return
    expected = str(want.dtype).removeprefix("torch.")
    if expected == "bool" and "bool" not in nd.get_device(device).dtypes:
        expected = str(torch.promote_types(tx.dtype, ty.dtype)).removeprefix("torch.")
    assert got.dtype == expected, (op, da, db, got.dtype)
    np.testing.assert_allclose(got.detach().numpy().astype(float), want.detach().double().numpy(),
                               rtol=1e-6)
    # floor division is not differentiable, as sign (PyTorch's backward of it raises)
    assert got.requires_grad == (want.requires_grad and op != "floordiv")
    if got.requires_grad:
        try:
            want.sum().backward()
        except RuntimeError:  # PyTorch's pow backward subtracts from a bool exponent
            assert op == "pow" and db == "bool"
            return
        got.sum().backward()
        for leaf, tleaf in ((a, tx), (b, ty)):
            if tleaf.grad is not None:
                assert leaf.grad.dtype == leaf.dtype  # each input's own dtype
                np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-5)


def _same(got, want) -> None:
    """``got`` (Lamina) has ``want``'s (PyTorch's) dtype and values."""
    assert got.dtype == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    np.testing.assert_allclose(got.detach().numpy().astype(float),
                               want.detach().double().numpy(), rtol=1e-6)


def _skip_unlisted(device: str, *dtypes: str) -> None:
    if not set(dtypes) <= set(nd.get_device(device).dtypes):
        pytest.skip(f"device {device} lists no {dtypes}")


# maximum/minimum take no Python number in PyTorch, so it has no answer to compare
SCALAR_OPS = [op for op in sorted(OPS) if not isinstance(OPS[op], str)]


@pytest.mark.parametrize("device", _int_devices())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [True, 2, 2.5], ids=repr)
@pytest.mark.parametrize("op", SCALAR_OPS)
@pytest.mark.parametrize("reflected", [False, True], ids=["x_op_s", "s_op_x"])
def test_python_scalars_as_pytorch(request, device, dtype, value, op, reflected):
    _skip_unlisted(device, dtype)
    if (op, dtype, value, reflected) == ("pow", "bool", True, False):
        request.applymarker(pytest.mark.xfail(
            raises=nd.DTypeError, strict=True,
            reason="PyTorch keeps bool ** True bool; no backend has a bool power kernel"))
    x = _values(dtype, (4,))
    if reflected and op in _DIVIDES:
        x = np.ones_like(x) if dtype == "bool" else x  # no integer division by zero
    fn = OPS[op]
    args = (lambda t: (value, t)) if reflected else (lambda t: (t, value))
    try:
        want = fn(*args(torch.from_numpy(x.copy())))
    except (RuntimeError, TypeError):
        with pytest.raises(TypeError):  # DTypeError is a TypeError
            fn(*args(ag.tensor(x, device=device)))
        return
    _same(fn(*args(ag.tensor(x, device=device))), want)


@pytest.mark.parametrize("device", _int_devices())
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, repeat=2)))
def test_where_promotes_its_branches_as_pytorch(device, da, db):
    _skip_unlisted(device, "bool", da, db)
    cond = np.array([[True, False, True], [False, False, True]])
    x, y = _values(da, (2, 3)), _values(db, (3,))
    tx, ty = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    want = torch.where(torch.from_numpy(cond), tx, ty)
    got = ag.where(ag.tensor(cond, device=device), ag.tensor(x, device=device),
                   ag.tensor(y, device=device))
    _same(got, want)


@pytest.mark.parametrize("device", _int_devices())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("value", [True, 2, 2.5], ids=repr)
def test_where_with_a_python_scalar_branch(device, dtype, value):
    _skip_unlisted(device, "bool", dtype)
    cond = np.array([True, False, True, False])
    x = _values(dtype, (4,))
    want = torch.where(torch.from_numpy(cond), torch.from_numpy(x.copy()), value)
    _same(ag.where(ag.tensor(cond, device=device), ag.tensor(x, device=device), value), want)
    want = torch.where(torch.from_numpy(cond), value, torch.from_numpy(x.copy()))
    _same(ag.where(ag.tensor(cond, device=device), value, ag.tensor(x, device=device)), want)


UNARY = {"neg": operator.neg, "abs": abs, "sign": "sign", "exp": "exp", "log": "log",
         "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tanh": "tanh",
         "bitwise_not": operator.invert}


@pytest.mark.parametrize("device", _int_devices())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_ops_as_pytorch(device, dtype, op):
    _skip_unlisted(device, dtype)
    fn = UNARY[op]
    x = _values(dtype, (2, 3))  # 1..3: inside log's and sqrt's domain

    def call(lib, t):
        return getattr(lib, fn)(t) if isinstance(fn, str) else fn(t)

    try:
        want = call(torch, torch.from_numpy(x.copy()))
    except (RuntimeError, TypeError):
        with pytest.raises(nd.DTypeError):
            call(ag, ag.tensor(x, device=device))
        return
    _same(call(ag, ag.tensor(x, device=device)), want)


# (method, dim): full reductions and along a dim
REDUCTIONS = [(name, dim) for name in ("sum", "prod", "mean", "amax", "amin", "argmax")
              for dim in (None, 1)] + [("cumsum", 1), ("cumsum", 0), ("max", None),
                                       ("min", None)]


@pytest.mark.parametrize("device", _int_devices())
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,dim", REDUCTIONS, ids=str)
def test_reductions_as_pytorch(device, dtype, op, dim):
    _skip_unlisted(device, dtype)
    x = _values(dtype, (2, 3))

    def call(t):
        return getattr(t, op)() if dim is None else getattr(t, op)(dim)

    try:
        want = call(torch.from_numpy(x.copy()))
    except RuntimeError:
        with pytest.raises(nd.DTypeError):
            call(ag.tensor(x, device=device))
        return
    _same(call(ag.tensor(x, device=device)), want)


@pytest.mark.parametrize("device", _int_devices())
def test_the_issues_lines(device):
    x = ag.tensor([1, 2], device=device) * 2
    assert x.dtype == ag.int64 and x.tolist() == [2, 4]
    mixed = ag.tensor(np.ones(2, np.float32), device=device) * ag.tensor(np.ones(2),
                                                                         device=device)
    assert mixed.dtype == ag.float64
    logits = ag.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], device=device)
    y = ag.tensor([1, 0, 0], device=device)
    acc = (logits.argmax(1) == y).sum()
    assert acc.dtype == ag.int64 and acc.item() == 2


def test_only_float_tensors_require_grad():
    for make in (lambda: ag.tensor([1, 2], requires_grad=True),
                 lambda: ag.tensor([1, 2]).requires_grad_()):
        with pytest.raises(nd.DTypeError, match="Only Tensors of floating point dtype can "
                           "require gradients, got lamina.int64; convert with .float()"):
            make()
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        torch.tensor([1, 2], requires_grad=True)


def test_conversions_and_promotion_helpers():
    x = ag.tensor([0.0, 1.5, -2.0], device="numpy")
    assert x.long().tolist() == [0, 1, -2] and x.long().dtype == ag.int64
    assert x.bool().tolist() == [False, True, True] and x.bool().dtype == ag.bool
    assert x.double().dtype == ag.float64 and x.long().float().dtype == ag.float32
    assert ag.result_type(x.long(), 2.5) == ag.float32
    assert ag.result_type(x, x.double()) == ag.float64
    assert ag.promote_types("bool", "int64") == ag.int64
    assert ag.can_cast("int64", "float32") and not ag.can_cast("float32", "int64")
    w = ag.tensor([1.0, 2.0], device="numpy", requires_grad=True)
    (w.double() * 3).sum().backward()  # the conversion is differentiable
    assert w.grad.dtype == ag.float32 and w.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int64", "bool", "float32"])
def test_clone_and_contiguous_copy_every_dtype(device, dtype):
    """A clone owns its storage (writing it leaves the original alone) and, from a
    broadcast view, is compact, as PyTorch's: for integer and bool tensors too."""
    x = ag.tensor([1, 0, 1], dtype=dtype, device=device)
    y = x.clone()
    y[0] = 0
    assert x.tolist() == ag.tensor([1, 0, 1], dtype=dtype).tolist()
    wide = x.reshape(-1, 1).expand(3, 2).contiguous()
    assert wide._data.is_compact() and wide._data._buf is not x._data._buf
    np.testing.assert_array_equal(wide.numpy(), torch.tensor([1, 0, 1]).to(
        getattr(torch, dtype)).reshape(-1, 1).expand(3, 2).numpy())
