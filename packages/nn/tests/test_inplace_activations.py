"""PyTorch's ``inplace=`` activations and Dropout (issue 30), against torch 2.13 CPU.

An in-place activation writes into the input's storage and returns the input
itself, recorded as an in-place op: values, identity and storage, gradients
through a small net and through a view, the leaf rule, ``no_grad``, the
"modified by an inplace operation" check, Dropout's mask, reprs and signatures.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn
from lamina.nn import functional as F

torch.set_num_threads(1)
TF = torch.nn.functional

# (id, lamina module factory, torch module factory); each takes ``inplace``.
MODULES: list[tuple[str, Callable[[bool], Any], Callable[[bool], Any]]] = [
    ("relu", lambda i: nn.ReLU(i), lambda i: torch.nn.ReLU(i)),
    ("relu6", lambda i: nn.ReLU6(i), lambda i: torch.nn.ReLU6(i)),
    ("leaky_relu", lambda i: nn.LeakyReLU(0.2, i), lambda i: torch.nn.LeakyReLU(0.2, i)),
    ("elu", lambda i: nn.ELU(0.5, i), lambda i: torch.nn.ELU(0.5, i)),
    ("celu", lambda i: nn.CELU(2.0, i), lambda i: torch.nn.CELU(2.0, i)),
    ("selu", lambda i: nn.SELU(i), lambda i: torch.nn.SELU(i)),
    ("silu", lambda i: nn.SiLU(i), lambda i: torch.nn.SiLU(i)),
    ("mish", lambda i: nn.Mish(i), lambda i: torch.nn.Mish(i)),
    ("hardtanh", lambda i: nn.Hardtanh(-0.5, 2.0, i), lambda i: torch.nn.Hardtanh(-0.5, 2.0, i)),
    ("hardsigmoid", lambda i: nn.Hardsigmoid(i), lambda i: torch.nn.Hardsigmoid(i)),
    ("hardswish", lambda i: nn.Hardswish(i), lambda i: torch.nn.Hardswish(i)),
]
IDS = [m[0] for m in MODULES]

# (id, lamina in-place call, torch in-place call): every functional spelling.
FUNCTIONS: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = [
    ("relu", lambda x: F.relu(x, inplace=True), lambda x: TF.relu(x, inplace=True)),
    ("relu_", F.relu_, TF.relu_),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1, True), lambda x: TF.leaky_relu(x, 0.1, True)),
    ("leaky_relu_", lambda x: F.leaky_relu_(x, 0.1), lambda x: TF.leaky_relu_(x, 0.1)),
    ("elu", lambda x: F.elu(x, 0.7, True), lambda x: TF.elu(x, 0.7, True)),
    ("elu_", lambda x: F.elu_(x, 0.7), lambda x: TF.elu_(x, 0.7)),
    ("celu", lambda x: F.celu(x, 1.5, True), lambda x: TF.celu(x, 1.5, True)),
    ("celu_", lambda x: F.celu_(x, 1.5), lambda x: TF.celu_(x, 1.5)),
    ("selu", lambda x: F.selu(x, True), lambda x: TF.selu(x, True)),
    ("selu_", F.selu_, TF.selu_),
    ("silu", lambda x: F.silu(x, True), lambda x: TF.silu(x, True)),
    ("mish", lambda x: F.mish(x, True), lambda x: TF.mish(x, True)),
    ("hardtanh", lambda x: F.hardtanh(x, -2.0, 1.5, True),
     lambda x: TF.hardtanh(x, -2.0, 1.5, True)),
    ("hardtanh_", lambda x: F.hardtanh_(x, -2.0, 1.5), lambda x: TF.hardtanh_(x, -2.0, 1.5)),
    ("relu6", lambda x: F.relu6(x, True), lambda x: TF.relu6(x, True)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x, True), lambda x: TF.hardsigmoid(x, True)),
    ("hardswish", lambda x: F.hardswish(x, True), lambda x: TF.hardswish(x, True)),
]
FIDS = [f[0] for f in FUNCTIONS]


def _input(shape: tuple[int, ...] = (4, 6), seed: int = 0) -> np.ndarray:
    # Spread over the kinks and saturation points (-3, -1, 0, 1, 3, 6).
    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)


@pytest.mark.parametrize("name,ours,theirs", FUNCTIONS, ids=FIDS)
def test_function_writes_into_x_and_returns_it(name, ours, theirs, device):
    x_np = _input()
    x = ag.tensor(x_np, device=device)
    alias = x.reshape(24)  # shares x's storage: it must see the new values
    version = x._version
    out = ours(x)
    expected = theirs(torch.tensor(x_np))
    assert out is x
    assert x._version > version
    assert_close(x, expected)
    assert_close(alias, expected.reshape(24))


@pytest.mark.parametrize("name,ours,theirs", FUNCTIONS, ids=FIDS)
def test_function_gradient_through_the_in_place_write(name, ours, theirs, device):
    x_np, w_np = _input(), _input(seed=1)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    h, ht = x * 1.0, xt * 1.0
    out, out_t = ours(h), theirs(ht)
    assert out is h and out.grad_fn is not None
    (out * ag.tensor(w_np, device=device)).sum().backward()
    (out_t * torch.tensor(w_np)).sum().backward()
    assert_close(x.grad, xt.grad)


@pytest.mark.parametrize("name,make,make_torch", MODULES, ids=IDS)
def test_net_with_in_place_activation_matches_torch(name, make, make_torch, device):
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(5, 8), make_torch(True), torch.nn.Linear(8, 3))
    net = nn.Sequential(nn.Linear(5, 8), make(True), nn.Linear(8, 3)).to(device)
    copy_weights(ref, net)
    x_np = _input((6, 5))
    x, xt = ag.tensor(x_np, requires_grad=True, device=device), torch.tensor(
        x_np, requires_grad=True)
    out, out_t = net(x), ref(xt)
    assert_close(out, out_t)
    out.sum().backward()
    out_t.sum().backward()
    assert_close(x.grad, xt.grad)
    for p, p_t in zip(net.parameters(), ref.parameters()):
        assert_close(p.grad, p_t.grad)


def test_every_in_place_activation_in_one_net_matches_torch(device):
    torch.manual_seed(0)
    layers = [(torch.nn.Linear(6, 6), nn.Linear(6, 6))]
    for _, make, make_torch in MODULES:
        layers += [(make_torch(True), make(True)), (torch.nn.Linear(6, 6), nn.Linear(6, 6))]
    ref = torch.nn.Sequential(*[t for t, _ in layers])
    net = nn.Sequential(*[o for _, o in layers]).to(device)
    copy_weights(ref, net)
    x_np = _input((5, 6))
    out, out_t = net(ag.tensor(x_np, device=device)), ref(torch.tensor(x_np))
    assert_close(out, out_t)
    out.sum().backward()
    out_t.sum().backward()
    for p, p_t in zip(net.parameters(), ref.parameters()):
        assert_close(p.grad, p_t.grad)


@pytest.mark.parametrize("name,ours,theirs", FUNCTIONS, ids=FIDS)
def test_in_place_on_a_view_of_a_non_leaf_matches_torch(name, ours, theirs, device):
    x_np, w_np = _input(), _input(seed=2)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    y, yt = x * 2.0, xt * 2.0
    out, out_t = ours(y[1]), theirs(yt[1])
    assert_close(out, out_t)
    assert_close(y, yt)  # the base sees the write
    (y * ag.tensor(w_np, device=device)).sum().backward()
    (yt * torch.tensor(w_np)).sum().backward()
    assert_close(x.grad, xt.grad)


@pytest.mark.parametrize("name,ours,theirs", FUNCTIONS, ids=FIDS)
def test_in_place_on_a_leaf_that_requires_grad_raises(name, ours, theirs, device):
    with pytest.raises(RuntimeError):
        theirs(torch.ones(3, requires_grad=True))
    x = ag.tensor([-1.0, 0.5, 2.0], requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ours(x)
    np.testing.assert_array_equal(x.detach().numpy(), [-1.0, 0.5, 2.0])  # nothing written
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        ours(x[1:])


@pytest.mark.parametrize("name,ours,theirs", FUNCTIONS, ids=FIDS)
def test_in_place_under_no_grad_just_writes(name, ours, theirs, device):
    x_np = _input()
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    with ag.no_grad():
        out = ours(x)
    with torch.no_grad():
        theirs(xt)
    assert out is x and x.grad_fn is None and x.requires_grad
    assert_close(x, xt)


@pytest.mark.parametrize("name,make,make_torch", MODULES, ids=IDS)
def test_overwriting_a_value_another_node_saved_raises_at_backward(name, make, make_torch,
                                                                   device):
    x = ag.tensor(_input(), requires_grad=True, device=device)
    h = x * 1.0
    squared = h * h  # saves h's value before the write
    make(True)(h)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        squared.sum().backward()
    xt = torch.tensor(_input(), requires_grad=True)
    ht = xt * 1.0
    squared_t = ht * ht
    make_torch(True)(ht)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        squared_t.sum().backward()


@pytest.mark.parametrize("name,make,make_torch", MODULES, ids=IDS)
def test_out_of_place_module_leaves_its_input_alone(name, make, make_torch, device):
    x_np = _input()
    x = ag.tensor(x_np, device=device)
    out = make(False)(x)
    assert out is not x
    np.testing.assert_array_equal(x.numpy(), x_np)
    assert_close(out, make_torch(False)(torch.tensor(x_np)))


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("name,make,make_torch", MODULES, ids=IDS)
def test_repr_matches_torch(name, make, make_torch, inplace):
    assert repr(make(inplace)) == repr(make_torch(inplace))


@pytest.mark.parametrize("inplace", [False, True])
def test_dropout_repr_matches_torch(inplace):
    assert repr(nn.Dropout(0.25, inplace)) == repr(torch.nn.Dropout(0.25, inplace))
    assert repr(nn.Dropout(inplace=inplace)) == repr(torch.nn.Dropout(inplace=inplace))


def _params(fn: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", IDS + ["dropout"])
def test_function_signature_matches_torch(name):
    # the first parameter is Lamina's x, torch's input
    assert _params(getattr(F, name))[1:] == _params(getattr(TF, name))[1:]


@pytest.mark.parametrize("cls", ["ReLU", "ReLU6", "LeakyReLU", "ELU", "CELU", "SELU", "SiLU",
                                 "Mish", "Hardtanh", "Hardsigmoid", "Hardswish", "Dropout"])
def test_module_signature_matches_torch(cls):
    theirs = [p for p in _params(getattr(torch.nn, cls).__init__)
              if p[0] not in ("min_value", "max_value")]  # Hardtanh's deprecated spellings
    assert _params(getattr(nn, cls).__init__) == theirs


def test_in_place_functions_are_torchs_set():
    ours = {n for n in F.__all__ if n.endswith("_")}
    theirs = {n for n in dir(TF) if n.endswith("_") and not n.startswith("_")}
    assert ours == theirs


# ----- Dropout ---------------------------------------------------------------------------

def test_dropout_in_place_in_eval_mode_is_identity(device):
    x_np = _input()
    x = ag.tensor(x_np, device=device)
    version = x._version
    layer = nn.Dropout(0.5, inplace=True).eval()
    assert layer(x) is x and x._version == version
    np.testing.assert_array_equal(x.numpy(), x_np)
    assert F.dropout(x, 0.0, True, True) is x


def test_dropout_in_place_in_training_zeros_in_place(device):
    ag.manual_seed(0)
    x_np = _input((200, 200)) + 100.0  # no zeros of its own
    x = ag.tensor(x_np, requires_grad=True, device=device)
    h = x * 1.0
    alias = h.reshape(-1)
    out = nn.Dropout(0.25, inplace=True)(h)
    assert out is h
    values = h.detach().numpy()
    kept = values != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(values[kept], x_np[kept] / 0.75, rtol=1e-6)
    np.testing.assert_array_equal(alias.detach().numpy(), values.reshape(-1))
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75, rtol=1e-6)


def test_dropout_in_place_rules_match_torch(device):
    with pytest.raises(RuntimeError):
        TF.dropout(torch.ones(3, requires_grad=True), 0.5, True, True)
    leaf = ag.ones(3, requires_grad=True, device=device)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.dropout(leaf, 0.5, True, True)
    ones = ag.ones(4, 5, device=device)
    assert F.dropout(ones, 1.0, True, True) is ones
    np.testing.assert_array_equal(ones.numpy(), TF.dropout(torch.ones(4, 5), 1.0, True, True))
