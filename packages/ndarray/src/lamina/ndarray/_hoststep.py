"""Host steps: functions a capture records as one replayable call.

A function that draws from the host random generator (``rand``, ``randn``,
``bernoulli``, ...) uploads numbers that are different at every call, so a
capture (:mod:`._capture`) must not record the upload as a constant.
Decorated with :func:`host_step`, such a function is recorded as a call of
itself, which every replay makes again, drawing new numbers in the same
order as eager code would. This module only holds the active capture, so
that the sampling modules can use it without importing the capture machinery.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class Recorder(Protocol):
    def wants(self) -> bool:
        """Whether this call (on this thread, not paused) is to be recorded."""

    def host_step(self, fn: Callable[..., Any], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
        """Runs ``fn`` and records it as one step."""


active: Recorder | None = None
"""The capture in progress, if any (set by ``Capture.__enter__``)."""


def host_step(fn: F) -> F:
    """Marks ``fn`` (returning one NDArray) as a host step (see the module docstring)."""

    @functools.wraps(fn)
    def step(*args: Any, **kwargs: Any) -> Any:
        recorder = active
        if recorder is None or not recorder.wants():
            return fn(*args, **kwargs)
        return recorder.host_step(fn, args, kwargs)

    return step  # type: ignore[return-value]
