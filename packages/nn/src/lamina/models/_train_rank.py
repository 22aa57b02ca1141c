"""One rank of ``lamina-train --nproc N``: ``python -m lamina.models._train_rank ARGS``.

The module that :func:`lamina.models._data_parallel.launch` starts on every
rank. It sits above both ``lamina-train`` (:mod:`._cli`, which calls
``launch``) and :mod:`._data_parallel`, and hands the first's ``main`` to the
second's :func:`~lamina.models._data_parallel.rank_main`.
"""

from __future__ import annotations

import sys

from ._cli import main
from ._data_parallel import rank_main

__all__ = ["run"]


def run() -> int:
    """Runs this rank of ``lamina-train`` with the arguments of the command line."""
    return rank_main(sys.argv[1:], main)


if __name__ == "__main__":
    sys.exit(run())
