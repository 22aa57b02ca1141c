"""``python -m lamina.ndarray``: the table of discovered backends.

Prints every plugin of the ``lamina.backends`` entry-point group with its
distribution, version, api_version, dtypes and status (or why it is not
available), then the default device. ``--traceback`` adds the original
traceback of each plugin that failed to load. A plugin whose import has not
finished after ``--timeout`` seconds is listed as failed instead of hanging
the table. Exits 1 when the default device
cannot be resolved (for example a bad ``LAMINA_DEVICE``), else 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ._errors import DeviceError
from ._registry import ENV_VAR, BackendInfo, _load, default_device, list_backends

_COLUMNS = ("name", "distribution", "version", "api", "dtypes", "lacks", "status")


def _row(info: BackendInfo) -> tuple[str, ...]:
    status = info.status if info.status == "available" else f"{info.status}: {info.reason}"
    api = "?" if info.api_version is None else f"{info.api_version}.{info.api_minor_version}"
    dtypes = ",".join(info.dtypes) or "-"
    lacks = ",".join(info.lacks) if info.dtypes else "?"
    return (info.name, info.distribution, info.version, api, dtypes, lacks or "-", status)


def format_table(infos: Sequence[BackendInfo]) -> str:
    """The backends as an aligned text table, one row per backend."""
    rows = [_COLUMNS] + [_row(info) for info in infos]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        cells.append(row[-1])
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the backend table and the default device; return the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m lamina.ndarray",
        description="List the Lamina backends installed in this environment.")
    parser.add_argument("--traceback", action="store_true",
                        help="show the traceback of each plugin that failed to load")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="how long to wait for plugin imports (default: %(default)s)")
    args = parser.parse_args(argv)

    infos = list_backends(timeout=args.timeout)
    if infos:
        print(format_table(infos))
    else:
        print("no backends found in the 'lamina.backends' entry-point group; "
              "reinstall lamina-ndarray")
    # A backend may say in one line what runs its kernels (the cuda backend built as
    # a CPU emulation says so, so that nobody mistakes it for a GPU).
    for info in infos:
        loaded = _load(info.name) if info.status == "available" else None
        note = getattr(loaded[1], "description", "") if loaded else ""
        if isinstance(note, str) and note:
            print(f"{info.name}: {note}")
    if args.traceback:
        for info in infos:
            if info.traceback:
                print(f"\n--- {info.name} ({info.plugin}) ---\n{info.traceback.rstrip()}")
    source = f"from {ENV_VAR}" if os.environ.get(ENV_VAR, "").strip() else "automatic"
    try:
        device = default_device()
    except DeviceError as exc:
        print(f"\ndefault device: none ({exc})")
        return 1
    print(f"\ndefault device: {device} ({source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
