"""The numpy reference backend's sorting and sampling kernels (interface v2.1).

``sort_last`` and ``multinomial_last`` work on the contiguous last axis of a
compact ``(rows, size)`` operand, like ``cumsum_last``; ``_numpy_backend``
sets them on its backend class. They define what the compiled backends'
kernels must return, bit for bit (docs/backend-interface.md):

- ``sort_last``: PyTorch's order, stable in both directions (equal values
  keep the first index first; -0.0 equals 0.0); NaN is the largest value.
- ``multinomial_last``: the inverse-CDF search over each row's running sum,
  accumulated in float64 from left to right, with uniforms drawn on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_PROB_DTYPES = ("float32", "float64")


def _rows_of(op: str, out_size: int, per_row: int, size: int, a: Any) -> int:
    """The row count of outputs of ``out_size`` elements, ``per_row`` to a row."""
    if size < 0 or per_row < 0:
        raise ValueError(f"{op}: size and the count per row must be >= 0, got {size} "
                         f"and {per_row}")
    if per_row == 0:
        return 0
    if out_size % per_row:
        raise ValueError(f"{op}: out has {out_size} elements, not a whole number of rows "
                         f"of {per_row}")
    rows = out_size // per_row
    if a.data.size < rows * size:
        raise ValueError(f"{op}: input has {a.data.size} elements, expected {rows}x{size}")
    return rows


def stable_order(rows: np.ndarray, descending: bool) -> np.ndarray:
    """Stable sorting indices along the last axis, NaN largest. Descending sorts
    the reversed rows ascending and reverses the result, so that ties still keep
    the first index first and NaN comes first."""
    if not descending:
        return np.argsort(rows, axis=-1, kind="stable")
    rev = np.argsort(rows[..., ::-1], axis=-1, kind="stable")
    return rows.shape[-1] - 1 - rev[..., ::-1]


def sort_last(a: Any, values_out: Any, indices_out: Any, size: int, k: int,
              descending: bool) -> None:
    """The first ``k`` of each row's stable sort: values and int64 indices (rows, k)."""
    op = "sort_last"
    if indices_out.data.dtype != np.int64 or values_out.data.dtype != a.data.dtype:
        raise TypeError(f"{op}: expected values_out of the input's dtype {a.data.dtype} and "
                        f"int64 indices_out, got {values_out.data.dtype} and "
                        f"{indices_out.data.dtype}")
    if not 0 <= k <= size:
        raise ValueError(f"{op}: k={k} is out of range for rows of size {size}")
    if values_out.data.size != indices_out.data.size:
        raise ValueError(f"{op}: values_out has {values_out.data.size} elements, indices_out "
                         f"{indices_out.data.size}; both need rows x k")
    rows = _rows_of(op, values_out.data.size, k, size, a)
    if not rows:
        return
    src = a.data[:rows * size].reshape(rows, size)
    order = stable_order(src, descending)[:, :k]
    np.copyto(indices_out.data.reshape(rows, k), order)
    np.copyto(values_out.data.reshape(rows, k), np.take_along_axis(src, order, 1))


def multinomial_last(probs: Any, uniforms: Any, out: Any, size: int, samples: int) -> None:
    """``out[r, j]``: the category of row ``r`` whose interval of the running sum
    holds ``uniforms[r, j] * total``; (rows, size) weights, (rows, samples) out."""
    op = "multinomial_last"
    if (probs.data.dtype.name not in _PROB_DTYPES or uniforms.data.dtype != np.float64
            or out.data.dtype != np.int64):
        raise TypeError(f"{op}: expected float32 or float64 probs, float64 uniforms and int64 "
                        f"out, got {probs.data.dtype}, {uniforms.data.dtype} and "
                        f"{out.data.dtype}")
    if size < 1:
        raise ValueError(f"{op}: size must be >= 1, got {size}")
    rows = _rows_of(op, out.data.size, samples, size, probs)
    if uniforms.data.size < out.data.size:
        raise ValueError(f"{op}: uniforms has {uniforms.data.size} elements, out has "
                         f"{out.data.size}")
    if not rows:
        return
    # np.cumsum adds from left to right, as the compiled kernels do.
    cdf = np.cumsum(probs.data[:rows * size].reshape(rows, size), axis=1, dtype=np.float64)
    targets = uniforms.data[:rows * samples].reshape(rows, samples) * cdf[:, -1:]
    # A target rounded up to the total picks the last category with weight: the
    # first whose running sum reaches the total (0 for an all-zero row).
    picked = [np.minimum(np.searchsorted(c, t, side="right"), np.searchsorted(c, c[-1]))
              for c, t in zip(cdf, targets)]
    np.copyto(out.data.reshape(rows, samples), np.stack(picked))

KERNEL_DTYPES = {"multinomial_last": _PROB_DTYPES}
"""The kernels here that take fewer dtypes than the backend lists (by their first input)."""
