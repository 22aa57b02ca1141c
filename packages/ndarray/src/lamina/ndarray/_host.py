"""Host data to array metadata: dtype inference, int64 range checks, the device.

Pure numpy and the registry; ``ArrayBase._from_host`` (behind
:func:`lamina.ndarray.array`) calls these before it allocates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_device_dtype
from ._dtypes import DType, as_dtype, bool_, float32, int64
from ._errors import DTypeError
from ._registry import Device, get_device


def device_for(device: Any, dtype: DType, op: str) -> Device:
    dev = get_device(device)
    check_device_dtype(dev, dtype, op)
    return dev


def infer_dtype(raw: np.ndarray, from_numpy: bool) -> DType:
    kind = raw.dtype.kind
    if kind == "f":
        # numpy data keeps its float dtype (float16 too, as torch.tensor does); Python
        # floats are the default float dtype
        return as_dtype(raw.dtype) if from_numpy and raw.dtype.itemsize >= 2 else float32
    if kind in "iu":
        return int64
    if kind == "b":
        return bool_
    raise DTypeError(f"array: cannot make an array from data of dtype {raw.dtype}; "
                     f"Lamina supports bool, int64, float16, bfloat16, float32 and float64")


_INT64 = np.iinfo(np.int64)


def big_ints(raw: np.ndarray) -> np.ndarray:
    """An object array of Python ints (numpy's result for ints beyond 64 bits): raise
    OverflowError naming the first one that int64 cannot hold."""
    flat = raw.reshape(-1)
    if flat.size and all(isinstance(v, int) and not isinstance(v, bool) for v in flat):
        bad = next((v for v in flat if not _INT64.min <= v <= _INT64.max), None)
        if bad is not None:
            raise OverflowError(f"array: {bad} does not fit int64 (range {_INT64.min}.."
                                f"{_INT64.max})")
    return raw


def check_int64_range(raw: np.ndarray) -> None:
    """OverflowError where a conversion to int64 would wrap (uint64 above 2**63 - 1,
    floats that are not finite or out of range) instead of a silent wrong value."""
    if not raw.size or raw.dtype.kind not in "uf":
        return
    if raw.dtype.kind == "u":
        bad = raw[raw > _INT64.max]
    else:
        # 2**63 is exact in every float dtype; the largest float below it fits.
        bad = raw[~(np.isfinite(raw) & (raw >= -(2.0**63)) & (raw < 2.0**63))]
    if bad.size:
        raise OverflowError(f"array: {bad.reshape(-1)[0].item()!r} does not fit int64 (range "
                            f"{_INT64.min}..{_INT64.max})")
