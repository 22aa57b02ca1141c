"""The process group: MPI's world communicator, this process's rank, and fault handling.

``init_process_group`` takes rank and world size from MPI (``mpiexec -n N``
starts the processes; hostfiles and ``-hosts`` spread them over machines).
mpi4py is imported here, on first use, so ``import lamina.distributed`` works
where it is not installed and the error says how to install it.

Faults: a process that raises an uncaught exception prints it and calls
``MPI_Abort``, which makes the launcher end every rank; a process that dies
is noticed by the launcher (``mpiexec`` ends the others and reports the rank).
With a ``timeout``, a collective that does not complete in time aborts the
job instead of waiting forever on a peer that hangs.

Mismatched calls: before each collective the ranks exchange a small
fingerprint of it (which collective, shape, dtype, op, src) on a communicator
of their own, so that ranks that disagree raise instead of exchanging
garbage. ``LAMINA_DISTRIBUTED_CHECKS=0`` (the same on every rank) turns the
exchange off, for measuring what it costs.
"""

from __future__ import annotations

import atexit
import datetime
import os
import sys
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ._nccl import NcclComm

INSTALL_HINT = "pip install 'lamina-nn[distributed]' (mpi4py and the MPICH wheel)"


@dataclass
class _Group:
    comm: Any  # mpi4py.MPI.Comm
    backend: str
    rank: int
    size: int
    timeout: float | None
    exit_comm: Any  # a duplicate of comm, for the exit agreement only
    check_comm: Any  # a duplicate of comm, for the collectives' fingerprints only
    checks: bool  # whether collectives exchange fingerprints first
    nccl: Any = None


DEFAULT_TIMEOUT = 1800.0  # seconds, PyTorch's default for its CPU backends
YIELD_SECONDS = 0.01  # how long a wait polls MPI, yielding the core between polls, before it sleeps
ABORT_GRACE_SECONDS = 0.5  # between an aborting rank's last words and MPI_Abort

_group: _Group | None = None
_previous_excepthook: Any = None
_exit_registered = False


def mpi() -> Any:
    """The ``mpi4py.MPI`` module, or an ImportError that says how to install it."""
    try:
        import mpi4py
    except ImportError as e:
        raise ImportError(f"lamina.distributed needs mpi4py: {INSTALL_HINT}") from e
    if "mpi4py.MPI" not in sys.modules:
        # collectives are issued from one thread; a weaker level is cheaper in MPICH
        mpi4py.rc.thread_level = "serialized"
    from mpi4py import MPI
    return MPI


def _seconds(timeout: Any) -> float | None:
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"init_process_group: timeout must be a positive number of seconds "
                         f"or a timedelta, got {timeout!r}")
    return float(timeout)


def _check_launch(size: int, rank: int, world_size: int, want_rank: int) -> None:
    """Mismatches between what the caller (or the environment) expects and what MPI says."""
    env = os.environ.get("WORLD_SIZE")
    if env is not None and env.isdigit() and int(env) != size:
        raise RuntimeError(
            f"init_process_group: WORLD_SIZE={env} in the environment but MPI started "
            f"{size} process(es); launch with `mpiexec -n {env} python ...` "
            "(torchrun-style launchers are not used by lamina.distributed)")
    if world_size not in (-1, size):
        raise RuntimeError(
            f"init_process_group: world_size={world_size} but MPI started {size} process(es); "
            f"launch with `mpiexec -n {world_size} python ...`")
    if want_rank not in (-1, rank):
        raise RuntimeError(f"init_process_group: rank={want_rank} was asked for but MPI "
                           f"gave this process rank {rank}; leave rank unset")


def init_process_group(backend: str = "mpi", *, timeout: Any = None, world_size: int = -1,
                       rank: int = -1) -> None:
    """Joins this process to the job that ``mpiexec`` started.

    Args:
        backend: ``"mpi"`` (host memory, any device's tensors staged through
            the host) or ``"nccl"`` (cuda tensors over NCCL; MPI exchanges
            NCCL's unique id).
        timeout: seconds (or a ``timedelta``) after which a collective that
            has not completed aborts the whole job (default 30 minutes). It
            also bounds (at half its value) how long a rank that exits waits
            for the others, so a rank that leaves early (``sys.exit``) ends
            the job and is the one that reports it.
        world_size: the number of processes expected (checked against MPI's).
        rank: the rank expected for this process (checked against MPI's).

    Raises:
        ImportError: mpi4py is not installed.
        RuntimeError: already initialized, a mismatched world size or rank,
            or NCCL is unavailable (with the reason).
    """
    global _group, _previous_excepthook, _exit_registered
    if backend not in ("mpi", "nccl"):
        raise ValueError(f"init_process_group: unknown backend {backend!r}; "
                         "use 'mpi' or 'nccl'")
    if _group is not None:
        raise RuntimeError("init_process_group: trying to initialize the default process "
                           "group twice; call destroy_process_group() first")
    seconds = _seconds(timeout)
    MPI = mpi()
    comm = MPI.COMM_WORLD
    size, me = comm.Get_size(), comm.Get_rank()
    _check_launch(size, me, world_size, rank)
    checks = _agree_on_checks(comm)
    group = _Group(comm, backend, me, size, seconds, comm.Dup(), comm.Dup(), checks)
    if backend == "nccl":
        group.nccl = NcclComm.create(comm)
    _group = group
    if _previous_excepthook is None:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught
    if not _exit_registered:
        atexit.register(_agree_at_exit)
        _exit_registered = True


CHECKS_VARIABLE = "LAMINA_DISTRIBUTED_CHECKS"


def _agree_on_checks(comm: Any) -> bool:
    """Whether collectives check their fingerprints: on unless the variable is "0".

    Every rank must agree: one rank exchanging fingerprints while another does
    not would pair a fingerprint with a payload. Raises on every rank otherwise.
    """
    value = os.environ.get(CHECKS_VARIABLE, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(f"init_process_group: {CHECKS_VARIABLE}={value!r}; use 1 (the "
                         "default: collectives check that the ranks agree) or 0")
    every = comm.allgather(value)
    if len(set(every)) > 1:
        raise RuntimeError(f"init_process_group: {CHECKS_VARIABLE} differs between ranks "
                           f"({', '.join(f'rank {r}: {v}' for r, v in enumerate(every))}); "
                           "set it the same on every rank (mpiexec -genv)")
    return value == "1"


def destroy_process_group() -> None:
    """Leaves the process group (MPI itself is finalized when the process exits)."""
    global _group, _previous_excepthook
    group = current("destroy_process_group")
    if group.nccl is not None:
        group.nccl.destroy()
    group.exit_comm.Free()
    group.check_comm.Free()
    _group = None
    if _previous_excepthook is not None:
        sys.excepthook = _previous_excepthook
        _previous_excepthook = None


def is_available() -> bool:
    """Whether mpi4py can be imported (the MPI backend can be used)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_initialized() -> bool:
    """Whether ``init_process_group`` has been called (and not undone)."""
    return _group is not None


def current(op: str) -> _Group:
    if _group is None:
        raise RuntimeError(f"{op}: the default process group has not been initialized; "
                           "call lamina.distributed.init_process_group() first")
    return _group


def get_rank() -> int:
    """This process's rank, ``0 <= rank < get_world_size()``."""
    return current("get_rank").rank


def get_world_size() -> int:
    """The number of processes in the job."""
    return current("get_world_size").size


def get_backend() -> str:
    """``"mpi"`` or ``"nccl"``."""
    return current("get_backend").backend


def abort(message: str, code: int = 1) -> None:
    """Prints ``message`` naming this rank and ends every rank of the job (``MPI_Abort``)."""
    _report(message)
    _end_job(code)


def _report(message: str) -> None:
    group = _group
    who = f"rank {group.rank} of {group.size}" if group else "a rank"
    sys.stderr.write(f"lamina.distributed: {who}: {message}; aborting all ranks\n")
    sys.stderr.flush()


def _end_job(code: int) -> None:
    # MPI_Abort makes the launcher kill every rank at once, and output it has not
    # yet forwarded from any of them is lost: give it a moment to pass ours on
    time.sleep(ABORT_GRACE_SECONDS)
    mpi().COMM_WORLD.Abort(code)


def _abort_on_uncaught(kind: type[BaseException], exc: BaseException,
                       tb: TracebackType | None) -> None:
    """Says which rank failed and why, prints the traceback, then aborts the job.

    The one-line reason comes first: on a busy machine a peer may time out and
    abort the job while this rank is still printing its traceback.
    """
    _report(f"uncaught {kind.__name__}: {exc}")
    if _previous_excepthook is not None:
        _previous_excepthook(kind, exc, tb)
    _end_job(1)


def _agree_at_exit() -> None:
    """At exit, waits (bounded) until every rank exits, so none is left inside a collective.

    Runs only while the group is initialized. A rank that leaves with
    ``sys.exit`` while its peers wait in a collective would otherwise hang the
    job in ``MPI_Finalize``; on a separate communicator the exiting rank waits
    for the others to reach exit too, and aborts the job when they do not.
    """
    if _group is None:
        return
    # half the timeout: the exiting rank is the one to report, before peers time out
    wait_requests([_group.exit_comm.Ibarrier()],
                  "exit (this rank is exiting while other ranks are still working or "
                  "waiting in a collective)", _group.timeout and _group.timeout / 2)


def wait_requests(requests: list[Any], what: str, timeout: float | None = None) -> None:
    """Completes MPI requests, aborting the job if ``timeout`` (default: the group's) passes."""
    if not requests:
        return
    MPI = mpi()
    if timeout is None and _group is not None:
        timeout = _group.timeout
    if timeout is None:
        MPI.Request.Waitall(requests)
        return
    start = time.monotonic()
    while not MPI.Request.Testall(requests):
        # MPI progresses only inside its calls, so a wait polls. Between polls it
        # yields the core (a peer rank on the same core runs at once), and past
        # YIELD_SECONDS it sleeps, so a long wait burns no CPU. Sleeping from the
        # start made every message round of a collective wait a timer tick:
        # measured on 2 cores, a 1 MiB all-reduce took 1.2-1.7 ms against 0.4-0.5 ms
        # for MPI's own blocking Allreduce; yielding gives 0.44-0.6 ms.
        waited = time.monotonic() - start
        if waited < YIELD_SECONDS:
            os.sched_yield()
        else:
            time.sleep(0.0002)
            if waited > timeout:
                abort(f"{what} did not complete within {timeout:g} s (a peer rank may have "
                      "died, hung, or called a different collective)")
