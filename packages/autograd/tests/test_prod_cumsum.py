"""prod and cumsum against PyTorch: values, dtypes, the spellings PyTorch and numpy
users type, and prod's gradient where inputs are zero (first and second order,
and against float64 finite differences). The op records (``op_records.py``)
sweep the general samples; this file pins the zero cases one by one.

Each test runs on every device whose backend has the optional kernel
(``reduce_prod``, ``cumsum_last``) and skips on the others.
"""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES

TORCH = {"bool": torch.bool, "int64": torch.int64, "float32": torch.float32,
         "float64": torch.float64}


def _devices(kernel: str, dtype: str = "float64") -> list[str]:
    return [d for d in DEVICES if dtype in nd.get_device(d).kernel_dtypes[kernel]] or [
        pytest.param(None, marks=pytest.mark.skip(reason=f"no device has {kernel} for "
                                                          f"{dtype}"))]


PROD_DEVICES = _devices("reduce_prod")
CUMSUM_DEVICES = _devices("cumsum_last")

# (values, dim): the gradient at a zero is the product of the other elements of its
# slice when the slice holds one zero, and every gradient of a slice with two is 0.
ZERO_CASES = [
    ([2.0, 0.0, 3.0, 4.0], None),
    ([2.0, 0.0, 3.0, 0.0], None),
    ([0.0, 0.0, 0.0], None),
    ([[2.0, 0.0, 3.0], [1.5, -2.0, 4.0], [0.0, 5.0, 0.0]], 1),
    ([[2.0, 0.0, 3.0], [1.5, -2.0, 4.0], [0.0, 5.0, 0.0]], 0),
    ([[[0.0, 2.0], [3.0, -1.0]], [[0.0, 0.0], [2.0, 0.5]]], (1, 2)),
    ([1.1, -0.9, 1.2, 0.8, 1.3, 0.0, -1.4, 0.7, 1.5, 0.6, 1.6], None),  # 4 doubling steps
]


def _expected_prod_grad(x: np.ndarray, dim) -> np.ndarray:
    """The product of the others, element by element (the definition, no division)."""
    axes = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else dim
    grad = np.empty_like(x)
    for i in np.ndindex(*x.shape):
        others = x.copy()
        others[i] = 1.0
        mask = np.zeros(x.shape, bool)
        mask[tuple(slice(None) if a in axes else k for a, k in enumerate(i))] = True
        grad[i] = np.prod(others[mask])
    return grad


def _torch_prod(t: torch.Tensor, dim) -> torch.Tensor:
    if dim is None:
        return t.prod()
    for d in sorted((dim,) if isinstance(dim, int) else dim, reverse=True):
        t = t.prod(d)
    return t


@pytest.mark.parametrize("device", PROD_DEVICES)
@pytest.mark.parametrize("values, dim", ZERO_CASES, ids=str)
def test_prod_gradient_with_zeros_matches_torch_and_the_definition(device, values, dim):
    a = np.array(values)
    x = ag.tensor(a, dtype="float64", device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, r = x.prod(dim=dim), _torch_prod(t, dim)
    np.testing.assert_allclose(y.detach().numpy(), r.detach().numpy(), rtol=1e-12)
    cot = np.arange(1.0, r.numel() + 1).reshape(r.shape)
    y.backward(ag.tensor(cot, dtype="float64", device=device))
    r.backward(torch.tensor(cot))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    want = _expected_prod_grad(a, dim) * np.expand_dims(
        cot, () if dim is None else (dim,) if isinstance(dim, int) else dim)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    assert ag.gradcheck(lambda v: v.prod(dim=dim),
                        [ag.tensor(a, dtype="float64", device=device, requires_grad=True)])


@pytest.mark.parametrize("device", PROD_DEVICES)
@pytest.mark.parametrize("values, dim", ZERO_CASES, ids=str)
def test_prod_second_order_with_zeros_matches_torch(device, values, dim):
    # A Hessian-vector product: (d/dx) <grad prod(x), v>. With two zeros in a slice,
    # the entries between them are the product of the rest, not 0.
    a = np.array(values)
    v = np.linspace(-1.0, 2.0, a.size).reshape(a.shape)
    x = ag.tensor(a, dtype="float64", device=device, requires_grad=True)
    (g,) = ag.grad(x.prod(dim=dim).sum(), [x], create_graph=True)
    (h,) = ag.grad((g * ag.tensor(v, dtype="float64", device=device)).sum(), [x])
    t = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(_torch_prod(t, dim).sum(), [t], create_graph=True)
    (th,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), [t])
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", PROD_DEVICES)
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64"])
def test_prod_and_cumsum_dtypes_and_values_as_torch(device, dtype):
    dev = nd.get_device(device)
    if dtype not in dev.dtypes:
        pytest.skip(f"device {device} lists no {dtype}")
    a = np.array([[1, 0, 2], [3, 1, 1]]).astype(dtype)
    x, t = ag.tensor(a, device=device), torch.from_numpy(a.copy())
    pairs = [(x.prod(), t.prod()), (x.prod(1), t.prod(1)), (x.prod(0, True), t.prod(0, True))]
    if "int64" in dev.kernel_dtypes["cumsum_last"]:
        pairs += [(x.cumsum(1), t.cumsum(1)), (ag.cumsum(x, 0), torch.cumsum(t, 0))]
    for got, want in pairs:
        assert got.dtype == str(want.dtype).removeprefix("torch.")
        assert got.shape == tuple(want.shape) and not got.requires_grad
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("device", CUMSUM_DEVICES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cumsum_gradient_is_a_reversed_cumsum(device, dim):
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    x = ag.tensor(a, dtype="float64", device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    cot = np.random.default_rng(4).standard_normal(a.shape)
    x.cumsum(dim).backward(ag.tensor(cot, dtype="float64", device=device))
    t.cumsum(dim).backward(torch.tensor(cot))
    want = np.flip(np.cumsum(np.flip(cot, dim), dim), dim)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("device", PROD_DEVICES)
def test_numpy_spellings_and_errors(device):
    if "float64" not in nd.get_device(device).kernel_dtypes["cumsum_last"]:
        pytest.skip(f"device {device} has no cumsum_last")
    a = np.arange(1.0, 7.0).reshape(2, 3)
    x = ag.tensor(a, device=device)
    np.testing.assert_array_equal(x.prod(axis=1, keepdims=True).numpy(),
                                  x.prod(dim=1, keepdim=True).numpy())
    np.testing.assert_array_equal(ag.prod(x, axis=(0, 1)).numpy(), np.prod(a))
    np.testing.assert_array_equal(x.cumsum(axis=0).numpy(), ag.cumsum(x, dim=0).numpy())
    np.testing.assert_array_equal(ag.cumsum(x, 1).numpy(), np.cumsum(a, 1))
    with pytest.raises(TypeError, match="^prod: got both dim=0 and axis=1"):
        x.prod(0, axis=1)
    with pytest.raises(TypeError, match="^cumsum: got both dim=0 and axis=1"):
        x.cumsum(0, axis=1)
    with pytest.raises(TypeError, match="^cumsum: missing the dim argument"):
        x.cumsum()
    with pytest.raises(ag.ShapeError, match="^cumsum: dim -3 is out of range"):
        x.cumsum(-3)
    with pytest.raises(TypeError, match="^cumsum: dim must be an int, got tuple"):
        x.cumsum((0, 1))
    assert x.prod(()).item() == 720.0  # dim=() means every axis, as for sum
