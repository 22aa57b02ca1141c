"""Results are bit-identical for 1 and N threads (LAMINA_NUM_THREADS, set in
a fresh interpreter because the count is read at import), and the thread
controls and allocator stats behave."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import cpu

SCRIPT = r"""
import sys, numpy as np, lamina_backend_cpu as m
b = m.backend
rng = np.random.default_rng(0)
def buf(x):
    a = b.Array(x.size, x.dtype.name); b.from_numpy(x.reshape(-1), a); return a
def run(kernel, ins, out_size, *layout, out_dtype="float32"):
    out = b.Array(out_size, out_dtype); b.fill(out, 0); getattr(b, kernel)(*ins, out, *layout)
    return b.to_numpy(out, (out_size,), (1,), 0)
x = buf(rng.standard_normal(1_000_003).astype(np.float32))
y = buf(rng.standard_normal(1_000_003).astype(np.float32))
A = buf(rng.standard_normal(517 * 300).astype(np.float32))
B = buf(rng.standard_normal(300 * 411).astype(np.float32))
D = buf(rng.standard_normal(200 * 200).astype(np.float64))
idx = buf(rng.integers(0, 1000, 5000).astype(np.int64))
xc = buf(rng.standard_normal(32 * 3 * 32 * 32).astype(np.float32))
gc = buf(rng.standard_normal(32 * 16 * 32 * 32).astype(np.float32))
wc = buf(rng.standard_normal(16 * 27).astype(np.float32))
def bn_backward_rows(n, c, s):  # s < 32: channel ranges over every row (split for free cores)
    g, xb = (buf(rng.standard_normal(n * c * s).astype(np.float32)) for _ in range(2))
    mean, weight = (buf(rng.standard_normal(c).astype(np.float32)) for _ in range(2))
    rstd = buf((np.abs(rng.standard_normal(c)) + 0.5).astype(np.float32))
    sizes = (n * c * s, c, c)
    outs = [b.Array(k, "float32") for k in sizes]
    b.batch_norm_backward(g, xb, mean, rstd, weight, *outs, n, c, s, True)
    return np.concatenate([b.to_numpy(o, (k,), (1,), 0) for o, k in zip(outs, sizes)])
res = {
  "add": run("ewise_add", (x, y), 1_000_003),
  "exp": run("ewise_exp", (x,), 1_000_003),
  "tanh": run("ewise_tanh", (x,), 1_000_003),
  "sum_one_row": run("reduce_sum", (x,), 1, 1_000_003),
  "sum_rows": run("reduce_sum", (x,), 1000, 1000),
  "max_rows": run("reduce_max", (x,), 1000, 1000),
  "sum_axis": run("reduce_sum_axis", (x,), 2000, 1, 500, 2000),
  "softmax": run("softmax_last", (x,), 1_000_000, 1000),
  "lse": run("logsumexp_last", (x,), 1000, 1000),
  "layer_norm": run("layer_norm_last", (x, A, A), 1_000_000, *(b.Array(1000, "float32")
                                                               for _ in range(2)), 1000, 1e-5),
  "erf": run("ewise_erf", (x,), 1_000_003),
  "compact_t": run("compact", (x,), 1_000_000, (1000, 1000), (1, 1000), 0),
  "matmul": run("matmul", (A, B), 517 * 411, 517, 300, 411),
  "matmul64": run("matmul", (D, D), 200 * 200, 200, 200, 200, out_dtype="float64"),
  "batched": run("matmul_batched", (A, B), 10 * 17 * 20, 10, 17, 30, 20),
  "scatter": run("index_scatter_add", (x, idx), 1000 * 100, 1, 1000, 100),
  "im2col": run("im2col", (x,), 8 * 30 * 30 * 4 * 9, 8, 4, 30, 30, 3, 3, 1, 1, 0, 0, 1, 1),
  "col2im": run("col2im", (x,), 8 * 4 * 32 * 32, 8, 4, 32, 32, 3, 3, 1, 1, 0, 0, 1, 1),
  # 3 input channels: a channel split by thread count gave GEMMs of other heights
  "conv_dw": run("conv2d_backward_weight", (xc, gc), 16 * 27, 32, 3, 32, 32, 16, 3, 3,
                 1, 1, 1, 1, 1, 1),
  "conv_dx": run("conv2d_backward_input", (gc, wc), 32 * 3 * 32 * 32, 32, 3, 32, 32, 16, 3, 3,
                 1, 1, 1, 1, 1, 1),
  "bn_backward_rows": bn_backward_rows(64, 32, 16),
  # one image: per-image loop on 1 thread, per-(image, channel) planes on 4
  "col2im_one": run("col2im", (x,), 16 * 20 * 20, 1, 16, 20, 20, 3, 3, 2, 2, 1, 1, 1, 1),
}
np.savez(sys.argv[1], nthreads=m.num_threads(), **res)
"""


def _run(threads: int, path: str) -> dict[str, np.ndarray]:
    env = dict(os.environ, LAMINA_NUM_THREADS=str(threads))
    subprocess.run([sys.executable, "-c", SCRIPT, path], check=True, env=env)
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def test_one_vs_many_threads_bit_identical(tmp_path) -> None:  # noqa: ANN001
    one = _run(1, str(tmp_path / "one.npz"))
    many = _run(4, str(tmp_path / "many.npz"))
    assert int(one.pop("nthreads")) == 1 and int(many.pop("nthreads")) == 4
    for key in one:
        np.testing.assert_array_equal(one[key], many[key], err_msg=key)


def test_set_num_threads() -> None:
    old = cpu.num_threads()
    try:
        cpu.set_num_threads(1)
        assert cpu.num_threads() == 1
    finally:
        cpu.set_num_threads(old)
    try:
        cpu.set_num_threads(0)
    except ValueError as e:
        assert str(e).startswith("set_num_threads")
    else:
        raise AssertionError("set_num_threads(0) must raise")


def test_allocator_caches_and_empties() -> None:
    if cpu.memory_stats()["cache_limit_bytes"] < 8 << 20:
        pytest.skip("the block cache is off (LAMINA_CACHE_BYTES)")
    cpu.empty_cache()
    a = cpu.Array(1 << 20, "float32")
    before = cpu.memory_stats()
    assert before["in_use_bytes"] >= 4 << 20
    del a
    cached = cpu.memory_stats()["cached_bytes"]
    assert cached >= 4 << 20
    b = cpu.Array(1 << 20, "float32")
    assert cpu.memory_stats()["cache_hits"] > before["cache_hits"]
    del b
    cpu.empty_cache()
    assert cpu.memory_stats()["cached_bytes"] == 0


def test_entry_point_and_registry() -> None:
    from importlib.metadata import entry_points

    eps = {ep.name: ep for ep in entry_points(group="lamina.backends")}
    assert eps["cpu"].value == "lamina_backend_cpu:backend"
    assert eps["cpu"].load() is cpu


FORK_SCRIPT = r"""
import os, sys, lamina_backend_cpu as m
b = m.backend
x = b.Array(1 << 20, "float32"); b.fill(x, 0.5); o = b.Array(1 << 20, "float32")
b.ewise_exp(x, o)                      # the parent starts its workers
pid = os.fork()
if pid == 0:
    b.ewise_exp(x, o); b.matmul(x, x, o, 512, 512, 512)
    os._exit(0 if m.num_threads() == 1 else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_forked_child_runs_kernels() -> None:
    # The workers are not forked with the process; the child runs serially.
    env = dict(os.environ, LAMINA_NUM_THREADS="2")
    subprocess.run([sys.executable, "-c", FORK_SCRIPT], check=True, env=env, timeout=60)


@pytest.mark.parametrize("isa", ["generic", "avx2"])
def test_lower_isa_paths_match_numpy(isa: str) -> None:
    # This process runs the CPU's best path; LAMINA_CPU_ISA runs the kernel
    # tests again on each lower one (test_isa.py covers every path in-process).
    order = ("generic", "avx2", "avx512")
    if order.index(isa) >= order.index(cpu.cpu_isa()):
        pytest.skip(f"{isa} is this CPU's best path ({cpu.cpu_isa()}) or beyond it")
    env = dict(os.environ, LAMINA_CPU_ISA=isa)
    check = f"import lamina_backend_cpu as m; assert m.isa() == {isa!r}, m.isa()"
    subprocess.run([sys.executable, "-c", check], check=True, env=env)
    tests = [os.path.join(os.path.dirname(__file__), name)
             for name in ("test_kernels.py", "test_dtypes.py")]
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests,
                    "-k", "matmul or binary or unary or exp or softmax or comparisons"],
                   check=True, env=env)


IDLE_SCRIPT = r"""
import resource, time, lamina_backend_cpu as m
b = m.backend
x = b.Array(1 << 22, "float32"); b.fill(x, 1.0); o = b.Array(1 << 22, "float32")
b.ewise_exp(x, o)                      # wakes the workers
before = resource.getrusage(resource.RUSAGE_SELF)
time.sleep(0.5)
after = resource.getrusage(resource.RUSAGE_SELF)
print((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
"""


def test_idle_workers_do_not_spin() -> None:
    # An idle worker spins LAMINA_SPIN_US (default 50 us), polls LAMINA_YIELD_US
    # (default 1 ms), then sleeps.
    env = {k: v for k, v in os.environ.items() if k not in ("LAMINA_SPIN_US", "LAMINA_YIELD_US")}
    env["LAMINA_NUM_THREADS"] = "2"
    out = subprocess.run([sys.executable, "-c", IDLE_SCRIPT], check=True, env=env,
                         capture_output=True, text=True).stdout
    assert float(out) < 0.1, f"workers burned {out.strip()} s of CPU while idle for 0.5 s"


def test_build_info() -> None:
    info = cpu.build_info()
    assert set(info) == {"openmp", "openmp_library", "avx2_kernels", "avx512_kernels", "isa",
                         "cpu_isa", "native", "sanitize", "gemm_kernel", "bf16_gemm"}
    assert ("gomp" in info["openmp_library"] or "omp" in info["openmp_library"]) == info["openmp"]
    assert info["gemm_kernel"] == cpu.gemm_kernel_name()
    assert info["bf16_gemm"] == cpu.bf16_gemm()


CONCURRENT_SCRIPT = r"""
import sys, threading, numpy as np, lamina_backend_cpu as m
b = m.backend
rng = np.random.default_rng(0)
a = rng.standard_normal((300, 400)).astype(np.float32)
c = rng.standard_normal((400, 500)).astype(np.float32)
def buf(x):
    out = b.Array(x.size, "float32"); b.from_numpy(x.reshape(-1), out); return out
A, C = buf(a), buf(c)
want = None
errors = []
def work():
    global want
    for _ in range(30):  # kernels release the GIL: jobs from two threads meet
        out = b.Array(300 * 500, "float32")
        b.matmul(A, C, out, 300, 400, 500)
        got = b.to_numpy(out, (300, 500), (500, 1), 0)
        s = b.Array(1, "float32"); b.reduce_sum(out, s, 300 * 500)
        if want is None:
            want = got.copy()
        elif not np.array_equal(got, want):
            errors.append("matmul differs")
threads = [threading.Thread(target=work) for _ in range(3)]
[t.start() for t in threads]; [t.join() for t in threads]
np.testing.assert_allclose(want, a @ c, rtol=1e-4, atol=1e-3)
sys.exit(1 if errors else 0)
"""


def test_kernels_from_several_python_threads_at_once() -> None:
    # One job runs on the workers at a time; a kernel called meanwhile from another
    # thread runs its parts there, with the same results.
    env = dict(os.environ, LAMINA_NUM_THREADS="2")
    subprocess.run([sys.executable, "-c", CONCURRENT_SCRIPT], check=True, env=env, timeout=120)


CROWDED_SCRIPT = r"""
import os, subprocess, sys, threading, time
os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])  # so 1 hog, on any machine
import lamina_backend_cpu as m
b = m.backend
x = b.Array(1 << 22, "float32"); b.fill(x, 1.0); o = b.Array(1 << 22, "float32")
a = b.Array(300 * 300, "float32"); b.fill(a, 0.5); c = b.Array(300 * 300, "float32")
def others_cpu():  # CPU seconds of every thread of this process but this one
    me, total = threading.get_native_id(), 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != me:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")
def kernels(seconds):
    end = time.time() + seconds
    while time.time() < end:
        b.ewise_exp(x, o)
        b.matmul(a, a, c, 300, 300, 300)  # a GEMM plans for the free cores (free_threads)
def worker_seconds(seconds):
    before = others_cpu(); kernels(seconds); return others_cpu() - before
kernels(0.3)
quiet = worker_seconds(0.5)
hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(len(os.sched_getaffinity(0)) - 1)]
try:
    kernels(0.5)  # a load sample (every 200 ms) sees them
    busy = worker_seconds(0.5)
finally:
    for h in hogs:
        h.kill()
print(quiet, busy)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 or more CPUs")
def test_kernels_leave_busy_cores_alone() -> None:
    # Pinned to 2 CPUs, one of them kept busy by another process, a 2-thread kernel
    # runs all its parts on the calling thread and a GEMM is planned for one thread:
    # the workers take no CPU time. On a
    # bigger machine the other CPUs are outside the mask and do not count.
    env = dict(os.environ, LAMINA_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", CROWDED_SCRIPT], check=True, env=env,
                         capture_output=True, text=True, timeout=60).stdout
    quiet, busy = map(float, out.split())
    assert busy < 0.05, f"workers ran {busy} s of 0.5 s beside busy cores ({quiet} s when quiet)"


@pytest.mark.parametrize("name", ["LAMINA_SPIN_US", "LAMINA_YIELD_US"])
def test_spin_and_poll_settings_are_checked(name: str) -> None:
    env = dict(os.environ, **{name: "soon"})
    out = subprocess.run([sys.executable, "-W", "always", "-c", "import lamina_backend_cpu"],
                         env=env, capture_output=True, text=True, check=True).stderr
    assert f"{name}='soon' is not a whole number of microseconds" in out
