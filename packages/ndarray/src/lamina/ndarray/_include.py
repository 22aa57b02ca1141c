"""Where lamina-ndarray's C++ headers are, for the compiled backends' builds."""

from __future__ import annotations

from pathlib import Path


def get_include() -> str:
    """The folder of the C++ headers a compiled backend builds against.

    It holds ``lamina/kernel_checks.h``: header-only C++17 argument checks
    (sizes, layouts, overflow-checked arithmetic, the exception types the
    bindings map onto Python's) that the cpu and cuda backends share, as
    ``numpy.get_include()`` serves extensions that use numpy's C API. Add it
    to the include path (CMake: ``-DLAMINA_NDARRAY_INCLUDE=<this folder>``)
    and ``#include "lamina/kernel_checks.h"``.

    Returns:
        The absolute path of the ``include`` folder inside this package.

    Example:
        >>> import os
        >>> from lamina.ndarray import get_include
        >>> os.path.isfile(os.path.join(get_include(), "lamina", "kernel_checks.h"))
        True
    """
    return str(Path(__file__).resolve().parent / "include")
