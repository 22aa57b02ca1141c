"""``Function``: how one differentiable op is declared, and the graph node it leaves.

An op is a subclass with a ``name``, a ``forward`` on NDArrays and a
``backward`` written with Tensor ops (so that the backward pass can itself be
differentiated). Calling ``Op.apply(*tensors, **params)`` runs the forward and,
when a gradient may be needed, records the instance as the output's
``grad_fn``: the instance *is* the graph node, like PyTorch's ``ctx``.

A node points at what produced its inputs (``next``): the parent node for an
intermediate tensor, the tensor itself for a leaf, ``None`` for an input that
needs no gradient. It never holds intermediate tensors except the ones its
backward rule saved, and the engine drops those after use, which is what
frees the activations of a training step.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, ClassVar

from . import _grad_mode as grad_mode

if TYPE_CHECKING:
    from lamina.ndarray import DType, NDArray

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.")


class Function:
    """Base class of every primitive op; an instance is one node of the graph.

    Subclasses set:
        name: the op's name, unique in the registry (``"add"``, ``"matmul"``).
        differentiable: ``False`` for ops whose output never requires grad
            (comparisons, argmax); such ops define no ``backward``.
        save_inputs: keep the input Tensors for ``backward`` (``self.inputs``).
        save_output: keep the output for ``backward`` (``self.output``).

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

    # Set by apply() on recorded nodes only.
    next: tuple[Any, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[DType, ...]  # each input's; a gradient goes back in its input's dtype
    _saved: tuple[Tensor, ...] | None
    _out_data: NDArray | None
    _released: bool
    _retained: weakref.ref[Tensor] | None

    def forward(self, *arrays: NDArray, **params: Any) -> NDArray:
        raise TypeError(f"{type(self).__name__} does not define forward()")

    def backward(self, grad: Tensor) -> tuple[Tensor | None, ...]:
        raise RuntimeError(f"{self.name}: this op is not differentiable")

    @classmethod
    def apply(cls, *inputs: Tensor, **params: Any) -> Tensor:
        """Runs the forward on ``inputs``' data and records the node if needed."""
        node = cls()
        data = node.forward(*[t.data for t in inputs], **params)
        # A plain loop, not any(genexpr): this line runs for every op (eager overhead).
        record = False
        if cls.differentiable and grad_mode._state.enabled:
            for t in inputs:
                if t._requires_grad:
                    record = True
                    break
        if not record:
            return Tensor._make(data)
        node.next = tuple([
            (t if t.grad_fn is None else t.grad_fn) if t._requires_grad else None
            for t in inputs])
        node.shapes = tuple([t.data._shape for t in inputs])
        node.dtypes = tuple([t.data._dtype for t in inputs])
        node._saved = inputs if cls.save_inputs else None
        node._out_data = data if cls.save_output else None
        node._released = False
        node._retained = None
        return Tensor._make(data, True, node)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """Whether each input needs a gradient; lets a rule skip useless work."""
        return tuple(edge is not None for edge in self.next)

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """The input Tensors saved by ``save_inputs``."""
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        assert self._saved is not None, f"{self.name} did not declare save_inputs"
        return self._saved

    @property
    def output(self) -> Tensor:
        """The output, rebuilt as a Tensor whose grad_fn is this node.

        Only the output's NDArray is stored: storing the output Tensor would
        make a reference cycle (output -> node -> output) that only the garbage
        collector could free.
        """
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        assert self._out_data is not None, f"{self.name} did not declare save_output"
        return Tensor._make(self._out_data, requires_grad=True, grad_fn=self)

    def release(self) -> None:
        """Drops the saved tensors (after a backward without retain_graph)."""
        self._saved = None
        self._out_data = None
        self._released = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__}Backward>"


# Tensor's module imports the ops, which import this one: bind Tensor last.
from ._tensor import Tensor  # noqa: E402
