"""One record per op: the Lamina call, the PyTorch reference, sample and error inputs.

Generic tests (``test_ops.py``, ``test_gradcheck.py``, ``test_registry.py``)
sweep ``RECORDS``. Sample arguments are numpy arrays (floats become tensors
of the dtype under test; int64 arrays become index tensors), Python numbers,
or anything else passed through unchanged to both sides.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lamina.autograd as ag
import numpy as np
import torch
import torch.nn.functional as TF
from lamina.autograd._ops import (
    batch_norm_reference,
    gelu_reference,
    im2col,
    layer_norm_reference,
    lstm_layer_reference,
    nll_loss,
    scaled_dot_product_attention_reference,
)
from lamina.ndarray import ShapeError
from lamina.ndarray._optable import OPS, ops

_rng = np.random.default_rng(1234)


def r(*shape: int) -> np.ndarray:
    """Standard normal float64 values."""
    return np.asarray(_rng.standard_normal(shape))


def pos(*shape: int) -> np.ndarray:
    """Values in [0.5, 2): safe for log, sqrt, division."""
    return np.asarray(_rng.uniform(0.5, 2.0, shape))


def away(*shape: int) -> np.ndarray:
    """Values with |x| in [0.2, 2]: away from the kinks of abs, relu, clamp."""
    return np.asarray(_rng.uniform(0.2, 2.0, shape) * _rng.choice([-1.0, 1.0], shape))


def ties(*shape: int) -> np.ndarray:
    """Small half-integers, so comparisons see equal values."""
    return np.asarray(_rng.integers(-2, 3, shape) / 2.0)


def mask(*shape: int) -> np.ndarray:
    """A random bool mask."""
    return _rng.integers(0, 2, shape).astype(bool)


def idx(high: int, *shape: int) -> np.ndarray:
    """int64 indices in [0, high)."""
    return _rng.integers(0, high, shape).astype(np.int64)


def distinct(*shape: int) -> np.ndarray:
    """A permutation of spread-out values: no ties for max/min/pooling."""
    return _rng.permutation(np.prod(shape)).reshape(shape) * 0.1 - 1.0


@dataclass
class Sample:
    """Arguments of one call; ``smooth=False`` where finite differences sit on a kink."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    smooth: bool = True


def S(*args: Any, **kwargs: Any) -> Sample:  # noqa: N802
    return Sample(args, kwargs)


def kink(sample: Sample) -> Sample:
    """Marks a sample with tied values: exact for the rule, not for finite differences."""
    sample.smooth = False
    return sample


@dataclass
class ErrorSample:
    sample: Sample
    error: type[BaseException]
    match: str


@dataclass
class OpRecord:
    """Everything the generic tests need to know about one op.

    Attributes:
        name: the registry name (a primitive ``Function.name`` or composite).
        fn: the Lamina call, ``fn(*tensors, **kwargs)``.
        ref: the PyTorch reference with the same arguments.
        samples: inputs, including broadcasting and 0-d/1-d cases.
        differentiable: False for ops whose output never requires grad.
        covers: other registry names this record exercises (adjoints).
        errors: bad inputs, the exception class and a regex of its message.
        second_order: include in the second-order gradient checks.
        gradcheck: include in the float64 finite-difference sweep.
        constant_args: positions of float arguments that never require grad.
        tolerance: per-dtype overrides of the harness tolerances.
        out_dtype: the output dtype when it does not follow the inputs'.
        kernel: an optional backend kernel the op needs; a device without it skips.
    """

    name: str
    fn: Callable[..., Any]
    ref: Callable[..., Any]
    samples: list[Sample]
    differentiable: bool = True
    covers: tuple[str, ...] = ()
    errors: list[ErrorSample] = field(default_factory=list)
    second_order: bool = False
    gradcheck: bool = True
    constant_args: tuple[int, ...] = ()
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)
    out_dtype: str | None = None
    kernel: str | None = None


def _unfold(x: torch.Tensor, kernel: Any, stride: Any, padding: Any, dilation: Any
            ) -> torch.Tensor:
    """torch's unfold rearranged to Lamina's im2col layout (N, OH, OW, C, KH, KW)."""
    n, c, h, w = x.shape
    kh, kw = kernel
    cols = TF.unfold(x, kernel, dilation=dilation, padding=padding, stride=stride)
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    return cols.reshape(n, c, kh, kw, oh, ow).permute(0, 4, 5, 1, 2, 3)


def _fold(cols: torch.Tensor, input_shape: Any, kernel: Any, stride: Any, padding: Any,
          dilation: Any) -> torch.Tensor:
    n, oh, ow, c, kh, kw = cols.shape
    flat = cols.permute(0, 3, 4, 5, 1, 2).reshape(n, c * kh * kw, oh * ow)
    return TF.fold(flat, input_shape[2:], kernel, dilation=dilation, padding=padding,
                   stride=stride)


def _torch_scatter(shape: tuple[int, ...], key: Any, x: torch.Tensor) -> torch.Tensor:
    out = x.new_zeros(shape)
    out[key] = x
    return out


def _torch_dilate(x: torch.Tensor, axes: Any, dilation: int) -> torch.Tensor:
    shape = tuple(n * (dilation + 1) if i in axes else n for i, n in enumerate(x.shape))
    key = tuple(slice(None, None, dilation + 1) if i in axes else slice(None)
                for i in range(x.ndim))
    return _torch_scatter(shape, key, x)


def _torch_take(x: torch.Tensor, indices: torch.Tensor, dim: int = 0) -> torch.Tensor:
    return x[(slice(None),) * dim + (indices,)]


def _torch_scatter_add(src: torch.Tensor, indices: torch.Tensor, dim: int, size: int
                       ) -> torch.Tensor:
    shape = src.shape[:dim] + (size,) + src.shape[dim + indices.ndim:]
    flat = src.reshape(src.shape[:dim] + (-1,) + src.shape[dim + indices.ndim:])
    return src.new_zeros(shape).index_add(dim, indices.reshape(-1), flat)


def _torch_pad(x: torch.Tensor, pad_width: Any) -> torch.Tensor:
    flat = [v for pair in reversed(pad_width) for v in pair]
    return TF.pad(x, flat)


def _torch_getitem(x: torch.Tensor, key: Any) -> torch.Tensor:
    """``x[key]``; torch has no negative slice steps, so those become flips."""
    parts = key if isinstance(key, tuple) else (key,)
    for axis, k in enumerate(parts):
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            if k != slice(None, None, -1):
                raise ValueError(f"test reference handles only ::-1, got {k}")
            x = x.flip(axis)
    return x[tuple(slice(None) if isinstance(k, slice) and k.step and k.step < 0 else k
                   for k in parts)]


def _operator(name: str) -> Callable[..., Any]:
    """The Python operator of the op table's op ``name`` (``operator.__mod__``)."""
    return getattr(operator, f"__{OPS[name].operator}__")  # type: ignore[no-any-return]


def _cmp(op: Callable[..., Any]) -> Callable[..., Any]:
    return op  # bool, as Lamina's (1/0 in the operands' dtype on a v1.0 backend)


_ERF_TOL = {"float64": {"rtol": 1e-6, "atol": 3e-7}}
_MM_ERROR = ErrorSample(S(r(2, 3), r(4, 5)), ShapeError,
                        r"matmul.*\(2, 3\).*\(4, 5\)")
_BROADCAST_ERROR = ErrorSample(S(r(2, 3), r(4, 3)), ShapeError, r"\(2, 3\).*\(4, 3\)")


def _binary(name: str, fn: Callable[..., Any], ref: Callable[..., Any], lhs: Callable[..., Any],
            rhs: Callable[..., Any], **extra: Any) -> OpRecord:
    return OpRecord(name, fn, ref, [
        S(lhs(3, 4), rhs(3, 4)),
        S(lhs(2, 1, 4), rhs(3, 1)),           # broadcasting both ways
        S(lhs(4), rhs()),                     # 0-d operand
        S(lhs(3, 4), 1.5), S(2.5, rhs(4)),    # Python scalars on either side
    ], errors=[_BROADCAST_ERROR], **extra)


def _unary(name: str, fn: Callable[..., Any], ref: Callable[..., Any],
           gen: Callable[..., Any] = r, **extra: Any) -> OpRecord:
    return OpRecord(name, fn, ref, [S(gen(3, 4)), S(gen(2, 3, 2)), S(gen())], **extra)


def _torch_lstm_layer(xp: torch.Tensor, h: torch.Tensor, c: torch.Tensor,
                      w_hh: torch.Tensor) -> torch.Tensor:
    """The LSTM recurrence with torch ops: [h_t | c_t] for every step, (L, N, 2H)."""
    outs = []
    for t in range(xp.shape[0]):
        i, f, g, o = (xp[t] + h @ w_hh.T).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(torch.cat([h, c], 1))
    return torch.stack(outs)


def _torch_gru_layer(xp: torch.Tensor, h: torch.Tensor, w_hh: torch.Tensor,
                     b_hh: torch.Tensor) -> torch.Tensor:
    """The GRU recurrence with torch ops (torch.nn.GRU's equations): h_t, (L, N, H)."""
    outs = []
    for t in range(xp.shape[0]):
        xr, xz, xn = xp[t].chunk(3, 1)
        hr, hz, hn = (h @ w_hh.T + b_hh).chunk(3, 1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        h = (1 - z) * torch.tanh(xn + r * hn) + z * h
        outs.append(h)
    return torch.stack(outs)


def _torch_prod(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    """torch.prod over an int, a tuple (one axis at a time: torch takes one) or all."""
    if dim is None:
        out = torch.prod(x)
        return out.reshape((1,) * x.ndim) if keepdim else out
    for d in sorted({d % x.ndim for d in ((dim,) if isinstance(dim, int) else dim)},
                    reverse=True):
        x = torch.prod(x, d, keepdim=True)
    return x if keepdim else x.squeeze(dim)


def zeros_at(a: np.ndarray, *where: tuple[int, ...]) -> np.ndarray:
    """``a`` with zeros at the given positions (prod's gradient steps around them)."""
    a = a.copy()
    for i in where:
        a[i] = 0.0
    return a


def _batch_norm(x: Any, w: Any, b: Any, rm: Any = None, rv: Any = None,
                eps: float = 1e-5) -> Any:
    """Batch statistics without running ones; the given (running) ones otherwise."""
    return ag.batch_norm(x, w, b, rm, rv, training=rm is None, eps=eps)


def _torch_batch_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, rm: Any = None,
                      rv: Any = None, eps: float = 1e-5) -> torch.Tensor:
    return TF.batch_norm(x, rm, rv, w, b, training=rm is None, eps=eps)


def _batch_norm_reference(x: Any, w: Any, b: Any, rm: Any = None, rv: Any = None,
                          eps: float = 1e-5) -> Any:
    return batch_norm_reference(x, w, b, None if rm is None else (rm, rv), eps)


def _torch_layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor,
                      eps: float = 1e-5) -> torch.Tensor:
    return TF.layer_norm(x, x.shape[-1:], w, b, eps)


def _masked_row(*shape: int) -> np.ndarray:
    """An additive attention mask whose second query sees no key (its row all -inf)."""
    m = r(*shape)
    m[..., 1, :] = -np.inf
    return m


_ATTENTION_SAMPLES = [
    S(r(2, 3, 4), r(2, 5, 4), r(2, 5, 6)), S(r(2, 2, 4, 8), r(2, 2, 4, 8), r(2, 2, 4, 8),
                                           is_causal=True),
    S(r(2, 3, 4), r(2, 5, 4), r(2, 5, 6), r(3, 5)),
    S(r(1, 2, 3, 4), r(1, 2, 6, 4), r(1, 2, 6, 5), r(1, 1, 3, 6), scale=0.3),
    S(r(3, 4), r(5, 4), r(5, 2)), S(r(2, 3, 4), r(2, 5, 4), r(2, 5, 6), _masked_row(2, 3, 5)),
    S(r(2, 7, 4), r(2, 5, 4), r(2, 5, 3), is_causal=True, scale=2.0)]


RECORDS: list[OpRecord] = [
    # ----- elementwise ----------------------------------------------------------------
    _binary("add", lambda a, b: a + b, lambda a, b: a + b, r, r, second_order=True),
    _binary("sub", lambda a, b: a - b, lambda a, b: a - b, r, r),
    _binary("mul", lambda a, b: a * b, lambda a, b: a * b, r, r, second_order=True),
    _binary("div", lambda a, b: a / b, lambda a, b: a / b, r, pos, second_order=True),
    OpRecord("pow", lambda a, b: a**b, lambda a, b: a**b,
             [S(pos(3, 4), r(3, 4)), S(pos(2, 3), r(3)), S(2.0, r(4))], second_order=True),
    OpRecord("add_scalar", lambda a, c: a + c, lambda a, c: a + c,
             [S(r(3, 4), 1.5), S(r(5), -2), S(r(), 0.25)], second_order=True),
    OpRecord("rsub_scalar", lambda a, c: c - a, lambda a, c: c - a,
             [S(r(3, 4), 1.5), S(r(5), 0)], second_order=True),
    OpRecord("mul_scalar", lambda a, c: a * c, lambda a, c: a * c,
             [S(r(3, 4), 2.5), S(r(5), -1), S(r(2, 2), 0.0)], second_order=True),
    OpRecord("div_scalar", lambda a, c: a / c, lambda a, c: a / c,
             [S(r(3, 4), 3.0), S(r(5), -0.5)], second_order=True),
    OpRecord("rdiv_scalar", lambda a, c: c / a, lambda a, c: c / a,
             [S(pos(3, 4), 2.0), S(pos(5), -1)], second_order=True),
    OpRecord("pow_scalar", lambda a, e: a**e, lambda a, e: a**e,
             [S(pos(3, 4), 2.5), S(r(5), 2), S(r(3), 0), S(pos(4), -0.5)]),
    _unary("neg", lambda a: -a, lambda a: -a),
    _unary("exp", ag.exp, torch.exp, second_order=True),
    _unary("log", ag.log, torch.log, pos, second_order=True),
    _unary("sqrt", ag.sqrt, torch.sqrt, pos),
    _unary("tanh", ag.tanh, torch.tanh, second_order=True),
    _unary("sin", ag.sin, torch.sin),
    _unary("cos", ag.cos, torch.cos),
    _unary("abs", ag.abs, torch.abs, away),
    _unary("relu", ag.relu, torch.relu, away),
    # erf's forward is a 1.5e-7 approximation (see lamina.autograd._ops.elementwise.Erf).
    _unary("erf", ag.erf, torch.erf, tolerance=_ERF_TOL),
    _unary("sign", ag.sign, torch.sign, away, differentiable=False),
    _unary("sigmoid", ag.sigmoid, torch.sigmoid, second_order=True),
    OpRecord("gelu", ag.gelu, TF.gelu,
             [S(r(3, 4)), S(r(5), approximate="tanh"), S(r(2, 3), approximate="none")],
             errors=[ErrorSample(S(r(3), approximate="erf"), ValueError, "approximate")],
             second_order=True, tolerance=_ERF_TOL),
    OpRecord("gelu_reference", gelu_reference, TF.gelu,
             [S(r(3, 4)), S(r(5), approximate="tanh")],
             errors=[ErrorSample(S(r(3), approximate="erf"), ValueError, "approximate")],
             tolerance=_ERF_TOL),
    OpRecord("clamp", ag.clamp, torch.clamp,
             [S(away(3, 4), min=-0.5), S(away(3, 4), max=0.5),
              S(away(5), min=-0.5, max=0.5)],
             errors=[ErrorSample(S(r(3)), ValueError, "clamp")]),
    OpRecord("maximum", ag.maximum, torch.maximum,
             [S(r(3, 4), r(3, 4)), S(r(2, 1, 4), r(3, 1)), S(ties(6), ties(6))]),
    OpRecord("minimum", ag.minimum, torch.minimum,
             [S(r(3, 4), r(3, 4)), S(r(2, 1, 4), r(3, 1)), S(ties(6), ties(6))]),
    OpRecord("where", ag.where, lambda c, a, b: torch.where(c != 0, a, b),
             [S(idx(2, 3, 4).astype(float), r(3, 4), r(3, 4)),
              S(idx(2, 3, 1).astype(float), r(1, 4), r(3, 4)),
              S(idx(2, 5).astype(float), r(5), 0.0)], constant_args=(0,)),
    # the op table's comparisons, through their operators (a == b, ...)
    *[OpRecord(name, _operator(name), _cmp(getattr(torch, name)),
               [S(ties(3, 4), ties(3, 4)), S(ties(2, 3), ties(3)), S(ties(5), 0.5)],
               differentiable=False)
      for name in ops(arity=2, result="bool")],
    # ----- matmul ---------------------------------------------------------------------
    OpRecord("matmul", lambda a, b: a @ b, torch.matmul,
             [S(r(3, 4), r(4, 5)), S(r(4), r(4)), S(r(4), r(4, 5)), S(r(3, 4), r(4)),
              S(r(2, 3, 4), r(4, 5)), S(r(2, 1, 3, 4), r(5, 4, 2)), S(r(4), r(2, 4, 3)),
              # a matrix over a batch, dA as one GEMM with K or with M as its rows
              S(r(3, 4), r(2, 4, 5)), S(r(5, 2), r(2, 1, 2, 3))],
             errors=[_MM_ERROR], second_order=True),
    OpRecord("linear", ag.linear, TF.linear,
             [S(r(4, 3), r(5, 3), r(5)), S(r(2, 6, 3), r(5, 3), r(5)), S(r(4, 3), r(5, 3)),
              S(r(2, 6, 3), r(5, 3)), S(r(3), r(2, 3), r(2)), S(r(2, 2, 4, 3), r(5, 3), r(5))],
             errors=[ErrorSample(S(r(4, 3), r(5, 4)), ShapeError,
                                 r"linear: input of shape \(4, 3\) does not fit weight \(5, 4\)"),
                     ErrorSample(S(r(4, 3), r(5, 3), r(4)), ShapeError,
                                 r"linear: bias must have shape \(5,\)"),
                     ErrorSample(S(r(4, 3), r(3)), ShapeError, "linear: weight must be 2-D")],
             second_order=True),
    # ----- reductions -----------------------------------------------------------------
    OpRecord("sum", ag.sum, torch.sum,
             [S(r(3, 4)), S(r(3, 4), dim=1), S(r(2, 3, 4), dim=(0, 2), keepdim=True),
              S(r(2, 3), dim=-1), S(r())],
             errors=[ErrorSample(S(r(2, 3), dim=2), ShapeError, "sum: dim 2")],
             second_order=True),
    # prod's inputs stay away from 0 (its rule divides there) except where a sample puts
    # zeros: one in a slice (the gradient there is the product of the others), two
    # (zero gradient), none (out / x)
    OpRecord("prod", ag.prod, _torch_prod,
             [S(away(3, 4)), S(away(3, 4), dim=1), S(away(2, 3, 4), dim=(0, 2), keepdim=True),
              S(away(2, 3), dim=-1), S(away()), S(away(4), dim=0, keepdim=True),
              S(zeros_at(away(3, 4), (1, 2))), S(zeros_at(away(3, 4), (1, 2), (2, 0))),
              S(zeros_at(away(3, 4), (0, 1), (0, 3), (2, 0)), dim=1),
              S(zeros_at(away(3, 4), (0, 1), (0, 3), (2, 0)), dim=0),
              S(zeros_at(away(2, 3, 4), (0, 1, 2), (1, 1, 0), (1, 2, 3)), dim=(0, 2))],
             errors=[ErrorSample(S(r(2, 3), dim=2), ShapeError, "prod: dim 2"),
                     ErrorSample(S(r(2, 3), dim=0, axis=1), TypeError,
                                 "prod: got both dim=0 and axis=1")],
             second_order=True, kernel="reduce_prod"),
    OpRecord("cumsum", ag.cumsum, torch.cumsum,
             [S(r(3, 4), 1), S(r(3, 4), 0), S(r(2, 3, 4), dim=-2), S(r(5), dim=0),
              S(r(), 0), S(r(2, 0, 3), 1)],
             errors=[ErrorSample(S(r(2, 3), 2), ShapeError, "cumsum: dim 2 is out of range"),
                     ErrorSample(S(r(2, 3)), TypeError, "cumsum: missing the dim argument")],
             second_order=True, kernel="cumsum_last"),
    OpRecord("mean", ag.mean, torch.mean,
             [S(r(3, 4)), S(r(3, 4), dim=0), S(r(2, 3, 4), dim=(1, 2), keepdim=True)]),
    OpRecord("amax", ag.amax, torch.amax,
             [S(distinct(3, 4), dim=1), S(distinct(2, 3, 4), dim=(0, 2), keepdim=True),
              kink(S(ties(4, 5), dim=0)), S(distinct(5))]),
    OpRecord("amin", ag.amin, torch.amin,
             [S(distinct(3, 4), dim=1), kink(S(ties(4, 5), dim=(0, 1))), S(distinct(5))]),
    OpRecord("var", ag.var, torch.var,
             [S(r(3, 4)), S(r(3, 4), dim=1), S(r(2, 3, 4), dim=(0, 2), keepdim=True),
              S(r(5), correction=0), S(r(4, 3), dim=0, unbiased=False)]),
    OpRecord("std", ag.std, torch.std, [S(r(3, 4)), S(r(3, 4), dim=0, keepdim=True)]),
    OpRecord("logsumexp", ag.logsumexp, torch.logsumexp,
             [S(r(3, 4), dim=1), S(r(3, 4), dim=0, keepdim=True), S(r(2, 3, 4), dim=-1)],
             second_order=True),
    OpRecord("softmax", ag.softmax, torch.softmax,
             [S(r(3, 4), dim=1), S(r(3, 4), dim=0), S(r(2, 3, 4), dim=-1)],
             second_order=True),
    OpRecord("log_softmax", ag.log_softmax, torch.log_softmax,
             [S(r(3, 4), dim=1), S(r(2, 3, 4), dim=0)], second_order=True),
    OpRecord("nll_loss", nll_loss, TF.nll_loss,
             [S(r(4, 5), idx(5, 4)), S(r(4, 5), idx(5, 4), reduction="sum"),
              S(r(2, 3, 4), idx(3, 2, 4), reduction="none"),
              S(r(6, 3), np.array([1, -100, 2, 0, -100, 1]), pos(3)),
              S(r(3, 4), np.array([3, 0, 7]), ignore_index=7, reduction="none"),
              S(r(2, 3, 2, 2), idx(3, 2, 2, 2), pos(3), reduction="sum")],
             second_order=True, constant_args=(2,),
             errors=[ErrorSample(S(r(3, 4), np.array([0, 4, 1])), IndexError,
                                 "index 4 is out of range for an axis of size 4")]),
    OpRecord("argmax", ag.argmax, torch.argmax,
             [S(distinct(3, 4)), S(distinct(3, 4), dim=1), S(distinct(2, 3, 4), dim=0,
                                                             keepdim=True)],
             differentiable=False),
    # ----- shape ----------------------------------------------------------------------
    OpRecord("to", lambda x: (x.double() * 2).to(x.dtype) + x.clone(),
             lambda x: (x.double() * 2).to(x.dtype) + x.clone(), [S(r(3, 4))]),
    OpRecord("reshape", ag.reshape, torch.reshape,
             [S(r(3, 4), (4, 3)), S(r(2, 3, 4), (-1, 4)), S(r(6), (1, 2, 3))],
             errors=[ErrorSample(S(r(2, 3), (4, 2)), ShapeError, r"\(2, 3\)")]),
    OpRecord("view", ag.view, lambda x, s: x.reshape(s), [S(r(3, 4), (2, 6))]),
    OpRecord("permute", ag.permute, torch.permute,
             [S(r(2, 3, 4), (2, 0, 1)), S(r(3, 4), (1, 0))],
             errors=[ErrorSample(S(r(2, 3), (0, 0)), ShapeError, "permute")]),
    OpRecord("transpose", ag.transpose, torch.transpose, [S(r(2, 3, 4), 0, 2),
                                                          S(r(3, 4), -1, -2)]),
    OpRecord("broadcast_to", ag.broadcast_to, torch.broadcast_to,
             [S(r(3, 1), (2, 3, 4)), S(r(4), (3, 4)), S(r(), (2, 2))],
             errors=[ErrorSample(S(r(3), (4,)), ShapeError, r"\(3,\)")]),
    OpRecord("expand", lambda x, *s: x.expand(*s), lambda x, *s: x.expand(*s),
             [S(r(3, 1), 2, -1, 4), S(r(1, 4), 3, 4)]),
    OpRecord("squeeze", ag.squeeze, lambda x, dim=None: x.squeeze() if dim is None
             else x.squeeze(dim), [S(r(3, 1, 4, 1)), S(r(3, 1, 4), dim=1), S(r(1, 1), dim=0)]),
    OpRecord("unsqueeze", ag.unsqueeze, torch.unsqueeze, [S(r(3, 4), 1), S(r(3, 4), -1)]),
    OpRecord("flatten", ag.flatten, torch.flatten,
             [S(r(2, 3, 4)), S(r(2, 3, 4, 2), 1, 2), S(r(2, 3, 4), start_dim=1)]),
    OpRecord("flip", ag.flip, torch.flip, [S(r(3, 4), (0,)), S(r(2, 3, 4), (0, 2))]),
    OpRecord("getitem", lambda x, k: x[k], _torch_getitem, [
        S(r(3, 4), 1), S(r(3, 4), (slice(None), slice(1, 3))),
        S(r(4, 5), (slice(None, None, 2), slice(None, None, -1))),
        S(r(3, 4), (None, Ellipsis, 0)), S(r(2, 3, 4), (1, slice(None), -1)),
        S(r(5, 3), [0, 2, 2, 4]), S(r(3, 5), (slice(None), [4, 0, 4])),
        S(r(5, 3), ([1, 3], slice(1, None))), S(r(2, 4, 3), (slice(None), [[0, 1], [3, 3]])),
        S(r(3, 4), ([0, 2, 2], [1, 1, 3])), S(r(2, 3, 4), (slice(None), 0, [1, 3])),
        S(r(2, 3, 4), ([1, 0], slice(None), [3, -1])),
        S(r(3, 4), (np.array([True, False, True]), 1)),
        S(r(2, 3, 4), (Ellipsis, [0, 3])), S(r(2, 3, 4), (None, 1, [[0], [2]], [1, 2])),
    ], covers=("slice", "slice_scatter"),
        errors=[ErrorSample(S(r(3, 4), ([0, 1], [1, 2, 0])), IndexError, "getitem: shape mismatch"),
                ErrorSample(S(r(3, 4), ([0, 1], [0, 4])), IndexError,
                            "getitem: index 4 is out of bounds for dim 1 with size 4")]),
    OpRecord("cat", lambda *xs, dim=0: ag.cat(xs, dim), lambda *xs, dim=0: torch.cat(xs, dim),
             [S(r(2, 3), r(4, 3)), S(r(2, 3), r(2, 1), r(2, 2), dim=1),
              # int64 and float promote to the float (fixed values: _rng's sequence stays)
              S(np.arange(6).reshape(2, 3), np.linspace(-1.0, 1.0, 3).reshape(1, 3))],
             errors=[ErrorSample(S(r(2, 3), r(2, 4)), ShapeError, "cat: tensor 1")]),
    OpRecord("stack", lambda *xs, dim=0: ag.stack(xs, dim),
             lambda *xs, dim=0: torch.stack(xs, dim),
             [S(r(2, 3), r(2, 3)), S(r(3), r(3), r(3), dim=1),
              S(np.linspace(-1.0, 1.0, 3), np.arange(3), dim=1)],
             errors=[ErrorSample(S(r(2, 3), r(3, 2)), ShapeError, "stack")]),
    OpRecord("split", ag.split, torch.split, [S(r(5, 3), 2), S(r(3, 6), [1, 2, 3], dim=1)]),
    OpRecord("chunk", ag.chunk, torch.chunk, [S(r(6, 3), 3), S(r(3, 5), 2, dim=1)]),
    OpRecord("pad", ag.pad, _torch_pad,
             [S(r(3, 4), ((1, 2), (0, 1))), S(r(1, 2, 3, 3), ((0, 0), (0, 0), (1, 1), (2, 0)))],
             errors=[ErrorSample(S(r(3, 4), ((1, 1),)), ShapeError, "pad")]),
    OpRecord("dilate", ag.dilate, _torch_dilate,
             [S(r(3, 4), (0,), 1), S(r(2, 3), (0, 1), 2)]),
    OpRecord("undilate", ag.undilate,
             lambda x, axes, d: x[tuple(slice(None, None, d + 1) if i in axes else slice(None)
                                        for i in range(x.ndim))],
             [S(r(6, 4), (0,), 1), S(r(5, 7), (0, 1), 2)]),
    # ----- indexing -------------------------------------------------------------------
    OpRecord("take", ag.take, _torch_take,
             [S(r(5, 3), idx(5, 4)), S(r(3, 5, 2), idx(5, 2, 3), 1), S(r(6), idx(6, 8))],
             errors=[ErrorSample(S(r(5, 3), r(4)), TypeError, "int")]),
    OpRecord("gather", ag.gather, torch.gather,
             [S(r(3, 4), 1, idx(4, 3, 6)), S(r(4, 3, 2), 0, idx(4, 2, 3, 2)),
              S(r(5), 0, idx(5, 7))],
             second_order=True,
             errors=[ErrorSample(S(r(3, 4), 1, idx(4, 2)), ShapeError,
                                 r"gather: the index must have as many dims as the array"),
                     ErrorSample(S(r(3, 4), 1, np.array([[0, 5]])), IndexError,
                                 "gather: index 5 is out of bounds for dim 1 with size 4"),
                     ErrorSample(S(r(3, 4), 1, idx(4, 4, 2)), ShapeError,
                                 r"gather: index of shape \(4, 2\) must be no larger")]),
    # scatter with repeated indices keeps an arbitrary one in PyTorch: distinct ones here
    OpRecord("scatter", ag.scatter, torch.scatter,
             [S(r(3, 4), 1, np.array([[3, 0], [1, 2], [0, 1]]), r(3, 2)),
              S(r(4, 2, 3), 0, np.array([[[2, 0, 1]], [[3, 1, 0]]]), r(1, 2, 3).reshape(2, 1, 3))],
             second_order=True,
             errors=[ErrorSample(S(r(3, 4), 1, idx(4, 1, 2), r(1, 1)), ShapeError,
                                 r"scatter: index of shape \(1, 2\) must be no larger than the "
                                 r"source's shape \(1, 1\)")]),
    OpRecord("scatter_add", ag.scatter_add, torch.scatter_add,
             [S(r(3, 4), 1, idx(4, 3, 6), r(3, 6)), S(r(5), 0, idx(5, 8), r(8))],
             second_order=True,
             errors=[ErrorSample(S(r(3, 4), 2, idx(4, 3, 4), r(3, 4)), ValueError,
                                 "scatter_add: dim 2 is out of range")]),
    OpRecord("index_put", lambda x, i, v, accumulate=False: ag.index_put(x, (i,), v, accumulate),
             lambda x, i, v, accumulate=False: x.index_put((i,), v, accumulate),
             [S(r(5, 3), np.array([4, 0, 2]), r(3, 3)), S(r(5, 3), np.array([4, 0]), r(3)),
              S(r(5, 3), idx(5, 7), r(7, 3), accumulate=True), S(r(4, 3), mask(4), r(3))],
             second_order=True, covers=("put",),
             errors=[ErrorSample(S(r(5, 3), np.array([4, 0]), r(2)), ShapeError,
                                 r"index_put: a value of shape \(2,\) cannot be broadcast to "
                                 r"the indexing result's shape \(2, 3\)")]),
    OpRecord("index_scatter_add", ag.index_scatter_add, _torch_scatter_add,
             [S(r(4, 3), idx(5, 4), 0, 5), S(r(2, 6, 3), np.array([0, 1, 1, 3, 0, 3]), 1, 4)],
             second_order=True),
    # the op table's binary bitwise ops, through their operators (a & b, ...)
    *[OpRecord(name, _operator(name), getattr(torch, name),
               [S(idx(5, 3, 4) - 2, idx(5, 3, 4) - 2), S(mask(3, 4), mask(4))],
               differentiable=False, kernel=f"ewise_{name}")
      for name in ops(arity=2, dtypes="integral")],
    OpRecord("bitwise_not", lambda a: ~a, torch.bitwise_not,
             [S(idx(5, 3, 4) - 2), S(mask(3, 4))], differentiable=False,
             kernel="ewise_bitwise_not"),
    OpRecord("masked_select", ag.masked_select, lambda x, m: x[m],
             [S(r(3, 4), mask(3, 4)), S(r(3, 4), mask(3)), S(r(2, 3, 2), mask(2, 3))]),
    OpRecord("masked_fill", ag.masked_fill,
             lambda x, m, v: x.masked_fill(m, v),
             [S(r(3, 4), mask(3, 4), 0.5), S(r(3, 4), mask(4), -2.0)]),
    OpRecord("nonzero", ag.nonzero, torch.nonzero, [S(ties(3, 4)), S(ties(2, 3, 2))],
             differentiable=False),
    OpRecord("embedding", ag.embedding, lambda i, w: TF.embedding(i, w),
             [S(idx(7, 2, 5), r(7, 3)), S(idx(4, 6), r(4, 2))]),
    OpRecord("one_hot", lambda i, c: ag.one_hot(i, c),
             lambda i, c: TF.one_hot(i, c).double(), [S(idx(4, 6), 4), S(idx(3, 2, 3), 5)],
             differentiable=False, out_dtype="float32"),
    # ----- convolution and pooling ----------------------------------------------------
    OpRecord("im2col", im2col, _unfold,
             [S(r(2, 3, 5, 4), (2, 3), (1, 1), (0, 0), (1, 1)),
              S(r(1, 2, 6, 6), (3, 3), (2, 1), (1, 2), (1, 2))], covers=("col2im",),
             second_order=True),
    OpRecord("conv2d", ag.conv2d, TF.conv2d, [
        S(r(2, 3, 6, 5), r(4, 3, 3, 3)),
        S(r(1, 2, 7, 7), r(3, 2, 3, 2), r(3), stride=2, padding=1),
        S(r(2, 2, 8, 8), r(2, 2, 3, 3), None, stride=(1, 2), padding=(2, 1), dilation=2),
        # kernels cropped to the taps that reach the input (1x1 and 2x1 images)
        S(r(2, 3, 1, 1), r(4, 3, 3, 3), r(4), padding=1),
        S(r(1, 2, 2, 1), r(3, 2, 5, 3), None, padding=2, stride=2),
        # >= 128 output pixels: the conv2d kernels where the device has them (a GEMM
        # per image), else with >= 64 taps one GEMM per image on the columns
        S(r(2, 8, 12, 12), r(5, 8, 3, 3), r(5), padding=1),
        S(r(1, 16, 14, 15), r(3, 16, 2, 2), None, dilation=2),
        S(r(2, 3, 23, 22), r(4, 3, 3, 3), r(4), stride=2, padding=1),
        S(r(2, 1, 14, 14), r(3, 1, 3, 3)),
    ], errors=[ErrorSample(S(r(1, 3, 5, 5), r(4, 2, 3, 3)), ShapeError, "conv2d"),
               ErrorSample(S(r(1, 1, 2, 2), r(1, 1, 3, 3)), ShapeError, "too small")],
        covers=("conv2d_gemm", "conv2d_gemm_input_grad", "conv2d_gemm_weight_grad"),
        second_order=True),
    OpRecord("conv_transpose2d", ag.conv_transpose2d, TF.conv_transpose2d, [
        S(r(2, 3, 4, 5), r(3, 2, 3, 3)),
        S(r(1, 2, 3, 3), r(2, 4, 4, 4), r(4), stride=2, padding=1),
        S(r(2, 2, 3, 4), r(2, 3, 3, 2), None, stride=(2, 3), padding=(1, 0),
          output_padding=(1, 2), dilation=(1, 2)),
        # output_padding past the cropped input (>= padding), and >= stride but < dilation
        S(r(1, 2, 2, 2), r(2, 2, 3, 3), r(2), stride=2, padding=2, output_padding=1),
        S(r(1, 1, 3, 3), r(1, 1, 3, 3), None, output_padding=1, dilation=2),
    ], errors=[ErrorSample(S(r(1, 3, 5, 5), r(2, 3, 3, 3)), ShapeError, "conv_transpose2d"),
               ErrorSample(S(r(1, 1, 3, 3), r(1, 1, 3, 3), None, 2, 0, 2), ValueError,
                           "output_padding")],
        second_order=True),
    OpRecord("max_pool2d", ag.max_pool2d, TF.max_pool2d, [
        S(distinct(2, 3, 6, 6), 2), S(distinct(1, 2, 7, 5), 3, 2, 1),
        S(distinct(1, 1, 5, 6), (2, 3), (1, 2)),
        S(distinct(1, 2, 9, 8), 3, 2, 1, 2, True), S(distinct(2, 1, 5, 5), 2, ceil_mode=True)],
        covers=("max_pool2d_with_indices", "max_pool2d_with_indices_backward"),
        second_order=True),
    OpRecord("avg_pool2d", ag.avg_pool2d, TF.avg_pool2d, [
        S(r(2, 3, 6, 6), 2), S(r(1, 2, 7, 5), 3, 2, 1), S(r(1, 1, 5, 6), (2, 3), (1, 2))]),
    OpRecord("dropout", lambda x, **k: ag.dropout(x, **k), lambda x, **k: TF.dropout(x, **k),
             [S(r(3, 4), p=0.0), S(r(3, 4), p=0.5, training=False)],
             errors=[ErrorSample(S(r(3), p=1.5), ValueError, "dropout")]),
    # ----- recurrent layers -----------------------------------------------------------
    OpRecord("lstm_layer", ag.lstm_layer, _torch_lstm_layer,
             [S(r(4, 3, 8), r(3, 2), r(3, 2), r(8, 2)), S(r(1, 2, 12), r(2, 3), r(2, 3), r(12, 3))],
             errors=[ErrorSample(S(r(4, 3, 8), r(3, 3), r(3, 2), r(8, 2)), ShapeError,
                                 "lstm_layer")],
             second_order=True),
    OpRecord("lstm_layer_reference", lstm_layer_reference, _torch_lstm_layer,
             [S(r(3, 2, 8), r(2, 2), r(2, 2), r(8, 2))]),
    # ----- normalisation --------------------------------------------------------------
    OpRecord("layer_norm", ag.layer_norm, _torch_layer_norm,
             [S(r(4, 6), r(6), r(6)), S(r(2, 3, 5), r(5), r(5), eps=1e-3), S(r(7), r(7), r(7))],
             errors=[ErrorSample(S(r(4, 6), r(5), r(6)), ShapeError, "layer_norm")],
             second_order=True),
    OpRecord("layer_norm_reference", layer_norm_reference, _torch_layer_norm,
             [S(r(3, 4), r(4), r(4))]),
    OpRecord("batch_norm", _batch_norm, _torch_batch_norm,
             [S(r(6, 3), r(3), r(3)), S(r(2, 3, 4, 5), r(3), r(3), eps=1e-3),
              S(r(3, 2, 7), r(2), r(2)), S(r(3, 2, 4, 4), r(2), r(2), r(2), pos(2))],
             errors=[ErrorSample(S(r(4, 3), r(4), r(3)), ShapeError, "batch_norm"),
                     ErrorSample(S(r(1, 3), r(3), r(3)), ValueError,
                                 "more than 1 value per channel")],
             second_order=True, constant_args=(3, 4)),
    OpRecord("batch_norm_reference", _batch_norm_reference, _torch_batch_norm,
             [S(r(5, 2, 3), r(2), r(2)), S(r(3, 2), r(2), r(2), r(2), pos(2))],
             constant_args=(3, 4)),
    # ----- attention --------------------------------------------------------------------
    OpRecord("scaled_dot_product_attention", ag.scaled_dot_product_attention,
             TF.scaled_dot_product_attention, _ATTENTION_SAMPLES,
             errors=[ErrorSample(S(r(2, 3, 4), r(2, 5, 3), r(2, 5, 6)), ShapeError,
                                 "same embedding size"),
                     ErrorSample(S(r(2, 3, 4), r(2, 5, 4), r(2, 4, 6)), ShapeError,
                                 "same sequence length"),
                     ErrorSample(S(r(2, 3, 4), r(2, 5, 4), r(2, 5, 6), r(4, 5)), ShapeError,
                                 "does not broadcast")],
             second_order=True, constant_args=(3,)),
    OpRecord("scaled_dot_product_attention_reference", scaled_dot_product_attention_reference,
             TF.scaled_dot_product_attention, _ATTENTION_SAMPLES[:3], constant_args=(3,)),
    # ----- integer division (last: their draws leave the samples above unchanged) ------
    OpRecord("floor_divide", lambda a, b: a // b, torch.floor_divide,
             [S(r(3, 4) * 3, pos(3, 4)), S(r(2, 3) * 3, pos(3)), S(r(5) * 3, 0.75)],
             differentiable=False, kernel="ewise_floordiv"),
    OpRecord("remainder", lambda a, b: a % b, torch.remainder,
             [S(r(3, 4) * 3, pos(3, 4)), S(r(2, 3) * 3, pos(3))], kernel="ewise_remainder"),
    # logical_and/or/xor: the bitwise op of the table on truth values (any dtype), as bool
    *[OpRecord(op.logical, getattr(ag, op.logical), getattr(torch, op.logical),
               [S(idx(5, 3, 4) - 2, idx(5, 3, 4) - 2), S(mask(3, 4), mask(4)),
                S(ties(3, 4), ties(4))],
               differentiable=False, kernel=f"ewise_{op.name}")
      for op in OPS.values() if op.logical],
    # gru_layer (last, so its draws leave the samples above unchanged); the reference is
    # checked against it in test_gru_layer.py
    OpRecord("gru_layer", ag.gru_layer, _torch_gru_layer,
             [S(r(4, 3, 9), r(3, 3), r(9, 3), r(9)), S(r(1, 2, 6), r(2, 2), r(6, 2), r(6))],
             errors=[ErrorSample(S(r(4, 3, 9), r(3, 3), r(9, 3), r(6)), ShapeError, "gru_layer")],
             second_order=True, covers=("gru_layer_reference",)),
]

BY_NAME = {rec.name: rec for rec in RECORDS}
