"""``python -m lamina.ndarray.conformance NAME [pytest args]``.

Runs the conformance kit with pytest against backend ``NAME``. The kit only
passes for a backend that loaded and whose kernels ran: a backend that failed
to import, is incompatible (a required kernel is missing, another
``api_version``) or reports no hardware exits 1 with the registry's reason
before any test runs, and so does a run in which no test passed. Otherwise the
exit code is pytest's (0 passed, 1 failures, ...). pytest comes with the
``conformance`` extra: ``pip install 'lamina-ndarray[conformance]'``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from .._registry import list_backends

_PLUGIN = "lamina.ndarray.conformance._plugin"
_ENTRY_POINT = "lamina_conformance"  # the plugin's name in the pytest11 group


def pytest_args(name: str, extra: Sequence[str] = ()) -> list[str]:
    """The pytest command line that runs the kit against backend ``name``."""
    return [
        "--pyargs", "lamina.ndarray.conformance", "--lamina-backend", name,
        # Load the plugin by module name whether or not the pytest11 entry point
        # exists (a source checkout on PYTHONPATH has none), and block the entry
        # point so the plugin is not registered twice.
        "-p", f"no:{_ENTRY_POINT}", "-p", _PLUGIN,
        # `lamina` is a namespace package: let pytest import the kit's modules
        # under their real names instead of guessing a package root.
        "-o", "consider_namespace_packages=true",
        # Nothing to cache; the kit may sit in a read-only site-packages.
        "-p", "no:cacheprovider",
        *extra,
    ]


def _pytest() -> Any:
    try:
        import pytest
    except ImportError:
        return None
    return pytest


class _Outcomes:
    """A pytest plugin counting the tests that passed (setup, call and teardown)."""

    def __init__(self) -> None:
        self.passed = 0

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" and report.passed:
            self.passed += 1


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``NAME [pytest args]`` and run the kit; return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0].startswith("-"):
        print("usage: python -m lamina.ndarray.conformance NAME [pytest args]\n\n"
              "Run the Lamina backend conformance kit against the installed backend "
              "NAME\n(see `python -m lamina.ndarray` for the discovered ones), e.g.\n"
              "  python -m lamina.ndarray.conformance cpu -x -q")
        return 0 if args and args[0] in ("-h", "--help") else 2
    pytest = _pytest()
    if pytest is None:
        print("lamina.ndarray.conformance: the kit runs under pytest, which is not "
              "installed; install it with `pip install 'lamina-ndarray[conformance]'`",
              file=sys.stderr)
        return 2
    infos = {info.name: info for info in list_backends()}
    name = args[0]
    if name not in infos:
        print(f"lamina.ndarray.conformance: unknown backend {name!r}; installed backends "
              f"are {', '.join(sorted(infos)) or 'none'} (see `python -m lamina.ndarray`)",
              file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    info = infos[name]
    if info.status != "available":
        state = "failed to load" if info.status == "failed" else f"is {info.status}"
        print(f"lamina.ndarray.conformance: backend {name!r} ({info.plugin}) {state}: "
              f"{info.reason}; the kit needs a backend that loads and runs "
              "here (see `python -m lamina.ndarray --traceback`)", file=sys.stderr)
        return 1
    outcomes = _Outcomes()
    code = int(pytest.main(pytest_args(name, args[1:]), plugins=[outcomes]))
    if code == 0 and outcomes.passed == 0:
        print(f"lamina.ndarray.conformance: no test passed against {name!r} (all skipped "
              "or deselected): nothing was checked", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
