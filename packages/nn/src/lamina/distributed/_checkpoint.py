"""Checkpoints in a data-parallel job: rank 0 writes, the others wait for the file."""

from __future__ import annotations

import os
from typing import Any

from . import _group as G
from ._collectives import barrier


def save_on_rank0(obj: Any, path: str | os.PathLike[str]) -> None:
    """Writes ``obj`` to ``path`` with ``lamina.nn.save`` from rank 0; every rank returns after.

    Every rank must call it (it ends with a barrier), so that no rank reads or
    overwrites the file while rank 0 is writing it. The file holds the plain
    module's tensors (save ``ddp.module.state_dict()``), so any world size,
    one process included, loads it with ``lamina.nn.load``.

    Args:
        obj: what ``lamina.nn.save`` accepts (a state dict, nested dicts of tensors).
        path: where to write.
    """
    from lamina.nn import save

    if G.current("save_on_rank0").rank == 0:
        save(obj, path)
    barrier()
