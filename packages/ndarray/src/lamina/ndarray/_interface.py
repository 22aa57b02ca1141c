"""The backend interface, version 2: the kernel table and the typed Protocol.

``docs/backend-interface.md`` is the prose form of this contract. A backend
owns flat 1-D buffers of one dtype and kernels over them; arguments come in
the order *inputs, output, layout*; layout values count elements, never bytes;
kernels never allocate and never return.

:class:`KernelTable` is the one list of kernel names: ``REQUIRED`` and
``OPTIONAL`` below are derived from its fields, and so are the numpy
backend's checks, the cuda backend's ``KERNELS`` and the conformance kit's.
The registry resolves a table once per device (:func:`resolve_kernels`), so
compute ops call ``device.kernels.matmul(...)`` instead of looking a name up
on the backend at every call. The elementwise op lists come from the op
table (``_optable.OPS``); a v1.x plugin is read through ``_adapter_v1``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from ._optable import ops

API_VERSION = 2
API_MINOR_VERSION = 2
"""Interface v2.0 passes no op names to kernels: v1.1's ``ewise_strided(op, ...)``
became one kernel per op, ``ewise_strided_OP(...)``, and every backend declares
its kernels' dtypes in ``kernel_dtypes``. v1.0 and v1.1 plugins still load,
through the adapter of ``_adapter_v1``.

v2.1 adds optional kernels only, so every v2.0 plugin is a valid v2.1 one: the
sorting and sampling kernels ``sort_last`` (a stable sort, or its first k, of
each row) and ``multinomial_last`` (inverse-CDF draws from host uniforms), and
the recurrent-cell kernels and the max-pool kernels ``max_pool2d`` and
``max_pool2d_backward`` (see docs/backend-interface.md). Without the sorting
and sampling ones, NDArray runs the numpy backend's on a host copy.

v2.2 adds the 16-bit floats ``float16`` and ``bfloat16`` (:data:`NARROW_DTYPES`),
which a backend may list in ``dtypes``. Listing one, it must store it and
provide the :data:`NARROW_KERNELS` for it (``ewise_cast`` both ways between
it and float32, rounding to nearest even). Every other kernel takes a narrow
dtype only where ``kernel_dtypes`` names it; elsewhere NDArray runs the
kernel's float32 form on widened copies (``_narrow.py``). A v2.1 backend
lists neither, and NDArray names them in its ``lacks``."""

NARROW_DTYPES = ("float16", "bfloat16")
"""The 16-bit floats of interface v2.2."""

NARROW_KERNELS = ("Array", "empty", "compact", "ewise_setitem", "ewise_cast")
"""The kernels that take every narrow dtype a backend lists without naming it in
``kernel_dtypes``: storage, strided copies and conversion, the ones the float32
fallback of the others is built from."""

Shape = tuple[int, ...]
Kernel = Callable[..., Any]

# The ops of each kernel family, by the suffix of ``<family>_<op>``: from the op table.
BINARY_OPS = ops(arity=2, required=True)
COMPARISON_OPS = ops(arity=2, result="bool")
REVERSED_SCALAR_OPS = tuple("r" + name for name in ops(reversed=True))
UNARY_OPS = ops(arity=1, required=True)
OPTIONAL_BINARY_OPS = ops(arity=2, required=False)
OPTIONAL_UNARY_OPS = ops(arity=1, required=False)
SCALAR_OPS = ops(scalar=True)
STRIDED_OPS = ops(arity=2)
REDUCE_OPS = ("sum", "max", "min", "argmax")
OPTIONAL_REDUCE_OPS = ("prod",)

V11_KERNELS = (tuple(f"ewise_{name}" for name in ops(since=(1, 1)))
               + tuple(f"reduce_{op}" for op in OPTIONAL_REDUCE_OPS)
               + ("cumsum_last", "index_copy"))
"""The optional kernels interface v1.1 added (a v1.0 backend has none of them)."""

PROGRAM_OPS: tuple[tuple[str, str], ...] = (
    *((name, "binary") for name in ("add", "sub", "mul", "div", "power", "maximum",
                                    "minimum")),
    *((f"scalar_{name}", "scalar") for name in ("add", "sub", "mul", "div", "power",
                                                "maximum", "minimum", "rsub", "rdiv",
                                                "rpower")),
    *((name, "unary") for name in ("neg", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos",
                                   "erf", "sign")),
)
"""The ops of ``ewise_program``, numbered by their position: ``(name, kind)`` with
kind ``binary`` (``ewise_NAME(a, b, out)``), ``scalar`` (``NAME(a, value, out)``,
a ``scalar_`` kernel) or ``unary`` (``ewise_NAME(a, out)``). The C++ header
``lamina/program_ops.h`` lists the same ops in the same order."""

METADATA = ("is_available", "unavailable_reason")
"""Functions every backend has that are not kernels (nor in the table)."""


def _family(ops: tuple[str, ...], optional: tuple[str, ...] = ()) -> Any:
    return field(metadata={"ops": ops, "optional": optional})


def _optional() -> Any:
    return field(default=None)


@dataclass(frozen=True, slots=True)
class KernelTable:
    """One device's kernels, resolved once when the device is first used.

    Fields without a default are required kernels; a family field maps each
    op to its kernel (``ewise["add"]`` is the backend's ``ewise_add``); fields
    defaulting to ``None`` are optional kernels and device functions, ``None``
    where the backend lacks them. Signatures are in ``docs/backend-interface.md``.
    """

    # buffers and strided access
    Array: Kernel  # noqa: N815  (the interface's spelling of the buffer type)
    from_numpy: Kernel
    to_numpy: Kernel
    fill: Kernel
    compact: Kernel
    ewise_setitem: Kernel
    scalar_setitem: Kernel
    # elementwise, indexing, matmul
    ewise_where: Kernel
    ewise_cast: Kernel
    index_gather: Kernel
    index_scatter_add: Kernel
    matmul: Kernel
    matmul_batched: Kernel
    # families: <family>_<op> by op
    ewise: Mapping[str, Kernel] = _family(BINARY_OPS + UNARY_OPS,
                                          OPTIONAL_BINARY_OPS + OPTIONAL_UNARY_OPS)
    scalar: Mapping[str, Kernel] = _family(SCALAR_OPS + REVERSED_SCALAR_OPS)
    # v2: ewise_strided_OP reads broadcast or permuted operands where they lie
    ewise_strided: Mapping[str, Kernel] = _family((), STRIDED_OPS)
    reduce: Mapping[str, Kernel] = _family(REDUCE_OPS, OPTIONAL_REDUCE_OPS)
    # v1.1, optional without a composite: an op needing it raises DTypeError where absent
    cumsum_last: Kernel | None = _optional()
    # v2.1 a chain of elementwise ops (PROGRAM_OPS) in one pass, for captured replays
    # (lamina.autograd.compile fuses chains with it; without it they run op by op)
    ewise_program: Kernel | None = _optional()
    # v2.1 sorting and sampling along the last axis: without them NDArray runs the
    # numpy backend's kernels on a host copy (_sorting.py, _sampling.py)
    sort_last: Kernel | None = _optional()
    multinomial_last: Kernel | None = _optional()
    # optional fast paths (NDArray composes required kernels without them)
    index_copy: Kernel | None = _optional()  # v1.1: item assignment in O(written)
    matmul_strided: Kernel | None = _optional()
    matmul_batched_strided: Kernel | None = _optional()  # v1.1
    matmul_bias: Kernel | None = _optional()  # v2.2: matmul_strided + bias, in the GEMM
    adam_step: Kernel | None = _optional()  # v1.1: one pass of an Adam/AdamW update
    reduce_sum_axis: Kernel | None = _optional()
    softmax_last: Kernel | None = _optional()
    logsumexp_last: Kernel | None = _optional()
    layer_norm_last: Kernel | None = _optional()
    layer_norm_backward_last: Kernel | None = _optional()  # the backward of layer_norm_last
    log_softmax_backward_last: Kernel | None = _optional()  # of a row-wise log-softmax
    # GELU and its backward in one pass (else an ewise_program, else op by op)
    gelu: Kernel | None = _optional()
    gelu_backward: Kernel | None = _optional()
    # ReLU's backward in one pass (else a comparison, a fill and a select)
    relu_backward: Kernel | None = _optional()
    im2col: Kernel | None = _optional()
    col2im: Kernel | None = _optional()
    # v2.2 NCHW convolution (groups 1) as a GEMM per image, and its input and weight
    # gradients, with no batch-sized column matrix; without them NDArray composes
    # im2col, matmul and col2im (_conv.py)
    conv2d: Kernel | None = _optional()
    conv2d_backward_input: Kernel | None = _optional()
    conv2d_backward_weight: Kernel | None = _optional()
    # v2.1 recurrent cells: one time step of an LSTM or GRU layer, forward and backward,
    # in one pass (_numpy_rnn.py); without them the layer ops compose elementwise kernels
    lstm_cell: Kernel | None = _optional()
    lstm_cell_backward: Kernel | None = _optional()
    gru_cell: Kernel | None = _optional()
    gru_cell_backward: Kernel | None = _optional()
    # v2.1 batch norm over a compact (N, C, S) view: per-channel statistics, the
    # normalisation and the backward in one or two passes each (_numpy_norm.py); without
    # them BatchNorm composes reductions and elementwise kernels
    batch_norm_stats: Kernel | None = _optional()
    batch_norm_apply: Kernel | None = _optional()
    batch_norm_backward: Kernel | None = _optional()
    # v2.1 max pooling with int64 indices (PyTorch's return_indices) and its backward over
    # the N*C planes of a compact NCHW image (_numpy_pool.py); without them max_pool2d
    # composes im2col and a max reduction
    max_pool2d: Kernel | None = _optional()
    max_pool2d_backward: Kernel | None = _optional()
    # v2.2 scaled dot-product attention over compact (B, L, E) queries, forward and
    # backward in one pass each (_numpy_attention.py); without them attention composes
    # matmul, log-sum-exp and elementwise kernels
    attention: Kernel | None = _optional()
    attention_backward: Kernel | None = _optional()
    # optional cheaper allocation: empty(size, dtype) is a new buffer as
    # Array(size, dtypes[dtype]), the dtype given by its index in the backend's
    # `dtypes`, for backends whose Array constructor costs more than a call
    empty: Kernel | None = _optional()
    # optional zero-copy import of numpy memory, for backends whose buffers live in
    # host memory; such a backend's Array also exports the buffer protocol (a 1-D
    # buffer of its dtype) for zero-copy export
    wrap_numpy: Kernel | None = _optional()
    # optional device functions (Device methods raise DeviceError without them)
    device_count: Kernel | None = _optional()
    synchronize: Kernel | None = _optional()
    set_num_threads: Kernel | None = _optional()
    num_threads: Kernel | None = _optional()
    memory_stats: Kernel | None = _optional()
    empty_cache: Kernel | None = _optional()


def _names(required: bool) -> tuple[str, ...]:
    names: list[str] = []
    for f in fields(KernelTable):
        ops = f.metadata.get("ops")
        if ops is not None:
            names += [f"{f.name}_{op}" for op in (ops if required else f.metadata["optional"])]
        elif (f.default is not None) == required:
            names.append(f.name)
    return tuple(names)


REQUIRED: tuple[str, ...] = _names(required=True) + METADATA
"""Every name a backend must provide (kernels and metadata functions)."""

OPTIONAL: tuple[str, ...] = _names(required=False)
"""Optional kernels and device functions; the table holds ``None`` without them."""

DEVICE_FUNCTIONS = ("device_count", "synchronize", "set_num_threads", "num_threads",
                    "memory_stats", "empty_cache")
"""The optional names that are device functions, not kernels over buffers."""


def api_minor_version(backend: object) -> int:
    """The minor interface version ``backend`` declares (0 when it declares none)."""
    minor = getattr(backend, "api_minor_version", 0)
    return minor if isinstance(minor, int) and not isinstance(minor, bool) else 0


def kernel_dtypes(backend: object) -> dict[str, frozenset[str]]:
    """The dtypes each kernel of ``backend`` accepts, by kernel name (``"ewise_add"``).

    The backend declares them in ``kernel_dtypes`` (a mapping from kernel
    name to dtype names); a kernel it does not name accepts every dtype the
    backend lists, except the narrow ones, which only the
    :data:`NARROW_KERNELS` take unnamed; a kernel it lacks accepts none.
    """
    everything = frozenset(str(d) for d in getattr(backend, "dtypes", ()))
    wide = everything - frozenset(NARROW_DTYPES)
    declared = dict(getattr(backend, "kernel_dtypes", {}) or {})
    none: frozenset[str] = frozenset()
    return {n: none if not hasattr(backend, n)
            else frozenset(str(d) for d in declared[n]) & everything if n in declared
            else everything if n in NARROW_KERNELS
            else wide for n in REQUIRED + OPTIONAL if n not in METADATA}


def missing_kernels(backend: object) -> list[str]:
    """Names from ``REQUIRED`` that ``backend`` does not provide."""
    return [name for name in REQUIRED if not hasattr(backend, name)]


def resolve_kernels(backend: object) -> KernelTable:
    """Look every kernel of ``backend`` up once; optional ones are ``None`` when absent.

    Raises:
        AttributeError: a required kernel is missing (the registry checks
            :func:`missing_kernels` first and reports it as incompatible).
    """
    values: dict[str, Any] = {}
    for f in fields(KernelTable):
        ops = f.metadata.get("ops")
        if ops is None:
            values[f.name] = (getattr(backend, f.name) if f.default is not None
                              else getattr(backend, f.name, None))
            continue
        family = {op: getattr(backend, f"{f.name}_{op}") for op in ops}
        for op in f.metadata["optional"]:
            kernel = getattr(backend, f"{f.name}_{op}", None)
            if kernel is not None:
                family[op] = kernel
        values[f.name] = MappingProxyType(family)
    return KernelTable(**values)

class Buffer(Protocol):
    """A flat, contiguous buffer owned by a backend."""

    @property
    def size(self) -> int: ...
    @property
    def dtype(self) -> str: ...


@runtime_checkable
class BackendProtocol(Protocol):
    """What a ``lamina.backends`` entry point must provide (version 2).

    Only a representative part is spelled out as typed methods; the full list
    of kernel names is ``REQUIRED`` (and ``OPTIONAL``) above, and every
    ``ewise_OP``/``scalar_OP``/``reduce_OP`` follows the signature of its
    family shown here.
    """

    name: str
    api_version: int
    api_minor_version: int
    dtypes: tuple[str, ...]
    kernel_dtypes: Mapping[str, tuple[str, ...]]  # kernel name -> accepted dtypes

    def is_available(self) -> bool: ...
    def unavailable_reason(self) -> str: ...

    # buffers
    def Array(self, size: int, dtype: str) -> Buffer: ...  # noqa: N802
    def empty(self, size: int, dtype: int) -> Buffer: ...  # optional: dtype = dtypes index
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
