"""Every instruction-set path this CPU has (generic, avx2, avx512) against
numpy and against each other, switched in-process with set_isa; a path the
CPU (or build) lacks skips with the reason. Also the parsing of
LAMINA_CPU_ISA and LAMINA_NUM_THREADS (read at import, so in a subprocess)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import lamina_backend_cpu
import numpy as np
import pytest
from conftest import buffer, cpu, host, rand

ORDER = ("generic", "avx2", "avx512")
AVAILABLE = ORDER[: ORDER.index(cpu.cpu_isa()) + 1]


def _need(name: str) -> None:
    if name not in AVAILABLE:
        pytest.skip(f"this CPU (or build) runs up to {cpu.cpu_isa()}, not {name}")


@pytest.fixture(params=ORDER)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    _need(request.param)
    old = cpu.isa()
    cpu.set_isa(request.param)
    try:
        yield request.param
    finally:
        cpu.set_isa(old)


def on(name: str, fn: Callable[[], np.ndarray]) -> np.ndarray:
    old = cpu.isa()
    cpu.set_isa(name)
    try:
        return fn()
    finally:
        cpu.set_isa(old)


def matmul(a: np.ndarray, b: np.ndarray, threads: int = 1) -> np.ndarray:
    out = cpu.Array(a.shape[0] * b.shape[1], a.dtype.name)
    old = cpu.num_threads()
    cpu.set_num_threads(threads)
    try:
        cpu.matmul(buffer(cpu, a), buffer(cpu, b), out, a.shape[0], a.shape[1], b.shape[1])
    finally:
        cpu.set_num_threads(old)
    return host(cpu, out).reshape(a.shape[0], b.shape[1])


def close(got: np.ndarray, want: np.ndarray, k: int = 1) -> None:
    tol = (2e-6 if got.dtype == np.float32 else 1e-14) * max(k, 1) ** 0.5 * 8
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# Edges of every tile (6x16 / 6x8 on AVX2; on AVX-512 6x64 / 6x32, 14x32 /
# 14x16, and 6x16 for C <= 16 wide), each narrower copy of a tile for C's last
# panel (1, 2 or 3 of the wide tile's 4 vectors: C 270, 286, 300 wide), the
# in-place A path (C at most two panels wide), K split into cache blocks.
SHAPES = [(1, 1, 1), (3, 5, 7), (13, 17, 31), (14, 256, 32), (15, 300, 33), (29, 513, 65),
          (6, 1000, 16), (100, 64, 200), (257, 129, 95), (200, 300, 40), (128, 128, 128),
          (70, 100, 300), (50, 40, 256), (7, 260, 64), (40, 60, 21), (64, 300, 100),
          (20, 70, 270), (33, 50, 286)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("threads", [1, 2])
def test_matmul(isa: str, dtype: str, shape: tuple[int, int, int], threads: int) -> None:
    m, k, n = shape
    a, b = rand((m, k), dtype, 1), rand((k, n), dtype, 2)
    close(matmul(a, b, threads), a.astype(np.float64) @ b, k)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("trans", ["a", "b", "ab"])
@pytest.mark.parametrize("shape", [(50, 70, 40), (97, 300, 130)])
def test_matmul_strided_views(isa: str, dtype: str, trans: str, shape: tuple[int, ...]) -> None:
    # Transposed operands (rs == 1) through matmul_strided, with an offset.
    m, k, n = shape
    a, b = rand((m, k), dtype, 3), rand((k, n), dtype, 4)
    at = np.concatenate([np.zeros(5, dtype), a.T.reshape(-1)])  # holds A^T compact
    bt = np.concatenate([np.zeros(3, dtype), b.T.reshape(-1)])
    a_args = (5, 1, m) if "a" in trans else (0, k, 1)
    b_args = (3, 1, k) if "b" in trans else (0, n, 1)
    a_buf = buffer(cpu, at if "a" in trans else a)
    b_buf = buffer(cpu, bt if "b" in trans else b)
    out = cpu.Array(m * n, dtype)
    cpu.matmul_strided(a_buf, b_buf, out, m, k, n, *a_args, *b_args)
    close(host(cpu, out).reshape(m, n), a.astype(np.float64) @ b, k)


def test_matmul_batched(isa: str) -> None:
    a, b = rand((9, 30, 70), "float32", 5), rand((9, 70, 50), "float32", 6)
    out = cpu.Array(9 * 30 * 50, "float32")
    cpu.matmul_batched(buffer(cpu, a), buffer(cpu, b), out, 9, 30, 70, 50)
    close(host(cpu, out).reshape(9, 30, 50), a.astype(np.float64) @ b, 70)


UNARY = {"exp": np.exp, "tanh": np.tanh, "erf": np.vectorize(math.erf), "log": np.log,
         "sqrt": np.sqrt, "abs": np.abs}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary(isa: str, op: str, dtype: str) -> None:
    x = rand(1031, dtype, 7, lo=0.01 if op in ("log", "sqrt") else -90, hi=90)
    x[:6] = [np.inf, -np.inf, np.nan, 0.5, 0.0, -0.0]
    if op == "erf":
        x[6:] = x[6:] / 15  # erf is +-1 in float32 beyond 4
    out = cpu.Array(x.size, dtype)
    getattr(cpu, f"ewise_{op}")(buffer(cpu, x), out)
    with np.errstate(all="ignore"):
        want = UNARY[op](x)
    got = host(cpu, out)
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32" else 1e-14,
                               equal_nan=True)
    np.testing.assert_array_equal(np.signbit(got[4:6]), np.signbit(want[4:6]))


def test_rows_and_sums(isa: str) -> None:
    x = rand((37, 300), "float32", 8, lo=-20, hi=20)
    xb = buffer(cpu, x)
    sm = cpu.Array(x.size, "float32")
    cpu.softmax_last(xb, sm, 300)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    close(host(cpu, sm).reshape(37, 300), e / e.sum(1, keepdims=True))
    lse = cpu.Array(37, "float32")
    cpu.logsumexp_last(xb, lse, 300)
    close(host(cpu, lse), np.log(np.exp(x.astype(np.float64)).sum(1)), 300)
    cols = cpu.Array(300, "float32")
    cpu.reduce_sum_axis(xb, cols, 1, 37, 300)
    close(host(cpu, cols), x.astype(np.float64).sum(0), 37)
    w, b = rand((300,), "float32", 9), rand((300,), "float32", 10)
    ln = cpu.Array(x.size, "float32")
    mean, rstd = cpu.Array(37, "float32"), cpu.Array(37, "float32")
    cpu.layer_norm_last(xb, buffer(cpu, w), buffer(cpu, b), ln, mean, rstd, 300, 1e-5)
    x64 = x.astype(np.float64)
    mu, inv = x64.mean(1, keepdims=True), 1 / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    close(host(cpu, ln).reshape(37, 300), (x64 - mu) * inv * w + b, 4)
    close(host(cpu, mean), mu[:, 0], 4)
    close(host(cpu, rstd), inv[:, 0], 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_min_rows(isa: str, dtype: str) -> None:
    # Rows long and short around the 16 lanes, with NaN, inf and signed zeros
    # placed in the vector blocks and in the tail: numpy's results exactly.
    rng = np.random.default_rng(3)
    for size in (1, 15, 16, 17, 64, 100):
        x = rng.standard_normal((9, size)).astype(dtype)
        x[1, size // 2] = np.nan
        x[2, -1] = np.nan
        x[3, 0] = np.inf
        x[4, size // 3] = -np.inf
        x[5] = 0.0
        x[5, ::2] = -0.0
        x[6, :] = np.inf
        for op, want in (("max", x.max(1)), ("min", x.min(1))):
            out = cpu.Array(9, dtype)
            getattr(cpu, f"reduce_{op}")(buffer(cpu, x), out, size)
            got = host(cpu, out)
            np.testing.assert_array_equal(got, want, err_msg=f"{op} size {size}")


def _all_kernels(seed: int) -> dict[str, np.ndarray]:
    """Outputs of the kernels that have per-ISA code, for the cross-path check."""
    rng = np.random.default_rng(seed)
    res = {}
    for dt in ("float32", "float64"):
        for m, k, n in [(3, 5, 7), (29, 513, 65), (257, 129, 95), (200, 300, 40), (70, 300, 300),
                        (50, 40, 256), (300, 20, 16), (40, 60, 21), (64, 300, 100),
                        (20, 70, 270), (33, 50, 286)]:
            a = rng.standard_normal((m, k)).astype(dt)
            b = rng.standard_normal((k, n)).astype(dt)
            res[f"matmul {dt} {m}x{k}x{n}"] = matmul(a, b, 2)
    x = rng.uniform(-90, 90, 4099).astype(np.float32)
    for op in ("exp", "tanh", "erf"):
        out = cpu.Array(x.size, "float32")
        getattr(cpu, f"ewise_{op}")(buffer(cpu, x), out)
        res[op] = host(cpu, out)
    cols = cpu.Array(333, "float32")
    cpu.reduce_sum_axis(buffer(cpu, x[:333 * 12]), cols, 1, 12, 333)
    res["sum_axis"] = host(cpu, cols)
    rows = x[:41 * 99].reshape(41, 99) / 10
    for dt in ("float32", "float64"):
        r = rows.astype(dt)
        sm, ln = cpu.Array(r.size, dt), cpu.Array(r.size, dt)
        mean, rstd, peak = cpu.Array(41, dt), cpu.Array(41, dt), cpu.Array(41, dt)
        cpu.softmax_last(buffer(cpu, r), sm, 99)
        w, b = np.linspace(-1, 2, 99).astype(dt), np.linspace(0, 1, 99).astype(dt)
        cpu.layer_norm_last(buffer(cpu, r), buffer(cpu, w), buffer(cpu, b), ln, mean, rstd, 99,
                            1e-5)
        cpu.reduce_max(buffer(cpu, r), peak, 99)
        res |= {f"softmax {dt}": host(cpu, sm), f"layer_norm {dt}": host(cpu, ln),
                f"rstd {dt}": host(cpu, rstd), f"max {dt}": host(cpu, peak)}
    return res


def test_avx2_and_avx512_agree_bit_for_bit() -> None:
    # Both vector paths sum every output in the same k order with the same
    # FMAs (only the tile shape differs), exp, tanh and erf run the same
    # polynomials whatever the vector width, and the row kernels (softmax,
    # layer norm, max) fold the same 16 lanes in the same order.
    _need("avx2")
    _need("avx512")
    narrow, wide = on("avx2", lambda: _all_kernels(9)), on("avx512", lambda: _all_kernels(9))
    for key in narrow:
        np.testing.assert_array_equal(narrow[key], wide[key], err_msg=key)


def test_generic_and_vector_paths_agree() -> None:
    _need("avx2")
    base = on("generic", lambda: _all_kernels(10))
    best = _all_kernels(10)
    for key in base:
        close(best[key], base[key], 513)


def test_set_isa_errors() -> None:
    with pytest.raises(ValueError, match="^set_isa: unknown ISA 'avx9'"):
        cpu.set_isa("avx9")
    if cpu.cpu_isa() == "avx512":
        pytest.skip("this CPU runs every path, so none is out of reach")
    with pytest.raises(ValueError, match="^set_isa: this CPU"):
        cpu.set_isa("avx512")


def test_isa_reported() -> None:
    info = cpu.build_info()
    assert info["isa"] == cpu.isa() == lamina_backend_cpu.isa()
    assert info["cpu_isa"] == cpu.cpu_isa()
    assert cpu.gemm_kernel_name().startswith({"generic": "portable", "avx2": "avx2",
                                              "avx512": "avx512"}[cpu.isa()])


PROBE = ("import warnings, json, sys\n"
         "with warnings.catch_warnings(record=True) as w:\n"
         "    warnings.simplefilter('always')\n"
         "    import lamina_backend_cpu as m\n"
         "print(json.dumps([m.isa(), m.num_threads(), [str(x.message) for x in w]]))\n")


def _probe(**env: str) -> tuple[str, int, list[str]]:
    drop = ("LAMINA_CPU_ISA", "LAMINA_NUM_THREADS")
    full = {k: v for k, v in os.environ.items() if k not in drop} | env
    out = subprocess.run([sys.executable, "-c", PROBE], check=True, env=full,
                         capture_output=True, text=True).stdout
    isa_name, threads, warns = json.loads(out)
    return isa_name, threads, warns


@pytest.mark.parametrize("name", ORDER)
def test_env_isa(name: str) -> None:
    got, _, warns = _probe(LAMINA_CPU_ISA=name)
    if name in AVAILABLE:
        assert got == name and warns == []
    else:
        assert got == cpu.cpu_isa()
        assert any("LAMINA_CPU_ISA" in w and "more than this CPU" in w for w in warns), warns


def test_env_isa_malformed() -> None:
    got, _, warns = _probe(LAMINA_CPU_ISA="sse9")
    assert got == cpu.cpu_isa()
    assert any("LAMINA_CPU_ISA='sse9' is not one of" in w for w in warns), warns


@pytest.mark.parametrize("value", ["abc", "-3", "0", "2.5", "99999999999", "1e3"])
def test_env_threads_malformed(value: str) -> None:
    _, threads, warns = _probe(LAMINA_NUM_THREADS=value)
    cap = 4 * (os.cpu_count() or 1)
    assert 1 <= threads <= cap
    if value == "99999999999":
        assert threads == cap
    assert any(w.startswith("lamina_backend_cpu: LAMINA_NUM_THREADS") for w in warns), warns


def test_env_threads_valid() -> None:
    assert _probe(LAMINA_NUM_THREADS="2")[1:] == (2, [])


def test_set_num_threads_cap() -> None:
    with pytest.raises(ValueError, match=r"^set_num_threads: n must be in \[1, "):
        cpu.set_num_threads(10**9)
