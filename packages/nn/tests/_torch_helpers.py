"""Helpers for comparing Lamina with PyTorch: copying weights, comparing arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

RTOL, ATOL = 1e-5, 1e-5  # float32 tolerance for values and gradients


def to_numpy(x: Any) -> np.ndarray:
    """A Lamina Tensor, a torch tensor or an array as numpy."""
    if hasattr(x, "detach"):
        x = x.detach()
    return np.asarray(x.numpy())


def copy_weights(torch_module: Any, lamina_module: Any) -> None:
    """Load torch_module's state dict into lamina_module (names must match)."""
    state = {k: v.detach().numpy() for k, v in torch_module.state_dict().items()}
    lamina_module.load_state_dict(state)


def assert_close(actual: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Same shape and values within tolerance."""
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
