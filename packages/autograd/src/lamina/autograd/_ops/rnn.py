"""The time loop of one LSTM layer as a single op, ``lstm_layer``.

Written as many small ops, an LSTM step is ~25 graph nodes (a matmul, gate
slices, three sigmoids, two tanhs, products and sums) and its training step is
bound by per-op overhead. ``lstm_layer`` runs the whole recurrence of one layer
in one node: the forward loops over time on NDArrays, and so does the
backward, backpropagation through time written out (``_bptt``), with
everything that does not depend on the recurrence computed for all
timesteps at once.

The input projection ``x_t @ W_ih.T + b`` is not part of the op: the layer
computes it for every timestep with one matmul before calling it.

Where the device has the backend's fused cell kernels for the dtype
(``nd.has_recurrent_cells``, decided once per forward), each step is instead
the recurrent GEMM and one ``lstm_cell`` kernel, and the first-order backward
one GEMM and one ``lstm_cell_backward`` (``nd.lstm_recurrence``): the same
math, operation for operation, without a dozen elementwise passes per step.

Layout (PyTorch's): the 4H gate columns are ordered i, f, g, o::

    i, f, o = sigmoid(gates[i, f, o]);  g = tanh(gates[g])
    c_t = f * c_{t-1} + i * g;           h_t = o * tanh(c_t)

The op has one backward rule, :func:`_bptt`, written with operations that
Tensor and NDArray share. A first-order backward runs it on NDArrays: the
gate activations the forward saved, no graph and no Tensor per step. With
``create_graph`` (gradients of gradients) it runs on Tensors, with the states
and activations recomputed as Tensor functions of the inputs
(:func:`_recorded_states`), so the rule records and higher-order gradients
are exact. :func:`lstm_layer_reference` stays as a test oracle only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor_base import Tensor, TensorBase
from ._util import as_tensors
from .elementwise import sigmoid
from .shape import cat, stack


def _gate_affine(h: int, like: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """(1, 4H) rows k, m, b with ``act = m / (1 + exp(k * gates)) + b``.

    That is sigmoid on the i, f, o columns (k = -1, m = 1, b = 0) and
    tanh(x) = 2 sigmoid(2x) - 1 on g (k = -2, m = 2, b = -1): all four
    activations in five cheap vectorised kernels (exp is, tanh is not).
    """
    def row(i: float, g: float) -> NDArray:
        return nd.array([[i] * (2 * h) + [g] * h + [i] * h], dtype=like.dtype,
                        device=like.device)

    return row(-1.0, -2.0), row(1.0, 2.0), row(0.0, -1.0)


def _tanh(x: NDArray) -> NDArray:
    """tanh as 2 / (1 + exp(-2x)) - 1 (saturates correctly: exp overflow gives -1)."""
    return 2.0 / ((x * -2.0).exp() + 1.0) - 1.0


class LSTMLayer(Function):
    """``(xp (L, N, 4H), h0 (N, H), c0 (N, H), w_hh (4H, H))`` -> ``(L, N, 2H)``.

    The output holds ``h_t`` in its first H columns and ``c_t`` in the last H.
    """

    name = "lstm_layer"
    save_inputs = True
    save_output = True
    # The states [h | c] of every step, block 0 the initial ones (L+1, N, 2H), kept when
    # forward ran the backend's fused cell kernels: backward then runs them too.
    state: NDArray | None = None

    def forward(self, xp: NDArray, h0: NDArray, c0: NDArray, w_hh: NDArray) -> NDArray:
        _check_shapes(xp.shape, h0.shape, c0.shape, w_hh.shape)
        if nd.has_recurrent_cells("lstm", xp, h0, c0, w_hh):
            self.state, self.acts, self.tanh_c = nd.lstm_recurrence(xp, h0, c0, w_hh)
            return self.state[1:]
        steps, _, g4 = xp.shape
        hidden = g4 // 4
        w_t = w_hh.transpose(0, 1).compact()
        # Compact (N, 4H) rows: a broadcast operand would be compacted at every step.
        k, m, b = (r.broadcast_to(xp.shape[1], g4).compact() for r in _gate_affine(hidden, xp))
        h, c = h0, c0
        acts, hs, cs, tcs = [], [], [], []
        for t in range(steps):
            gates = xp[t] + h @ w_t
            a = m / ((gates * k).exp() + 1.0) + b
            c = a[:, hidden:2 * hidden] * c + a[:, :hidden] * a[:, 2 * hidden:3 * hidden]
            tc = _tanh(c)
            h = a[:, 3 * hidden:] * tc
            acts.append(a)
            hs.append(h)
            cs.append(c)
            tcs.append(tc)
        self.acts, self.tanh_c = nd.stack(acts), nd.stack(tcs)
        return nd.concatenate([nd.stack(hs), nd.stack(cs)], axis=2)

    def release(self) -> None:
        super().release()
        self.acts = self.tanh_c = self.state = None

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        xp, h0, c0, w_hh = self.inputs
        if grad_mode._state.enabled:  # create_graph: states that depend on the inputs, recorded
            out, acts, tanh_c = _recorded_states(xp, h0, c0, w_hh)
            grads = _bptt(g, out, acts, tanh_c, h0, c0, w_hh)
        elif self.state is not None:
            grads = nd.lstm_recurrence_backward(g._data, self.state, self.acts, self.tanh_c,
                                                w_hh._data)
        else:
            grads = _bptt(g._data, self._out_data, self.acts, self.tanh_c, h0._data, c0._data,
                          w_hh._data)
        return as_tensors([d if need else None for d, need in zip(grads, self.needs_input_grad)])


def _recorded_states(xp: TensorBase, h0: TensorBase, c0: TensorBase,
                     w_hh: TensorBase) -> tuple[TensorBase, TensorBase, TensorBase]:
    """The forward's output ``[h | c]`` (L, N, 2H), gate activations (L, N, 4H) and
    ``tanh(c)`` (L, N, H) as Tensor functions of the inputs, for a recorded backward."""
    w_t = w_hh.transpose(0, 1)
    h, c = h0, c0
    outs, acts, tcs = [], [], []
    for t in range(xp.shape[0]):
        i, f, gg, o = (xp[t] + h @ w_t).chunk(4, 1)
        i, f, gg, o = sigmoid(i), sigmoid(f), gg.tanh(), sigmoid(o)
        c = f * c + i * gg
        tc = c.tanh()
        h = o * tc
        outs.append(cat([h, c], 1))
        acts.append(cat([i, f, gg, o], 1))
        tcs.append(tc)
    return stack(outs), stack(acts), stack(tcs)


def _bptt(g: Any, out: Any, acts: Any, tanh_c: Any, h0: Any, c0: Any,
          w_hh: Any) -> tuple[Any, Any, Any, Any]:
    """Backpropagation through time of ``LSTMLayer`` for the output gradient ``g``: the
    op's one backward rule, on NDArrays or on Tensors (all arguments of one kind).

    Args:
        g, out: (L, N, 2H), [h | c] columns. acts: (L, N, 4H) gate activations
        i, f, g, o. tanh_c: (L, N, H). h0, c0: (N, H). w_hh: (4H, H).

    Returns:
        Gradients of xp (L, N, 4H), h0, c0 (N, H) and w_hh (4H, H).
    """
    steps, batch, h2 = out.shape
    hidden = h2 // 2
    c_prev = _cat([c0.reshape(1, batch, hidden), out[:-1, :, hidden:]], 0)
    i, f, gg, o = (acts[:, :, k * hidden:(k + 1) * hidden] for k in range(4))
    # d gates_t = [dc * p_ifg, dh * p_o]; dc_t also gets dh_t * k through h_t = o tanh(c_t).
    p_ifg = _cat([gg * i * (1.0 - i), c_prev * f * (1.0 - f),
                  i * (1.0 - gg * gg)], 2).reshape(steps, batch, 3, hidden)
    p_o = tanh_c * o * (1.0 - o)
    k = o * (1.0 - tanh_c * tanh_c)
    f = _compact(f)
    gh, gc = _compact(g[:, :, :hidden]), _compact(g[:, :, hidden:])
    rows = []
    dh, dc_next = gh[steps - 1], None
    for t in range(steps - 1, -1, -1):
        dc = gc[t] + dh * k[t]
        if dc_next is not None:
            dc = dc + dc_next
        row = _cat([(dc.reshape(batch, 1, hidden) * p_ifg[t]).reshape(batch, 3 * hidden),
                    dh * p_o[t]], 1)
        rows.append(row)
        dh_prev = row @ w_hh
        dc_next = dc * f[t]
        dh = dh_prev + gh[t - 1] if t > 0 else dh_prev
    d_xp = _stack(rows[::-1])
    h_prev = _cat([h0.reshape(1, batch, hidden), out[:-1, :, :hidden]], 0)
    d_w = d_xp.reshape(steps * batch, 4 * hidden).transpose(0, 1) @ h_prev.reshape(
        steps * batch, hidden)
    return d_xp, dh, dc_next, d_w


def _cat(parts: Sequence[Any], axis: int) -> Any:
    """Joins NDArrays or Tensors along an existing axis."""
    return nd.concatenate(parts, axis=axis) if isinstance(parts[0], NDArray) else cat(parts, axis)


def _stack(parts: Sequence[Any]) -> Any:
    """Stacks NDArrays or Tensors along a new first axis."""
    return nd.stack(parts) if isinstance(parts[0], NDArray) else stack(parts)


def _compact(a: Any) -> Any:
    """A compact copy of a strided NDArray, so per-step rows are not gathered again at each
    step; a Tensor passes through (a copy would only add a recorded node)."""
    return a.compact() if isinstance(a, NDArray) else a


def _check_shapes(xp: tuple[int, ...], h0: tuple[int, ...], c0: tuple[int, ...],
                  w_hh: tuple[int, ...]) -> None:
    if len(xp) != 3 or xp[2] % 4 or xp[0] == 0:
        raise ShapeError(f"lstm_layer: gate inputs must be (L, N, 4H) with L >= 1, got {xp}")
    steps, batch, g4 = xp
    hidden = g4 // 4
    if h0 != (batch, hidden) or c0 != (batch, hidden) or w_hh != (g4, hidden):
        raise ShapeError(f"lstm_layer: with gate inputs {xp} expected h0 and c0 of shape "
                         f"{(batch, hidden)} and w_hh of shape {(g4, hidden)}, got {h0}, "
                         f"{c0} and {w_hh}")


def lstm_layer(xp: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor) -> Tensor:
    """Runs one LSTM layer over a sequence whose input projections are given.

    Args:
        xp: ``x_t @ W_ih.T + b_ih + b_hh`` for every step, (L, N, 4H), gates i, f, g, o.
        h0: initial hidden state (N, H).
        c0: initial cell state (N, H).
        w_hh: recurrent weight (4H, H).

    Returns:
        (L, N, 2H): ``h_t`` in ``[..., :H]`` and ``c_t`` in ``[..., H:]``.
    """
    return LSTMLayer.apply(xp, h0, c0, w_hh)


def lstm_layer_reference(xp: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor) -> Tensor:
    """``lstm_layer`` built from composite ops, step by step (slow; a test oracle:
    ``lstm_layer``'s backward never calls it)."""
    _check_shapes(xp.shape, h0.shape, c0.shape, w_hh.shape)
    w_t = w_hh.transpose(0, 1)
    h, c = h0, c0
    outs = []
    for t in range(xp.shape[0]):
        i, f, gg, o = (xp[t] + h @ w_t).chunk(4, 1)
        c = sigmoid(f) * c + sigmoid(i) * gg.tanh()
        h = sigmoid(o) * c.tanh()
        outs.append(cat([h, c], 1))
    return stack(outs)


PRIMITIVES = (LSTMLayer,)
COMPOSITES = (lstm_layer_reference,)
