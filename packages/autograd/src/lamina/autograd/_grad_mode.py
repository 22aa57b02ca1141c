"""Whether ops record the graph: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

The switch is thread-local, as in PyTorch, so a data-loading thread under
``no_grad`` does not turn recording off for the training thread.
"""

from __future__ import annotations

import contextlib
import threading


class _State(threading.local):
    enabled = True


_state = _State()


def is_grad_enabled() -> bool:
    """Whether new ops record their graph (``True`` unless inside ``no_grad``)."""
    return _state.enabled


class set_grad_enabled(contextlib.ContextDecorator):  # noqa: N801 (PyTorch's name)
    """Turns recording on or off; a context manager, a decorator or a plain call.

    Args:
        mode: ``True`` to record the graph, ``False`` not to.

    Example:
        >>> import lamina.autograd as ag
        >>> x = ag.ones(2, requires_grad=True)
        >>> with ag.set_grad_enabled(False):
        ...     (x * 2).requires_grad
        False
    """

    def __init__(self, mode: bool) -> None:
        self.prev = _state.enabled
        self.mode = bool(mode)
        _state.enabled = self.mode

    def __enter__(self) -> None:
        _state.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self.prev


class _Switch(contextlib.ContextDecorator):
    """Sets the mode on entry and restores the previous one on exit."""

    mode = True

    def __enter__(self) -> None:
        self.prev = _state.enabled
        _state.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self.prev

    def _recreate_cm(self) -> _Switch:
        # A fresh instance per decorated call, so recursion restores correctly.
        return type(self)()


class no_grad(_Switch):  # noqa: N801
    """Ops inside do not record the graph: for evaluation and optimizer updates.

    Example:
        >>> import lamina.autograd as ag
        >>> w = ag.ones(3, requires_grad=True)
        >>> with ag.no_grad():
        ...     y = w * 2
        >>> y.requires_grad
        False
    """

    mode = False


class enable_grad(_Switch):  # noqa: N801
    """Turns recording back on inside a ``no_grad`` region."""

    mode = True


class inference_mode(_Switch):  # noqa: N801
    """PyTorch's ``inference_mode``: here the same as ``no_grad``.

    A context manager or a decorator (``@inference_mode()``); ``mode=False``
    leaves recording as it is. PyTorch also marks tensors made inside as
    "inference tensors" that can never join a graph; Lamina has no such
    tensors, so this costs nothing extra and restricts nothing more than
    ``no_grad``.

    Example:
        >>> import lamina.autograd as ag
        >>> w = ag.ones(3, requires_grad=True)
        >>> with ag.inference_mode():
        ...     (w * 2).requires_grad
        False
    """

    def __init__(self, mode: bool = True) -> None:
        self.enabled = bool(mode)

    def __enter__(self) -> None:
        self.prev = _state.enabled
        if self.enabled:
            _state.enabled = False

    def _recreate_cm(self) -> inference_mode:
        return type(self)(self.enabled)
