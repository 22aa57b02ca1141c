"""In-place ops: values and gradients against PyTorch, version counters, leaf and view rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES
from lamina.ndarray import DTypeError, ShapeError

X = [[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]]
Y = [[1.5, 2.0, -0.5], [0.75, 4.0, -2.0]]


def _both(fn: Callable[[Any, Any, Any], Any], device: str) -> None:
    """Runs ``fn(lib, x, y)`` in Lamina and PyTorch and compares the output and both grads."""
    x, y = ag.tensor(X, device=device, requires_grad=True), ag.tensor(Y, device=device,
                                                                      requires_grad=True)
    tx, ty = torch.tensor(X, requires_grad=True), torch.tensor(Y, requires_grad=True)
    out, tout = fn(ag, x, y), fn(torch, tx, ty)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
    (out * ag.tensor(Y, device=device)).sum().backward()
    (tout * torch.tensor(Y)).sum().backward()
    for ours, theirs in ((x.grad, tx.grad), (y.grad, ty.grad)):
        if theirs is None:
            assert ours is None
        else:
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add_scalar": lambda lib, x, y: (x * 2).add_(1).mul_(3),
    "add_tensor_alpha": lambda lib, x, y: (x * 1).add_(y, alpha=0.5),
    "sub_tensor": lambda lib, x, y: (x * 1).sub_(y),
    "sub_broadcast": lambda lib, x, y: (x * 1).sub_(y[0]),
    "mul_tensor": lambda lib, x, y: (x * 1).mul_(y),
    "div_tensor": lambda lib, x, y: (x * 1).div_(y),
    "div_scalar": lambda lib, x, y: (x + y).div_(4.0),
    "clamp_": lambda lib, x, y: (x * y).clamp_(-1.0, 2.0),
    "zero_": lambda lib, x, y: (x * 1).zero_() + y,
    "fill_": lambda lib, x, y: (x * 1).fill_(2.5) * y,
    "copy_": lambda lib, x, y: (x * 1).copy_(y * 2),
    "copy_into_plain": lambda lib, x, y: (x * 0).detach().copy_(y.exp()),
    "iadd_chain": lambda lib, x, y: _augmented(x * 1, y),
    "ipow_imod": lambda lib, x, y: _pow_mod(x * 1, y),
    "inplace_then_used_twice": lambda lib, x, y: _twice(x * 1, y),
}


def _augmented(a: Any, b: Any) -> Any:
    a += b
    a *= b
    a -= 1.0
    a /= 2.0
    return a


def _pow_mod(a: Any, b: Any) -> Any:
    a **= 2  # in place, as PyTorch (not a = a ** 2): the old a is kept for the gradient
    a %= 3.0
    a **= 1.5
    return a * b


def _twice(a: Any, b: Any) -> Any:
    before = a * 3  # mul by a number saves nothing: a may change afterwards
    a.mul_(b)
    return a + before


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_inplace_values_and_gradients_match_torch(case: str, device: str) -> None:
    _both(CASES[case], device)


def test_inplace_mul_keeps_old_value_for_the_other_gradient() -> None:
    # d(a*b)/db needs a's value before the write; the op keeps a copy of it
    a = ag.tensor([2.0, 3.0], requires_grad=True)
    b = ag.tensor([5.0, 7.0], requires_grad=True)
    c = a * 1
    c.mul_(b)
    c.sum().backward()
    assert b.grad.tolist() == [2.0, 3.0] and a.grad.tolist() == [5.0, 7.0]


def test_inplace_returns_self_and_writes_storage() -> None:
    x = ag.tensor([1.0, 2.0])
    alias = x
    assert x.add_(1) is x
    x += 1
    assert x is alias and x.tolist() == [3.0, 4.0]
    assert x._version == 2


def test_modifying_a_saved_input_makes_backward_raise() -> None:
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = b * b  # saves b
    b.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: input 0 of mul "
                                           r"\(shape \(2,\), dtype float32\) is at version 1; "
                                           r"expected version 0"):
        c.sum().backward()


def test_modifying_a_saved_output_makes_backward_raise() -> None:
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()  # saves its output
    e.mul_(2)
    with pytest.raises(RuntimeError, match="the output of exp .* is at version 1; expected "
                                           "version 0"):
        e.sum().backward()


def test_modifying_through_a_view_bumps_the_shared_version() -> None:
    a = ag.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = a * 1
    c = (b * b).sum()
    with ag.no_grad():
        b[0].zero_()  # a view of b: b's saved value changed
    assert b._version == 1 and b[1]._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.backward()


def test_detach_shares_the_version_counter() -> None:
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = a.sin()  # saves a
    a.detach().mul_(2)
    assert a._version == 1 and a.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="input 0 of sin"):
        b.sum().backward()


def test_unmodified_graph_still_backpropagates() -> None:
    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = a * a
    other = ag.tensor([5.0, 6.0])
    other.add_(1)  # unrelated storage
    b.sum().backward()
    assert a.grad.tolist() == [2.0, 4.0]


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "clamp_", "fill_", "zero_",
                                "copy_", "iadd"])
def test_inplace_on_a_leaf_that_requires_grad_raises(op: str) -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    calls = {"add_": lambda: w.add_(1), "sub_": lambda: w.sub_(1), "mul_": lambda: w.mul_(2),
             "div_": lambda: w.div_(2), "clamp_": lambda: w.clamp_(0, 1),
             "fill_": lambda: w.fill_(0), "zero_": lambda: w.zero_(),
             "copy_": lambda: w.copy_(ag.ones(2)), "iadd": lambda: w.__iadd__(1)}
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        calls[op]()
    assert w.tolist() == [1.0, 2.0] and w._version == 0


def test_manual_sgd_updates_the_parameter_in_place() -> None:
    w = ag.tensor([1.0, -2.0], requires_grad=True)
    tw = torch.tensor([1.0, -2.0], requires_grad=True)
    param = w
    for _ in range(3):
        (w * w * 3).sum().backward()
        (tw * tw * 3).sum().backward()
        with ag.no_grad():
            w -= 0.1 * w.grad
        with torch.no_grad():
            tw -= 0.1 * tw.grad
        w.grad = None
        tw.grad = None
    assert w is param and w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("target", ["whole", "leading rows", "transposed"])
def test_optimizer_style_updates_without_grad_match_torch(device: str, target: str) -> None:
    # What optimizers run under no_grad (the NDArray's in-place operator writes the
    # storage directly there): values, aliases, version counter and no graph, as torch.
    rng = np.random.default_rng(0)
    base_np = rng.standard_normal((5, 3)).astype(np.float32)
    g_np = rng.standard_normal((3, 3)).astype(np.float32)
    views = {"whole": lambda b: b, "leading rows": lambda b: b[:3],
             "transposed": lambda b: b[:3].T}
    results = []
    for lib, make in ((ag, lambda a: ag.tensor(a, device=device)), (torch, torch.tensor)):
        base = make(base_np if target != "whole" else base_np[:3].copy())
        p = views[target](base)
        g = make(g_np if target != "transposed" else g_np.T.copy())
        with lib.no_grad():
            p.sub_(g, alpha=0.5)
            p.mul_(0.9)
            p += g
            p /= 2
            p.add_(1.5)
        assert p._version == base._version == 5
        assert not p.requires_grad and p.grad_fn is None
        results.append(base.cpu().numpy() if lib is ag else base.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_each_grad_is_its_own_writable_storage(device: str) -> None:
    # a + b hands both the same gradient and x.sum() a broadcast one: as in torch,
    # each .grad can be changed in place without touching another's.
    rng = np.random.default_rng(1)
    a_np, b_np = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(3)
    grads = []
    for lib, make in ((ag, lambda v: ag.tensor(v.astype(np.float32), requires_grad=True,
                                              device=device)),
                      (torch, lambda v: torch.tensor(v.astype(np.float32), requires_grad=True))):
        a, b, c = make(a_np), make(b_np), make(b_np)
        ((a + b).sum() + (b * c).sum() + c.sum()).backward()
        with lib.no_grad():
            a.grad.mul_(2.0)
            b.grad.add_(1.0)
            c.grad.mul_(-1.0)
        grads.append([t.grad.cpu().numpy() if lib is ag else t.grad.numpy() for t in (a, b, c)])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_views_write_through_to_their_base() -> None:
    base = ag.zeros(3, 4)
    base[1].add_(5)
    base[:, 2].fill_(-1)
    base.T[0].copy_(ag.tensor([7.0, 8.0, 9.0]))
    base.reshape(12)[11:].mul_(0)
    expected = np.zeros((3, 4), np.float32)
    expected[1] += 5
    expected[:, 2] = -1
    expected.T[0] = [7.0, 8.0, 9.0]
    expected.reshape(12)[11:] *= 0
    np.testing.assert_array_equal(base.numpy(), expected)
    assert base._version == 4


def test_view_of_a_leaf_in_grad_mode_raises_and_no_grad_writes() -> None:
    w = ag.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="mul_: a view of a leaf Variable that requires grad"):
        w[:2].mul_(2)
    with ag.no_grad():
        w[:2].mul_(2)
    assert w.tolist() == [2.0, 2.0, 1.0] and w.is_leaf


def test_shape_and_dtype_errors() -> None:
    x = ag.zeros(2, 3)
    with pytest.raises(ShapeError, match=r"add_: the result has shape \(4, 2, 3\)"):
        x.add_(ag.ones(4, 2, 3))
    with pytest.raises(ShapeError, match=r"copy_: source of shape \(4,\) does not broadcast"):
        x.copy_(ag.ones(4))
    ids = ag.tensor([1, 2])
    with pytest.raises(DTypeError, match="copy_: cannot copy float32 into int64"):
        ids.copy_(ag.ones(2))
    with pytest.raises(TypeError, match="fill_: value must be a number"):
        x.fill_("a")
    with pytest.raises(ShapeError, match="fill_: value must have one element"):
        x.fill_(ag.ones(2))


def test_copy_converts_dtype_and_broadcasts() -> None:
    x = ag.zeros(2, 3, dtype="float64")
    x.copy_(ag.tensor([1.0, 2.0, 3.0]))
    assert x.dtype == "float64" and x.tolist() == [[1.0, 2.0, 3.0]] * 2
    ids = ag.tensor([0, 0])
    ids.fill_(3)
    assert ids.tolist() == [3, 3]


# In-place results keep the tensor's dtype: PyTorch refuses a result that torch.can_cast
# cannot cast to it (bool -> int64 -> float, never back) with a RuntimeError.
def _bool(lib: Any, device: str) -> Any:
    return _on(lib.tensor([True, False]), device)


def _long(lib: Any, device: str) -> Any:
    return _on(lib.tensor([3, -4]), device)


def _float(lib: Any, device: str) -> Any:
    return _on(lib.tensor([1.5, -2.0]), device)


def _on(t: Any, device: str) -> Any:
    return t if isinstance(t, torch.Tensor) else t.to(device)


_OTHER = {"bool": [False, True], "long": [2, 5], "float": [0.5, 4.0]}


def _other(lib: Any, t: Any, kind: str, dtype: str | None = None) -> Any:
    """A second operand of ``kind`` on ``t``'s device."""
    made = lib.tensor(_OTHER[kind], dtype=getattr(lib, dtype) if dtype else None)
    return made if lib is torch else made.to(t.device)


def _iadd(t: Any, v: Any) -> Any:
    t += v
    return t


def _ipow(t: Any, v: Any) -> Any:
    t **= v
    return t


def _ifloordiv(t: Any, v: Any) -> Any:
    t //= v
    return t


def _ior(t: Any, v: Any) -> Any:
    t |= v
    return t


REFUSED_CASTS: dict[str, tuple[Callable[[Any, str], Any], Callable[[Any, Any], Any]]] = {
    "bool_add_int": (_bool, lambda lib, t: t.add_(1)),
    "bool_iadd_int": (_bool, lambda lib, t: _iadd(t, 1)),
    "bool_add_long_tensor": (_bool, lambda lib, t: t.add_(_other(lib, t, "long"))),
    "bool_mul_float": (_bool, lambda lib, t: t.mul_(0.5)),
    "bool_clamp_int": (_bool, lambda lib, t: t.clamp_(0, 1)),
    "bool_ior_int": (_bool, lambda lib, t: _ior(t, 1)),
    "long_mul_float": (_long, lambda lib, t: t.mul_(0.5)),
    "long_div_int": (_long, lambda lib, t: t.div_(2)),
    "long_iadd_float": (_long, lambda lib, t: _iadd(t, 0.5)),
    "long_add_float_tensor": (_long, lambda lib, t: t.add_(_other(lib, t, "float"))),
    "long_ipow_float": (_long, lambda lib, t: _ipow(t, 0.5)),
    "long_ifloordiv_float": (_long, lambda lib, t: _ifloordiv(t, 1.5)),
}

ALLOWED_CASTS: dict[str, tuple[Callable[[Any, str], Any], Callable[[Any, Any], Any]]] = {
    "bool_add_bool": (_bool, lambda lib, t: t.add_(True)),
    "bool_mul_bool_tensor": (_bool, lambda lib, t: t.mul_(_other(lib, t, "bool"))),
    "bool_ior_bool": (_bool, lambda lib, t: _ior(t, True)),
    "long_add_bool_tensor": (_long, lambda lib, t: t.add_(_other(lib, t, "bool"))),
    "long_iadd_int": (_long, lambda lib, t: _iadd(t, 2)),
    "long_ifloordiv_int": (_long, lambda lib, t: _ifloordiv(t, 2)),
    "long_ipow_int": (_long, lambda lib, t: _ipow(t, 2)),
    "float_add_long_tensor": (_float, lambda lib, t: t.add_(_other(lib, t, "long"))),
    "float_mul_float64": (_float, lambda lib, t: t.mul_(_other(lib, t, "float", "float64"))),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(REFUSED_CASTS))
def test_inplace_result_that_cannot_be_cast_raises_like_torch(case: str, device: str) -> None:
    make, op = REFUSED_CASTS[case]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        op(torch, make(torch, device))
    t = make(ag, device)
    before = t.tolist()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type") as info:
        op(ag, t)
    assert isinstance(info.value, DTypeError)  # Lamina's dtype mistakes are DTypeErrors too
    assert t.tolist() == before and t._version == 0  # refused before writing anything


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(ALLOWED_CASTS))
def test_inplace_result_that_can_be_cast_is_written_like_torch(case: str, device: str) -> None:
    make, op = ALLOWED_CASTS[case]
    expected = make(torch, device)
    assert op(torch, expected) is expected
    t = make(ag, device)
    assert op(ag, t) is t
    assert f"torch.{t.dtype.name}" == str(expected.dtype)
    np.testing.assert_array_equal(t.numpy(), expected.numpy())
    assert t._version == 1
