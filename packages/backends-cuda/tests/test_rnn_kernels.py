"""The fused recurrent cells (rnn.cu) against the numpy reference (marker ``cuda``:
a GPU or the CPU emulation build): random and saturating inputs, hidden sizes
that leave a partial block, batch 1, a step large enough for a multi-block
grid, both float dtypes, and the argument errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FLOATS, TOL, cuda, ref
from lamina.ndarray.conformance._rnn_cases import ARGS, RNN_KERNELS, rnn_buffers, run_rnn

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("scale", [3.0, 30.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("batch,hidden", [(1, 1), (1, 17), (3, 7), (5, 200), (3, 700)],
                         ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_matches_numpy(kernel: str, dtype: str, batch: int, hidden: int,
                                scale: float) -> None:
    bufs = rnn_buffers(kernel, dtype, 3, batch, hidden, seed=batch + hidden, scale=scale)
    want = run_rnn(ref, kernel, bufs, 1, batch, hidden)
    got = run_rnn(cuda, kernel, bufs, 1, batch, hidden)
    for name in ARGS[kernel]:
        # CUDA's expf and contracted multiply-adds differ from numpy by a few ulp.
        np.testing.assert_allclose(got[name], want[name], **TOL[dtype],
                                   err_msg=f"{kernel} {name}")


@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_saturates_without_nan(kernel: str) -> None:
    bufs = rnn_buffers(kernel, "float32", 1, 2, 9, seed=3, scale=1e4)
    got = run_rnn(cuda, kernel, bufs, 0, 2, 9)
    assert all(np.isfinite(a).all() for a in got.values())
    if kernel == "gru_cell":
        assert set(np.unique(got["gates"][0, :, :18])) <= {0.0, 1.0}


def test_rnn_cell_errors_name_the_kernel_and_the_buffer() -> None:
    bufs = rnn_buffers("lstm_cell_backward", "float32", 2, 2, 3)
    bufs["d_gates"] = bufs["d_gates"][:1]
    with pytest.raises(ValueError, match="lstm_cell_backward: d_gates has 24 elements"):
        run_rnn(cuda, "lstm_cell_backward", bufs, 1, 2, 3)
    bufs = rnn_buffers("gru_cell_backward", "float64", 2, 2, 3)
    bufs["g"] = bufs["g"].astype("float32")
    with pytest.raises(TypeError, match="gru_cell_backward"):
        run_rnn(cuda, "gru_cell_backward", bufs, 0, 2, 3)


def test_rnn_kernel_dtypes_are_declared() -> None:
    for kernel in RNN_KERNELS:
        assert tuple(cuda.kernel_dtypes[kernel]) == FLOATS
