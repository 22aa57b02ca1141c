"""A ``lamina-train --nproc`` rank whose training returns at once, or (rank 1) exits early.

Usage: early_exit.py MODE, MODE one of finish | exit0. Runs the real
``rank_main`` of ``lamina.models._data_parallel`` with a stand-in for
``lamina-train``'s ``main``: with ``exit0`` rank 1 leaves with ``os._exit(0)`` (no
cleanup, like a library calling ``exit(0)``), which MPICH's ``mpiexec``
takes as success while it ends the other ranks.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

import lamina.distributed as dist
from lamina.models import _data_parallel


def main(argv: Sequence[str]) -> int:
    if argv[0] == "exit0" and dist.get_rank() == 1:
        time.sleep(0.5)  # rank 0 has started
        os._exit(0)
    time.sleep(3.0)  # rank 0 is still training when rank 1 leaves
    print(f"rank {dist.get_rank()} trained")
    return 0


sys.exit(_data_parallel.rank_main(sys.argv[1:], main))
