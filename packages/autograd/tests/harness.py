"""Builds matching Lamina and PyTorch inputs from an op record's sample."""

from __future__ import annotations

from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import torch
from op_records import OpRecord, Sample

# Values: shape and dtype must match exactly, values within these tolerances.
TOLERANCE = {
    "float32": {"rtol": 2e-4, "atol": 2e-5},
    "float64": {"rtol": 1e-7, "atol": 1e-9},
}


def _noncontiguous(a: np.ndarray, dtype: str, device: str) -> nd.NDArray:
    """``a`` as a transposed view over a buffer laid out in reverse axis order."""
    axes = tuple(reversed(range(a.ndim)))
    return nd.array(np.ascontiguousarray(a.transpose(axes)), dtype=dtype,
                    device=device).permute(axes)


def build(rec: OpRecord, sample: Sample, device: str, dtype: str, noncontig: bool = False
          ) -> tuple[list[Any], list[Any], list[tuple[Any, Any]]]:
    """Lamina args, torch args, and the (lamina, torch) pairs that require grad."""
    ours: list[Any] = []
    theirs: list[Any] = []
    leaves: list[tuple[Any, Any]] = []
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            grad = rec.differentiable and i not in rec.constant_args
            data = (_noncontiguous(a, dtype, device) if noncontig and a.ndim >= 2
                    else nd.array(a, dtype=dtype, device=device))
            x = ag.Tensor(data, requires_grad=grad)
            t = torch.tensor(a, dtype=torch.float64, requires_grad=grad)
            ours.append(x)
            theirs.append(t)
            if grad:
                leaves.append((x, t))
        elif isinstance(a, np.ndarray):
            # a bool mask stays on the host for a device without bool (the ops take both)
            host_mask = a.dtype == np.bool_ and "bool" not in nd.get_device(device).dtypes
            ours.append(a if host_mask else ag.tensor(a, device=device))
            theirs.append(torch.from_numpy(a))
        else:
            ours.append(a)
            theirs.append(a)
    return ours, theirs, leaves


def as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return x.detach().numpy()
