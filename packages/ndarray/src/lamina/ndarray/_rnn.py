"""The time loops of an LSTM and a GRU layer on the backend's fused cell kernels.

Each step is the recurrent GEMM ``h_{t-1} @ W_hh^T`` and one ``lstm_cell`` or
``gru_cell`` kernel (interface v2.1, optional) that does all of the step's
elementwise work in one pass; the backward likewise, one GEMM and one
``*_cell_backward`` per step. The layouts are the kernels' (``_numpy_rnn``):
the states of all steps live in one ``(L+1, N, k*H)`` buffer whose block 0
is the initial state, so the layer's output is a view of its blocks 1..L.

:func:`has_recurrent_cells` says whether a device has the kernels; autograd's
``lstm_layer`` and ``gru_layer`` ops call these functions when it does and
compose elementwise kernels otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._checks import check_kernel_dtype
from ._errors import ShapeError
from ._narrow import kernels_of
from ._ndarray import NDArray


def has_recurrent_cells(kind: str, *arrays: NDArray) -> bool:
    """Whether ``arrays`` share one device and dtype that has ``kind``'s cell kernels.

    Args:
        kind: ``"lstm"`` or ``"gru"``.
        arrays: the operands of the layer.
    """
    first = arrays[0]
    device, dtype = first._device, first._dtype
    if any(a._device is not device or a._dtype is not dtype for a in arrays):
        return False
    names = (f"{kind}_cell", f"{kind}_cell_backward")
    return all(dtype.name in device.kernel_dtypes.get(name, ()) for name in names)


def _kernel(a: NDArray, name: str, op: str) -> Callable[..., Any]:
    """The device's kernel ``name`` for a's dtype; DTypeError naming op where it lacks it."""
    check_kernel_dtype(a._device, name, a._dtype, op)
    kernel: Callable[..., Any] = getattr(a._device.kernels, name)
    return kernel


def _at_zero(a: NDArray) -> NDArray:
    """``a`` if it is compact from element 0 of its buffer (what the kernels index), else a
    compact copy."""
    return a if a._offset == 0 and (a._compact or a.is_compact()) else a.copy()


def _empty(like: NDArray, *shape: int) -> NDArray:
    return NDArray._empty(shape, like._dtype, like._device, "recurrent cells")


def _zeros(like: NDArray, *shape: int) -> NDArray:
    out = _empty(like, *shape)
    if out._buf.size:
        kernels_of(like, "fill", "rnn").fill(out._buf, 0)
    return out


def _check(kind: str, xp: NDArray, gates: int, states: tuple[NDArray, ...],
           w_hh: NDArray) -> tuple[int, int, int]:
    """(L, N, H) of a layer whose gate inputs are ``xp`` (L, N, gates*H); ShapeError
    unless every initial state is (N, H) and w_hh (gates*H, H)."""
    if len(xp.shape) != 3 or xp.shape[2] % gates or xp.shape[0] == 0:
        raise ShapeError(f"{kind}_recurrence: gate inputs must be (L, N, {gates}H) with L >= 1, "
                         f"got {xp.shape}")
    steps, batch, width = xp.shape
    hidden = width // gates
    if any(s.shape != (batch, hidden) for s in states) or w_hh.shape != (width, hidden):
        raise ShapeError(f"{kind}_recurrence: with gate inputs {xp.shape} expected initial "
                         f"states of shape {(batch, hidden)} and w_hh of shape "
                         f"{(width, hidden)}, got {[s.shape for s in states]} and {w_hh.shape}")
    return steps, batch, hidden


def lstm_recurrence(xp: NDArray, h0: NDArray, c0: NDArray,
                    w_hh: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Runs an LSTM layer over its gate inputs with the ``lstm_cell`` kernel.

    Args:
        xp: ``x_t @ W_ih^T + b`` for every step, (L, N, 4H), gates i, f, g, o.
        h0, c0: initial states (N, H). w_hh: recurrent weight (4H, H).

    Returns:
        ``state`` (L+1, N, 2H) with ``[h_t | c_t]`` in block t+1 and ``[h0 | c0]`` in
        block 0; the gate activations (L, N, 4H); ``tanh(c_t)`` (L, N, H).
    """
    steps, batch, hidden = _check("lstm", xp, 4, (h0, c0), w_hh)
    kernel = _kernel(xp, "lstm_cell", "lstm_recurrence")
    xp, w_t = _at_zero(xp), w_hh.transpose(0, 1).compact()
    state = _empty(xp, steps + 1, batch, 2 * hidden)
    state[0, :, :hidden] = h0
    state[0, :, hidden:] = c0
    acts, tanh_c = _empty(xp, steps, batch, 4 * hidden), _empty(xp, steps, batch, hidden)
    for t in range(steps):
        hh = state[t, :, :hidden] @ w_t
        kernel(xp._buf, hh._buf, state._buf, acts._buf, tanh_c._buf, t, batch, hidden)
    return state, acts, tanh_c


def lstm_recurrence_backward(g: NDArray, state: NDArray, acts: NDArray, tanh_c: NDArray,
                             w_hh: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """Backpropagation through time of :func:`lstm_recurrence` with ``lstm_cell_backward``.

    Args:
        g: gradient of the output ``state[1:]``, (L, N, 2H). state, acts, tanh_c:
            what :func:`lstm_recurrence` returned. w_hh: (4H, H).

    Returns:
        Gradients of xp (L, N, 4H), h0, c0 (N, H) and w_hh (4H, H).
    """
    steps, batch, width = acts.shape
    hidden = width // 4
    kernel = _kernel(acts, "lstm_cell_backward", "lstm_recurrence_backward")
    g = _at_zero(g)
    dc, dh_mm = _zeros(acts, batch, hidden), _zeros(acts, batch, hidden)
    d_xp = _empty(acts, steps, batch, width)
    for t in range(steps - 1, -1, -1):
        kernel(g._buf, dh_mm._buf, acts._buf, state._buf, tanh_c._buf, dc._buf, d_xp._buf, t,
               batch, hidden)
        dh_mm = d_xp[t] @ w_hh
    h_prev = state[:-1, :, :hidden].reshape(steps * batch, hidden)
    d_w = d_xp.reshape(steps * batch, width).transpose(0, 1) @ h_prev
    return d_xp, dh_mm, dc, d_w


def gru_recurrence(xp: NDArray, h0: NDArray, w_hh: NDArray,
                   b_hh: NDArray) -> tuple[NDArray, NDArray]:
    """Runs a GRU layer over its gate inputs with the ``gru_cell`` kernel.

    Args:
        xp: ``x_t @ W_ih^T + b_ih`` for every step, (L, N, 3H), gates r, z, n.
        h0: initial state (N, H). w_hh: recurrent weight (3H, H). b_hh: (3H,).

    Returns:
        ``state`` (L+1, N, H) with ``h_t`` in block t+1 and ``h0`` in block 0; the
        saved gates (L, N, 4H): r, z, n and ``hn = h_{t-1} @ W_hn^T + b_hn``.
    """
    steps, batch, hidden = _check("gru", xp, 3, (h0,), w_hh)
    if b_hh.shape != (3 * hidden,):
        raise ShapeError(f"gru_recurrence: b_hh must have shape {(3 * hidden,)}, got "
                         f"{b_hh.shape}")
    kernel = _kernel(xp, "gru_cell", "gru_recurrence")
    xp, b_hh, w_t = _at_zero(xp), _at_zero(b_hh), w_hh.transpose(0, 1).compact()
    state = _empty(xp, steps + 1, batch, hidden)
    state[0] = h0
    gates = _empty(xp, steps, batch, 4 * hidden)
    for t in range(steps):
        hh = state[t] @ w_t
        kernel(xp._buf, hh._buf, b_hh._buf, state._buf, gates._buf, t, batch, hidden)
    return state, gates


def gru_recurrence_backward(g: NDArray, state: NDArray, gates: NDArray,
                            w_hh: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """Backpropagation through time of :func:`gru_recurrence` with ``gru_cell_backward``.

    Args:
        g: gradient of the output ``state[1:]``, (L, N, H). state, gates: what
            :func:`gru_recurrence` returned. w_hh: (3H, H).

    Returns:
        Gradients of xp (L, N, 3H), h0 (N, H), w_hh (3H, H) and b_hh (3H,).
    """
    steps, batch, hidden = g.shape
    kernel = _kernel(gates, "gru_cell_backward", "gru_recurrence_backward")
    g = _at_zero(g)
    dh, dh_mm = _zeros(gates, batch, hidden), _zeros(gates, batch, hidden)
    d_hh, d_xp = (_empty(gates, steps, batch, 3 * hidden) for _ in range(2))
    for t in range(steps - 1, -1, -1):
        kernel(g._buf, dh_mm._buf, gates._buf, state._buf, dh._buf, d_hh._buf, d_xp._buf, t,
               batch, hidden)
        dh_mm = d_hh[t] @ w_hh
    flat = d_hh.reshape(steps * batch, 3 * hidden)
    d_w = flat.transpose(0, 1) @ state[:-1].reshape(steps * batch, hidden)
    return d_xp, dh + dh_mm, d_w, flat.sum(0)
