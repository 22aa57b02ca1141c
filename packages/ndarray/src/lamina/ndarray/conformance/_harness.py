"""Helpers shared by the kit's test modules: buffers, layouts, tolerances.

Kernels are called directly with the interface's argument order (*inputs,
output, layout*); :func:`compare` runs one kernel on the backend under test
and on the numpy reference backend with identical inputs and checks that the
outputs agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

LARGE = 1_000_003  # odd and prime: no kernel gets to rely on a vector width
FLOATS = ("float32", "float64")

# (rtol, atol) per dtype and kind of kernel. "ewise" is one rounding per
# element (plus libm differences for exp/tanh/...); "reduce" and "matmul"
# accumulate, so an implementation may sum in another order than numpy.
TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "float32": {"exact": (0, 0), "ewise": (1e-5, 1e-6), "reduce": (1e-4, 1e-5),
                "matmul": (1e-4, 1e-4), "large": (1e-3, 1e-3)},
    "float64": {"exact": (0, 0), "ewise": (1e-12, 1e-14), "reduce": (1e-10, 1e-12),
                "matmul": (1e-10, 1e-10), "large": (1e-9, 1e-9)},
    "int64": {kind: (0, 0) for kind in ("exact", "ewise", "reduce", "matmul", "large")},
}


class _Out:
    def __repr__(self) -> str:
        return "OUT"


OUT: Any = _Out()
"""Placeholder for the output buffer in :func:`call`'s argument list."""


def put(backend: Any, array: np.ndarray, extra: int = 0) -> Any:
    """A new buffer of ``backend`` holding ``array`` flattened (plus ``extra``
    trailing elements, to check that kernels use only the first ``size``)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if extra:
        flat = np.concatenate([flat, np.zeros(extra, flat.dtype)])
    buf = backend.Array(flat.size, flat.dtype.name)
    backend.from_numpy(flat, buf)
    return buf


def get(backend: Any, buf: Any, size: int | None = None) -> np.ndarray:
    """The first ``size`` (default: all) elements of ``buf`` as a numpy array."""
    n = buf.size if size is None else size
    return backend.to_numpy(buf, (n,), (1,), 0)


def call(backend: Any, kernel: str, args: Sequence[Any], out: np.ndarray | tuple[int, str],
         extra: int = 0) -> np.ndarray:
    """Run ``backend.<kernel>(*args)`` and return the output buffer's contents.

    Numpy arrays in ``args`` become buffers (with ``extra`` padding), ``OUT``
    becomes the output buffer, anything else is passed through. ``out`` is
    either the initial output contents or ``(size, dtype)`` for a fresh one.
    """
    if isinstance(out, np.ndarray):
        out_buf = put(backend, out)
    else:
        out_buf = backend.Array(*out)
    bufs = [out_buf if a is OUT else put(backend, a, extra) if isinstance(a, np.ndarray)
            else a for a in args]
    getattr(backend, kernel)(*bufs)
    return get(backend, out_buf)


def compare(backend: Any, reference: Any, kernel: str, args: Sequence[Any],
            out: np.ndarray | tuple[int, str], kind: str = "ewise",
            extra: int = 0) -> np.ndarray:
    """Run ``kernel`` on both backends and assert the outputs agree; return them."""
    want = call(reference, kernel, args, out)
    got = call(backend, kernel, args, out, extra)
    assert_close(got, want, kind, kernel)
    return got


def assert_close(got: np.ndarray, want: np.ndarray, kind: str = "ewise",
                 what: str = "") -> None:
    """Shape and dtype exactly, values within ``TOLERANCES[dtype][kind]``."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    rtol, atol = TOLERANCES.get(want.dtype.name, TOLERANCES["int64"])[kind]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=what)


def sample(dtype: str, shape: int | tuple[int, ...], seed: int = 0, low: float = -3.0,
           high: float = 3.0) -> np.ndarray:
    """Reproducible values of ``dtype``: uniform floats, or integers in [low, high)."""
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return rng.integers(int(low), int(high), size=shape, dtype=np.int64)
    return rng.uniform(low, high, size=shape).astype(dtype)


# Views of a base buffer, each made by numpy so that the expected values are
# numpy's own. Every layout feature of the interface appears at least once.
READ_LAYOUTS: dict[str, tuple[int, Callable[[np.ndarray], np.ndarray]]] = {
    "compact": (60, lambda b: b.reshape(3, 4, 5)),
    "transposed": (60, lambda b: b.reshape(3, 4, 5).transpose(2, 0, 1)),
    "offset": (60, lambda b: b.reshape(6, 10)[2:5, 3:9]),
    "stepped": (60, lambda b: b.reshape(6, 10)[::2, 1::3]),
    "broadcast": (10, lambda b: np.broadcast_to(b[3:8], (4, 3, 5))),
    "broadcast-inner": (10, lambda b: np.broadcast_to(b[2:6, None], (4, 7))),
    "negative": (60, lambda b: b.reshape(6, 10)[::-1, ::-2]),
    "negative-1d": (9, lambda b: b[::-1]),
    "scalar": (9, lambda b: b[4:5].reshape(())),
    "zero-size": (60, lambda b: b.reshape(6, 10)[2:2]),
    "zero-size-empty-buffer": (0, lambda b: b.reshape(0, 3)),
    "large-negative": (2 * LARGE + 1, lambda b: b[2 * LARGE:0:-2]),
    "large-transposed": (1009 * 997, lambda b: b.reshape(1009, 997).T),
}

# Layouts a setitem may write through: no stride 0 on a dimension of size > 1.
WRITE_LAYOUTS = {name: spec for name, spec in READ_LAYOUTS.items()
                 if not name.startswith("broadcast")}


def layout_of(base: np.ndarray, view: np.ndarray) -> tuple[tuple[int, ...],
                                                           tuple[int, ...], int]:
    """``(shape, strides, offset)`` of ``view`` over ``base``, in elements."""
    item = base.itemsize
    strides = tuple(s // item for s in view.strides)
    if view.size == 0:
        return view.shape, strides, 0
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0])
    return view.shape, strides, offset // item
