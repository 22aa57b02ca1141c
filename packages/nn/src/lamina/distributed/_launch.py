"""Starting N copies of a Python command under MPI's own launcher, ``mpiexec``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ._group import INSTALL_HINT


def mpiexec_path() -> str:
    """The ``mpiexec`` that belongs to this interpreter's MPI (the wheel's, beside python)."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError(f"mpiexec was not found beside {sys.executable} nor on PATH: "
                                f"{INSTALL_HINT}")
    return found


def mpiexec_command(nproc: int, args: list[str]) -> list[str]:
    """The command that runs ``python args...`` as ``nproc`` ranks on this machine.

    Args:
        nproc: the number of processes (ranks), at least 1.
        args: what follows ``python``, e.g. ``["-m", "lamina.models", ...]``.

    Returns:
        ``[mpiexec, -n, nproc, python, *args]``; for several machines, run
        MPI's launcher yourself with a hostfile (``mpiexec -f hosts -n 8 ...``).
    """
    if not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"mpiexec_command: nproc must be an integer >= 1, got {nproc!r}")
    return [mpiexec_path(), "-n", str(nproc), sys.executable, *args]
