"""``Function``: how one differentiable op is declared, and the graph node it leaves.

An op is a subclass with a ``name``, a ``forward`` on NDArrays and a
``backward`` written with Tensor ops (so that the backward pass can itself be
differentiated). Calling ``Op.apply(*tensors, **params)`` runs the forward and,
when a gradient may be needed, records the instance as the output's
``grad_fn``: the instance *is* the graph node, like PyTorch's ``ctx``.

Tensors carry a version counter (``Tensor._version``) that in-place ops bump
and that views share with the tensor they view, as in PyTorch. A node notes
the versions of the tensors it saves and checks them when its backward reads
them, so a saved tensor modified in place raises instead of giving a wrong
gradient.

A node points at what produced its inputs (``next``): the parent node for an
intermediate tensor, the tensor itself for a leaf, ``None`` for an input that
needs no gradient. ``next_functions`` shows the same edges as PyTorch does,
with an :class:`AccumulateGrad` node standing for each leaf. A node never
holds intermediate tensors except the ones its backward rule saved, and the
engine drops those after use, which is what frees the activations of a
training step.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from . import _grad_mode as grad_mode
from . import _tensor_base as tb
from ._tensor_base import TensorBase, Version, share_storage

if TYPE_CHECKING:
    from lamina.ndarray import DType, NDArray

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.")


class Observer(Protocol):
    """What watches every op while installed as :data:`observer` (the profiler)."""

    def claim(self) -> bool:
        """Whether to observe this ``apply`` (False inside an observed one, so that the
        observer's own ``cls.apply`` call runs the op)."""

    def forward(self, cls: type[Function], inputs: tuple[TensorBase, ...],
                params: dict[str, Any]) -> Any:
        """Runs ``cls.apply(*inputs, **params)``, watching it."""

    def backward(self, node: Function, grad: TensorBase) -> tuple[TensorBase | None, ...]:
        """Runs ``node.backward(grad)`` for the engine, watching it."""


observer: Observer | None = None
"""Set while an op observer is active (``lamina.autograd.profiler``); ``None`` costs
``apply`` and the engine one comparison per op."""

autocast_hook: Callable[[str, tuple[Any, ...]], tuple[Any, ...]] | None = None
"""Set while an ``autocast`` region is open in any thread (``_autocast.py``): casts an
op's inputs, given its name; ``None`` costs ``apply`` one comparison."""


class OpName(str):
    """An op's name (``"mul"``) that, called, gives its node's name (``"MulBackward"``).

    ``Function.name`` is the op's registry key everywhere in Lamina, while
    PyTorch users call ``grad_fn.name()``; this string serves both.
    """

    node_name: str

    def __new__(cls, op: str, node_name: str) -> OpName:
        self = super().__new__(cls, op)
        self.node_name = node_name
        return self

    def __call__(self) -> str:
        return self.node_name


class Function:
    """Base class of every primitive op; an instance is one node of the graph.

    Subclasses set:
        name: the op's name, unique in the registry (``"add"``, ``"matmul"``).
        differentiable: ``False`` for ops whose output never requires grad
            (comparisons, argmax); such ops define no ``backward``.
        save_inputs: keep the input Tensors for ``backward`` (``self.inputs``).
        save_output: keep the output for ``backward`` (``self.output``).
        is_view: the output may share the input's storage (reshape, permute,
            slices): it then shares the input's version counter.

    ``forward(*arrays, **params)`` receives NDArrays and returns one NDArray;
    it may store non-tensor facts (axes, shapes) on ``self``. ``backward(grad)``
    receives the output's gradient as a Tensor and returns one gradient (or
    ``None``) per input. A gradient may keep the broadcast shape of the output:
    the engine sums it back to the input's shape.
    """

    name: ClassVar[str] = ""
    differentiable: ClassVar[bool] = True
    save_inputs: ClassVar[bool] = False
    save_output: ClassVar[bool] = False
    is_view: ClassVar[bool] = False

    # Versions of the saved inputs (None: all 0) and the output's counter.
    _versions: tuple[int, ...] | None = None
    _out_vc: Version | None = None

    # Set by apply() on recorded nodes only; the defaults are class attributes, so that
    # recording a node sets only what differs from them.
    next: tuple[Any, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[DType, ...]  # each input's; a gradient goes back in its input's dtype
    _saved: tuple[TensorBase, ...] | None = None
    _out_data: NDArray | None = None
    _released: bool = False
    _retained: weakref.ref[TensorBase] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = OpName(cls.name, f"{cls.__name__}Backward")

    def forward(self, *arrays: NDArray, **params: Any) -> NDArray:
        raise TypeError(f"{type(self).__name__} does not define forward()")

    def backward(self, grad: TensorBase) -> tuple[TensorBase | None, ...]:
        raise RuntimeError(f"{self.name}: this op is not differentiable")

    # A view op whose input gradient is zero but for one region (a slice) may define
    # add_grad_into(grad, into, fresh): add it into ``into``, an array of the input's
    # shape that the engine owns, in place (``fresh``: that region of ``into`` holds
    # nothing yet, so writing is enough). A first-order backward then sums the gradients
    # of several slices of one tensor (q, k and v of a fused projection) into one
    # buffer, not into a zero-filled tensor per slice added pairwise; the engine lays
    # it out in the node's ``input_order`` and leaves rows unfilled for a ``row``
    # slice where the node sets them (_engine._add_into).
    add_grad_into: Any = None

    @classmethod
    def apply(cls, *inputs: TensorBase, **params: Any) -> Any:
        """Runs the forward on ``inputs``' data and records the node if needed.

        Returns a Tensor (typed ``Any``: see ``_tensor_base.make``).
        """
        if autocast_hook is not None:
            inputs = autocast_hook(cls.name, inputs)
        if observer is not None and observer.claim():  # the profiler watches this call
            return observer.forward(cls, inputs, params)
        node = cls()
        # Plain loops, not comprehensions or any(genexpr): this runs for every
        # op, and each comprehension is one more Python call (eager overhead).
        # Two inputs (the binary ops, most of a step's) are unrolled: a 1-element
        # x + y with grad went from 3.6 to 2.9 us with this and the unrolled
        # record below (Python 3.11, Zen 3).
        if len(inputs) == 2:
            t, u = inputs
            if t._base is not None and t._history != t._vc.history:  # type: ignore[union-attr]
                t._refresh_view()
            if u._base is not None and u._history != u._vc.history:  # type: ignore[union-attr]
                u._refresh_view()
            arrays = [t._data, u._data]
            record = t._requires_grad or u._requires_grad
        else:
            arrays = []
            record = False
            for t in inputs:
                arrays.append(t._data)
                if t._base is not None and t._history != t._vc.history:  # type: ignore[union-attr]
                    t._refresh_view()
                if t._requires_grad:
                    record = True
        data = node.forward(*arrays, **params)
        if not (record and cls.differentiable and grad_mode._state.enabled):
            # Nothing to record (no_grad, inference, no input needing grad): the output
            # alone, no node. make() and share_storage are written out here, one
            # Python call fewer each on the path every inference op takes.
            out = object.__new__(tb._tensor_class)
            out._data = data
            out._requires_grad = False
            out.grad = out.grad_fn = out._post_hooks = out._vc = out._base = None
            if cls.is_view and data._buf is arrays[0]._buf:
                base = inputs[0]
                vc = base._vc
                if vc is None:
                    vc = base._vc = Version()
                out._vc = vc
                out._base = base if base._base is None else base._base
                out._history = vc.history
            return out
        # The recorded node: its edges, input shapes and dtypes; then the output,
        # make() written out.
        if len(inputs) == 2:
            t, u = inputs
            a, b = arrays
            node.next = ((t if t.grad_fn is None else t.grad_fn) if t._requires_grad else None,
                         (u if u.grad_fn is None else u.grad_fn) if u._requires_grad else None)
            node.shapes = (a._shape, b._shape)
            node.dtypes = (a._dtype, b._dtype)
        else:
            edges = []
            shapes = []
            dtypes = []
            for t, a in zip(inputs, arrays):
                edges.append((t if t.grad_fn is None else t.grad_fn) if t._requires_grad else None)
                shapes.append(a._shape)
                dtypes.append(a._dtype)
            node.next = tuple(edges)
            node.shapes = tuple(shapes)
            node.dtypes = tuple(dtypes)
        if cls.save_inputs:
            node._saved = inputs
            for t in inputs:
                if t._vc is not None:
                    node._versions = tuple([0 if u._vc is None else u._vc.value
                                            for u in inputs])
                    break
        out = object.__new__(tb._tensor_class)
        out._data = data
        out._requires_grad = True
        out.grad = out._post_hooks = out._vc = out._base = None
        out.grad_fn = node
        if cls.save_output:
            node._out_data = data
            out._vc = node._out_vc = Version()
        if cls.is_view and data._buf is arrays[0]._buf:
            share_storage(out, inputs[0])
        return out

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """Whether each input needs a gradient; lets a rule skip useless work."""
        need = []
        for edge in self.next:  # a loop, not a generator: one Python call fewer per node
            need.append(edge is not None)
        return tuple(need)

    @property
    def next_functions(self) -> tuple[tuple[Function | AccumulateGrad | None, int], ...]:
        """One ``(node, 0)`` pair per input, as PyTorch's ``grad_fn.next_functions``.

        The node is the ``grad_fn`` of an intermediate input, an
        :class:`AccumulateGrad` for a leaf that requires grad, ``None`` for an
        input that needs no gradient. The ``0`` is the output index of that
        node (Lamina's nodes have one output).

        Example:
            >>> import lamina.autograd as ag
            >>> w = ag.ones(2, requires_grad=True)
            >>> y = (w * ag.tensor([3.0, 4.0])).sum()
            >>> y.grad_fn.name(), y.grad_fn.next_functions
            ('SumBackward', ((<MulBackward>, 0),))
            >>> y.grad_fn.next_functions[0][0].next_functions
            ((<AccumulateGrad>, 0), (None, 0))
        """
        return tuple((_accumulate_grad(e) if isinstance(e, TensorBase) else e, 0)
                     for e in self.next)

    @property
    def inputs(self) -> tuple[TensorBase, ...]:
        """The input Tensors saved by ``save_inputs``."""
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        assert self._saved is not None, f"{self.name} did not declare save_inputs"
        versions = self._versions
        for i, t in enumerate(self._saved):
            if t._vc is not None and t._vc.value != (0 if versions is None else versions[i]):
                raise RuntimeError(modified_message(
                    f"input {i} of {self.name}", t, 0 if versions is None else versions[i]))
        return self._saved

    @property
    def output(self) -> TensorBase:
        """The output, rebuilt as a Tensor whose grad_fn is this node.

        Only the output's NDArray is stored: storing the output Tensor would
        make a reference cycle (output -> node -> output) that only the garbage
        collector could free.
        """
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        assert self._out_data is not None, f"{self.name} did not declare save_output"
        if self._out_vc is not None and self._out_vc.value:
            raise RuntimeError(modified_message(
                f"the output of {self.name}", tb.make(self._out_data), 0,
                self._out_vc.value))
        return tb.make(self._out_data, requires_grad=True, grad_fn=self)

    def release(self) -> None:
        """Drops the saved tensors (after a backward without retain_graph)."""
        self._saved = None
        self._out_data = None
        self._released = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__}Backward>"


def modified_message(what: str, t: TensorBase, expected: int, found: int | None = None) -> str:
    """PyTorch's error for a saved tensor that an in-place op has changed."""
    if found is None:
        found = t._version
    return ("one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {what} (shape {t.shape}, dtype {t.dtype.name}) is at "
            f"version {found}; expected version {expected} instead. Hint: the in-place op "
            "overwrote a value that backward needs; use its out-of-place form "
            "(x = x + y instead of x += y, or .clone() first)")


class AccumulateGrad:
    """The node standing for a leaf in ``next_functions``; ``variable`` is the leaf."""

    next_functions: tuple[tuple[Any, int], ...] = ()

    def __init__(self, variable: TensorBase) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


# One AccumulateGrad per leaf while someone holds it, so walks of the graph that
# meet a leaf twice see the same node (as in PyTorch). Keyed by id: a Tensor's
# == is elementwise. A live node holds its leaf, so the id cannot be reused.
_accumulators: dict[int, weakref.ref[AccumulateGrad]] = {}


def _accumulate_grad(leaf: TensorBase) -> AccumulateGrad:
    key = id(leaf)
    ref = _accumulators.get(key)
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)

        def forget(dead: weakref.ref[AccumulateGrad], key: int = key) -> None:
            if _accumulators.get(key) is dead:
                del _accumulators[key]

        _accumulators[key] = weakref.ref(node, forget)
    return node


