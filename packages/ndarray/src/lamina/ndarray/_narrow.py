"""float16 and bfloat16 on kernels that lack them: float32 on widened copies.

A backend that lists a narrow dtype stores it and converts it to and from
float32 (interface v2.2, ``NARROW_KERNELS``). Any other kernel that accepts
float32 but does not name the narrow dtype in ``kernel_dtypes`` still runs on
it through :func:`kernels_for`: each narrow buffer the kernel reads is
converted into a new float32 buffer, the float32 kernel runs, and each one it
writes is rounded back into its own (``_ROLES`` says which arguments a kernel
only reads or only writes; any other is taken as both, and an input rounded
back comes back bit for bit, as every narrow value is exact in float32). That
is PyTorch's rule for these dtypes on its CPU: compute in float32 and round
each op's result to nearest, ties to even. A backend makes a kernel native by
naming the dtype; nothing else changes.

The widened table is built from the device's current kernel table, so a
capture (``_capture.py``), which swaps that table for a recording one, also
records the conversions.
"""

from __future__ import annotations

from dataclasses import fields
from types import MappingProxyType
from typing import Any

from ._checks import check_kernel_dtype
from ._dtypes import DType
from ._interface import DEVICE_FUNCTIONS, NARROW_KERNELS, Kernel, KernelTable
from ._optable import OPS

_PASS_THROUGH = frozenset(NARROW_KERNELS) | frozenset(DEVICE_FUNCTIONS)


def kernels_for(device: Any, kernel: str, dtype: DType, op: str) -> KernelTable:
    """The kernel table to run ``kernel`` (``"matmul"``, ``"ewise_add"``) on ``dtype``.

    ``device.kernels`` where the kernel takes ``dtype``; for a narrow dtype the
    device stores and the kernel takes as float32, the widened table.

    Raises:
        DTypeError: neither (naming the op, the dtype and the device).
    """
    accepted = device.kernel_dtypes.get(kernel, ())
    if dtype.name in accepted:
        return device.kernels
    if dtype.is_narrow and dtype.name in device.dtypes and "float32" in accepted:
        return widened(device, dtype)
    check_kernel_dtype(device, kernel, dtype, op)  # raises: the kernel lacks dtype
    raise AssertionError(f"{op}: {kernel} accepts {dtype.name}")  # pragma: no cover


def kernels_of(a: Any, kernel: str, op: str) -> KernelTable:
    """The kernel table to run ``kernel`` on array ``a``: its device's own table
    unless ``a`` is narrow (:func:`kernels_for`)."""
    if not a._dtype.is_narrow:
        return a._device.kernels
    return kernels_for(a._device, kernel, a._dtype, op)


def optional_kernel(a: Any, name: str, op: str) -> Kernel | None:
    """The optional kernel ``name`` (``"softmax_last"``) to run on array ``a``, or None
    where its device lacks it; for a narrow ``a``, the widened one."""
    kernel: Kernel | None = getattr(a._device.kernels, name)
    if kernel is None or not a._dtype.is_narrow:
        return kernel
    return getattr(kernels_for(a._device, name, a._dtype, op), name)


def widened(device: Any, dtype: DType) -> KernelTable:
    """``device.kernels`` with every kernel but the ``NARROW_KERNELS`` (and device
    functions) running on float32 copies of its ``dtype`` buffers."""
    table = device.kernels
    cached = device.narrow_tables.get(dtype.name)
    if cached is not None and cached[0] is table:
        return cached[1]
    values: dict[str, Any] = {}
    for f in fields(KernelTable):
        kernel = getattr(table, f.name)
        if kernel is None or f.name in _PASS_THROUGH:
            values[f.name] = kernel
        elif f.metadata.get("ops") is not None:
            values[f.name] = MappingProxyType({
                op: _on_float32(k, device, table, dtype.name, _roles(f.name, op))
                for op, k in kernel.items()})
        else:
            values[f.name] = _on_float32(kernel, device, table, dtype.name,
                                         _roles(f.name, None))
    out = KernelTable(**values)
    device.narrow_tables[dtype.name] = (table, out)
    return out


# The argument positions of a kernel that it only reads and only writes (the
# interface's signatures: inputs, outputs, layout); a narrow buffer anywhere else
# (or in a list argument) is taken as read and written. An input is then not
# rounded back, nor an output converted in, which saves two of a binary op's six
# conversions each.
_R0, _R01, _R012 = frozenset({0}), frozenset({0, 1}), frozenset({0, 1, 2})
_W0, _W1, _W2 = frozenset({0}), frozenset({1}), frozenset({2})
_NONE: frozenset[int] = frozenset()
_ROLES: dict[str, tuple[frozenset[int], frozenset[int]]] = {
    "scalar": (_R0, _W2), "ewise_strided": (_R01, _W2), "ewise_where": (_R012, frozenset({3})),
    "reduce": (_R0, _W1), "reduce_sum_axis": (_R0, _W1), "cumsum_last": (_R0, _W1),
    **dict.fromkeys(("matmul", "matmul_batched", "matmul_strided", "matmul_batched_strided"),
                    (_R01, _W2)),
    "softmax_last": (_R0, _W1), "logsumexp_last": (_R0, _W1),
    "layer_norm_last": (_R012, frozenset({3, 4, 5})), "im2col": (_R0, _W1), "col2im": (_R0, _W1),
    **dict.fromkeys(("conv2d", "conv2d_backward_input", "conv2d_backward_weight"), (_R01, _W2)),
    "layer_norm_backward_last": (frozenset(range(5)), frozenset({5, 6, 7})),
    "log_softmax_backward_last": (_R01, _W2), "gelu": (_R0, _W1), "gelu_backward": (_R01, _W2),
    "relu_backward": (_R01, _W2),
    "matmul_bias": (_R012, frozenset({3})),
    "attention": (frozenset(range(4)), frozenset({4, 5})),
    "attention_backward": (frozenset(range(6)), frozenset({6, 7, 8})),
    "index_gather": (_R0, _W2), "to_numpy": (_R0, _NONE), "from_numpy": (_NONE, _W1),
    "fill": (_NONE, _W0)}


def _roles(field: str, op: str | None) -> tuple[frozenset[int], frozenset[int]]:
    if field == "ewise" and op is not None:
        return (_R01, _W2) if OPS[op].arity == 2 else (_R0, _W1)
    return _ROLES.get(field, (_NONE, _NONE))


def _note(found: dict[int, list[Any]], buf: Any, reads: bool, writes: bool) -> None:
    entry = found.get(id(buf))
    if entry is None:
        found[id(buf)] = [buf, None, reads, writes]
    else:
        entry[2] |= reads
        entry[3] |= writes


def _swap(found: dict[int, list[Any]], x: Any) -> Any:
    """``x``'s float32 copy if it is one of the ``found`` narrow buffers, else ``x``."""
    entry = found.get(id(x))
    return entry[1] if entry is not None and entry[0] is x else x


def _on_float32(kernel: Kernel, device: Any, table: KernelTable, narrow: str,
                roles: tuple[frozenset[int], frozenset[int]]) -> Kernel:
    """``kernel`` with its ``narrow`` buffers (also inside list arguments) widened:
    converted in where it reads them, rounded back where it writes them."""
    buffer_type = type(device.backend.Array(0, "float32"))  # not table's: capture records that
    cast = table.ewise_cast
    f32 = device._alloc_arg["float32"]
    only_read, only_written = roles

    def run(*args: Any) -> Any:
        # id(narrow buffer) -> [it, its float32 copy, read?, written?]; no closure over
        # it, so that it (and the copies) go when the call returns, not at a GC cycle
        found: dict[int, list[Any]] = {}
        for i, x in enumerate(args):
            if type(x) is buffer_type and x.dtype == narrow:
                _note(found, x, i not in only_written, i not in only_read)
            elif type(x) is list or type(x) is tuple:
                for y in x:
                    if type(y) is buffer_type and y.dtype == narrow:
                        _note(found, y, True, True)
        if not found:
            return kernel(*args)
        for entry in found.values():
            buf = entry[0]
            entry[1] = device._alloc(buf.size, f32)  # through device._alloc: capture sees it
            if entry[2] and buf.size:
                cast(buf, entry[1])
        result = kernel(*[type(x)([_swap(found, y) for y in x])
                          if type(x) is list or type(x) is tuple else _swap(found, x)
                          for x in args])
        for buf, copy, _, writes in found.values():
            if writes and buf.size:
                cast(copy, buf)
        return result

    run.__name__ = run.__qualname__ = getattr(kernel, "__name__", "kernel")
    return run
