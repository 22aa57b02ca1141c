"""Errors raised by lamina.nn (ShapeError comes from lamina.ndarray)."""

from __future__ import annotations

from lamina.ndarray import ShapeError

__all__ = ["CheckpointError", "ShapeError", "StateDictError", "check_shape"]


class StateDictError(RuntimeError):
    """A state dict that does not fit a module; lists every bad key at once."""

    def __init__(self, owner: str, missing: list[str], unexpected: list[str],
                 mismatched: list[str]) -> None:
        self.missing_keys = missing
        self.unexpected_keys = unexpected
        self.mismatched = mismatched
        parts = [f"Error(s) in loading state_dict for {owner} (nothing was loaded):"]
        if missing:
            parts.append("  missing keys: " + ", ".join(missing))
        if unexpected:
            parts.append("  unexpected keys: " + ", ".join(unexpected))
        if mismatched:
            parts.append("  size mismatch or bad value:\n    " + "\n    ".join(mismatched))
        super().__init__("\n".join(parts))


class CheckpointError(ValueError):
    """A checkpoint file that is truncated, corrupt or not a Lamina checkpoint."""


def check_shape(layer: str, shape: tuple[int, ...], ndims: tuple[int, ...],
                expected: str, dim: int | None = None, size: int | None = None) -> None:
    """Raise ShapeError unless ``len(shape)`` is in ``ndims`` and ``shape[dim] == size``.

    Args:
        layer: the layer's repr-style name for the message, e.g. ``"Linear(4, 2)"``.
        shape: the input's shape.
        ndims: allowed numbers of dims (empty allows any).
        expected: the expected shape in words, e.g. ``"(*, 4)"``.
        dim: the dim whose size is fixed, if any.
        size: the size it must have.
    """
    ok = not ndims or len(shape) in ndims
    if ok and dim is not None and shape:
        ok = shape[dim] == size
    if not ok or (dim is not None and not shape):
        raise ShapeError(f"{layer}: expected input of shape {expected}, got {tuple(shape)}")
