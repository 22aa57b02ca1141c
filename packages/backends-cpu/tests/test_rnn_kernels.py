"""The fused recurrent cells (rnn.cc) against the numpy reference, on every
instruction-set path this CPU has: random and saturating inputs, hidden sizes
around the SIMD widths, batch 1, both float dtypes; a batch large enough to
run on several threads gives the single-thread result bit for bit; and the
argument errors."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from conftest import FLOATS, TOL, cpu, ref
from lamina.ndarray.conformance._rnn_cases import ARGS, RNN_KERNELS, rnn_buffers, run_rnn

ORDER = ("generic", "avx2", "avx512")
AVAILABLE = ORDER[: ORDER.index(cpu.cpu_isa()) + 1]


@pytest.fixture(params=ORDER)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param not in AVAILABLE:
        pytest.skip(f"this CPU (or build) runs up to {cpu.cpu_isa()}, not {request.param}")
    old = cpu.isa()
    cpu.set_isa(request.param)
    try:
        yield request.param
    finally:
        cpu.set_isa(old)


def _compare(kernel: str, dtype: str, steps: int, batch: int, hidden: int, step: int,
             scale: float) -> None:
    bufs = rnn_buffers(kernel, dtype, steps, batch, hidden, seed=batch + hidden, scale=scale)
    want = run_rnn(ref, kernel, bufs, step, batch, hidden)
    got = run_rnn(cpu, kernel, bufs, step, batch, hidden)
    for name in ARGS[kernel]:
        np.testing.assert_allclose(got[name], want[name], **TOL[dtype],
                                   err_msg=f"{kernel} {name} ({cpu.isa()})")


@pytest.mark.parametrize("scale", [3.0, 30.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("batch,hidden", [(1, 1), (1, 17), (3, 7), (2, 31), (5, 200)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_matches_numpy_on_every_isa(isa: str, kernel: str, dtype: str, batch: int,
                                             hidden: int, scale: float) -> None:
    _compare(kernel, dtype, 3, batch, hidden, 1, scale)


@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_saturates_to_exact_gate_values(kernel: str) -> None:
    # |x| far past float32's exp range: the gates are exactly 0 or 1, no NaN or inf.
    bufs = rnn_buffers(kernel, "float32", 1, 2, 9, seed=3, scale=1e4)
    got = run_rnn(cpu, kernel, bufs, 0, 2, 9)
    assert all(np.isfinite(a).all() for a in got.values())
    if kernel == "lstm_cell":
        acts = got["acts"][0]
        assert set(np.unique(acts[:, :18])) <= {0.0, 1.0}
        assert set(np.unique(acts[:, 18:27])) <= {-1.0, 1.0}


@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_threads_give_the_single_thread_result(kernel: str) -> None:
    old = cpu.num_threads()
    bufs = rnn_buffers(kernel, "float32", 2, 64, 1031, seed=5)  # > 2 * the parallel grain
    try:
        cpu.set_num_threads(1)
        one = run_rnn(cpu, kernel, bufs, 1, 64, 1031)
        cpu.set_num_threads(2)
        two = run_rnn(cpu, kernel, bufs, 1, 64, 1031)
    finally:
        cpu.set_num_threads(old)
    for name in ARGS[kernel]:
        np.testing.assert_array_equal(two[name], one[name], err_msg=f"{kernel} {name}")


def test_rnn_cell_errors_name_the_kernel_and_the_buffer() -> None:
    bufs = rnn_buffers("gru_cell", "float32", 2, 2, 3)
    bufs["b_hh"] = bufs["b_hh"][:5]
    with pytest.raises(ValueError, match="gru_cell: b_hh has 5 elements.* needs 9"):
        run_rnn(cpu, "gru_cell", bufs, 0, 2, 3)
    with pytest.raises(ValueError, match="lstm_cell: step must be >= 0, got -1"):
        run_rnn(cpu, "lstm_cell", rnn_buffers("lstm_cell", "float32", 2, 2, 3), -1, 2, 3)
    bufs = rnn_buffers("lstm_cell_backward", "float64", 2, 2, 3)
    bufs["dc"] = bufs["dc"].astype("float32")
    with pytest.raises(TypeError, match="lstm_cell_backward"):
        run_rnn(cpu, "lstm_cell_backward", bufs, 0, 2, 3)
    ints = {k: v.astype("int64") for k, v in rnn_buffers("gru_cell", "float32", 1, 1, 2).items()}
    with pytest.raises(TypeError, match="gru_cell"):
        run_rnn(cpu, "gru_cell", ints, 0, 1, 2)


def test_rnn_kernel_dtypes_are_declared() -> None:
    for kernel in RNN_KERNELS:
        assert tuple(cpu.kernel_dtypes[kernel]) == FLOATS
