"""max_pool2d on the backends' max-pool kernels (issue 32) against PyTorch CPU.

Values, int64 indices (return_indices) and gradients on every device and dtype, for
windows that tie (the gradient goes to the first maximum, as in PyTorch, not shared),
hold NaN or infinities, overlap, are padded, dilated or hang over the edge (ceil_mode);
one graph node per pool; gradients of any order (float64 gradcheck, second derivatives
against torch); the composite fallback of devices without the kernels; and the errors.
"""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import device_dtypes
from lamina.ndarray.conformance._pool_cases import CASES, pool_input

TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-12)}
DEVICES64 = [dev for dev, dt in device_dtypes() if dt == "float64"]


def _kwargs(name: str) -> dict:
    case = CASES[name]
    return dict(kernel_size=case.kernel, stride=case.stride, padding=case.padding,
                dilation=case.dilation, ceil_mode=case.ceil_mode)


def _pool_both(a: np.ndarray, device: str, dtype: str, **kwargs):
    """(lamina out, indices, x) and (torch out, indices, x) with return_indices."""
    x = ag.tensor(a, dtype=dtype, device=device, requires_grad=True)
    t = torch.tensor(a.astype(np.float64), requires_grad=True)
    out, idx = ag.max_pool2d(x, return_indices=True, **kwargs)
    t_out, t_idx = F.max_pool2d(t, return_indices=True, **kwargs)
    return (out, idx, x), (t_out, t_idx, t)


@pytest.mark.parametrize("kind", ["random", "ties", "special"])
@pytest.mark.parametrize("name", [n for n in CASES if n != "large"])
@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_values_indices_and_gradients_match_torch(device, dtype, name, kind):
    a = pool_input(CASES[name].shape, "float64", kind, seed=len(name))
    (out, idx, x), (t_out, t_idx, t) = _pool_both(a, device, dtype, **_kwargs(name))
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    assert idx.dtype.name == "int64" and not idx.requires_grad
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), **TOL[dtype])
    g = np.random.default_rng(1).standard_normal(t_out.shape)
    out.backward(ag.tensor(g, dtype=dtype, device=device))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_tied_window_gives_its_gradient_to_the_first_maximum(device, dtype):
    # The im2col + amax composite shared it (0.25 each); PyTorch routes it to one element.
    x = ag.ones(1, 1, 2, 4, dtype=dtype, device=device, requires_grad=True)
    ag.max_pool2d(x, 2).sum().backward()
    assert x.grad.numpy().tolist() == [[[[1, 0, 1, 0], [0, 0, 0, 0]]]]


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_nan_wins_and_the_last_nan_is_chosen(device, dtype):
    a = np.array([[[[1.0, np.nan, 3.0, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]]]])
    (out, idx, _), (t_out, t_idx, _) = _pool_both(a, device, dtype, kernel_size=(1, 4))
    assert idx.numpy().reshape(-1).tolist() == t_idx.numpy().reshape(-1).tolist() == [3, 4]
    np.testing.assert_array_equal(out.detach().numpy(), t_out.detach().numpy())


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_padding_is_never_chosen(device, dtype):
    a = np.full((1, 1, 3, 3), -np.inf)
    (out, idx, _), (_, t_idx, _) = _pool_both(a, device, dtype, kernel_size=3, stride=1,
                                              padding=1)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    assert (out.detach().numpy() == -np.inf).all()


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_one_node_on_devices_with_the_kernels(device, dtype):
    x = ag.tensor(pool_input((2, 3, 6, 6), dtype, "random"), device=device, requires_grad=True)
    out = ag.max_pool2d(x, 2)
    if nd.has_max_pool(x._data):
        assert out.grad_fn.name == "max_pool2d_with_indices"
        assert out.grad_fn.next[0] is x


def _distinct(shape, seed=0):
    return np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape) / 7.0


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2,
                                                                padding=1, dilation=(1, 2)),
                                    dict(kernel_size=2, stride=1, ceil_mode=True)], ids=str)
@pytest.mark.parametrize("device", DEVICES64)
def test_gradcheck_float64_first_and_second_order(device, kwargs):
    x = ag.tensor(_distinct((1, 2, 5, 5)), dtype="float64", device=device, requires_grad=True)
    assert ag.gradcheck(lambda x: ag.max_pool2d(x, **kwargs), [x])

    def grad_of_squares(x):  # d/dx of sum(pool(x)^2): differentiates the pool's backward
        (g,) = ag.grad((ag.max_pool2d(x, **kwargs) ** 2).sum(), [x], create_graph=True)
        return g
    assert ag.gradcheck(grad_of_squares, [x])


@pytest.mark.parametrize("device", DEVICES64)
def test_second_derivative_matches_torch(device):
    a = pool_input((2, 2, 6, 5), "float64", "ties", seed=4)
    kwargs = dict(kernel_size=3, stride=2, padding=1)
    x = ag.tensor(a, dtype="float64", device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    (g,) = ag.grad((ag.max_pool2d(x, **kwargs) ** 3).sum(), [x], create_graph=True)
    (tg,) = torch.autograd.grad((F.max_pool2d(t, **kwargs) ** 3).sum(), [t], create_graph=True)
    (gg,) = ag.grad((g * g).sum(), [x])
    (tgg,) = torch.autograd.grad((tg * tg).sum(), [t])
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), **TOL["float64"])
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), **TOL["float64"])


@pytest.mark.parametrize("name", ["3x3s2p1", "dilated", "ceil-dilated-padded"])
@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_composite_fallback_matches_torch(monkeypatch, device, dtype, name):
    # A third-party backend without the kernels: im2col + amax, distinct values (no ties).
    monkeypatch.setattr(nd, "has_max_pool", lambda x: False)
    a = _distinct(CASES[name].shape)
    x = ag.tensor(a, dtype=dtype, device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    out = ag.max_pool2d(x, **_kwargs(name))
    assert out.grad_fn.name != "max_pool2d_with_indices"
    t_out = F.max_pool2d(t, **_kwargs(name))
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), **TOL[dtype])
    out.sum().backward()
    t_out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_three_d_input_and_empty_batch(device, dtype):
    a = pool_input((3, 5, 4), "float64", "ties")
    out, idx = ag.max_pool2d(ag.tensor(a, dtype=dtype, device=device), 2, return_indices=True)
    t_out, t_idx = F.max_pool2d(torch.tensor(a), 2, return_indices=True)
    assert out.shape == (3, 2, 2)
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    np.testing.assert_allclose(out.numpy(), t_out.numpy())
    x = ag.zeros(0, 2, 4, 4, dtype=dtype, device=device, requires_grad=True)
    ag.max_pool2d(x, 2).sum().backward()
    assert x.grad.shape == (0, 2, 4, 4)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(kernel_size=0), ValueError, r"max_pool2d: kernel_size must be an int >= 1"),
    (dict(kernel_size=2, stride=0), ValueError, r"max_pool2d: stride must be an int >= 1"),
    (dict(kernel_size=2, padding=2), ValueError, r"max_pool2d: padding \(2, 2\) should be at "
                                                 r"most half of kernel \(2, 2\)"),
    (dict(kernel_size=2, dilation=0), ValueError, r"max_pool2d: dilation must be an int >= 1"),
    (dict(kernel_size=3, dilation=3), nd.ShapeError, r"max_pool2d: input of shape "
                                                     r"\(1, 1, 4, 4\) is too small"),
])
def test_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        ag.max_pool2d(ag.zeros(1, 1, 4, 4), **kwargs)
    with pytest.raises(RuntimeError):  # PyTorch rejects each of them too
        F.max_pool2d(torch.zeros(1, 1, 4, 4), **kwargs)


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_second_backward_needs_retain_graph(device, dtype):
    x = ag.tensor(pool_input((1, 2, 4, 4), dtype, "random"), device=device, requires_grad=True)
    y = ag.max_pool2d(x, 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy().sum(), 16.0)
    y = ag.max_pool2d(x, 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
