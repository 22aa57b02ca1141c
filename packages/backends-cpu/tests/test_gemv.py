"""The small-M products (gemv_simd.h: at most 16 rows of A against a B with
contiguous columns, 32 against contiguous rows): B read in place,
as dot products with B's contiguous columns (a transposed compact weight,
strides (1, K)) or as row updates with its contiguous rows, on every ISA
path, against numpy; also views with offsets, strided and stride-0 operands,
and the same bits for 1 and 2 threads and for AVX2 and AVX-512."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import buffer, cpu, host, rand
from test_isa import AVAILABLE, close, isa, on  # noqa: F401  (isa: the per-ISA fixture)

# (m, k, n): one row (decoding), the row groups of 4, k around the 64-byte
# lanes (16 floats, 8 doubles), n around the vector widths and column tiles;
# k below 64 leaves the dot products for the packed path.
SHAPES = [(1, 1, 1), (1, 7, 5), (1, 16, 64), (1, 17, 65), (1, 128, 384), (2, 63, 33), (3, 100, 7),
          (4, 64, 256), (5, 129, 130), (7, 8, 1), (8, 257, 129), (13, 31, 200), (16, 768, 97),
          (17, 40, 70), (31, 65, 33), (32, 100, 129), (1, 0, 5),
          # tail columns over a long K (more than one 64-k block of the padded
          # tail), and 6-row groups over a long K
          (3, 300, 11), (16, 20000, 27)]


def strided(a: np.ndarray, b: np.ndarray, a_layout: str, b_layout: str,
            threads: int = 1) -> np.ndarray:
    """matmul_strided(a, b) with each operand stored compact ("c"), transposed
    ("t", column-major), or every other element of a wider buffer ("s"), after
    a few elements of offset."""
    m, k = a.shape
    n = b.shape[1]

    def store(x: np.ndarray, layout: str, off: int) -> tuple[np.ndarray, tuple[int, int, int]]:
        r, c = x.shape
        pad = np.full(off, 9, x.dtype)
        if layout == "c":
            return np.concatenate([pad, x.reshape(-1)]), (off, c, 1)
        if layout == "t":
            return np.concatenate([pad, x.T.reshape(-1)]), (off, 1, r)
        wide = np.full((r, 2 * c), 9, x.dtype)
        wide[:, ::2] = x
        return np.concatenate([pad, wide.reshape(-1)]), (off, 2 * c, 2)

    abuf, aargs = store(a, a_layout, 5)
    bbuf, bargs = store(b, b_layout, 3)
    out = cpu.Array(max(m * n, 1), a.dtype.name)
    old = cpu.num_threads()
    cpu.set_num_threads(threads)
    try:
        cpu.matmul_strided(buffer(cpu, abuf), buffer(cpu, bbuf), out, m, k, n, *aargs, *bargs)
    finally:
        cpu.set_num_threads(old)
    return host(cpu, out)[: m * n].reshape(m, n)


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layouts", ["ct", "tt", "st", "cc", "tc", "sc", "cs"])
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_small_m_against_numpy(dtype: str, layouts: str, shape: tuple[int, int, int]) -> None:
    m, k, n = shape
    a, b = rand((m, k), dtype, 1), rand((k, n), dtype, 2)
    close(strided(a, b, layouts[0], layouts[1]), a.astype(np.float64) @ b, k)


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stride_zero_views(dtype: str) -> None:
    # A row broadcast over m (row stride 0), a B whose columns are all one
    # column (column stride 0, rows stride 1) and one whose rows are all one row.
    m, k, n = 5, 70, 40
    row, col = rand(k, dtype, 3), rand(k, dtype, 4)
    brow = rand(n, dtype, 5)
    want_cols = np.tile(row.astype(np.float64) @ col, (m, n))
    for b_buf, b_args, want in (
        (col, (0, 1, 0), want_cols),
        (brow, (0, 0, 1), np.outer(np.full(m, row.astype(np.float64).sum()), brow)),
    ):
        out = cpu.Array(m * n, dtype)
        cpu.matmul_strided(buffer(cpu, row), buffer(cpu, b_buf), out, m, k, n, 0, 0, 1, *b_args)
        close(host(cpu, out).reshape(m, n), want, k)


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layouts", ["ct", "cc", "tt"])
@pytest.mark.parametrize("shape", [(16, 700, 1000), (3, 1500, 1900), (32, 500, 700)])
def test_one_and_two_threads_identical(dtype: str, layouts: str,
                                       shape: tuple[int, int, int]) -> None:
    # Large enough for a second thread, which takes a slice of the columns.
    m, k, n = shape
    a, b = rand((m, k), dtype, 6), rand((k, n), dtype, 7)
    one = strided(a, b, layouts[0], layouts[1], 1)
    two = strided(a, b, layouts[0], layouts[1], 2)
    np.testing.assert_array_equal(one, two)
    close(one, a.astype(np.float64) @ b, k)


def test_avx2_and_avx512_agree_bit_for_bit() -> None:
    # The dot products sum in 64-byte lanes whatever the register width.
    if "avx512" not in AVAILABLE:
        pytest.skip(f"this CPU (or build) runs up to {cpu.cpu_isa()}, not avx512")
    for dtype in ("float32", "float64"):
        for shape in SHAPES:
            m, k, n = shape
            a, b = rand((m, k), dtype, 8), rand((k, n), dtype, 9)
            for layouts in ("ct", "cc", "sc"):
                narrow = on("avx2", lambda: strided(a, b, *layouts))  # noqa: B023
                wide = on("avx512", lambda: strided(a, b, *layouts))  # noqa: B023
                np.testing.assert_array_equal(narrow, wide, err_msg=f"{dtype} {shape} {layouts}")


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(16, 20000, 27), (32, 300, 27), (8, 300, 10), (12, 300, 40),
                                   (2, 70, 3)])
@pytest.mark.parametrize("threads", [1, 2])
def test_row_updates_of_the_transposed_product(dtype: str, shape: tuple[int, int, int],
                                               threads: int) -> None:
    # A transposed A with few columns in C (a weight gradient g^T @ x) may run as
    # C^T = B^T A^T, whose row updates pad fewer columns; each element still sums
    # the same products in the same order, so the bits equal a compact A's.
    m, k, n = shape
    a, b = rand((m, k), dtype, 10), rand((k, n), dtype, 11)
    got = strided(a, b, "t", "c", threads)
    np.testing.assert_array_equal(got, strided(a, b, "c", "c", 1))
    close(got, a.astype(np.float64) @ b, k)
