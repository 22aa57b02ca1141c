"""Where a step's time goes, op by op: ``profile`` and ``record_function``.

As ``torch.autograd.profiler``: inside ``with profile() as prof``, every op's
forward (``"matmul"``), every graph node's backward (``"MatmulBackward"``) and
every ``record_function`` block becomes an event with its start, end and
thread. Events nest (the ops a backward rule runs are its children, and so is
everything inside a ``record_function``), so each has a total time and a
*self* time, its total less its children's::

    with profile() as prof:
        loss = model(x).sum()
        loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

Times are the host's wall clock (``time.perf_counter_ns``). A device that
queues kernels (a GPU) returns before they finish, so its ops look cheap and
the next one that waits looks dear: ``profile(synchronize=True)`` waits for
the device after every event, which gives each op its own time (and slows
the whole run down). The profiler costs about a microsecond per op while it
runs, and one comparison per op (``_function.observer is None``) when it does
not.

Example:
    >>> import lamina.autograd as ag
    >>> x = ag.ones(3, requires_grad=True)
    >>> with profile() as prof:
    ...     (x * 2.0).sum().backward()
    >>> [(e.name, e.depth) for e in prof.events()]  # doctest: +NORMALIZE_WHITESPACE
    [('mul_scalar', 0), ('sum', 0), ('SumBackward', 0), ('reshape', 1),
     ('broadcast_to', 1), ('MulScalarBackward', 0), ('mul_scalar', 1)]

A backward rule is written with Tensor ops, so the ops it runs show up as its
children (``SumBackward`` broadcasts the gradient back; ``MulScalarBackward``
scales it).
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import ContextDecorator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _function
from ._function import Function
from ._tensor_base import TensorBase

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]

@dataclass(frozen=True, slots=True)
class FunctionEvent:
    """One timed interval: an op's forward, a node's backward or a user range.

    Attributes:
        name: the op (``"matmul"``), node (``"MatmulBackward"``) or range name.
        kind: ``"forward"``, ``"backward"`` or ``"user"``.
        start_ns, end_ns: ``time.perf_counter_ns`` at entry and exit.
        self_ns: the duration less the durations of the events nested in it.
        thread: the thread that ran it (``threading.get_ident``).
        depth: how many events enclose it.
        input_shapes: the input tensors' shapes (with ``record_shapes=True``).
    """

    name: str
    kind: str
    start_ns: int
    end_ns: int
    self_ns: int
    thread: int
    depth: int
    input_shapes: tuple[tuple[int, ...], ...] = ()

    @property
    def cpu_time_total(self) -> float:
        """The duration in microseconds (PyTorch's name and unit)."""
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        """The self time in microseconds."""
        return self.self_ns / 1e3


@dataclass(slots=True)
class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them), summed."""

    key: str
    input_shapes: tuple[tuple[int, ...], ...] = ()
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0

    @property
    def cpu_time(self) -> float:
        """The mean duration of one call, in microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    def add(self, event: FunctionEvent | FunctionEventAvg) -> None:
        if isinstance(event, FunctionEvent):
            self.count += 1
        else:
            self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total


class EventList(list[Any]):
    """A list of :class:`FunctionEvent` or :class:`FunctionEventAvg` that prints as a table."""

    def table(self, sort_by: str = "cpu_time_total", row_limit: int = 100) -> str:
        """PyTorch's profiler table: one row per entry, sorted by ``sort_by``
        (``"cpu_time_total"``, ``"self_cpu_time_total"``, ``"count"``, ...),
        largest first, at most ``row_limit`` rows (all when negative).

        Self CPU % is a share of the summed self times (the whole profiled
        time, each instant counted once); CPU total % of the same sum, so a
        nesting event can pass 100%.
        """
        rows = sorted(self, key=lambda e: _sort_key(e, sort_by), reverse=True)
        if row_limit >= 0:
            rows = rows[:row_limit]
        whole = sum(e.self_cpu_time_total for e in self) or 1.0
        shapes = any(e.input_shapes for e in rows)
        head = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                "CPU time avg", "# of Calls"] + (["Input Shapes"] if shapes else [])
        body = [[_name(e), f"{100 * e.self_cpu_time_total / whole:.2f}%",
                 _us(e.self_cpu_time_total), f"{100 * e.cpu_time_total / whole:.2f}%",
                 _us(e.cpu_time_total), _us(_mean(e)), str(_count(e))]
                + ([str(list(map(list, e.input_shapes)))] if shapes else []) for e in rows]
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        rule = "  ".join("-" * w for w in widths)
        lines = [rule, _line(head, widths), rule, *(_line(r, widths) for r in body), rule,
                 f"Self CPU time total: {_us(whole)}"]
        return "\n".join(lines)

    def total_average(self) -> FunctionEventAvg:
        """Every entry summed into one ``"Total"``."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total


def _sort_key(e: Any, sort_by: str) -> float:
    if not hasattr(e, sort_by):
        raise ValueError(f"table: cannot sort by {sort_by!r}; use cpu_time_total, "
                         f"self_cpu_time_total, cpu_time or count")
    return float(getattr(e, sort_by))


def _name(e: Any) -> str:
    return e.key if isinstance(e, FunctionEventAvg) else e.name


def _mean(e: Any) -> float:
    return e.cpu_time if isinstance(e, FunctionEventAvg) else e.cpu_time_total


def _count(e: Any) -> int:
    return e.count if isinstance(e, FunctionEventAvg) else 1


def _us(us: float) -> str:
    """A time as PyTorch's table writes it: us, ms or s."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _line(cells: list[str], widths: list[int]) -> str:
    return "  ".join([cells[0].ljust(widths[0])] +
                     [c.rjust(w) for c, w in zip(cells[1:], widths[1:])])


@dataclass(slots=True)
class _Open:
    """An event still running: its name, start and the time its children took."""

    name: str
    kind: str
    start: int
    shapes: tuple[tuple[int, ...], ...]
    children: int = 0


@dataclass
class _Threads:
    """Per-thread state: the open events, and whether an observed forward is running."""

    stacks: dict[int, list[_Open]] = field(default_factory=dict)
    in_forward: set[int] = field(default_factory=set)


class profile:  # noqa: N801  (PyTorch's name)
    """Records the ops run inside ``with profile() as prof:`` (see the module docstring).

    Args:
        enabled: ``False`` records nothing (the block runs as without it).
        record_shapes: keep each op's input shapes (``key_averages(
            group_by_input_shape=True)`` groups by them).
        synchronize: wait for the device after every op, so that an
            asynchronous device's kernel time lands on its own op.

    Raises:
        RuntimeError: entered while another profile is active (one at a time,
            as PyTorch's).
    """

    def __init__(self, enabled: bool = True, *, record_shapes: bool = False,
                 synchronize: bool = False) -> None:
        self.enabled, self.record_shapes, self.synchronize = enabled, record_shapes, synchronize
        self._events: list[FunctionEvent] = []
        self._threads = _Threads()
        self._lock = threading.Lock()

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if _function.observer is not None:
            raise RuntimeError("profile: another profiler is already running; profilers "
                               "do not nest (use record_function for ranges inside one)")
        self._events, self._threads = [], _Threads()
        _function.observer = self
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled and _function.observer is self:
            _function.observer = None

    # ----- the observer protocol (_function.Observer) -----------------------------------

    def claim(self) -> bool:
        return threading.get_ident() not in self._threads.in_forward

    def forward(self, cls: type[Function], inputs: tuple[TensorBase, ...],
                params: dict[str, Any]) -> Any:
        tid = threading.get_ident()
        shapes = tuple(t.shape for t in inputs) if self.record_shapes else ()
        self._threads.in_forward.add(tid)
        self._open(str(cls.name), "forward", tid, shapes)
        try:
            out = cls.apply(*inputs, **params)
            if self.synchronize:
                out.device.synchronize()
        finally:
            self._threads.in_forward.discard(tid)
            self._close(tid)
        return out

    def backward(self, node: Function, grad: TensorBase) -> tuple[TensorBase | None, ...]:
        tid = threading.get_ident()
        shapes = (grad.shape,) if self.record_shapes else ()
        self._open(node.name(), "backward", tid, shapes)  # type: ignore[operator]
        try:
            grads = node.backward(grad)
            if self.synchronize:
                grad.device.synchronize()
        finally:
            self._close(tid)
        return grads

    def _open(self, name: str, kind: str, tid: int, shapes: tuple[tuple[int, ...], ...]
              ) -> None:
        stack = self._threads.stacks.setdefault(tid, [])
        stack.append(_Open(name, kind, time.perf_counter_ns(), shapes))

    def _close(self, tid: int) -> None:
        end = time.perf_counter_ns()
        stack = self._threads.stacks[tid]
        done = stack.pop()
        took = end - done.start
        if stack:
            stack[-1].children += took
        event = FunctionEvent(done.name, done.kind, done.start, end, took - done.children,
                              tid, len(stack), done.shapes)
        with self._lock:  # threads append to one list
            self._events.append(event)

    # ----- results -------------------------------------------------------------------------

    def events(self) -> EventList:
        """Every recorded event, in the order they started."""
        return EventList(sorted(self._events, key=lambda e: e.start_ns))

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events summed by name (and by input shapes, if asked), one
        :class:`FunctionEventAvg` each, in the order each name first ran."""
        groups: dict[tuple[str, tuple[tuple[int, ...], ...]], FunctionEventAvg] = {}
        for e in self.events():
            shapes = e.input_shapes if group_by_input_shape else ()
            avg = groups.get((e.name, shapes))
            if avg is None:
                avg = groups[(e.name, shapes)] = FunctionEventAvg(e.name, shapes)
            avg.add(e)
        return EventList(groups.values())

    def table(self, sort_by: str = "cpu_time_total", row_limit: int = 100) -> str:
        """``key_averages().table(...)``."""
        return self.key_averages().table(sort_by, row_limit)

    def export_chrome_trace(self, path: str | Path) -> None:
        """Writes the events as a Chrome trace (JSON; open it in ``chrome://tracing``
        or Perfetto): one complete event per op, on its thread's track."""
        start = min((e.start_ns for e in self._events), default=0)
        trace = [{"name": e.name, "cat": e.kind, "ph": "X", "pid": 0, "tid": e.thread,
                  "ts": (e.start_ns - start) / 1e3, "dur": e.cpu_time_total,
                  **({"args": {"Input Shapes": [list(s) for s in e.input_shapes]}}
                     if e.input_shapes else {})} for e in self.events()]
        Path(path).write_text(json.dumps({"traceEvents": trace}))


class record_function(ContextDecorator):  # noqa: N801  (PyTorch's name)
    """Marks a block (or, as a decorator, each call of a function) as one event of
    the running profiler, named ``name``; the ops inside are its children. Does
    nothing when no profiler runs.

    Example:
        >>> import lamina.autograd as ag
        >>> with profile() as prof:
        ...     with record_function("double"):
        ...         y = ag.ones(2) * 2.0
        >>> [(e.name, e.depth) for e in prof.events()]
        [('double', 0), ('mul_scalar', 1)]
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a str, got {type(name).__name__}")
        self.name = name
        # One entry per enclosing use (a decorated function may recurse): the
        # profiler that saw it start, or None.
        self._profiles: list[profile | None] = []

    def __enter__(self) -> record_function:
        observer = _function.observer
        watching = observer if isinstance(observer, profile) else None
        if watching is not None:
            watching._open(self.name, "user", threading.get_ident(), ())
        self._profiles.append(watching)
        return self

    def __exit__(self, *exc: object) -> None:
        watching = self._profiles.pop()
        if watching is not None:
            watching._close(threading.get_ident())

