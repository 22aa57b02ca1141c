"""The recurrent cell kernels (optional, v2.1) against the numpy reference.

Each kernel runs one step of a 3-step layer on random inputs (a middle step, so
the blocks before and after must stay untouched, and the last one), on odd
hidden sizes no vector width divides, batch 1, saturating inputs, and the
documented errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import OPTIONAL
from lamina.ndarray.conformance._harness import assert_close, put
from lamina.ndarray.conformance._rnn_cases import ARGS, RNN_KERNELS, rnn_buffers, run_rnn

STEPS = 3


def _need(backend, kernel):
    assert kernel in OPTIONAL
    if not hasattr(backend, kernel):
        pytest.skip(f"backend has no {kernel} (optional)")


@pytest.mark.parametrize("scale", [3.0, 40.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("step", [1, STEPS - 1])
@pytest.mark.parametrize("batch,hidden", [(1, 1), (2, 5), (3, 19), (4, 64)], ids=str)
@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell(lamina_backend, lamina_reference, lamina_float, kernel, batch, hidden, step,
                  scale):
    _need(lamina_backend, kernel)
    bufs = rnn_buffers(kernel, lamina_float, STEPS, batch, hidden, seed=hidden, scale=scale)
    want = run_rnn(lamina_reference, kernel, bufs, step, batch, hidden)
    got = run_rnn(lamina_backend, kernel, bufs, step, batch, hidden)
    for name in ARGS[kernel]:
        # A few roundings of exp and products: "reduce"'s tolerance.
        assert_close(got[name], want[name], "reduce", f"{kernel} {name}")


@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_saturates_without_nan(lamina_backend, lamina_float, kernel):
    _need(lamina_backend, kernel)
    bufs = rnn_buffers(kernel, lamina_float, 2, 2, 7, seed=1, scale=1e4)
    got = run_rnn(lamina_backend, kernel, bufs, 1, 2, 7)
    assert all(np.isfinite(a).all() for a in got.values()), kernel


@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_rejects_a_buffer_too_small_for_the_step(lamina_backend, lamina_float, kernel):
    _need(lamina_backend, kernel)
    bufs = {n: put(lamina_backend, a) for n, a in
            rnn_buffers(kernel, lamina_float, 2, 2, 3).items()}
    with pytest.raises(ValueError, match=f"{kernel}: .* needs"):
        getattr(lamina_backend, kernel)(*(bufs[n] for n in ARGS[kernel]), 2, 2, 3)


@pytest.mark.parametrize("kernel", RNN_KERNELS)
def test_rnn_cell_rejects_mixed_dtypes(lamina_backend, kernel):
    _need(lamina_backend, kernel)
    if "float64" not in lamina_backend.dtypes:
        pytest.skip("backend lists no float64")
    arrays = rnn_buffers(kernel, "float32", 2, 2, 3)
    first = ARGS[kernel][0]
    arrays[first] = arrays[first].astype("float64")
    bufs = [put(lamina_backend, arrays[n]) for n in ARGS[kernel]]
    with pytest.raises(TypeError, match=kernel):
        getattr(lamina_backend, kernel)(*bufs, 0, 2, 3)
