"""Grouped and depthwise convolutions (``groups > 1``) against torch.

Conv1d, Conv2d and ConvTranspose2d with torch's weights copied in: values and
the input, weight and bias gradients, on every available device; weight
shapes, init bounds, repr and state_dict keys as torch; bad groups raise.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn

torch.set_num_threads(1)

TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-10)}


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _check_module(torch_mod, lamina_cls, args, kwargs, shape, device, dtype):
    """Copies torch_mod's weights into a lamina layer, then compares outputs and all grads."""
    rtol, atol = TOL[dtype]
    torch_mod = torch_mod.double() if dtype == "float64" else torch_mod
    mod = lamina_cls(*args, **kwargs, device=device, dtype=dtype)
    mod.load_state_dict({k: v.detach().numpy() for k, v in torch_mod.state_dict().items()})
    x = _rand(shape, 1)
    ours = ag.tensor(x, dtype=dtype, device=device, requires_grad=True)
    theirs = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    out, ref = mod(ours), torch_mod(theirs)
    assert out.dtype == dtype
    assert_close(out, ref, rtol, atol)
    cot = _rand(tuple(ref.shape), 2)
    (out * ag.tensor(cot, dtype=dtype, device=device)).sum().backward()
    (ref * torch.tensor(cot, dtype=ref.dtype)).sum().backward()
    assert_close(ours.grad, theirs.grad, rtol, atol)
    tparams = dict(torch_mod.named_parameters())
    for name, param in mod.named_parameters():
        assert_close(param.grad, tparams[name].grad, rtol, atol)


# (in, out, kernel, groups, stride, padding, dilation, bias, input shape)
CONV2D_GRID = [
    (4, 6, 3, 2, 1, 0, 1, True, (2, 4, 6, 5)),
    (4, 4, 3, 4, 2, 1, 1, True, (2, 4, 7, 6)),  # depthwise
    (6, 12, (3, 2), 3, (2, 1), (1, 0), (1, 2), False, (1, 6, 6, 7)),
    (3, 6, 3, 3, 1, 2, 2, True, (2, 3, 5, 5)),  # depthwise, channel multiplier 2
    (4, 4, 3, 4, 1, "same", 2, True, (1, 4, 5, 6)),
    (4, 2, 3, 2, 1, 1, 1, True, (0, 4, 5, 5)),  # empty batch
    (2, 4, 3, 2, 1, 1, 1, True, (1, 2, 1, 1)),  # cropped to the centre tap
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cin,cout,k,g,s,p,d,bias,shape", CONV2D_GRID)
def test_grouped_conv2d_matches_torch(cin, cout, k, g, s, p, d, bias, shape, dtype, device):
    torch.manual_seed(0)
    kw = dict(stride=s, padding=p, dilation=d, groups=g, bias=bias)
    _check_module(torch.nn.Conv2d(cin, cout, k, **kw), nn.Conv2d, (cin, cout, k), kw, shape,
                  device, dtype)


CONV1D_GRID = [
    (4, 6, 3, 2, 1, 0, 1, True, (2, 4, 9)),
    (5, 5, 3, 5, 2, 1, 2, False, (2, 5, 10)),  # depthwise
    (4, 8, 2, 4, 1, "same", 3, True, (3, 4, 7)),
    (6, 3, 3, 3, 1, 1, 1, True, (6, 5)),  # unbatched
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cin,cout,k,g,s,p,d,bias,shape", CONV1D_GRID)
def test_grouped_conv1d_matches_torch(cin, cout, k, g, s, p, d, bias, shape, dtype, device):
    torch.manual_seed(1)
    kw = dict(stride=s, padding=p, dilation=d, groups=g, bias=bias)
    _check_module(torch.nn.Conv1d(cin, cout, k, **kw), nn.Conv1d, (cin, cout, k), kw, shape,
                  device, dtype)


# (in, out, kernel, groups, stride, padding, output_padding, dilation, bias, input shape)
TRANSPOSE_GRID = [
    (4, 6, 3, 2, 1, 0, 0, 1, True, (2, 4, 4, 5)),
    (4, 4, 4, 4, 2, 1, 0, 1, True, (2, 4, 5, 5)),  # depthwise 2x upsampling
    (6, 3, (3, 2), 3, (2, 3), (1, 0), (1, 2), (1, 2), False, (1, 6, 3, 4)),
    (2, 4, 3, 2, 2, 1, 1, 1, True, (2, 3, 3)),  # unbatched
    (4, 4, 1, 4, 2, 0, 1, 1, True, (1, 4, 3, 3)),  # one output tap per group
    (4, 2, 3, 2, 2, 1, 1, 1, True, (0, 4, 3, 3)),  # empty batch
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cin,cout,k,g,s,p,op,d,bias,shape", TRANSPOSE_GRID)
def test_grouped_conv_transpose2d_matches_torch(cin, cout, k, g, s, p, op, d, bias, shape,
                                                dtype, device):
    torch.manual_seed(2)
    kw = dict(stride=s, padding=p, output_padding=op, dilation=d, groups=g, bias=bias)
    _check_module(torch.nn.ConvTranspose2d(cin, cout, k, **kw), nn.ConvTranspose2d,
                  (cin, cout, k), kw, shape, device, dtype)


FUNCTIONAL_CASES = [
    ("conv1d", (2, 6, 8), (9, 2, 3), dict(groups=3, stride=2, padding=1)),
    ("conv2d", (2, 4, 6, 6), (4, 1, 3, 3), dict(groups=4, padding=1, dilation=2)),
    ("conv2d", (1, 6, 5, 5), (4, 3, 2, 2), dict(groups=2, stride=(2, 1))),
    ("conv_transpose2d", (2, 4, 3, 3), (4, 3, 3, 3),
     dict(groups=2, stride=2, padding=1, output_padding=1)),
]


@pytest.mark.parametrize("name,xshape,wshape,kw", FUNCTIONAL_CASES)
def test_grouped_functional_matches_torch(name, xshape, wshape, kw, device):
    outs = wshape[0] if name != "conv_transpose2d" else wshape[1] * kw["groups"]
    arrays = [_rand(xshape, 3), _rand(wshape, 4), _rand((outs,), 5)]
    ours = [ag.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in arrays]
    out = getattr(nn.functional, name)(*ours, **kw)
    ref = getattr(torch.nn.functional, name)(*theirs, **kw)
    assert_close(out, ref, 1e-4, 1e-5)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for a, t in zip(ours, theirs):
        assert_close(a.grad, t.grad, 1e-4, 1e-4)


@pytest.mark.parametrize("cls,args,groups,fan_in", [
    ("Conv1d", (8, 12, 5), 4, 2 * 5),
    ("Conv2d", (8, 12, 3), 2, 4 * 9),
    ("Conv2d", (8, 8, 3), 8, 1 * 9),  # depthwise
    ("ConvTranspose2d", (8, 12, 3), 4, 3 * 9),  # weight (in, out/groups, k, k)
])
def test_grouped_weight_shape_init_repr_and_state_dict_as_torch(cls, args, groups, fan_in):
    ag.manual_seed(0)
    ours = getattr(nn, cls)(*args, groups=groups)
    theirs = getattr(torch.nn, cls)(*args, groups=groups)
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape)
    w, b = ours.weight.detach().numpy(), ours.bias.detach().numpy()
    bound = 1.0 / np.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound  # the bound is fan_in of one group, not all channels
    assert ours.groups == groups
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    kw = dict(groups=groups, bias=False, dilation=2)
    assert repr(getattr(nn, cls)(*args, **kw)) == repr(getattr(torch.nn, cls)(*args, **kw))


@pytest.mark.parametrize("cls", ["Conv1d", "Conv2d", "ConvTranspose2d"])
@pytest.mark.parametrize("cin,cout,groups,message", [
    (3, 4, 2, "in_channels=3 must be divisible by groups=2"),
    (4, 3, 2, "out_channels=3 must be divisible by groups=2"),
    (4, 4, 0, "groups must be a positive int, got 0"),
    (4, 4, -2, "groups must be a positive int, got -2"),
    (4, 4, 2.0, "groups must be a positive int, got 2.0"),
])
def test_bad_groups_raise_value_error_like_torch(cls, cin, cout, groups, message):
    with pytest.raises(ValueError, match=f"{cls}: {message}"):
        getattr(nn, cls)(cin, cout, 3, groups=groups)
    with pytest.raises((ValueError, TypeError)):  # torch: ValueError, TypeError for a float
        getattr(torch.nn, cls)(cin, cout, 3, groups=groups)


def test_grouped_functional_bad_shapes_name_op_and_values():
    F = nn.functional
    with pytest.raises(nn.ShapeError, match=r"conv2d: input \(1, 3, 5, 5\).*weight "
                                            r"\(4, 2, 3, 3\).*groups=2"):
        F.conv2d(ag.zeros(1, 3, 5, 5), ag.zeros(4, 2, 3, 3), groups=2)
    with pytest.raises(nn.ShapeError, match=r"conv2d: weight \(3, 2, 3, 3\) has O=3 output "
                                            r"channels, not divisible by groups=2"):
        F.conv2d(ag.zeros(1, 4, 5, 5), ag.zeros(3, 2, 3, 3), groups=2)
    with pytest.raises(nn.ShapeError, match=r"conv1d: weight \(3, 2, 3\) has C_out=3, not "
                                            r"divisible by groups=2"):
        F.conv1d(ag.zeros(1, 4, 5), ag.zeros(3, 2, 3), groups=2)
    with pytest.raises(nn.ShapeError, match=r"conv1d: input \(1, 4, 5\).*C_in/groups, with "
                                            r"groups=4"):
        F.conv1d(ag.zeros(1, 4, 5), ag.zeros(4, 2, 3), groups=4)
    with pytest.raises(nn.ShapeError, match=r"conv_transpose2d: weight \(4, 2, 3, 3\) has "
                                            r"C_in=4 input channels, not divisible by groups=3"):
        F.conv_transpose2d(ag.zeros(1, 4, 5, 5), ag.zeros(4, 2, 3, 3), groups=3)
    with pytest.raises(nn.ShapeError, match=r"conv_transpose2d: bias has shape \(2,\), "
                                            r"expected \(4,\)"):
        F.conv_transpose2d(ag.zeros(1, 4, 5, 5), ag.zeros(4, 2, 3, 3), ag.zeros(2), groups=2)
    for name, x, w in (("conv1d", (1, 4, 5), (4, 4, 3)), ("conv2d", (1, 4, 5, 5), (4, 4, 3, 3)),
                       ("conv_transpose2d", (1, 4, 5, 5), (4, 4, 3, 3))):
        with pytest.raises(ValueError, match=f"{name}: groups must be a positive int, got 0"):
            getattr(F, name)(ag.zeros(*x), ag.zeros(*w), groups=0)


def _weight_grad_of_input_grad(F, grad, x, w, groups):
    """d/dw of |d/dx |conv(x, w)|^2|^2: backward through the backward pass."""
    out = F.conv2d(x, w, groups=groups, stride=2, padding=1)
    gx = grad((out * out).sum(), [x], create_graph=True)[0]
    return grad((gx * gx).sum(), [w])[0]


@pytest.mark.parametrize("groups,wshape", [(2, (6, 2, 3, 3)), (4, (4, 1, 3, 3))])
def test_grouped_conv_gradients_of_gradients_match_torch(groups, wshape, device):
    """The grouped path is composed of differentiable ops, so it differentiates twice."""
    x, w = _rand((2, 4, 5, 5), 6), _rand(wshape, 7)
    ours = _weight_grad_of_input_grad(
        nn.functional, ag.grad, *(ag.tensor(a, device=device, requires_grad=True)
                                  for a in (x, w)), groups)
    theirs = _weight_grad_of_input_grad(
        torch.nn.functional, torch.autograd.grad,
        *(torch.tensor(a, requires_grad=True) for a in (x, w)), groups)
    assert_close(ours, theirs, 1e-9, 1e-9)
