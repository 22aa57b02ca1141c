"""Starting N copies of a Python command under MPI's own launcher, ``mpiexec``.

``run_checked`` also makes sure that every rank finished: when one rank exits
with status 0 before the end (``os._exit(0)``, a library calling ``exit(0)``),
MPICH's ``mpiexec`` silently ends the others and itself exits 0. So each rank
connects to a socket of the launcher (``connect``) and says when it has
finished (``report_finished``); a rank that closed its connection without
saying so fails the launch, named in the message.
"""

from __future__ import annotations

import functools
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

from ._group import INSTALL_HINT

REPORT_VARIABLE = "LAMINA_LAUNCH_REPORT"  # the launcher's socket, for its ranks
CLOSE_GRACE_SECONDS = 2.0  # after mpiexec exits, how long connections may take to close


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
        ``[mpiexec, -n, nproc, python, *args]``, with ``--oversubscribe`` after
        ``nproc`` for Open MPI's launcher, which otherwise refuses more ranks than
        cores (MPICH's allows them); for several machines, run MPI's launcher
        yourself with a hostfile (``mpiexec -f hosts -n 8 ...``).
    """
    if not isinstance(nproc, int) or nproc < 1:
        raise ValueError(f"mpiexec_command: nproc must be an integer >= 1, got {nproc!r}")
    launcher = mpiexec_path()
    extra = ["--oversubscribe"] if _is_open_mpi(launcher) else []
    return [launcher, "-n", str(nproc), *extra, sys.executable, *args]


@functools.cache
def _is_open_mpi(mpiexec: str) -> bool:
    """Whether ``mpiexec`` is Open MPI's: its ``--version`` says ``(Open MPI)`` (5.x) or
    ``(OpenRTE)`` (4.x); MPICH's says ``HYDRA``."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in out or "OpenRTE" in out


def run_checked(nproc: int, args: list[str], what: str) -> int:
    """Runs ``python args...`` as ``nproc`` ranks; the exit code, 1 if a rank did not finish.

    The ranks must call ``connect`` and ``report_finished``. When ``mpiexec``
    exits 0 but some rank never reported that it finished, prints which one
    (``what`` names the command in the message) to stderr and returns 1.
    """
    with tempfile.TemporaryDirectory(prefix="lamina-launch-") as folder:
        path = str(Path(folder) / "ranks")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(path)
            server.listen(nproc)
            env = {**os.environ, REPORT_VARIABLE: path}
            with subprocess.Popen(mpiexec_command(nproc, args), env=env) as process:
                try:
                    reports = _follow(server, process)
                except BaseException:
                    process.kill()  # as subprocess.run does: no rank outlives the launcher
                    raise
    code = process.returncode
    # MPICH's mpiexec exits 0 when a rank leaves early with status 0, or, when it is
    # slower than the other ranks, kills them and exits with SIGKILL's status.
    killed = code in (signal.SIGKILL, 128 + signal.SIGKILL)
    problem = _unfinished(reports, nproc, killed) if code == 0 or killed else None
    if problem is None:
        return code
    sys.stderr.write(f"{what}: {problem}. The run failed: find out why it stopped, and rerun\n")
    return 1


class _Reports:
    """What the ranks said: who started, who finished, and when each connection closed."""

    def __init__(self) -> None:
        self.started: set[int] = set()
        self.finished: set[int] = set()
        self.closed: list[set[int]] = []  # ranks whose connection closed, per poll round

    def line(self, text: str) -> int | None:
        """Records one ``start R`` or ``done R`` line; the rank it is about."""
        event, _, rank = text.partition(" ")
        if not rank.isdigit():
            return None
        (self.started if event == "start" else self.finished).add(int(rank))
        return int(rank)


def _follow(server: socket.socket, process: subprocess.Popen[bytes]) -> _Reports:
    """Collects the ranks' reports until ``process`` has exited and every rank has closed."""
    reports = _Reports()
    selector = selectors.DefaultSelector()
    server.setblocking(False)
    selector.register(server, selectors.EVENT_READ)
    open_: dict[socket.socket, tuple[bytes, int | None]] = {}  # unparsed bytes, its rank
    deadline = None
    while True:
        events = selector.select(timeout=0.2)
        closed: set[int] = set()
        for key, _ in events:
            if key.fileobj is server:
                conn, _ = server.accept()
                selector.register(conn, selectors.EVENT_READ)
                open_[conn] = (b"", None)
            else:
                conn = cast(socket.socket, key.fileobj)
                rank = _read(conn, open_, reports)
                if rank is not False:
                    selector.unregister(conn)
                    conn.close()
                    closed |= {rank} if isinstance(rank, int) else set()
        if closed:
            reports.closed.append(closed)
        if process.poll() is not None:
            # the ranks are gone; a process they forked may still hold a connection open
            deadline = deadline or time.monotonic() + CLOSE_GRACE_SECONDS
            if (not open_ and not events) or time.monotonic() >= deadline:
                break
    selector.close()
    return reports


def _read(conn: socket.socket, open_: dict[socket.socket, tuple[bytes, int | None]],
          reports: _Reports) -> int | None | bool:
    """Reads what ``conn`` sent; False while it stays open, else the rank it was (or None)."""
    data = conn.recv(4096)
    pending, rank = open_[conn]
    *lines, rest = (pending + data).split(b"\n")
    for line in lines:
        said = reports.line(line.decode(errors="replace"))
        rank = said if rank is None else rank
    if data:
        open_[conn] = (rest, rank)
        return False
    del open_[conn]
    return rank


def _unfinished(reports: _Reports, nproc: int, killed: bool = False) -> str | None:
    """Which ranks did not finish, the one that left first named first; None if all did.

    ``killed``: mpiexec exited with SIGKILL's status (it killed the ranks left after the
    first one ended) rather than reporting success.
    """
    missing = [r for r in range(nproc) if r not in reports.finished]
    if not missing:
        return None
    never = [r for r in missing if r not in reports.started]
    first = next((sorted(batch - reports.finished) for batch in reports.closed
                  if batch - reports.finished), [])
    parts = []
    if first:
        who = f"rank {first[0]}" if len(first) == 1 else f"one of ranks {_list(first)}"
        status = "" if killed else " with status 0"
        parts.append(f"{who} exited{status} before it finished (it never reported "
                     "completion)")
    rest = [r for r in missing if r not in first and r not in never]
    if rest:
        parts.append(f"mpiexec then ended rank(s) {_list(rest)}")
    if never:
        parts.append(f"rank(s) {_list(never)} ended before reporting that they started")
    if killed:
        return "; ".join(parts) + ", and mpiexec killed the other ranks (exit status 9)"
    return ("; ".join(parts) + ", and mpiexec reported success (MPICH takes an exit with "
            "status 0 as normal)")


def _list(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))


_connection: socket.socket | None = None  # open for the process's life: its closing is news


def connect(rank: int) -> None:
    """Tells the launcher of ``run_checked`` (if any) that ``rank`` is running."""
    global _connection
    path = os.environ.get(REPORT_VARIABLE)
    if path is None or _connection is not None:
        return
    _connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    _connection.connect(path)
    _connection.sendall(f"start {rank}\n".encode())
    # a forked child (a DataLoader worker) must not keep the rank's connection open
    os.register_at_fork(after_in_child=_forget_in_child)


def _forget_in_child() -> None:
    global _connection
    if _connection is not None:
        _connection.close()
        _connection = None


def report_finished(rank: int) -> None:
    """Tells the launcher of ``run_checked`` that ``rank`` has finished its work."""
    if _connection is not None:
        _connection.sendall(f"done {rank}\n".encode())
