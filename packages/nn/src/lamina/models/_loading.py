"""``load_model``: the model of a ``lamina-train`` checkpoint, rebuilt by its recipe.

The recipe a checkpoint names is looked up here, above the recipes, because
the recipes write their checkpoints with :mod:`._checkpoint`: the checkpoint
format itself never depends on them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lamina import nn

from ._checkpoint import read_checkpoint
from .recipes import RECIPES

__all__ = ["load_model", "model_from_checkpoint"]


def load_model(path: str | Path, device: Any = None) -> nn.Module:
    """Rebuild the model of a ``lamina-train`` checkpoint file and load its weights.

    The checkpoint's ``recipe`` names the recipe whose ``model_from_config``
    builds the model from ``model_config``; the model is returned in eval mode.
    """
    return model_from_checkpoint(read_checkpoint(path, device), device)


def model_from_checkpoint(ckpt: dict[str, Any], device: Any = None) -> nn.Module:
    """:func:`load_model` for a checkpoint already read by :func:`read_checkpoint`."""
    recipe = RECIPES.get(ckpt["recipe"])
    if recipe is None or recipe.model_from_config is None:
        raise ValueError(f"load_model: the checkpoint was written by recipe "
                         f"{ckpt['recipe']!r}, which this lamina-nn cannot rebuild")
    model: nn.Module = recipe.model_from_config(ckpt["model_config"], device)
    model.load_state_dict(ckpt["model"])
    return model.eval()
