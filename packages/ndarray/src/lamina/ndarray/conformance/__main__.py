"""``python -m lamina.ndarray.conformance NAME [pytest args]``.

Runs the conformance kit with pytest against backend ``NAME``; the exit code
is pytest's (0 passed, 1 failures, 5 nothing collected, ...).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

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


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``NAME [pytest args]`` and run the kit; return pytest's exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help") or args[0].startswith("-"):
        print("usage: python -m lamina.ndarray.conformance NAME [pytest args]\n\n"
              "Run the Lamina backend conformance kit against the installed backend "
              "NAME\n(see `python -m lamina.ndarray` for the discovered ones), e.g.\n"
              "  python -m lamina.ndarray.conformance cpu -x -q")
        return 0 if args and args[0] in ("-h", "--help") else 2
    known = sorted(info.name for info in list_backends())
    if args[0] not in known:
        print(f"lamina.ndarray.conformance: unknown backend {args[0]!r}; installed "
              f"backends are {', '.join(known) or 'none'} (see `python -m lamina.ndarray`)",
              file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    return int(pytest.main(pytest_args(args[0], args[1:])))


if __name__ == "__main__":
    sys.exit(main())
