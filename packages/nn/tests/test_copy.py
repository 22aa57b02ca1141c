"""copy.deepcopy and pickle of Modules on every device, against PyTorch's rules.

A copy is an independent module: Parameters stay Parameters (requires_grad
kept, ``.grad`` not copied), buffers stay buffers, a parameter shared by two
submodules stays shared in the copy, and every tensor stays on its device.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest
import torch
from lamina import autograd as ag
from lamina import nn


def _round_trip(x: Any) -> Any:
    return pickle.loads(pickle.dumps(x))


COPIES = {"deepcopy": copy.deepcopy, "pickle": _round_trip}


class Tied(nn.Module):
    """Two layers sharing one weight, a frozen parameter, a buffer and a BatchNorm."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.second = nn.Linear(4, 4)
        self.second.weight = self.first.weight
        self.frozen = nn.Parameter(ag.ones(4), requires_grad=False)
        self.register_buffer("offset", ag.tensor([0.5, -0.5, 1.0, 2.0]))
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.norm(self.second(self.first(x) * self.frozen + self.offset))


def _model(device: str) -> Tied:
    model = Tied().to(device)
    model(ag.randn(6, 4, device=device))  # running statistics and num_batches_tracked move
    return model


@pytest.mark.parametrize("how", sorted(COPIES))
def test_module_copies_keep_tensors_classes_and_devices(how, device):
    model = _model(device)
    clone = COPIES[how](model)
    assert type(clone) is Tied and clone is not model
    ours, theirs = dict(clone.named_parameters()), dict(model.named_parameters())
    assert list(ours) == list(theirs)
    for name, p in ours.items():
        assert type(p) is nn.Parameter and p.device is theirs[name].device
        assert p.requires_grad == theirs[name].requires_grad and p.is_leaf
        assert p._data.buffer is not theirs[name]._data.buffer
        np.testing.assert_array_equal(p.detach().numpy(), theirs[name].detach().numpy())
    for (name, b), (_, b0) in zip(clone.named_buffers(), model.named_buffers()):
        assert type(b) is ag.Tensor and b.device is b0.device and b.dtype is b0.dtype, name
        np.testing.assert_array_equal(b.numpy(), b0.numpy())
    assert clone.frozen.requires_grad is False
    x = ag.randn(3, 4, device=device)
    model.eval()
    clone.eval()
    np.testing.assert_array_equal(clone(x).detach().numpy(), model(x).detach().numpy())


@pytest.mark.parametrize("how", sorted(COPIES))
def test_shared_parameters_stay_shared_within_one_copy(how, device):
    clone = COPIES[how](_model(device))
    assert clone.second.weight is clone.first.weight
    assert clone._parameters["frozen"] is clone.frozen  # the attribute mirror too
    assert len(list(clone.parameters())) == len(list(_model(device).parameters()))


@pytest.mark.parametrize("how", sorted(COPIES))
def test_a_copy_trains_independently(how, device):
    model = _model(device)
    before = model.first.weight.detach().numpy().copy()
    clone = COPIES[how](model)
    clone(ag.randn(5, 4, device=device)).sum().backward()
    with ag.no_grad():
        for p in clone.parameters():
            if p.grad is not None:
                p.sub_(p.grad * 0.1)
    np.testing.assert_array_equal(model.first.weight.detach().numpy(), before)
    assert model.first.weight.grad is None
    assert not np.array_equal(clone.first.weight.detach().numpy(), before)


@pytest.mark.parametrize("how", sorted(COPIES))
def test_module_copies_drop_parameter_grads_like_torch(how, device):
    ref = torch.nn.Linear(2, 2)
    ref(torch.ones(1, 2)).sum().backward()
    layer = nn.Linear(2, 2).to(device)
    layer(ag.ones(1, 2, device=device)).sum().backward()
    assert COPIES[how](ref).weight.grad is None
    assert COPIES[how](layer).weight.grad is None


def test_deepcopy_of_a_module_on_a_host_device_then_moved(device):
    # The case of the issue: copy.deepcopy(model.to("cpu")) raised TypeError.
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    clone = copy.deepcopy(model.to(device)).to("numpy")
    x = ag.randn(2, 3, device=device)
    np.testing.assert_allclose(clone(x.to("numpy")).detach().numpy(),
                               model(x).detach().numpy(), rtol=1e-6)
