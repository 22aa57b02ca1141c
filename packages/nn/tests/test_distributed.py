"""lamina.distributed, DistributedDataParallel and DistributedSampler.

Multi-process tests run the scripts in mpi_workers/ under the wheel-installed
``mpiexec`` (2 and 3 ranks, and 4 oversubscribed), each bounded in time; they
skip only where mpi4py is not installed (``nox -s distributed`` installs it).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import lamina.distributed as dist
import numpy as np
import pytest
from _mpi import WORKERS, check_ok, require_mpi, run_mpi
from lamina.data import DistributedSampler


@pytest.mark.parametrize("nproc", [2, 3])
def test_collectives_match_numpy(nproc: int) -> None:
    out = check_ok(run_mpi(nproc, "collectives.py"))
    assert out.count("checks passed") == nproc


@pytest.mark.parametrize("nproc", [2, 3])
def test_mismatched_calls_raise_on_every_rank_and_nan_propagates(nproc: int) -> None:
    """Issue 31: shapes, dtypes, ops, src or collectives that differ between ranks raise
    on every rank (the group stays usable); MAX/MIN give every rank PyTorch's NaN result."""
    out = check_ok(run_mpi(nproc, "agreement.py"))
    assert out.count("agreement checks passed") == nproc
    reports = json.loads(out.split("REPORTS ", 1)[1].split("\n", 1)[0])
    assert [r["rank"] for r in reports] == list(range(nproc))
    torch = pytest.importorskip("torch")
    for dtype in ("float32", "float64"):
        stacked = torch.tensor([r["input"] for r in reports], dtype=getattr(torch, dtype))
        for op, reduce in (("max", torch.amax), ("min", torch.amin)):
            want = reduce(stacked, dim=0).numpy()
            for r in reports:
                np.testing.assert_array_equal(np.array(r[f"all_reduce {op} {dtype}"], dtype),
                                              want, err_msg=f"rank {r['rank']} {op} {dtype}")


def test_checks_switch_must_agree_across_ranks() -> None:
    code = ("import os\n"
            "from mpi4py import MPI\n"  # the rank, from any MPI (PMI_RANK is MPICH's)
            "os.environ['LAMINA_DISTRIBUTED_CHECKS'] = str(MPI.COMM_WORLD.Get_rank())\n"
            "import lamina.distributed as d\n"
            "try:\n    d.init_process_group()\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = check_ok(run_mpi(2, "-c", code))
    assert out.count("LAMINA_DISTRIBUTED_CHECKS differs between ranks (rank 0: 0, rank 1: 1)"
                     ) == 2, out


@pytest.mark.parametrize("nproc", [2, 3, 4])
def test_ddp_matches_one_process(nproc: int, tmp_path: Path) -> None:
    # 4 ranks on this 2-core machine are oversubscribed: correctness only
    out = check_ok(run_mpi(nproc, "ddp.py", str(tmp_path)))
    assert out.count("ddp checks passed") == nproc
    assert (tmp_path / "ddp.safetensors").exists()


# The collective timeout is what ends "exit" and "hang"; for "raise" and "kill" it is
# only a fallback, long enough that a busy machine never lets rank 0 time out first.
@pytest.mark.parametrize("mode, timeout, message", [
    ("raise", 20, "rank 1 of 2: uncaught ValueError: simulated failure in rank 1"),
    # mpiexec reports the dead process: MPICH's "BAD TERMINATION", Open MPI's "exited on signal"
    ("kill", 20, "BAD TERMINATION|exited on\\s+signal 9"),
    ("exit", 5, "rank 1 of 2: exit (this rank is exiting while other ranks"),
    ("hang", 5, "rank 0 of 2: all_reduce did not complete within 5 s"),
])
def test_failed_rank_ends_the_job_in_bounded_time(mode: str, timeout: int, message: str) -> None:
    start = time.monotonic()
    result = run_mpi(2, "faults.py", mode, timeout=60, env={"FAULT_TIMEOUT": str(timeout)})
    took = time.monotonic() - start
    assert result.returncode != 0
    assert "finished without noticing" not in result.stdout
    pattern = message if mode == "kill" else re.escape(message)
    assert re.search(pattern, result.stdout + result.stderr), result.stdout + result.stderr
    assert took < 30, f"the job took {took:.0f} s to end"


def test_launch_mismatch_is_a_clear_error() -> None:
    code = ("import lamina.distributed as d\n"
            "try:\n    d.init_process_group(world_size=2)\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = check_ok(run_mpi(1, "-c", code))
    assert "world_size=2 but MPI started 1 process(es)" in out
    assert "mpiexec -n 2" in out


def test_nccl_is_unavailable_with_a_reason() -> None:
    require_mpi()
    reason = dist.nccl_unavailable_reason()
    assert reason  # no GPU on this machine; where there is one this test says why it ran
    code = ("import lamina.distributed as d\n"
            "try:\n    d.init_process_group('nccl')\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = check_ok(run_mpi(1, "-c", code))
    assert "NCCL is unavailable" in out and reason in out


def test_use_before_init_is_a_clear_error() -> None:
    from lamina.nn import Linear
    from lamina.nn.parallel import DistributedDataParallel

    for call in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(RuntimeError, match="init_process_group"):
            call()
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedDataParallel(Linear(2, 2))
    with pytest.raises(RuntimeError, match="pass num_replicas and rank"):
        DistributedSampler(list(range(4)))
    assert not dist.is_initialized()


def test_mpiexec_command() -> None:
    require_mpi()
    cmd = dist.mpiexec_command(3, ["-m", "x"])
    assert Path(cmd[0]).name == "mpiexec" and cmd[1:3] == ["-n", "3"] and cmd[-2:] == ["-m", "x"]
    with pytest.raises(ValueError, match="nproc"):
        dist.mpiexec_command(0, [])


@pytest.mark.parametrize("n", [0, 1, 5, 7, 10, 12])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sampler_matches_pytorch_split(n: int, replicas: int, drop_last: bool) -> None:
    torch_data = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = DistributedSampler(list(range(n)), replicas, rank, shuffle=False,
                                  drop_last=drop_last)
        ref = torch_data.DistributedSampler(list(range(n)), replicas, rank, shuffle=False,
                                            drop_last=drop_last)
        assert list(ours) == list(ref) and len(ours) == len(ref)


def test_sampler_shuffle_partitions_and_set_epoch() -> None:
    shares = [DistributedSampler(list(range(10)), 2, r, seed=3) for r in range(2)]
    first = [list(s) for s in shares]
    assert sorted(first[0] + first[1]) == list(range(10))
    for s in shares:
        s.set_epoch(1)
    second = [list(s) for s in shares]
    assert sorted(second[0] + second[1]) == list(range(10)) and second != first
    assert list(DistributedSampler(list(range(10)), 2, 0, seed=3)) == first[0]  # deterministic


def test_sampler_errors() -> None:
    with pytest.raises(ValueError, match="invalid rank 2"):
        DistributedSampler([1, 2], num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedSampler([1, 2], num_replicas=0, rank=0)


def test_host_view_shares_compact_numpy_memory() -> None:
    import lamina.ndarray as nd
    from lamina.distributed._buffers import host_view

    a = nd.array(np.arange(6.0).reshape(2, 3), dtype="float32", device="numpy")
    view = host_view(a)
    assert view is not None and view.shape == (2, 3)
    view[0, 0] = 42.0
    assert a.numpy()[0, 0] == 42.0
    assert host_view(a.T) is None  # non-compact: staged through a copy instead


def test_docstring_examples() -> None:
    import doctest

    import lamina.data._distributed as module
    assert doctest.testmod(module).failed == 0


def test_lamina_train_nproc_matches_one_process(tmp_path: Path) -> None:
    """--nproc 2 splits each global batch over 2 ranks: the same epoch as one process."""
    import subprocess
    import sys

    require_mpi()

    def train(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lamina.models._cli", "mnist", "--epochs",
                               "1", "--no-progress", *extra],
                              capture_output=True, text=True, timeout=300)

    one, two = train(), train("--nproc", "2", "--log", str(tmp_path / "log.json"))
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    epoch_lines = [line for line in two.stdout.splitlines() if line.startswith("epoch 1:")]
    assert len(epoch_lines) == 1, two.stdout  # rank 0 only prints
    ref = next(line for line in one.stdout.splitlines() if line.startswith("epoch 1:"))
    # losses and accuracies agree up to float rounding (1 test image is 0.001)
    np.testing.assert_allclose(_metrics(epoch_lines[0]), _metrics(ref), atol=3e-3)
    assert (tmp_path / "log.json").exists()


def _metrics(line: str) -> list[float]:
    """The numbers of ``epoch 1: train loss 0.1, train acc 0.9, ... (0.5 s)``, time excluded."""
    body = line.split(":", 1)[1].rsplit(" (", 1)[0]
    return [float(part.split()[-1]) for part in body.split(",")]


@pytest.mark.parametrize("mode", ["finish", "exit0"])
def test_launch_fails_when_a_rank_exits_early_with_status_0(mode: str) -> None:
    """Issue 31: MPICH's mpiexec exits 0 when a rank leaves early with status 0 (it ends
    the others silently); the launcher of lamina-train --nproc must fail and name it.
    (Open MPI's fails by itself, naming the rank.)"""
    import subprocess
    import sys

    require_mpi()
    launch = ("import sys\nfrom lamina.distributed._launch import run_checked\n"
              f"sys.exit(run_checked(2, [{str(WORKERS / 'early_exit.py')!r}, {mode!r}], "
              "'lamina-train --nproc 2'))")
    result = subprocess.run([sys.executable, "-c", launch], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if mode == "finish":
        assert result.returncode == 0 and "rank 0 trained" in result.stdout, result.stderr
        return
    assert result.returncode == 1, result.stdout + result.stderr
    # rank 0's end follows rank 1's at once: a launcher slow to look may see both together.
    # mpiexec either reports success or, when it kills rank 0 first, exits with SIGKILL's 9.
    if re.search(r"process rank 1 with PID \d+ on node \S+ exiting\s+improperly", result.stderr):
        return  # Open MPI's launcher notices it itself, names the rank and fails
    if "mpiexec reported success" in result.stderr:
        status = " with status 0"
    else:
        assert "mpiexec killed the other ranks (exit status 9)" in result.stderr, result.stderr
        status = ""
    named = (f"rank 1 exited{status} before it finished",
             f"one of ranks 0, 1 exited{status} before it finished")
    assert any(f"lamina-train --nproc 2: {n}" in result.stderr for n in named), result.stderr


def test_launch_names_the_early_rank_when_mpiexec_kills_the_rest() -> None:
    """The slower of MPICH's two endings of an early status-0 exit: mpiexec kills the
    other ranks and exits 9; the launcher still names the rank that left first."""
    from lamina.distributed._launch import _Reports, _unfinished

    reports = _Reports()
    reports.started |= {0, 1}
    reports.closed += [{1}, {0}]
    killed = _unfinished(reports, 2, killed=True)
    assert killed == ("rank 1 exited before it finished (it never reported completion); "
                      "mpiexec then ended rank(s) 0, and mpiexec killed the other ranks "
                      "(exit status 9)")
    assert "rank 1 exited with status 0" in str(_unfinished(reports, 2))
    reports.finished |= {0, 1}
    assert _unfinished(reports, 2, killed=True) is None


def test_strip_options() -> None:
    from lamina.models._data_parallel import strip_options

    argv = ["mnist", "--nproc", "2", "--log=x.csv", "--epochs", "1", "--save", "m"]
    assert strip_options(argv, ("--nproc", "--log", "--save")) == ["mnist", "--epochs", "1"]
