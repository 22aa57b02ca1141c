"""``compile``: capture a function's kernel calls once, replay them on later calls.

The first call with a given *signature* (each tensor argument's shape,
strides, dtype, device and ``requires_grad``, the other arguments' values, and
whether grad mode is on) runs the function eagerly inside a kernel capture
(:mod:`lamina.ndarray._capture`). Later calls with that signature replay the
captured kernel calls on the new arguments' buffers: no module code, no op
dispatch, no Tensor per intermediate, only the kernel loop.

A capture that saw something a replay cannot repeat is a *graph break*: the
signature then always runs eagerly (one log line says why), or, with
``fullgraph=True``, :class:`GraphBreak` is raised where it happened. Breaks
are: a value read to the host (``item()``, printing, ``if tensor:``), random
numbers drawn on the host (dropout in training, ``randn``), a new array kept
outside the function (a cache attribute, a swapped storage), a device first
used inside, a tensor returned that existed before the call, and (for now)
an op that records a gradient graph: the replay makes no graph, so code that
needs gradients runs eagerly.

Python values a kernel receives (a scale, a shape) are constants of the
capture, as in any tracing compiler: pass what changes as arguments, which
key the cache. A weight read inside (a module parameter) is read where it
lies at every replay; its storage being replaced (``p.data = ...``) is
checked and makes the next call capture again.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from lamina.ndarray._capture import Capture, GraphBreak, Program, array_over

from . import _function
from . import _grad_mode as grad_mode
from ._function import Function
from ._tensor_base import TensorBase, make, share_storage

__all__ = ["GraphBreak", "compile"]

_log = logging.getLogger("lamina.autograd.compile")


def compile(fn: Callable[..., Any] | None = None, *, fullgraph: bool = False,  # noqa: A001
            cache_size: int = 8) -> Any:
    """Compiles ``fn`` (a function or a callable such as an ``nn.Module``) into a
    :class:`CompiledFunction` that replays captured kernel calls (see the module
    docstring). Also a decorator, bare or with arguments.

    Args:
        fn: what to compile.
        fullgraph: raise :class:`GraphBreak` at a graph break instead of
            running that signature eagerly.
        cache_size: how many signatures keep their capture; the least
            recently used is dropped beyond that.

    Example:
        >>> import lamina.autograd as ag
        >>> @ag.compile
        ... def f(x):
        ...     return (x * 2.0 + 1.0).exp().sum()
        >>> with ag.no_grad():
        ...     a, b = f(ag.zeros(3)), f(ag.ones(3))  # captured, then replayed
        >>> round(a.item(), 4), round(b.item(), 4), f.stats["replays"]
        (8.1548, 60.2566, 1)
    """
    if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
        raise ValueError(f"compile: cache_size must be an int >= 1, got {cache_size!r}")
    if fn is None:
        return functools.partial(compile, fullgraph=fullgraph, cache_size=cache_size)
    if not callable(fn):
        raise TypeError(f"compile: expected a function or a callable module, got "
                        f"{type(fn).__name__}")
    return CompiledFunction(fn, fullgraph, cache_size)


class _Eager:
    """A signature whose capture broke: it runs eagerly."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Graph:
    """A signature's replayable capture: the program, how to rebuild the result, and
    the weights whose storage it reads where it lay when captured."""

    def __init__(self, program: Program, result: Any,
                 guards: list[tuple[weakref.ref[TensorBase], Any]]) -> None:
        self.program, self.result, self.guards = program, result, guards


class CompiledFunction:
    """``fn`` with captured replays per signature (made by :func:`compile`).

    Attributes:
        stats: counts of ``captures``, ``replays`` and ``eager`` calls.
        graph_breaks: why each signature that runs eagerly broke, in order.

    Any other attribute is ``fn``'s (a compiled module still has its
    ``parameters()``, ``train()``, ...).
    """

    def __init__(self, fn: Callable[..., Any], fullgraph: bool, cache_size: int) -> None:
        self._fn, self._fullgraph, self._cache_size = fn, fullgraph, cache_size
        self._cache: OrderedDict[Any, _Graph | _Eager] = OrderedDict()
        self.stats = {"captures": 0, "replays": 0, "eager": 0}
        self.graph_breaks: list[str] = []
        functools.update_wrapper(self, fn, updated=())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)

    def __repr__(self) -> str:
        return f"CompiledFunction({self._fn!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors: list[TensorBase] = []
        try:
            key = (grad_mode._state.enabled, _signature((args, kwargs), tensors))
            hash(key)
        except TypeError:  # an argument that cannot key the cache (a list, an array)
            self.stats["eager"] += 1
            return self._fn(*args, **kwargs)
        entry = self._cache.get(key)
        if isinstance(entry, _Graph):
            out = _replay(entry, tensors)
            if out is not _STALE:
                self._cache.move_to_end(key)
                self.stats["replays"] += 1
                return out
            entry = None
        if isinstance(entry, _Eager):
            self.stats["eager"] += 1
            return self._fn(*args, **kwargs)
        if _function.observer is not None:  # profiling, or inside another capture
            self.stats["eager"] += 1
            return self._fn(*args, **kwargs)
        return self._capture(key, tensors, args, kwargs)

    def _capture(self, key: Any, tensors: list[TensorBase], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
        inputs = _unique_buffers(tensors)
        watcher = _Watcher()
        _function.observer = watcher
        try:
            with Capture(inputs, strict=self._fullgraph) as capture:
                watcher.capture = capture
                result = self._fn(*args, **kwargs)
        except GraphBreak as e:
            raise GraphBreak(f"compile({self._name()}): graph break: {e}") from None
        finally:
            _function.observer = None
        self.stats["captures"] += 1
        reason = capture.broken or watcher.reason
        if reason is None:
            try:
                spec, outputs = _result_spec(result, tensors, capture)
                program = capture.program(outputs)
            except GraphBreak as e:
                reason = str(e)
        if reason is not None:
            if self._fullgraph:
                raise GraphBreak(f"compile({self._name()}): graph break: {reason}")
            _log.warning("compile(%s): graph break, this signature runs eagerly: %s",
                         self._name(), reason)
            self.graph_breaks.append(reason)
            self._store(key, _Eager(reason))
            return result
        guards = [(weakref.ref(t), buf) for t, buf in watcher.weights
                  if (capture.slot_of(buf) or ("",))[0] == "const"]
        self._store(key, _Graph(program, spec, guards))
        return result

    def _store(self, key: Any, entry: _Graph | _Eager) -> None:
        self._cache[key] = entry
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _name(self) -> str:
        return getattr(self._fn, "__qualname__", type(self._fn).__name__)


class _Watcher:
    """The op observer while capturing: notes an op that records a graph, and the
    tensors the ops read (their storage is checked before each replay)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.weights: list[tuple[TensorBase, Any]] = []
        self.capture: Capture | None = None
        self._seen: set[int] = set()
        self._inside = False

    def claim(self) -> bool:
        return not self._inside

    def forward(self, cls: type[Function], inputs: tuple[TensorBase, ...],
                params: dict[str, Any]) -> Any:
        for t in inputs:
            if id(t) not in self._seen:
                self._seen.add(id(t))
                where = None if self.capture is None else self.capture.slot_of(t._data._buf)
                if where is None or where[0] == "const":  # it existed before the call
                    self.weights.append((t, t._data._buf))
        self._inside = True
        try:
            out = cls.apply(*inputs, **params)
        finally:
            self._inside = False
        if out.requires_grad and self.reason is None:
            self.reason = (f"{cls.name} records a gradient graph (grad mode is on and an "
                           f"input requires grad); compiled replays record none, so this "
                           f"runs eagerly: call it under no_grad() to replay it")
            if self.capture is not None and self.capture.strict:
                raise GraphBreak(self.reason)
        return out

    def backward(self, node: Function, grad: TensorBase) -> tuple[TensorBase | None, ...]:
        return node.backward(grad)


_STALE = object()


def _signature(obj: Any, tensors: list[TensorBase]) -> Any:
    """A hashable description of the arguments; collects their tensors in order."""
    if isinstance(obj, TensorBase):
        a = obj._data
        buf = a._buf
        alias = next((i for i, t in enumerate(tensors) if t._data._buf is buf), len(tensors))
        tensors.append(obj)
        return ("T", a._shape, a._strides, a._offset, a._dtype, a._device, obj._requires_grad,
                buf.size, alias)
    if type(obj) in (tuple, list):
        return (type(obj), tuple(_signature(o, tensors) for o in obj))
    if type(obj) is dict:
        return (dict, tuple((k, _signature(v, tensors)) for k, v in sorted(obj.items())))
    return (type(obj), obj)  # hashed by the caller: an unhashable value raises TypeError


def _unique_buffers(tensors: list[TensorBase]) -> list[Any]:
    seen: dict[int, Any] = {}
    for t in tensors:
        seen.setdefault(id(t._data._buf), t._data._buf)
    return list(seen.values())


def _result_spec(result: Any, args: list[TensorBase], capture: Capture) -> tuple[Any, list[Any]]:
    """How to rebuild ``result`` from a replay's slots, and the buffers it lives in."""
    buffers: list[Any] = []

    def spec(obj: Any) -> Any:
        if isinstance(obj, TensorBase):
            for i, t in enumerate(args):
                if obj is t:
                    return ("arg", i)
            a = obj._data
            where = capture.slot_of(a._buf)
            if where is None or where[0] == "const":
                raise GraphBreak("the function returns a tensor that existed before the "
                                 "call (or a view of one); return a copy (clone())")
            owner = next((i for i, t in enumerate(args) if t._data._buf is a._buf), None)
            buffers.append(a._buf)
            return ("tensor", where[1], a._shape, a._strides, a._offset, a, owner)
        if type(obj) in (tuple, list):
            return (type(obj), [spec(o) for o in obj])
        if isinstance(obj, tuple) and hasattr(obj, "_make"):  # a named tuple
            return ("named", type(obj), [spec(o) for o in obj])
        if type(obj) is dict:
            return (dict, [(k, spec(v)) for k, v in obj.items()])
        return ("value", obj)

    return spec(result), buffers


def _replay(graph: _Graph, tensors: list[TensorBase]) -> Any:
    for ref, buf in graph.guards:
        t = ref()
        if t is not None and t._data._buf is not buf:
            return _STALE  # a weight's storage was replaced: capture again
    slots = graph.program.run(_unique_buffers(tensors))
    return _rebuild(graph.result, slots, tensors)


def _rebuild(spec: Any, slots: list[Any], args: list[TensorBase]) -> Any:
    kind = spec[0]
    if kind == "tensor":
        _, index, shape, strides, offset, like, owner = spec
        out = make(array_over(slots[index], shape, strides, offset, like))
        if owner is not None:  # a view of an argument shares its version counter
            share_storage(out, args[owner])
        return out
    if kind == "arg":
        return args[spec[1]]
    if kind == "value":
        return spec[1]
    if kind == "named":
        return spec[1]._make(_rebuild(s, slots, args) for s in spec[2])
    if kind is dict:
        return {k: _rebuild(s, slots, args) for k, s in spec[1]}
    return kind(_rebuild(s, slots, args) for s in spec[1])
