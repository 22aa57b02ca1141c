"""``TensorBase``: the state every tensor carries, below the ops (PyTorch's ``TensorBase``).

Autograd is layered like PyTorch: this core (the NDArray, ``requires_grad``,
``grad``, ``grad_fn``, the version counter shared by views) is what ``Function``,
the engine and the op modules import; ``Tensor`` (``_tensor.py``) subclasses it
with the method surface, and imports the ops. The ops build their results with
:func:`make`, which makes instances of the class ``_tensor.py`` registers with
:func:`register_tensor_class` (PyTorch's C++ core likewise wraps its results in
the Python ``torch.Tensor`` it is given at start-up), so no layer imports one
above it.

In the op modules' signatures ``Tensor`` is a type variable bound to
``TensorBase``: ``relu(x: Tensor) -> Tensor`` reads "a tensor in, the same kind
out", and type checkers see ``lamina.autograd.relu(t)`` return a ``Tensor``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import lamina.ndarray as nd
from lamina.ndarray import DTypeError, NDArray

if TYPE_CHECKING:
    from typing_extensions import Self

_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def ones_like_data(a: NDArray) -> NDArray:
    """An NDArray of ones with ``a``'s shape, dtype and device."""
    return nd.ones(a.shape, dtype=a.dtype, device=a.device)


def check_float(dtype: Any, op: str) -> None:
    """Only floating point tensors can require grad (PyTorch's rule and message)."""
    if dtype not in _FLOAT_DTYPES:
        raise DTypeError(f"{op}: Only Tensors of floating point dtype can require "
                         f"gradients, got {dtype}; convert with .float()")


class Version:
    """A tensor's version counter, shared by views of the same storage.

    ``history`` counts the recorded in-place writes into the storage: each
    gives the base tensor a new ``grad_fn``, so a view made before it (whose
    ``_history`` is older) takes a view of the new one when next used
    (``Tensor._refresh_view``), as PyTorch's views do.
    """

    __slots__ = ("value", "history")

    def __init__(self) -> None:
        self.value = 0
        self.history = 0


class TensorBase:
    """The state of a tensor: its values, autograd flags and version counter.

    Not used directly: :class:`lamina.autograd.Tensor` is the class users see.
    """

    __slots__ = ("_data", "_requires_grad", "grad", "grad_fn", "_post_hooks", "_vc", "_base",
                 "_history", "__weakref__")
    __array_priority__ = 1000  # numpy scalars on the left defer to Tensor's operators

    _data: NDArray
    grad: Any  # a Tensor or None
    grad_fn: Any
    _history: int  # views only: the storage's history count their grad_fn is of

    def __init__(self, data: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> None:
        if isinstance(data, TensorBase):
            data = data._data
        if not (isinstance(data, NDArray) and dtype is None and device is None):
            data = nd.array(data, dtype=dtype, device=device)
        if requires_grad:
            check_float(data.dtype, "Tensor")
        self._data = data
        self._requires_grad = bool(requires_grad)
        self.grad = None
        self.grad_fn = None
        self._post_hooks: dict[int, Callable[[Any], None]] | None = None
        self._vc: Version | None = None  # created by the first in-place op or view
        self._base: TensorBase | None = None  # the viewed tensor, for views

    @classmethod
    def _make(cls, data: NDArray, requires_grad: bool = False, grad_fn: Any = None) -> Self:
        """Wraps an NDArray in a ``cls`` without copying or checking (see :func:`make`)."""
        return make(data, requires_grad, grad_fn, cls)

    @property
    def requires_grad(self) -> bool:
        """Whether ops on this tensor are recorded for ``backward``."""
        if self._base is not None and self._history != self._vc.history:  # type: ignore[union-attr]
            self._refresh_view()  # a write through another view gave it history
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None and not value:
            raise RuntimeError("you can only change requires_grad flags of leaf variables; "
                               "use .detach() to get a tensor that does not require grad")
        if value:
            check_float(self._data._dtype, "requires_grad")
        self._requires_grad = bool(value)

    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user rather than by a recorded op."""
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        """How many in-place ops have modified this tensor's storage (PyTorch's name)."""
        return 0 if self._vc is None else self._vc.value

    # The array's fields, not its properties: one frame per read instead of two.
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data._shape

    @property
    def ndim(self) -> int:
        return len(self._data._shape)

    @property
    def dtype(self) -> nd.DType:
        return self._data._dtype

    @property
    def device(self) -> nd.Device:
        return self._data._device

    # The methods and operators Tensor defines or the op table installs, for type
    # checkers: each returns a tensor of the receiver's class.
    if TYPE_CHECKING:
        def _refresh_view(self) -> None: ...
        def __add__(self, other: Any) -> Self: ...
        def __radd__(self, other: Any) -> Self: ...
        def __sub__(self, other: Any) -> Self: ...
        def __rsub__(self, other: Any) -> Self: ...
        def __mul__(self, other: Any) -> Self: ...
        def __rmul__(self, other: Any) -> Self: ...
        def __truediv__(self, other: Any) -> Self: ...
        def __rtruediv__(self, other: Any) -> Self: ...
        def __floordiv__(self, other: Any) -> Self: ...
        def __rfloordiv__(self, other: Any) -> Self: ...
        def __mod__(self, other: Any) -> Self: ...
        def __rmod__(self, other: Any) -> Self: ...
        def __pow__(self, other: Any) -> Self: ...
        def __rpow__(self, other: Any) -> Self: ...
        def __matmul__(self, other: Any) -> Self: ...
        def __rmatmul__(self, other: Any) -> Self: ...
        def __and__(self, other: Any) -> Self: ...
        def __rand__(self, other: Any) -> Self: ...
        def __or__(self, other: Any) -> Self: ...
        def __ror__(self, other: Any) -> Self: ...
        def __xor__(self, other: Any) -> Self: ...
        def __rxor__(self, other: Any) -> Self: ...
        def __eq__(self, other: Any) -> Self: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Self: ...  # type: ignore[override]
        def __lt__(self, other: Any) -> Self: ...
        def __le__(self, other: Any) -> Self: ...
        def __gt__(self, other: Any) -> Self: ...
        def __ge__(self, other: Any) -> Self: ...
        def __neg__(self) -> Self: ...
        def __abs__(self) -> Self: ...
        def __invert__(self) -> Self: ...
        def __getitem__(self, key: Any) -> Self: ...
        def __iter__(self) -> Iterator[Self]: ...

        def __getattr__(self, name: str) -> Callable[..., Self]:
            """Tensor's methods (``t.sum()``) and the op table's (``t.exp()``, ``t.mul_(2)``)."""


# See the module docstring: the op modules' annotation for "a tensor".
Tensor = TypeVar("Tensor", bound=TensorBase)

# The class make() instantiates: Tensor, once _tensor.py has registered it.
_tensor_class: type[TensorBase] = TensorBase


def register_tensor_class(cls: type[TensorBase]) -> None:
    """Makes :func:`make` (and so every op) return instances of ``cls`` (Tensor)."""
    global _tensor_class
    _tensor_class = cls


def make(data: NDArray, requires_grad: bool = False, grad_fn: Any = None,
         cls: type[TensorBase] | None = None) -> Any:
    """A Tensor (or a ``cls``) wrapping ``data`` without copying or checking, for the
    ops and the engine: one Python call per result.

    Typed ``Any``: it returns the registered Tensor class, which this layer
    cannot name.
    """
    t = object.__new__(_tensor_class if cls is None else cls)
    t._data = data
    t._requires_grad = requires_grad
    t.grad = None
    t.grad_fn = grad_fn
    t._post_hooks = None
    t._vc = None
    t._base = None
    return t


def new(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Any:
    """``Tensor(data, dtype, device, requires_grad)``, converting and checking, for the
    layers below Tensor."""
    return _tensor_class(data, dtype, device, requires_grad)


def share_storage(view: TensorBase, base: TensorBase) -> None:
    """Marks ``view`` as a view of ``base``: one version counter, one base."""
    vc = base._vc
    if vc is None:
        vc = base._vc = Version()
    view._vc = vc
    view._base = base if base._base is None else base._base
    view._history = vc.history
