"""Inputs for the recurrent cell kernels, shared by the kit and the backends' own tests.

:func:`rnn_buffers` makes every buffer argument of one kernel for an ``(L, N, H)``
layer with values in each buffer's domain (gate activations in [0, 1], tanh's
in [-1, 1]); ``scale`` > 10 gives saturating pre-activations and activations
that are exactly 0, 1 or -1. :func:`run_rnn` calls the kernel on a backend and
returns every buffer afterwards, so a test also sees what it must not touch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._harness import get, put

ARGS = {
    "lstm_cell": ("xp", "hh", "state", "acts", "tanh_c"),
    "lstm_cell_backward": ("g", "dh_mm", "acts", "state", "tanh_c", "dc", "d_gates"),
    "gru_cell": ("xp", "hh", "b_hh", "state", "gates"),
    "gru_cell_backward": ("g", "dh_mm", "gates", "state", "dh", "d_hh", "d_xp"),
}
"""The buffer arguments of each kernel, in order (then step, batch, hidden)."""

RNN_KERNELS = tuple(ARGS)


def _shape(kernel: str, name: str, steps: int, batch: int, hidden: int) -> tuple[int, ...]:
    lstm = kernel.startswith("lstm")
    cols = {"xp": 4 if lstm else 3, "hh": 4 if lstm else 3, "b_hh": 3, "acts": 4, "gates": 4,
            "tanh_c": 1, "state": 2 if lstm else 1, "g": 2 if lstm else 1, "d_gates": 4,
            "d_hh": 3, "d_xp": 3, "dh_mm": 1, "dc": 1, "dh": 1}[name]
    if name == "b_hh":
        return (cols * hidden,)
    if name in ("hh", "dh_mm", "dc", "dh"):
        return (batch, cols * hidden)
    return (steps + (name == "state"), batch, cols * hidden)


def rnn_buffers(kernel: str, dtype: str, steps: int, batch: int, hidden: int, seed: int = 0,
                scale: float = 3.0) -> dict[str, np.ndarray]:
    """Every buffer argument of ``kernel`` for a layer of ``steps`` steps, as numpy arrays."""
    rng = np.random.default_rng(seed)
    saturate = scale > 10
    out = {}
    for name in ARGS[kernel]:
        shape = _shape(kernel, name, steps, batch, hidden)
        v: np.ndarray
        if name in ("xp", "hh", "b_hh"):
            v = rng.uniform(-scale, scale, shape)
        elif name in ("acts", "gates"):
            v = rng.integers(0, 2, shape) if saturate else rng.uniform(0, 1, shape)
        elif name == "tanh_c":
            v = rng.choice([-1.0, 1.0], shape) if saturate else rng.uniform(-1, 1, shape)
        else:
            v = rng.uniform(-2, 2, shape)
        out[name] = np.asarray(v, dtype=dtype)
    return out


def run_rnn(backend: Any, kernel: str, buffers: dict[str, np.ndarray], step: int, batch: int,
            hidden: int) -> dict[str, np.ndarray]:
    """``backend.<kernel>`` on copies of ``buffers``; every buffer afterwards, by name."""
    bufs = {name: put(backend, a) for name, a in buffers.items()}
    getattr(backend, kernel)(*(bufs[name] for name in ARGS[kernel]), step, batch, hidden)
    return {name: get(backend, buf).reshape(buffers[name].shape) for name, buf in bufs.items()}
