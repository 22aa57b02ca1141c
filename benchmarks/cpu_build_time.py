"""Where the cpu backend's build time goes: whole builds per variant, and per file.

``python benchmarks/cpu_build_time.py [--rounds N] [--jobs J] [--variant NAME ...]``
configures packages/backends-cpu with CMake in a temporary folder for each
variant, builds it with ``cmake --build -j J`` and times the whole build; the
variants run interleaved, ``--rounds`` times, and the table gives the median
of each and its ratio to the default build. Every compile goes through this
script as a compiler launcher, which records its seconds, so the table also
lists the translation units' compile times and the link's (where LTO does its
code generation). Writes
``benchmarks/results/cpu_build_time.md`` and ``.json`` with the machine and date.

Variants: ``default`` (the package's flags: -O3, and pybind11's -flto=auto),
``no-lto`` (``CMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF``, which pybind11 honours).
Needs cmake, a C++ compiler and pybind11 importable (``pip install pybind11``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import machine

HERE = Path(__file__).parent
SOURCE = HERE.parent / "packages" / "backends-cpu"
VARIANTS = {"default": [], "no-lto": ["-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF"]}


def launch(log: str, command: list[str]) -> int:
    """Compiler-launcher mode: run ``command`` and append "seconds source" to ``log``."""
    start = time.perf_counter()
    code = subprocess.call(command)
    source = next((a for a in command if a.endswith((".cc", ".cpp"))), "link")
    with open(log, "a") as f:
        f.write(f"{time.perf_counter() - start:.3f} {Path(source).name}\n")
    return code


def build(variant: str, jobs: int, folder: Path) -> tuple[float, dict[str, float]]:
    """Configure and build one variant in ``folder``; (build seconds, seconds per file)."""
    import pybind11

    log = folder / "compile-times.txt"
    launcher = f"{sys.executable};{Path(__file__).resolve()};--launch;{log}"
    subprocess.run(["cmake", "-S", str(SOURCE), "-B", str(folder), "-DCMAKE_BUILD_TYPE=Release",
                    f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
                    f"-DPython_EXECUTABLE={sys.executable}",
                    f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}",
                    f"-DCMAKE_CXX_LINKER_LAUNCHER={launcher}", *VARIANTS[variant]],
                   check=True, capture_output=True)
    start = time.perf_counter()
    subprocess.run(["cmake", "--build", str(folder), "-j", str(jobs)], check=True,
                   capture_output=True)
    seconds = time.perf_counter() - start
    files = {}
    for line in log.read_text().splitlines():
        value, name = line.split(" ", 1)
        files[name] = float(value)
    return seconds, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--variant", nargs="+", choices=sorted(VARIANTS),
                        default=list(VARIANTS))
    args = parser.parse_args()
    totals: dict[str, list[float]] = {v: [] for v in args.variant}
    files: dict[str, list[dict[str, float]]] = {v: [] for v in args.variant}
    for r in range(args.rounds):
        for variant in args.variant:
            folder = Path(tempfile.mkdtemp(prefix=f"lamina-build-{variant}-"))
            try:
                seconds, per_file = build(variant, args.jobs, folder)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            totals[variant].append(seconds)
            files[variant].append(per_file)
            print(f"round {r + 1} {variant}: {seconds:.1f} s", flush=True)
    info = {**machine(), "jobs": args.jobs, "rounds": args.rounds,
            "load_average_after": os.getloadavg()[0]}
    base = statistics.median(totals[args.variant[0]])
    lines = [f"# cpu backend build time ({info['date']})", "",
             f"Machine: {info['cpu']}, {info['cores']} cores (shared with other work: the "
             f"load average after the runs was {info['load_average_after']:.1f}); "
             f"`cmake --build -j {args.jobs}`, {args.rounds} interleaved rounds, medians.", "",
             "| variant | build s | ratio to " + args.variant[0] + " |", "|---|---|---|"]
    for variant in args.variant:
        med = statistics.median(totals[variant])
        lines.append(f"| {variant} | {med:.1f} | {med / base:.2f} |")
    lines += ["", "Seconds per translation unit and for the link (medians; with LTO the "
              "code generation happens at the link):", "",
              "| file | " + " | ".join(args.variant) + " |",
              "|---|" + "---|" * len(args.variant)]
    names = sorted({n for v in args.variant for run in files[v] for n in run},
                   key=lambda n: -statistics.median(r.get(n, 0.0) for r in files[args.variant[0]]))
    for name in names:
        cells = [f"{statistics.median(r.get(name, 0.0) for r in files[v]):.1f}"
                 for v in args.variant]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    out = HERE / "results" / "cpu_build_time"
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(
        {"machine": info, "totals": totals, "files": files}, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--launch":
        sys.exit(launch(sys.argv[2], sys.argv[3:]))
    main()
