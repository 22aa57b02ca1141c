"""Recurrent layers: RNN, LSTM and GRU and their cells (PyTorch's names and layouts).

Parameters are named and shaped as in ``torch.nn``, so a PyTorch state dict
loads unchanged: layer k of a stack has ``weight_ih_l{k}`` (G*H, I_k),
``weight_hh_l{k}`` (G*H, H), ``bias_ih_l{k}`` and ``bias_hh_l{k}`` (G*H,),
with G = 1 for RNN, G = 4 for LSTM (gate rows i, f, g, o) and G = 3 for GRU
(gate rows r, z, n); a bidirectional GRU adds the same with suffix ``_reverse``.

A stacked layer computes the input projection of every timestep with one
matmul before its time loop; an LSTM layer then runs its recurrence as the
single op ``lamina.autograd.lstm_layer``, a GRU layer (each direction) as
``lamina.autograd.gru_layer``, an RNN layer as a loop of autograd ops per step.
Shapes: L is the sequence length, N the batch, I the input size, H the hidden
size, D = 2 for a bidirectional stack, else 1.
"""

from __future__ import annotations

import math
from typing import Any

from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor

from . import functional as F
from . import init
from ._errors import ShapeError
from ._module import Module
from ._parameter import Parameter

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]

_NONLINEARITIES = ("tanh", "relu")


def _param(*shape: int, dtype: Any, device: Any) -> Parameter:
    return Parameter(nd.zeros(*shape, dtype=dtype or nd.float32, device=device))


def _reset_uniform(module: Module, hidden_size: int) -> None:
    """PyTorch's default: every weight and bias from U(-1/sqrt(H), 1/sqrt(H))."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size else 0.0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


def _activation(name: str, x: Tensor) -> Tensor:
    return x.tanh() if name == "tanh" else x.relu()


def _lstm_step(x_proj: Tensor, h: Tensor, c: Tensor, w_hh: Tensor) -> tuple[Tensor, Tensor]:
    """One LSTM step from the input projection (N, 4H): returns (h', c'), each (N, H)."""
    i, f, g, o = (x_proj + h @ w_hh.transpose(0, 1)).chunk(4, 1)
    c = F.sigmoid(f) * c + F.sigmoid(i) * g.tanh()
    return F.sigmoid(o) * c.tanh(), c


def _gru(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """A GRU over (L, N, 3H) input projections ``x @ W_ih.T + b_ih`` from h (N, H): the
    fused op ``lamina.autograd.gru_layer``, h_t for every step (L, N, H).

    PyTorch's gates: r and z see both biases, but b_hn sits inside r * (...):
    ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``, ``h' = (1 - z) n + z h``, so the
    op takes b_hh itself (zeros without bias).
    """
    if b_hh is None:
        b_hh = ag.zeros(w_hh.shape[0], dtype=x_proj.dtype, device=x_proj.device)
    return ag.gru_layer(x_proj, h, w_hh, b_hh)


class _CellBase(Module):
    """Shared parameters and checks of RNNCell, LSTMCell and GRUCell."""

    gates = 1
    # False where b_hh cannot be folded into the input projection (GRU's n gate).
    merge_biases = True

    def __init__(self, input_size: int, hidden_size: int, bias: bool, device: Any,
                 dtype: Any) -> None:
        super().__init__()
        if input_size < 1 or hidden_size < 1:
            raise ValueError(f"{type(self).__name__}: input_size and hidden_size must be "
                             f">= 1, got {input_size} and {hidden_size}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rows = self.gates * hidden_size
        self.weight_ih = _param(rows, input_size, dtype=dtype, device=device)
        self.weight_hh = _param(rows, hidden_size, dtype=dtype, device=device)
        if bias:
            self.bias_ih = _param(rows, dtype=dtype, device=device)
            self.bias_hh = _param(rows, dtype=dtype, device=device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self, self.hidden_size)

    def _input(self, x: Tensor) -> tuple[Tensor, bool]:
        """``x`` as (N, I) and whether it came unbatched (I,)."""
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ShapeError(f"{self!r}: expected input of shape (N, {self.input_size}) or "
                             f"({self.input_size},), got {tuple(x.shape)}")
        return (x.unsqueeze(0), True) if x.ndim == 1 else (x, False)

    def _state(self, state: Tensor | None, x: Tensor, unbatched: bool, name: str) -> Tensor:
        expected = (x.shape[0], self.hidden_size)
        if state is None:
            return ag.zeros(*expected, dtype=x.dtype, device=x.device)
        shape = tuple(state.shape)
        if shape != (expected[1:] if unbatched else expected):
            want = expected[1:] if unbatched else expected
            raise ShapeError(f"{self!r}: expected {name} of shape {want} for input of shape "
                             f"{tuple(x.shape[1:]) if unbatched else tuple(x.shape)}, "
                             f"got {shape}")
        return state.unsqueeze(0) if unbatched else state

    def _projection(self, x: Tensor) -> Tensor:
        out = x @ self.weight_ih.transpose(0, 1)
        if self.bias_ih is not None:
            out = out + (self.bias_ih + self.bias_hh if self.merge_biases else self.bias_ih)
        return out

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(_CellBase):
    """An Elman cell: ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``.

    Args:
        input_size: I, features of each input.
        hidden_size: H, features of the hidden state.
        bias: learn ``bias_ih`` and ``bias_hh``.
        nonlinearity: ``"tanh"`` or ``"relu"``.

    Shape:
        input (N, I) or (I,); hx (N, H) or (H,), zeros when None -> h' (N, H) or (H,).

    Example:
        >>> from lamina import autograd
        >>> RNNCell(3, 5)(autograd.ones(2, 3)).shape
        (2, 5)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in _NONLINEARITIES:
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', "
                             f"got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched, "hx")
        out = _activation(self.nonlinearity,
                          self._projection(x) + h @ self.weight_hh.transpose(0, 1))
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        extra = "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity!r}"
        return super().extra_repr() + extra


class LSTMCell(_CellBase):
    """A long short-term memory cell (gates i, f, g, o, PyTorch's layout).

    Args:
        input_size: I, features of each input.
        hidden_size: H, features of the hidden and cell states.
        bias: learn ``bias_ih`` and ``bias_hh``.

    Shape:
        input (N, I) or (I,); hx = (h, c), each (N, H) or (H,), zeros when None
        -> (h', c'), each (N, H) or (H,).

    Example:
        >>> from lamina import autograd
        >>> h, c = LSTMCell(3, 5)(autograd.ones(2, 3))
        >>> h.shape, c.shape
        ((2, 5), (2, 5))
    """

    gates = 4

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None  # noqa: A002
                ) -> tuple[Tensor, Tensor]:
        x, unbatched = self._input(input)
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"{self!r}: hx must be a pair (h_0, c_0), got {type(hx).__name__}")
        h = self._state(None if hx is None else hx[0], x, unbatched, "h_0")
        c = self._state(None if hx is None else hx[1], x, unbatched, "c_0")
        h, c = _lstm_step(self._projection(x), h, c, self.weight_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class _StackBase(Module):
    """Shared parameters, checks and layer loop of RNN, LSTM and GRU."""

    gates = 1
    merge_biases = True  # as in _CellBase

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, bias: bool,
                 batch_first: bool, dropout: float, device: Any, dtype: Any,
                 bidirectional: bool = False) -> None:
        super().__init__()
        name = type(self).__name__
        if input_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError(f"{name}: input_size, hidden_size and num_layers must be >= 1, "
                             f"got {input_size}, {hidden_size} and {num_layers}")
        if not 0 <= dropout <= 1:
            raise ValueError(f"{name}: dropout must be in [0, 1], got {dropout}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bool(bidirectional)
        rows = self.gates * hidden_size
        for k in range(num_layers):
            fan_in = input_size if k == 0 else hidden_size * self.directions
            for sfx in self._suffixes():
                setattr(self, f"weight_ih_l{k}{sfx}", _param(rows, fan_in, dtype=dtype,
                                                             device=device))
                setattr(self, f"weight_hh_l{k}{sfx}", _param(rows, hidden_size, dtype=dtype,
                                                             device=device))
                if bias:
                    setattr(self, f"bias_ih_l{k}{sfx}", _param(rows, dtype=dtype,
                                                               device=device))
                    setattr(self, f"bias_hh_l{k}{sfx}", _param(rows, dtype=dtype,
                                                               device=device))
        self.reset_parameters()

    @property
    def directions(self) -> int:
        """D: 2 for a bidirectional stack, else 1."""
        return 2 if self.bidirectional else 1

    def _suffixes(self) -> tuple[str, ...]:
        """Parameter name suffixes of each direction, PyTorch's."""
        return ("", "_reverse") if self.bidirectional else ("",)

    def reset_parameters(self) -> None:
        """Re-draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self, self.hidden_size)

    def _sequence(self, x: Tensor) -> tuple[Tensor, bool]:
        """``x`` as (L, N, I) and whether it came unbatched (L, I)."""
        ok = x.ndim in (2, 3) and x.shape[-1] == self.input_size
        if not ok or x.shape[1 if x.ndim == 3 and self.batch_first else 0] == 0:
            layout = "(N, L, {0})" if self.batch_first else "(L, N, {0})"
            raise ShapeError(f"{self!r}: expected input of shape "
                             f"{layout.format(self.input_size)} or (L, {self.input_size}) "
                             f"with L >= 1, got {tuple(x.shape)}")
        if x.ndim == 2:
            return x.unsqueeze(1), True
        return (x.transpose(0, 1) if self.batch_first else x), False

    def _state(self, state: Tensor | None, x: Tensor, unbatched: bool, name: str) -> Tensor:
        """The initial state as (D * num_layers, N, H), zeros when None."""
        layers = self.directions * self.num_layers
        expected = (layers, x.shape[1], self.hidden_size)
        if state is None:
            return ag.zeros(*expected, dtype=x.dtype, device=x.device)
        want = (layers, self.hidden_size) if unbatched else expected
        if tuple(state.shape) != want:
            what = "D * num_layers" if self.bidirectional else "num_layers"
            raise ShapeError(f"{self!r}: expected {name} of shape {want} ({what}, "
                             f"{'' if unbatched else 'N, '}hidden_size), got "
                             f"{tuple(state.shape)}")
        return state.unsqueeze(1) if unbatched else state

    def _projection(self, k: int, x: Tensor, sfx: str = "") -> Tensor:
        """``x @ W_ih.T + b_ih (+ b_hh)`` for every step at once: (L, N, I) -> (L, N, G*H)."""
        steps, batch, features = x.shape
        w_ih = getattr(self, f"weight_ih_l{k}{sfx}")
        out = x.reshape(steps * batch, features) @ w_ih.transpose(0, 1)
        if self.bias:
            b = getattr(self, f"bias_ih_l{k}{sfx}")
            out = out + (b + getattr(self, f"bias_hh_l{k}{sfx}") if self.merge_biases else b)
        return out.reshape(steps, batch, out.shape[-1])

    def _between_layers(self, k: int, y: Tensor) -> Tensor:
        if k < self.num_layers - 1 and self.dropout > 0:
            return F.dropout(y, self.dropout, self.training)
        return y

    def _output(self, y: Tensor, unbatched: bool) -> Tensor:
        if unbatched:
            return y.squeeze(1)
        return y.transpose(0, 1) if self.batch_first else y

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_StackBase):
    """A multi-layer Elman RNN: ``h_t = act(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T + b_hh)``.

    Args:
        input_size: I, features of each input step.
        hidden_size: H, features of the hidden state.
        num_layers: stacked layers; layer k > 0 reads layer k-1's outputs.
        nonlinearity: ``"tanh"`` or ``"relu"``.
        bias: learn ``bias_ih_l{k}`` and ``bias_hh_l{k}``.
        batch_first: input and output are (N, L, *) instead of (L, N, *).
        dropout: dropout probability on each layer's output except the last's
            (training mode only).

    Shape:
        input (L, N, I), or (N, L, I) with batch_first, or unbatched (L, I);
        h_0 (num_layers, N, H) or (num_layers, H), zeros when None
        -> output (L, N, H) (the last layer's h_t for every t; (N, L, H) with
        batch_first), h_n (num_layers, N, H) (every layer's last h).

    Example:
        >>> from lamina import autograd
        >>> out, h_n = RNN(3, 5, num_layers=2)(autograd.ones(7, 2, 3))
        >>> out.shape, h_n.shape
        ((7, 2, 5), (2, 2, 5))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in _NONLINEARITIES:
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None  # noqa: A002
                ) -> tuple[Tensor, Tensor]:
        x, unbatched = self._sequence(input)
        h0 = self._state(hx, x, unbatched, "h_0")
        finals = []
        for k in range(self.num_layers):
            proj = self._projection(k, x)
            w_t = getattr(self, f"weight_hh_l{k}").transpose(0, 1)
            h, outs = h0[k], []
            for t in range(proj.shape[0]):
                h = _activation(self.nonlinearity, proj[t] + h @ w_t)
                outs.append(h)
            finals.append(h)
            x = self._between_layers(k, ag.stack(outs))
        h_n = ag.stack(finals)
        return self._output(x, unbatched), (h_n.squeeze(1) if unbatched else h_n)

    def extra_repr(self) -> str:
        extra = "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity!r}"
        return super().extra_repr() + extra


class LSTM(_StackBase):
    """A multi-layer long short-term memory network (PyTorch's layout, gates i, f, g, o).

    Args:
        input_size: I, features of each input step.
        hidden_size: H, features of the hidden and cell states.
        num_layers: stacked layers; layer k > 0 reads layer k-1's outputs.
        bias: learn ``bias_ih_l{k}`` and ``bias_hh_l{k}``.
        batch_first: input and output are (N, L, *) instead of (L, N, *).
        dropout: dropout probability on each layer's output except the last's
            (training mode only).

    Shape:
        input (L, N, I), or (N, L, I) with batch_first, or unbatched (L, I);
        hx = (h_0, c_0), each (num_layers, N, H) or (num_layers, H), zeros when
        None -> (output, (h_n, c_n)): output (L, N, H) is the last layer's h_t
        for every t ((N, L, H) with batch_first); h_n and c_n
        (num_layers, N, H) are every layer's final states.

    Example:
        >>> from lamina import autograd
        >>> out, (h_n, c_n) = LSTM(3, 5, num_layers=2)(autograd.ones(7, 2, 3))
        >>> out.shape, h_n.shape, c_n.shape
        ((7, 2, 5), (2, 2, 5), (2, 2, 5))
    """

    gates = 4

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None  # noqa: A002
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        x, unbatched = self._sequence(input)
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"{self!r}: hx must be a pair (h_0, c_0), got {type(hx).__name__}")
        h0 = self._state(None if hx is None else hx[0], x, unbatched, "h_0")
        c0 = self._state(None if hx is None else hx[1], x, unbatched, "c_0")
        hidden = self.hidden_size
        h_n, c_n = [], []
        for k in range(self.num_layers):
            both = ag.lstm_layer(self._projection(k, x), h0[k], c0[k],
                                 getattr(self, f"weight_hh_l{k}"))
            last = both[-1]
            h_n.append(last[:, :hidden])
            c_n.append(last[:, hidden:])
            x = self._between_layers(k, both[:, :, :hidden])
        h, c = ag.stack(h_n), ag.stack(c_n)
        if unbatched:
            h, c = h.squeeze(1), c.squeeze(1)
        return self._output(x, unbatched), (h, c)


class GRUCell(_CellBase):
    """A gated recurrent unit cell (gates r, z, n, PyTorch's layout and equations).

    ``r = sigmoid(x W_ir + b_ir + h W_hr + b_hr)``, z likewise,
    ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``, ``h' = (1 - z) * n + z * h``.

    Args:
        input_size: I, features of each input.
        hidden_size: H, features of the hidden state.
        bias: learn ``bias_ih`` and ``bias_hh``.

    Shape:
        input (N, I) or (I,); hx (N, H) or (H,), zeros when None -> h' (N, H) or (H,).

    Example:
        >>> from lamina import autograd
        >>> GRUCell(3, 5)(autograd.ones(2, 3)).shape
        (2, 5)
    """

    gates = 3
    merge_biases = False

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, unbatched = self._input(input)
        h = self._state(hx, x, unbatched, "hx")
        h = _gru(self._projection(x).unsqueeze(0), h, self.weight_hh, self.bias_hh)[0]
        return h.squeeze(0) if unbatched else h


class GRU(_StackBase):
    """A multi-layer gated recurrent unit network (PyTorch's layout, gates r, z, n).

    Each step computes ``h_t`` from ``x_t`` and ``h_{t-1}`` as :class:`GRUCell`
    does; each layer and direction runs its whole time loop as the single op
    ``lamina.autograd.gru_layer``.

    Args:
        input_size: I, features of each input step.
        hidden_size: H, features of the hidden state.
        num_layers: stacked layers; layer k > 0 reads layer k-1's outputs.
        bias: learn ``bias_ih_l{k}`` and ``bias_hh_l{k}``.
        batch_first: input and output are (N, L, *) instead of (L, N, *).
        dropout: dropout probability on each layer's output except the last's
            (training mode only).
        bidirectional: also run each layer backwards in time (parameters
            ``*_l{k}_reverse``) and concatenate both directions' outputs.

    Shape:
        input (L, N, I), or (N, L, I) with batch_first, or unbatched (L, I);
        h_0 (D * num_layers, N, H) or (D * num_layers, H), zeros when None
        -> (output, h_n): output (L, N, D * H) is the last layer's h_t for
        every t ((N, L, D * H) with batch_first), h_n (D * num_layers, N, H)
        every layer's and direction's final state (layer-major, forward first).

    Example:
        >>> from lamina import autograd
        >>> out, h_n = GRU(3, 5, num_layers=2, bidirectional=True)(autograd.ones(7, 2, 3))
        >>> out.shape, h_n.shape
        ((7, 2, 10), (4, 2, 5))
    """

    gates = 3
    merge_biases = False

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         device, dtype, bidirectional)

    def forward(self, input: Tensor, hx: Tensor | None = None  # noqa: A002
                ) -> tuple[Tensor, Tensor]:
        x, unbatched = self._sequence(input)
        h0 = self._state(hx, x, unbatched, "h_0")
        finals = []
        for k in range(self.num_layers):
            outs = []
            for d, sfx in enumerate(self._suffixes()):
                y, h = self._direction(k, sfx, x, h0[k * self.directions + d])
                outs.append(y)
                finals.append(h)
            x = self._between_layers(k, outs[0] if len(outs) == 1 else ag.cat(outs, 2))
        h_n = ag.stack(finals)
        return self._output(x, unbatched), (h_n.squeeze(1) if unbatched else h_n)

    def _direction(self, k: int, sfx: str, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        """One direction of layer k over (L, N, I_k): outputs (L, N, H) in time order
        and the final state (N, H); ``_reverse`` runs from the last step to the first."""
        proj = self._projection(k, x, sfx)
        w_hh = getattr(self, f"weight_hh_l{k}{sfx}")
        b_hh = getattr(self, f"bias_hh_l{k}{sfx}") if self.bias else None
        # The reverse direction is the same recurrence over the time-flipped sequence.
        y = _gru(proj.flip(0) if sfx else proj, h, w_hh, b_hh)
        return (y.flip(0) if sfx else y), y[-1]
