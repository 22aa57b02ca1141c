"""Static resource check of the real (nvcc) build: no GPU needed.

Compiles every csrc/*.cu with the flags of CMakeLists.txt (``--Werror=all-warnings``
included) and ``-Xptxas -v`` for each architecture asked for (default sm_80 and
sm_90), parses what ptxas reports for every kernel (registers, spill stores and
loads, stack frame, shared memory) and fails when a kernel spills registers or
cannot launch with the 256 threads per block every launcher uses
(registers x 256 > 65536, or more than 48 KiB of static shared memory).
Prints one table row per (architecture, kernel) and writes it to --out.

Usage: python scripts/resource_report.py [--arch 80 --arch 90] [--out FILE] [-j 2]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
THREADS = 256                # every launcher's block size (kThreads, matmul's THREADS)
REGISTERS_PER_SM = 65536
STATIC_SMEM_LIMIT = 48 * 1024

_ENTRY = re.compile(r"Compiling entry function '(\S+)' for '(sm_\d+)'")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


@dataclass
class Kernel:
    source: str
    arch: str
    name: str
    registers: int = 0
    smem: int = 0
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0

    def problems(self) -> list[str]:
        found = []
        if self.spill_stores or self.spill_loads:
            found.append(f"spills ({self.spill_stores} B stored, {self.spill_loads} B loaded)")
        if self.registers * THREADS > REGISTERS_PER_SM:
            found.append(f"{self.registers} registers x {THREADS} threads exceed one SM")
        if self.smem > STATIC_SMEM_LIMIT:
            found.append(f"{self.smem} B static shared memory > 48 KiB")
        return found


def demangle(names: list[str]) -> dict[str, str]:
    if not names or shutil.which("c++filt") is None:
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    return dict(zip(names, out, strict=True))


def ndarray_include() -> Path:
    """lamina-ndarray's C++ headers (lamina/kernel_checks.h), found as CMakeLists.txt
    finds them: the sibling source tree, else the installed lamina.ndarray."""
    sibling = HERE.parent / "ndarray" / "src" / "lamina" / "ndarray" / "include"
    if (sibling / "lamina" / "kernel_checks.h").is_file():
        return sibling
    try:
        from lamina.ndarray import get_include
    except ImportError as err:
        raise SystemExit(f"resource_report: lamina-ndarray's headers were not found beside "
                         f"this package nor through `import lamina.ndarray` ({err}); install "
                         f"lamina-ndarray") from err
    return Path(get_include())


def compile_one(nvcc: str, source: Path, archs: list[str],
                include: Path) -> tuple[str, str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-std=c++17", "-O3", "-Xcompiler=-Wall", "--Werror=all-warnings",
               "-Xptxas=-v", f"-I{HERE / 'csrc'}", f"-I{include}", "-c", str(source),
               "-o", f"{tmp}/k.o"]
        for arch in archs:
            cmd.append(f"-gencode=arch=compute_{arch},code=sm_{arch}")
        proc = subprocess.run(cmd, capture_output=True, text=True)
    return source.name, proc.stdout + proc.stderr, proc.returncode


def parse(source: str, log: str) -> list[Kernel]:
    kernels: list[Kernel] = []
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            kernels.append(Kernel(source, m.group(2), m.group(1)))
        elif kernels and (m := _SPILL.search(line)):
            k = kernels[-1]
            k.stack, k.spill_stores, k.spill_loads = map(int, m.groups())
        elif kernels and (m := _USED.search(line)):
            kernels[-1].registers = int(m.group(1))
            kernels[-1].smem = int(m.group(2) or 0)
    return kernels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", action="append", help="compute capability, e.g. 90")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument("-j", type=int, default=2, help="parallel nvcc processes")
    args = parser.parse_args(argv)
    archs = args.arch or ["80", "90"]
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("resource_report: nvcc was not found on PATH", file=sys.stderr)
        return 2
    sources = sorted((HERE / "csrc").glob("*.cu"))
    include = ndarray_include()
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        results = list(pool.map(lambda s: compile_one(nvcc, s, archs, include), sources))
    failed = [(name, log) for name, log, rc in results if rc != 0]
    for name, log in failed:
        print(f"--- nvcc failed on {name} ---\n{log}", file=sys.stderr)
    kernels = [k for name, log, _ in results for k in parse(name, log)]
    pretty = demangle(sorted({k.name for k in kernels}))
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    lines = [f"# CUDA kernel resources ({datetime.date.today()}, {platform.node() or 'host'}, "
             f"{version.strip().splitlines()[-1]}), sm_{', sm_'.join(archs)}",
             f"# limits: no spills; registers x {THREADS} threads <= {REGISTERS_PER_SM}; "
             f"static smem <= {STATIC_SMEM_LIMIT} B",
             f"{'arch':6} {'regs':>4} {'smem':>6} {'stack':>5} {'spill':>5}  kernel"]
    problems = []
    for k in sorted(kernels, key=lambda k: (k.arch, k.source, pretty[k.name])):
        lines.append(f"{k.arch:6} {k.registers:4d} {k.smem:6d} {k.stack:5d} "
                     f"{k.spill_stores + k.spill_loads:5d}  {pretty[k.name][:150]}")
        problems += [f"{k.arch} {pretty[k.name]}: {p}" for p in k.problems()]
    lines.append(f"# {len(kernels)} kernel builds in {len(sources)} files; "
                 f"{len(problems)} problems; {len(failed)} files failed to compile")
    lines += [f"PROBLEM: {p}" for p in problems]
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)
    if not kernels and not failed:
        print("resource_report: ptxas reported no kernels", file=sys.stderr)
        return 1
    return 1 if problems or failed else 0


if __name__ == "__main__":
    sys.exit(main())
