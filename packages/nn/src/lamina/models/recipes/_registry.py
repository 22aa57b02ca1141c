"""The recipe registry."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["RECIPES", "Recipe", "register_recipe"]


@dataclass(frozen=True)
class Recipe:
    """One ``lamina-train`` subcommand.

    Attributes:
        name: the subcommand, e.g. ``"mnist"``.
        help: one line for ``lamina-train --help``.
        add_arguments: adds the recipe's own options to its subparser.
        run: trains from the parsed arguments; returns one record per epoch.
            ``args.checkpoints`` (a :class:`~lamina.models._checkpoint.Checkpoints`,
            or None) is what it attaches its model, optimizer and scheduler to.
        model_from_config: ``(model_config, device) -> Module``, the model a
            checkpoint's ``model_config`` describes (used by ``load_model``).
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], list[dict[str, Any]]]
    model_from_config: Callable[[dict[str, Any], Any], Any] | None = None


RECIPES: dict[str, Recipe] = {}


def register_recipe(recipe: Recipe) -> Recipe:
    """Make ``recipe`` a ``lamina-train`` subcommand."""
    if recipe.name in RECIPES:
        raise ValueError(f"register_recipe: a recipe named {recipe.name!r} already exists")
    RECIPES[recipe.name] = recipe
    return recipe
