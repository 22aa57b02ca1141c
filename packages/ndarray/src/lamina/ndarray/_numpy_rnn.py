"""The numpy reference backend's recurrent cell kernels (interface v2.1).

One time step of an LSTM or GRU layer, forward and backward, each a single
optional kernel: ``lstm_cell``, ``lstm_cell_backward``, ``gru_cell`` and
``gru_cell_backward``. ``_numpy_backend`` sets them on its backend class.
They are the specification the compiled backends follow operation for
operation (the same products in the same order, in the buffers' dtype):
sigmoid(x) is ``1 / (exp(-x) + 1)`` and tanh(x) ``2 / (exp(-2x) + 1) - 1``,
which saturate to exactly 0, 1 and -1 where exp overflows.

Layouts (N = batch, H = hidden, every buffer compact; docs/backend-interface.md):

- LSTM: ``xp`` (L, N, 4H) gate inputs i, f, g, o; ``hh`` (N, 4H), the
  recurrent term ``h_{t-1} @ W_hh^T``; ``state`` (L+1, N, 2H) rows
  ``[h | c]`` with ``state[0] = [h0 | c0]``; ``acts`` (L, N, 4H) the gate
  activations; ``tanh_c`` (L, N, H).
- GRU: ``xp`` (L, N, 3H) gate inputs r, z, n; ``hh`` (N, 3H) without bias;
  ``b_hh`` (3H,); ``state`` (L+1, N, H) with ``state[0] = h0``; ``gates``
  (L, N, 4H) rows r, z, n, hn (``hn = hh_n + b_n``).

A forward step reads block ``step`` of ``state`` and writes block ``step + 1``.
A backward step reads ``dh_mm``, the recurrent gradient ``d_row[step + 1] @
W_hh`` (zeros at the last step), and updates a carry in place: ``dc`` holds
``dc_{t+1} f_{t+1}`` and leaves with ``dc_t f_t`` (LSTM), ``dh`` holds
``dh_{t+1} z_{t+1}`` and leaves with ``dh_t z_t`` (GRU).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_FLOATS = ("float32", "float64")
KERNEL_DTYPES = dict.fromkeys(
    ("lstm_cell", "lstm_cell_backward", "gru_cell", "gru_cell_backward"), _FLOATS)
"""The dtypes of the recurrent cell kernels."""


def _blocks(op: str, step: int, batch: int, hidden: int, **buffers: tuple[Any, int, int]
            ) -> dict[str, np.ndarray]:
    """Each buffer as a (blocks, batch, cols * hidden) array, after the checks the
    compiled backends make (lamina/kernel_checks.h's ``check_rnn_cell``): one
    dtype, a float one; step, batch and hidden >= 0; sizes large enough.

    ``buffers`` maps a name to ``(buffer, blocks, cols)``; blocks 0 is a bias row.
    """
    dtypes = {b.data.dtype.name for b, _, _ in buffers.values()}
    if len(dtypes) != 1 or not dtypes <= set(_FLOATS):
        raise TypeError(f"{op}: every buffer must have one dtype, float32 or float64, got "
                        f"{', '.join(b.data.dtype.name for b, _, _ in buffers.values())}")
    for name, value in (("step", step), ("batch", batch), ("hidden", hidden)):
        if value < 0:
            raise ValueError(f"{op}: {name} must be >= 0, got {value}")
    out = {}
    for name, (buf, blocks, cols) in buffers.items():
        rows = (blocks, batch) if blocks else (1,)
        need = int(np.prod(rows)) * cols * hidden
        if buf.data.size < need:
            raise ValueError(f"{op}: {name} has {buf.data.size} elements, step {step} of batch "
                             f"{batch} with hidden {hidden} needs {need}")
        out[name] = buf.data[:need].reshape(*rows, cols * hidden)
    return out


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf: the sigmoid is 0
        return 1 / (np.exp(-x) + 1)


def _tanh(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 2 / (np.exp(x * -2) + 1) - 1


def lstm_cell(xp: Any, hh: Any, state: Any, acts: Any, tanh_c: Any, step: int, batch: int,
              hidden: int) -> None:
    """``state[step + 1] = [h_t | c_t]``, ``acts[step]`` and ``tanh_c[step]`` from
    ``gates = xp[step] + hh`` and ``c_{t-1} = state[step, :, H:]``."""
    v = _blocks("lstm_cell", step, batch, hidden, xp=(xp, step + 1, 4), hh=(hh, 1, 4),
                state=(state, step + 2, 2), acts=(acts, step + 1, 4),
                tanh_c=(tanh_c, step + 1, 1))
    n = hidden
    gates = v["xp"][step] + v["hh"][0]
    a = v["acts"][step]
    a[:, :2 * n] = _sigmoid(gates[:, :2 * n])
    a[:, 2 * n:3 * n] = _tanh(gates[:, 2 * n:3 * n])
    a[:, 3 * n:] = _sigmoid(gates[:, 3 * n:])
    i, f, g, o = (a[:, k * n:(k + 1) * n] for k in range(4))
    c = f * v["state"][step, :, n:] + i * g
    tc = v["tanh_c"][step]
    tc[...] = _tanh(c)
    v["state"][step + 1, :, n:] = c
    v["state"][step + 1, :, :n] = o * tc


def lstm_cell_backward(g: Any, dh_mm: Any, acts: Any, state: Any, tanh_c: Any, dc: Any,
                       d_gates: Any, step: int, batch: int, hidden: int) -> None:
    """``d_gates[step]``, the gradient of step's gate inputs, from the output
    gradient ``g[step]`` (columns ``[dh | dc]``) and ``dh_mm``; ``dc`` carries
    ``dc_{t+1} f_{t+1}`` in and ``dc_t f_t`` out."""
    v = _blocks("lstm_cell_backward", step, batch, hidden, g=(g, step + 1, 2),
                dh_mm=(dh_mm, 1, 1), acts=(acts, step + 1, 4), state=(state, step + 2, 2),
                tanh_c=(tanh_c, step + 1, 1), dc=(dc, 1, 1), d_gates=(d_gates, step + 1, 4))
    n = hidden
    i, f, gg, o = (v["acts"][step, :, k * n:(k + 1) * n] for k in range(4))
    c_prev, tc = v["state"][step, :, n:], v["tanh_c"][step]
    dh = v["dh_mm"][0] + v["g"][step, :, :n]
    d = (v["g"][step, :, n:] + dh * (o * (1 - tc * tc))) + v["dc"][0]
    row = v["d_gates"][step]
    row[:, :n] = d * (gg * i * (1 - i))
    row[:, n:2 * n] = d * (c_prev * f * (1 - f))
    row[:, 2 * n:3 * n] = d * (i * (1 - gg * gg))
    row[:, 3 * n:] = dh * (tc * o * (1 - o))
    v["dc"][0] = d * f


def gru_cell(xp: Any, hh: Any, b_hh: Any, state: Any, gates: Any, step: int, batch: int,
             hidden: int) -> None:
    """``state[step + 1] = h_t`` and ``gates[step] = [r, z, n, hn]`` from ``xp[step]``,
    ``hh`` and ``b_hh``, with ``h_{t-1} = state[step]``."""
    v = _blocks("gru_cell", step, batch, hidden, xp=(xp, step + 1, 3), hh=(hh, 1, 3),
                b_hh=(b_hh, 0, 3), state=(state, step + 2, 1), gates=(gates, step + 1, 4))
    n = hidden
    x, u, b = v["xp"][step], v["hh"][0], v["b_hh"][0]
    out = v["gates"][step]
    rz = _sigmoid((x[:, :2 * n] + b[:2 * n]) + u[:, :2 * n])
    hn = u[:, 2 * n:] + b[2 * n:]
    cand = _tanh(x[:, 2 * n:] + rz[:, :n] * hn)
    out[:, :2 * n], out[:, 2 * n:3 * n], out[:, 3 * n:] = rz, cand, hn
    v["state"][step + 1] = cand + rz[:, n:] * (v["state"][step] - cand)


def gru_cell_backward(g: Any, dh_mm: Any, gates: Any, state: Any, dh: Any, d_hh: Any,
                      d_xp: Any, step: int, batch: int, hidden: int) -> None:
    """``d_hh[step]`` (the gradient of ``hh + b_hh``) and ``d_xp[step]`` from the
    output gradient ``g[step]`` and ``dh_mm``; ``dh`` carries ``dh_{t+1} z_{t+1}``
    in and ``dh_t z_t`` out."""
    v = _blocks("gru_cell_backward", step, batch, hidden, g=(g, step + 1, 1),
                dh_mm=(dh_mm, 1, 1), gates=(gates, step + 1, 4), state=(state, step + 2, 1),
                dh=(dh, 1, 1), d_hh=(d_hh, step + 1, 3), d_xp=(d_xp, step + 1, 3))
    n = hidden
    r, z, cand, hn = (v["gates"][step, :, k * n:(k + 1) * n] for k in range(4))
    d = (v["dh"][0] + v["dh_mm"][0]) + v["g"][step]
    q = (1 - z) * (1 - cand * cand)
    row = v["d_hh"][step]
    row[:, :n] = d * (q * hn * r * (1 - r))
    row[:, n:2 * n] = d * ((v["state"][step] - cand) * z * (1 - z))
    row[:, 2 * n:] = d * (q * r)
    v["d_xp"][step, :, :2 * n] = row[:, :2 * n]
    v["d_xp"][step, :, 2 * n:] = d * q
    v["dh"][0] = d * z
