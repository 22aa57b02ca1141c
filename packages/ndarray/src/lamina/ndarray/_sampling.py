"""Random sampling beyond rand/randn: randint, randperm, uniform, normal, bernoulli,
multinomial.

Every sampler draws on the host from the generator that :func:`manual_seed`
seeds (``generator()``, as ``rand`` and ``randn`` do) and copies the samples
to the device, so one seed gives the same values on every backend. Array
arguments (means, bernoulli's probabilities) are read to the host for the same
reason; multinomial instead sends its random numbers to the device, where the
backend's kernels turn them into the same draws as the numpy backend's.
The values differ from PyTorch's for the same seed (another generator); the
distributions, shapes, dtypes and errors are PyTorch's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._creation import _host_shape, array, generator
from ._dtypes import DType, as_dtype, bool_, float32, float64, int64, result_type
from ._errors import DeviceError, DTypeError, ShapeError
from ._hoststep import host_step
from ._ndarray import NDArray
from ._registry import get_device
from ._select import where
from ._sorting import topk

_INTS = (int, np.integer)


def _check_int(value: Any, name: str, op: str) -> int:
    if not isinstance(value, _INTS) or isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


@host_step
def randint(low: int, high: int, shape: Any, dtype: Any = int64, device: Any = None
            ) -> NDArray:
    """Integers drawn uniformly from ``[low, high)``, int64 unless ``dtype`` says otherwise.

    Raises:
        ValueError: ``low >= high``, or the range does not fit a bool ``dtype``.

    Example:
        >>> from lamina.ndarray import manual_seed
        >>> manual_seed(0)
        >>> randint(0, 10, (4,), device="numpy").dtype
        lamina.int64
    """
    low, high = _check_int(low, "low", "randint"), _check_int(high, "high", "randint")
    if low >= high:
        raise ValueError(f"randint: low must be less than high, got low={low} >= high={high}")
    dt = as_dtype(dtype, "randint")
    if dt is bool_ and (low < 0 or high > 2):
        raise ValueError(f"randint: [{low}, {high}) does not fit bool; use low >= 0, "
                         f"high <= 2")
    dims = _host_shape(shape, "randint")
    return array(generator().integers(low, high, dims, dtype=np.int64), dtype=dt,
                 device=device)


@host_step
def randperm(n: int, dtype: Any = int64, device: Any = None) -> NDArray:
    """A random permutation of ``0, 1, ..., n - 1`` (int64 unless ``dtype`` says otherwise).

    Example:
        >>> sorted(randperm(4, device="numpy").tolist())
        [0, 1, 2, 3]
    """
    n = _check_int(n, "n", "randperm")
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    return array(generator().permutation(n), dtype=dtype, device=device)


def _float_dtype(dtype: Any, op: str) -> DType:
    dt = as_dtype(dtype, op)
    if not dt.is_floating:
        raise DTypeError(f"{op}: expects a floating point dtype, got {dt.name}; "
                         f"sample floats and convert, or use randint")
    return dt


@host_step
def uniform(shape: Any, low: float = 0.0, high: float = 1.0, dtype: Any = float32,
            device: Any = None) -> NDArray:
    """Floats drawn uniformly from ``[low, high)`` (``low == high`` gives ``low``).

    Raises:
        ValueError: ``low > high``, or a bound is not finite.
    """
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(f"uniform: bounds must be finite, got low={low}, high={high}")
    if low > high:
        raise ValueError(f"uniform: expects low <= high, got low={low} > high={high}")
    dt = _float_dtype(dtype, "uniform")
    host = (low + (high - low) * generator().random(_host_shape(shape, "uniform")))
    host = host.astype(dt.name)
    if low < high:  # rounding to float32 may reach high: keep the interval half-open
        top = np.nextafter(np.array(high, dt.name), np.array(low, dt.name))
        host = np.minimum(host, top)
    return array(host, dtype=dt, device=device)


def _host_values(x: Any) -> np.ndarray:
    """An NDArray or a number as float64 host values."""
    if isinstance(x, NDArray):
        return x.numpy().astype(np.float64)
    return np.asarray(float(x), dtype=np.float64)


@host_step
def normal(mean: Any, std: Any, shape: Any = None, dtype: Any = None, device: Any = None
           ) -> NDArray:
    """Normal samples with the given means and standard deviations.

    ``mean`` and ``std`` are numbers or floating point NDArrays, broadcast
    together; with two numbers, ``shape`` gives the shape. The dtype is that
    of the array arguments (``dtype``, float32 by default, for two numbers);
    the device is theirs (``device`` for two numbers).

    Raises:
        ValueError: a standard deviation is negative or NaN.
        DTypeError: an array argument is not floating point.
    """
    arrays = [x for x in (mean, std) if isinstance(x, NDArray)]
    for x in arrays:
        if not x.dtype.is_floating:
            raise DTypeError(f"normal: mean and std must be floating point, got "
                             f"{x.dtype.name}; convert with .astype(float32)")
    if arrays:
        if arrays[-1].device is not arrays[0].device:
            raise DeviceError(f"normal: mean is on {mean.device}, std on {std.device}; "
                              f"move one with .to(device)")
        dt = result_type(*arrays)
        device = arrays[0].device
    else:
        dt = _float_dtype(float32 if dtype is None else dtype, "normal")
    m, s = _host_values(mean), _host_values(std)
    if not (s >= 0).all():
        bad = s[~(s >= 0)].reshape(-1)[0]
        raise ValueError(f"normal: std must be >= 0, found {bad}; pass non-negative "
                         f"standard deviations")
    dims = np.broadcast_shapes(m.shape, s.shape) if shape is None else _host_shape(
        shape, "normal")
    z = generator().standard_normal(dims)
    return array(m + s * z, dtype=dt, device=device)


@host_step
def bernoulli(p: Any, shape: Any = None, dtype: Any = None, device: Any = None) -> NDArray:
    """1 with probability ``p``, else 0, in ``p``'s dtype (or ``dtype``).

    ``p`` is an NDArray of probabilities (the result has its shape and
    device), or a number with ``shape``, ``dtype`` and ``device``. Bool and
    int64 ``dtype`` are allowed (``bernoulli_`` fills integer tensors).

    Raises:
        ValueError: a probability is outside ``[0, 1]`` or NaN.
    """
    if isinstance(p, NDArray):
        if not p.dtype.is_floating:
            raise DTypeError(f"bernoulli: probabilities must be floating point, got "
                             f"{p.dtype.name}; convert with .astype(float32)")
        dims, device = p.shape, p.device
        dt = p.dtype if dtype is None else as_dtype(dtype, "bernoulli")
    else:
        dims = _host_shape(() if shape is None else shape, "bernoulli")
        dt = as_dtype(float32 if dtype is None else dtype, "bernoulli")
    probs = _host_values(p)
    if not ((probs >= 0) & (probs <= 1)).all():
        bad = probs[~((probs >= 0) & (probs <= 1))].reshape(-1)[0]
        raise ValueError(f"bernoulli: p must be in [0, 1], got {bad}")
    draws = generator().random(dims) < probs
    return array(draws, dtype=dt, device=device)


def _check_probs(probs: NDArray, num_samples: Any, replacement: bool) -> int:
    if not isinstance(probs, NDArray):
        raise TypeError(f"multinomial: expected an NDArray, got {type(probs).__name__}")
    if probs.ndim not in (1, 2):
        raise ShapeError(f"multinomial: probabilities must be 1-D or 2-D, got shape "
                         f"{probs.shape}")
    if not probs.dtype.is_floating:
        raise DTypeError(f"multinomial: probabilities must be floating point, got "
                         f"{probs.dtype.name}; convert with .astype(float32)")
    n = _check_int(num_samples, "num_samples", "multinomial")
    if n <= 0:
        raise ValueError(f"multinomial: num_samples must be positive, got {n}")
    categories = probs.shape[-1]
    if not replacement and n > categories:
        raise ValueError(f"multinomial: cannot draw {n} samples from {categories} categories "
                         f"without replacement; pass replacement=True or fewer samples")
    return n


def _check_weights(probs: NDArray) -> None:
    """The errors of invalid weights, checked where they lie (one scalar read each)."""
    weights = probs.reshape(-1, probs.shape[-1])
    if weights.size and not ((weights >= 0) & (weights < np.inf)).min().item():
        raise ValueError("multinomial: the probabilities contain inf, nan or a negative "
                         "value; pass finite non-negative weights")
    empty = weights.astype(float64).sum(axis=1) <= 0
    if empty.size and empty.max().item():
        row = int(np.argmax(empty.numpy()))
        raise ValueError(f"multinomial: row {row} of the probabilities sums to 0; every row "
                         f"needs a positive weight")


def _inverse_cdf(weights: NDArray, uniforms: NDArray) -> NDArray:
    """``multinomial_last`` of (rows, C) weights and (rows, n) float64 uniforms: where
    each uniform falls in its row's running sum. A device without the kernel runs
    the numpy backend's on a host copy, so one seed gives the same draws everywhere."""
    device = weights.device
    kernel = device.kernels.multinomial_last
    if kernel is None or weights.dtype.name not in device.kernel_dtypes["multinomial_last"]:
        host = get_device("numpy")
        return _inverse_cdf(weights.to(host), uniforms.to(host)).to(device)
    out = NDArray._empty(uniforms.shape, int64, device, "multinomial")
    kernel(weights.compact().buffer, uniforms.buffer, out.buffer, weights.shape[1],
           uniforms.shape[1])
    return out


def multinomial(probs: NDArray, num_samples: int, replacement: bool = False) -> NDArray:
    """Category indices drawn from each row of (unnormalised) probabilities.

    Shapes: ``(C,)`` -> ``(num_samples,)``; ``(N, C)`` -> ``(N, num_samples)``,
    int64. Without replacement each row's draws are distinct; once a row's
    nonzero categories are used up, its zero-probability ones follow in index
    order, as PyTorch. The random numbers come from the host generator; the
    search (the backend's ``multinomial_last``, or ``sort_last`` of exponential
    race keys without replacement) runs on the device.

    Raises:
        ValueError: a probability is negative, infinite or NaN; a row sums
            to zero; ``num_samples`` is not positive, or exceeds the
            categories without replacement.
    """
    n = _check_probs(probs, num_samples, replacement)
    _check_weights(probs)
    weights = probs.reshape(-1, probs.shape[-1])
    rows, device = weights.shape[0], probs.device
    if rows == 0:
        return array(np.zeros(probs.shape[:-1] + (n,), np.int64), dtype=int64, device=device)
    rng = generator()
    if replacement:
        uniforms = array(rng.random((rows, n)), dtype=float64, device=device)
        out = _inverse_cdf(weights, uniforms)
    else:
        # Exponential races: the n smallest of E/p are a draw without replacement.
        race = array(rng.exponential(size=weights.shape), dtype=float64, device=device)
        keys = where(weights > 0, race / weights.astype(float64), np.inf)
        out = topk(keys, n, axis=1, largest=False)[1]
    return out.reshape(probs.shape[:-1] + (n,))
