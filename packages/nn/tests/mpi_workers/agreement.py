"""Ranks that call a collective differently must all raise, never exchange garbage.

Run as N ranks: each case makes rank 0's call differ from the others' (shape,
dtype, op, src, or another collective), catches the error on every rank,
checks its class and message and that the tensor is unchanged, and then
checks that the group still works. Also: MAX and MIN with NaN give every
rank the same result, with NaN propagated. Rank 0 prints every rank's
inputs and MAX/MIN results as one JSON line, for the test to compare with PyTorch.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import lamina.autograd as ag
import lamina.distributed as dist
import numpy as np
from lamina import nn
from lamina.distributed import ReduceOp
from lamina.ndarray import DTypeError, ShapeError
from lamina.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi", timeout=60)
rank, world = dist.get_rank(), dist.get_world_size()
first = rank == 0
others = "rank 1: " if world == 2 else f"ranks {', '.join(map(str, range(1, world)))}: "


def expect(call: Callable[[], object], error: type[Exception], *texts: str,
           unchanged: ag.Tensor | None = None) -> None:
    before = None if unchanged is None else unchanged.numpy().copy()
    try:
        call()
    except error as e:
        for text in texts:
            assert text in str(e), f"rank {rank}: {text!r} not in {e}"
        assert "Nothing was sent" in str(e), str(e)
    else:
        raise AssertionError(f"rank {rank}: no {error.__name__} for {texts}")
    if unchanged is not None and before is not None:
        np.testing.assert_array_equal(unchanged.numpy(), before, err_msg="changed by a mismatch")
    x = ag.full((3,), float(rank + 1))  # the group still works, in step on every rank
    dist.all_reduce(x)
    assert x.tolist() == [world * (world + 1) / 2] * 3, x.tolist()


# the case: 6 elements on rank 0, 4 elsewhere
x = ag.ones(6 if first else 4)
expect(lambda: dist.all_reduce(x), ShapeError, "all_reduce: the ranks disagree on the shape",
       "rank 0: all_reduce(shape (6,), float32, op SUM)",
       others + "all_reduce(shape (4,), float32, op SUM)", unchanged=x)
x = ag.ones(4, dtype="float32" if first else "float64")
expect(lambda: dist.all_reduce(x), DTypeError, "disagree on the dtype",
       "rank 0: all_reduce(shape (4,), float32", others + "all_reduce(shape (4,), float64",
       unchanged=x)
x = ag.ones(4)
expect(lambda: dist.all_reduce(x, op=ReduceOp.SUM if first else ReduceOp.AVG), ValueError,
       "disagree on the op", "op SUM)", "op AVG)", unchanged=x)
x = ag.ones(2, 3) if first else ag.ones(3, 2)  # the same size, another shape
expect(lambda: dist.all_reduce(x, async_op=True), ShapeError, "(2, 3)", "(3, 2)", unchanged=x)
x = ag.ones(*([1] * 7 + [2 if first else 3]))  # differs past the dims sent as they are
expect(lambda: dist.all_reduce(x), ShapeError, "disagree on the shape", unchanged=x)

x = ag.full((3,), float(rank))
expect(lambda: dist.broadcast(x, src=rank), ValueError, "broadcast: the ranks disagree on the src",
       "rank 0: broadcast(shape (3,), float32, src=0)", "src=1", unchanged=x)
x = ag.full((5 if first else 3,), float(rank))
expect(lambda: dist.broadcast(x, src=0), ShapeError, "broadcast", "(5,)", "(3,)", unchanged=x)

n = 2 if first else 3
x = ag.ones(n)
outs = [ag.zeros(n) for _ in range(world)]
expect(lambda: dist.all_gather(outs, x), ShapeError, "all_gather: the ranks disagree on the shape",
       "rank 0: all_gather(shape (2,), float32)", others + "all_gather(shape (3,), float32)",
       unchanged=outs[0])
x = ag.ones(2, dtype="float32" if first else "int64")
outs = [ag.zeros(2, dtype=x.dtype) for _ in range(world)]
expect(lambda: dist.all_gather(outs, x, async_op=True), DTypeError, "int64", unchanged=outs[0])

out = ag.zeros(n)
expect(lambda: dist.reduce_scatter(out, [ag.ones(n)] * world), ShapeError,
       "reduce_scatter: the ranks disagree on the shape", "(2,)", "(3,)", unchanged=out)
out = ag.zeros(2)
expect(lambda: dist.reduce_scatter(out, [ag.ones(2)] * world,
                                   op=ReduceOp.MAX if first else ReduceOp.MIN),
       ValueError, "disagree on the op", "op MAX", "op MIN", unchanged=out)

# different collectives: rank 0 reduces while the others wait at a barrier
x = ag.ones(2)
expect(lambda: dist.all_reduce(x) if first else dist.barrier(), ValueError,
       "all_reduce/barrier: the ranks disagree on the collective",
       "rank 0: all_reduce(shape (2,), float32, op SUM)", others + "barrier()")


def same_on_every_rank(t: ag.Tensor, what: str) -> None:
    every = dist._group.current("test").comm.allgather(t.numpy())
    for r, theirs in enumerate(every):
        np.testing.assert_array_equal(theirs, every[0], err_msg=f"{what}: rank {r} != rank 0")


# MAX/MIN with NaN: NaN where any rank has one; the others as usual, the same everywhere
nan, inf = float("nan"), float("inf")
rows = [[nan, 1.0, 2.0, -inf, 0.5, nan], [1.0, nan, 3.0, inf, -0.5, nan],
        [0.0, 5.0, nan, 1.0, 0.25, nan]]
mine = rows[rank % 3]
report: dict[str, object] = {"rank": rank, "input": mine}
for dtype in ("float32", "float64"):
    for op in (ReduceOp.MAX, ReduceOp.MIN):
        t = ag.tensor(mine, dtype=dtype)
        dist.all_reduce(t, op=op)
        same_on_every_rank(t, f"all_reduce {op} {dtype}")
        stacked = np.array([rows[r % 3] for r in range(world)], dtype=dtype)
        want = (np.maximum if op is ReduceOp.MAX else np.minimum).reduce(stacked, axis=0)
        np.testing.assert_array_equal(t.numpy(), want, err_msg=f"all_reduce {op} {dtype}")
        report[f"all_reduce {op.value} {dtype}"] = t.tolist()
        out = ag.zeros(len(mine), dtype=dtype)
        dist.reduce_scatter(out, [ag.tensor(mine, dtype=dtype)] * world, op=op)
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"reduce_scatter {op} {dtype}")
        same_on_every_rank(out, f"reduce_scatter {op} {dtype}")


# DDP checks once, at construction, what its unchecked per-step collectives rely on
def ddp_mismatch(text: str, **options: float | bool) -> None:
    try:
        DDP(nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 4)), **options)
    except RuntimeError as e:
        assert f"rank 1's {text} differ from rank 0's" in str(e), str(e)
    else:
        raise AssertionError(f"rank {rank}: DDP did not notice different {text}")


ddp_mismatch("buckets (elements, dtype)", bucket_cap_mb=0.0002 if first else 25.0)
ddp_mismatch("find_unused_parameters", find_unused_parameters=first)
ddp_mismatch("forward_sync_buffers", forward_sync_buffers=first)
DDP(nn.Linear(3, 2), bucket_cap_mb=1.0 if first else 2.0)  # other caps, the same buckets: fine

every_report = dist._group.current("test").comm.gather(report)
dist.destroy_process_group()
if first:  # one write: the ranks' output is merged by mpiexec
    sys.stdout.write(f"REPORTS {json.dumps(every_report)}\n")
    sys.stdout.flush()
print(f"rank {rank}: agreement checks passed")
