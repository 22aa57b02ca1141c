"""Lamina's ``cpu`` backend: interface v2.0 as compiled C++ kernels.

The entry point ``cpu = "lamina_backend_cpu:backend"`` names the extension
module itself: it carries the metadata (``name``, ``api_version``,
``api_minor_version``, ``dtypes`` -- float32, float64, int64 and bool --
and ``kernel_dtypes``), ``Array`` and every kernel (one ``ewise_strided_OP``
per binary op: interface v2 passes no op names to kernels), plus ``num_threads()``,
``set_num_threads(n)``, ``memory_stats()`` and ``empty_cache()``, and the
instruction-set path: ``isa()`` (the one running: ``"generic"``, ``"avx2"`` or
``"avx512"``), ``cpu_isa()`` (the best this CPU and build allow) and
``set_isa(name)``. ``LAMINA_CPU_ISA`` picks the path at import; asking for
more than the CPU has, or a malformed ``LAMINA_NUM_THREADS``, gives a
RuntimeWarning here and the nearest sane value.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# The kernels run on the backend's own workers (threading.cc), not OpenMP's: an
# idle worker spins LAMINA_SPIN_US microseconds (default 50), polls between yields of
# its core for LAMINA_YIELD_US more (default 1000), then sleeps.
_core: Any = importlib.import_module(f"{__name__}._core")

backend = _core
name: str = _core.name
api_version: int = _core.api_version
api_minor_version: int = _core.api_minor_version
dtypes: tuple[str, ...] = _core.dtypes
kernel_dtypes: dict[str, tuple[str, ...]] = _core.kernel_dtypes
Array = _core.Array
num_threads = _core.num_threads
set_num_threads = _core.set_num_threads
memory_stats = _core.memory_stats
empty_cache = _core.empty_cache
isa = _core.isa
cpu_isa = _core.cpu_isa
set_isa = _core.set_isa

for _line in _core.env_warnings().splitlines():
    warnings.warn(f"lamina_backend_cpu: {_line}", RuntimeWarning, stacklevel=2)

__all__ = ["Array", "api_minor_version", "api_version", "backend", "cpu_isa", "dtypes",
           "empty_cache", "isa", "kernel_dtypes", "memory_stats", "name", "num_threads",
           "set_isa", "set_num_threads"]
