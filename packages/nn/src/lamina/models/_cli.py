"""``lamina-train``: train a reference recipe with a progress bar, a log, a plot and
checkpoints that survive Ctrl-C.

Everything the run will write is checked before training starts. A checkpoint
is written every ``--checkpoint-every`` epochs (keeping the newest
``--keep-checkpoints``) and on Ctrl-C (exit status 130); ``--resume`` continues
from any of them bit for bit.

Example:
    lamina-train mnist --model mlp --epochs 3 --log mnist.csv --plot mnist.png
    lamina-train mnist --resume lamina-checkpoints/mnist-interrupted.safetensors
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lamina.nn import CheckpointError

from ._checkpoint import Checkpoints, TrainingInterrupted, read_checkpoint
from ._reporting import format_record, print_line, summary_line, write_log, write_plot
from .recipes import RECIPES

__all__ = ["DEFAULT_CHECKPOINT_DIR", "RUN_OPTIONS", "HelpFormatter", "build_parser", "main",
           "write_log", "write_plot"]

DEFAULT_CHECKPOINT_DIR = "lamina-checkpoints"

# Options about how a run executes and reports, not what it trains: a resumed
# run takes them from its own command line, every other option from the
# checkpoint (which stores them as the recipe's options). A new option of this
# kind is added in _add_common and named here.
RUN_OPTIONS = frozenset({"device", "num_workers", "log", "plot", "save", "no_progress",
                         "checkpoint_dir", "checkpoint_every", "keep_checkpoints", "resume",
                         "nproc"})
_NOT_OPTIONS = frozenset({"recipe", "on_epoch", "checkpoints"})


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows each option's default after its help (unless it has none or the help
    already says it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("(default" in text or not action.option_strings
                or action.default is None or action.default is False
                or action.default == argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)".lstrip()


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default=None,
                        help="device name: numpy, cpu, cuda, cuda:1 (default: LAMINA_DEVICE "
                             "or the best available)")
    parser.add_argument("--epochs", type=int, default=None, help="training epochs")
    parser.add_argument("--batch-size", type=int, default=None, help="training batch size")
    parser.add_argument("--lr", type=float, default=None, help="(peak) learning rate")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--num-workers", type=int, default=0,
                        help="DataLoader worker processes")
    parser.add_argument("--log", default=None, metavar="FILE",
                        help="write per-epoch metrics to FILE (.csv or .json)")
    parser.add_argument("--plot", default=None, metavar="FILE.png",
                        help="plot loss and accuracy curves (needs matplotlib)")
    parser.add_argument("--save", default=None, metavar="FILE.safetensors",
                        help="after training, save a checkpoint (model, optimizer, options: "
                             "what load_model and --resume read)")
    parser.add_argument("--checkpoint-dir", default=DEFAULT_CHECKPOINT_DIR, metavar="DIR",
                        help="folder of periodic and Ctrl-C checkpoints")
    parser.add_argument("--checkpoint-every", type=int, default=1, metavar="N",
                        help="write a checkpoint every N epochs (iterations for "
                             "shakespeare); 0 for none")
    parser.add_argument("--keep-checkpoints", type=int, default=3, metavar="K",
                        help="keep the newest K periodic checkpoints of the recipe in DIR")
    parser.add_argument("--resume", default=None, metavar="CHECKPOINT",
                        help="continue the run a checkpoint was written by, bit for bit, "
                             "with its options")
    parser.add_argument("--no-progress", action="store_true",
                        help="hide the progress bar (it is hidden anyway when stderr is "
                             "not a terminal)")
    parser.add_argument("--nproc", type=int, default=1, metavar="N",
                        help="train data-parallel with N MPI processes (needs "
                             "lamina-nn[distributed])")


def build_parser() -> argparse.ArgumentParser:
    """The parser with one subcommand per registered recipe."""
    parser = argparse.ArgumentParser(prog="lamina-train", formatter_class=HelpFormatter,
                                     description="Train Lamina's reference recipes.")
    sub = parser.add_subparsers(dest="recipe", required=True, metavar="RECIPE")
    for recipe in RECIPES.values():
        p = sub.add_parser(recipe.name, help=recipe.help, description=recipe.help,
                           formatter_class=HelpFormatter)
        _add_common(p)
        recipe.add_arguments(p)
    return parser


def _print_epoch(record: dict[str, Any]) -> None:
    print_line(format_record(record))


def _check_arguments(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, found before any training (None: nothing)."""
    for name in ("epochs", "batch_size", "keep_checkpoints", "nproc"):
        value = getattr(args, name)
        if value is not None and value < 1:
            return f"--{name.replace('_', '-')} must be >= 1, got {value}"
    if args.checkpoint_every < 0:
        return f"--checkpoint-every must be >= 0, got {args.checkpoint_every}"
    for option in ("save", "log", "plot"):
        value = getattr(args, option)
        if value is None:
            continue
        folder = Path(value).parent
        if Path(value).is_dir():
            return f"--{option} {value} is a folder, not a file"
        if not folder.is_dir():
            return f"--{option} {value}: the folder {folder} does not exist"
        if not os.access(folder, os.W_OK):
            return f"--{option} {value}: the folder {folder} is not writable"
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return "--plot needs matplotlib: pip install 'lamina-nn[plot]'"
    # the folder is created with the first checkpoint; here, that it can be
    folder = Path(args.checkpoint_dir)
    existing = next(p for p in (folder, *folder.parents) if p.exists() or p == Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        return (f"--checkpoint-dir {args.checkpoint_dir}: {existing} is not a writable "
                f"folder")
    return None


def _replay(args: argparse.Namespace, ckpt: dict[str, Any]) -> str | None:
    """Set ``args``' recipe options to the checkpoint's; an option given on the
    command line that differs from the checkpoint's is an error (returned)."""
    if ckpt["recipe"] != args.recipe:
        return f"--resume {args.resume} is a {ckpt['recipe']} checkpoint, not {args.recipe}"
    defaults = vars(build_parser().parse_args([args.recipe]))
    for key, saved in ckpt["options"].items():
        given = getattr(args, key, None)
        if given != defaults.get(key) and given != saved:
            return (f"--{key.replace('_', '-')} {given} differs from the checkpoint's {saved}; "
                    f"a resumed run keeps the options it started with")
        setattr(args, key, saved)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lamina-train`` console script.

    Exit status: 0 done, 1 training failed, 2 bad options or unwritable outputs
    (found before training), 130 stopped by Ctrl-C (after writing a checkpoint).
    """
    args = build_parser().parse_args(argv)
    if args.nproc > 1:
        from ._data_parallel import launch
        return launch(sys.argv[1:] if argv is None else argv, args.nproc)
    args.on_epoch = _print_epoch
    name = f"lamina-train {args.recipe}"
    problem = _check_arguments(args)
    resume = None
    if problem is None and args.resume:
        try:
            resume = read_checkpoint(args.resume, args.device)
            problem = _replay(args, resume)
        except (FileNotFoundError, ValueError, CheckpointError) as exc:
            problem = f"--resume: {exc}"
    if problem is not None:
        print(f"{name}: error: {problem}", file=sys.stderr)
        return 2
    options = {k: v for k, v in vars(args).items()
               if k not in RUN_OPTIONS and k not in _NOT_OPTIONS}
    args.checkpoints = Checkpoints(args.recipe, options, args.checkpoint_dir,
                                   args.checkpoint_every, args.keep_checkpoints, resume)
    try:
        with args.checkpoints.catch_interrupt():
            history = RECIPES[args.recipe].run(args)
            if args.save:
                args.checkpoints.save(args.save, args.checkpoints.position or {})
    except TrainingInterrupted as stop:
        print(f"{name}: interrupted; checkpoint written to {stop.path}\n"
              f"continue with: {name} --resume {stop.path}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # before training started, or a second Ctrl-C
        print(f"{name}: interrupted; no checkpoint written (periodic ones, if any, are in "
              f"{args.checkpoint_dir})", file=sys.stderr)
        return 130
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 1
    if history:
        print_line(summary_line(history))
    if args.log:
        write_log(history, args.log)
    if args.plot:
        write_plot(history, args.plot, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
