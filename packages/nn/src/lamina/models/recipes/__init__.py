"""Training recipes for ``lamina-train``: a registry that later recipes join.

A recipe is a name, a one-line help, a function that adds its command-line
options to an argparse parser, and a function that runs it from the parsed
arguments and returns the per-epoch history. Add one with
:func:`register_recipe` in a module imported below.
"""

from . import cifar10, mnist, ptb, shakespeare  # noqa: E402,F401  (registers the recipes)
from ._registry import RECIPES, Recipe, register_recipe

__all__ = ["RECIPES", "Recipe", "register_recipe"]
