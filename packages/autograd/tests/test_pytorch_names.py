"""Names PyTorch users type: reductions with dim/axis, .t(), .cpu(), inference_mode.

Values and gradients are compared with PyTorch in float64.
"""

from __future__ import annotations

from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES, float64_device

# (name, Lamina call, torch call): each reduction with both spellings of its arguments.
REDUCTIONS: list[tuple[str, Any, Any]] = []
for _dim in (1, -1, (0, 2), [2, 0], None, ()):
    for _keep in (False, True):
        _t_dim = None if _dim is None or _dim == () else _dim
        REDUCTIONS += [
            (f"sum{_dim}{_keep}", lambda x, d=_dim, k=_keep: x.sum(axis=d, keepdims=k),
             lambda t, d=_t_dim, k=_keep: t.sum(dim=d, keepdim=k)),
            (f"mean{_dim}{_keep}", lambda x, d=_dim, k=_keep: ag.mean(x, axis=d, keepdims=k),
             lambda t, d=_t_dim, k=_keep: t.mean(dim=d, keepdim=k)),
            # max(dim) is a (values, indices) pair for an int dim, as in torch; amax otherwise
            (f"max{_dim}{_keep}", lambda x, d=_dim, k=_keep: x.max(axis=d, keepdim=k).values
             if isinstance(d, int) else x.amax(axis=d, keepdim=k),
             lambda t, d=_t_dim, k=_keep: torch.amax(t, dim=() if d is None else d, keepdim=k)),
            (f"amin{_dim}{_keep}", lambda x, d=_dim, k=_keep: ag.amin(x, d, keepdims=k),
             lambda t, d=_t_dim, k=_keep: torch.amin(t, dim=() if d is None else d, keepdim=k)),
            (f"var{_dim}{_keep}", lambda x, d=_dim, k=_keep: x.var(axis=d, keepdims=k),
             lambda t, d=_t_dim, k=_keep: t.var(dim=d, keepdim=k)),
            (f"std{_dim}{_keep}", lambda x, d=_dim, k=_keep: ag.std(x, d, keepdim=k),
             lambda t, d=_t_dim, k=_keep: t.std(dim=d, keepdim=k)),
            (f"logsumexp{_dim}{_keep}",
             lambda x, d=_dim, k=_keep: x.logsumexp(axis=d, keepdims=k),
             lambda t, d=_t_dim, k=_keep: torch.logsumexp(
                 t, dim=(0, 1, 2) if d is None else d, keepdim=k)),
        ]


@pytest.mark.parametrize("name,ours,theirs", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("device", DEVICES)
def test_reductions_take_dim_or_axis_and_match_torch(name: str, ours: Any, theirs: Any,
                                                     device: str) -> None:
    if "float64" not in nd.get_device(device).dtypes:
        pytest.skip(f"{device} has no float64")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5))
    x = ag.tensor(a, dtype="float64", device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    out, ref = ours(x), theirs(t)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    g = rng.standard_normal(out.shape)
    out.backward(ag.tensor(g, dtype="float64", device=device))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_logsumexp_of_a_0d_tensor_and_argmax_with_axis() -> None:
    x = ag.tensor(2.5, requires_grad=True)
    y = ag.logsumexp(x, None)
    y.backward()
    assert y.item() == 2.5 and x.grad.item() == 1.0
    a = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    assert ag.tensor(a).argmax(axis=1).tolist() == torch.tensor(a).argmax(dim=1).tolist()
    assert ag.argmax(ag.tensor(a), axis=0, keepdims=True).shape == (1, 3)


def test_dim_and_axis_together_are_refused() -> None:
    x = ag.ones(2, 3)
    with pytest.raises(TypeError, match="sum: got both dim=1 and axis=0"):
        x.sum(1, axis=0)
    with pytest.raises(TypeError, match="logsumexp: got both"):
        ag.logsumexp(x, 0, axis=1)
    with pytest.raises(TypeError, match="mean: got both keepdim=True and keepdims=False"):
        x.mean(0, keepdim=True, keepdims=False)
    with pytest.raises(ag.ShapeError, match="logsumexp: dim 2 is out of range"):
        x.logsumexp((0, 2))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_t_matches_torch(shape: tuple[int, ...]) -> None:
    device = float64_device()
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = ag.tensor(a, dtype="float64", device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, r = x.t(), t.t()
    np.testing.assert_array_equal(y.detach().numpy(), r.detach().numpy())
    g = np.arange(float(y.numel())).reshape(y.shape) + 1.0
    (y * ag.tensor(g, dtype="float64", device=device)).sum().backward()
    (r * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_t_refuses_more_than_two_dims() -> None:
    with pytest.raises(ag.ShapeError, match=r"t: expects a tensor with <= 2 dimensions, got "
                                            r"shape \(2, 2, 2\)"):
        ag.ones(2, 2, 2).t()


@pytest.mark.parametrize("device", DEVICES)
def test_cpu_keeps_host_tensors_and_numpy_reads_them(device: str) -> None:
    x = ag.tensor([1.0, 2.0], device=device)
    host = x.cpu()
    if device in ("numpy",) or device.startswith("cpu"):
        assert host is x
    else:
        assert host.device.type in ("cpu", "numpy")
    assert host.numpy().tolist() == [1.0, 2.0]
    w = ag.tensor([1.0], device=device, requires_grad=True)
    (w.cpu() * 3).sum().backward()
    assert w.grad.tolist() == [3.0]


def test_inference_mode_as_context_manager_and_decorator() -> None:
    w = ag.ones(2, requires_grad=True)
    with ag.inference_mode():
        assert not ag.is_grad_enabled()
        assert not (w * 2).requires_grad
        with ag.enable_grad():
            assert (w * 2).requires_grad
    assert ag.is_grad_enabled()
    with ag.inference_mode(False):
        assert (w * 2).requires_grad
    with ag.no_grad(), ag.inference_mode(False):
        assert not ag.is_grad_enabled()  # mode=False changes nothing, as in PyTorch

    @ag.inference_mode()
    def predict(v: ag.Tensor, depth: int) -> ag.Tensor:
        return v * 2 if depth == 0 else predict(v, depth - 1)

    assert not predict(w, 3).requires_grad
    assert ag.is_grad_enabled()
    with pytest.raises(ValueError):
        with ag.inference_mode():
            raise ValueError("boom")
    assert ag.is_grad_enabled()  # restored after an exception


def test_numpy_refuses_tensors_that_require_grad_like_torch() -> None:
    w = ag.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach\\(\\)\\.numpy\\(\\)"):
        w.numpy()
    assert w.detach().numpy().tolist() == [1.0, 1.0]


def test_the_first_lines_a_pytorch_user_types() -> None:
    """The interop and naming lines of the 'coming from PyTorch' report, against torch."""
    a = np.arange(12.0).reshape(3, 4)
    x = ag.tensor(a, device="numpy")
    t = torch.tensor(a)
    assert torch.from_dlpack(x).data_ptr() == int(x._data.buffer.data.ctypes.data)
    np.testing.assert_array_equal(np.from_dlpack(x), a)
    torch.testing.assert_close(torch.tensor(x), t)
    np.testing.assert_allclose(x.mean(axis=1).numpy(), t.mean(axis=1).numpy())
    np.testing.assert_array_equal(x.t().numpy(), t.t().numpy())
    np.testing.assert_array_equal(x.cpu().numpy(), t.cpu().numpy())
    shared = ag.from_numpy(a, device="numpy")
    np.testing.assert_array_equal(shared.numpy(), torch.from_numpy(a).numpy())
    with ag.inference_mode(), torch.inference_mode():
        assert not (ag.ones(1, requires_grad=True) * 2).requires_grad
        assert not (torch.ones(1, requires_grad=True) * 2).requires_grad
    np.testing.assert_allclose(ag.logsumexp(x, (0, 1)).numpy(),
                               torch.logsumexp(t, (0, 1)).numpy())
    np.testing.assert_allclose(ag.logsumexp(x, None).numpy(),
                               torch.logsumexp(t.reshape(-1), 0).numpy())
