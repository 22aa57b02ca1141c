"""Every op record against PyTorch (CPU, float64): values and gradients, on every device."""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import device_dtypes
from harness import TOLERANCE, as_list, build, to_numpy
from op_records import RECORDS, OpRecord

CASES = [pytest.param(rec, dev, dt, id=f"{rec.name}-{dev}-{dt}")
         for rec in RECORDS for dev, dt in device_dtypes()]


def _check_sample(rec: OpRecord, sample, device: str, dtype: str, noncontig: bool) -> None:
    tol = rec.tolerance.get(dtype, TOLERANCE[dtype])
    ours, theirs, leaves = build(rec, sample, device, dtype, noncontig)
    got = as_list(rec.fn(*ours, **sample.kwargs))
    want = as_list(rec.ref(*theirs, **sample.kwargs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape), f"{rec.name}: shape {g.shape} != {tuple(w.shape)}"
        expected_dtype = "int64" if w.dtype == torch.int64 else rec.out_dtype or dtype
        if w.dtype == torch.bool:  # a v1.0 backend without bool gives 1/0 in the dtype
            expected_dtype = "bool" if "bool" in nd.get_device(device).dtypes else dtype
            w = w.to(torch.float64)
        assert g.dtype == expected_dtype, f"{rec.name}: dtype {g.dtype} != {expected_dtype}"
        assert g.device == ag.tensor(0.0, device=device).device
        np.testing.assert_allclose(to_numpy(g).astype(np.float64) if g.dtype == "bool"
                                   else to_numpy(g), to_numpy(w), **tol,
                                   err_msg=f"{rec.name} values")
        assert g.requires_grad == (rec.differentiable and bool(leaves))
    if not leaves:
        return
    rng = np.random.default_rng(0)
    cotangents = [rng.standard_normal(w.shape) for w in want]
    ag.backward(got, [ag.tensor(u, dtype=dtype, device=device) for u in cotangents])
    torch.autograd.backward(want, [torch.tensor(u) for u in cotangents])
    for k, (x, t) in enumerate(leaves):
        expected = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        assert x.grad is not None, f"{rec.name}: input {k} got no gradient"
        assert x.grad.shape == x.shape and x.grad.dtype == x.dtype
        np.testing.assert_allclose(to_numpy(x.grad), expected, **tol,
                                   err_msg=f"{rec.name} gradient of input {k}")


@pytest.mark.parametrize("rec, device, dtype", CASES)
def test_values_and_gradients_match_torch(rec: OpRecord, device: str, dtype: str) -> None:
    if rec.kernel and not nd.get_device(device).kernel_dtypes.get(rec.kernel):
        pytest.skip(f"device {device} has no optional {rec.kernel}")
    for sample in rec.samples:
        _check_sample(rec, sample, device, dtype, noncontig=False)
        if any(isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.ndim >= 2
               for a in sample.args):
            _check_sample(rec, sample, device, dtype, noncontig=True)


ERROR_CASES = [pytest.param(rec, err, id=f"{rec.name}-{i}")
               for rec in RECORDS for i, err in enumerate(rec.errors)]


@pytest.mark.parametrize("rec, err", ERROR_CASES)
def test_error_inputs_raise_with_op_name(rec: OpRecord, err) -> None:
    ours, _, _ = build(rec, err.sample, "numpy", "float32")
    with pytest.raises(err.error, match=err.match):
        rec.fn(*ours, **err.sample.kwargs)


def test_dropout_scales_kept_elements_and_routes_gradient() -> None:
    ag.manual_seed(0)
    x = ag.ones(1000, requires_grad=True)
    y = ag.dropout(x, p=0.25)
    kept = y.detach().numpy() != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75, rtol=1e-6)
    assert (ag.dropout(x, p=1.0).detach().numpy() == 0).all()
