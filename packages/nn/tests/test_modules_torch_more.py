"""The simple modules of the PyTorch API (issue 30) against torch: values, gradients, reprs.

Activations, Unflatten, GroupNorm, Embedding(padding_idx), ParameterList and
ParameterDict; each case runs on every available device in float32 and float64
and compares the output and the gradient of the input and of every parameter.
"""

from __future__ import annotations

from collections import OrderedDict

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
TNN = torch.nn

# (id, lamina factory, torch factory, input shape)
CASES = [
    ("leaky_relu", lambda: nn.LeakyReLU(), lambda: TNN.LeakyReLU(), (4, 6)),
    ("leaky_relu-0.2", lambda: nn.LeakyReLU(0.2), lambda: TNN.LeakyReLU(0.2), (4, 6)),
    ("elu", lambda: nn.ELU(), lambda: TNN.ELU(), (4, 6)),
    ("elu-0.5", lambda: nn.ELU(0.5), lambda: TNN.ELU(0.5), (4, 6)),
    ("selu", lambda: nn.SELU(), lambda: TNN.SELU(), (4, 6)),
    ("celu-2", lambda: nn.CELU(2.0), lambda: TNN.CELU(2.0), (4, 6)),
    ("silu", lambda: nn.SiLU(), lambda: TNN.SiLU(), (4, 6)),
    ("mish", lambda: nn.Mish(), lambda: TNN.Mish(), (4, 6)),
    ("softplus", lambda: nn.Softplus(), lambda: TNN.Softplus(), (4, 6)),
    ("softplus-beta", lambda: nn.Softplus(2.0, 3.0), lambda: TNN.Softplus(2.0, 3.0), (4, 6)),
    ("hardtanh", lambda: nn.Hardtanh(), lambda: TNN.Hardtanh(), (4, 6)),
    ("hardtanh-range", lambda: nn.Hardtanh(-0.5, 2.0), lambda: TNN.Hardtanh(-0.5, 2.0),
     (4, 6)),
    ("relu6", lambda: nn.ReLU6(), lambda: TNN.ReLU6(), (4, 6)),
    ("hardswish", lambda: nn.Hardswish(), lambda: TNN.Hardswish(), (4, 6)),
    ("hardsigmoid", lambda: nn.Hardsigmoid(), lambda: TNN.Hardsigmoid(), (4, 6)),
    ("softsign", lambda: nn.Softsign(), lambda: TNN.Softsign(), (4, 6)),
    ("logsigmoid", lambda: nn.LogSigmoid(), lambda: TNN.LogSigmoid(), (4, 6)),
    ("softmin", lambda: nn.Softmin(1), lambda: TNN.Softmin(1), (4, 6)),
    ("softmin-implicit-3d", lambda: nn.Softmin(), lambda: TNN.Softmin(), (2, 3, 4)),
    ("prelu", lambda: nn.PReLU(), lambda: TNN.PReLU(), (4, 6)),
    ("prelu-channels", lambda: nn.PReLU(3, 0.1), lambda: TNN.PReLU(3, 0.1), (2, 3, 4, 5)),
    ("unflatten", lambda: nn.Unflatten(1, (2, 3)), lambda: TNN.Unflatten(1, (2, 3)), (4, 6)),
    ("unflatten-neg", lambda: nn.Unflatten(-1, [2, -1]), lambda: TNN.Unflatten(-1, [2, -1]),
     (3, 4, 6)),
    ("groupnorm", lambda: nn.GroupNorm(2, 4), lambda: TNN.GroupNorm(2, 4), (3, 4, 5, 2)),
    ("groupnorm-3d", lambda: nn.GroupNorm(3, 6, eps=1e-3), lambda: TNN.GroupNorm(3, 6, 1e-3),
     (2, 6, 5)),
    ("groupnorm-2d-1group", lambda: nn.GroupNorm(1, 4), lambda: TNN.GroupNorm(1, 4), (5, 4)),
    ("groupnorm-noaffine", lambda: nn.GroupNorm(4, 4, affine=False),
     lambda: TNN.GroupNorm(4, 4, affine=False), (3, 4, 3, 3)),
    ("groupnorm-nobias", lambda: nn.GroupNorm(2, 4, bias=False),
     lambda: TNN.GroupNorm(2, 4, bias=False), (3, 4, 3)),
]


# torch's float64 hardsigmoid backward multiplies by 1/6 rounded to float32 (relative
# error 3e-8); Lamina's is exact, so that gradient is compared at float32's tolerance.
GRAD_TOL = {("hardsigmoid", "float64"): (1e-7, 1e-8)}


def _grad_tol(name: str, dtype: str) -> tuple[float, float]:
    rtol, atol = TOL[dtype]
    return GRAD_TOL.get((name, dtype), (rtol, atol * 10))


def _randomise(module: torch.nn.Module) -> None:
    # Non-trivial parameters (slopes, affine weights) so that their gradients are exercised.
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.ndim == 1 else 0.0))


def _input(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    # Spread over the kinks and saturation points of the activations (-3, 0, 3, 6, 20).
    return (np.random.default_rng(0).standard_normal(shape) * 4).astype(dtype)


@pytest.mark.filterwarnings("ignore:Implicit dimension choice:UserWarning")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,make,make_torch,shape", CASES, ids=[c[0] for c in CASES])
def test_module_matches_torch(name, make, make_torch, shape, dtype, device):
    ref = make_torch().to(getattr(torch, dtype))
    _randomise(ref)
    layer = make().to(device, dtype)
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
    assert_close(x.grad, xt.grad, *_grad_tol(name, dtype))
    params = dict(layer.named_parameters())
    assert list(params) == [k for k, _ in ref.named_parameters()]
    for key, p_t in ref.named_parameters():
        assert_close(params[key].grad, p_t.grad, rtol * 10, atol * 10)


# Where PyTorch defines the gradient at a kink or bound, the composition must agree.
KINKS = np.array([-20.5, -6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 19.9, 20.0, 25.0,
                  100.0])
FUNCTIONS = [
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: torch.nn.functional.leaky_relu(
        x, 0.1)),
    ("elu", F.elu, torch.nn.functional.elu),
    ("celu", lambda x: F.celu(x, 0.5), lambda x: torch.nn.functional.celu(x, 0.5)),
    ("selu", F.selu, torch.nn.functional.selu),
    ("softplus", F.softplus, torch.nn.functional.softplus),
    ("hardtanh", F.hardtanh, torch.nn.functional.hardtanh),
    ("relu6", F.relu6, torch.nn.functional.relu6),
    ("hardswish", F.hardswish, torch.nn.functional.hardswish),
    ("hardsigmoid", F.hardsigmoid, torch.nn.functional.hardsigmoid),
    ("logsigmoid", F.logsigmoid, torch.nn.functional.logsigmoid),
    ("mish", F.mish, torch.nn.functional.mish),
    ("silu", F.silu, torch.nn.functional.silu),
    ("softsign", F.softsign, torch.nn.functional.softsign),
]


@pytest.mark.parametrize("name,fn,fn_torch", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_functional_at_kinks_and_large_inputs(name, fn, fn_torch, device):
    x = ag.tensor(KINKS, dtype="float64", requires_grad=True, device=device)
    xt = torch.tensor(KINKS, requires_grad=True)
    out, out_t = fn(x), fn_torch(xt)
    assert_close(out, out_t, 1e-10, 1e-10)
    out.sum().backward()
    out_t.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    assert_close(x.grad, xt.grad, *GRAD_TOL.get((name, "float64"), (1e-10, 1e-10)))


def test_functional_prelu_and_group_norm_match_torch(device):
    rng = np.random.default_rng(3)
    x_np, w_np = rng.standard_normal((2, 4, 3)), rng.standard_normal(4)
    b_np = rng.standard_normal(4)
    x, w, b = (ag.tensor(a, requires_grad=True, device=device) for a in (x_np, w_np, b_np))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    out = F.prelu(x, w) + F.group_norm(x, 2, w, b, 1e-4)
    out_t = (torch.nn.functional.prelu(xt, wt)
             + torch.nn.functional.group_norm(xt, 2, wt, bt, 1e-4))
    assert_close(out, out_t, 1e-10, 1e-10)
    out.sum().backward()
    out_t.sum().backward()
    for ours, theirs in ((x, xt), (w, wt), (b, bt)):
        assert_close(ours.grad, theirs.grad, 1e-9, 1e-9)


def test_group_norm_is_the_same_in_eval_and_has_no_buffers():
    layer = nn.GroupNorm(2, 4)
    x = ag.randn(3, 4, 2)
    assert_close(layer(x), layer.eval()(x))
    assert list(layer.state_dict()) == ["weight", "bias"]


@pytest.mark.parametrize("make,error,fragment", [
    (lambda: nn.GroupNorm(3, 4), ValueError, "num_channels=4 must be divisible by "
                                              "num_groups=3"),
    (lambda: nn.GroupNorm(0, 4), ValueError, "num_groups=0"),
    (lambda: nn.Hardtanh(1.0, -1.0), ValueError, "Hardtanh: min_val (1.0) must be less than"),
    (lambda: nn.CELU(0.0), ValueError, "CELU: alpha must not be 0"),
    (lambda: nn.Softplus(beta=0), ValueError, "Softplus: beta must not be 0"),
    (lambda: nn.PReLU(0), ValueError, "PReLU: num_parameters must be a positive int"),
    (lambda: nn.Unflatten(1, 6), TypeError, "Unflatten: unflattened_size must be a tuple"),
    (lambda: nn.Unflatten(1, (2, 3.0)), TypeError, "unflattened_size must be a tuple"),
    (lambda: nn.Unflatten("a", (2, 3)), TypeError, "Unflatten: dim must be an int"),
])
def test_bad_arguments_name_the_module(make, error, fragment):
    with pytest.raises(error) as info:
        make()
    assert fragment in str(info.value)


@pytest.mark.parametrize("layer,shape,error,fragment", [
    (nn.GroupNorm(2, 4), (3, 6, 2), nn.ShapeError,
     "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True): expected input of shape (N, 4, *), "
     "got (3, 6, 2)"),
    (nn.GroupNorm(2, 4), (4,), nn.ShapeError, "expected input of shape (N, 4, *), got (4,)"),
    (nn.PReLU(3), (2, 4), nn.ShapeError, "prelu: weight has 3 values but the input (2, 4) "
                                         "has 4 channels"),
    (nn.Unflatten(1, (4, -1)), (2, 6), nn.ShapeError, "cannot split a dim of size 6 into "
                                                      "(4, -1)"),
    (nn.Unflatten(1, (2, 2)), (2, 6), nn.ShapeError, "cannot split a dim of size 6 into "
                                                     "(2, 2)"),
    (nn.Unflatten(1, (-1, -1)), (2, 6), ValueError, "at most one -1"),
    (nn.Unflatten(2, (2, 3)), (2, 6), IndexError, "dim 2 is out of range"),
])
def test_bad_inputs_name_the_module(layer, shape, error, fragment):
    with pytest.raises(error) as info:
        layer(ag.zeros(*shape))
    assert fragment in str(info.value)


# ----- Embedding(padding_idx) --------------------------------------------------------------

@pytest.mark.parametrize("padding_idx", [2, -1])
def test_embedding_padding_row_is_returned_and_gets_no_gradient(padding_idx, device):
    ref = torch.nn.Embedding(6, 3, padding_idx=padding_idx)
    layer = nn.Embedding(6, 3, padding_idx=padding_idx).to(device)
    assert float(abs(layer.weight.detach().numpy()[padding_idx]).sum()) == 0.0
    with torch.no_grad():  # a loaded table may hold a non-zero padding row
        ref.weight[padding_idx] = torch.tensor([1.0, -2.0, 3.0])
    layer.load_state_dict({"weight": ref.weight.detach().numpy()})
    idx = np.array([[1, 2, 5], [5, 2, 0]])
    out, out_t = layer(ag.tensor(idx, device=device)), ref(torch.tensor(idx))
    assert_close(out, out_t)
    upstream = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    assert_close(layer.weight.grad, ref.weight.grad)
    assert repr(layer) == repr(ref)


def test_functional_embedding_padding_idx_matches_torch():
    weight_np = np.random.default_rng(0).standard_normal((5, 2))
    weight, weight_t = ag.tensor(weight_np, requires_grad=True), torch.tensor(
        weight_np, requires_grad=True)
    idx = np.array([0, 4, 4, 1])
    F.embedding(ag.tensor(idx), weight, padding_idx=-1).sum().backward()
    torch.nn.functional.embedding(torch.tensor(idx), weight_t, padding_idx=-1).sum().backward()
    assert_close(weight.grad, weight_t.grad)
    with pytest.raises(ValueError, match="padding_idx 5 is out of range"):
        F.embedding(ag.tensor(idx), weight, padding_idx=5)


# ----- ParameterList and ParameterDict -----------------------------------------------------

def _param(*shape: int, fill: float = 1.0, device: str | None = None) -> nn.Parameter:
    return nn.Parameter(ag.full(shape, fill, device=device))


class _Holder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(2, 2)
        self.plist = nn.ParameterList([_param(2), _param(3)])
        self.pdict = nn.ParameterDict({"b": _param(1), "a": _param(4)})


class _TorchHolder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Linear(2, 2)
        self.plist = torch.nn.ParameterList([torch.ones(2), torch.ones(3)])
        self.pdict = torch.nn.ParameterDict({"b": torch.ones(1), "a": torch.ones(4)})


def test_parameter_containers_register_like_torch():
    ours, theirs = _Holder(), _TorchHolder()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.plist.append(ag.zeros(5))  # a plain Tensor is wrapped in a Parameter
    ours.plist.extend([_param(6)])
    ours.pdict.update([("z", ag.zeros(1)), ("c", _param(2))])
    theirs.plist.append(torch.zeros(5))
    theirs.plist.extend([torch.nn.Parameter(torch.ones(6))])
    theirs.pdict.update([("z", torch.zeros(1)), ("c", torch.ones(2))])
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert isinstance(ours.plist[2], nn.Parameter) and ours.plist[2].requires_grad
    assert [tuple(p.shape) for p in ours.plist] == [tuple(p.shape) for p in theirs.plist]
    assert ours.pdict.keys() == list(theirs.pdict.keys())
    assert len(ours.plist) == 4 and len(ours.pdict) == 4 and "c" in ours.pdict


def test_parameter_list_replace_keeps_order_and_slices():
    plist = nn.ParameterList([_param(1, fill=float(i)) for i in range(3)])
    plist[1] = _param(2, fill=9.0)
    plist[-1] = _param(3, fill=7.0)
    assert list(plist.state_dict()) == ["0", "1", "2"]
    assert [p.tolist() for p in plist.parameters()] == [[0.0], [9.0, 9.0], [7.0] * 3]
    assert plist[-2] is plist[1]
    tail = plist[1:]
    assert isinstance(tail, nn.ParameterList) and list(tail.state_dict()) == ["0", "1"]
    plist += [_param(1)]
    assert len(plist) == 4
    with pytest.raises(IndexError, match="index 4 out of range for length 4"):
        plist[4]
    with pytest.raises(TypeError, match="expected an iterable of parameters"):
        plist.extend(_param(2))


def test_parameter_dict_mapping_methods_like_torch():
    ours = nn.ParameterDict(OrderedDict([("y", _param(1)), ("x", _param(2))]))
    theirs = torch.nn.ParameterDict(OrderedDict([("y", torch.ones(1)), ("x", torch.ones(2))]))
    assert ours.keys() == list(theirs.keys()) == ["y", "x"]
    assert ours.pop("y").shape == (1,) and "y" not in ours
    assert ours.get("missing") is None
    default = ours.setdefault("w", _param(3))
    assert ours["w"] is default and list(ours) == ["x", "w"]
    assert list(ours.state_dict()) == ["x", "w"]
    ours["x"] = _param(5)  # replaced where it stands
    assert [n for n, _ in ours.named_parameters()] == ["x", "w"]
    assert [k for k, _ in ours.items()] == ["x", "w"] and len(ours.values()) == 2
    assert list(reversed(ours)) == ["w", "x"]
    ours.clear()
    assert len(ours) == 0 and list(ours.parameters()) == []
    with pytest.raises(KeyError):
        ours["x"]
    with pytest.raises(TypeError, match="keys must be strings"):
        ours[1] = _param(1)  # type: ignore[index]
    with pytest.raises(ValueError, match="element #0 must be a \\(key, value\\) pair"):
        ours.update([("a", _param(1), 3)])
    with pytest.raises(KeyError):
        ours["a.b"] = _param(1)


def test_parameter_containers_train_and_load():
    holder = _Holder()
    opt_params = list(holder.parameters())
    assert len(opt_params) == 6
    loss = (holder.plist[0] * 2.0).sum() + (holder.pdict["a"] ** 2).sum()
    loss.backward()
    assert holder.plist[0].grad.tolist() == [2.0, 2.0]
    assert holder.pdict["a"].grad.tolist() == [2.0] * 4
    state = {k: v.detach().numpy() * 0 + 3 for k, v in _TorchHolder().state_dict().items()}
    holder.load_state_dict(state)
    assert holder.pdict["b"].tolist() == [3.0] and holder.plist[1].tolist() == [3.0] * 3


def test_parameter_container_reprs_match_torch():
    # on a host device, whose repr names no device (torch names cuda:0 as lamina does)
    ours = nn.ParameterList([_param(2, 3, device="numpy")])
    assert repr(ours) == "ParameterList(  (0): Parameter containing: [lamina.float32 of size 2x3])"
    ours.append(_param(2, device="numpy"))
    theirs = torch.nn.ParameterList([torch.ones(2, 3), torch.ones(2)])
    assert repr(ours) == repr(theirs).replace("torch.", "lamina.")
    pdict = nn.ParameterDict({"w": _param(4, device="numpy")})
    assert repr(pdict) == "ParameterDict(  (w): Parameter containing: [lamina.float32 of size 4])"
    holder = repr(_Holder())
    assert "(plist): ParameterList(\n      (0): Parameter containing:" in holder


def test_prelu_counts_and_resets_its_slopes():
    layer = nn.PReLU(3, 0.1)
    assert layer.num_parameters() == 3
    with ag.no_grad():
        layer.weight.mul_(5.0)
    layer.reset_parameters()
    assert layer.weight.tolist() == pytest.approx([0.1] * 3)
    assert layer.weight.requires_grad and layer.weight.is_leaf
