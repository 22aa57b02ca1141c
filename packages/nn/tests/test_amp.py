"""Mixed precision: autocast's op lists and GradScaler, against torch.amp on the CPU."""

from __future__ import annotations

import threading

import lamina.autograd as ag
import lamina.nn.functional as F
import numpy as np
import pytest
import torch
from conftest import available_devices
from lamina import nn, optim
from lamina.amp import GradScaler, autocast

_DEVICES = [d for d in available_devices() if "bfloat16" in ag.tensor(0.0, device=d).device.dtypes]
_HOST = "cpu" if "cpu" in _DEVICES else "numpy"  # explicit: the suite also runs with cuda default


def _x(*shape: int, dtype: str = "float32", device: str = _HOST) -> ag.Tensor:
    rng = np.random.default_rng(sum(shape))
    return ag.tensor(rng.standard_normal(shape), dtype=dtype, device=device)


@pytest.mark.parametrize("where", _DEVICES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_op_lists_pick_each_result_dtype(where: str, dtype: str) -> None:
    a, b = _x(4, 3, device=where), _x(3, 5, device=where)
    w = _x(5, 3, device=where)
    with autocast(where, dtype=dtype):
        assert ag.is_autocast_enabled() and ag.is_autocast_enabled(where)
        assert ag.get_autocast_dtype(where) == dtype
        low = a @ b
        assert low.dtype == dtype  # LOWER
        assert F.linear(a, w).dtype == dtype
        assert (low + a @ b).dtype == dtype  # neither list: promotion
        assert (low + _x(4, 5, device=where)).dtype == "float32"
        assert low.sum().dtype == "float32"  # FLOAT32
        assert F.softmax(low, -1).dtype == "float32" and low.exp().dtype == "float32"
        assert F.layer_norm(low, (5,)).dtype == "float32"
        assert F.cross_entropy(low, ag.tensor([0, 1, 2, 3], device=where)).dtype == "float32"
        double = a.double() @ b.double()
        assert double.dtype == "float64"  # float64 is never cast
        with autocast(where, enabled=False):
            assert (a @ b).dtype == "float32" and not ag.is_autocast_enabled()
        assert (a @ b).dtype == dtype
    assert (a @ b).dtype == "float32" and not ag.is_autocast_enabled()


def test_other_device_types_and_threads_are_left_alone() -> None:
    a = _x(2, 2, device="cpu") if "cpu" in _DEVICES else None
    if a is None:
        pytest.skip("needs the cpu device beside numpy")
    seen = []
    with autocast("numpy"):
        assert (a @ a).dtype == "float32"  # a cpu tensor under a numpy region
        worker = threading.Thread(target=lambda: seen.append((a.to("numpy") @ a.to("numpy"))
                                                             .dtype))
        worker.start()
        worker.join()
        assert (a.to("numpy") @ a.to("numpy")).dtype == "bfloat16"
    assert seen == ["float32"]  # the state is per thread, as PyTorch's


def test_decorator_and_bad_arguments() -> None:
    @autocast(_HOST)
    def product(x: ag.Tensor) -> ag.Tensor:
        return x @ x

    assert product(_x(3, 3)).dtype == "bfloat16" and not ag.is_autocast_enabled()
    with pytest.raises(ValueError, match="autocast: dtype must be float16 or bfloat16"):
        autocast("cpu", dtype="float32")
    with pytest.raises(TypeError, match="autocast: device_type"):
        autocast(0)  # type: ignore[arg-type]


def _twice(lin: nn.Linear, x: ag.Tensor, **region: bool) -> tuple[ag.Tensor, ...]:
    """Two steps through ``lin`` used twice, in one region: outputs and the weight's grads."""
    from lamina.autograd import _autocast

    results = []
    lin.zero_grad()
    with autocast(_HOST, **region):
        for _ in range(2):
            y = lin(lin(x))
            y.float().sum().backward()
            results += [y.detach(), lin.weight.grad.clone()]
            # one cast of each weight per region (PyTorch's cast cache), or none kept
            assert len(_autocast._state.cache) == (2 if region.get("cache_enabled", True) else 0)
    assert not _autocast._state.cache  # dropped with the outermost region
    return tuple(results)


def test_weights_are_cast_once_per_region() -> None:
    ag.manual_seed(0)
    lin = nn.Linear(6, 6).to(_HOST)
    x = _x(3, 6)
    cached, uncached = _twice(lin, x), _twice(lin, x, cache_enabled=False)
    for i, (a, b) in enumerate(zip(cached, uncached)):
        if i % 2 == 0:  # the same outputs either way
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
        else:  # a shared cast sums its uses' gradients in bfloat16 first, as PyTorch's does
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-2,
                                       atol=1e-2 * float(np.abs(b.numpy()).max()))
    with autocast(_HOST):
        before = lin(x).detach().float().numpy()
        with ag.no_grad():
            lin.weight.mul_(2.0)  # an in-place change: the weight is cast again
        after = lin(x).detach().float().numpy()
    with autocast(_HOST, cache_enabled=False), ag.no_grad():
        np.testing.assert_array_equal(after, lin(x).float().numpy())
    assert not np.array_equal(before, after)
    lin.zero_grad()
    with autocast(_HOST):
        with ag.no_grad():
            lin(x)  # not cached: a cast made under no_grad records no graph
        lin(x).float().sum().backward()
    assert lin.weight.grad is not None and np.abs(lin.weight.grad.numpy()).max() > 0


def _mlp_pair() -> tuple[nn.Module, torch.nn.Module]:
    ag.manual_seed(0)
    ours = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.LayerNorm(32), nn.Linear(32, 5))
    ours.to(_HOST)
    theirs = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(),
                                 torch.nn.LayerNorm(32), torch.nn.Linear(32, 5))
    with torch.no_grad():
        for t, p in zip(theirs.parameters(), ours.parameters()):
            t.copy_(torch.from_numpy(p.detach().numpy()))
    return ours, theirs


def test_autocast_step_matches_torch() -> None:
    ours, theirs = _mlp_pair()
    x = np.random.default_rng(0).standard_normal((16, 12)).astype(np.float32)
    y = np.arange(16) % 5
    with autocast(_HOST, dtype="bfloat16"):
        loss = F.cross_entropy(ours(ag.tensor(x, device=_HOST)), ag.tensor(y, device=_HOST))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y))
    assert loss.dtype == "float32" and want.dtype == torch.float32
    np.testing.assert_allclose(loss.item(), want.item(), rtol=2e-2)
    loss.backward()
    want.backward()
    for p, t in zip(ours.parameters(), theirs.parameters()):
        assert p.grad.dtype == "float32"  # float32 leaves get float32 gradients
        scale = float(np.abs(t.grad.numpy()).max())
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), atol=0.05 * scale)


def test_grad_scaler_follows_torch_through_overflows() -> None:
    ours, theirs = _mlp_pair()
    opt = optim.SGD(ours.parameters(), lr=0.1)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    scaler = GradScaler(init_scale=2.0**10, growth_interval=2)
    tscaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    rng = np.random.default_rng(1)
    for step in range(7):
        x = rng.standard_normal((8, 12)).astype(np.float32)
        if step in (2, 5):
            x[0, 0] = np.inf  # this step's gradients overflow: skipped, scale backs off
        opt.zero_grad()
        topt.zero_grad()
        scaler.scale((ours(ag.tensor(x, device=_HOST)) ** 2).mean()).backward()
        tscaler.scale((theirs(torch.from_numpy(x)) ** 2).mean()).backward()
        if step == 3:  # unscale first, as before clipping
            scaler.unscale_(opt)
            tscaler.unscale_(topt)
        scaler.step(opt)
        tscaler.step(topt)
        scaler.update()
        tscaler.update()
        assert scaler.get_scale() == tscaler.get_scale(), step
        for p, t in zip(ours.parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-4,
                                       atol=1e-5, err_msg=f"step {step}")
    state = scaler.state_dict()
    assert state["scale"] == tscaler.state_dict()["scale"]
    again = GradScaler()
    again.load_state_dict(state)
    assert again.get_scale() == scaler.get_scale() and again.state_dict() == state


def test_grad_scaler_misuse_and_disabled() -> None:
    ours, _ = _mlp_pair()
    opt = optim.SGD(ours.parameters(), lr=0.1)
    scaler = GradScaler()
    with pytest.raises(RuntimeError, match="update: no step"):
        scaler.update()
    scaler.scale(ours(_x(2, 12)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_: already called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step: already called"):
        scaler.step(opt)
    with pytest.raises(TypeError, match="GradScaler.scale: expected a Tensor"):
        scaler.scale(1.0)
    with pytest.raises(ValueError, match="growth_factor"):
        GradScaler(growth_factor=1.0)
    off = GradScaler(enabled=False)
    loss = ours(_x(2, 12)).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    before = [p.detach().numpy().copy() for p in ours.parameters()]
    opt.zero_grad()
    loss.backward()
    off.step(opt)
    off.update()
    assert any((p.detach().numpy() != b).any() for p, b in zip(ours.parameters(), before))


def test_float16_gradients_survive_only_when_scaled() -> None:
    # A loss whose float16 gradients underflow: 1e-8 per element is below float16's
    # smallest subnormal (6e-8); scaled by 2**16 it is representable.
    w = ag.tensor(np.ones(4), dtype="float16", device=_HOST, requires_grad=True)
    (w * 1e-8).sum().backward()
    assert (w.grad.float().numpy() == 0).all()
    w.grad = None
    scaler = GradScaler()
    scaler.scale((w * 1e-8).sum()).backward()
    opt = optim.SGD([w], lr=1.0)
    scaler.unscale_(opt)
    assert (w.grad.float().numpy() > 0).all()


def test_compiled_function_captures_again_under_autocast() -> None:
    compiled = ag.compile(lambda a, b: (a @ b).relu())
    a, b = _x(4, 4), _x(4, 4)
    assert compiled(a, b).dtype == "float32"
    with autocast(_HOST):
        assert compiled(a, b).dtype == "bfloat16"
        assert compiled(a, b).dtype == "bfloat16"
    assert compiled(a, b).dtype == "float32"
