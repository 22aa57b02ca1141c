"""The backend interface, version 1, as a typed Protocol.

``docs/backend-interface.md`` is the prose form of this contract. A backend
owns flat 1-D buffers of one dtype and kernels over them; arguments come in
the order *inputs, output, layout*; layout values count elements, never bytes;
kernels never allocate and never return.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

API_VERSION = 1

Shape = tuple[int, ...]

# Names of the kernels every backend provides, grouped by family. The
# conformance kit and the registry both read these lists.
BINARY_OPS = ("add", "sub", "mul", "div", "power", "maximum", "minimum",
              "eq", "ne", "lt", "le", "gt", "ge")
COMPARISON_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
REVERSED_SCALAR_OPS = ("rsub", "rdiv", "rpower")
UNARY_OPS = ("neg", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos", "sign")
REDUCE_OPS = ("sum", "max", "min", "argmax")

REQUIRED = (
    ("Array", "from_numpy", "to_numpy", "fill",
     "compact", "ewise_setitem", "scalar_setitem",
     "ewise_where", "ewise_cast",
     "index_gather", "index_scatter_add",
     "matmul", "matmul_batched",
     "is_available", "unavailable_reason")
    + tuple(f"ewise_{op}" for op in BINARY_OPS + UNARY_OPS)
    + tuple(f"scalar_{op}" for op in BINARY_OPS + REVERSED_SCALAR_OPS)
    + tuple(f"reduce_{op}" for op in REDUCE_OPS)
)

OPTIONAL = ("softmax_last", "logsumexp_last", "layer_norm_last", "reduce_sum_axis", "im2col",
            "col2im", "ewise_erf", "matmul_strided", "ewise_strided", "device_count",
            "synchronize")

# Optional too, but only a backend whose buffers live in host memory can have
# them (so they are not in OPTIONAL, which the cuda backend provides in full):
# zero-copy import of numpy memory. Such a backend's Array also exports the
# buffer protocol (a 1-D buffer of its dtype) for zero-copy export.
HOST_OPTIONAL = ("wrap_numpy",)


class Buffer(Protocol):
    """A flat, contiguous buffer owned by a backend."""

    @property
    def size(self) -> int: ...
    @property
    def dtype(self) -> str: ...


@runtime_checkable
class BackendProtocol(Protocol):
    """What a ``lamina.backends`` entry point must provide (version 1).

    Only a representative part is spelled out as typed methods; the full list
    of kernel names is ``REQUIRED`` (and ``OPTIONAL``) above, and every
    ``ewise_OP``/``scalar_OP``/``reduce_OP`` follows the signature of its
    family shown here.
    """

    name: str
    api_version: int
    dtypes: tuple[str, ...]

    def is_available(self) -> bool: ...
    def unavailable_reason(self) -> str: ...

    # buffers
    def Array(self, size: int, dtype: str) -> Buffer: ...  # noqa: N802
    def from_numpy(self, src: Any, out: Buffer) -> None: ...
    def to_numpy(self, a: Buffer, shape: Shape, strides: Shape, offset: int) -> Any: ...
    def fill(self, out: Buffer, value: float) -> None: ...

    # strided access
    def compact(self, a: Buffer, out: Buffer, shape: Shape, strides: Shape,
                offset: int) -> None: ...
    def ewise_setitem(self, a: Buffer, out: Buffer, shape: Shape, strides: Shape,
                      offset: int) -> None: ...
    def scalar_setitem(self, size: int, value: float, out: Buffer, shape: Shape,
                       strides: Shape, offset: int) -> None: ...

    # elementwise families
    def ewise_add(self, a: Buffer, b: Buffer, out: Buffer) -> None: ...
    def scalar_add(self, a: Buffer, value: float, out: Buffer) -> None: ...
    def ewise_exp(self, a: Buffer, out: Buffer) -> None: ...
    def ewise_where(self, cond: Buffer, a: Buffer, b: Buffer, out: Buffer) -> None: ...
    def ewise_cast(self, a: Buffer, out: Buffer) -> None: ...

    # reductions over the contiguous last axis
    def reduce_sum(self, a: Buffer, out: Buffer, size: int) -> None: ...
    def reduce_argmax(self, a: Buffer, out: Buffer, size: int) -> None: ...

    # indexing
    def index_gather(self, a: Buffer, idx: Buffer, out: Buffer, outer: int,
                     axis_size: int, inner: int) -> None: ...
    def index_scatter_add(self, a: Buffer, idx: Buffer, out: Buffer, outer: int,
                          axis_size: int, inner: int) -> None: ...

    # matrix multiplication
    def matmul(self, a: Buffer, b: Buffer, out: Buffer, m: int, n: int, p: int) -> None: ...
    def matmul_batched(self, a: Buffer, b: Buffer, out: Buffer, batch: int, m: int,
                       n: int, p: int) -> None: ...


def missing_kernels(backend: object) -> list[str]:
    """Names from ``REQUIRED`` that ``backend`` does not provide."""
    return [name for name in REQUIRED if not hasattr(backend, name)]
