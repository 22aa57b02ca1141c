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
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], list[dict[str, Any]]]


RECIPES: dict[str, Recipe] = {}


def register_recipe(recipe: Recipe) -> Recipe:
    """Make ``recipe`` a ``lamina-train`` subcommand."""
    if recipe.name in RECIPES:
        raise ValueError(f"register_recipe: a recipe named {recipe.name!r} already exists")
    RECIPES[recipe.name] = recipe
    return recipe
