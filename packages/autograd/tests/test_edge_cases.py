"""Edge cases against PyTorch, on every device: NaN inputs and bounds, kinks at the
boundary, zero variance, empty inputs and empty batches, mixed dtypes in cat/stack, and
0-d tensors reduced over dim 0. Where PyTorch raises, Lamina raises the same kind."""

from __future__ import annotations

import math

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import DEVICES, device_dtypes

NAN = math.nan
EDGES = np.array([NAN, -1.0, 0.0, 1.0, 2.0, 3.0, -0.0])  # a NaN, both bounds, both zeros


def _pair(values: np.ndarray, device: str, dtype: str = "float32"
          ) -> tuple[ag.Tensor, torch.Tensor]:
    """The same leaf in Lamina (on ``device``) and in torch (float64)."""
    return (ag.tensor(values, dtype=dtype, device=device, requires_grad=True),
            torch.tensor(values, dtype=torch.float64, requires_grad=True))


def _same(got: ag.Tensor, want: torch.Tensor, rtol: float = 1e-5) -> None:
    """Equal shapes and values, NaN where torch has NaN."""
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol,
                               atol=1e-6)


def _backward_both(fn, x_np: np.ndarray, device: str, dtype: str = "float32", **kwargs
                   ) -> tuple[ag.Tensor, torch.Tensor]:
    """``fn`` on both sides, then the gradient of ``sum(out * w)`` for a fixed ``w``."""
    x, xt = _pair(x_np, device, dtype)
    out, out_t = fn(x, **kwargs), fn(xt, **kwargs)
    _same(out, out_t)
    w = np.random.default_rng(0).standard_normal(tuple(out_t.shape))
    (out * ag.tensor(w, dtype=dtype, device=device)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    _same(x.grad, xt.grad)
    return x, xt


# ------------------------------------------------------------------ relu and clamp

@pytest.mark.parametrize("device", DEVICES)
def test_relu_of_bool_is_refused_and_of_int64_keeps_the_dtype(device):
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        torch.relu(torch.tensor([True, False]))
    with pytest.raises(nd.DTypeError, match=r"relu: bool inputs .*convert with \.long\(\)"):
        ag.relu(ag.tensor([True, False], device=device))
    with pytest.raises(nd.DTypeError, match="relu: bool"):
        ag.tensor([True], device=device).relu()
    out = ag.relu(ag.tensor([3, -2], device=device))
    assert out.dtype == "int64" and out.numpy().tolist() == [3, 0]


@pytest.mark.parametrize("device, dtype", device_dtypes())
def test_relu_gradient_at_nan_and_zero_matches_torch(device, dtype):
    x, xt = _pair(EDGES, device, dtype)
    out, out_t = ag.relu(x), torch.relu(xt)
    _same(out, out_t)
    out.sum().backward()
    out_t.sum().backward()
    _same(x.grad, xt.grad)
    assert x.grad.numpy()[0] == 1.0  # torch's threshold rule passes the gradient at NaN


CLAMPS = [dict(min=0.0), dict(max=2.0), dict(min=0.0, max=2.0), dict(min=NAN),
          dict(max=NAN), dict(min=NAN, max=1.0), dict(min=1.0, max=NAN),
          dict(min=2.0, max=0.0), dict(min=-1.0, max=-1.0)]


@pytest.mark.parametrize("kwargs", CLAMPS, ids=[str(k) for k in CLAMPS])
@pytest.mark.parametrize("device, dtype", device_dtypes())
def test_clamp_at_nan_and_at_the_bounds_matches_torch(device, dtype, kwargs):
    _backward_both(lambda t, **kw: t.clamp(**kw), EDGES, device, dtype, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_clamp_promotes_like_torch(device):
    cases = [(np.array([1, -2, 3]), dict(min=0)), (np.array([1, -2, 3]), dict(min=0.5)),
             (np.array([True, False]), dict(min=0)), (np.array([1, 4]), dict(max=NAN))]
    for values, kwargs in cases:
        got = ag.tensor(values, device=device).clamp(**kwargs)
        want = torch.tensor(values).clamp(**kwargs)
        assert got.dtype == str(want.dtype).removeprefix("torch."), (values, kwargs)
        np.testing.assert_allclose(got.numpy(), want.numpy())


# ------------------------------------------------------------------ std at zero variance

@pytest.mark.parametrize("kwargs", [dict(dim=1), dict(dim=1, correction=0),
                                    dict(dim=0, keepdim=True), dict(dim=None),
                                    dict(dim=(0, 1), unbiased=False)])
@pytest.mark.parametrize("device, dtype", device_dtypes())
def test_std_gradient_of_a_constant_slice_is_zero_as_in_torch(device, dtype, kwargs):
    rows = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0], [5.0, 5.0, 5.0]])
    for values in (rows, np.full((3, 3), 1.5)):
        x, _ = _backward_both(lambda t, **kw: t.std(**kw), values, device, dtype, **kwargs)
        assert not np.isnan(x.grad.numpy()).any()


@pytest.mark.parametrize("device", DEVICES)
def test_std_of_one_element_is_nan_unbiased_and_zero_biased_as_in_torch(device):
    for correction in (1, 0):
        _backward_both(lambda t, c=correction: t.std(dim=1, correction=c), np.ones((2, 1)),
                       device)


# ------------------------------------------------------------------ empty inputs

EMPTY = [  # (name, Lamina, torch, input shape)
    ("softmax-dim0", lambda t: ag.softmax(t, 0), lambda t: torch.softmax(t, 0), (0, 3)),
    ("softmax-empty-dim", lambda t: ag.softmax(t, 1), lambda t: torch.softmax(t, 1), (3, 0)),
    ("log_softmax-dim0", lambda t: ag.log_softmax(t, 0), lambda t: torch.log_softmax(t, 0),
     (0, 3)),
    ("log_softmax-empty-dim", lambda t: ag.log_softmax(t, -1),
     lambda t: torch.log_softmax(t, -1), (2, 0)),
    ("logsumexp-empty-dim", lambda t: ag.logsumexp(t, 0), lambda t: torch.logsumexp(t, 0),
     (0, 3)),
    ("logsumexp-keepdim", lambda t: ag.logsumexp(t, 1, keepdim=True),
     lambda t: torch.logsumexp(t, 1, keepdim=True), (2, 0)),
    ("logsumexp-all", lambda t: ag.logsumexp(t, (0, 1)), lambda t: torch.logsumexp(t, (0, 1)),
     (0, 3)),
    ("logsumexp-kept-empty", lambda t: ag.logsumexp(t, 1), lambda t: torch.logsumexp(t, 1),
     (0, 3)),
    ("amax-kept-empty", lambda t: ag.amax(t, 1), lambda t: torch.amax(t, 1), (0, 3)),
    ("amin-keepdim", lambda t: ag.amin(t, 1, keepdim=True),
     lambda t: torch.amin(t, 1, keepdim=True), (0, 3)),
    ("max_pool2d", lambda t: ag.max_pool2d(t, 2), lambda t: TF.max_pool2d(t, 2), (0, 3, 4, 4)),
    ("max_pool2d-padded", lambda t: ag.max_pool2d(t, 3, 1, 1),
     lambda t: TF.max_pool2d(t, 3, 1, 1), (0, 2, 4, 5)),
    ("avg_pool2d", lambda t: ag.avg_pool2d(t, 2, 1, 1), lambda t: TF.avg_pool2d(t, 2, 1, 1),
     (0, 3, 4, 4)),
]


@pytest.mark.parametrize("name, ours, theirs, shape", EMPTY, ids=[e[0] for e in EMPTY])
@pytest.mark.parametrize("device", DEVICES)
def test_empty_inputs_give_torchs_empty_results_and_gradients(device, name, ours, theirs,
                                                              shape):
    x, xt = _pair(np.zeros(shape), device)
    out, out_t = ours(x), theirs(xt)
    _same(out, out_t)  # shapes, and -inf for a logsumexp over nothing
    out.sum().backward()
    out_t.sum().backward()
    _same(x.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_conv2d_of_an_empty_batch_matches_torch(device):
    rng = np.random.default_rng(0)
    w_np, b_np = rng.standard_normal((5, 3, 3, 3)), rng.standard_normal(5)
    w, wt = _pair(w_np, device)
    b, bt = _pair(b_np, device)
    x, xt = _pair(np.zeros((0, 3, 6, 6)), device)
    out, out_t = ag.conv2d(x, w, b, padding=1), TF.conv2d(xt, wt, bt, padding=1)
    _same(out, out_t)
    out.sum().backward()
    out_t.sum().backward()
    for got, want in ((x.grad, xt.grad), (w.grad, wt.grad), (b.grad, bt.grad)):
        _same(got, want)  # zeros for the weight and the bias


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("device", DEVICES)
def test_max_over_an_empty_dim_raises_as_torch_does(device, op):
    x, xt = ag.zeros(0, 3, device=device), torch.zeros(0, 3)
    with pytest.raises(IndexError):
        getattr(torch, op)(xt, 0)
    for dim in (0, (0, 1), -2):
        with pytest.raises(IndexError, match=f"{op}: cannot reduce dim 0 of size 0"):
            getattr(ag, op)(x, dim)
    with pytest.raises(RuntimeError):
        getattr(torch, op)(xt)
    for dim in (None, ()):
        with pytest.raises(nd.ShapeError, match=f"{op}: cannot reduce the empty tensor of "
                                                r"shape \(0, 3\) over all dims; pass dim="):
            getattr(ag, op)(x, dim)


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "logsumexp", "amax", "amin", "std"])
@pytest.mark.parametrize("device", DEVICES)
def test_reducing_a_0d_tensor_over_dim_0_matches_torch(device, op):
    for dim in (0, -1):
        _backward_both(lambda t, d=dim: getattr(t, op)(d), np.array(1.5), device)


# ------------------------------------------------------------------ mixed dtypes in cat

def _dtype_devices() -> list[str]:
    return [d for d in DEVICES if {"int64", "bool"} <= set(nd.get_device(d).dtypes)]


@pytest.mark.parametrize("join", ["cat", "stack"])
@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("bool", "int64"),
                                    ("float32", "bool"), ("bool", "bool", "float32"),
                                    ("float32", "float64", "int64")])
@pytest.mark.parametrize("device", _dtype_devices())
def test_cat_and_stack_promote_like_torch_and_grads_keep_each_dtype(device, dtypes, join):
    if "float64" in dtypes and "float64" not in nd.get_device(device).dtypes:
        pytest.skip(f"{device} has no float64")
    values = [np.array([1, 0, 2]).astype(d) for d in dtypes]
    ours = [ag.tensor(v, device=device, requires_grad=v.dtype.kind == "f") for v in values]
    theirs = [torch.tensor(v, requires_grad=v.dtype.kind == "f") for v in values]
    out, out_t = getattr(ag, join)(ours, 0), getattr(torch, join)(theirs, 0)
    assert out.dtype == str(out_t.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(out.detach().numpy(), out_t.detach().numpy())
    assert out.requires_grad == out_t.requires_grad
    if not out_t.requires_grad:
        return
    w = np.arange(out_t.numel(), dtype=np.float64).reshape(tuple(out_t.shape))
    (out * ag.tensor(w, device=device)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    for x, t in zip(ours, theirs):
        if t.requires_grad:
            assert x.grad.dtype == x.dtype
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
