"""Every collective, op, dtype and size (empty and non-compact included) against numpy.

Run as N ranks: each rank's input is a deterministic function of (rank, case),
so every rank can compute the expected result with numpy on its own.
"""

from __future__ import annotations

import itertools

import lamina.autograd as ag
import lamina.distributed as dist
import numpy as np
from lamina.distributed import ReduceOp

dist.init_process_group("mpi", timeout=60)
rank, world = dist.get_rank(), dist.get_world_size()
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (4, 33, 65)]
DTYPES = ["float32", "float64", "int64"]
NP_REDUCE = {ReduceOp.SUM: np.sum, ReduceOp.PRODUCT: np.prod, ReduceOp.MAX: np.max,
             ReduceOp.MIN: np.min, ReduceOp.AVG: np.mean}


def values(r: int, shape: tuple[int, ...], dtype: str, salt: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * salt + r)
    return rng.integers(-3, 4, size=shape).astype(dtype)  # small ints: PRODUCT stays exact


def make(array: np.ndarray, layout: str) -> ag.Tensor:
    """A tensor holding ``array``: compact, or a transposed (non-compact) view."""
    if layout == "compact" or array.ndim < 2:
        return ag.tensor(array, dtype=str(array.dtype))
    return ag.tensor(np.ascontiguousarray(array.T), dtype=str(array.dtype)).T


def close(got: ag.Tensor, want: np.ndarray, what: str) -> None:
    g = got.numpy()
    assert g.shape == want.shape, f"{what}: shape {g.shape} != {want.shape}"
    assert str(g.dtype) == str(want.dtype), f"{what}: dtype {g.dtype} != {want.dtype}"
    np.testing.assert_allclose(g, want, rtol=1e-6, err_msg=what)


checks = 0
for salt, (shape, dtype, layout) in enumerate(itertools.product(
        SHAPES, DTYPES, ["compact", "transposed"])):
    inputs = [values(r, shape, dtype, salt) for r in range(world)]
    for op in ReduceOp:
        if op is ReduceOp.AVG and dtype == "int64":
            continue
        t = make(inputs[rank], layout)
        async_op = salt % 2 == 0
        work = dist.all_reduce(t, op=op, async_op=async_op)
        if async_op:
            assert work is not None and work.wait() and work.is_completed()
        want = NP_REDUCE[op](np.stack(inputs), axis=0).astype(dtype)
        close(t, want, f"all_reduce {op} {shape} {dtype} {layout}")
        checks += 1
    for src in range(world):
        t = make(inputs[rank], layout)
        dist.broadcast(t, src)
        close(t, inputs[src], f"broadcast src={src} {shape} {dtype} {layout}")
        checks += 1
    outs = [make(np.zeros(shape, dtype), layout) for _ in range(world)]
    dist.all_gather(outs, make(inputs[rank], layout))
    for r in range(world):
        close(outs[r], inputs[r], f"all_gather[{r}] {shape} {dtype} {layout}")
    checks += 1
    for op in (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN):
        lists = [[values(r, shape, dtype, salt + 7 * k) for k in range(world)]
                 for r in range(world)]
        out = make(np.zeros(shape, dtype), layout)
        work = dist.reduce_scatter(out, [make(a, layout) for a in lists[rank]], op=op,
                                   async_op=True)
        assert work is not None
        work.wait()
        want = NP_REDUCE[op](np.stack([lists[r][rank] for r in range(world)]), axis=0)
        close(out, want.astype(dtype), f"reduce_scatter {op} {shape} {dtype} {layout}")
        checks += 1

# zero copy: a compact numpy-device tensor is reduced in its own memory
from lamina.distributed._buffers import HostBuffer  # noqa: E402

z = ag.tensor([1.0, 2.0, 3.0], device="numpy")
staged = HostBuffer.of(z._data)
assert not staged.staged and np.shares_memory(staged.array, z._data.buffer.data)
assert HostBuffer.of(z.T._data[::2]).staged  # a strided view is staged
dist.all_reduce(z)
assert z.tolist() == [float(world), 2.0 * world, 3.0 * world]

# NDArrays work like Tensors; barrier completes
arr = ag.tensor([1.0, 2.0])._data
dist.all_reduce(arr, op=ReduceOp.AVG)
assert arr.tolist() == [1.0, 2.0]
dist.barrier()
assert dist.barrier(async_op=True).wait()

# The host buffers handed to MPI live until wait(): mpi4py keeps no reference to
# them, and an MPI that progresses a call inside wait (Open MPI does) read freed,
# reused memory when only the Work's closure held the results (reduce_scatter's
# first elements came out wrong there). Every non-blocking call's arrays are
# recorded by weak reference and must survive a collection before wait.
import gc  # noqa: E402
import weakref  # noqa: E402


class RecordingComm:
    """``comm`` whose non-blocking calls record weak references to their arrays."""

    def __init__(self, comm: object) -> None:
        self.comm, self.refs = comm, []

    def __getattr__(self, name: str) -> object:
        method = getattr(self.comm, name)
        if not name.startswith("I"):
            return method

        def call(*args: object, **kwargs: object) -> object:
            self.refs += [weakref.ref(a) for a in args if isinstance(a, np.ndarray)]
            return method(*args, **kwargs)

        return call


group = dist._group.current("test")
real_comm = group.comm
group.comm = recording = RecordingComm(real_comm)
try:
    for start, check in [
            (lambda t: dist.all_reduce(t[0], async_op=True),
             lambda t: close(t[0], np.full(5, float(world), "float32"), "async all_reduce")),
            (lambda t: dist.broadcast(t[0], 0, async_op=True),
             lambda t: close(t[0], np.ones(5, "float32"), "async broadcast")),
            (lambda t: dist.all_gather(t[1:], t[0], async_op=True),
             lambda t: close(t[1], np.ones(5, "float32"), "async all_gather")),
            (lambda t: dist.reduce_scatter(t[0], t[1:], async_op=True),
             lambda t: close(t[0], np.full(5, float(world), "float32"), "async reduce_scatter"))]:
        tensors = [make(np.ones((5, 1), "float32"), "transposed").reshape(5)
                   for _ in range(world + 1)]
        recording.refs = []
        work = start(tensors)
        gc.collect()
        assert recording.refs and all(r() is not None for r in recording.refs), \
            "an array MPI works on was freed before wait()"
        work.wait()
        check(tensors)
        checks += 1
finally:
    group.comm = real_comm

# bad input: clear errors, raised before any communication
for call, kind, text in [
        (lambda: dist.all_reduce(ag.tensor([1, 2]), op=ReduceOp.AVG), TypeError, "AVG"),
        (lambda: dist.all_reduce([1.0]), TypeError, "Tensor or NDArray"),
        (lambda: dist.all_reduce(ag.tensor([1.0]), op="sum"), TypeError, "ReduceOp"),
        (lambda: dist.broadcast(ag.tensor([1.0]), world), ValueError, "not a rank"),
        (lambda: dist.all_gather([ag.tensor([1.0])] * (world + 1), ag.tensor([1.0])),
         ValueError, "world size"),
        (lambda: dist.all_gather([ag.tensor([1.0, 2.0])] * world, ag.tensor([1.0])),
         ValueError, "shape"),
        (lambda: dist.init_process_group("mpi"), RuntimeError, "twice"),
        (lambda: dist.init_process_group("gloo"), ValueError, "unknown backend")]:
    try:
        call()
    except kind as e:
        assert text in str(e), (text, str(e))
    else:
        raise AssertionError(f"no {kind.__name__} for {text}")

dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {rank}: {checks} checks passed")
