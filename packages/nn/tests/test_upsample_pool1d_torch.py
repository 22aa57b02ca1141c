"""F.interpolate, Upsample and the 1-D pools (issue 30) against torch: values, gradients, reprs.

Each case runs on every available device in float32 and float64 and compares
the output and the input's gradient (for a random upstream gradient) with
torch 2.13 CPU; bad arguments raise a ValueError naming the op.
"""

from __future__ import annotations

import doctest
import importlib

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
TF = torch.nn.functional
TNN = torch.nn


def _compare(fn, fn_torch, shape, dtype, device):
    """fn(x) against fn_torch(xt): output and the gradient of x."""
    x_np = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    out, out_t = fn(x), fn_torch(xt)
    rtol, atol = TOL[dtype]
    assert out.dtype == dtype and out.device.type == device
    assert_close(out, out_t, rtol, atol)
    upstream = np.random.default_rng(1).standard_normal(tuple(out_t.shape)).astype(dtype)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    assert_close(x.grad, xt.grad, rtol, atol * 10)


# (id, input shape, interpolate kwargs); downsampling, odd ratios and both align_corners
INTERPOLATE = [
    ("nearest-1d-x2", (2, 3, 5), dict(scale_factor=2)),
    ("nearest-1d-size7", (2, 3, 5), dict(size=7)),
    ("nearest-1d-down", (2, 3, 9), dict(size=4)),
    ("nearest-1d-scale1.7", (1, 2, 6), dict(scale_factor=1.7)),
    ("nearest-1d-scale0.6", (1, 2, 11), dict(scale_factor=0.6)),
    ("nearest-1d-recompute", (1, 2, 6), dict(scale_factor=1.7, recompute_scale_factor=True)),
    ("nearest-2d-x2", (2, 3, 4, 5), dict(scale_factor=2)),
    ("nearest-2d-size", (2, 3, 4, 5), dict(size=(7, 3))),
    ("nearest-2d-scales", (1, 2, 5, 6), dict(scale_factor=(1.5, 0.5))),
    ("linear", (2, 3, 5), dict(size=8, mode="linear")),
    ("linear-ac", (2, 3, 5), dict(size=8, mode="linear", align_corners=True)),
    ("linear-down", (2, 3, 9), dict(size=4, mode="linear")),
    ("linear-down-ac", (2, 3, 9), dict(size=4, mode="linear", align_corners=True)),
    ("linear-size1-ac", (1, 2, 5), dict(size=1, mode="linear", align_corners=True)),
    ("linear-scale2.5", (1, 2, 4), dict(scale_factor=2.5, mode="linear")),
    ("linear-scale2.5-recompute", (1, 2, 4), dict(scale_factor=2.5, mode="linear",
                                                  recompute_scale_factor=True)),
    ("bilinear", (2, 3, 4, 5), dict(size=(7, 9), mode="bilinear")),
    ("bilinear-ac", (2, 3, 4, 5), dict(size=(7, 9), mode="bilinear", align_corners=True)),
    ("bilinear-x2", (1, 2, 4, 4), dict(scale_factor=2, mode="bilinear")),
    ("bilinear-down", (1, 2, 9, 8), dict(size=(4, 3), mode="bilinear")),
    ("bilinear-down-ac", (1, 2, 9, 8), dict(scale_factor=0.45, mode="bilinear",
                                            align_corners=True)),
    ("bilinear-mixed", (1, 2, 5, 6), dict(scale_factor=(1.3, 0.7), mode="bilinear")),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,shape,kwargs", INTERPOLATE, ids=[c[0] for c in INTERPOLATE])
def test_interpolate_matches_torch(name, shape, kwargs, dtype, device):
    _compare(lambda x: F.interpolate(x, **kwargs), lambda x: TF.interpolate(x, **kwargs),
             shape, dtype, device)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_interpolate_source_indices_match_torch_for_every_size(mode):
    # Float rounding of the source coordinate decides the neighbour at many sizes.
    x_np = np.arange(13, dtype=np.float32)[None, None] ** 1.5
    x, xt = ag.tensor(x_np), torch.tensor(x_np)
    for out in range(1, 40):
        assert_close(F.interpolate(x, size=out, mode=mode),
                     TF.interpolate(xt, size=out, mode=mode), 1e-6, 1e-5)
    for factor in (0.3, 0.7, 1.1, 1.3, 1.7, 2.2, 2.9):
        assert_close(F.interpolate(x, scale_factor=factor, mode=mode),
                     TF.interpolate(xt, scale_factor=factor, mode=mode), 1e-6, 1e-5)


# (id, lamina factory, torch factory, input shape)
MODULES = [
    ("upsample-nearest", lambda: nn.Upsample(scale_factor=2),
     lambda: TNN.Upsample(scale_factor=2), (2, 3, 4, 5)),
    ("upsample-size", lambda: nn.Upsample(size=(3, 7)), lambda: TNN.Upsample(size=(3, 7)),
     (2, 3, 4, 5)),
    ("upsample-linear", lambda: nn.Upsample(scale_factor=1.5, mode="linear"),
     lambda: TNN.Upsample(scale_factor=1.5, mode="linear"), (2, 3, 6)),
    ("upsample-bilinear-ac", lambda: nn.Upsample(size=6, mode="bilinear", align_corners=True),
     lambda: TNN.Upsample(size=6, mode="bilinear", align_corners=True), (2, 3, 4, 5)),
    ("upsampling-nearest2d", lambda: nn.UpsamplingNearest2d(scale_factor=3),
     lambda: TNN.UpsamplingNearest2d(scale_factor=3), (1, 2, 3, 4)),
    ("upsampling-bilinear2d", lambda: nn.UpsamplingBilinear2d(size=(5, 7)),
     lambda: TNN.UpsamplingBilinear2d(size=(5, 7)), (1, 2, 3, 4)),
    ("maxpool1d", lambda: nn.MaxPool1d(3), lambda: TNN.MaxPool1d(3), (2, 3, 10)),
    ("maxpool1d-pad-stride", lambda: nn.MaxPool1d(4, 2, 2), lambda: TNN.MaxPool1d(4, 2, 2),
     (2, 3, 11)),
    ("maxpool1d-ceil", lambda: nn.MaxPool1d(3, 2, 1, ceil_mode=True),
     lambda: TNN.MaxPool1d(3, 2, 1, ceil_mode=True), (2, 3, 10)),
    ("maxpool1d-dilation", lambda: nn.MaxPool1d(3, 2, 1, dilation=2, ceil_mode=True),
     lambda: TNN.MaxPool1d(3, 2, 1, dilation=2, ceil_mode=True), (2, 3, 12)),
    ("maxpool1d-unbatched", lambda: nn.MaxPool1d(2), lambda: TNN.MaxPool1d(2), (3, 9)),
    ("avgpool1d", lambda: nn.AvgPool1d(3), lambda: TNN.AvgPool1d(3), (2, 3, 10)),
    ("avgpool1d-pad", lambda: nn.AvgPool1d(4, 2, 2), lambda: TNN.AvgPool1d(4, 2, 2),
     (2, 3, 11)),
    ("avgpool1d-ceil", lambda: nn.AvgPool1d(3, 2, 1, ceil_mode=True),
     lambda: TNN.AvgPool1d(3, 2, 1, ceil_mode=True), (2, 3, 10)),
    ("avgpool1d-ceil-nopadcount", lambda: nn.AvgPool1d(3, 2, 1, True, False),
     lambda: TNN.AvgPool1d(3, 2, 1, True, False), (2, 3, 10)),
    ("avgpool1d-ceil-nopad", lambda: nn.AvgPool1d(4, 3, ceil_mode=True),
     lambda: TNN.AvgPool1d(4, 3, ceil_mode=True), (2, 3, 11)),
    ("avgpool1d-unbatched", lambda: nn.AvgPool1d(2), lambda: TNN.AvgPool1d(2), (3, 9)),
    ("adaptiveavgpool1d", lambda: nn.AdaptiveAvgPool1d(4), lambda: TNN.AdaptiveAvgPool1d(4),
     (2, 3, 10)),
    ("adaptiveavgpool1d-up", lambda: nn.AdaptiveAvgPool1d(7),
     lambda: TNN.AdaptiveAvgPool1d(7), (2, 3, 5)),
    ("adaptiveavgpool1d-global", lambda: nn.AdaptiveAvgPool1d(1),
     lambda: TNN.AdaptiveAvgPool1d(1), (2, 3, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,make,make_torch,shape", MODULES, ids=[c[0] for c in MODULES])
def test_module_matches_torch(name, make, make_torch, shape, dtype, device):
    layer, ref = make(), make_torch()
    assert repr(layer) == repr(ref)
    _compare(layer, ref, shape, dtype, device)


FUNCTIONAL_POOLS = [
    ("max", lambda x: F.max_pool1d(x, (3,), 1, 1), lambda x: TF.max_pool1d(x, (3,), 1, 1)),
    ("avg", lambda x: F.avg_pool1d(x, 5, 3, 2, True, False),
     lambda x: TF.avg_pool1d(x, 5, 3, 2, True, False)),
    ("adaptive", lambda x: F.adaptive_avg_pool1d(x, (3,)),
     lambda x: TF.adaptive_avg_pool1d(x, (3,))),
]


@pytest.mark.parametrize("name,fn,fn_torch", FUNCTIONAL_POOLS, ids=[f[0] for f in FUNCTIONAL_POOLS])
def test_functional_pools_match_torch(name, fn, fn_torch, device):
    _compare(fn, fn_torch, (2, 3, 8), "float64", device)


def test_max_pool1d_return_indices_matches_torch(device):
    x_np = np.random.default_rng(2).standard_normal((2, 3, 11))
    x = ag.tensor(x_np, device=device)
    values, indices = nn.MaxPool1d(3, 2, 1, dilation=2, return_indices=True, ceil_mode=True)(x)
    values_t, indices_t = TF.max_pool1d(torch.tensor(x_np), 3, 2, 1, 2, True, True)
    assert_close(values, values_t, 1e-12, 1e-12)
    np.testing.assert_array_equal(indices.numpy(), indices_t.numpy())


@pytest.mark.parametrize("call,fragment", [
    (lambda x3, x4: F.interpolate(x3), "either size or scale_factor should be defined"),
    (lambda x3, x4: F.interpolate(x3, size=3, scale_factor=2), "only one of size or"),
    (lambda x3, x4: F.interpolate(x3, size=3, recompute_scale_factor=True),
     "recompute_scale_factor is not meaningful"),
    (lambda x3, x4: F.interpolate(x3, size=(3, 4)), "same number of spatial dims"),
    (lambda x3, x4: F.interpolate(x4, scale_factor=(2, 2, 2)), "scale_factor=(2, 2, 2)"),
    (lambda x3, x4: F.interpolate(x3, scale_factor=2, align_corners=True),
     "align_corners can only be set"),
    (lambda x3, x4: F.interpolate(x3, scale_factor=0.1), "output sizes must be positive"),
    (lambda x3, x4: F.interpolate(x4, scale_factor=2, mode="linear"), "needs a 3-D input"),
    (lambda x3, x4: F.interpolate(x3, scale_factor=2, mode="bilinear"), "needs a 4-D input"),
    (lambda x3, x4: F.interpolate(x4[0, 0], size=3), "needs a 3-D or 4-D input"),
    (lambda x3, x4: F.interpolate(x4, size=3, mode="bicubic"), "mode='bicubic' is not"),
    (lambda x3, x4: F.interpolate(x4, size=3, mode="area"), "mode='area' is not"),
    (lambda x3, x4: F.interpolate(x4, size=3, mode="nearest-exact"), "'nearest-exact' is"),
    (lambda x3, x4: F.interpolate(x4, size=3, mode="trilinear"), "mode='trilinear' is not"),
    (lambda x3, x4: F.interpolate(x4, size=3, mode="foo"), "unknown mode 'foo'"),
    (lambda x3, x4: F.interpolate(x4, size=3, mode="bilinear", antialias=True),
     "antialias=True"),
    (lambda x3, x4: F.max_pool1d(x3, 3, padding=2), "padding 2 should be at most half"),
    (lambda x3, x4: F.avg_pool1d(x3, 3, padding=2), "padding 2 should be at most half"),
    (lambda x3, x4: F.max_pool1d(x3, 7), "shorter than the kernel span 7"),
    (lambda x3, x4: F.max_pool1d(x3, 3, dilation=3), "shorter than the kernel span 7"),
    (lambda x3, x4: F.avg_pool1d(x3, 7), "avg_pool1d: input length 5"),
    (lambda x3, x4: F.max_pool1d(x3, 0), "kernel_size must be an int >= 1"),
    (lambda x3, x4: F.max_pool1d(x3, 2, stride=0), "stride must be an int >= 1"),
    (lambda x3, x4: F.max_pool1d(x4, 2), "expected a 2-D (C, L) or 3-D (N, C, L) input"),
    (lambda x3, x4: F.adaptive_avg_pool1d(x3, 0), "output_size must be an int >= 1"),
    (lambda x3, x4: nn.AvgPool1d(2)(x4), "avg_pool1d: expected a 2-D"),
])
def test_bad_arguments_raise_value_errors_naming_the_op(call, fragment):
    x3, x4 = ag.randn(1, 2, 5), ag.randn(1, 2, 4, 4)
    with pytest.raises(ValueError) as info:
        call(x3, x4)
    assert fragment in str(info.value)


@pytest.mark.parametrize("call", [
    lambda x3, x4: TF.interpolate(x3),
    lambda x3, x4: TF.interpolate(x3, size=3, scale_factor=2),
    lambda x3, x4: TF.interpolate(x3, size=(3, 4)),
    lambda x3, x4: TF.interpolate(x3, scale_factor=2, align_corners=True),
    lambda x3, x4: TF.interpolate(x3, scale_factor=0.1),
    lambda x3, x4: TF.interpolate(x4, scale_factor=2, mode="linear"),
    lambda x3, x4: TF.max_pool1d(x3, 3, padding=2),
    lambda x3, x4: TF.max_pool1d(x3, 7),
    lambda x3, x4: TF.avg_pool1d(x3, 7),
])
def test_torch_rejects_the_same_arguments(call):
    # torch raises ValueError, RuntimeError or NotImplementedError; Lamina always ValueError.
    with pytest.raises((ValueError, RuntimeError, NotImplementedError)):
        call(torch.randn(1, 2, 5), torch.randn(1, 2, 4, 4))


def test_upsample_reprs_match_torch():
    pairs = [
        (nn.Upsample(size=(3, 4), mode="bilinear"), TNN.Upsample(size=(3, 4), mode="bilinear")),
        (nn.Upsample(scale_factor=(2, 3)), TNN.Upsample(scale_factor=(2, 3))),
        (nn.Upsample(size=5, mode="linear", align_corners=True),
         TNN.Upsample(size=5, mode="linear", align_corners=True)),
        (nn.UpsamplingBilinear2d(scale_factor=2), TNN.UpsamplingBilinear2d(scale_factor=2)),
        (nn.MaxPool1d(3, 2, 1, ceil_mode=True), TNN.MaxPool1d(3, 2, 1, ceil_mode=True)),
        (nn.AvgPool1d(3, 2, 1, True, False), TNN.AvgPool1d(3, 2, 1, True, False)),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
    assert nn.UpsamplingBilinear2d(size=3).align_corners is True


@pytest.mark.parametrize("name", ["lamina.nn._upsample", "lamina.nn._pooling1d"])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
