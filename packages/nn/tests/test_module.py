"""Module system: registration, traversal, modes, state dicts, repr, containers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lamina import autograd as ag
from lamina import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.register_buffer("counter", ag.zeros(2))
        self.scale = nn.Parameter(ag.ones(1))
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) * self.scale


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 2)])
        self.heads = nn.ModuleDict({"a": nn.Identity()})

    def forward(self, x):
        x = self.block(x)
        for layer in self.layers:
            x = layer(x)
        return self.heads["a"](x)


def test_registration_order_and_traversal():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["block.scale", "block.fc.weight", "block.fc.bias", "layers.0.weight",
                     "layers.0.bias", "layers.1.weight", "layers.1.bias"]  # own ones first
    assert [n for n, _ in net.named_buffers()] == ["block.counter"]
    assert [n for n, _ in net.named_children()] == ["block", "layers", "heads"]
    assert [n for n, _ in net.named_modules()][:3] == ["", "block", "block.fc"]
    assert len(list(net.modules())) == 9
    assert net.num_parameters() == 3 * 4 + 4 + 1 + 4 * 4 + 4 + 4 * 2 + 2


def test_parameter_order_follows_assignment():
    block = Block()
    assert [n for n, _ in block.named_parameters()] == ["scale", "fc.weight", "fc.bias"]


def test_shared_parameters_are_listed_once():
    fc = nn.Linear(2, 2)
    net = nn.Sequential(fc, fc)
    assert len(list(net.parameters())) == 2


def test_setattr_rules():
    block = Block()
    with pytest.raises(TypeError, match="parameter 'scale'"):
        block.scale = ag.ones(1)
    block.scale = None
    assert "scale" not in dict(block.named_parameters())
    with pytest.raises(TypeError, match="buffer 'counter'"):
        block.counter = 3
    block.counter = ag.ones(2)
    assert block.counter.tolist() == [1.0, 1.0]

    class Forgot(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super"):
        Forgot()


def test_train_eval_zero_grad_apply():
    net = Net()
    net.eval()
    assert all(not m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net(ag.randn(5, 3)).sum().backward()
    assert net.block.fc.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert float(abs(net.block.fc.weight.grad.numpy()).sum()) == 0.0
    net.zero_grad()
    assert net.block.fc.weight.grad is None
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Linear"


def test_to_device_and_dtype():
    net = Net().to(dtype="float64")
    assert all(p.dtype == "float64" for p in net.parameters())
    net.to("numpy")
    assert all(p.device.name == "numpy" for p in net.parameters())


def test_state_dict_round_trip():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())
    x = ag.randn(2, 3)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())


def test_load_state_dict_between_forward_and_backward_raises_like_torch(device):
    # The graph saved the old weights; backward must not mix them with the loaded ones.
    ref = torch.nn.Linear(3, 2)
    out_t = ref(torch.ones(4, 3, requires_grad=True)).sum()
    ref.load_state_dict({k: v * 2 for k, v in ref.state_dict().items()})
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out_t.backward()
    layer = nn.Linear(3, 2).to(device)
    out = layer(ag.ones(4, 3, requires_grad=True, device=device)).sum()
    before = layer.weight._version, layer.bias._version
    layer.load_state_dict({k: v.numpy() * 2 for k, v in layer.state_dict().items()})
    assert (layer.weight._version, layer.bias._version) == (before[0] + 1, before[1] + 1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_load_state_dict_writes_in_place_like_torch(device):
    net = Block().to(device)
    weight, counter = net.fc.weight, net.counter
    storage, row = weight._data, weight[0].detach()  # a view taken before the load
    state = {k: v.numpy() + 1 for k, v in net.state_dict().items()}
    net.load_state_dict(state)
    assert net.fc.weight is weight and weight._data is storage  # same tensor, same storage
    np.testing.assert_array_equal(row.numpy(), state["fc.weight"][0])
    np.testing.assert_array_equal(counter.numpy(), state["counter"])
    assert counter._version == 1  # buffers too (a zeros buffer: no init wrote it)
    state["fc.weight"][...] = 0  # the module does not share storage with its source
    assert weight.detach().numpy().any()


def test_init_between_forward_and_backward_raises_like_torch(device):
    layer = nn.Linear(3, 2).to(device)
    out = layer(ag.ones(1, 3, requires_grad=True, device=device)).sum()
    nn.init.normal_(layer.weight)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    out = layer(ag.ones(1, 3, requires_grad=True, device=device)).sum()
    nn.init.zeros_(layer.bias)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_load_state_dict_reports_every_problem_and_loads_nothing():
    net = Net()
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    state = {k: v.numpy() + 1 for k, v in net.state_dict().items()}
    del state["block.fc.bias"]
    state["block.extra"] = np.zeros(1)
    state["layers.0.weight"] = np.zeros((5, 4), np.float32)
    with pytest.raises(nn.StateDictError) as info:
        net.load_state_dict(state)
    message = str(info.value)
    assert "block.fc.bias" in message and "block.extra" in message
    assert "layers.0.weight" in message and "(5, 4)" in message and "(4, 4)" in message
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    state["layers.0.weight"] = np.zeros((4, 4), np.float32)
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["block.fc.bias"] and result.unexpected_keys == ["block.extra"]


def test_repr_is_a_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU())))
    assert text == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                    "  (1): Sequential(\n    (0): ReLU()\n  )\n)")


def test_attribute_reads_follow_every_registry_write():
    # registered entries are read as plain attributes; every write keeps them in step
    block = Block()
    fc, scale = block.fc, block.scale
    assert block.fc is block._modules["fc"] and block.scale is block._parameters["scale"]
    block.scale = None
    assert block.scale is None and block._parameters["scale"] is None
    block.register_parameter("scale", scale)
    assert block.scale is scale
    block.fc = None
    assert block.fc is None
    block.add_module("fc", fc)
    assert block.fc is fc
    block.counter = ag.ones(2)
    assert block.counter is block._buffers["counter"]
    del block.counter
    with pytest.raises(AttributeError, match="counter"):
        _ = block.counter
    block.fc = nn.Parameter(ag.ones(1))  # a parameter replaces the submodule of that name
    assert "fc" not in block._modules and block.fc is block._parameters["fc"]
    block.counter = 5  # no longer a buffer: a plain attribute
    assert block.counter == 5 and "counter" not in block._buffers
    ml = nn.ModuleList([nn.ReLU()])
    ml[0] = tanh = nn.Tanh()
    assert getattr(ml, "0") is tanh
    md = nn.ModuleDict({"x": nn.ReLU()})
    del md["x"]
    assert not hasattr(md, "x") and "x" not in md
    with pytest.raises(KeyError):
        del md["x"]


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    assert len(seq) == 2 and isinstance(seq[-1], nn.ReLU) and len(seq[:1]) == 1
    seq.append(nn.Tanh())
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    ml = nn.ModuleList([nn.ReLU()])
    ml.extend([nn.Tanh()])
    ml[0] = nn.Sigmoid()
    assert [type(m).__name__ for m in ml] == ["Sigmoid", "Tanh"]
    with pytest.raises(IndexError):
        ml[5]
    md = nn.ModuleDict({"x": nn.ReLU()})
    md["y"] = nn.Tanh()
    assert md.keys() == ["x", "y"] and "y" in md and len(md) == 2


def test_parameter_is_a_leaf_tensor():
    p = nn.Parameter(ag.zeros(2, 3))
    assert isinstance(p, ag.Tensor) and p.requires_grad and p.is_leaf
    assert "Parameter containing" in repr(p)


def test_parameter_data_is_a_plain_tensor_sharing_storage():
    p, t = nn.Parameter(ag.zeros(2, 3)), torch.nn.Parameter(torch.zeros(2, 3))
    assert type(p.data) is ag.Tensor and type(t.data) is torch.Tensor  # not a Parameter
    p.data.normal_(0.0, 0.02)
    t.data.normal_(0.0, 0.02)
    assert np.abs(p.detach().numpy()).max() > 0 and not p.data.requires_grad
    p.data = ag.ones(3)
    assert tuple(p.shape) == (3,) and isinstance(p, nn.Parameter) and p.requires_grad
