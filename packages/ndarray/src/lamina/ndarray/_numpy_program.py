"""The numpy reference backend's ``ewise_program`` (interface v2.1).

An elementwise program is a chain of the op table's elementwise kernels run
as one call (``lamina/program_ops.h`` numbers its ops, ``PROGRAM_OPS`` lists
them). Its result is defined as that of running each instruction's own kernel
in order over ``n`` elements, with a temporary of ``n`` elements for each
temporary operand: what this reference does with the backend's own kernels,
so it equals the unfused calls exactly. A compiled backend runs the same loops
block by block, in cache (``program.cc``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._interface import PROGRAM_OPS

KERNEL_DTYPES = {"ewise_program": ("float32", "float64")}

_MAX_TEMPS = 16


def run_program(backend: Any, array: type, bufs: Sequence[Any], code: Sequence[int],
                scalars: Sequence[float], n: int) -> None:
    """Runs ``code`` (4 ints an instruction: op, dst, a, b) over the first ``n``
    elements of ``bufs`` with ``backend``'s kernels; ``array`` is its buffer type."""
    if not bufs:
        raise ValueError("ewise_program: no buffers")
    if len(code) % 4:
        raise ValueError(f"ewise_program: code has {len(code)} ints, not 4 per instruction")
    if n < 0:
        raise ValueError(f"ewise_program: n must be >= 0, got {n}")
    dtype = bufs[0].dtype
    if dtype not in KERNEL_DTYPES["ewise_program"]:
        raise TypeError(f"ewise_program: buffers are {dtype}; programs run on float32 and "
                        f"float64")
    views = []
    for i, b in enumerate(bufs):
        if b.dtype != dtype:
            raise TypeError(f"ewise_program: buffer {i} is {b.dtype}, buffer 0 is {dtype}; a "
                            f"program runs on one dtype")
        if b.size < n:
            raise ValueError(f"ewise_program: buffer {i} has {b.size} elements, the program {n}")
        views.append(_over(array, b.data[:n]))
    temps: dict[int, Any] = {}

    def operand(x: int, what: str, at: int) -> Any:
        if x >= len(bufs) or x < -_MAX_TEMPS:
            raise ValueError(f"ewise_program: instruction {at}: {what} {x} is neither a buffer "
                             f"(0..{len(bufs) - 1}) nor a temporary (-1..-{_MAX_TEMPS})")
        if x >= 0:
            return views[x]
        if x not in temps:
            temps[x] = _over(array, np.empty(n, np.dtype(dtype)))
        return temps[x]

    for at in range(len(code) // 4):
        op, dst, a, b = (int(v) for v in code[4 * at:4 * at + 4])
        if not 0 <= op < len(PROGRAM_OPS):
            raise ValueError(f"ewise_program: instruction {at}: op {op} is out of range "
                             f"(0..{len(PROGRAM_OPS) - 1})")
        name, kind = PROGRAM_OPS[op]
        kernel = getattr(backend, name if kind == "scalar" else f"ewise_{name}", None)
        if kernel is None:
            raise TypeError(f"ewise_program: {name} has no {dtype} kernel")
        out, first = operand(dst, "destination", at), operand(a, "operand", at)
        if kind == "binary":
            kernel(first, operand(b, "operand", at), out)
        elif kind == "scalar":
            if not 0 <= b < len(scalars):
                raise ValueError(f"ewise_program: instruction {at}: value {b} is out of range "
                                 f"for {len(scalars)} scalars")
            kernel(first, float(scalars[b]), out)
        else:
            kernel(first, out)


def _over(array: type, data: np.ndarray) -> Any:
    """A buffer of type ``array`` over ``data`` (no copy)."""
    buf: Any = object.__new__(array)
    buf.data = data
    return buf
