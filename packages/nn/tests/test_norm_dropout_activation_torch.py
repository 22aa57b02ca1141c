"""RMSNorm, the channel and alpha dropouts and the remaining activations (issue 30) vs torch.

Deterministic layers are compared with torch 2.13 CPU on every available device in
float32 and float64: values, input and parameter gradients, reprs, state_dict keys,
signatures and errors. The random ones (dropouts, RReLU in training) cannot share
torch's generator, so they are checked by structure and statistics: whole channels
dropped or kept, the scale, the dropped fraction, eval identity and mask-times-scale
gradients.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn
from lamina.nn import functional as F

torch.set_num_threads(1)

TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10)}
DTYPES = ["float32", "float64"]
TNN, TF = torch.nn, torch.nn.functional
SATURATION = 1.7580993408473766  # SELU's negative saturation, -(scale * alpha)

# (id, lamina factory, torch factory, input shape); modules are compared in eval mode.
CASES = [
    ("rmsnorm", lambda: nn.RMSNorm(6), lambda: TNN.RMSNorm(6), (3, 4, 6)),
    ("rmsnorm-2d-eps", lambda: nn.RMSNorm((4, 6), eps=1e-3),
     lambda: TNN.RMSNorm((4, 6), eps=1e-3), (3, 4, 6)),
    ("rmsnorm-list", lambda: nn.RMSNorm([6]), lambda: TNN.RMSNorm([6]), (5, 6)),
    ("rmsnorm-noaffine", lambda: nn.RMSNorm(6, elementwise_affine=False),
     lambda: TNN.RMSNorm(6, elementwise_affine=False), (2, 6)),
    ("threshold", lambda: nn.Threshold(0.5, -2.0), lambda: TNN.Threshold(0.5, -2.0), (4, 6)),
    ("threshold-int", lambda: nn.Threshold(1, 20), lambda: TNN.Threshold(1, 20), (4, 6)),
    ("glu", lambda: nn.GLU(), lambda: TNN.GLU(), (3, 4, 6)),
    ("glu-dim1", lambda: nn.GLU(1), lambda: TNN.GLU(1), (3, 4, 6)),
    ("hardshrink", lambda: nn.Hardshrink(), lambda: TNN.Hardshrink(), (4, 6)),
    ("hardshrink-2", lambda: nn.Hardshrink(2.0), lambda: TNN.Hardshrink(2.0), (4, 6)),
    ("softshrink", lambda: nn.Softshrink(), lambda: TNN.Softshrink(), (4, 6)),
    ("softshrink-1.5", lambda: nn.Softshrink(1.5), lambda: TNN.Softshrink(1.5), (4, 6)),
    ("tanhshrink", lambda: nn.Tanhshrink(), lambda: TNN.Tanhshrink(), (4, 6)),
    ("softmax2d", lambda: nn.Softmax2d(), lambda: TNN.Softmax2d(), (2, 3, 4, 5)),
    ("softmax2d-3d", lambda: nn.Softmax2d(), lambda: TNN.Softmax2d(), (3, 4, 5)),
    ("rrelu-eval", lambda: nn.RReLU(), lambda: TNN.RReLU(), (4, 6)),
    ("rrelu-eval-range", lambda: nn.RReLU(0.1, 0.3), lambda: TNN.RReLU(0.1, 0.3), (4, 6)),
    ("dropout1d-eval", lambda: nn.Dropout1d(), lambda: TNN.Dropout1d(), (2, 3, 4)),
    ("dropout2d-eval", lambda: nn.Dropout2d(0.2), lambda: TNN.Dropout2d(0.2), (2, 3, 4, 4)),
    ("dropout3d-eval", lambda: nn.Dropout3d(0.7), lambda: TNN.Dropout3d(0.7), (2, 3, 2, 2, 2)),
    ("alpha-dropout-eval", lambda: nn.AlphaDropout(), lambda: TNN.AlphaDropout(), (4, 6)),
    ("feature-alpha-dropout-eval", lambda: nn.FeatureAlphaDropout(0.1),
     lambda: TNN.FeatureAlphaDropout(0.1), (2, 3, 4)),
]


def _input(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    # Spread over the kinks of the shrinks and thresholds (-2, -1.5, -0.5, 0, 0.5, 1.5, 2).
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def _randomise(module: torch.nn.Module) -> None:
    # A non-trivial weight so that its gradient and its effect are exercised.
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + 1.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,make,make_torch,shape", CASES, ids=[c[0] for c in CASES])
def test_module_matches_torch(name, make, make_torch, shape, dtype, device):
    ref = make_torch().to(getattr(torch, dtype)).eval()
    _randomise(ref)
    layer = make().to(device, dtype).eval()
    layer.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    assert list(layer.state_dict()) == list(ref.state_dict())
    assert repr(layer) == repr(ref)
    x_np = _input(shape, dtype)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    out, out_t = layer(x), ref(xt)
    rtol, atol = TOL[dtype]
    assert out.dtype == dtype and out.device.type == device
    assert_close(out, out_t, rtol, atol)
    upstream = np.random.default_rng(1).standard_normal(out_t.shape).astype(dtype)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    assert_close(x.grad, xt.grad, rtol, atol * 10)
    params = dict(layer.named_parameters())
    assert list(params) == [k for k, _ in ref.named_parameters()]
    for key, p_t in ref.named_parameters():
        assert_close(params[key].grad, p_t.grad, rtol * 10, atol * 10)


# (id, lamina function, torch function, input shape)
FUNCTIONS = [
    ("rms_norm", lambda x: F.rms_norm(x, (6,)), lambda x: TF.rms_norm(x, (6,)), (3, 6)),
    ("rms_norm-int-eps", lambda x: F.rms_norm(x, 6, eps=0.5),
     lambda x: TF.rms_norm(x, [6], eps=0.5), (3, 6)),
    ("threshold", lambda x: F.threshold(x, -0.5, 7.0), lambda x: TF.threshold(x, -0.5, 7.0),
     (4, 6)),
    ("glu", F.glu, TF.glu, (4, 6)),
    ("glu-dim0", lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0), (4, 6)),
    ("glu-dim-neg", lambda x: F.glu(x, -2), lambda x: TF.glu(x, -2), (2, 4, 3)),
    ("hardshrink", lambda x: F.hardshrink(x, 1.0), lambda x: TF.hardshrink(x, 1.0), (4, 6)),
    ("hardshrink-negative", lambda x: F.hardshrink(x, -1.0),
     lambda x: TF.hardshrink(x, -1.0), (4, 6)),
    ("softshrink", lambda x: F.softshrink(x, 0.25), lambda x: TF.softshrink(x, 0.25), (4, 6)),
    ("softshrink-0", lambda x: F.softshrink(x, 0.0), lambda x: TF.softshrink(x, 0.0), (4, 6)),
    ("tanhshrink", F.tanhshrink, TF.tanhshrink, (4, 6)),
    ("rrelu-eval", lambda x: F.rrelu(x, 0.2, 0.4), lambda x: TF.rrelu(x, 0.2, 0.4), (4, 6)),
    ("rrelu-default", F.rrelu, TF.rrelu, (4, 6)),
    ("alpha_dropout-default-eval", F.alpha_dropout, TF.alpha_dropout, (4, 6)),
    ("feature_alpha_dropout-default-eval", F.feature_alpha_dropout,
     TF.feature_alpha_dropout, (2, 3, 4)),
    ("dropout2d-not-training", lambda x: F.dropout2d(x, 0.5, False),
     lambda x: TF.dropout2d(x, 0.5, False), (2, 3, 4, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,fn,fn_torch,shape", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_functional_matches_torch(name, fn, fn_torch, shape, dtype, device):
    x_np = _input(shape, dtype, seed=2)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    out, out_t = fn(x), fn_torch(xt)
    rtol, atol = TOL[dtype]
    assert out.dtype == dtype
    assert_close(out, out_t, rtol, atol)
    upstream = np.random.default_rng(3).standard_normal(out_t.shape).astype(dtype)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    assert_close(x.grad, xt.grad, rtol, atol * 10)


# Shrinks and thresholds at and around their kinks: PyTorch's gradient there is 0.
KINKS = np.array([-3.0, -2.0, -1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0])


@pytest.mark.parametrize("name,fn,fn_torch", [
    ("threshold", lambda x: F.threshold(x, 0.5, -1.0), lambda x: TF.threshold(x, 0.5, -1.0)),
    ("hardshrink", F.hardshrink, TF.hardshrink),
    ("softshrink", lambda x: F.softshrink(x, 1.5), lambda x: TF.softshrink(x, 1.5)),
    ("rrelu-eval", F.rrelu, TF.rrelu),
], ids=["threshold", "hardshrink", "softshrink", "rrelu-eval"])
def test_functional_at_kinks(name, fn, fn_torch, device):
    x = ag.tensor(KINKS, dtype="float64", requires_grad=True, device=device)
    xt = torch.tensor(KINKS, requires_grad=True)
    out, out_t = fn(x), fn_torch(xt)
    assert_close(out, out_t, 1e-12, 1e-12)
    out.sum().backward()
    out_t.sum().backward()
    assert_close(x.grad, xt.grad, 1e-12, 1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_with_weight_and_default_eps_matches_torch(dtype, device):
    # Values near 1e-4: mean(x**2) ~ 1e-8 is close to float32's epsilon (1.2e-7), so the
    # eps=None rule (the dtype's machine epsilon) changes the result visibly.
    rng = np.random.default_rng(4)
    x_np = (rng.standard_normal((3, 2, 5)) * 1e-4).astype(dtype)
    w_np = rng.standard_normal((2, 5)).astype(dtype)
    x, w = (ag.tensor(a, requires_grad=True, device=device) for a in (x_np, w_np))
    xt, wt = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np))
    out, out_t = F.rms_norm(x, (2, 5), w), TF.rms_norm(xt, (2, 5), wt)
    rtol, atol = TOL[dtype]
    assert_close(out, out_t, rtol, atol)
    mean_square = (x_np.astype(np.float64) ** 2).mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(out.detach().numpy(),
                               x_np / np.sqrt(mean_square + np.finfo(dtype).eps) * w_np,
                               rtol * 10, atol)
    if dtype == "float32":  # a tiny eps would give a visibly different result
        assert not np.allclose(out.detach().numpy(), x_np / np.sqrt(mean_square) * w_np,
                               rtol=1e-3)
    out.sum().backward()
    out_t.sum().backward()
    assert_close(x.grad, xt.grad, 1e-4 if dtype == "float32" else 1e-9, atol)
    assert_close(w.grad, wt.grad, rtol * 10, atol * 10)


def test_rms_norm_module_defaults_and_reset():
    layer, ref = nn.RMSNorm([3, 2]), TNN.RMSNorm([3, 2])
    assert layer.normalized_shape == ref.normalized_shape == (3, 2)
    assert layer.eps is None and layer.elementwise_affine is True
    assert layer.weight.dtype == "float32" and tuple(layer.weight.shape) == (3, 2)
    with ag.no_grad():
        layer.weight.fill_(3.0)
    layer.reset_parameters()
    np.testing.assert_array_equal(layer.weight.detach().numpy(), np.ones((3, 2)))
    assert nn.RMSNorm(4, elementwise_affine=False).weight is None
    assert list(nn.RMSNorm(4, dtype="float64").state_dict()) == ["weight"]
    assert nn.RMSNorm(4, dtype="float64").weight.dtype == "float64"


# ----- in-place forms ------------------------------------------------------------------

IN_PLACE = [
    ("threshold", lambda x: F.threshold(x, 0.1, 5.0, True),
     lambda x: TF.threshold(x, 0.1, 5.0, True)),
    ("threshold_", lambda x: F.threshold_(x, 0.1, 5.0), lambda x: TF.threshold_(x, 0.1, 5.0)),
    ("rrelu-eval", lambda x: F.rrelu(x, 0.1, 0.5, False, True),
     lambda x: TF.rrelu(x, 0.1, 0.5, False, True)),
    ("rrelu_-eval", lambda x: F.rrelu_(x, 0.1, 0.5), lambda x: TF.rrelu_(x, 0.1, 0.5)),
    ("threshold-module", nn.Threshold(0.1, 5.0, True), TNN.Threshold(0.1, 5.0, True)),
]


@pytest.mark.parametrize("name,ours,theirs", IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_in_place_writes_into_x_and_matches_torch_gradient(name, ours, theirs, device):
    x_np, w_np = _input((4, 6), "float32"), _input((4, 6), "float32", seed=5)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    h, ht = x * 1.0, xt * 1.0
    version = h._version
    out, out_t = ours(h), theirs(ht)
    assert out is h and h._version > version
    assert_close(out, out_t)
    (out * ag.tensor(w_np, device=device)).sum().backward()
    (out_t * torch.tensor(w_np)).sum().backward()
    assert_close(x.grad, xt.grad)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ours(ag.tensor(x_np, requires_grad=True, device=device))


# ----- channel dropout -----------------------------------------------------------------

# (id, function, module class, batched shape, unbatched shape or None)
CHANNEL = [
    ("dropout1d", F.dropout1d, nn.Dropout1d, (8, 50, 3), (50, 3)),
    ("dropout2d", F.dropout2d, nn.Dropout2d, (8, 50, 2, 3), None),
    ("dropout3d", F.dropout3d, nn.Dropout3d, (4, 50, 2, 2, 2), (50, 2, 2, 2)),
]


def _only(values: np.ndarray, allowed: tuple[float, ...]) -> bool:
    """Whether every value is one of ``allowed`` (to float32 precision)."""
    return bool(np.logical_or.reduce([np.isclose(values, v, rtol=1e-6, atol=0)
                                      for v in allowed]).all())


def _channels(a: np.ndarray, batched: bool) -> np.ndarray:
    """(channels, elements per channel): one row per mask value."""
    lead = 2 if batched else 1
    return a.reshape(math.prod(a.shape[:lead]), -1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,fn,cls,batched_shape,unbatched_shape", CHANNEL,
                         ids=[c[0] for c in CHANNEL])
def test_channel_dropout_drops_whole_channels(name, fn, cls, batched_shape, unbatched_shape,
                                             dtype, device):
    p = 0.3
    for shape in filter(None, (batched_shape, unbatched_shape)):
        batched = shape == batched_shape
        x_np = np.abs(_input(shape, dtype)) + 0.5  # no zeros: a zero marks a drop
        x = ag.tensor(x_np, requires_grad=True, device=device)
        out = fn(x, p)
        assert out.dtype == dtype and tuple(out.shape) == shape
        ratio = _channels(out.detach().numpy() / x_np, batched)
        kept = ratio[:, 0] != 0
        # every channel is all dropped or all kept and scaled by 1 / (1 - p)
        expected = np.broadcast_to(np.where(kept, 1 / (1 - p), 0.0)[:, None], ratio.shape)
        np.testing.assert_allclose(ratio, expected, rtol=TOL[dtype][0])
        assert 0 < kept.sum() < len(kept)
        out.sum().backward()
        np.testing.assert_allclose(_channels(x.grad.numpy(), batched), ratio, TOL[dtype][0])


@pytest.mark.parametrize("name,fn,cls,batched_shape,unbatched_shape", CHANNEL,
                         ids=[c[0] for c in CHANNEL])
def test_channel_dropout_rate_and_mean(name, fn, cls, batched_shape, unbatched_shape, device):
    p = 0.25
    shape = (40,) + batched_shape[1:]  # 2000 channels
    out = fn(ag.ones(*shape, device=device), p).numpy()
    dropped = (_channels(out, True)[:, 0] == 0).mean()
    assert abs(dropped - p) < 0.05  # 5 standard deviations: sqrt(p(1-p)/2000) ~ 0.01
    assert abs(out.mean() - 1.0) < 0.1


@pytest.mark.parametrize("name,fn,cls,batched_shape,unbatched_shape", CHANNEL,
                         ids=[c[0] for c in CHANNEL])
def test_channel_dropout_eval_p0_p1_and_module(name, fn, cls, batched_shape, unbatched_shape,
                                               device):
    x = ag.tensor(_input(batched_shape, "float32"), device=device)
    assert fn(x, 0.5, training=False) is x
    assert fn(x, 0.0) is x
    np.testing.assert_array_equal(fn(x, 1.0).numpy(), np.zeros(batched_shape))
    layer = cls(0.4)
    assert repr(layer) == repr(getattr(TNN, cls.__name__)(0.4))
    assert layer.eval()(x) is x
    out = layer.train()(x)
    assert out is not x and _only(out.numpy() / x.numpy(), (0.0, 1 / 0.6))


@pytest.mark.parametrize("name,fn,cls,batched_shape,unbatched_shape", CHANNEL,
                         ids=[c[0] for c in CHANNEL])
def test_channel_dropout_in_place(name, fn, cls, batched_shape, unbatched_shape, device):
    x_np = np.abs(_input(batched_shape, "float32")) + 0.5
    x = ag.tensor(x_np, requires_grad=True, device=device)
    h = x * 1.0
    version = h._version
    out = cls(0.5, inplace=True)(h)
    assert out is h and h._version > version
    ratio = _channels(h.detach().numpy() / x_np, True)
    assert _only(ratio, (0.0, 2.0))
    (h * 3.0).sum().backward()
    np.testing.assert_allclose(_channels(x.grad.numpy(), True), ratio * 3.0, 1e-5)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(ag.ones(*batched_shape, requires_grad=True, device=device), 0.5, True, True)
    y = ag.ones(*batched_shape, device=device)
    assert fn(y, 1.0, True, True) is y and not y.numpy().any()


def test_channel_dropout_input_ranks_warn_and_raise_as_torch():
    for rank in (2, 3):
        F.dropout1d(ag.ones(*([2] * rank)))
    for rank in (0, 1, 4):
        with pytest.raises(ValueError, match=r"dropout1d: expected a 2D \(C, L\) or 3D"):
            F.dropout1d(ag.ones(*([2] * rank)))
        with pytest.raises(RuntimeError):
            TF.dropout1d(torch.ones([2] * rank))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.dropout2d(ag.ones(2, 3, 4, 4))
        F.dropout3d(ag.ones(2, 3, 2, 2, 2))
        F.dropout3d(ag.ones(3, 2, 2, 2))
    with pytest.warns(UserWarning, match="interpreted as shape \\(N, C, L\\)"):
        F.dropout2d(ag.ones(2, 3, 4))
    for rank in (2, 5):
        with pytest.warns(UserWarning, match=f"Received a {rank}-D input to dropout2d"):
            out = F.dropout2d(ag.ones(*([3] * rank)))
        assert tuple(out.shape) == (3,) * rank
    with pytest.warns(UserWarning, match="Received a 6-D input to dropout3d"):
        F.dropout3d(ag.ones(*([2] * 6)))
    for fn in (F.dropout2d, F.dropout3d):  # too few dims for a channel, as torch's
        with pytest.warns(UserWarning), pytest.raises(ValueError, match="at least"):
            fn(ag.ones(3) if fn is F.dropout2d else ag.tensor(1.0))
        with pytest.warns(UserWarning), pytest.raises(RuntimeError):
            (TF.dropout2d if fn is F.dropout2d else TF.dropout3d)(
                torch.ones(3) if fn is F.dropout2d else torch.tensor(1.0))
    with pytest.warns(UserWarning):  # dropout3d reads 1-D as unbatched (C,): element-wise
        assert tuple(F.dropout3d(ag.ones(5)).shape) == (5,)


# ----- alpha dropout -------------------------------------------------------------------

def _alpha_constants(p: float) -> tuple[float, float, float]:
    a = 1.0 / math.sqrt((SATURATION ** 2 * p + 1.0) * (1.0 - p))
    return a, a * SATURATION * p, a * SATURATION * (p - 1.0)  # scale, kept shift, dropped


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("feature", [False, True], ids=["alpha", "feature_alpha"])
def test_alpha_dropout_structure_and_gradient(feature, dtype, device):
    p, shape = 0.2, (6, 40, 5)
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    x_np = _input(shape, dtype)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    out = fn(x, p, training=True)
    assert out.dtype == dtype and tuple(out.shape) == shape
    a, shift, dropped_value = _alpha_constants(p)
    values = out.detach().numpy()
    kept = np.isclose(values, a * x_np + shift, rtol=1e-5, atol=1e-6)
    dropped = np.isclose(values, dropped_value, rtol=1e-5, atol=1e-6)
    assert (kept | dropped).all() and kept.any() and dropped.any()
    if feature:  # one draw per channel (N, C)
        per_channel = kept.reshape(6 * 40, -1)
        assert (per_channel.all(axis=1) | ~per_channel.any(axis=1)).all()
    out.backward(ag.ones(*shape, dtype=dtype, device=device))
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept & ~dropped, a, 0.0), TOL[dtype][0])


@pytest.mark.parametrize("feature", [False, True], ids=["alpha", "feature_alpha"])
def test_alpha_dropout_keeps_mean_and_variance(feature, device):
    p = 0.3
    ag.manual_seed(0)
    x = ag.randn(400, 500, device=device)
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    out = fn(x, p, training=True).numpy()
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1.0) < 0.05
    flat = F.alpha_dropout(ag.ones(200_000, device=device), p, True).numpy()
    dropped = np.isclose(flat, _alpha_constants(p)[2]).mean()
    assert abs(dropped - p) < 0.01


@pytest.mark.parametrize("cls", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_modules_eval_p_edges_and_in_place(cls, device):
    layer = getattr(nn, cls)(0.2)
    assert repr(layer) == repr(getattr(TNN, cls)(0.2))
    x = ag.tensor(_input((3, 4, 5), "float32"), device=device)
    assert layer.eval()(x) is x
    assert layer.train()(x) is not x
    fn = F.alpha_dropout if cls == "AlphaDropout" else F.feature_alpha_dropout
    assert fn(x, 0.0, True) is x
    np.testing.assert_array_equal(fn(x, 1.0, True).numpy(), np.zeros((3, 4, 5)))
    h = ag.tensor(_input((3, 4, 5), "float32"), requires_grad=True, device=device)
    y = h * 1.0
    assert getattr(nn, cls)(0.5, inplace=True)(y) is y
    y.sum().backward()
    a = _alpha_constants(0.5)[0]
    assert _only(h.grad.numpy(), (0.0, a))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(ag.ones(3, 4, requires_grad=True, device=device), 0.5, True, True)


def test_feature_alpha_dropout_needs_two_dims_only_when_dropping():
    assert tuple(F.feature_alpha_dropout(ag.ones(3), 0.5, False).shape) == (3,)
    assert tuple(F.feature_alpha_dropout(ag.ones(3), 0.0, True).shape) == (3,)
    with pytest.raises(ValueError, match=r"feature_alpha_dropout: .*at least 2 dims"):
        F.feature_alpha_dropout(ag.ones(3), 0.5, True)
    with pytest.raises(RuntimeError):
        TF.feature_alpha_dropout(torch.ones(3), 0.5, True)
    assert tuple(F.alpha_dropout(ag.ones(3), 0.5, True).shape) == (3,)


# ----- RReLU in training ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_rrelu_training_draws_a_slope_per_element(dtype, device):
    lower, upper = 0.1, 0.3
    x_np = _input((50, 40), dtype)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    out = F.rrelu(x, lower, upper, training=True)
    values = out.detach().numpy()
    pos = x_np > 0
    np.testing.assert_array_equal(values[pos], x_np[pos])
    slopes = values[~pos] / x_np[~pos]
    assert slopes.min() >= lower - 1e-6 and slopes.max() <= upper + 1e-6
    assert slopes.std() > 0.03  # uniform on [0.1, 0.3]: std 0.058; not one shared slope
    out.sum().backward()
    grad = x.grad.numpy()
    np.testing.assert_array_equal(grad[pos], 1.0)
    np.testing.assert_allclose(grad[~pos], slopes, TOL[dtype][0] * 10)
    layer = nn.RReLU(lower, upper)
    assert layer.training and not np.allclose(layer(ag.tensor(-np.ones(500))).numpy(),
                                              -(lower + upper) / 2)
    np.testing.assert_allclose(layer.eval()(ag.tensor(-np.ones(5))).numpy(),
                               -(lower + upper) / 2)
    y = ag.tensor(-np.ones(100), device=device)
    assert F.rrelu_(y, lower, upper, training=True) is y
    assert ((y.numpy() <= -lower + 1e-6) & (y.numpy() >= -upper - 1e-6)).all()


# ----- errors, reprs and signatures ----------------------------------------------------

def test_errors_name_the_op_and_match_torchs_kinds():
    x = ag.ones(2, 5)
    cases: list[tuple[Any, Any, type[Exception], str]] = [
        (lambda: F.rms_norm(x, (4,)), lambda: TF.rms_norm(torch.ones(2, 5), (4,)),
         ValueError, r"rms_norm: expected input of shape \(\*, 4\), got \(2, 5\)"),
        (lambda: F.rms_norm(x, (5,), ag.ones(4)),
         lambda: TF.rms_norm(torch.ones(2, 5), (5,), torch.ones(4)),
         ValueError, r"rms_norm: weight must have shape \(5,\)"),
        (lambda: F.rms_norm(x, ()), lambda: TF.rms_norm(torch.ones(2, 5), []),
         ValueError, "rms_norm: normalized_shape is empty"),
        (lambda: nn.RMSNorm(4)(x), lambda: TNN.RMSNorm(4)(torch.ones(2, 5)),
         ValueError, r"RMSNorm\(\(4,\), eps=None.*\): expected input of shape \(\*, 4\)"),
        (lambda: F.glu(x, 1), lambda: TF.glu(torch.ones(2, 5), 1),
         ValueError, "glu: dim 1 of input \\(2, 5\\) has odd size 5"),
        (lambda: F.glu(ag.tensor(1.0)), lambda: TF.glu(torch.tensor(1.0)),
         ValueError, "glu: got a 0-D input"),
        (lambda: F.glu(x, 2), lambda: TF.glu(torch.ones(2, 5), 2),
         IndexError, "glu: dim 2 is out of range"),
        (lambda: F.softshrink(x, -1.0), lambda: TF.softshrink(torch.ones(2, 5), -1.0),
         ValueError, "softshrink: lambd must be >= 0, got -1.0"),
        (lambda: nn.Softmax2d()(x), lambda: TNN.Softmax2d()(torch.ones(2, 5)),
         ValueError, "Softmax2d: expected input to be 3D or 4D, got 2D"),
        (lambda: F.rrelu(x, 0.5, 0.1), lambda: TF.rrelu(torch.ones(2, 5), 0.5, 0.1),
         ValueError, r"rrelu: lower \(0.5\) must be less than or equal to upper \(0.1\)"),
        (lambda: nn.RReLU(0.5, 0.1)(x), lambda: TNN.RReLU(0.5, 0.1)(torch.ones(2, 5)),
         ValueError, "rrelu: lower"),
    ]
    for name in ("dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout"):
        for p in (-0.1, 1.5):
            cases.append((lambda n=name, p=p: getattr(F, n)(ag.ones(2, 3, 4), p),
                          lambda n=name, p=p: getattr(TF, n)(torch.ones(2, 3, 4), p),
                          ValueError, f"{name}: dropout probability p must be in \\[0, 1\\]"))
    for cls in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        cases.append((lambda c=cls: getattr(nn, c)(1.1), lambda c=cls: getattr(TNN, c)(1.1),
                      ValueError, f"{cls}: dropout probability p must be in \\[0, 1\\], "
                                  f"got 1.1"))
    for ours, theirs, kind, message in cases:
        with pytest.raises(kind, match=message):
            ours()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises((RuntimeError, ValueError, IndexError)):
                theirs()


@pytest.mark.parametrize("make,make_torch", [
    (lambda: nn.RMSNorm((2, 3), 1e-3, False), lambda: TNN.RMSNorm((2, 3), 1e-3, False)),
    (lambda: nn.Threshold(0.1, 2.0, True), lambda: TNN.Threshold(0.1, 2.0, True)),
    (lambda: nn.GLU(2), lambda: TNN.GLU(2)),
    (lambda: nn.Softshrink(0.3), lambda: TNN.Softshrink(0.3)),
    (lambda: nn.RReLU(0.1, 0.3, True), lambda: TNN.RReLU(0.1, 0.3, True)),
    (lambda: nn.Dropout2d(0.3, True), lambda: TNN.Dropout2d(0.3, True)),
    (lambda: nn.FeatureAlphaDropout(0.2, True), lambda: TNN.FeatureAlphaDropout(0.2, True)),
], ids=["rmsnorm", "threshold", "glu", "softshrink", "rrelu", "dropout2d", "fadropout"])
def test_repr_matches_torch(make, make_torch):
    assert repr(make()) == repr(make_torch())


def _params(fn: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", ["rms_norm", "dropout1d", "dropout2d", "dropout3d",
                                  "alpha_dropout", "feature_alpha_dropout", "threshold",
                                  "glu", "rrelu"])
def test_function_signature_matches_torch(name):
    # the first parameter is Lamina's x, torch's input
    assert _params(getattr(F, name))[1:] == _params(getattr(TF, name))[1:]


@pytest.mark.parametrize("cls", ["RMSNorm", "Dropout1d", "Dropout2d", "Dropout3d",
                                 "AlphaDropout", "FeatureAlphaDropout", "Threshold", "GLU",
                                 "Hardshrink", "Softshrink", "RReLU"])
def test_module_signature_matches_torch(cls):
    assert _params(getattr(nn, cls).__init__) == _params(getattr(TNN, cls).__init__)


def test_new_names_are_exported():
    for name in ("RMSNorm", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                 "FeatureAlphaDropout", "Threshold", "GLU", "Hardshrink", "Softshrink",
                 "Tanhshrink", "Softmax2d", "RReLU"):
        assert name in nn.__all__ and hasattr(TNN, name)
    for name in ("rms_norm", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout", "threshold", "threshold_", "glu", "hardshrink",
                 "softshrink", "tanhshrink", "rrelu", "rrelu_"):
        assert name in F.__all__ and hasattr(TF, name)
