"""Conv2d against PyTorch CPU (copied weights; values, input and weight gradients),
gradcheck in float64, initialisation, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn

torch.set_num_threads(1)

# (in, out, kernel, stride, padding, dilation, bias, input shape (N, C, H, W))
GRID = [
    (3, 16, 3, 1, 1, 1, True, (2, 3, 8, 8)),
    (3, 4, 3, 2, 0, 1, True, (1, 3, 9, 7)),
    (2, 5, (3, 2), (2, 1), (1, 0), 1, False, (3, 2, 7, 6)),
    (4, 3, 3, 1, 2, 2, True, (2, 4, 7, 9)),
    (2, 3, 5, 3, 2, (2, 1), True, (1, 2, 13, 11)),
    (1, 2, 1, 1, 0, 1, True, (5, 1, 4, 4)),
    (3, 2, 4, 1, "same", 1, True, (2, 3, 6, 5)),
    (3, 2, 3, 1, "same", 2, False, (1, 3, 7, 7)),
    (2, 2, 3, 1, "valid", 1, True, (2, 2, 5, 5)),
    (4, 6, 7, 4, 3, 1, True, (3, 4, 32, 32)),
    (8, 16, 3, 1, 1, 1, True, (2, 8, 16, 16)),  # one GEMM per image (256 pixels, 72 taps)
    (3, 4, 3, 1, 1, 1, True, (0, 3, 8, 8)),  # an empty batch: zero weight and bias grads
    (2, 3, 3, 2, 0, 2, False, (0, 2, 9, 9)),
]


def _check_against_torch(layer, ref, shape, device, atol=1e-4):
    x_np = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    out, out_t = layer(x), ref(xt)
    assert_close(out, out_t, atol=atol)
    upstream = np.random.default_rng(1).standard_normal(out_t.shape).astype(np.float32)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    assert_close(x.grad, xt.grad, rtol=1e-4, atol=atol)
    params = dict(layer.named_parameters())
    for key, p_t in ref.named_parameters():
        assert_close(params[key].grad, p_t.grad, rtol=1e-4, atol=atol)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("cin,cout,k,s,p,d,bias,shape", GRID,
                         ids=[f"k{g[2]}-s{g[3]}-p{g[4]}-d{g[5]}-{g[7]}" for g in GRID])
def test_conv2d_matches_torch(cin, cout, k, s, p, d, bias, shape, device):
    torch.manual_seed(0)
    ref = torch.nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, bias=bias)
    layer = nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, bias=bias).to(device)
    copy_weights(ref, layer)
    _check_against_torch(layer, ref, shape, device)


def test_functional_conv2d_matches_torch():
    rng = np.random.default_rng(2)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(2, 3, 6, 6), (4, 3, 2, 2),
                                                                  (4,)])
    out = nn.functional.conv2d(ag.tensor(x), ag.tensor(w), ag.tensor(b), stride=1,
                               padding="same")
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b),
                                     padding="same")
    assert_close(out, ref)


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 0, 1), (1, 2, 2)])
def test_conv2d_gradcheck_float64(stride, padding, dilation):
    rng = np.random.default_rng(3)
    x = ag.tensor(rng.standard_normal((2, 2, 5, 4)), dtype="float64", requires_grad=True)
    w = ag.tensor(rng.standard_normal((3, 2, 3, 2)), dtype="float64", requires_grad=True)
    b = ag.tensor(rng.standard_normal(3), dtype="float64", requires_grad=True)
    assert ag.gradcheck(lambda x, w, b: nn.functional.conv2d(x, w, b, stride, padding, dilation),
                        [x, w, b])


def test_default_init_matches_torch_bounds():
    ag.manual_seed(0)
    layer = nn.Conv2d(16, 32, 3)
    bound = 1.0 / np.sqrt(16 * 9)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (32, 16, 3, 3) and b.shape == (32,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.9 * bound  # uniform over the whole interval
    assert abs(float(w.std()) - bound / np.sqrt(3)) < 0.1 * bound
    assert "Conv2d(16, 32, kernel_size=(3, 3), stride=(1, 1))" == repr(layer)


def test_conv2d_bad_input_names_layer_and_shapes():
    layer = nn.Conv2d(3, 8, 5)
    with pytest.raises(nn.ShapeError, match=r"Conv2d\(3, 8.*expected input of shape "
                                            r"\(N, 3, H, W\), got \(2, 4, 9, 9\)"):
        layer(ag.zeros(2, 4, 9, 9))
    with pytest.raises(nn.ShapeError, match=r"expected input of shape \(N, 3, H, W\), "
                                            r"got \(3, 9, 9\)"):
        layer(ag.zeros(3, 9, 9))
    with pytest.raises(nn.ShapeError, match=r"kernel \(5, 5\).*larger than the padded input "
                                            r"\(4, 4\) of input shape \(1, 3, 4, 4\)"):
        layer(ag.zeros(1, 3, 4, 4))
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv2d(3, 8, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="kernel_size must be an int >= 1"):
        nn.Conv2d(3, 8, 0)
    with pytest.raises(ValueError, match="in_channels must be a positive int"):
        nn.Conv2d(0, 8, 3)
    with pytest.raises(ValueError, match="in_channels=4 must be divisible by groups=3"):
        nn.Conv2d(4, 8, 3, groups=3)


def test_conv2d_state_dict_roundtrip_with_torch_names():
    layer = nn.Conv2d(2, 3, 3, bias=False)
    assert list(layer.state_dict()) == list(torch.nn.Conv2d(2, 3, 3, bias=False).state_dict())


@pytest.mark.parametrize("name", ["lamina.nn._conv", "lamina.nn._pooling", "lamina.nn._norm",
                                  "lamina.models._resnet"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0, name
