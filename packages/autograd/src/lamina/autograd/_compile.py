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
used inside, a tensor returned that existed before the call, and more than
one result that requires grad.

Gradients: when the result requires grad, the capture also runs the backward
once (with ``grad``, the eager graph kept for the caller) and records its
kernel calls as a second program over the same buffers. A replay returns the
result as the output of one graph node whose inputs are the tensors that
require grad (arguments and weights) and whose backward replays that second
program: the same kernels as eager's backward, with none of its per-node work.

Python values a kernel receives (a scale, a shape) are constants of the
capture, as in any tracing compiler: pass what changes as arguments, which
key the cache. The ``training`` flags of a compiled module (or of the modules
a compiled function closes over) key it too, since train and eval modes run
different code. A weight read inside (a module parameter) is read where it
lies at every replay; its storage being replaced (``p.data = ...``) is
checked and makes the next call capture again, and so is a module's parameter,
buffer or submodule being assigned anew (:func:`note_assignment`).
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray
from lamina.ndarray._capture import Capture, GraphBreak, Program, array_over

from . import _autocast, _engine, _function
from . import _grad_mode as grad_mode
from ._function import Function
from ._tensor_base import TensorBase, make, share_storage

__all__ = ["GraphBreak", "compile"]

_log = logging.getLogger("lamina.autograd.compile")

_assignments = 0
"""How many times a module's parameter, buffer or submodule was assigned: part of
every cache key, since a replay reads the tensors it captured, not the attributes."""


def note_assignment() -> None:
    """Called by lamina.nn when a module's parameter, buffer or submodule table changes:
    compiled functions capture again rather than replay with the tensors it held."""
    global _assignments
    _assignments += 1


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
    """A signature's replayable capture.

    Attributes:
        forward: the program that computes the result.
        backward: the program of its backward (None when nothing requires grad).
        result: how to rebuild the result from the slots (``_rebuild``).
        guards: ``(weight, buffer, requires_grad)`` for the tensors that existed
            before the call: a replay needs each where it lay, with that flag.
        sources: the tensors that receive gradients: ``("arg", i)`` or
            ``("weight", ref)``, each with the slot and layout of its gradient
            (None where it got none).
        grad_in: the layout of the output gradient the backward was captured with.
    """

    def __init__(self, forward: Program, backward: Program | None, result: Any,
                 guards: list[tuple[weakref.ref[TensorBase], Any, bool]],
                 sources: list[tuple[Any, Any]], grad_in: Any) -> None:
        self.forward, self.backward, self.result = forward, backward, result
        self.guards, self.sources, self.grad_in = guards, sources, grad_in


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
        self._retried: set[Any] = set()  # signatures whose first capture saw an escape
        self._modules = _modules_of(fn)
        functools.update_wrapper(self, fn, updated=())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)

    def __repr__(self) -> str:
        return f"CompiledFunction({self._fn!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors: list[TensorBase] = []
        try:
            # the common call, tensors only, keys without the general walk
            signature = _tensor_signature(args, tensors) if not kwargs else None
            if signature is None:
                tensors.clear()
                signature = _signature((args, kwargs), tensors)
            key = (grad_mode._state.enabled, _autocast.state_key(), _assignments, signature,
                   tuple([m.training for module in self._modules for m in module.modules()])
                   if self._modules else ())
            entry = self._cache.get(key)
        except TypeError:  # an argument that cannot key the cache (a list, an array)
            self.stats["eager"] += 1
            return self._fn(*args, **kwargs)
        if isinstance(entry, _Graph):
            out = _replay(entry, tensors)
            if out is not _STALE:
                if len(self._cache) > 1:
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
        watcher = _Watcher()
        _function.observer = watcher
        # a weight's cast cached by an enclosing autocast region would be a buffer made
        # outside the capture: cast again inside it, so the graph holds the cast
        _autocast._state.cache.clear()
        try:
            with Capture(_unique_buffers(tensors), strict=self._fullgraph) as capture:
                watcher.capture = capture
                result = self._fn(*args, **kwargs)
                watcher.capture = None  # the backward's ops read no new weights
                graph = _graph(capture, watcher, result, tensors)
        except GraphBreak as e:
            raise GraphBreak(f"compile({self._name()}): graph break: {e}") from None
        finally:
            _function.observer = None
        self.stats["captures"] += 1
        reason = capture.broken if capture.broken is not None else graph
        if isinstance(reason, str) and reason.startswith(_ESCAPED) \
                and key not in self._retried:
            # A first call often fills a cache (a mask, a table) that later calls only
            # read: capture once more before giving up on this signature.
            self._retried.add(key)
            _log.info("compile(%s): %s; capturing again on the next call", self._name(), reason)
        elif isinstance(reason, str):
            if self._fullgraph:
                raise GraphBreak(f"compile({self._name()}): graph break: {reason}")
            _log.warning("compile(%s): graph break, this signature runs eagerly: %s",
                         self._name(), reason)
            self.graph_breaks.append(reason)
            self._store(key, _Eager(reason))
        else:
            assert isinstance(graph, _Graph)
            self._store(key, graph)
        return result

    def _store(self, key: Any, entry: _Graph | _Eager) -> None:
        self._cache[key] = entry
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _name(self) -> str:
        return getattr(self._fn, "__qualname__", type(self._fn).__name__)


def _modules_of(fn: Any) -> list[Any]:
    """The modules whose ``training`` flags key the cache: ``fn`` itself, the object
    of a bound method, and modules ``fn`` closes over (train and eval run different
    code: dropout, batch statistics)."""
    def is_module(obj: Any) -> bool:
        return callable(getattr(obj, "modules", None)) and hasattr(obj, "training")

    found = [fn] if is_module(fn) else []
    owner = getattr(fn, "__self__", None)
    if is_module(owner):
        found.append(owner)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if is_module(value):
            found.append(value)
    return found


class _Watcher:
    """The op observer while capturing: the tensors the function's ops read that
    existed before the call (arguments and weights), in the order first read."""

    def __init__(self) -> None:
        self.sources: list[TensorBase] = []
        self.capture: Capture | None = None
        self._seen: set[int] = set()
        self._made: set[int] = set()
        self._inside = False

    def claim(self) -> bool:
        return not self._inside

    def forward(self, cls: type[Function], inputs: tuple[TensorBase, ...],
                params: dict[str, Any]) -> Any:
        capture = self.capture
        if capture is not None:
            # tensors passed as options count too (BatchNorm's running statistics)
            options = [v for v in params.values() if isinstance(v, TensorBase)]
            for t in (*inputs, *options):
                if id(t) in self._seen or id(t) in self._made:
                    continue
                self._seen.add(id(t))
                where = capture.slot_of(t._data._buf)
                if where is None or where[0] in ("input", "const"):  # an argument or weight
                    self.sources.append(t)
        self._inside = True
        try:
            out = cls.apply(*inputs, **params)
        finally:
            self._inside = False
        self._made.add(id(out))
        return out

    def backward(self, node: Function, grad: TensorBase) -> tuple[TensorBase | None, ...]:
        return node.backward(grad)


def _graph(capture: Capture, watcher: _Watcher, result: Any,
           args: list[TensorBase]) -> _Graph | str:
    """The replayable capture of ``result`` (the backward too, if it requires grad),
    or why there is none. Runs inside the capture, after the function."""
    found: list[TensorBase] = []
    _tensors_in(result, found)
    diff = [t for t in found if t.requires_grad and grad_mode._state.enabled]
    if len(diff) > 1:
        return (f"{len(diff)} results require grad; a compiled function may return one "
                f"(return the others detached, or compile the parts separately)")
    sources, grads, grad_in = [], [], None
    wanted: list[TensorBase] = []
    got: tuple[TensorBase | None, ...] = ()
    if diff:
        wanted = [t for t in watcher.sources if t.requires_grad]
        with capture.paused():
            seed = make(nd.ones(diff[0].shape, dtype=diff[0].dtype, device=diff[0].device))
        capture.next_phase([seed._data._buf])
        got = _engine.grad(diff[0], wanted, seed, retain_graph=True, allow_unused=True)
        grads = [g for g in got if g is not None]
        grad_in = seed._data
    try:
        for t, g in zip(wanted, got):
            origin = next((("arg", i) for i, a in enumerate(args) if a is t),
                          ("weight", weakref.ref(t)))
            sources.append((origin, None if g is None else _layout(capture, g._data)))
        spec, outputs = _result_spec(result, args, capture, diff[0] if diff else None)
        outputs.extend(g._data._buf for g in grads)
        programs = capture.programs(outputs, _held(found + grads + ([seed] if diff else [])))
    except GraphBreak as e:
        return str(e)
    guards = [(weakref.ref(t), t._data._buf, t.requires_grad) for t in watcher.sources
              if (capture.slot_of(t._data._buf) or ("const",))[0] == "const"]
    return _Graph(programs[0], programs[1] if diff else None, spec, guards, sources,
                  grad_in)


def _tensors_in(obj: Any, found: list[TensorBase]) -> None:
    if isinstance(obj, TensorBase):
        found.append(obj)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            _tensors_in(o, found)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, found)


def _held(roots: list[TensorBase]) -> dict[int, int]:
    """For each buffer, how many distinct NDArrays over it ``roots`` and their
    autograd graphs hold (the references a capture expects to find)."""
    arrays: dict[int, NDArray] = {}

    def tensor(t: TensorBase | None) -> None:
        while t is not None:  # a view's base holds the same storage
            arrays[id(t._data)] = t._data
            t = t._base

    nodes: list[Any] = [t.grad_fn for t in roots if t.grad_fn is not None]
    seen: set[int] = set()
    for t in roots:
        tensor(t)
    while nodes:
        node = nodes.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for value in vars(node).values():
            for item in (value if isinstance(value, (tuple, list)) else (value,)):
                if isinstance(item, NDArray):
                    arrays[id(item)] = item
                elif isinstance(item, TensorBase):
                    tensor(item)
        nodes.extend(e for e in getattr(node, "next", ()) if isinstance(e, Function))
    counts: dict[int, int] = {}
    for a in arrays.values():
        counts[id(a._buf)] = counts.get(id(a._buf), 0) + 1
    return counts


def _layout(capture: Capture, a: NDArray) -> Any:
    """Where a gradient lives: any slot but a constant's (a replay would hand every
    caller the same storage), as the slot and the layout over it."""
    where = capture.slot_of(a._buf)
    if where is None or where[0] == "const":
        raise GraphBreak("a gradient is a tensor that existed before the call")
    return (where[1], a._shape, a._strides, a._offset, a)


_STALE = object()
_ESCAPED = "an array made inside the function is kept outside it"


def _tensor_key(t: TensorBase, alias: int) -> tuple[Any, ...]:
    """What a capture depends on of one tensor argument (dtype and device by name:
    their hashes are cheaper than the objects')."""
    a = t._data
    return (a._shape, a._strides, a._offset, a._dtype.name, a._device.name,
            t._requires_grad, a._buf.size, alias)


def _tensor_signature(args: tuple[Any, ...], tensors: list[TensorBase]) -> Any:
    """The signature of positional arguments that are all tensors (None otherwise)."""
    keys = []
    bufs: list[Any] = []
    for t in args:
        if not isinstance(t, TensorBase):
            return None
        buf = t._data._buf
        alias = next((i for i, b in enumerate(bufs) if b is buf), len(bufs))
        bufs.append(buf)
        tensors.append(t)
        keys.append(_tensor_key(t, alias))
    return tuple(keys)


def _signature(obj: Any, tensors: list[TensorBase]) -> Any:
    """A hashable description of the arguments; collects their tensors in order."""
    if isinstance(obj, TensorBase):
        buf = obj._data._buf
        alias = next((i for i, t in enumerate(tensors) if t._data._buf is buf), len(tensors))
        tensors.append(obj)
        return ("T", _tensor_key(obj, alias))
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


def _result_spec(result: Any, args: list[TensorBase], capture: Capture,
                 diff: TensorBase | None) -> tuple[Any, list[Any]]:
    """How to rebuild ``result`` from a replay's slots, and the buffers it lives in;
    ``diff`` (the result that requires grad) is the compiled node's output."""
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
            return ("diff" if obj is diff else "tensor", where[1], a._shape, a._strides,
                    a._offset, a, owner)
        if type(obj) in (tuple, list):
            return (type(obj), [spec(o) for o in obj])
        if isinstance(obj, tuple) and hasattr(obj, "_make"):  # a named tuple
            return ("named", type(obj), [spec(o) for o in obj])
        if type(obj) is dict:
            return (dict, [(k, spec(v)) for k, v in obj.items()])
        return ("value", obj)

    return spec(result), buffers


def _replay(graph: _Graph, tensors: list[TensorBase]) -> Any:
    for ref, buf, requires_grad in graph.guards:
        t = ref()
        if t is not None and (t._data._buf is not buf or t._requires_grad != requires_grad):
            return _STALE  # a weight's storage or flag changed: capture again
    buffers = _unique_buffers(tensors)
    if graph.backward is None:
        return _rebuild(graph.result, graph.forward.run(buffers), tensors, None)
    sources = [tensors[o[1]] if o[0] == "arg" else o[1]() for o, _ in graph.sources]
    live = [t for t in sources if t is not None]
    if not live:  # every weight that wanted a gradient is gone: nothing to record
        return _rebuild(graph.result, graph.forward.run(buffers), tensors, None)
    out = Compiled.apply(*live, graph=graph, buffers=buffers, sources=sources)
    return _rebuild(graph.result, out.grad_fn.table, tensors, out)


class Compiled(Function):
    """A replayed compiled function as one graph node: ``forward`` runs the captured
    forward program, ``backward`` the captured backward program."""

    name = "compiled"
    save_inputs = True  # the version checks of eager's saved tensors

    def forward(self, *arrays: NDArray, graph: _Graph, buffers: list[Any],
                sources: list[TensorBase | None]) -> NDArray:
        self.graph, self.live = graph, [t is not None for t in sources]
        self.table: list[Any] | None = graph.forward.run(buffers)
        spec = _find_diff(graph.result)
        _, index, shape, strides, offset, like, _ = spec
        return array_over(self.table[index], shape, strides, offset, like)

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, ...]:
        self.inputs  # noqa: B018  (raises if an input was modified in place since)
        graph, table = self.graph, self.table
        assert graph.backward is not None and table is not None
        seed = g._data
        want = graph.grad_in
        if seed._strides != want._strides or seed._offset or seed._dtype is not want._dtype:
            seed = seed.astype(want._dtype).compact() if seed._dtype is not want._dtype \
                else seed.compact()
        table = graph.backward.run([seed._buf], table)
        grads: list[TensorBase | None] = []
        for (_, layout), live in zip(graph.sources, self.live):
            if not live:
                continue
            if layout is None:
                grads.append(None)
            else:
                index, shape, strides, offset, like = layout
                grads.append(make(array_over(table[index], shape, strides, offset, like)))
        return tuple(grads)

    def release(self) -> None:
        super().release()
        self.table = None


def _find_diff(spec: Any) -> Any:
    """The spec entry of the result that requires grad."""
    if spec[0] == "diff":
        return spec
    children = spec[2] if spec[0] == "named" else spec[1] if spec[0] in (tuple, list) \
        else [s for _, s in spec[1]] if spec[0] is dict else []
    for child in children:
        found = _find_diff(child)
        if found is not None:
            return found
    return None


def _rebuild(spec: Any, slots: list[Any], args: list[TensorBase],
             diff: TensorBase | None) -> Any:
    kind = spec[0]
    if kind == "diff" and diff is not None:
        return diff
    if kind in ("tensor", "diff"):
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
        return spec[1]._make(_rebuild(s, slots, args, diff) for s in spec[2])
    if kind is dict:
        return {k: _rebuild(s, slots, args, diff) for k, s in spec[1]}
    return kind(_rebuild(s, slots, args, diff) for s in spec[1])
