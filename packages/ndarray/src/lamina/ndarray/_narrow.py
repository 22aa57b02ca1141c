"""float16 and bfloat16 on kernels that lack them: float32 on widened copies.

A backend that lists a narrow dtype stores it and converts it to and from
float32 (interface v2.2, ``NARROW_KERNELS``). Any other kernel that accepts
float32 but does not name the narrow dtype in ``kernel_dtypes`` still runs on
it through :func:`kernels_for`: each narrow buffer passed to the kernel is
widened into a new float32 buffer, the float32 kernel runs, and every widened
buffer is rounded back into its own (an input comes back bit for bit, as
every narrow value is exact in float32). That is PyTorch's rule for these
dtypes on its CPU: compute in float32 and round each op's result to nearest,
ties to even. A backend makes a kernel native by naming the dtype; nothing
else changes.

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
            values[f.name] = MappingProxyType({op: _on_float32(k, device, table, dtype.name)
                                               for op, k in kernel.items()})
        else:
            values[f.name] = _on_float32(kernel, device, table, dtype.name)
    out = KernelTable(**values)
    device.narrow_tables[dtype.name] = (table, out)
    return out


def _on_float32(kernel: Kernel, device: Any, table: KernelTable, narrow: str) -> Kernel:
    """``kernel`` with its ``narrow`` buffers (also inside list arguments) widened."""
    buffer_type = type(device.backend.Array(0, "float32"))  # not table's: capture records that
    cast = table.ewise_cast
    f32 = device._alloc_arg["float32"]

    def run(*args: Any) -> Any:
        copies: dict[int, tuple[Any, Any]] = {}  # id(narrow buffer) -> (it, its float32 copy)

        def wide(x: Any) -> Any:
            if type(x) is buffer_type and x.dtype == narrow:
                pair = copies.get(id(x))
                if pair is None:
                    copy = device._alloc(x.size, f32)  # through device._alloc: capture sees it
                    if x.size:
                        cast(x, copy)
                    pair = copies[id(x)] = (x, copy)
                return pair[1]
            if type(x) is list or type(x) is tuple:
                return type(x)(wide(y) for y in x)
            return x

        result = kernel(*[wide(x) for x in args])
        for buf, copy in copies.values():
            if buf.size:
                cast(copy, buf)
        return result

    run.__name__ = run.__qualname__ = getattr(kernel, "__name__", "kernel")
    return run
