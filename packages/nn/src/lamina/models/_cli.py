"""``lamina-train``: train a reference recipe with a progress bar, a log, a plot and
checkpoints that survive Ctrl-C.

Every option's value and everything the run will write are checked before
training starts. Each run has its own id and checkpoint folder
``--checkpoint-dir/<run id>``: a checkpoint is written there every
``--checkpoint-every`` epochs (keeping the run's newest ``--keep-checkpoints``)
and on Ctrl-C (exit status 130); ``--resume`` continues from any of them bit
for bit, as a new run that names the run it continues.

Example:
    lamina-train mnist --model mlp --epochs 3 --log mnist.csv --plot mnist.png
    lamina-train mnist --resume \
        lamina-checkpoints/mnist-20250612-143005-3fa2c1/mnist-interrupted.safetensors
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lamina.nn import CheckpointError

from ._argtypes import HelpFormatter, check_value, device, integer, real
from ._checkpoint import Checkpoints, TrainingInterrupted, describe_resume, read_checkpoint
from ._data_parallel import launch
from ._precision import PRECISIONS, Precision
from ._reporting import format_record, print_line, summary_line, write_log, write_plot
from .recipes import RECIPES, Recipe

__all__ = ["DEFAULT_CHECKPOINT_DIR", "RUN_OPTIONS", "HelpFormatter", "build_parser", "main",
           "write_log", "write_plot"]

DEFAULT_CHECKPOINT_DIR = "lamina-checkpoints"

# Options about how a run executes and reports, not what it trains: a resumed
# run takes them from its own command line (never from the checkpoint, so a
# checkpoint cannot send output elsewhere), every other option from the
# checkpoint (which stores them as the recipe's options). A new option of this
# kind is added in _add_common and named here.
RUN_OPTIONS = frozenset({"device", "num_workers", "log", "plot", "save", "no_progress",
                         "checkpoint_dir", "checkpoint_every", "keep_checkpoints", "resume",
                         "nproc", "compile"})
_NOT_OPTIONS = frozenset({"recipe", "on_epoch", "checkpoints"})


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", type=device, default=None,
                        help="device name: numpy, cpu, cuda, cuda:1 (default: LAMINA_DEVICE "
                             "or the best available)")
    parser.add_argument("--epochs", type=integer(1), default=None, help="training epochs")
    parser.add_argument("--batch-size", type=integer(1), default=None,
                        help="training batch size")
    parser.add_argument("--lr", type=real(0.0), default=None, help="(peak) learning rate")
    parser.add_argument("--seed", type=integer(0), default=0, help="random seed")
    parser.add_argument("--num-workers", type=integer(0), default=0,
                        help="DataLoader worker processes")
    parser.add_argument("--log", default=None, metavar="FILE",
                        help="write per-epoch metrics to FILE (.csv or .json)")
    parser.add_argument("--plot", default=None, metavar="FILE.png",
                        help="plot loss and accuracy curves (needs matplotlib)")
    parser.add_argument("--save", default=None, metavar="FILE.safetensors",
                        help="after training, save a checkpoint (model, optimizer, options: "
                             "what load_model and --resume read)")
    parser.add_argument("--checkpoint-dir", default=DEFAULT_CHECKPOINT_DIR, metavar="DIR",
                        help="folder of the runs' checkpoint folders (DIR/RUN-ID/)")
    parser.add_argument("--checkpoint-every", type=integer(0), default=1, metavar="N",
                        help="write a checkpoint every N epochs (iterations for "
                             "shakespeare); 0 for none")
    parser.add_argument("--keep-checkpoints", type=integer(1), default=3, metavar="K",
                        help="keep the newest K periodic checkpoints of the run")
    parser.add_argument("--resume", default=None, metavar="CHECKPOINT",
                        help="continue the run a checkpoint was written by, bit for bit, "
                             "with its options")
    parser.add_argument("--no-progress", action="store_true",
                        help="hide the progress bar (it is hidden anyway when stderr is "
                             "not a terminal)")
    parser.add_argument("--nproc", type=integer(1), default=1, metavar="N",
                        help="train data-parallel with N MPI processes (needs "
                             "lamina-nn[distributed])")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="fp32; bf16: forward passes under autocast(bfloat16); fp16: "
                             "under autocast(float16), with loss scaling (GradScaler)")
    parser.add_argument("--compile", action="store_true",
                        help="capture the model's forward and backward once per batch "
                             "shape and replay them (lamina.autograd.compile); the same "
                             "results, less Python per step")


def _recipe_parser(recipe: Recipe, prog: str) -> argparse.ArgumentParser:
    """One recipe's parser on its own (the options and their checks of its subcommand)."""
    p = argparse.ArgumentParser(prog=prog, description=recipe.help,
                                formatter_class=HelpFormatter)
    _add_common(p)
    recipe.add_arguments(p)
    return p


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
    """What is wrong with the output locations, found before any training (None:
    nothing). Each option's own value was checked by argparse."""
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
    try:
        Precision(args.precision, args.device)
    except ValueError as exc:
        return str(exc)
    # the folder is created with the first checkpoint; here, that it can be
    folder = Path(args.checkpoint_dir)
    existing = next(p for p in (folder, *folder.parents) if p.exists() or p == Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        return (f"--checkpoint-dir {args.checkpoint_dir}: {existing} is not a writable "
                f"folder")
    return None


def _replay(args: argparse.Namespace, ckpt: dict[str, Any]) -> str | None:
    """Set ``args``' recipe options to the checkpoint's; an option given on the
    command line that differs from the checkpoint's, or a recorded value the
    option does not accept, is an error (returned). Run options (output
    locations among them) stay as the command line gives them."""
    if ckpt["recipe"] != args.recipe:
        return f"--resume {args.resume} is a {ckpt['recipe']} checkpoint, not {args.recipe}"
    parser = _recipe_parser(RECIPES[args.recipe], f"lamina-train {args.recipe}")
    actions = {a.dest: a for a in parser._actions}
    defaults = vars(parser.parse_args([]))
    for key, saved in ckpt["options"].items():
        flag = f"--{key.replace('_', '-')}"
        if key in RUN_OPTIONS or key in _NOT_OPTIONS:
            continue  # never written by lamina-train; the command line decides these
        if key not in actions:
            return (f"the checkpoint records an option {flag} that lamina-train "
                    f"{args.recipe} does not have; it was written by another version")
        problem = check_value(actions[key], saved)
        if problem is not None:
            return f"the checkpoint's {flag} {saved!r} is not valid: {problem}"
        given = getattr(args, key, None)
        if given != defaults.get(key) and given != saved:
            return (f"{flag} {given} differs from the checkpoint's {saved}; "
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
    if resume is not None:
        print_line(f"{name}: {describe_resume(resume, args.resume)}")
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
              f"{args.checkpoints.directory})", file=sys.stderr)
        return 130
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 1
    if history:
        print_line(summary_line(history))
    if args.checkpoints.written:
        print_line(f"checkpoints of run {args.checkpoints.run}: {args.checkpoints.directory}")
    if args.log:
        write_log(history, args.log)
    if args.plot:
        write_plot(history, args.plot, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
