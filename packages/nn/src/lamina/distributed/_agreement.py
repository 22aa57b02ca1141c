"""Checking that every rank called the same collective alike, before any payload moves.

MPI matches collectives by their order and trusts the count and type each
rank passes: ranks that disagree exchange garbage, or read past a buffer,
and nobody notices. So a checked collective first all-gathers a fixed-size
fingerprint of the call (which collective, op, src, dtype, shape: 12 int64)
on a communicator of its own. Every rank then holds the same table, so when
the fingerprints differ every rank raises the same error, naming what each
rank called, and the payload is never sent. The cost is one small
all-gather per collective; ``DistributedDataParallel`` checks its bucket
layout once at construction instead of paying it at every step.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from lamina.ndarray import DTypeError, ShapeError

from . import _group as G

KINDS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "barrier")
_DIMS = 6  # dims sent as they are; a higher-rank shape's remaining dims go as a checksum


@dataclass(frozen=True)
class Call:
    """One rank's collective call, as the other ranks must see it to agree."""

    kind: str
    shape: tuple[int, ...] = ()
    dtype: str = ""
    op: str = ""  # a ReduceOp's value, for the reducing collectives
    src: int = -1  # for broadcast

    def fingerprint(self) -> np.ndarray:
        dims = list(self.shape[:_DIMS]) + [-1] * (_DIMS - len(self.shape[:_DIMS]))
        return np.array([KINDS.index(self.kind), _code(self.op), self.src, _code(self.dtype),
                         len(self.shape), *dims, _code(repr(self.shape[_DIMS:]))],
                        dtype=np.int64)

    def describe(self) -> str:
        parts = [] if self.kind == "barrier" else [f"shape {self.shape}", self.dtype]
        parts += [f"op {self.op.upper()}"] if self.op else []
        parts += [f"src={self.src}"] if self.src >= 0 else []
        return f"{self.kind}({', '.join(parts)})"


def _code(text: str) -> int:
    return zlib.crc32(text.encode())  # the same in every process, unlike hash()


def verify(group: G._Group, call: Call) -> None:
    """Returns once every rank has made the same ``call``; raises on every rank otherwise.

    Raises:
        ValueError: the ranks called different collectives, ops or srcs.
        ShapeError: they passed different shapes.
        DTypeError: they passed different dtypes.
    """
    if not group.checks or group.size == 1:
        return
    mine = call.fingerprint()
    every = np.empty((group.size, mine.size), dtype=np.int64)
    G.wait_requests([group.check_comm.Iallgather(mine, every)],
                    f"{call.kind} (comparing the ranks' calls before sending)")
    if (every == mine).all():
        return
    # every rank saw the same table, so every rank is here: exchange the readable form
    raise mismatch(group.check_comm.allgather(call))


# what can differ, in the order the error names it, and the error that names it
_FIELDS: list[tuple[str, str, type[Exception]]] = [
    ("kind", "collective", ValueError), ("shape", "shape", ShapeError),
    ("dtype", "dtype", DTypeError), ("op", "op", ValueError), ("src", "src", ValueError)]


def mismatch(calls: list[Call]) -> Exception:
    """The error for ranks whose calls differ (``calls[r]`` is rank r's)."""
    differ = [(name, error) for attr, name, error in _FIELDS
              if len({getattr(c, attr) for c in calls}) > 1]
    field, error = differ[0] if differ else ("shape", ShapeError)  # only a checksum differed
    by_call: dict[str, list[int]] = {}
    for rank, c in enumerate(calls):
        by_call.setdefault(c.describe(), []).append(rank)
    listing = "; ".join(f"{_ranks(ranks)}: {what}" for what, ranks in by_call.items())
    kinds = "/".join(sorted({c.kind for c in calls}, key=KINDS.index))
    return error(f"{kinds}: the ranks disagree on the {field} ({listing}); every rank must "
                 "call the same collectives in the same order with the same shape, dtype, op "
                 "and src. Nothing was sent: the tensors are unchanged")


def _ranks(ranks: list[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
