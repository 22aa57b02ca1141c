"""``autocast``: chosen ops in a narrower float dtype (PyTorch's automatic mixed precision).

Inside ``with autocast("cpu", dtype=bfloat16):`` the ops of :data:`LOWER` (the
matrix products and the convolution's patches, where narrow floats buy speed)
cast their float32 inputs on that device type to ``dtype`` and run in it; the
ops of :data:`FLOAT32` (softmax, log-sum-exp, the norms, sums and products,
exp, log and powers: what losses and statistics are made of, where narrow
floats lose accuracy) cast narrow inputs up to float32. Every other op runs in
the dtype its inputs promote to, so ``bfloat16 + float32`` is float32, as in
PyTorch. The casts are ``to`` ops, recorded like any other, so each leaf's
gradient comes back in the leaf's own dtype: float32 weights keep float32
gradients. float64 tensors are never cast.

The lists follow PyTorch's (``torch/csrc/autograd/autocast_mode.cpp``) for the
ops Lamina has as primitives; a composite (``cross_entropy``,
``conv2d``) follows from its parts. The state is per thread, as PyTorch's;
regions nest, and ``enabled=False`` turns autocast off inside one.

As in PyTorch, a leaf that requires grad (a weight) is cast once per region
and the cast reused at each of its uses (an RNN's weights at every time step):
the cache lives until the outermost region of the thread exits, and an entry
is dropped where an in-place op has changed the weight since (its
``_version``). ``cache_enabled=False`` turns it off.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import lamina.ndarray as nd

from . import _function, _grad_mode

F = TypeVar("F", bound=Callable[..., Any])

LOWER = frozenset({"matmul", "linear", "im2col", "scaled_dot_product_attention"})
"""Ops run in the autocast dtype."""

FLOAT32 = frozenset({"softmax", "log_softmax", "logsumexp", "nll_loss", "layer_norm",
                     "batch_norm", "sum", "cumsum", "prod", "exp", "log", "pow", "pow_scalar"})
"""Ops run in float32 (their narrow inputs cast up)."""

_DEFAULT_DTYPE = {"cuda": "float16"}  # PyTorch's defaults: float16 on cuda, bfloat16 elsewhere


class _State(threading.local):
    def __init__(self) -> None:
        # (device type, dtype) of the innermost region, or None where it is disabled
        self.stack: list[tuple[str, nd.DType] | None] = []
        self.caching: list[bool] = []  # each region's cache_enabled
        # (id(leaf), dtype) -> (leaf, its version then, its cast); kept alive with the
        # leaf, so an id is not reused while its entry lives
        self.cache: dict[tuple[int, nd.DType], tuple[Any, int, Any]] = {}


_state = _State()
_entered = 0  # regions open in any thread; Function.apply calls the hook only while > 0
_lock = threading.Lock()


def _cast_inputs(name: str, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """``inputs`` of op ``name`` cast as this thread's innermost region says."""
    stack = _state.stack
    region = stack[-1] if stack else None
    if region is None:
        return inputs
    lower = name in LOWER
    if not lower and name not in FLOAT32:
        return inputs
    device_type, low = region
    target = low if lower else nd.float32
    from ._ops.shape import to  # the ops import this module's caller, _function

    # under no_grad a cast records no graph: caching it would cut the weight off
    # from later recorded uses
    caching = lower and _state.caching[-1] and _grad_mode.is_grad_enabled()
    out = []
    for t in inputs:
        dtype = t._data._dtype
        if dtype is not target and dtype.is_floating and dtype is not nd.float64 \
                and (lower or dtype.is_narrow) and t._data._device.type == device_type:
            t = _cached_cast(t, target) if caching and t._requires_grad and t.grad_fn is None \
                else to(t, dtype=target)
        out.append(t)
    return tuple(out)


def _cached_cast(leaf: Any, target: nd.DType) -> Any:
    """``leaf`` cast to ``target``, from this thread's cache while its version holds."""
    from ._ops.shape import to

    key = (id(leaf), target)
    entry = _state.cache.get(key)
    version = leaf._version
    if entry is not None and entry[0] is leaf and entry[1] == version:
        return entry[2]
    cast = to(leaf, dtype=target)
    _state.cache[key] = (leaf, version, cast)
    return cast


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread (for ``device_type``, when given)."""
    stack = _state.stack
    region = stack[-1] if stack else None
    return region is not None and (device_type is None or region[0] == device_type)


def get_autocast_dtype(device_type: str) -> nd.DType:
    """The dtype this thread's region casts to on ``device_type`` (PyTorch's default
    there when no region is on: bfloat16, or float16 on cuda)."""
    stack = _state.stack
    region = stack[-1] if stack else None
    if region is not None and region[0] == device_type:
        return region[1]
    return nd.as_dtype(_DEFAULT_DTYPE.get(device_type, "bfloat16"))


def state_key() -> Any:
    """This thread's autocast state, hashable: part of a compiled function's cache key
    (a capture made under autocast replays only under the same one)."""
    stack = _state.stack
    return stack[-1] if stack else None


class autocast:  # noqa: N801  (PyTorch's name)
    """Run the ops of :data:`LOWER` in ``dtype`` and those of :data:`FLOAT32` in float32.

    Args:
        device_type: the device type whose tensors are cast (``"cpu"``,
            ``"cuda"``, ``"numpy"``); tensors elsewhere are left alone.
        dtype: ``bfloat16`` (default; ``float16`` on cuda) or ``float16``.
        enabled: False makes a region that turns autocast off.
        cache_enabled: reuse a weight's cast within the region (default True).

    A context manager and a decorator:

    Example:
        >>> import lamina.autograd as ag
        >>> a, b = ag.ones(2, 3, device="numpy"), ag.ones(3, 4, device="numpy")
        >>> with ag.autocast("numpy"):
        ...     c = a @ b
        ...     s = c.sum()
        >>> c.dtype, s.dtype
        (lamina.bfloat16, lamina.float32)
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise TypeError(f"autocast: device_type must be a string such as 'cpu', got "
                            f"{type(device_type).__name__}")
        self.device_type = device_type
        self.fast_dtype = nd.as_dtype(
            dtype if dtype is not None else _DEFAULT_DTYPE.get(device_type, "bfloat16"),
            "autocast")
        if not self.fast_dtype.is_narrow:
            raise ValueError(f"autocast: dtype must be float16 or bfloat16, got "
                             f"{self.fast_dtype.name}")
        self.enabled = bool(enabled)
        self.cache_enabled = True if cache_enabled is None else bool(cache_enabled)

    def __enter__(self) -> autocast:
        global _entered
        _state.stack.append((self.device_type, self.fast_dtype) if self.enabled else None)
        _state.caching.append(self.cache_enabled)
        with _lock:
            _entered += 1
            _function.autocast_hook = _cast_inputs
        return self

    def __exit__(self, *exc: Any) -> None:
        global _entered
        _state.stack.pop()
        _state.caching.pop()
        if not _state.stack:
            _state.cache.clear()  # the casts hold graph nodes: free them with the region
        with _lock:
            _entered -= 1
            if _entered == 0:
                _function.autocast_hook = None

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device_type, self.fast_dtype, self.enabled, self.cache_enabled):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
