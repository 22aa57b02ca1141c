"""Capture and replay: record the kernel calls of a computation, run them again.

Every NDArray computation ends in calls of its device's kernels over flat
buffers (``device.kernels``, and ``device._alloc`` for new buffers). While a
:class:`Capture` is active, each device's kernel table is replaced by one
that runs the kernel *and* notes the call, with each buffer argument named by
a slot:

- an **input** slot: a buffer of the arrays given to ``Capture`` (the
  function's arguments); a replay passes new buffers there;
- a **new** slot: a buffer allocated while capturing (an intermediate or a
  result);
- a **const** slot: a buffer that existed before (a weight, a closure's array),
  used as it is at every replay.

:meth:`Program.run` then issues the same kernel calls on new input buffers,
with no Python between them but the loop: no NDArray objects, no checks, no
dispatch. New buffers that do not escape (every one but the outputs') are
allocated once, when capturing, and reused by every replay; the outputs' are
allocated fresh each time, so a replay never overwrites what an earlier one
returned.

Where a device has the optional ``ewise_program`` kernel, each run of two or
more recorded elementwise calls (one device, dtype and length) becomes one
call of it (``_fuse``): the chain runs block by block in cache, and a value
nothing reads after the chain is never written to memory.

Random numbers are drawn on the host and uploaded. The sampling functions
(``rand``, ``randn``, ``bernoulli``, ...) are *host steps*
(:mod:`._hoststep`): recorded as one call of themselves, which each replay
makes again, so a replay draws new numbers, from the same generator in the
same order as eager code.

What a replay cannot repeat makes the capture *break* (:attr:`Capture.broken`
says why, and with ``strict`` the kernel call that broke it raises
:class:`GraphBreak`): reading values to the host (``to_numpy``: ``item()``,
printing, a host-side op whose result came back as a constant), drawing from
the host random generator outside a host step, a device first used while capturing, and a new
buffer kept somewhere other than the outputs (a cache on a module, a tensor's
storage swapped for a new one). Python values that reach a kernel as
arguments (a scale, a learning rate, a shape) are recorded as constants, as
any tracing compiler's are: pass values that change as inputs.

Kernel calls from other threads while capturing run unrecorded.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from . import _creation, _hoststep
from ._interface import DEVICE_FUNCTIONS, PROGRAM_OPS, KernelTable
from ._ndarray import NDArray
from ._registry import Device, _state

__all__ = ["Capture", "GraphBreak", "Program", "array_over"]


class GraphBreak(RuntimeError):
    """A captured computation did something a replay cannot repeat (strict capture)."""


class _Slot:
    """A buffer argument of a recorded call: the index of its slot."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class Program:
    """Recorded kernel calls over buffer slots (see the module docstring).

    A capture may give two programs over one slot table (a forward and the
    backward that reads what the forward wrote): :meth:`run` then takes the
    table the first one returned.

    Attributes:
        inputs: the slots :meth:`run` fills from its ``inputs``, in order.
        fresh: ``(slot, allocate, args)`` of the new buffers each run
            allocates (results, and what a later program reads).
    """

    def __init__(self, inputs: list[int], calls: list[tuple[Any, tuple[Any, ...]]],
                 fresh: list[tuple[int, Callable[..., Any], tuple[Any, ...]]],
                 fixed: list[Any]) -> None:
        self.inputs, self.fresh, self._fixed = inputs, fresh, fixed
        # Per call: the kernel, its arguments, and the (position, slot) pairs a run fills.
        # A call over fixed buffers only (weights, reused intermediates: every slot it
        # reads is decided by now, slots being numbered in the order they appeared) is
        # bound once, its arguments a ready tuple (fill None).
        self._steps: list[tuple[Any, Any, list[tuple[int, int]] | None]] = []
        for kernel, args in calls:
            if type(kernel) in (_HostStep, _FusedStep):
                self._steps.append((kernel, None, []))
                continue
            fill = [(p, a.index) for p, a in enumerate(args) if type(a) is _Slot]
            if all(fixed[index] is not None for _, index in fill):
                self._steps.append((kernel, tuple(
                    fixed[a.index] if type(a) is _Slot else a for a in args), None))
            else:
                self._steps.append((kernel, list(args), fill))

    def __len__(self) -> int:
        return len(self._steps)

    def run(self, inputs: Sequence[Any], table: list[Any] | None = None) -> list[Any]:
        """Issues every recorded call with ``inputs`` in the input slots, over
        ``table`` (a new one, holding the constants, when None); returns the
        table: the buffer of every slot."""
        slots = list(self._fixed) if table is None else table
        for index, buf in zip(self.inputs, inputs):
            slots[index] = buf
        for index, allocate, how in self.fresh:
            slots[index] = allocate(*how)
        for kernel, template, fill in self._steps:
            if template is None:  # a host step or a fused program: it fills its slots
                kernel.run(slots)
                continue
            if fill is None:  # bound: fixed buffers only
                kernel(*template)
                continue
            args = template.copy()  # a copy per call: replays may run on several threads
            for position, index in fill:
                args[position] = slots[index]
            kernel(*args)
        return slots


def array_over(buf: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int,
               like: NDArray) -> NDArray:
    """An NDArray with ``like``'s dtype and device over ``buf`` with this layout (no
    checks: the layout is one a captured array had over a buffer of this size)."""
    out = object.__new__(NDArray)
    out._buf = buf
    out._shape = shape
    out._strides = strides
    out._offset = offset
    out._dtype = like._dtype
    out._device = like._device
    out._compact = like._compact
    return out


class Capture:
    """Records the kernel calls made on this thread inside ``with Capture(inputs):``.

    Args:
        inputs: the input buffers, in order (slots 0..n-1); one buffer may
            appear once only.
        strict: raise :class:`GraphBreak` at the first thing a replay cannot
            repeat, instead of only noting it in :attr:`broken`.

    After the block, :meth:`program` builds the replayable :class:`Program`
    (when :attr:`broken` is None).
    """

    def __init__(self, inputs: Sequence[Any], strict: bool = False) -> None:
        self.strict = strict
        self.broken: str | None = None
        self._thread = threading.get_ident()
        self._buffers: list[Any] = list(inputs)  # slot -> buffer, kept alive while capturing
        self._kinds = ["input"] * len(self._buffers)
        self._slots = {id(b): i for i, b in enumerate(self._buffers)}
        self._allocs: dict[int, tuple[Callable[..., Any], tuple[Any, ...]]] = {}
        self._calls: list[tuple[Any, tuple[Any, ...]]] = []  # (kernel or _HostStep, args)
        self._phases = [(0, 0)]  # (first call, first slot) of each phase
        self._extra_inputs: list[int] = []
        self._paused = False
        self._real: dict[Device, tuple[KernelTable, Any]] = {}
        self._buffer_types: tuple[type, ...] = ()
        self._rng: tuple[Any, Any] = (None, None)
        self._tables: dict[int, tuple[KernelTable, KernelTable]] = {}  # recording -> real
        self._outer: Any = None  # the capture active before this one (none, normally)
        self._fusable: dict[int, _Fusable | None] = {}  # call index -> how it may fuse

    # ----- entering and leaving -----------------------------------------------------------

    def __enter__(self) -> Capture:
        devices = list({id(d): d for d in _state.devices.values()}.values())  # one per name
        types = set()
        for device in devices:
            self._real[device] = (device.kernels, device._alloc)
            if isinstance(device.kernels.Array, type):
                types.add(device.kernels.Array)
        self._buffer_types = tuple(types)
        for device in devices:
            device.kernels = self._recording(device.kernels, device)
            device._alloc = self._allocator(self._real[device][1])
        rng = _creation.generator()
        self._rng = (rng, rng.bit_generator.state)
        self._outer, _hoststep.active = _hoststep.active, self
        return self

    def __exit__(self, *exc: object) -> None:
        _hoststep.active = self._outer
        for device in list({id(d): d for d in _state.devices.values()}.values()):
            real = self._real.get(device)
            if real is None:  # made while capturing, from a recording table: rebuild it
                self._break(f"device {device.name!r} was first used while capturing")
                device.kernels = self._tables.get(id(device.kernels),
                                                  (None, device.kernels))[1]
                empty = device.kernels.empty
                device._alloc = device.kernels.Array if empty is None else empty
            else:
                device.kernels, device._alloc = real
        self._check_rng()

    def _check_rng(self) -> None:
        """Numbers drawn from the host generator outside a host step would be uploaded
        as constants: a replay would repeat them."""
        rng, state = self._rng
        if _creation.generator() is not rng or rng.bit_generator.state != state:
            self._break("random numbers were drawn on the host outside the sampling "
                        "functions (multinomial, a numpy draw, manual_seed): a replay "
                        "would repeat the same numbers")

    def _break(self, why: str) -> None:
        if self.broken is None:
            self.broken = why
        if self.strict:
            raise GraphBreak(why)

    # ----- recording ------------------------------------------------------------------------

    def _recording(self, table: KernelTable, device: Device) -> KernelTable:
        """``table`` with every kernel wrapped to record its calls; the elementwise
        families' calls carry what fusing them needs (see ``_fuse``)."""
        program = table.ewise_program
        program_dtypes = device.kernel_dtypes.get("ewise_program", frozenset())
        changes: dict[str, Any] = {}
        for f in fields(KernelTable):
            value = getattr(table, f.name)
            if value is None or f.name in DEVICE_FUNCTIONS:
                continue
            if isinstance(value, Mapping):
                changes[f.name] = MappingProxyType(
                    {op: self._kernel(k, None if program is None else
                                      _Fusable(f"{f.name}_{op}", program, program_dtypes))
                     for op, k in value.items()})
            elif f.name == "to_numpy":
                changes[f.name] = self._host_read(value)
            elif f.name in ("Array", "empty"):
                changes[f.name] = self._allocator(value)
            elif f.name == "wrap_numpy":
                changes[f.name] = self._wrapper(value)
            elif f.name == "from_numpy":
                changes[f.name] = self._upload(value)
            elif f.name == "ewise_program":
                changes[f.name] = self._program_call(value)
            else:
                changes[f.name] = self._kernel(value)
        recording = replace(table, **changes)
        self._tables[id(recording)] = (recording, table)
        return recording

    def _mine(self) -> bool:
        return threading.get_ident() == self._thread and not self._paused

    def wants(self) -> bool:
        return self._mine()

    def host_step(self, fn: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
        """Runs a sampling function unrecorded and records it as one step (see
        :mod:`._hoststep`); its NDArray arguments are read from their slots."""
        self._check_rng()
        refs = tuple(self._array_ref(a) for a in args)
        krefs = {k: self._array_ref(v) for k, v in kwargs.items()}
        self._paused = True
        try:
            out = fn(*args, **kwargs)
        finally:
            self._paused = False
        rng = _creation.generator()
        self._rng = (rng, rng.bit_generator.state)
        index = self._slots[id(out._buf)] = len(self._buffers)
        self._buffers.append(out._buf)
        self._kinds.append("step")
        self._calls.append((_HostStep(fn, refs, krefs, index, out), ()))
        return out

    def _array_ref(self, value: Any) -> Any:
        if isinstance(value, NDArray):
            return _ArrayRef(self._slot(value._buf).index, value)
        return value

    def next_phase(self, inputs: Sequence[Any] = ()) -> None:
        """Starts the second program (the backward of the first), whose own input
        buffers are ``inputs`` (made while paused: see :meth:`paused`)."""
        self._phases.append((len(self._calls), len(self._buffers)))
        for buf in inputs:
            self._slots[id(buf)] = len(self._buffers)
            self._extra_inputs.append(len(self._buffers))
            self._buffers.append(buf)
            self._kinds.append("input")

    def paused(self) -> _Paused:
        """A block whose kernel calls on this thread are not recorded (making a
        program's own inputs)."""
        return _Paused(self)

    def _slot(self, buf: Any) -> _Slot:
        index = self._slots.get(id(buf))
        if index is None:  # not an input and not made here: it existed before
            index = self._slots[id(buf)] = len(self._buffers)
            self._buffers.append(buf)
            self._kinds.append("const")
        return _Slot(index)

    def _template(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        types = self._buffer_types
        return tuple(self._slot(a) if isinstance(a, types) else a for a in args)

    def _kernel(self, kernel: Callable[..., Any], fusable: _Fusable | None = None
                ) -> Callable[..., Any]:
        def recorded(*args: Any) -> Any:
            if self._mine():
                self._calls.append((kernel, self._template(args)))
                self._fusable[len(self._calls) - 1] = fusable
            return kernel(*args)
        return recorded

    def _program_call(self, kernel: Callable[..., Any]) -> Callable[..., Any]:
        """A direct ``ewise_program`` call (``nd.gelu``'s): its buffers come in a list,
        so it is recorded as the step a fused run would be, over their slots."""
        def recorded(bufs: Sequence[Any], code: Any, scalars: Any, n: int) -> Any:
            if self._mine():
                slots = [self._slot(b).index for b in bufs]
                step = _FusedStep(kernel, slots, list(code), list(scalars), n, 1)
                self._calls.append((step, ()))
            return kernel(bufs, code, scalars, n)
        return recorded

    def _upload(self, kernel: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(src: Any, out: Any) -> Any:
            if self._mine():  # the host values as they are now: a constant of the program
                self._calls.append((kernel, (np.array(src, copy=True),
                                             *self._template((out,)))))
            return kernel(src, out)
        return recorded

    def _host_read(self, kernel: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(*args: Any) -> Any:
            if self._mine():
                self._break("values were read to the host (item(), numpy(), printing, a "
                            "comparison used as a Python bool, or an op computed on the "
                            "host): a replay cannot see them")
            return kernel(*args)
        return recorded

    def _new(self, buf: Any, allocate: Callable[..., Any], args: tuple[Any, ...]) -> None:
        index = self._slots[id(buf)] = len(self._buffers)
        self._buffers.append(buf)
        self._kinds.append("new")
        self._allocs[index] = (allocate, args)

    def _allocator(self, allocate: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(*args: Any) -> Any:
            buf = allocate(*args)
            if self._mine():
                self._new(buf, allocate, args)
            return buf
        return recorded

    def _wrapper(self, wrap: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(host: Any) -> Any:
            buf = wrap(host)
            if self._mine():  # a replay wraps its own copy of the values seen now
                self._new(buf, _wrap_copy, (wrap, np.array(host, copy=True)))
            return buf
        return recorded

    # ----- the program ------------------------------------------------------------------------

    def programs(self, outputs: Sequence[Any], held: Mapping[int, int]) -> list[Program]:
        """The replayable program of each phase (one, or a forward and its backward).

        Args:
            outputs: the buffers the results of every phase live in (the only
                list of them the caller keeps).
            held: for a buffer (by ``id``) that objects the caller keeps
                reference (an autograd graph's saved arrays, the results),
                how many distinct NDArrays over it those are.

        A new buffer is reused by every run unless a result lives in it, a later
        phase reads it, or something holds it (those a run allocates afresh).

        Raises:
            GraphBreak: the capture broke (:attr:`broken`), or a new buffer is
                referenced from somewhere else than ``held`` (it escaped).
        """
        if self.broken is None:
            listed: dict[int, int] = {}
            for key in map(id, outputs):  # the caller's list references each buffer once more
                listed[key] = listed.get(key, 0) + 1
            self._check_escapes({k: held.get(k, 0) + listed.get(k, 0)
                                 for k in set(held) | set(listed)})
        if self.broken is not None:
            raise GraphBreak(self.broken)
        keep = {id(b) for b in outputs} | set(held)
        bounds = self._phases + [(len(self._calls), len(self._buffers))]
        read_later = self._read_after_phase(bounds)
        last_use = self._last_uses()
        fixed = [b if k == "const" else None for b, k in zip(self._buffers, self._kinds)]
        programs = []
        for p in range(len(self._phases)):
            (call0, slot0), (call1, slot1) = bounds[p], bounds[p + 1]
            fresh = []
            for index in range(slot0, slot1):
                if self._kinds[index] != "new":  # inputs, consts, and host steps' results
                    continue
                buf = self._buffers[index]
                if id(buf) in keep or index in read_later[p]:
                    allocate, how = self._allocs[index]
                    fresh.append((index, allocate, how))
                else:
                    fixed[index] = buf
            inputs = ([i for i, k in enumerate(self._kinds[:slot1]) if k == "input"
                       and i not in self._extra_inputs] if p == 0 else
                      [i for i in self._extra_inputs if slot0 <= i < slot1])
            calls = _fuse(self, call0, call1, keep, last_use)
            programs.append(Program(inputs, calls, fresh, fixed))
        return programs

    def _last_uses(self) -> dict[int, int]:
        """Each slot's last call (by index) that reads or writes it."""
        last: dict[int, int] = {}
        for i, (kernel, args) in enumerate(self._calls):
            for a in args:
                if type(a) is _Slot:
                    last[a.index] = i
            if type(kernel) is _HostStep:
                for index in (*kernel.uses(), kernel.index):
                    last[index] = i
            elif type(kernel) is _FusedStep:
                for index in kernel.uses():
                    last[index] = i
        return last

    def _read_after_phase(self, bounds: list[tuple[int, int]]) -> list[set[int]]:
        """For each phase, the slots the calls of later phases use."""
        later: list[set[int]] = [set() for _ in self._phases]
        for p in range(len(self._phases) - 1):
            for kernel, args in self._calls[bounds[p + 1][0]:]:
                later[p].update(a.index for a in args if type(a) is _Slot)
                if type(kernel) in (_HostStep, _FusedStep):
                    later[p].update(kernel.uses())
        return later

    def slot_of(self, buf: Any) -> tuple[str, int] | None:
        """``(kind, slot)`` of a buffer the capture saw (``None`` if it never did)."""
        index = self._slots.get(id(buf))
        return None if index is None else (self._kinds[index], index)

    def _check_escapes(self, held: Mapping[int, int]) -> None:
        """A new buffer must be referenced by nothing but this capture and the
        ``held`` arrays (else a cache or a swapped storage holds it, and a replay
        would leave that holder with stale values)."""
        buffers = self._buffers
        for index in range(len(buffers)):
            if self._kinds[index] not in ("new", "step"):
                continue
            # references: the list, getrefcount's own argument, one per held array
            if sys.getrefcount(buffers[index]) > 2 + held.get(id(buffers[index]), 0):
                self._break("an array made inside the function is kept outside it (a "
                            "cache or attribute, a tensor whose storage was replaced): "
                            "a replay cannot update it")
                return


class _Fusable:
    """What fusing a recorded elementwise call needs: its kernel's name (a
    ``PROGRAM_OPS`` entry, by its kernel name), and its device's ``ewise_program``."""

    __slots__ = ("name", "program", "dtypes")

    def __init__(self, name: str, program: Callable[..., Any], dtypes: frozenset[str]) -> None:
        self.name, self.program, self.dtypes = name, program, dtypes


# PROGRAM_OPS by kernel name: (op number, kind)
_PROGRAM_OP = {(name if kind == "scalar" else f"ewise_{name}"): (i, kind)
               for i, (name, kind) in enumerate(PROGRAM_OPS)}
_MAX_TEMPS = 16


class _FusedStep:
    """A chain of elementwise calls replayed as one ``ewise_program`` call."""

    def __init__(self, program: Callable[..., Any], slots: list[int], code: list[int],
                 scalars: list[float], n: int, fused: int) -> None:
        # arrays, converted once: the kernel reads them without a per-element conversion
        self.program, self.slots, self.n = program, slots, n
        self.code = np.asarray(code, dtype=np.int64)
        self.scalars = np.asarray(scalars, dtype=np.float64)
        self.fused = fused  # how many calls it replaces
        self.__name__ = "ewise_program"

    def uses(self) -> list[int]:
        return list(self.slots)

    def run(self, slots: list[Any]) -> None:
        self.program([slots[i] for i in self.slots], self.code, self.scalars, self.n)


def _fusable_call(capture: Capture, index: int) -> tuple[_Fusable, str, int, int] | None:
    """``(fusable, dtype, n, op number)`` of call ``index`` if it can join a program:
    an elementwise kernel of ``PROGRAM_OPS`` whose operands are whole buffers of one
    float dtype and size on a device with ``ewise_program`` for that dtype."""
    fusable = capture._fusable.get(index)
    if fusable is None or fusable.name not in _PROGRAM_OP:
        return None
    op, kind = _PROGRAM_OP[fusable.name]
    args = capture._calls[index][1]
    slots = [a for a in args if type(a) is _Slot]
    if len(slots) != (3 if kind == "binary" else 2) or len(args) != (3 if kind != "unary"
                                                                      else 2):
        return None
    if kind == "scalar" and (type(args[1]) not in (float, int)):
        return None
    bufs = [capture._buffers[a.index] for a in slots]
    dtype, n = bufs[0].dtype, bufs[0].size
    if dtype not in fusable.dtypes or any(b.dtype != dtype or b.size != n for b in bufs):
        return None
    return fusable, dtype, n, op


def _fuse(capture: Capture, start: int, end: int, keep: set[int],
          last_use: dict[int, int]) -> list[tuple[Any, tuple[Any, ...]]]:
    """Calls ``start..end`` with each run of two or more fusable calls (same device,
    dtype and size) replaced by one ``_FusedStep``. A buffer written in the run that
    nothing reads after it (and that is not a result, an input or a constant) becomes
    a block temporary and is never written."""
    out: list[tuple[Any, tuple[Any, ...]]] = []
    i = start
    while i < end:
        first = _fusable_call(capture, i)
        j = i + 1
        while first is not None and j < end:
            nxt = _fusable_call(capture, j)
            if nxt is None or nxt[0].program is not first[0].program or nxt[1:3] != first[1:3]:
                break
            j += 1
        step = _program(capture, i, j, keep, last_use) if first and j - i >= 2 else None
        if step is None:
            out.append(capture._calls[i])
            i += 1
        else:
            out.append((step, ()))
            i = j
    return out


def _program(capture: Capture, start: int, end: int, keep: set[int],
             last_use: dict[int, int]) -> _FusedStep | None:
    """The program of calls ``start..end`` (all fusable), or None if it would need
    more temporaries than the kernel has."""
    slots: list[int] = []  # buffer operands, by slot
    temps: dict[int, int] = {}  # slot -> temporary register, while it holds the slot
    free = list(range(_MAX_TEMPS - 1, -1, -1))  # a stack: the last freed is reused first
    last_in_run: dict[int, int] = {}
    for i in range(start, end):
        for a in capture._calls[i][1]:
            if type(a) is _Slot:
                last_in_run[a.index] = i

    def persists(index: int) -> bool:
        buf = capture._buffers[index]
        return capture._kinds[index] != "new" or id(buf) in keep or last_use[index] >= end

    def buffer(index: int) -> int:
        if index not in slots:
            slots.append(index)
        return slots.index(index)

    code: list[int] = []
    scalars: list[float] = []
    fusable = capture._fusable[start]
    assert fusable is not None
    for i in range(start, end):
        name = capture._fusable[i].name  # type: ignore[union-attr]
        op, kind = _PROGRAM_OP[name]
        args = capture._calls[i][1]
        reads = [args[0]] + ([args[1]] if kind == "binary" else [])
        operands = [(-1 - temps[a.index]) if a.index in temps else buffer(a.index)
                    for a in reads]
        for a in reads:  # a temporary read for the last time is free again
            if a.index in temps and last_in_run[a.index] == i:
                free.append(temps.pop(a.index))
        dst = args[-1].index
        if persists(dst):
            if dst in temps:
                free.append(temps.pop(dst))
            target = buffer(dst)
        else:
            if dst not in temps:
                if not free:
                    return None
                temps[dst] = free.pop()
            target = -1 - temps[dst]
        if kind == "scalar":
            scalars.append(float(args[1]))
            second = len(scalars) - 1
        else:
            second = operands[1] if kind == "binary" else 0
        code += [op, target, operands[0], second]
    return _FusedStep(fusable.program, slots, code, scalars,
                      capture._buffers[capture._calls[start][1][-1].index].size, end - start)


class _ArrayRef:
    """An NDArray argument of a host step: its slot and its layout."""

    __slots__ = ("index", "layout")

    def __init__(self, index: int, like: NDArray) -> None:
        # not the array itself: it would hold its buffer, which is the replay's to reuse
        self.index = index
        self.layout = (like._shape, like._strides, like._offset, like._dtype, like._device,
                       like._compact)

    def resolve(self, slots: list[Any]) -> NDArray:
        out = object.__new__(NDArray)
        out._buf = slots[self.index]
        (out._shape, out._strides, out._offset, out._dtype, out._device,
         out._compact) = self.layout
        return out


class _HostStep:
    """A recorded call of a host step: ``fn`` runs again at every replay and its
    result's buffer fills slot ``index``."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 index: int, out: NDArray) -> None:
        self.fn, self.args, self.kwargs, self.index = fn, args, kwargs, index
        self.layout = (out._shape, out._strides, out._offset)
        self.__name__ = getattr(fn, "__name__", "host step")

    def uses(self) -> list[int]:
        refs = [*self.args, *self.kwargs.values()]
        return [r.index for r in refs if type(r) is _ArrayRef]

    def run(self, slots: list[Any]) -> None:
        def value(v: Any) -> Any:
            return v.resolve(slots) if type(v) is _ArrayRef else v
        out = self.fn(*map(value, self.args), **{k: value(v) for k, v in self.kwargs.items()})
        if (out._shape, out._strides, out._offset) != self.layout:
            raise RuntimeError(f"compiled replay: {self.__name__} gave a layout "
                               f"{(out._shape, out._strides)} unlike its captured one "
                               f"{self.layout[:2]}")
        slots[self.index] = out._buf


class _Paused:
    def __init__(self, capture: Capture) -> None:
        self._capture = capture

    def __enter__(self) -> None:
        self._capture._paused = True

    def __exit__(self, *exc: object) -> None:
        self._capture._paused = False


def _wrap_copy(wrap: Callable[..., Any], host: np.ndarray) -> Any:
    return wrap(host.copy())

