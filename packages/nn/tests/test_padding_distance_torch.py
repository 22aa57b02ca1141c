"""F.pad, the padding modules and the distance functions (issue 30) against torch.

Every pad mode with positive, zero and negative pads on unbatched and batched
inputs, the fill value, normalize / cosine_similarity / pairwise_distance
(broadcasting, zero vectors, several p), the modules' reprs, and bad input.
Each comparison runs on every available device in float32 and float64 and
checks the output and the input's gradient.
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

TOL = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}
DTYPES = ["float32", "float64"]
TF = torch.nn.functional
TNN = torch.nn

# (mode, input shape, pad)
PAD_CASES = [
    ("constant", (5,), (2, 1)),
    ("constant", (2, 3, 4), (1, 2)),
    ("constant", (2, 3, 4), (0, 0)),
    ("constant", (2, 3, 4), (-1, 2)),
    ("constant", (2, 3, 4), (-2, -1)),
    ("constant", (2, 3, 4), (-4, 0)),
    ("constant", (2, 3, 4), (2, -1, 1, 0)),
    ("constant", (2, 3, 4), (1, 1, 1, 1, 1, 1)),
    ("constant", (2, 3, 4), ()),
    ("reflect", (3, 5), (2, 3)),
    ("reflect", (2, 3, 5), (4, 4)),
    ("reflect", (2, 3, 5), (-1, 2)),
    ("reflect", (2, 3, 5), (0, -3)),
    ("reflect", (3, 4, 5), (1, 2, 3, 0)),
    ("reflect", (2, 3, 4, 5), (-1, 2, 2, -1)),
    ("reflect", (2, 3, 3, 4), (1, 1, 2, 0, 0, 2)),
    ("reflect", (1, 2, 3, 4, 5), (1, -1, 2, 0, 0, 1)),
    ("replicate", (3, 5), (2, 3)),
    ("replicate", (2, 3, 5), (7, 0)),
    ("replicate", (2, 3, 5), (-4, 5)),
    ("replicate", (3, 4, 5), (0, 0, 2, 1)),
    ("replicate", (2, 3, 4, 5), (1, -2, -1, 3)),
    ("replicate", (2, 2, 3, 4, 5), (1, 1, 2, 0, 0, 2)),
    ("circular", (3, 5), (2, 3)),
    ("circular", (2, 3, 5), (5, 5)),
    ("circular", (2, 3, 5), (-1, 2)),
    ("circular", (2, 3, 5), (-2, 3)),
    ("circular", (2, 3, 5), (-5, 0)),
    ("circular", (3, 4, 5), (1, 2, 3, 0)),
    ("circular", (2, 3, 4, 5), (-1, 2, 2, -1)),
    ("circular", (2, 2, 3, 4, 5), (1, 1, 2, 0, 0, 2)),
]


def _pair(shape: tuple[int, ...], dtype: str, device: str, seed: int = 0):
    x_np = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ag.tensor(x_np, requires_grad=True, device=device), torch.tensor(x_np,
                                                                           requires_grad=True)


def _check_backward(out, out_t, pairs, dtype: str, device: str) -> None:
    upstream = np.random.default_rng(1).standard_normal(tuple(out_t.shape)).astype(dtype)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    rtol, atol = TOL[dtype]
    for ours, theirs in pairs:
        assert_close(ours.grad, theirs.grad, rtol * 10, atol * 10)


def _check(out, out_t, pairs, dtype: str, device: str) -> None:
    assert out.dtype == dtype and out.device.type == device
    assert_close(out, out_t, *TOL[dtype])
    _check_backward(out, out_t, pairs, dtype, device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,shape,pad", PAD_CASES,
                         ids=[f"{m}-{'x'.join(map(str, s))}-{p}" for m, s, p in PAD_CASES])
def test_pad_matches_torch(mode, shape, pad, dtype, device):
    x, xt = _pair(shape, dtype, device)
    _check(F.pad(x, pad, mode), TF.pad(xt, pad, mode), [(x, xt)], dtype, device)


@pytest.mark.parametrize("value", [1.5, -2.0, 0.0])
def test_pad_constant_value_matches_torch(value, device):
    x, xt = _pair((2, 3, 4), "float64", device)
    pad = [2, -1, 0, 3]  # a list works too
    out = F.pad(x, pad, value=value)
    _check(out, TF.pad(xt, pad, value=value), [(x, xt)], "float64", device)


def test_pad_keeps_int_dtype(device):
    x = ag.tensor(np.arange(6).reshape(2, 3), device=device)
    out = F.pad(x, (1, 1), "replicate")
    ref = TF.pad(torch.arange(6).reshape(1, 2, 3), (1, 1), "replicate")[0]
    assert out.dtype == "int64"
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_array_equal(F.pad(x, (1, 0), value=7).numpy(),
                                  TF.pad(torch.arange(6).reshape(2, 3), (1, 0), value=7))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_non_constant_pad_accepts_a_zero_value(mode, device):
    x, xt = _pair((2, 4), "float64", device)
    assert_close(F.pad(x, (1, 2), mode, 0.0), TF.pad(xt, (1, 2), mode, 0.0))


# (shape, pad, mode, value, lamina's error, fragment); torch raises on each as well
PAD_ERRORS = [
    ((2, 3), (1,), "constant", None, ValueError, "odd length 1"),
    ((2, 3), (1, 1, 1, 1, 1, 1), "constant", None, ValueError, "has only 2"),
    ((2, 3), (1.5, 1), "constant", None, TypeError, "float 1.5 at position 0"),
    ((2, 3), (True, 1), "constant", None, TypeError, "bool True at position 0"),
    ((2, 3), (-3, -1), "constant", None, nn.ShapeError, "leaves -1 elements of dim 1"),
    ((2, 3), (1, 1), "bogus", None, ValueError, "unknown padding mode 'bogus'"),
    ((2, 3), (1, 1), None, None, TypeError, "mode must be a str"),
    ((2, 3), (1, 1), "reflect", 1.0, ValueError, "mode 'reflect' doesn't take a value"),
    ((3,), (1, 1), "reflect", None, ValueError, "needs a 2-D or 3-D (batched) input"),
    ((3,), (1, 1), "circular", None, ValueError, "needs a 2-D or 3-D"),
    ((1, 2, 3, 4, 5), (1, 1, 1, 1), "replicate", None, ValueError, "needs a 3-D or 4-D"),
    ((2, 3, 4), (), "reflect", None, ValueError, "with 0 pad values"),
    ((1, 2, 3), (3, 0), "reflect", None, nn.ShapeError,
     "reflect pad (3, 0) must be less than the size 3 of dim 2"),
    ((1, 2, 3), (-4, 5), "reflect", None, nn.ShapeError, "must be less than the size 3"),
    ((1, 2, 3), (-3, 0), "reflect", None, nn.ShapeError, "it must keep at least 1"),
    ((1, 2, 3), (-3, 0), "replicate", None, nn.ShapeError, "leaves 0 elements of dim 2"),
    ((0, 3), (1, 1), "reflect", None, nn.ShapeError, "needs non-empty dims"),
    ((2, 3, 0), (1, 1), "replicate", None, nn.ShapeError, "needs non-empty dims"),
    ((1, 2, 3), (4, 0), "circular", None, nn.ShapeError, "more than once; pad at most 3"),
    ((2, 3, 0), (1, 1), "circular", None, nn.ShapeError, "more than once"),
    ((1, 2, 3), (-3, -1), "circular", None, nn.ShapeError, "leaves -1 elements"),
]


@pytest.mark.parametrize("shape,pad,mode,value,error,fragment", PAD_ERRORS)
def test_pad_errors_name_the_op_and_the_values(shape, pad, mode, value, error, fragment):
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        TF.pad(torch.zeros(shape), pad, mode, value)
    with pytest.raises(error) as info:
        F.pad(ag.zeros(*shape), pad, mode, value)
    assert "F.pad: " in str(info.value) and fragment in str(info.value)


def test_circular_pad_wider_than_the_cropped_input_raises():
    # PyTorch reads uninitialised memory here (it wraps around what cropping left).
    with pytest.raises(nn.ShapeError, match="only 3 elements are left after cropping"):
        F.pad(ag.zeros(1, 2, 5), (4, -2), "circular")


# (lamina factory, torch factory, input shape)
MODULE_CASES = [
    (lambda: nn.ZeroPad1d(2), lambda: TNN.ZeroPad1d(2), (2, 3, 4)),
    (lambda: nn.ZeroPad1d((1, -2)), lambda: TNN.ZeroPad1d((1, -2)), (3, 4)),
    (lambda: nn.ZeroPad2d((1, 2, 0, 3)), lambda: TNN.ZeroPad2d((1, 2, 0, 3)), (2, 3, 4)),
    (lambda: nn.ZeroPad2d(1), lambda: TNN.ZeroPad2d(1), (2, 2, 3, 4)),
    (lambda: nn.ConstantPad1d((1, 2), 3.5), lambda: TNN.ConstantPad1d((1, 2), 3.5), (5,)),
    (lambda: nn.ConstantPad2d(2, -1), lambda: TNN.ConstantPad2d(2, -1), (2, 3, 4)),
    (lambda: nn.ReflectionPad1d(2), lambda: TNN.ReflectionPad1d(2), (2, 3, 4)),
    (lambda: nn.ReflectionPad1d((3, 0)), lambda: TNN.ReflectionPad1d((3, 0)), (3, 4)),
    (lambda: nn.ReflectionPad2d((1, 0, 2, 3)), lambda: TNN.ReflectionPad2d((1, 0, 2, 3)),
     (2, 3, 4, 5)),
    (lambda: nn.ReplicationPad1d([1, 2]), lambda: TNN.ReplicationPad1d([1, 2]), (2, 3, 4)),
    (lambda: nn.ReplicationPad2d(1), lambda: TNN.ReplicationPad2d(1), (3, 4, 5)),
    (lambda: nn.CircularPad1d(3), lambda: TNN.CircularPad1d(3), (2, 3, 4)),
    (lambda: nn.CircularPad2d((1, 1, 0, 2)), lambda: TNN.CircularPad2d((1, 1, 0, 2)),
     (2, 3, 4, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("make,make_torch,shape", MODULE_CASES,
                         ids=[repr(c[1]()) for c in MODULE_CASES])
def test_pad_module_matches_torch(make, make_torch, shape, dtype, device):
    layer, ref = make(), make_torch()
    assert repr(layer) == repr(ref)
    assert layer.padding == ref.padding
    assert getattr(layer, "value", None) == getattr(ref, "value", None)
    x, xt = _pair(shape, dtype, device)
    _check(layer(x), ref(xt), [(x, xt)], dtype, device)


# ----- distances ---------------------------------------------------------------------------

def _with_zero_rows(shape: tuple[int, ...], dtype: str, device: str, seed: int):
    # Row 0 is zero and (in float64) row 1 tiny, so that both the eps clamp and the
    # zero-norm gradient are exercised; float32 cannot hold the tiny row's powers.
    x_np = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    x_np[0] = 0.0
    x_np[1] *= 1e-14 if dtype == "float64" else 1e-2
    return ag.tensor(x_np, requires_grad=True, device=device), torch.tensor(x_np,
                                                                           requires_grad=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, -1), (3.0, 0), (float("inf"), 1),
                                   (0.5, 2)])
def test_normalize_matches_torch(p, dim, dtype, device):
    x, xt = _with_zero_rows((3, 4, 5), dtype, device, seed=0)
    _check(F.normalize(x, p, dim), TF.normalize(xt, p, dim), [(x, xt)], dtype, device)


def test_normalize_eps_and_defaults(device):
    x, xt = _pair((4, 3), "float64", device)
    out = F.normalize(x * 1e-3, eps=0.5)
    _check(out, TF.normalize(xt * 1e-3, eps=0.5), [(x, xt)], "float64", device)
    assert_close(F.normalize(ag.tensor([3.0, 4.0], device=device), dim=0),
                 TF.normalize(torch.tensor([3.0, 4.0]), dim=0))


# (shape of x1, shape of x2, dim)
COSINE_CASES = [((4, 5), (4, 5), 1), ((4, 5), (1, 5), 1), ((3, 4, 5), (4, 5), -1),
                ((4, 1), (4, 5), 1), ((5,), (5,), 0), ((3, 4, 5), (3, 4, 5), 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("s1,s2,dim", COSINE_CASES)
def test_cosine_similarity_matches_torch(s1, s2, dim, dtype, device):
    x1, x1t = _pair(s1, dtype, device, seed=0)
    x2, x2t = _pair(s2, dtype, device, seed=1)
    out = F.cosine_similarity(x1, x2, dim)
    _check(out, TF.cosine_similarity(x1t, x2t, dim), [(x1, x1t), (x2, x2t)], dtype, device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cosine_similarity_clamps_norms_outside_the_graph(dtype, device):
    # Zero and tiny vectors: PyTorch clamps each norm to eps without recording the clamp.
    x1, x1t = _with_zero_rows((4, 3), dtype, device, seed=2)
    x2, x2t = _pair((4, 3), dtype, device, seed=3)
    out = F.cosine_similarity(x1, x2, eps=1e-3)
    ref = TF.cosine_similarity(x1t, x2t, eps=1e-3)
    _check(out, ref, [(x1, x1t), (x2, x2t)], dtype, device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("s1,s2,keepdim", [((4, 5), (4, 5), False), ((4, 5), (5,), True),
                                           ((5,), (5,), False), ((2, 3, 5), (3, 5), False)])
def test_pairwise_distance_matches_torch(s1, s2, keepdim, p, dtype, device):
    x1, x1t = _pair(s1, dtype, device, seed=0)
    x2, x2t = _pair(s2, dtype, device, seed=1)
    out = F.pairwise_distance(x1, x2, p, keepdim=keepdim)
    ref = TF.pairwise_distance(x1t, x2t, p, keepdim=keepdim)
    _check(out, ref, [(x1, x1t), (x2, x2t)], dtype, device)


@pytest.mark.parametrize("keepdim", [False, True])
def test_scalars_are_vectors_of_one_element(keepdim, device):
    x, xt = _pair((), "float64", device)
    y, yt = _pair((), "float64", device, seed=1)
    out = F.pairwise_distance(x, y, 1.0, keepdim=keepdim)
    _check(out, TF.pairwise_distance(xt, yt, 1.0, keepdim=keepdim), [(x, xt), (y, yt)],
           "float64", device)
    for dim in (0, -1):
        x.grad = y.grad = xt.grad = yt.grad = None
        out = F.normalize(x, dim=dim) * 2 + F.cosine_similarity(x, y, dim=dim)
        ref = TF.normalize(xt, dim=dim) * 2 + TF.cosine_similarity(xt, yt, dim=dim)
        _check(out, ref, [(x, xt), (y, yt)], "float64", device)


def test_pairwise_distance_of_equal_inputs_is_eps_wide(device):
    x, xt = _pair((3, 4), "float64", device)
    out = F.pairwise_distance(x, x.detach(), eps=1e-2)
    _check(out, TF.pairwise_distance(xt, xt.detach(), eps=1e-2), [(x, xt)], "float64", device)


@pytest.mark.parametrize("make,make_torch,s1,s2", [
    (lambda: nn.CosineSimilarity(), lambda: TNN.CosineSimilarity(), (4, 5), (4, 5)),
    (lambda: nn.CosineSimilarity(0, 1e-3), lambda: TNN.CosineSimilarity(0, 1e-3), (4, 5),
     (4, 1)),
    (lambda: nn.PairwiseDistance(), lambda: TNN.PairwiseDistance(), (4, 5), (4, 5)),
    (lambda: nn.PairwiseDistance(1.0, 1e-3, True), lambda: TNN.PairwiseDistance(1.0, 1e-3,
                                                                                True),
     (4, 5), (5,)),
])
def test_distance_modules_match_torch(make, make_torch, s1, s2, device):
    layer, ref = make(), make_torch()
    assert repr(layer) == repr(ref)
    for name in ("dim", "eps", "norm", "keepdim"):
        assert getattr(layer, name, None) == getattr(ref, name, None)
    x1, x1t = _pair(s1, "float64", device, seed=0)
    x2, x2t = _pair(s2, "float64", device, seed=1)
    _check(layer(x1, x2), ref(x1t, x2t), [(x1, x1t), (x2, x2t)], "float64", device)


@pytest.mark.parametrize("call,call_torch,error,fragment", [
    (lambda: F.cosine_similarity(ag.zeros(2, 3), ag.zeros(4, 3)),
     lambda: TF.cosine_similarity(torch.zeros(2, 3), torch.zeros(4, 3)), nn.ShapeError,
     "cosine_similarity: shapes (2, 3) and (4, 3) do not broadcast"),
    (lambda: F.cosine_similarity(ag.zeros(2, 3), ag.zeros(2, 3), dim=2),
     lambda: TF.cosine_similarity(torch.zeros(2, 3), torch.zeros(2, 3), dim=2), IndexError,
     "cosine_similarity: dim 2 is out of range for an input of 2 dims"),
    (lambda: F.pairwise_distance(ag.zeros(2, 3), ag.zeros(4, 3)),
     lambda: TF.pairwise_distance(torch.zeros(2, 3), torch.zeros(4, 3)), nn.ShapeError,
     "pairwise_distance: shapes (2, 3) and (4, 3) do not broadcast together"),
    (lambda: F.normalize(ag.zeros(2, 3), dim=-3),
     lambda: TF.normalize(torch.zeros(2, 3), dim=-3), IndexError,
     "normalize: dim -3 is out of range for an input of 2 dims (expected it in [-2, 1])"),
    (lambda: F.normalize(ag.zeros(3)),
     lambda: TF.normalize(torch.zeros(3)), IndexError,
     "normalize: dim 1 is out of range for an input of 1 dims (expected it in [-1, 0])"),
])
def test_distance_errors(call, call_torch, error, fragment):
    with pytest.raises((RuntimeError, IndexError)):
        call_torch()
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)


@pytest.mark.parametrize("name", ["lamina.nn._padding", "lamina.nn._distance"])
def test_docstring_examples(name):
    # test_doctests.py lists other modules; these two are checked here.
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted and not result.failed
