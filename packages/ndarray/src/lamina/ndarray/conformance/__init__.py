"""The backend conformance kit: interface v1 checked kernel by kernel.

Every kernel of ``docs/backend-interface.md`` is called directly on the
backend under test and on the numpy reference backend, with the same inputs,
and the results are compared with a per-dtype tolerance: compact,
non-contiguous, offset, broadcast (stride 0), negative-stride, zero-size and
large (1,000,003-element) inputs on every dtype the backend lists, each
optional kernel the backend provides, and the documented error types,
including sizes, strides and offsets whose products or sums overflow 64-bit
integers (``test_overflow``).

Run it against an installed backend by name::

    python -m lamina.ndarray.conformance cpu            # exit code = pytest's
    python -m lamina.ndarray.conformance cuda -x -q     # extra args go to pytest

or through pytest directly (the plugin comes with lamina-ndarray's
``pytest11`` entry point)::

    pytest --pyargs lamina.ndarray.conformance --lamina-backend cpu

Without ``--lamina-backend`` the backend is ``$LAMINA_CONFORMANCE_BACKEND``,
else ``numpy``. A backend that is not usable on this machine (failed to
import, incompatible, no GPU) fails the kit with the registry's reason, and a
run in which no test passed exits 1: a plugin's CI only passes when its
kernels ran. The kit needs pytest: ``pip install 'lamina-ndarray[conformance]'``.
"""
