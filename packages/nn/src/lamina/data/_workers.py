"""Worker processes for DataLoader, watched so that a dead worker is an error.

Each worker has its own task pipe and result pipe; the main process waits on
the result pipes *and* on each worker's process sentinel, which becomes ready
when the process ends. A worker killed mid-epoch (the OOM killer, a crash in
native code) therefore raises at once, naming the worker, its pid and how it
ended, instead of leaving the loader waiting forever for a batch that will
never come (``multiprocessing.Pool`` silently replaces such a worker and
loses its task).
"""

from __future__ import annotations

import pickle
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

Plan = list[tuple[list[int], int]]
Build = Callable[[Any, Callable[[list[Any]], Any], list[int], int], Any]


class WorkerError(RuntimeError):
    """A DataLoader worker died, or a batch took longer than the loader's timeout."""


def _loop(build: Build, dataset: Any, collate_fn: Callable[[list[Any]], Any],
          tasks: Connection, results: Connection) -> None:
    """A worker: build each ``(i, indices, seed)`` task until ``None`` arrives."""
    # Ctrl-C reaches the whole process group; the main process decides what it
    # means (lamina-train checkpoints at the next step) and then shuts us down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            task = tasks.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return  # the main process is gone or interrupted: nothing to report to
        if task is None:
            return
        i, indices, seed = task
        reply: tuple[int, Any, Exception | None]
        try:
            reply = (i, build(dataset, collate_fn, indices, seed), None)
        except Exception as exc:
            reply = (i, None, _portable(exc))
        try:
            results.send(reply)  # pickles first: a failure there writes nothing
        except OSError:
            return  # the main process stopped listening (an epoch left early)
        except Exception as exc:
            results.send((i, None, _portable(exc)))  # a batch that cannot be pickled


def _portable(exc: Exception) -> Exception:
    """``exc`` with the worker's traceback as a note, or a RuntimeError carrying that
    traceback when the exception cannot be pickled back to the main process."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    exc.__cause__ = exc.__context__ = exc.__traceback__ = None
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"DataLoader worker raised:\n{text}")
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(f"raised in a DataLoader worker:\n{text}")
    return exc


def _ended(exitcode: int | None) -> str:
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            return f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


def parallel_batches(ctx: Any, build: Build, dataset: Any,
                     collate_fn: Callable[[list[Any]], Any], plan: Plan, num_workers: int,
                     prefetch_factor: int, timeout: float) -> Iterator[Any]:
    """Build the batches of ``plan`` in ``num_workers`` processes, yielding them in order.

    Task ``i`` goes to worker ``i % num_workers``; at most ``prefetch_factor``
    tasks per worker are in flight.

    Raises:
        WorkerError: a worker ended before the epoch did, or (``timeout > 0``)
            no batch arrived for ``timeout`` seconds.
    """
    workers, task_conns, result_conns = [], [], []
    try:
        for k in range(num_workers):
            task_recv, task_send = ctx.Pipe(duplex=False)
            result_recv, result_send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_loop, name=f"lamina-data-worker-{k}", daemon=True,
                               args=(build, dataset, collate_fn, task_recv, result_send))
            proc.start()
            task_recv.close()
            result_send.close()
            workers.append(proc)
            task_conns.append(task_send)
            result_conns.append(result_recv)
        yield from _drive(workers, task_conns, result_conns, plan, prefetch_factor, timeout)
    finally:
        _shutdown(workers, task_conns, result_conns)


def _drive(workers: list[Any], task_conns: list[Connection], result_conns: list[Connection],
           plan: Plan, prefetch_factor: int, timeout: float) -> Iterator[Any]:
    n = len(workers)
    sent = 0
    done: dict[int, Any] = {}

    def send_next() -> None:
        nonlocal sent
        indices, seed = plan[sent]
        task_conns[sent % n].send((sent, indices, seed))
        sent += 1

    while sent < min(len(plan), n * prefetch_factor):
        send_next()
    sentinels = {proc.sentinel: k for k, proc in enumerate(workers)}
    for want in range(len(plan)):
        waited_since = time.monotonic()
        while want not in done:
            left = None if timeout <= 0 else timeout - (time.monotonic() - waited_since)
            if left is not None and left <= 0:
                k = want % n
                raise WorkerError(f"DataLoader: worker {k} (pid {workers[k].pid}) produced "
                                  f"no batch within timeout={timeout} s (batch {want})")
            ready = wait(list(result_conns) + list(sentinels), left)
            dead = [sentinels[obj] for obj in ready if not isinstance(obj, Connection)]
            for k, conn in enumerate(result_conns):  # results first: none is lost
                if conn in ready:
                    try:
                        i, batch, error = conn.recv()
                    except (EOFError, OSError):
                        dead.append(k)  # its end of the pipe closed: the worker is gone
                        continue
                    if error is not None:
                        raise error
                    done[i] = batch
            if dead:
                k = dead[0]
                workers[k].join(1.0)
                raise WorkerError(
                    f"DataLoader: worker {k} (pid {workers[k].pid}) "
                    f"{_ended(workers[k].exitcode)} while batches were pending (waiting for "
                    f"batch {want} of {len(plan)}); out of memory, or a crash in native "
                    "code? Try fewer workers, or num_workers=0 to see the error in-process")
        if sent < len(plan):
            send_next()
        yield done.pop(want)


def _shutdown(workers: list[Any], task_conns: list[Connection],
              result_conns: list[Connection]) -> None:
    """Ask each worker to stop, then end the ones that do not within a second."""
    for conn in task_conns:
        try:
            conn.send(None)
        except OSError:
            pass  # that worker is already gone
    deadline = time.monotonic() + 1.0
    for proc in workers:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.terminate()
            proc.join(1.0)
    for conn in task_conns + result_conns:
        conn.close()
