"""``Tensor``: an NDArray plus what autograd needs to differentiate through it.

A Tensor holds its values in ``_data`` (a ``lamina.ndarray.NDArray``), a
``requires_grad`` flag, the accumulated ``grad`` and, when an op made it while
recording, ``grad_fn``: the node of that op. Methods mirror PyTorch's names
and delegate to the op functions in ``lamina.autograd._ops``.

As in PyTorch, ``tensor.data`` is a Tensor sharing that storage, outside autograd
(no grad, no version counter); assigning to it replaces the storage without
recording. Internals read the ``_data`` slot directly (no wrapper). In-place ops
(``add_``, ``x -= y``, ...) write into the storage instead and keep PyTorch's
safety net: see ``_inplace``.
"""

from __future__ import annotations

import builtins
import copy
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import lamina.ndarray as nd
import numpy as np
from lamina.ndarray import NDArray

from . import _engine, _inplace, _inplace_random
from . import _ops as F
from ._ops import products as _products
from ._ops import rearrange as _rearrange
from ._ops import shape as _ops_shape
from ._tensor_base import TensorBase, Version, make, register_tensor_class

_HOST_DEVICES = ("numpy", "cpu")


class Tensor(TensorBase):
    """An n-dimensional array that can record the ops applied to it.

    Args:
        data: a list, numpy array, Python number, NDArray or Tensor.
        dtype: ``"float32"`` (the default for float data), ``"float64"`` or
            ``"int64"`` (the default for integer data).
        device: a device name such as ``"numpy"`` or ``"cpu"``; the default
            device when ``None``.
        requires_grad: record ops on this tensor so ``backward`` can fill
            its ``.grad``. Only floating point tensors can require grad.

    Example:
        >>> import lamina.autograd as ag
        >>> x = ag.Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> x.shape, x.dtype
        ((2, 2), lamina.float32)
    """

    __slots__ = ()

    def _refresh_view(self) -> None:
        """A view made before a recorded write through another view takes its base's
        new history as ``grad_fn`` (see ``_inplace.refresh_view``)."""
        _inplace.refresh_view(self)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Sets ``requires_grad`` in place and returns ``self``."""
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """The same data (no copy) as a new leaf that does not require grad.

        It shares the version counter: an in-place op on either one is seen
        by the saved-tensor checks of both.
        """
        out = make(self._data)
        if self._vc is None:
            self._vc = Version()
        out._vc = self._vc
        return out

    @property
    def data(self) -> Tensor:
        """The values as a Tensor that autograd does not see (PyTorch's ``.data``).

        It shares this tensor's storage (writes through it change this tensor)
        but not its version counter, requires no grad and has no ``grad_fn``:
        an in-place change through it is invisible to the saved-tensor checks,
        as in PyTorch. Prefer ``detach()`` (tracked) or ``no_grad()`` blocks.

        Assigning a Tensor (or an NDArray) replaces the values, shape and dtype
        included, keeping this tensor's identity, ``requires_grad`` and ``grad``.

        Example:
            >>> import lamina.autograd as ag
            >>> w = ag.tensor([1.0, 2.0], requires_grad=True)
            >>> _ = w.data.fill_(0.5)
            >>> w.tolist(), w.data.requires_grad
            ([0.5, 0.5], False)
        """
        return make(self._data)

    @data.setter
    def data(self, value: Tensor | NDArray) -> None:
        if isinstance(value, Tensor):
            value = value._data
        elif not isinstance(value, NDArray):
            raise TypeError(f"Tensor.data: can only assign a Tensor, got "
                            f"{type(value).__name__}; wrap it with lamina.autograd.tensor(...)")
        self._data = value

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False) -> None:
        """Accumulates d(self)/d(leaf) into every leaf's ``.grad``.

        Args:
            gradient: d(loss)/d(self), shaped like ``self``; may be omitted
                when ``self`` has one element.
            retain_graph: keep saved tensors for another backward (defaults
                to ``create_graph``).
            create_graph: record the backward pass (for higher-order grads).
        """
        _engine.backward(self, gradient, retain_graph, create_graph)

    def retain_grad(self) -> None:
        """Keeps ``.grad`` for this non-leaf tensor after ``backward``."""
        _engine.retain_grad(self)

    def register_post_accumulate_grad_hook(
            self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Calls ``hook(self)`` each time a backward pass has finished adding to ``.grad``.

        The hook runs inside ``backward``, as soon as no remaining part of the
        graph can add to this leaf's gradient (not at the end of the pass), so
        work on ``self.grad`` (communication, an optimizer step) overlaps with
        the rest of backward. Hooks run in registration order; their return
        value is ignored. ``autograd.grad`` does not run them (it writes no
        ``.grad``).

        Args:
            hook: ``hook(tensor) -> None``; reads (or replaces) ``tensor.grad``.

        Returns:
            A handle whose ``remove()`` unregisters the hook.

        Example:
            >>> import lamina.autograd as ag
            >>> w = ag.tensor([1.0, 2.0], requires_grad=True)
            >>> seen = []
            >>> record = lambda t: seen.append(t.grad.tolist())
            >>> handle = w.register_post_accumulate_grad_hook(record)
            >>> (w * w).sum().backward()
            >>> seen
            [[2.0, 4.0]]
            >>> handle.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook on "
                               "a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("register_post_accumulate_grad_hook: post accumulate grad hooks "
                               "cannot be registered on non-leaf tensors")
        if not callable(hook):
            raise TypeError(f"register_post_accumulate_grad_hook: hook must be callable, "
                            f"got {type(hook).__name__}")
        if self._post_hooks is None:
            self._post_hooks = {}
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = hook
        return handle

    @property
    def retains_grad(self) -> bool:
        return self.grad_fn is not None and self.grad_fn._retained is not None

    # ----- metadata and conversion -------------------------------------------------

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of one axis (PyTorch's ``Tensor.size``)."""
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return self._data.size

    def dim(self) -> int:
        return self._data.ndim

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def numpy(self) -> np.ndarray:
        """A numpy copy of the values (refuses tensors that require grad, like PyTorch)."""
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        return self._data.numpy()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data.__array__(dtype, copy)

    def item(self) -> builtins.float | int:
        """The value of a one-element tensor as a Python number."""
        return self._data.item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def __float__(self) -> builtins.float:
        return builtins.float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            many = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {many} is ambiguous")
        return bool(self.item())

    __hash__ = object.__hash__  # identity, as PyTorch: tensors can be dict keys

    def to(self, *args: Any, device: Any = None, dtype: Any = None,
           non_blocking: builtins.bool = False, copy: builtins.bool = False) -> Tensor:
        """Moves to a device and/or converts the dtype (differentiable for floats).

        ``t.to("cpu")``, ``t.to("float64")``, ``t.to("cpu", "float64")``,
        ``t.to(other)`` (other's device and dtype), ``t.to(device="cpu",
        dtype="float32")``. Returns ``self`` when nothing changes, unless
        ``copy``; ``non_blocking`` is accepted for PyTorch's signature.
        """
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, nd.DType) or a in _DTYPE_NAMES:
                dtype = a
            else:
                device = a
        return _ops_shape.to(self, device=device, dtype=dtype, copy=copy)

    def float(self) -> Tensor:
        return self.to(dtype="float32")

    def double(self) -> Tensor:
        return self.to(dtype="float64")

    def half(self) -> Tensor:
        return self.to(dtype="float16")

    def bfloat16(self) -> Tensor:
        return self.to(dtype="bfloat16")

    def long(self) -> Tensor:
        return self.to(dtype="int64")
    def clone(self) -> Tensor:
        """A differentiable copy."""
        return _ops_shape.to(self, copy=True)

    def contiguous(self) -> Tensor:
        return self if self._data.is_compact() else self.clone()

    # ----- copy and pickle: PyTorch's rules -------------------------------------------

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        # Values (through the host, see NDArray.__reduce__), dtype, device and
        # requires_grad; not the graph or .grad: any tensor unpickles as a leaf.
        return _rebuild, (type(self), self._data, self.requires_grad,
                          getattr(self, "__dict__", None))

    def __copy__(self) -> Tensor:
        """A leaf sharing this tensor's storage and version counter (requires_grad kept)."""
        out = _rebuild(type(self), self._data, self.requires_grad, getattr(self, "__dict__", None))
        if self._vc is None:
            self._vc = Version()
        out._vc = self._vc
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        return self._deepcopy(memo, keep_grad=True)

    def _deepcopy(self, memo: dict[int, Any], keep_grad: builtins.bool) -> Tensor:
        """A leaf with a copy of the values (on the same device), requires_grad and,
        with ``keep_grad``, a copy of ``.grad``; the graph, hooks and version stay behind."""
        requires_grad = self.requires_grad  # a view refreshes a grad_fn it was given
        if self.grad_fn is not None:
            raise RuntimeError(
                "deepcopy: Only Tensors created explicitly by the user (graph leaves) support "
                f"the deepcopy protocol; this one (shape {self.shape}) was made by "
                f"{self.grad_fn.name()}: deepcopy .detach() for its values, or use .clone() "
                "to copy it inside the graph")
        out = _rebuild(type(self), self._data.copy(), requires_grad, None)
        memo[id(self)] = out
        if keep_grad and self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        state = getattr(self, "__dict__", None)
        if state:
            out.__dict__.update(copy.deepcopy(state, memo))
        return out

    def __repr__(self) -> str:
        values = self._data.numpy()
        # PyTorch's style: "1." when every float is whole, else four fixed decimals.
        finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
        whole = values.dtype.kind != "f" or bool(np.all(finite == np.round(finite)))
        body = np.array2string(values, separator=", ", prefix="tensor(", precision=4,
                               floatmode="maxprec_equal" if whole else "fixed", threshold=1000)
        extra = []
        if self.device != nd.default_device():
            extra.append(f"device='{self.device}'")
        if self.dtype not in ("float32", "int64"):
            extra.append(f"dtype=lamina.{self.dtype.name}")
        if self.grad_fn is not None:
            extra.append(f"grad_fn={self.grad_fn!r}")
        elif self._requires_grad:
            extra.append("requires_grad=True")
        return "tensor(" + ", ".join([body, *extra]) + ")"

    # ----- interop and PyTorch spellings ---------------------------------------------

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule of the values, for ``torch.from_dlpack``/``np.from_dlpack``.

        Shares memory on the host devices ``numpy`` and ``cpu`` (see
        ``NDArray.__dlpack__`` for the others). Like ``.detach()``, the consumer sees the values
        only: nothing it does is recorded. ``torch.tensor(t)`` and
        ``torch.as_tensor(t)`` go through this too.
        """
        return self._data.__dlpack__(stream=stream, max_version=max_version,
                                    dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._data.__dlpack_device__()

    def cpu(self) -> Tensor:
        """This tensor in host memory: itself on ``numpy``/``cpu``, else moved to ``cpu``.

        Lamina has two host devices; ``cpu()`` keeps a tensor that is already
        on either, and otherwise moves it to ``cpu`` (``numpy`` when the cpu
        backend is not installed). Differentiable, like ``to``.
        """
        if self.device.type in _HOST_DEVICES:
            return self
        try:
            host = nd.get_device("cpu")
        except nd.DeviceError:
            host = nd.get_device("numpy")
        return self.to(host)

    def t(self) -> Tensor:
        """The matrix transpose of a 2-D tensor; 0-D and 1-D tensors are returned as is."""
        if self.ndim > 2:
            raise nd.ShapeError(f"t: expects a tensor with <= 2 dimensions, got shape "
                                f"{self.shape}; use transpose(dim0, dim1) or .mT")
        return F.transpose(self, 0, 1) if self.ndim == 2 else self

    # ----- operators ---------------------------------------------------------------

    # The elementwise operators (__add__, __rmod__, __ixor__, ...) and methods (exp,
    # maximum, mul_, logical_xor, ...) are set from the op table by
    # lamina.autograd._ops.table.install; TensorBase declares them for type checkers.

    def __matmul__(self, other: Tensor) -> Tensor:
        return F.matmul(self, other)

    def __rmatmul__(self, other: Tensor) -> Tensor:
        return F.matmul(other, self)

    def __getitem__(self, key: Any) -> Tensor:
        return F.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _inplace.setitem(self, key, value)

    # ----- methods: one line each, the ops live in _ops -------------------------------

    def matmul(self, other: Tensor) -> Tensor:
        return F.matmul(self, other)

    def sigmoid(self) -> Tensor:
        return F.sigmoid(self)

    def relu(self) -> Tensor:
        return F.relu(self)

    def clamp(self, min: builtins.float | None = None,  # noqa: A002
              max: builtins.float | None = None) -> Tensor:  # noqa: A002
        return F.clamp(self, min, max)

    # Reductions take PyTorch's dim/keepdim or numpy's axis/keepdims (torch takes both).
    def sum(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        return F.sum(self, dim, keepdim, **numpy_names)

    def mean(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        return F.mean(self, dim, keepdim, **numpy_names)

    def prod(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        return F.prod(self, dim, keepdim, **numpy_names)

    def cumsum(self, dim: Any = None, **numpy_names: Any) -> Tensor:
        return F.cumsum(self, dim, **numpy_names)

    def max(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Any:
        """As ``torch.max``: ``max()`` the maximum of all elements, ``max(dim)`` a
        ``(values, indices)`` pair, ``max(other)`` the elementwise maximum
        (see :func:`lamina.autograd.max`)."""
        return F.max(self, dim, keepdim, **numpy_names)

    def min(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Any:
        """As ``torch.min``: ``min()``, ``min(dim)`` -> ``(values, indices)``, ``min(other)``
        (see :func:`lamina.autograd.min`)."""
        return F.min(self, dim, keepdim, **numpy_names)

    def amax(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        return F.amax(self, dim, keepdim, **numpy_names)

    def amin(self, dim: Any = None, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        return F.amin(self, dim, keepdim, **numpy_names)

    def var(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: int | None = None, **numpy_names: Any) -> Tensor:
        return F.var(self, dim, unbiased, keepdim, correction=correction, **numpy_names)

    def std(self, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False, *,
            correction: int | None = None, **numpy_names: Any) -> Tensor:
        return F.std(self, dim, unbiased, keepdim, correction=correction, **numpy_names)

    def logsumexp(self, dim: Any = -1, keepdim: bool = False, **numpy_names: Any) -> Tensor:
        return F.logsumexp(self, dim, keepdim, **numpy_names)

    def softmax(self, dim: int = -1) -> Tensor:
        return F.softmax(self, dim)

    def log_softmax(self, dim: int = -1) -> Tensor:
        return F.log_softmax(self, dim)

    def argmax(self, dim: int | None = None, keepdim: bool = False,
               **numpy_names: Any) -> Tensor:
        return F.argmax(self, dim, keepdim, **numpy_names)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
        """``(values, indices)`` sorted along ``dim`` (see :func:`lamina.autograd.sort`)."""
        return F.sort(self, dim, descending, stable=stable)

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False
                ) -> Tensor:
        return F.argsort(self, dim, descending, stable=stable)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
        """``(values, indices)`` of the ``k`` largest along ``dim`` (see ``ag.topk``)."""
        return F.topk(self, k, dim, largest, sorted)

    def reshape(self, *shape: Any) -> Tensor:
        return F.reshape(self, *shape)

    def view(self, *shape: Any) -> Tensor:
        return F.view(self, *shape)

    def permute(self, *dims: Any) -> Tensor:
        return F.permute(self, *dims)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        return F.transpose(self, dim0, dim1)

    @property
    def T(self) -> Tensor:  # noqa: N802
        """All axes reversed (the matrix transpose for 2-D)."""
        return F.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        """The last two axes swapped (batched matrix transpose)."""
        return F.transpose(self, -2, -1)

    def broadcast_to(self, *shape: Any) -> Tensor:
        return F.broadcast_to(self, *shape)

    def expand(self, *sizes: Any) -> Tensor:
        return F.expand(self, *sizes)

    def squeeze(self, dim: Any = None) -> Tensor:
        return F.squeeze(self, dim)

    def unsqueeze(self, dim: int) -> Tensor:
        return F.unsqueeze(self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        return F.flatten(self, start_dim, end_dim)

    def flip(self, *dims: Any) -> Tensor:
        return F.flip(self, dims[0] if len(dims) == 1 else dims)  # flip(0, 1) or flip((0, 1))

    def split(self, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
        return F.split(self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        return F.chunk(self, chunks, dim)

    def take(self, indices: Any, dim: int = 0) -> Tensor:
        return F.take(self, indices, dim)

    def masked_fill(self, mask: Any, value: Any) -> Tensor:
        return F.masked_fill(self, mask, value)

    def gather(self, dim: int, index: Any) -> Tensor:
        return F.gather(self, dim, index)

    def scatter(self, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Tensor:
        return F.scatter(self, dim, index, src, value=value)

    def scatter_add(self, dim: int, index: Any, src: Tensor) -> Tensor:
        return F.scatter_add(self, dim, index, src)

    def index_put(self, indices: Any, values: Any, accumulate: builtins.bool = False) -> Tensor:
        return F.index_put(self, indices, values, accumulate)

    def nonzero(self) -> Tensor:
        return F.nonzero(self)

    # ----- PyTorch's Tensor one-liners (the ops live in _ops.rearrange) ------------------

    def view_as(self, other: Tensor) -> Tensor:
        """``self.view(other.shape)``."""
        return F.view(self, other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        """``self.reshape(other.shape)``."""
        return F.reshape(self, other.shape)

    def expand_as(self, other: Tensor) -> Tensor:
        """``self.expand(other.shape)``."""
        return F.expand(self, other.shape)

    def _new(self, size: tuple[Any, ...], fill: Any, dtype: Any, device: Any,
             requires_grad: builtins.bool) -> Tensor:
        """A new leaf of ``size`` filled with ``fill`` (uninitialised for ``None``), with
        this tensor's dtype and device unless given."""
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        dtype = self.dtype if dtype is None else dtype
        device = self.device if device is None else device
        data = (nd.empty(shape, dtype=dtype, device=device) if fill is None
                else nd.full(shape, fill, dtype=dtype, device=device))
        return Tensor(data, requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: builtins.bool = False) -> Tensor:
        """Zeros of ``size`` (``new_zeros(2, 3)`` or ``new_zeros((2, 3))``), with this
        tensor's dtype and device unless given."""
        return self._new(size, 0, dtype, device, requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False) -> Tensor:
        """Ones of ``size``, with this tensor's dtype and device unless given."""
        return self._new(size, 1, dtype, device, requires_grad)

    def new_empty(self, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: builtins.bool = False) -> Tensor:
        """An uninitialised tensor of ``size``, with this tensor's dtype and device."""
        return self._new(size, None, dtype, device, requires_grad)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: builtins.bool = False) -> Tensor:
        """``fill_value`` in every element of ``size``, with this tensor's dtype and device."""
        return self._new((size,), fill_value, dtype, device, requires_grad)

    def new_tensor(self, data: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: builtins.bool = False) -> Tensor:
        """A leaf copy of ``data`` (a list, number, numpy array or Tensor), with this
        tensor's dtype and device unless given (PyTorch's rule, even for int data)."""
        values = data._data.numpy() if isinstance(data, Tensor) else data
        return Tensor(nd.array(values, dtype=self.dtype if dtype is None else dtype,
                               device=self.device if device is None else device),
                      requires_grad=requires_grad)

    def type(self, dtype: Any = None, non_blocking: builtins.bool = False) -> Any:
        """Without ``dtype``, the type name PyTorch would print, with ``lamina`` for
        ``torch``: ``"lamina.FloatTensor"`` (float32), ``DoubleTensor``,
        ``LongTensor``, ``BoolTensor``; ``"lamina.cuda.FloatTensor"`` on cuda.
        With a dtype (or such a name), this tensor converted to it (``self`` when
        it already has it)."""
        if dtype is None:
            where = ".cuda" if self.device.type == "cuda" else ""
            return f"lamina{where}.{_TYPE_NAMES[self.dtype.name]}"
        if not (isinstance(dtype, str) and dtype.startswith("lamina.")):
            return self.to(dtype=dtype)
        by_name = {n: d for d, n in _TYPE_NAMES.items()}
        parts = dtype.split(".")
        if parts[-1] not in by_name or parts[1:-1] not in ([], ["cuda"]):
            raise ValueError(f"type: invalid type {dtype!r}; expected a dtype or one of "
                             f"{sorted('lamina.' + n for n in by_name)} (or lamina.cuda.*)")
        out = self.to(dtype=by_name[parts[-1]])
        if parts[1:-1] == ["cuda"]:
            return out.to("cuda")
        return out.cpu()

    def element_size(self) -> int:
        """Bytes per element: 2 for float16 and bfloat16, 4 for float32, 8 for float64 and
        int64, 1 for bool."""
        return int(self.dtype.itemsize)

    def narrow(self, dim: int, start: Any, length: int) -> Tensor:
        return _rearrange.narrow(self, dim, start, length)

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        return _rearrange.roll(self, shifts, dims)

    def repeat(self, *sizes: Any) -> Tensor:
        return _rearrange.repeat(self, *sizes)

    def tile(self, *dims: Any) -> Tensor:
        return _rearrange.tile(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int)
                               else dims)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        return _rearrange.index_select(self, dim, index)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        return _rearrange.unbind(self, dim)

    def all(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _rearrange.all(self, dim, keepdim)

    def any(self, dim: Any = None, keepdim: builtins.bool = False) -> Tensor:
        return _rearrange.any(self, dim, keepdim)

    def tril(self, diagonal: int = 0) -> Tensor:
        return _rearrange.tril(self, diagonal)

    def triu(self, diagonal: int = 0) -> Tensor:
        return _rearrange.triu(self, diagonal)

    def tril_(self, diagonal: int = 0) -> Tensor:
        """:meth:`tril` in place."""
        _inplace._check_leaf(self, "tril_")
        return _inplace._write(self, _rearrange.tril(self, diagonal), "tril_")

    def triu_(self, diagonal: int = 0) -> Tensor:
        """:meth:`triu` in place."""
        _inplace._check_leaf(self, "triu_")
        return _inplace._write(self, _rearrange.triu(self, diagonal), "triu_")

    def diag(self, diagonal: int = 0) -> Tensor:
        return _rearrange.diag(self, diagonal)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        return _rearrange.diagonal(self, offset, dim1, dim2)

    def trace(self) -> Tensor:
        return _rearrange.trace(self)

    # ----- products and norms (the ops live in _ops.products) ---------------------------

    def mm(self, mat2: Tensor) -> Tensor:
        return _products.mm(self, mat2)

    def mv(self, vec: Tensor) -> Tensor:
        return _products.mv(self, vec)

    def dot(self, other: Tensor) -> Tensor:
        return _products.dot(self, other)

    def outer(self, vec2: Tensor) -> Tensor:
        return _products.outer(self, vec2)

    def bmm(self, mat2: Tensor) -> Tensor:
        return _products.bmm(self, mat2)

    def addmm(self, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        return _products.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1
                ) -> Tensor:
        return _products.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def norm(self, p: Any = "fro", dim: Any = None, keepdim: builtins.bool = False,
             dtype: Any = None) -> Tensor:
        return _products.norm(self, p, dim, keepdim, dtype)

    def where(self, condition: Any, other: Any) -> Tensor:
        """``where(condition, self, other)``: this tensor where ``condition``, else ``other``."""
        return F.where(condition, self, other)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        """:meth:`masked_fill` in place."""
        _inplace._check_leaf(self, "masked_fill_")
        return _inplace._write(self, F.masked_fill(self, mask, value), "masked_fill_")

    def __index__(self) -> int:
        """A one-element integer (or bool) tensor as a Python index: ``items[t]``."""
        if self._data.size != 1 or self.dtype.is_floating:
            raise TypeError(f"only integer tensors of a single element can be converted to "
                            f"an index, got {self.dtype.name} of shape {self.shape}")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"`` formats the value of a one-element tensor (PyTorch: 0-d only),
        ``f"{t}"`` of a larger one is ``str(t)``; a 0-d tensor formats as its value."""
        if self.ndim == 0 or (spec and self._data.size == 1):
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string passed to Tensor.__format__: "
                            f"{spec!r} needs one element, got shape {self.shape}; format "
                            f"t.item() or t.tolist() instead")
        return str(self)

    # ----- in-place ops: they write into this tensor's storage (see _inplace) ----------

    # The op table's in-place forms (mul_, x += y, ...) are set by _ops.table.install;
    # add_ and sub_ are written here for PyTorch's alpha (self += alpha * other).
    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _inplace.add_(self, other, alpha)

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _inplace.sub_(self, other, alpha)

    def clamp_(self, min: builtins.float | None = None,  # noqa: A002
               max: builtins.float | None = None) -> Tensor:  # noqa: A002
        return _inplace.clamp_(self, min, max)

    def relu_(self) -> Tensor:
        """:meth:`relu` in place."""
        return _inplace._unary(self, "relu_", F.relu)

    def sigmoid_(self) -> Tensor:
        """:meth:`sigmoid` in place."""
        return _inplace.apply_(self, "sigmoid_", F.sigmoid)

    def fill_(self, value: Any) -> Tensor:
        return _inplace.fill_(self, value)

    def zero_(self) -> Tensor:
        return _inplace.fill_(self, 0)

    def uniform_(self, from_: builtins.float = 0.0, to: builtins.float = 1.0) -> Tensor:
        """Fills with samples drawn uniformly from ``[from_, to)`` (PyTorch's ``from``)."""
        return _inplace_random.uniform_(self, from_, to)

    def normal_(self, mean: builtins.float = 0.0, std: builtins.float = 1.0) -> Tensor:
        """Fills with normal samples of mean ``mean`` and standard deviation ``std``."""
        return _inplace_random.normal_(self, mean, std)

    def bernoulli_(self, p: Any = 0.5) -> Tensor:
        """Fills with 1 with probability ``p`` (a number or a tensor), else 0."""
        return _inplace_random.bernoulli_(self, p)

    def random_(self, from_: int | None = None, to: int | None = None) -> Tensor:
        """Fills with integers from ``[from_, to)``; ``random_(to)`` from ``[0, to)``."""
        return _inplace_random.random_(self, from_, to)

    def copy_(self, src: Any) -> Tensor:
        return _inplace.copy_(self, src)

    def index_put_(self, indices: Any, values: Any, accumulate: builtins.bool = False
                   ) -> Tensor:
        return _inplace.index_put_(self, indices, values, accumulate)

    def scatter_(self, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Tensor:
        return _inplace.scatter_(self, dim, index, src, value=value)

    def scatter_add_(self, dim: int, index: Any, src: Tensor) -> Tensor:
        return _inplace.scatter_add_(self, dim, index, src)

    # Last in the class body: the name would shadow the builtin in annotations above.
    def bool(self) -> Tensor:
        """This tensor as bool (not differentiable)."""
        return self.to(dtype="bool")


def _rebuild(cls: type[Tensor], data: NDArray, requires_grad: bool,
             state: dict[str, Any] | None) -> Tensor:
    """A leaf of class ``cls`` over ``data`` (unpickling, copy; ``state``: a subclass's
    attributes)."""
    t = cls._make(data, requires_grad)
    if state:
        t.__dict__.update(state)
    return t


class RemovableHandle:
    """Returned by hook registrations; ``remove()`` unregisters the hook (idempotent)."""

    _ids = itertools.count()

    def __init__(self, hooks: dict[int, Any]) -> None:
        self.id = next(RemovableHandle._ids)
        self._hooks = hooks

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


# Tensor.type()'s names, as PyTorch's "torch.FloatTensor"
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
               "bool": "BoolTensor", "float16": "HalfTensor", "bfloat16": "BFloat16Tensor"}
# the dtype names Tensor.to takes as a dtype (any other string is a device)
_DTYPE_NAMES = frozenset({"float16", "bfloat16", "float32", "float64", "int64", "bool", "half",
                          "float", "double", "long"})

register_tensor_class(Tensor)  # every op's result is a Tensor (see _tensor_base.make)
