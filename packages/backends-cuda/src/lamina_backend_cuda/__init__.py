"""Lamina's ``cuda`` backend: device buffers and CUDA kernels (interface v2.0).

Registered through the ``lamina.backends`` entry point as ``cuda``. Importing
this package never fails on a machine without a GPU or driver: the backend
then reports ``is_available() == False`` and ``unavailable_reason()`` carries
the CUDA error text, and every kernel raises ``RuntimeError`` with that reason.

Example:
    >>> from lamina_backend_cuda import backend
    >>> backend.name, backend.api_version
    ('cuda', 2)
"""

from ._backend import KERNELS, CudaBackend, backend

__all__ = ["KERNELS", "CudaBackend", "backend"]
