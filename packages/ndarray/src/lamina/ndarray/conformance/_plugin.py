"""The kit's pytest plugin: ``--lamina-backend`` and the fixtures.

Registered through lamina-ndarray's ``pytest11`` entry point, so it is active
in every pytest run of an environment that has lamina-ndarray installed; it
therefore only adds an option and a few ``lamina_``-prefixed fixtures and
loads no backend until a kit test asks for one.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from .._errors import DeviceError
from .._registry import get_device

ENV_VAR = "LAMINA_CONFORMANCE_BACKEND"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--lamina-backend NAME``."""
    parser.getgroup("lamina").addoption(
        "--lamina-backend", dest="lamina_backend", default=None, metavar="NAME",
        help=f"backend the Lamina conformance kit tests (default: ${ENV_VAR} or numpy)")


def backend_name(config: pytest.Config) -> str:
    """The backend under test: the option, else the environment, else numpy."""
    return (config.getoption("lamina_backend", None) or os.environ.get(ENV_VAR, "").strip()
            or "numpy")


def pytest_report_header(config: pytest.Config) -> str | None:
    """Name the backend under test when one was chosen explicitly."""
    if config.getoption("lamina_backend", None) or os.environ.get(ENV_VAR):
        return f"lamina conformance backend: {backend_name(config)}"
    return None


@pytest.fixture(scope="session")
def lamina_backend(request: pytest.FixtureRequest) -> Any:
    """The backend object under test.

    Fails (never skips) when the backend is not usable: not installed, failed
    to import, incompatible or without hardware, with the registry's reason,
    so that a plugin's CI cannot pass without its kernels having run.
    """
    name = backend_name(request.config)
    try:
        return get_device(name).backend
    except DeviceError as exc:
        pytest.fail(f"backend {name!r} is not usable here: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def lamina_reference() -> Any:
    """The numpy reference backend, what every result is compared with."""
    return get_device("numpy").backend


@pytest.fixture(params=["float32", "float64", "int64"])
def lamina_dtype(request: pytest.FixtureRequest, lamina_backend: Any) -> str:
    """Each dtype of the interface; skipped where the backend does not list it."""
    if request.param not in lamina_backend.dtypes:
        pytest.skip(f"backend lists no {request.param}")
    return str(request.param)


@pytest.fixture(params=["float32", "float64"])
def lamina_float(request: pytest.FixtureRequest, lamina_backend: Any) -> str:
    """Each float dtype (for the arithmetic kernels) the backend lists."""
    if request.param not in lamina_backend.dtypes:
        pytest.skip(f"backend lists no {request.param}")
    return str(request.param)


@pytest.fixture(params=["float16", "bfloat16"])
def lamina_narrow(request: pytest.FixtureRequest, lamina_backend: Any) -> str:
    """Each 16-bit float (interface v2.2) the backend lists."""
    if request.param not in lamina_backend.dtypes:
        pytest.skip(f"backend lists no {request.param}")
    return str(request.param)
