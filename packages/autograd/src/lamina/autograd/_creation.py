"""Tensor creation: ``tensor``, ``zeros``, ``ones``, ``full``, ``rand``, ``randn``, ``arange``,
``eye``, ``linspace``, ``logspace``...

Each wraps the matching ``lamina.ndarray`` constructor and adds
``requires_grad``. Shapes may be given as ``f(2, 3)`` or ``f((2, 3))``.
"""

from __future__ import annotations

import math
from typing import Any

import lamina.ndarray as nd
import numpy as np

from ._ops._util import shape_arg
from ._tensor import Tensor


def _leaf(data: nd.NDArray, requires_grad: bool) -> Tensor:
    return Tensor(data, requires_grad=requires_grad)


def tensor(data: Any, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """A new leaf tensor copied from a list, numpy array, number, NDArray or Tensor.

    Float data defaults to float32 (a float64 numpy array stays float64),
    integer data to int64.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.tensor([1.0, 2.0], requires_grad=True)
        tensor([1., 2.], requires_grad=True)
    """
    if isinstance(data, Tensor):
        data = data._data
    return _leaf(nd.array(data, dtype=dtype, device=device), requires_grad)


def from_numpy(array: np.ndarray, device: Any = None) -> Tensor:
    """A leaf tensor over ``array``'s memory where the device allows it.

    On the host devices ``numpy`` and ``cpu`` the tensor shares memory with
    ``array`` (strides included) and keeps it alive, as ``torch.from_numpy``
    does: writes to one show in the other. ``cuda`` keeps its own buffers, so
    there the values are copied, as they are from a read-only array.
    ``device`` defaults to the default device.

    Args:
        array: a numpy array of float32, float64 or int64.
        device: where the tensor lives.

    Example:
        >>> import numpy as np
        >>> import lamina.autograd as ag
        >>> a = np.zeros(3, np.float32)
        >>> t = ag.from_numpy(a, device="numpy")
        >>> a[0] = 5.0
        >>> t.tolist()
        [5.0, 0.0, 0.0]
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    return Tensor(nd.from_dlpack(array, device=device))


def from_dlpack(x: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A leaf tensor from a DLPack producer (a torch tensor, a numpy array, ...).

    Memory is shared on the host devices (``numpy``, ``cpu``) and copied on
    ``cuda``, as in
    :func:`lamina.ndarray.from_dlpack`; ``copy=False`` raises ``BufferError``
    rather than copy.

    Example:
        >>> import torch
        >>> import lamina.autograd as ag
        >>> ag.from_dlpack(torch.arange(3.0), device="numpy").tolist()
        [0.0, 1.0, 2.0]
    """
    if isinstance(x, Tensor):
        x = x._data
    return Tensor(nd.from_dlpack(x, device=device, copy=copy))


def zeros(*shape: Any, dtype: Any = "float32", device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Zeros of ``shape``."""
    return _leaf(nd.zeros(shape_arg(shape), dtype=dtype, device=device), requires_grad)


def ones(*shape: Any, dtype: Any = "float32", device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Ones of ``shape``."""
    return _leaf(nd.ones(shape_arg(shape), dtype=dtype, device=device), requires_grad)


def empty(*shape: Any, dtype: Any = "float32", device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Uninitialised values of ``shape``."""
    return _leaf(nd.empty(shape_arg(shape), dtype=dtype, device=device), requires_grad)


def full(shape: Any, fill_value: float, dtype: Any = "float32", device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """``fill_value`` everywhere in ``shape``."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _leaf(nd.full(shape, fill_value, dtype=dtype, device=device), requires_grad)


def rand(*shape: Any, dtype: Any = "float32", device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples in ``[0, 1)`` from the generator seeded by ``manual_seed``."""
    return _leaf(nd.rand(shape_arg(shape), dtype=dtype, device=device), requires_grad)


def randn(*shape: Any, dtype: Any = "float32", device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples from the generator seeded by ``manual_seed``."""
    return _leaf(nd.randn(shape_arg(shape), dtype=dtype, device=device), requires_grad)


def arange(start: float, end: float | None = None, step: float = 1, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """``start, start + step, ...`` below ``end`` (``arange(n)`` counts from 0).

    Integer arguments give int64, float ones float32.
    """
    return _leaf(nd.arange(start, end, step, dtype=dtype, device=device), requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = "float32", device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """The ``(n, m)`` identity matrix (``m`` defaults to ``n``): ones on the main diagonal.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.eye(2, 3).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    cols = n if m is None else m
    for name, size in (("n", n), ("m", cols)):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"eye: {name} must be a non-negative int, got {size!r}")
    return _leaf(nd.array(np.eye(n, cols, dtype=bool), dtype=dtype, device=device),
                 requires_grad)


def _steps(steps: Any, op: str) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"{op}: steps must be an int, got {type(steps).__name__} {steps!r}")
    if steps < 0:
        raise ValueError(f"{op}: steps must be non-negative, got {steps}")
    return int(steps)


def _spaced(start: float, end: float, steps: int, dtype: Any) -> np.ndarray:
    """``steps`` evenly spaced values, computed as PyTorch does: from ``start`` up to
    the middle and from ``end`` down after it, so both ends are exact (one step:
    ``start``)."""
    step = (end - start) / max(steps - 1, 1)
    i = np.arange(steps, dtype=dtype)
    return np.where(i < max(steps // 2, 1), start + step * i, end - step * (steps - 1 - i))


def _ends(start: float, end: float, kind: nd.DType, work: str) -> tuple[Any, Any]:
    """``start`` and ``end`` in the ``work`` precision; PyTorch truncates them first for an
    integer result."""
    ends = [float(v) if kind.is_floating else math.trunc(v) for v in (start, end)]
    return np.array(ends[0], work), np.array(ends[1], work)


def linspace(start: float, end: float, steps: int, *, dtype: Any = "float32",
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``steps`` values evenly spaced from ``start`` to ``end``, both included.

    Float dtypes are computed in that precision, as in PyTorch; for an int64 result
    the ends are truncated to ints and the float64 values in between too.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.linspace(0, 1, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    n, kind = _steps(steps, "linspace"), nd.as_dtype(dtype, "linspace")
    work = kind.name if kind.is_floating else "float64"
    first, last = _ends(start, end, kind, work)
    values = _spaced(first, last, n, work)
    return _leaf(nd.array(values if kind.is_floating else np.trunc(values), dtype=kind,
                          device=device), requires_grad)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *,
             dtype: Any = "float32", device: Any = None, requires_grad: bool = False
             ) -> Tensor:
    """``base ** v`` for ``steps`` values ``v`` evenly spaced from ``start`` to ``end``
    (computed in float64, as PyTorch does, then converted to ``dtype``; the ends are
    truncated first for an int64 result).

    Example:
        >>> import lamina.autograd as ag
        >>> ag.logspace(0, 2, 3).tolist()
        [1.0, 10.0, 100.0]
    """
    n, kind = _steps(steps, "logspace"), nd.as_dtype(dtype, "logspace")
    values = np.power(float(base), _spaced(*_ends(start, end, kind, "float64"), n, "float64"))
    if not kind.is_floating:
        values = np.trunc(values)
    return _leaf(nd.array(values, dtype=kind, device=device), requires_grad)


def zeros_like(x: Tensor, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Zeros with ``x``'s shape (and dtype and device unless given)."""
    return zeros(x.shape, dtype=dtype or x.dtype, device=device or x.device,
                 requires_grad=requires_grad)


def ones_like(x: Tensor, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Ones with ``x``'s shape (and dtype and device unless given)."""
    return ones(x.shape, dtype=dtype or x.dtype, device=device or x.device,
                requires_grad=requires_grad)


def _check_floating(dtype: Any, op: str) -> None:
    if not nd.as_dtype(dtype, op).is_floating:
        raise nd.DTypeError(f"{op}: expects a floating point dtype, got {dtype}; use "
                            f"randint_like for integers")


def rand_like(x: Tensor, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Uniform samples in ``[0, 1)`` with ``x``'s shape (and dtype and device unless given)."""
    dtype = dtype or x.dtype
    _check_floating(dtype, "rand_like")
    return rand(x.shape, dtype=dtype, device=device or x.device, requires_grad=requires_grad)


def randn_like(x: Tensor, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Standard normal samples with ``x``'s shape (and dtype and device unless given)."""
    dtype = dtype or x.dtype
    _check_floating(dtype, "randn_like")
    return randn(x.shape, dtype=dtype, device=device or x.device, requires_grad=requires_grad)


def _randint_args(args: tuple[Any, ...], low: Any, high: Any, size: Any, op: str
                  ) -> tuple[Any, Any, Any]:
    """``(low, high, size)`` from PyTorch's spellings: ``(high, size)``, ``(low, high,
    size)``, any of them as keywords; ``low`` defaults to 0."""
    given = list(args)
    if size is None and given:
        size = given.pop()
    if high is None and given:
        high = given.pop()
    if low is None and given:
        low = given.pop()
    if given or high is None or size is None:
        raise TypeError(f"{op}: expected (high, size) or (low, high, size), got "
                        f"{len(args)} positional arguments; e.g. {op}(0, 10, (2, 3))")
    return (0 if low is None else low), high, size


def randint(*args: Any, low: Any = None, high: Any = None, size: Any = None,
            dtype: Any = "int64", device: Any = None, requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``, as ``torch.randint``.

    ``randint(high, size)`` or ``randint(low, high, size)``; ``size`` is a
    tuple. int64 unless ``dtype`` says otherwise. Raises ``ValueError`` when
    ``low >= high``.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.randint(3, 5, (2, 2)).dtype
        lamina.int64
    """
    low, high, size = _randint_args(args, low, high, size, "randint")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint: size must be a tuple of ints, got {type(size).__name__} "
                        f"{size!r}; write ({size!r},)")
    return _leaf(nd.randint(low, high, tuple(size), dtype=dtype, device=device),
                 requires_grad)


def randint_like(x: Tensor, *args: Any, low: Any = None, high: Any = None, dtype: Any = None,
                 device: Any = None, requires_grad: bool = False) -> Tensor:
    """``randint`` with ``x``'s shape (and dtype and device unless given):
    ``randint_like(x, high)`` or ``randint_like(x, low, high)``."""
    low, high, _ = _randint_args(args, low, high, x.shape, "randint_like")
    return _leaf(nd.randint(low, high, x.shape, dtype=dtype or x.dtype,
                            device=device or x.device), requires_grad)


def randperm(n: int, *, dtype: Any = "int64", device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0 .. n - 1``, as ``torch.randperm`` (int64 by default).

    Example:
        >>> import lamina.autograd as ag
        >>> sorted(ag.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    return _leaf(nd.randperm(n, dtype=dtype, device=device), requires_grad)


def manual_seed(seed: int) -> None:
    """Seeds the generator behind ``rand``, ``randn``, ``dropout`` and every other sampler
    (``randint``, ``randperm``, ``multinomial``, ``bernoulli``, ``normal``, ``uniform_``...)."""
    nd.manual_seed(seed)
