"""``lamina-train``: train a reference recipe with a progress bar, a log and a plot.

Example:
    lamina-train mnist --model mlp --epochs 3 --log mnist.csv --plot mnist.png
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ._reporting import format_record, summary_line, write_log, write_plot
from .recipes import RECIPES

__all__ = ["build_parser", "main", "write_log", "write_plot"]


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default=None,
                        help="device name: numpy, cpu, cuda, cuda:1 (default: LAMINA_DEVICE "
                             "or the best available)")
    parser.add_argument("--epochs", type=int, default=None, help="training epochs")
    parser.add_argument("--batch-size", type=int, default=None, help="training batch size")
    parser.add_argument("--lr", type=float, default=None, help="(peak) learning rate")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--num-workers", type=int, default=0,
                        help="DataLoader worker processes (default 0)")
    parser.add_argument("--log", default=None, metavar="FILE",
                        help="write per-epoch metrics to FILE (.csv or .json)")
    parser.add_argument("--plot", default=None, metavar="FILE.png",
                        help="plot loss and accuracy curves (needs matplotlib)")
    parser.add_argument("--save", default=None, metavar="FILE.safetensors",
                        help="save the model and optimizer state after training")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--nproc", type=int, default=1,
                        help="train data-parallel with N MPI processes (needs "
                             "lamina-nn[distributed]; default 1)")


def build_parser() -> argparse.ArgumentParser:
    """The parser with one subcommand per registered recipe."""
    parser = argparse.ArgumentParser(prog="lamina-train",
                                     description="Train Lamina's reference recipes.")
    sub = parser.add_subparsers(dest="recipe", required=True, metavar="RECIPE")
    for recipe in RECIPES.values():
        p = sub.add_parser(recipe.name, help=recipe.help, description=recipe.help)
        _add_common(p)
        recipe.add_arguments(p)
    return parser


def _print_epoch(record: dict[str, Any]) -> None:
    print(format_record(record), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lamina-train`` console script."""
    args = build_parser().parse_args(argv)
    if args.nproc > 1:
        from ._data_parallel import launch
        return launch(sys.argv[1:] if argv is None else argv, args.nproc)
    args.on_epoch = _print_epoch
    for name in ("epochs", "batch_size", "nproc"):
        value = getattr(args, name)
        if value is not None and value < 1:
            print(f"lamina-train: --{name.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    try:
        history = RECIPES[args.recipe].run(args)
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"lamina-train {args.recipe}: error: {exc}", file=sys.stderr)
        return 1
    if history:
        print(summary_line(history))
    if args.log:
        write_log(history, args.log)
    if args.plot and not write_plot(history, args.plot, f"lamina-train {args.recipe}"):
        print("lamina-train: --plot needs matplotlib (pip install 'lamina-nn[plot]'); "
              "skipped the plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
