"""``lamina-train --nproc N``: a recipe trained data-parallel by N MPI processes.

``launch`` starts ``mpiexec -n N python -m lamina.models._train_rank ARGS``.
Each rank then (:func:`rank_main`) joins the process group and runs the same
recipe through ``lamina-train``'s own ``main``, with the shared training loop made
data-parallel: the model is wrapped in ``DistributedDataParallel`` and every
training batch of the recipe's loader (global batch B, the recipe's own
learning rate and schedule) is split so that rank r takes samples r, r + N,
... of it; the epoch's train loss and accuracy are averaged over ranks.
Every rank evaluates the whole test set with identical weights. Only rank 0
prints, shows the progress bar and writes ``--log``, ``--plot`` and ``--save``.
Each rank tells the launcher when it has finished: a rank that exits early
with status 0 (which ``mpiexec`` reports as success) fails the launch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import lamina.autograd as ag

from . import _trainer

# lamina.distributed and lamina.nn.parallel are imported where they are used (lazily, for
# cost): a lamina-train run without --nproc never loads them.

# the module each rank runs; it passes lamina-train's main to rank_main
RANK_MODULE = "lamina.models._train_rank"
_OUTPUT_OPTIONS = ("--log", "--plot", "--save")


def launch(argv: Sequence[str], nproc: int) -> int:
    """Runs ``lamina-train argv`` (without ``--nproc``) as ``nproc`` MPI ranks; the exit code.

    Fails (status 1, naming the rank) when a rank exited without finishing.
    """
    from lamina.distributed._launch import run_checked

    return run_checked(nproc, ["-m", RANK_MODULE,
                               *strip_options(argv, ("--nproc",))],
                       f"lamina-train --nproc {nproc}")


def strip_options(argv: Sequence[str], names: Sequence[str]) -> list[str]:
    """``argv`` without the options ``names`` (``--name VALUE`` or ``--name=VALUE``)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in names:
            skip = True
        elif not arg.startswith(tuple(f"{n}=" for n in names)):
            out.append(arg)
    return out


class _Shard:
    """This rank's share (samples r, r + N, ...) of each batch of ``loader``."""

    def __init__(self, loader: Any, rank: int, world: int) -> None:
        self.loader, self.rank, self.world = loader, rank, world

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for x, y in self.loader:
            if len(y) < self.world:  # too small to give every rank a sample: skipped by all
                continue
            yield x[self.rank::self.world].contiguous(), y[self.rank::self.world].contiguous()


def _data_parallel_train_epoch(original: Callable[..., dict[str, float]]
                               ) -> Callable[..., dict[str, float]]:
    import lamina.distributed as dist
    from lamina.nn.parallel import DistributedDataParallel

    wrapped: dict[int, DistributedDataParallel] = {}

    def train_epoch(model: Any, loader: Iterable[Any], *args: Any, **kwargs: Any
                    ) -> dict[str, float]:
        if id(model) not in wrapped:
            wrapped[id(model)] = DistributedDataParallel(model)
        shard = _Shard(loader, dist.get_rank(), dist.get_world_size())
        metrics = original(wrapped[id(model)], shard, *args, **kwargs)
        both = ag.tensor([metrics["loss"], metrics["acc"]], dtype="float64", device="numpy")
        dist.all_reduce(both, op=dist.ReduceOp.AVG)
        return {**metrics, "loss": both[0].item(), "acc": both[1].item()}

    return train_epoch


def rank_main(argv: Sequence[str], main: Callable[[Sequence[str]], int]) -> int:
    """What each rank runs: join the group, make training data-parallel, run the recipe.

    Args:
        argv: ``lamina-train``'s arguments, without ``--nproc``.
        main: ``lamina-train``'s entry point (passed in: it is the caller of
            :func:`launch`, so this module cannot import it).

    Returns:
        ``main``'s exit status on this rank.
    """
    import lamina.distributed as dist
    from lamina.distributed import _launch

    dist.init_process_group("mpi")
    _launch.connect(dist.get_rank())
    argv = list(argv)
    if dist.get_rank() != 0:
        argv = strip_options(argv, _OUTPUT_OPTIONS)
        # only rank 0 shows progress and writes checkpoints (the ranks share the folder)
        argv[1:1] = ["--no-progress", "--checkpoint-every", "0"]
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    _trainer.train_epoch = _data_parallel_train_epoch(_trainer.train_epoch)
    code = main(argv)
    dist.barrier()  # rank 0 has written its files before any rank leaves
    _launch.report_finished(dist.get_rank())
    dist.destroy_process_group()
    return code

