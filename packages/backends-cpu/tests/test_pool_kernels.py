"""The max-pool kernels (pool.cc) against the numpy reference and PyTorch: maxima and
indices exactly (ties, NaN, infinities, padding, dilation, ceil-mode windows, the 2x2
stride-2 fast path with odd sizes), the backward's scatter with overlapping windows;
several threads give the single-thread result bit for bit; and the argument errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import FLOATS, TOL, cpu, ref
from lamina.ndarray import get_include
from lamina.ndarray.conformance._pool_cases import (
    CASES,
    PoolCase,
    geometry,
    pool_input,
    run_max_pool,
    run_max_pool_backward,
)

KINDS = ("random", "ties", "special", "neg-inf")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool2d_matches_numpy(dtype: str, name: str, kind: str) -> None:
    case = CASES[name]
    x = pool_input(case.shape, dtype, kind, seed=3)
    want, want_idx = run_max_pool(ref, x, case)
    got, got_idx = run_max_pool(cpu, x, case)
    np.testing.assert_array_equal(got_idx, want_idx)
    np.testing.assert_array_equal(got, want)  # a selection: bit for bit, NaN included
    grad = pool_input(want.shape, dtype, "random", seed=4)
    np.testing.assert_allclose(run_max_pool_backward(cpu, grad, got_idx, case),
                               run_max_pool_backward(ref, grad, want_idx, case), **TOL[dtype])


@pytest.mark.parametrize("kind", ("ties", "special"))
@pytest.mark.parametrize("name", [n for n in CASES if n != "large"])
def test_max_pool2d_matches_torch(name: str, kind: str) -> None:
    case = CASES[name]
    x = pool_input(case.shape, "float64", kind, seed=5)
    t = torch.tensor(x, requires_grad=True)
    t_out, t_idx = F.max_pool2d(t, case.kernel, case.stride, case.padding, case.dilation,
                                case.ceil_mode, return_indices=True)
    got, got_idx = run_max_pool(cpu, x, case)
    np.testing.assert_array_equal(got_idx, t_idx.numpy())
    np.testing.assert_array_equal(got, t_out.detach().numpy())
    grad = pool_input(got.shape, "float64", "random", seed=6)
    t_out.backward(torch.tensor(grad))
    np.testing.assert_allclose(run_max_pool_backward(cpu, grad, got_idx, case), t.grad.numpy(),
                               **TOL["float64"])


@pytest.mark.parametrize("width", [2, 3, 15, 16, 17, 33])
def test_two_by_two_fast_path_on_odd_widths(width: int) -> None:
    # The 2x2 stride-2 loop over output columns: widths around the vector lengths, an odd
    # last column and row that no window reads.
    case = PoolCase((1, 2, 5, width), (2, 2), (2, 2))
    x = pool_input(case.shape, "float32", "special", seed=width)
    want, want_idx = run_max_pool(ref, x, case)
    got, got_idx = run_max_pool(cpu, x, case)
    np.testing.assert_array_equal(got_idx, want_idx)
    np.testing.assert_array_equal(got, want)


def test_threads_give_the_single_thread_result() -> None:
    old = cpu.num_threads()
    case = PoolCase((16, 32, 24, 24), (3, 3), (2, 2), (1, 1))
    x = pool_input(case.shape, "float32", "random", seed=7)
    try:
        cpu.set_num_threads(1)
        one, one_idx = run_max_pool(cpu, x, case)
        grad = pool_input(one.shape, "float32", "random", seed=8)
        one_in = run_max_pool_backward(cpu, grad, one_idx, case)
        cpu.set_num_threads(2)
        two, two_idx = run_max_pool(cpu, x, case)
        two_in = run_max_pool_backward(cpu, grad, two_idx, case)
    finally:
        cpu.set_num_threads(old)
    np.testing.assert_array_equal(two_idx, one_idx)
    np.testing.assert_array_equal(two, one)
    np.testing.assert_array_equal(two_in, one_in)


def test_backward_ignores_the_index_of_a_window_of_padding_only() -> None:
    case = CASES["2x2"]
    grad = np.ones((2, 3, 4, 4), "float32")
    indices = np.full(grad.shape, -1, np.int64)
    assert not run_max_pool_backward(cpu, grad, indices, case).any()


def test_max_pool2d_errors_name_the_kernel() -> None:
    args = geometry(CASES["2x2"])
    x = cpu.Array(384, "float32")
    with pytest.raises(ValueError, match=r"max_pool2d: output has 10 elements, 6 planes of "
                                         r"4x4 need 96"):
        cpu.max_pool2d(x, cpu.Array(10, "float32"), cpu.Array(96, "int64"), *args)
    with pytest.raises(ValueError, match="max_pool2d: sw must be >= 1, got 0"):
        cpu.max_pool2d(x, cpu.Array(96, "float32"), cpu.Array(96, "int64"),
                       *args[:8], 0, *args[9:])
    with pytest.raises(TypeError, match="max_pool2d: indices must be int64, got float32"):
        cpu.max_pool2d(x, cpu.Array(96, "float32"), cpu.Array(96, "float32"), *args)
    with pytest.raises(TypeError, match="max_pool2d_backward: input and output must have one "
                                        "dtype, got float64 and float32"):
        cpu.max_pool2d_backward(cpu.Array(96, "float32"), cpu.Array(96, "int64"),
                                cpu.Array(384, "float64"), *args)
    with pytest.raises(TypeError, match="max_pool2d"):
        cpu.max_pool2d(cpu.Array(384, "int64"), cpu.Array(96, "int64"), cpu.Array(96, "int64"),
                       *args)


def test_max_pool_kernel_dtypes_are_declared() -> None:
    for kernel in ("max_pool2d", "max_pool2d_backward"):
        assert tuple(cpu.kernel_dtypes[kernel]) == FLOATS


def test_pool_checks_header_compiles_alone_as_cxx17_without_warnings(tmp_path: Path) -> None:
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler (c++ or g++) on PATH")
    source = tmp_path / "alone.cc"
    source.write_text('#include "lamina/pool_checks.h"\n'
                      "int main() { lamina::checks::PoolGeometry g{1, 2, 2, 1, 1, 2, 2, 2, 2, 0, "
                      "0, 1, 1};\n  lamina::checks::check_max_pool2d(\"t\", g, 4, 1, \"float32\", "
                      "\"float32\", \"int64\", 1);\n  return g.in_plane() != 4; }\n")
    proc = subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                           f"-I{get_include()}", str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
