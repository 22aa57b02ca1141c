"""The backend object the ``lamina.backends`` entry point names.

It is the gateway to the compiled module ``_core``: if the extension fails to
import (a broken build, a missing C++ runtime) or finds no CUDA device, the
object still loads and reports why through ``unavailable_reason()``. The
kernels are looked up lazily on first access, so loading the object costs
nothing until a device is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from lamina.ndarray._interface import METADATA, OPTIONAL, REQUIRED

_core: Any
try:
    _core = importlib.import_module("lamina_backend_cuda._core")
except ImportError as exc:  # the backend must load anywhere; report instead
    _core = None
    _IMPORT_ERROR = (f"the compiled extension lamina_backend_cuda._core failed to import: "
                     f"{exc}; rebuild with `pip install packages/backends-cuda`")
else:
    _IMPORT_ERROR = ""

# Names of the interface this backend does not bind from _core: the metadata
# and device_count are methods below, a GPU has no host thread setting, its
# buffers live in device memory, so it cannot wrap numpy's (wrap_numpy), its
# Array constructor serves for allocation (no optional `empty`), Adam's
# update, the LayerNorm backward and attention run as composites of other kernels
# (no `adam_step`, `layer_norm_backward_last`, `attention` or `attention_backward`
# yet), a Linear layer's bias as an add after its GEMM (no `matmul_bias`), GELU
# as one `ewise_program` launch (no `gelu` or `gelu_backward`), and a convolution as
# im2col and a batched GEMM (no `conv2d`, `conv2d_backward_input` or
# `conv2d_backward_weight`).
_NOT_BOUND = METADATA + ("device_count", "set_num_threads", "num_threads", "wrap_numpy",
                         "empty", "adam_step", "layer_norm_backward_last", "gelu",
                         "gelu_backward", "attention", "attention_backward", "matmul_bias",
                         "conv2d", "conv2d_backward_input", "conv2d_backward_weight")

KERNELS: tuple[str, ...] = tuple(name for name in REQUIRED + OPTIONAL if name not in _NOT_BOUND)
"""Every kernel and device function the backend provides (interface v2.0 names)."""


def _unavailable(name: str, reason: str) -> Callable[..., Any]:
    def raise_unavailable(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name}: the cuda backend is unavailable: {reason}")

    raise_unavailable.__name__ = name
    return raise_unavailable


class CudaBackend:
    """Interface v2.0 on NVIDIA GPUs (see docs/backend-interface.md).

    Buffers are ``Array(size, dtype, device=0)`` on ``cuda:device``. All work
    of a device is queued on one stream; the host waits only in ``to_numpy``,
    in the index kernels (which validate their indices) and in
    ``synchronize()``. ``memory_stats()`` and ``empty_cache()`` expose the
    caching allocator.
    """

    name = "cuda"
    api_version = 2
    api_minor_version = 2  # v2.1: sort_last, ewise_program, ...; v2.2: float16, bfloat16
    dtypes = ("float32", "float64", "int64", "bool", "float16", "bfloat16")
    kernel_dtypes: dict[str, tuple[str, ...]] = (
        {} if _core is None else dict(_core.kernel_dtypes()))
    """The kernels that take fewer dtypes than ``dtypes`` (interface v2.0), read
    from the list the kernels are compiled from (``csrc/kernel_dtypes.h``)."""

    @property
    def emulated(self) -> bool:
        """True for the CPU emulation build (``LAMINA_CUDA_EMULATE=ON``, HIP-CPU): the
        CUDA kernels run on the CPU, for testing only; there is no GPU behind it."""
        return _core is not None and bool(_core.emulated())

    @property
    def description(self) -> str:
        """One line saying what executes the kernels."""
        if self.emulated:
            return ("CPU emulation of the CUDA kernels (HIP-CPU build, LAMINA_CUDA_EMULATE): "
                    "for tests, not a GPU")
        return "NVIDIA GPUs through CUDA"

    def is_available(self) -> bool:
        return _core is not None and bool(_core.is_available())

    def unavailable_reason(self) -> str:
        return _IMPORT_ERROR if _core is None else str(_core.unavailable_reason())

    def device_count(self) -> int:
        return 0 if _core is None else int(_core.device_count())

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not yet resolved: bind each kernel on first use.
        if name not in KERNELS:
            raise AttributeError(f"the cuda backend has no attribute {name!r}")
        reason = self.unavailable_reason()
        kernel = _unavailable(name, reason) if reason else getattr(_core, name)
        setattr(self, name, kernel)
        return kernel

    def __repr__(self) -> str:
        state = "available" if self.is_available() else "unavailable"
        emulated = ", CPU emulation (HIP-CPU), not a GPU" if self.emulated else ""
        return f"<lamina cuda backend ({state}{emulated})>"


backend = CudaBackend()
