"""Pooling layers and BatchNorm2d against PyTorch CPU: values, input and weight gradients,
running statistics, eval mode, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn

torch.set_num_threads(1)
TNN = torch.nn

# (id, lamina factory, torch factory, input shape)
CASES = [
    ("max-2", lambda: nn.MaxPool2d(2), lambda: TNN.MaxPool2d(2), (2, 3, 8, 8)),
    ("max-3s2-odd", lambda: nn.MaxPool2d(3, 2), lambda: TNN.MaxPool2d(3, 2), (1, 2, 9, 7)),
    ("max-3s1p1", lambda: nn.MaxPool2d(3, 1, 1), lambda: TNN.MaxPool2d(3, 1, 1), (3, 2, 5, 6)),
    ("max-rect", lambda: nn.MaxPool2d((2, 3), (1, 2)), lambda: TNN.MaxPool2d((2, 3), (1, 2)),
     (2, 1, 5, 9)),
    ("max-dilated-ceil", lambda: nn.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True),
     lambda: TNN.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True), (2, 2, 9, 8)),
    ("max-ceil", lambda: nn.MaxPool2d(2, ceil_mode=True),
     lambda: TNN.MaxPool2d(2, ceil_mode=True), (1, 3, 5, 7)),
    ("avg-2", lambda: nn.AvgPool2d(2), lambda: TNN.AvgPool2d(2), (2, 3, 8, 8)),
    ("avg-3s2p1", lambda: nn.AvgPool2d(3, 2, 1), lambda: TNN.AvgPool2d(3, 2, 1), (1, 2, 7, 9)),
    ("avg-rect", lambda: nn.AvgPool2d((3, 1)), lambda: TNN.AvgPool2d((3, 1)), (4, 2, 9, 5)),
    ("adaptive-1", lambda: nn.AdaptiveAvgPool2d(1), lambda: TNN.AdaptiveAvgPool2d(1),
     (3, 4, 5, 7)),
    ("adaptive-2-even", lambda: nn.AdaptiveAvgPool2d(2), lambda: TNN.AdaptiveAvgPool2d(2),
     (2, 3, 8, 6)),
    ("adaptive-3-odd", lambda: nn.AdaptiveAvgPool2d((3, 2)),
     lambda: TNN.AdaptiveAvgPool2d((3, 2)), (2, 2, 7, 5)),
    ("adaptive-none", lambda: nn.AdaptiveAvgPool2d((None, 3)),
     lambda: TNN.AdaptiveAvgPool2d((None, 3)), (1, 2, 4, 8)),
    # an empty batch (N = 0) gives an empty result and empty gradients, as in PyTorch
    ("max-2-empty", lambda: nn.MaxPool2d(2), lambda: TNN.MaxPool2d(2), (0, 3, 8, 8)),
    ("max-3s1p1-empty", lambda: nn.MaxPool2d(3, 1, 1), lambda: TNN.MaxPool2d(3, 1, 1),
     (0, 2, 5, 6)),
    ("avg-3s2p1-empty", lambda: nn.AvgPool2d(3, 2, 1), lambda: TNN.AvgPool2d(3, 2, 1),
     (0, 2, 7, 9)),
    ("adaptive-3-odd-empty", lambda: nn.AdaptiveAvgPool2d((3, 2)),
     lambda: TNN.AdaptiveAvgPool2d((3, 2)), (0, 2, 7, 5)),
    ("bn2d-train", lambda: nn.BatchNorm2d(3), lambda: TNN.BatchNorm2d(3), (4, 3, 5, 6)),
    ("bn2d-batch1", lambda: nn.BatchNorm2d(2), lambda: TNN.BatchNorm2d(2), (1, 2, 3, 3)),
    ("bn2d-noaffine", lambda: nn.BatchNorm2d(3, affine=False, momentum=None),
     lambda: TNN.BatchNorm2d(3, affine=False, momentum=None), (5, 3, 4, 3)),
    ("bn2d-nostats", lambda: nn.BatchNorm2d(2, track_running_stats=False),
     lambda: TNN.BatchNorm2d(2, track_running_stats=False), (3, 2, 4, 4)),
]


@pytest.mark.parametrize("name,make,make_torch,shape", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, make, make_torch, shape, device):
    torch.manual_seed(0)
    ref = make_torch()
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + 1.0)
    layer = make().to(device)
    copy_weights(ref, layer)
    x_np = (np.random.default_rng(0).standard_normal(shape) * 2 + 0.5).astype(np.float32)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    out, out_t = layer(x), ref(xt)
    assert_close(out, out_t, atol=1e-5)
    upstream = np.random.default_rng(1).standard_normal(out_t.shape).astype(np.float32)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    assert_close(x.grad, xt.grad, rtol=1e-4, atol=1e-4)
    params = dict(layer.named_parameters())
    for key, p_t in ref.named_parameters():
        assert_close(params[key].grad, p_t.grad, rtol=1e-4, atol=1e-4)
    for key, buf in ref.state_dict().items():
        assert_close(layer.state_dict()[key], buf)


def test_batchnorm2d_running_stats_and_eval(device):
    ref, layer = TNN.BatchNorm2d(3, momentum=0.3), nn.BatchNorm2d(3, momentum=0.3).to(device)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = (rng.standard_normal((6, 3, 4, 5)) * 3 + 2).astype(np.float32)
        layer(ag.tensor(x, device=device))
        ref(torch.tensor(x))
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(layer, key), getattr(ref, key))
    layer.eval()
    ref.eval()
    x_np = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    out, out_t = layer(x), ref(xt)
    assert_close(out, out_t)
    out.sum().backward()
    out_t.sum().backward()
    assert_close(x.grad, xt.grad)
    assert_close(layer.weight.grad, ref.weight.grad, atol=1e-4)


def test_batchnorm2d_gradcheck_float64():
    rng = np.random.default_rng(4)
    x = ag.tensor(rng.standard_normal((3, 2, 3, 2)), dtype="float64", requires_grad=True)
    w = ag.tensor(rng.standard_normal(2) + 1, dtype="float64", requires_grad=True)
    b = ag.tensor(rng.standard_normal(2), dtype="float64", requires_grad=True)
    assert ag.gradcheck(lambda x, w, b: nn.functional.batch_norm(x, None, None, w, b,
                                                                 training=True), [x, w, b])


@pytest.mark.parametrize("layer", [nn.MaxPool2d(2), nn.AvgPool2d(3, 1, 1),
                                   nn.AdaptiveAvgPool2d(1)])
def test_pooling_rejects_non_4d(layer):
    name = type(layer).__name__
    with pytest.raises(nn.ShapeError, match=rf"{name}\(.*expected a 4-D input of shape "
                                            r"\(N, C, H, W\), got \(3, 8, 8\)"):
        layer(ag.zeros(3, 8, 8))


def test_maxpool2d_return_indices_and_repr_match_torch(device):
    layer, ref = nn.MaxPool2d(2, return_indices=True), TNN.MaxPool2d(2, return_indices=True)
    x = np.random.default_rng(2).integers(0, 3, (2, 3, 5, 6)).astype(np.float32)
    out, idx = layer(ag.tensor(x, device=device))
    t_out, t_idx = ref(torch.tensor(x))
    np.testing.assert_array_equal(idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())
    assert repr(nn.MaxPool2d(3, 1, 1, dilation=2, ceil_mode=True)) == (
        "MaxPool2d(kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(2, 2), "
        "ceil_mode=True)")
    with pytest.raises(ValueError, match="MaxPool2d: dilation must be an int >= 1"):
        nn.MaxPool2d(2, dilation=0)


def test_pooling_kernel_larger_than_input():
    with pytest.raises(nn.ShapeError, match=r"MaxPool2d\(kernel_size=\(5, 5\).*larger than the "
                                            r"padded input \(4, 4\) of input shape"):
        nn.MaxPool2d(5)(ag.zeros(1, 1, 4, 4))
    with pytest.raises(ValueError, match="padding .* at most half"):
        nn.AvgPool2d(2, padding=2)


def test_batchnorm2d_bad_input():
    with pytest.raises(nn.ShapeError, match=r"BatchNorm2d\(4.*expected input of shape "
                                            r"\(N, 4, H, W\), got \(2, 3, 5, 5\)"):
        nn.BatchNorm2d(4)(ag.zeros(2, 3, 5, 5))
    with pytest.raises(nn.ShapeError, match=r"got \(2, 4\)"):
        nn.BatchNorm2d(4)(ag.zeros(2, 4))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm2d(2)(ag.zeros(1, 2, 1, 1))
