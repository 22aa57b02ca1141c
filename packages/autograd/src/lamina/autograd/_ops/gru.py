"""The time loop of one GRU layer as a single op, ``gru_layer``.

The GRU counterpart of ``lstm_layer`` (see :mod:`.rnn`, whose design and helpers it
shares): a GRU step written as small ops is ~20 graph nodes, so one layer's whole
recurrence runs here in one node, forward and backward (``_bptt``) looping over
time on NDArrays, with everything that does not depend on the recurrence computed
for all timesteps at once.

The input projection ``x_t @ W_ih.T + b_ih`` is not part of the op (the layer
computes it for every step with one matmul), but ``b_hh`` is: its n part sits
inside the reset gate's product, so it cannot fold into the input projection.

Layout (PyTorch's): the 3H gate columns are ordered r, z, n; with
``hp = h_{t-1} @ W_hh.T + b_hh``::

    r, z = sigmoid(xp[r, z] + hp[r, z]);   n = tanh(xp[n] + r * hp[n])
    h_t = (1 - z) * n + z * h_{t-1}

Where the device has the fused ``gru_cell`` kernels for the dtype, forward and the
first-order backward run them instead (``nd.gru_recurrence``; see :mod:`.rnn`).
One backward rule, :func:`_bptt`: on NDArrays with the saved gates for a
first-order backward; with ``create_graph`` on Tensors, with the gates recomputed
as Tensor functions of the inputs (:func:`_recorded_states`), so that
higher-order gradients are exact. :func:`gru_layer_reference` is a test oracle only.
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor_base import Tensor, TensorBase
from ._util import as_tensors
from .elementwise import sigmoid
from .rnn import _cat, _compact, _stack, _tanh
from .shape import stack


class GRULayer(Function):
    """``(xp (L, N, 3H), h0 (N, H), w_hh (3H, H), b_hh (3H,))`` -> ``h_t`` for every t,
    (L, N, H)."""

    name = "gru_layer"
    save_inputs = True
    save_output = True
    # Saved by forward for a first-order backward: gates r, z, candidates n, hp's n part.
    rz: NDArray | None = None
    n: NDArray | None = None
    hn: NDArray | None = None
    # Saved instead when forward ran the backend's fused cell kernels: the states h_t of
    # every step, block 0 h0 (L+1, N, H), and the gates r, z, n, hn (L, N, 4H).
    state: NDArray | None = None
    gates: NDArray | None = None

    def forward(self, xp: NDArray, h0: NDArray, w_hh: NDArray, b_hh: NDArray) -> NDArray:
        _check_shapes(xp.shape, h0.shape, w_hh.shape, b_hh.shape)
        if nd.has_recurrent_cells("gru", xp, h0, w_hh, b_hh):
            self.state, self.gates = nd.gru_recurrence(xp, h0, w_hh, b_hh)
            return self.state[1:]
        steps, batch, g3 = xp.shape
        hidden = g3 // 3
        w_t = w_hh.transpose(0, 1).compact()
        # b_hh's r, z part folds into the input projection (once, for all steps);
        # compact per-step operands so no step gathers a strided view again.
        xp_rz = (xp[:, :, :2 * hidden] + b_hh[:2 * hidden]).compact()
        xp_n = xp[:, :, 2 * hidden:].compact()
        b_n = b_hh[2 * hidden:].broadcast_to(batch, hidden).compact()
        h = h0
        rzs, ns, hns, hs = [], [], [], []
        for t in range(steps):
            hp = h @ w_t
            rz = 1.0 / ((-(xp_rz[t] + hp[:, :2 * hidden])).exp() + 1.0)
            hn = hp[:, 2 * hidden:] + b_n
            n = _tanh(xp_n[t] + rz[:, :hidden] * hn)
            h = n + rz[:, hidden:] * (h - n)
            rzs.append(rz)
            ns.append(n)
            hns.append(hn)
            hs.append(h)
        self.rz, self.n, self.hn = nd.stack(rzs), nd.stack(ns), nd.stack(hns)
        return nd.stack(hs)

    def release(self) -> None:
        super().release()
        self.rz = self.n = self.hn = self.state = self.gates = None

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        xp, h0, w_hh, b_hh = self.inputs
        if grad_mode._state.enabled:  # create_graph: states that depend on the inputs, recorded
            out, rz, n, hn = _recorded_states(xp, h0, w_hh, b_hh)
            grads = _bptt(g, out, rz, n, hn, h0, w_hh)
        elif self.state is not None:
            grads = nd.gru_recurrence_backward(g._data, self.state, self.gates, w_hh._data)
        else:
            grads = _bptt(g._data, self._out_data, self.rz, self.n, self.hn, h0._data,
                          w_hh._data)
        return as_tensors([d if need else None for d, need in zip(grads, self.needs_input_grad)])


def _recorded_states(xp: TensorBase, h0: TensorBase, w_hh: TensorBase, b_hh: TensorBase
                     ) -> tuple[TensorBase, TensorBase, TensorBase, TensorBase]:
    """The forward's output (L, N, H), gates r, z (L, N, 2H), candidates n (L, N, H) and
    ``h_{t-1} @ W_hn.T + b_hn`` (L, N, H) as Tensor functions of the inputs."""
    hidden = h0.shape[1]
    w_t = w_hh.transpose(0, 1)
    h = h0
    hs, rzs, ns, hns = [], [], [], []
    for t in range(xp.shape[0]):
        hp = h @ w_t + b_hh
        rz = sigmoid(xp[t, :, :2 * hidden] + hp[:, :2 * hidden])
        hn = hp[:, 2 * hidden:]
        n = (xp[t, :, 2 * hidden:] + rz[:, :hidden] * hn).tanh()
        h = n + rz[:, hidden:] * (h - n)
        hs.append(h)
        rzs.append(rz)
        ns.append(n)
        hns.append(hn)
    return stack(hs), stack(rzs), stack(ns), stack(hns)


def _bptt(g: Any, out: Any, rz: Any, n: Any, hn: Any, h0: Any,
          w_hh: Any) -> tuple[Any, Any, Any, Any]:
    """Backpropagation through time of ``GRULayer`` for the output gradient ``g``: the
    op's one backward rule, on NDArrays or on Tensors (all arguments of one kind).

    Args:
        g, out: (L, N, H). rz: (L, N, 2H) gates r, z. n: (L, N, H) candidates.
        hn: (L, N, H), ``h_{t-1} @ W_hn.T + b_hn``. h0: (N, H). w_hh: (3H, H).

    Returns:
        Gradients of xp (L, N, 3H), h0 (N, H), w_hh (3H, H) and b_hh (3H,).
    """
    steps, batch, hidden = out.shape
    h_prev = _cat([h0.reshape(1, batch, hidden), out[:-1]], 0)
    r, z = rz[:, :, :hidden], rz[:, :, hidden:]
    q = (1.0 - z) * (1.0 - n * n)  # d (n's pre-activation) / d h_t
    # d hp_t = dh_t * p_t: columns r, z and n of h_{t-1} @ W_hh.T + b_hh.
    p = _cat([q * hn * r * (1.0 - r), (h_prev - n) * z * (1.0 - z), q * r],
             2).reshape(steps, batch, 3, hidden)
    z, g = _compact(z), _compact(g)
    rows, dhs = [], []
    dh = g[steps - 1]
    for t in range(steps - 1, -1, -1):
        row = (dh.reshape(batch, 1, hidden) * p[t]).reshape(batch, 3 * hidden)
        rows.append(row)
        dhs.append(dh)
        dh = dh * z[t] + row @ w_hh
        if t > 0:
            dh = dh + g[t - 1]
    d_hp = _stack(rows[::-1])
    d_xp = _cat([d_hp[:, :, :2 * hidden], _stack(dhs[::-1]) * q], 2)
    flat = d_hp.reshape(steps * batch, 3 * hidden)
    d_w = flat.transpose(0, 1) @ h_prev.reshape(steps * batch, hidden)
    return d_xp, dh, d_w, flat.sum(0)


def _check_shapes(xp: tuple[int, ...], h0: tuple[int, ...], w_hh: tuple[int, ...],
                  b_hh: tuple[int, ...]) -> None:
    if len(xp) != 3 or xp[2] % 3 or xp[0] == 0:
        raise ShapeError(f"gru_layer: gate inputs must be (L, N, 3H) with L >= 1, got {xp}")
    _, batch, g3 = xp
    hidden = g3 // 3
    if h0 != (batch, hidden) or w_hh != (g3, hidden) or b_hh != (g3,):
        raise ShapeError(f"gru_layer: with gate inputs {xp} expected h0 of shape "
                         f"{(batch, hidden)}, w_hh of shape {(g3, hidden)} and b_hh of "
                         f"shape {(g3,)}, got {h0}, {w_hh} and {b_hh}")


def gru_layer(xp: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor) -> Tensor:
    """Runs one GRU layer over a sequence whose input projections are given.

    Args:
        xp: ``x_t @ W_ih.T + b_ih`` for every step, (L, N, 3H), gates r, z, n.
        h0: initial hidden state (N, H).
        w_hh: recurrent weight (3H, H).
        b_hh: recurrent bias (3H,) (zeros for a layer without bias).

    Returns:
        ``h_t`` for every step, (L, N, H).

    Example:
        >>> import lamina.autograd as ag
        >>> ag.gru_layer(ag.ones(5, 2, 9), ag.zeros(2, 3), ag.ones(9, 3), ag.zeros(9)).shape
        (5, 2, 3)
    """
    return GRULayer.apply(xp, h0, w_hh, b_hh)


def gru_layer_reference(xp: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor) -> Tensor:
    """``gru_layer`` built from composite ops, step by step (slow; a test oracle:
    ``gru_layer``'s backward never calls it)."""
    _check_shapes(xp.shape, h0.shape, w_hh.shape, b_hh.shape)
    w_t = w_hh.transpose(0, 1)
    h = h0
    outs = []
    for t in range(xp.shape[0]):
        xr, xz, xn = xp[t].chunk(3, 1)
        hr, hz, hn = (h @ w_t + b_hh).chunk(3, 1)
        r, z = sigmoid(xr + hr), sigmoid(xz + hz)
        n = (xn + r * hn).tanh()
        h = (1.0 - z) * n + z * h
        outs.append(h)
    return stack(outs)


PRIMITIVES = (GRULayer,)
COMPOSITES = (gru_layer_reference,)
