"""Random state for data pipelines: seeded generators and per-batch seeds.

Random transforms draw from :func:`transform_rng`. The DataLoader reseeds it
from its own generator before building each batch, in whichever process
builds it, so a batch is the same with ``num_workers=0`` and with workers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_generator", "seed_transforms", "transform_rng"]

_state = {"rng": np.random.default_rng()}


def as_generator(generator: np.random.Generator | int | None) -> np.random.Generator:
    """A numpy Generator from a Generator, a seed, or None (fresh entropy)."""
    if isinstance(generator, np.random.Generator):
        return generator
    if generator is None or isinstance(generator, (int, np.integer)):
        return np.random.default_rng(generator)
    raise TypeError(f"expected a numpy Generator, an int seed or None, got {type(generator)}")


def transform_rng() -> np.random.Generator:
    """The generator random transforms draw from (see the module docstring)."""
    return _state["rng"]


def seed_transforms(seed: int | None) -> None:
    """Reseed the generator random transforms draw from."""
    _state["rng"] = np.random.default_rng(seed)
