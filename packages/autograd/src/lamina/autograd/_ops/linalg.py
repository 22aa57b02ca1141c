"""Matrix multiplication (numpy's rules for 1-D and batched operands) and ``linear``."""

from __future__ import annotations

import math
from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray, ShapeError

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor_base import Tensor, TensorBase
from ._util import as_tensors
from .shape import to


class Matmul(Function):
    """``a @ b``: 1-D, 2-D, or batched ``(*B, N, K) @ (*B, K, M)`` with broadcast ``B``.

    The rule promotes 1-D operands to matrices (``(K,)`` as ``(1, K)`` on the
    left, ``(K, 1)`` on the right), applies ``dA = dC @ B^T`` and
    ``dB = A^T @ dC``, then drops the added axis; the engine sums any
    broadcast batch axes away, except for a matrix ``B`` under a batched
    ``A`` or a matrix ``A`` over a batched ``B``, whose gradient is one GEMM
    over the whole batch.
    """

    name = "matmul"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        if not a._shape or not b._shape:
            raise ShapeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                             f"{a.shape} and {b.shape}; use * to multiply by a scalar")
        return a @ b

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, TensorBase | None]:
        a, b = self.inputs
        need_a, need_b = self.needs_input_grad
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        b2 = b.unsqueeze(-1) if b.ndim == 1 else b
        if a.ndim == 1 and b.ndim == 1:
            g2 = g.reshape(1, 1)
        elif a.ndim == 1:
            g2 = g.unsqueeze(-2)
        else:
            g2 = g.unsqueeze(-1) if b.ndim == 1 else g
        ga = gb = None
        # A gradient takes its operand's layout: for a transposed operand (a
        # view such as x.mT) the transposed product is computed, whose .mT
        # is compact once the view's own backward transposes it back, so no
        # transposing copy follows (PyTorch's rule too). Same GEMM, same cost.
        if need_a:
            if a.ndim == 2 and b2.ndim > 2:
                ga = _summed_over_batch(g2, b2, _transposed(a2))
            else:
                ga = (b2 @ g2.mT).transpose(-2, -1) if _transposed(a2) else g2 @ b2.mT
                ga = ga.squeeze(-2) if a.ndim == 1 else ga
        if need_b:
            if b2.ndim == 2 and a2.ndim > 2:
                # (*B, N, K) @ (K, M), a Linear on a batch of sequences: dB sums
                # A^T dC over every batch, which is one (K, B*N) @ (B*N, M) GEMM
                # rather than B small ones and a reduction of B partial results.
                a2, g2 = a2.reshape(-1, a2.shape[-1]), g2.reshape(-1, g2.shape[-1])
            gb = (g2.mT @ a2).transpose(-2, -1) if _transposed(b2) else a2.mT @ g2
            gb = gb.squeeze(-1) if b.ndim == 1 else gb
        return ga, gb


def _summed_over_batch(g: TensorBase, b: TensorBase, transposed: bool) -> TensorBase:
    """dA for a matrix ``A (M, K)`` times a batch ``B (*, K, N)``: the sum over the batch
    of ``dC @ B^T``, as one GEMM over the batch's columns side by side rather than one
    per batch entry and a reduction of their partial results (conv2d's filters over a
    batch of images take this path).

    The GEMM runs with the longer of M and K as its rows: for the second convolution of
    PyTorch's MNIST example (64 filters of 288 taps over 64 images of 576 pixels) it took
    14 ms, plus 2 ms for the transposing copy of dC, against 20-22 ms for the batch of
    GEMMs and the sum (Zen 4, 1 thread). The product is then transposed back, a copy of
    only M x K, unless A is a transposed view itself (then the gradient takes its layout).
    """
    rows = math.prod(g.shape[:-2]) * g.shape[-1]  # B*N, not -1: K or M may be 0
    rows_g = g.transpose(-2, -1).reshape(rows, g.shape[-2])  # (B*N, M): a copy of dC
    rows_b = b.transpose(-2, -1).reshape(rows, b.shape[-2])  # (B*N, K): a view where B^T is
    if not transposed and rows_b.shape[1] <= rows_g.shape[1]:
        return rows_g.transpose(0, 1) @ rows_b
    ga = (rows_b.transpose(0, 1) @ rows_g).transpose(0, 1)
    return ga if transposed else to(ga, copy=True)  # the copy is compact


def _transposed(t: TensorBase) -> bool:
    """Whether t's last two dims are a transposed compact matrix (column stride 1)."""
    shape, strides = t._data.shape, t._data.strides
    return len(shape) >= 2 and shape[-1] > 1 and shape[-2] > 1 and strides[-2] == 1


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with numpy's semantics.

    Shapes: ``(K,) @ (K,) -> ()``, ``(N, K) @ (K, M) -> (N, M)``,
    ``(*B1, N, K) @ (*B2, K, M) -> (*broadcast(B1, B2), N, M)``.

    Raises:
        ShapeError: the inner dimensions differ, or an operand is 0-d.
    """
    return Matmul.apply(a, b)


class Linear(Function):
    """``x @ weight^T + bias`` as one node: the layer every model calls most.

    Forward: :func:`lamina.ndarray.linear` (one GEMM that reads W^T where it
    lies, plus the bias, in place for a single row). Backward, with the batch
    flattened to rows (N = prod(*)): ``dX = dY @ W`` (only when x needs it),
    ``dW = dY^T @ X`` as one (out, N) @ (N, in) GEMM, ``db = sum(dY)`` over
    the rows. That one rule runs on NDArrays for a first-order backward and
    on Tensors (recorded) with ``create_graph``.
    """

    name = "linear"
    save_inputs = True

    def forward(self, x: NDArray, weight: NDArray, bias: NDArray | None = None) -> NDArray:
        return nd.linear(x, weight, bias)  # checks the shapes, naming linear

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        x, weight = self.inputs[:2]
        # One rule, on Tensors (recorded) with create_graph, else on their NDArrays.
        gv, xv, wv = ((g, x, weight) if grad_mode._state.enabled
                      else (g._data, x._data, weight._data))
        need = self.needs_input_grad
        rows = gv.reshape(-1, gv.shape[-1])
        grads = [gv @ wv if need[0] else None,
                 _weight_grad(rows, xv.reshape(-1, xv.shape[-1]), gv is g) if need[1] else None]
        if len(need) > 2:  # a bias
            grads.append(rows.sum(0) if need[2] else None)
        return as_tensors(grads)


def _weight_grad(g: Any, x: Any, recorded: bool) -> Any:
    """``dW = g^T @ x`` for g (N, out) and x (N, in), as one GEMM.

    With many rows and in > out, ``(x^T @ g)^T`` is faster: its product is
    out columns wide instead of in (2048 rows, 512 -> 128: 6.3 -> 4.9 ms on
    Zen 3), and the (in, out) transposing copy is small next to it. On
    Tensors (recorded) the plain form keeps the graph simple.
    """
    if not recorded and g.shape[0] >= 512 and x.shape[1] > g.shape[1]:
        return (x.T @ g).T.compact()
    return g.T @ x


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight^T + bias`` in one graph node.

    Shapes: x (*, in_features), weight (out_features, in_features),
    bias (out_features,) or None -> (*, out_features).

    Raises:
        ShapeError: the last dim of x is not in_features, weight is not 2-D,
            or bias is not (out_features,).
    """
    if bias is None:
        return Linear.apply(x, weight)
    return Linear.apply(x, weight, bias)


PRIMITIVES = (Matmul, Linear)
COMPOSITES = ()
