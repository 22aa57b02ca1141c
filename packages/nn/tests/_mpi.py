"""Running test workers under the wheel-installed ``mpiexec``, each run time-bounded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKERS = Path(__file__).parent / "mpi_workers"


def require_mpi() -> None:
    pytest.importorskip("mpi4py", reason="mpi4py is not installed: pip install "
                        "'lamina-nn[distributed]' (nox -s distributed does)")


def run_mpi(nproc: int, worker: str, *args: str, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs ``mpi_workers/<worker>`` as ``nproc`` ranks; fails the test past ``timeout`` s."""
    require_mpi()
    from lamina.distributed import mpiexec_command

    target = [str(WORKERS / worker)] if worker.endswith(".py") else [worker]
    command = mpiexec_command(nproc, [*target, *args])
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "LAMINA_NUM_THREADS": "1", **(env or {})}
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=full_env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{worker} with {nproc} ranks did not finish within {timeout} s "
                    f"(a hang):\n{e.stdout}\n{e.stderr}")


def check_ok(result: subprocess.CompletedProcess[str]) -> str:
    """The run's stdout after checking it exited 0 (stderr shown otherwise)."""
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        pytest.fail(f"ranks exited with {result.returncode}:\nstdout:\n{result.stdout}\n"
                    f"stderr:\n{result.stderr}")
    return result.stdout
