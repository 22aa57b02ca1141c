"""lamina/kernel_checks.h: the argument checks the cpu and cuda backends share.

lamina-ndarray ships the header and says where it is (``get_include()``); it
must stand alone (pure C++17: no pybind11, no CUDA), since both backends'
builds, nvcc's and the CPU emulation's included, compile it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ndarray = pytest.importorskip("lamina.ndarray")


def header() -> Path:
    return Path(ndarray.get_include()) / "lamina" / "kernel_checks.h"


def test_get_include_holds_the_shared_header() -> None:
    assert Path(ndarray.get_include()).is_absolute()
    assert header().is_file(), header()
    assert "namespace lamina::checks" in header().read_text()


def test_header_compiles_alone_as_cxx17_without_warnings(tmp_path: Path) -> None:
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler (c++ or g++) on PATH")
    # No include path but the header's own folder: nothing else may be needed.
    source = tmp_path / "alone.cc"
    source.write_text('#include "lamina/kernel_checks.h"\n'
                      'int main() { return lamina::checks::checked_mul(2, 3, "t") != 6; }\n')
    proc = subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                           f"-I{ndarray.get_include()}", str(source)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
