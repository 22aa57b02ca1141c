"""What every benchmark records beside its figures: the machine it ran on and its table.

Figures from different CPUs or kernel paths never compare, so each result file
names the CPU model (family and model number) and the paths Lamina ran.
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """/proc/cpuinfo's model name, family and model, e.g. ``AMD EPYC (family 25 model 17)``."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
            if not line.strip():
                break
    except OSError:
        return "unknown"
    return f"{fields.get('model name', '?')} (family {fields.get('cpu family', '?')} model " \
           f"{fields.get('model', '?')})"


def machine() -> dict[str, object]:
    """The date, versions, CPU model, core count, load and Lamina's kernel paths of this run."""
    import numpy
    info: dict[str, object] = {
        "date": datetime.date.today().isoformat(), "python": platform.python_version(),
        "numpy": numpy.__version__, "machine": platform.machine(), "cores": os.cpu_count(),
        "cpu": _cpu_name(),
        # A load above the core count means other work shared the machine.
        "load_avg_1m": round(os.getloadavg()[0], 1)}
    try:
        import lamina_backend_cpu
        # Which kernels ran: figures from different CPUs or paths never compare.
        info["cpu"] = cpu_model()
        info["lamina_isa"] = lamina_backend_cpu.isa()
        info["lamina_cpu_isa"] = lamina_backend_cpu.cpu_isa()
        info["lamina_gemm_kernel"] = lamina_backend_cpu.backend.gemm_kernel_name()
        info["lamina_bf16_gemm"] = lamina_backend_cpu.backend.bf16_gemm()
    except ImportError:
        pass
    try:
        from lamina.ndarray import DeviceError, get_device
        info["lamina_threads"] = get_device("cpu").num_threads()
    except (ImportError, DeviceError):
        pass
    try:
        import torch
        info["torch"] = torch.__version__
    except ImportError:
        pass
    return info


def machine_line(note: str = "") -> str:
    """One line for a result file's header: CPU model, cores (with ``note``, e.g.
    ``"shared"``), Python and the kernel paths Lamina ran, e.g. ``AMD EPYC (family 25
    model 1), 2 cores, Python 3.11.7; Lamina kernels avx2, GEMM avx2_fma_6x16``."""
    info = machine()
    line = f"{info['cpu']}, {info['cores']} cores" + (f" ({note})" if note else "") \
        + f", Python {info['python']}"
    if "lamina_isa" in info:
        line += f"; Lamina kernels {info['lamina_isa']}, GEMM {info['lamina_gemm_kernel']}"
    return line


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def table(rows: list[dict[str, object]]) -> str:
    """The rows of a benchmark as a markdown table with the Lamina/baseline ratio."""
    lines = ["| benchmark | size | lamina | baseline | lamina value | baseline value | unit "
             "| ratio (>1 = Lamina better) |", "|---|---|---|---|---:|---:|---|---:|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['size']} | {r['lamina']} | {r['baseline']} | "
                     f"{r['lamina_value']:.3g} | {r['baseline_value']:.3g} | {r['unit']} | "
                     f"{r['ratio']:.2f} |")
    return "\n".join(lines)
