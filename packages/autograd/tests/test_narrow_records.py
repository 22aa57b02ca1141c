"""Every op record in float16 and bfloat16, against PyTorch (CPU) on the same inputs.

Inputs are the records' samples rounded to the dtype, so both sides start from
the same values; PyTorch computes in float64 from there. Lamina computes each op
in float32 and rounds its result, so values and gradients may differ from the
exact ones by the rounding of every op on the way: a few units of the dtype's
precision, relative to the result's size (``_TOLERANCE``).
"""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES
from harness import as_list, build, to_numpy
from op_records import RECORDS, OpRecord, Sample

_NARROW = ("float16", "bfloat16")
_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7}
_ULPS = 4  # roundings allowed, in units of the dtype's epsilon
# records whose composite computes through more roundings than _ULPS covers
_WIDER: dict[str, int] = {}

CASES = [pytest.param(rec, dev, dt, id=f"{rec.name}-{dev}-{dt}")
         for rec in RECORDS for dev in DEVICES for dt in _NARROW
         if dt in nd.get_device(dev).dtypes]


def _rounded(sample: Sample, dtype: str) -> Sample:
    """``sample`` with its float arrays rounded to ``dtype`` (by PyTorch) and back."""
    narrow = getattr(torch, dtype)

    def rnd(a: object) -> object:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            return torch.from_numpy(a).to(narrow).to(torch.float64).numpy()
        return a

    return Sample(tuple(rnd(a) for a in sample.args), sample.kwargs, sample.smooth)


def _close(got: np.ndarray, want: np.ndarray, dtype: str, ulps: int, what: str) -> None:
    tol = ulps * _EPS[dtype]
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale,
                               err_msg=what)


@pytest.mark.parametrize("rec, device, dtype", CASES)
def test_values_and_gradients_in_narrow_floats(rec: OpRecord, device: str, dtype: str) -> None:
    if rec.kernel and not nd.get_device(device).kernel_dtypes.get(rec.kernel):
        pytest.skip(f"device {device} has no optional {rec.kernel}")
    ulps = _WIDER.get(rec.name, _ULPS)
    for sample in rec.samples:
        ours, theirs, leaves = build(rec, _rounded(sample, dtype), device, dtype)
        got = as_list(rec.fn(*ours, **sample.kwargs))
        want = as_list(rec.ref(*theirs, **sample.kwargs))
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape), f"{rec.name}: shape {g.shape} != {tuple(w.shape)}"
            if w.dtype in (torch.int64, torch.bool):
                np.testing.assert_array_equal(to_numpy(g), to_numpy(w), err_msg=rec.name)
                continue
            assert g.dtype == (rec.out_dtype or dtype), f"{rec.name}: dtype {g.dtype}"
            _close(to_numpy(g), to_numpy(w), dtype, ulps, f"{rec.name} values")
        if not leaves:
            continue
        rng = np.random.default_rng(0)
        cotangents = [torch.from_numpy(rng.standard_normal(w.shape)).to(getattr(torch, dtype))
                      .to(torch.float64) for w in want]
        ag.backward(got, [ag.tensor(u.numpy(), dtype=dtype, device=device) for u in cotangents])
        torch.autograd.backward(want, cotangents)
        for k, (x, t) in enumerate(leaves):
            assert x.grad is not None, f"{rec.name}: input {k} got no gradient"
            assert x.grad.dtype == dtype
            expected = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
            _close(to_numpy(x.grad), expected, dtype, ulps, f"{rec.name} gradient of input {k}")


@pytest.mark.parametrize("device", [d for d in DEVICES if "bfloat16" in nd.get_device(d).dtypes])
def test_conversions_round_as_pytorch(device: str) -> None:
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 9, 2000),
                             [0.0, -0.0, 65504.0, 65520.0, 1e5, 3e-8, np.inf, -np.inf]])
    x = ag.tensor(values, dtype="float64", device=device)
    for dtype in _NARROW:
        t = torch.from_numpy(values).to(getattr(torch, dtype))
        for source in ("float64", "float32"):
            got = x.to(source).to(dtype)
            want = t if source == "float64" else \
                torch.from_numpy(values).float().to(getattr(torch, dtype))
            assert got.dtype == dtype and got.element_size() == 2
            np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
        np.testing.assert_array_equal(x.to(dtype).long().numpy()[:2000],
                                      t.long().numpy()[:2000])
        assert x.to(dtype).to("bool").numpy().tolist() == t.bool().numpy().tolist()
    half = x.half()
    assert half.dtype == ag.float16 and half.numpy().dtype == np.float16
    assert x.bfloat16().numpy().dtype == np.float32  # numpy has no bfloat16
    assert ag.promote_types("float16", "bfloat16") == ag.float32
    assert (x.half() + x.bfloat16()).dtype == ag.float32
    assert (x.half() * 2.5).dtype == ag.float16 and (x.long()[:3] + x.half()[:3]).dtype == "float16"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(dtype: str) -> None:
    ours, theirs = ag.finfo(dtype), torch.finfo(getattr(torch, dtype))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, field) == getattr(theirs, field), field
    with pytest.raises(nd.DTypeError, match="finfo: int64 is not a floating point dtype"):
        ag.finfo("int64")


@pytest.mark.parametrize("device", [d for d in DEVICES if "bfloat16" in nd.get_device(d).dtypes])
@pytest.mark.parametrize("dtype", _NARROW)
def test_compiled_narrow_steps_replay_as_eager(device: str, dtype: str) -> None:
    """A capture records the float32 fallback's conversions too: replays give eager's
    bits, gradients included (its float32 copies live only during each call)."""
    rng = np.random.default_rng(0)

    def step(a: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
        return ((a @ w).relu() * 2.0 + 1.0).softmax(-1).sum()

    compiled = ag.compile(step)
    w = ag.tensor(rng.standard_normal((8, 3)), dtype=dtype, device=device, requires_grad=True)
    for _ in range(3):
        a = ag.tensor(rng.standard_normal((4, 8)), dtype=dtype, device=device)
        got = compiled(a, w)
        got.backward()
        grad, w.grad = w.grad, None
        want = step(a, w)
        want.backward()
        assert got.dtype == dtype and grad.dtype == dtype
        np.testing.assert_array_equal(got.detach().float().numpy(),
                                      want.detach().float().numpy())
        np.testing.assert_array_equal(grad.float().numpy(), w.grad.float().numpy())
        w.grad = None
    assert compiled.stats["replays"] == 2, compiled.stats
