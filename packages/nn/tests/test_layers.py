"""Every layer against PyTorch CPU with copied weights: forward, input and weight gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn

torch.set_num_threads(1)

# (id, lamina factory, torch factory, input shape)
CASES = [
    ("identity", lambda: nn.Identity(), lambda: torch.nn.Identity(), (4, 3)),
    ("linear", lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), (4, 5)),
    ("linear-3d", lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), (2, 4, 5)),
    ("linear-nobias", lambda: nn.Linear(5, 3, bias=False),
     lambda: torch.nn.Linear(5, 3, bias=False), (4, 5)),
    ("flatten", lambda: nn.Flatten(), lambda: torch.nn.Flatten(), (2, 3, 4, 5)),
    ("flatten-mid", lambda: nn.Flatten(1, 2), lambda: torch.nn.Flatten(1, 2), (2, 3, 4, 5)),
    ("relu", lambda: nn.ReLU(), lambda: torch.nn.ReLU(), (4, 6)),
    ("tanh", lambda: nn.Tanh(), lambda: torch.nn.Tanh(), (4, 6)),
    ("sigmoid", lambda: nn.Sigmoid(), lambda: torch.nn.Sigmoid(), (4, 6)),
    ("gelu", lambda: nn.GELU(), lambda: torch.nn.GELU(), (4, 6)),
    ("gelu-tanh", lambda: nn.GELU("tanh"), lambda: torch.nn.GELU("tanh"), (4, 6)),
    ("softmax", lambda: nn.Softmax(1), lambda: torch.nn.Softmax(1), (4, 6)),
    ("softmax-0", lambda: nn.Softmax(0), lambda: torch.nn.Softmax(0), (4, 6)),
    ("logsoftmax", lambda: nn.LogSoftmax(-1), lambda: torch.nn.LogSoftmax(-1), (4, 6)),
    ("dropout-eval", lambda: nn.Dropout(0.5).eval(), lambda: torch.nn.Dropout(0.5).eval(),
     (4, 6)),
    ("dropout-p0", lambda: nn.Dropout(0.0), lambda: torch.nn.Dropout(0.0), (4, 6)),
    ("batchnorm-train", lambda: nn.BatchNorm1d(6), lambda: torch.nn.BatchNorm1d(6), (8, 6)),
    ("batchnorm-noaffine", lambda: nn.BatchNorm1d(6, affine=False, momentum=None),
     lambda: torch.nn.BatchNorm1d(6, affine=False, momentum=None), (8, 6)),
    ("layernorm", lambda: nn.LayerNorm(6), lambda: torch.nn.LayerNorm(6), (3, 4, 6)),
    ("layernorm-2d", lambda: nn.LayerNorm((4, 6)), lambda: torch.nn.LayerNorm((4, 6)),
     (3, 4, 6)),
    ("residual", lambda: nn.Residual(nn.Linear(6, 6)),
     lambda: _TorchResidual(torch.nn.Linear(6, 6)), (4, 6)),
    ("sequential", lambda: nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)),
     lambda: torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(),
                                 torch.nn.Linear(8, 2)), (4, 6)),
]


class _TorchResidual(torch.nn.Module):
    def __init__(self, fn: torch.nn.Module) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return x + self.fn(x)


def _randomise(module: torch.nn.Module) -> None:
    # Non-trivial affine parameters so that their gradients are exercised.
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.ndim == 1 else 0.0))


@pytest.mark.parametrize("name,make, make_torch,shape", CASES, ids=[c[0] for c in CASES])
def test_layer_matches_torch(name, make, make_torch, shape, device):
    torch.manual_seed(0)
    ref = make_torch()
    _randomise(ref)
    layer = make().to(device)
    copy_weights(ref, layer)
    x_np = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = ag.tensor(x_np, requires_grad=True, device=device)
    xt = torch.tensor(x_np, requires_grad=True)
    out, out_t = layer(x), ref(xt)
    assert_close(out, out_t)
    upstream = np.random.default_rng(1).standard_normal(out_t.shape).astype(np.float32)
    out.backward(ag.tensor(upstream, device=device))
    out_t.backward(torch.tensor(upstream))
    assert_close(x.grad, xt.grad, atol=1e-4)
    assert all(p.device.type == device for p in layer.parameters())
    params = dict(layer.named_parameters())
    for key, p_t in ref.named_parameters():
        assert_close(params[key].grad, p_t.grad, rtol=1e-4, atol=1e-4)
    for key, buf in layer.state_dict().items():
        assert_close(buf, ref.state_dict()[key])


def test_batchnorm_running_stats_and_eval():
    torch.manual_seed(0)
    ref, layer = torch.nn.BatchNorm1d(3, momentum=0.2), nn.BatchNorm1d(3, momentum=0.2)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = (rng.standard_normal((16, 3)) * 2 + 1).astype(np.float32)
        layer(ag.tensor(x))
        ref(torch.tensor(x))
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(layer, key), getattr(ref, key))
    layer.eval()
    ref.eval()
    x = rng.standard_normal((5, 3)).astype(np.float32)
    assert_close(layer(ag.tensor(x)), ref(torch.tensor(x)).detach())
    assert layer.running_mean.tolist() == pytest.approx(ref.running_mean.tolist(), abs=1e-6)


def test_embedding_matches_torch():
    ref = torch.nn.Embedding(10, 4, padding_idx=2)
    layer = nn.Embedding(10, 4, padding_idx=2)
    copy_weights(ref, layer)
    idx = np.array([[1, 2, 3], [2, 9, 0]])
    out, out_t = layer(ag.tensor(idx)), ref(torch.tensor(idx))
    assert_close(out, out_t)
    upstream = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    out.backward(ag.tensor(upstream))
    out_t.backward(torch.tensor(upstream))
    assert_close(layer.weight.grad, ref.weight.grad)
    assert float(abs(layer.weight.detach().numpy()[2]).sum()) == 0.0


def test_dropout_training_statistics():
    ag.manual_seed(0)
    layer = nn.Dropout(0.25)
    out = layer(ag.ones(200, 200)).numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    with pytest.raises(ValueError, match="p must be"):
        nn.Dropout(1.5)


def test_default_initialisation_bounds():
    ag.manual_seed(0)
    layer = nn.Linear(400, 300)
    bound = 1 / np.sqrt(400)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert abs(w).max() <= bound and abs(w).max() > 0.95 * bound
    assert abs(b).max() <= bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.01 * bound
    emb = nn.Embedding(1000, 64).weight.detach().numpy()
    assert abs(emb.std() - 1.0) < 0.02 and abs(emb.mean()) < 0.02


@pytest.mark.parametrize("layer,shape,fragment", [
    (nn.Linear(4, 2), (3, 5), "Linear(in_features=4, out_features=2, bias=True): expected "
                              "input of shape (*, 4), got (3, 5)"),
    (nn.BatchNorm1d(4), (3, 5), "expected input of shape (N, 4), got (3, 5)"),
    (nn.BatchNorm1d(4), (3, 4, 2), "expected input of shape (N, 4), got (3, 4, 2)"),
    (nn.LayerNorm(4), (3, 5), "LayerNorm((4,), eps=1e-05, elementwise_affine=True): "
                              "expected input of shape (*, 4), got (3, 5)"),
    (nn.LayerNorm((2, 4)), (4,), "expected input of shape (*, 2, 4), got (4,)"),
    (nn.Residual(nn.Linear(4, 3)), (2, 4), "Residual: the wrapped module maps (2, 4) to (2, 3)"),
])
def test_wrong_shapes_name_the_layer(layer, shape, fragment):
    with pytest.raises(nn.ShapeError) as info:
        layer(ag.zeros(*shape))
    assert fragment in str(info.value)


def test_batchnorm_needs_more_than_one_sample():
    with pytest.raises(ValueError, match="more than 1 value"):
        nn.BatchNorm1d(3)(ag.zeros(1, 3))


def test_flatten_rejects_dims_out_of_range():
    with pytest.raises(nn.ShapeError, match=r"cannot flatten dims 1..-1 of input of shape \(5,\)"):
        nn.Flatten()(ag.zeros(5))
