"""``type=`` converters and the help formatter of ``lamina-train`` and ``lamina-generate``.

A value out of range is refused by argparse itself: one line
``PROG: error: argument --hidden: must be >= 1, got 0`` and exit status 2,
before anything is loaded or trained, never a traceback and never a silent
default in its place. :func:`check_value` applies the same converters to an
option's value from elsewhere (a checkpoint's recorded options).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

__all__ = ["HelpFormatter", "check_value", "device", "integer", "real"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each option's default after its help (unless it has none or the help
    already says it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("(default" in text or not action.option_strings
                or action.default is None or action.default is False
                or action.default == argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)".lstrip()


def integer(minimum: int) -> Callable[[str], int]:
    """An int ``>= minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    return parse


def real(minimum: float = 0.0, maximum: float | None = None,
         below_maximum: bool = False) -> Callable[[str], float]:
    """A finite float in ``[minimum, maximum]`` (``[minimum, maximum)`` with
    ``below_maximum``); no upper bound when ``maximum`` is None."""
    top = "" if maximum is None else f", {maximum:g}{')' if below_maximum else ']'}"
    wanted = f"in [{minimum:g}{top}" if top else f">= {minimum:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number {wanted}, got {text}")
        too_big = maximum is not None and (value >= maximum if below_maximum
                                           else value > maximum)
        if value < minimum or too_big:
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {text}")
        return value
    return parse


def device(text: str) -> str:
    """A device name that resolves here (``numpy``, ``cpu``, ``cuda:1``, ...)."""
    from lamina import ndarray as nd

    try:
        nd.get_device(text)
    except (RuntimeError, ValueError, TypeError) as exc:  # DeviceError is a RuntimeError
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def check_value(action: argparse.Action, value: Any) -> str | None:
    """What is wrong with ``value`` for the option ``action`` (None: nothing)."""
    if value is None or isinstance(value, bool):
        return None
    if action.choices is not None and value not in action.choices:
        return f"must be one of {sorted(action.choices)}, got {value!r}"
    if callable(action.type):
        try:
            action.type(str(value))
        except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
            return str(exc)
    return None
