"""``ReduceOp``: how the reducing collectives combine the ranks' values.

Its own module, below both the process group and the NCCL wrapper, because
each of them (and the collectives) maps it to its library's own constants.
"""

from __future__ import annotations

import enum

__all__ = ["ReduceOp"]


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter`` combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"
