"""bfloat16 products on each path this CPU has (``bf16_gemm_paths()``: ``float32``
everywhere; ``avx512_bf16`` with VDPBF16PS; ``amx`` with AMX tiles), switched
in-process with ``set_bf16_gemm``: values against the float64 product of the
operands (within bfloat16's rounding plus float32 summation error), every
operand layout the kernels pack differently, blocks and edges, threads, and
the choosing of paths. A path the CPU lacks skips with the reason."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from conftest import cpu

PATHS = ("float32", "avx512_bf16", "amx")


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param not in cpu.bf16_gemm_paths():
        pytest.skip(f"this CPU (or build) has no {request.param} bfloat16 path; it has "
                    f"{cpu.bf16_gemm_paths()}")
    cpu.set_bf16_gemm(request.param)
    try:
        yield request.param
    finally:
        cpu.set_bf16_gemm("best")


def bf16(x: np.ndarray):  # noqa: ANN201
    """x rounded to bfloat16 in a cpu buffer (flattened)."""
    wide = cpu.Array(x.size, "float32")
    cpu.from_numpy(np.ascontiguousarray(x, np.float32).reshape(-1), wide)
    out = cpu.Array(x.size, "bfloat16")
    cpu.ewise_cast(wide, out)
    return out


def read(buf) -> np.ndarray:  # noqa: ANN001
    wide = cpu.Array(buf.size, "float32")
    cpu.ewise_cast(buf, wide)
    return cpu.to_numpy(wide, (buf.size,), (1,), 0).astype(np.float64)


def check(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """got against a @ b in float64: half a bfloat16 ulp plus the float32 sums' error."""
    want = a @ b
    bound = 2.0 ** -8 * np.abs(want) + (np.abs(a) @ np.abs(b)) * a.shape[1] * 2.0 ** -23
    assert got.shape == want.shape
    bad = ~(np.abs(got - want) <= bound)
    assert not bad.any(), f"{bad.sum()} of {bad.size} off, first at {np.argwhere(bad)[0]}"


def operands(m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


# (m, k, n): tiny; 32 x 32 kernel blocks with edges in every direction; k not a
# multiple of the 32-deep tile; several n blocks (the amx path's B block is
# 1 MiB: 1632 columns at k = 300); several k blocks (over 2048) with partial
# sums, and several n blocks of them; a tall and a wide one
SHAPES = [(1, 1, 1), (3, 5, 2), (31, 33, 17), (32, 32, 32), (33, 64, 65), (64, 1000, 70),
          (97, 300, 1800), (40, 2100, 600), (300, 48, 31), (5, 700, 300)]
LAYOUTS = ("nn", "tn", "nt", "tt")  # a, b: n compact rows, t a transpose


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_product_matches_float64(path, shape, layout):
    m, k, n = shape
    a, b = operands(m, k, n, seed=m * 7 + n)
    # a transpose is the compact (k, m) array read with strides (1, m)
    sa = bf16(a.T if layout[0] == "t" else a)
    sb = bf16(b.T if layout[1] == "t" else b)
    a_rs, a_cs = (1, m) if layout[0] == "t" else (k, 1)
    b_rs, b_cs = (1, k) if layout[1] == "t" else (n, 1)
    out = cpu.Array(m * n, "bfloat16")
    cpu.matmul_strided(sa, sb, out, m, k, n, 0, a_rs, a_cs, 0, b_rs, b_cs)
    wa = read(sa).reshape(a.T.shape if layout[0] == "t" else a.shape)
    wb = read(sb).reshape(b.T.shape if layout[1] == "t" else b.shape)
    check(read(out).reshape(m, n), wa.T if layout[0] == "t" else wa,
          wb.T if layout[1] == "t" else wb)


def test_rows_beyond_one_row_block(path):
    # over 4096 rows (the kernels' row blocks) with two k blocks of partial sums
    a, b = operands(4100, 2100, 40, seed=9)
    sa, sb, out = bf16(a), bf16(b), cpu.Array(4100 * 40, "bfloat16")
    cpu.matmul(sa, sb, out, 4100, 2100, 40)
    check(read(out).reshape(4100, 40), read(sa).reshape(a.shape), read(sb).reshape(b.shape))


def test_strided_views_with_offsets(path):
    # every other row and column of larger arrays, from an offset
    m, k, n = 40, 70, 36
    big_a, big_b = operands(2 * m + 1, 2 * k, 2 * k, seed=3)[0], operands(2 * k, 2 * n + 3, 1, 4)[0]
    sa, sb = bf16(big_a), bf16(big_b)
    out = cpu.Array(m * n, "bfloat16")
    cpu.matmul_strided(sa, sb, out, m, k, n, 2 * k, 4 * k, 2, 1, 2 * (2 * n + 3), 2)
    wa = read(sa).reshape(big_a.shape)[1::2][:m, ::2]
    wb = read(sb).reshape(big_b.shape)[::2, 1::2][:, :n]
    check(read(out).reshape(m, n), wa, wb)


def test_batched(path):
    batch, m, k, n = 6, 20, 40, 50
    rng = np.random.default_rng(5)
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    b = rng.standard_normal((batch, k, n)).astype(np.float32)
    sa, sb, out = bf16(a), bf16(b), cpu.Array(batch * m * n, "bfloat16")
    cpu.matmul_batched(sa, sb, out, batch, m, k, n)
    got = read(out).reshape(batch, m, n)
    wa, wb = read(sa).reshape(a.shape), read(sb).reshape(b.shape)
    for i in range(batch):
        check(got[i], wa[i], wb[i])


def test_threads_give_the_same_bits(path):
    # fixed k blocks and blocks of C on 32-multiples: thread count changes nothing
    a, b = operands(300, 1100, 260, seed=6)
    sa, sb = bf16(a), bf16(b)
    before = cpu.num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            cpu.set_num_threads(threads)
            out = cpu.Array(300 * 260, "bfloat16")
            cpu.matmul(sa, sb, out, 300, 1100, 260)
            results.append(read(out))
    finally:
        cpu.set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def test_nan_and_inf_reach_their_rows_and_columns(path):
    a, b = operands(40, 64, 40, seed=7)
    a[3, 5], b[9, 33] = np.nan, np.inf
    sa, sb, out = bf16(a), bf16(b), cpu.Array(40 * 40, "bfloat16")
    cpu.matmul(sa, sb, out, 40, 64, 40)
    got = read(out).reshape(40, 40)
    assert np.isnan(got[3]).all()
    others = np.delete(np.arange(40), 3)
    assert np.isinf(got[others, 33]).all() or np.isnan(got[others, 33]).any()
    finite = np.delete(np.delete(got, 3, axis=0), 33, axis=1)
    assert np.isfinite(finite).all()


def test_empty_k_gives_zeros(path):
    out = cpu.Array(6, "bfloat16")
    cpu.fill(out, 3.0)
    cpu.matmul(cpu.Array(0, "bfloat16"), cpu.Array(0, "bfloat16"), out, 2, 0, 3)
    assert (read(out) == 0).all()


def test_paths_and_choice():
    paths = cpu.bf16_gemm_paths()
    assert paths[0] == "float32" and set(paths) <= set(PATHS)
    cpu.set_bf16_gemm("best")
    assert cpu.bf16_gemm() == paths[-1]
    assert cpu.build_info()["bf16_gemm"] == paths[-1]
    cpu.set_bf16_gemm("float32")
    try:
        assert cpu.bf16_gemm() == "float32"
    finally:
        cpu.set_bf16_gemm("best")
    with pytest.raises(ValueError, match="unknown path 'fp8'"):
        cpu.set_bf16_gemm("fp8")
    for missing in set(PATHS) - set(paths):
        with pytest.raises(ValueError, match=f"no '{missing}' path"):
            cpu.set_bf16_gemm(missing)


def test_a_lower_isa_leaves_the_bf16_paths_out():
    # the bf16 kernels live in the avx512 table: set_isa("avx2") runs float32
    if cpu.cpu_isa() != "avx512" or len(cpu.bf16_gemm_paths()) == 1:
        pytest.skip("no bfloat16 path beyond float32 here")
    old = cpu.isa()
    cpu.set_isa("avx2")
    try:
        assert cpu.bf16_gemm_paths() == ["float32"] and cpu.bf16_gemm() == "float32"
        a, b = operands(33, 40, 35, seed=8)
        sa, sb, out = bf16(a), bf16(b), cpu.Array(33 * 35, "bfloat16")
        cpu.matmul(sa, sb, out, 33, 40, 35)
        check(read(out).reshape(33, 35), read(sa).reshape(33, 40), read(sb).reshape(40, 35))
    finally:
        cpu.set_isa(old)
