"""Training checkpoints: periodic, on Ctrl-C, resumable bit for bit.

A training checkpoint is one :func:`lamina.nn.save` file (a dict) holding
everything a run needs to continue exactly where it stopped:

- ``model``, ``optimizer``, ``scheduler``, ``scaler``: their state dicts (the
  scaler's is empty but for ``--precision fp16``);
- ``rng``: the state of Lamina's generator (weight init, dropout);
- ``position``: the loop's own state: where it is (epoch and batch, or
  iteration), its running totals, the history so far, and the state of its
  own generators (the loader's shuffle order, batch sampling);
- ``recipe``, ``options``: the ``lamina-train`` recipe and its options, which
  a resumed run replays;
- ``run``, ``resumed_from``: the id of the run that wrote it, and of the run
  that run resumed (None for a fresh one);
- ``model_config``: what the recipe's ``model_from_config`` needs to rebuild
  the model (see :func:`lamina.models.load_model`), plus recipe extras (e.g.
  ``vocab``).

Every run, fresh or resumed, has its own id (``mnist-20250612-143005-3fa2c1``:
recipe, start time, random suffix) and writes its periodic and Ctrl-C
checkpoints into its own folder ``DIR/<run id>/``, so runs sharing a
``--checkpoint-dir`` never overwrite or prune each other's files.

Numpy generators are saved through ``bit_generator.state`` and restored in
place, so every object holding a generator sees the restored stream.
"""

from __future__ import annotations

import copy
import secrets
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from lamina import ndarray as nd
from lamina import nn

__all__ = ["FORMAT", "Checkpoints", "TrainingInterrupted", "describe_resume", "new_run_id",
           "read_checkpoint", "rng_state", "set_rng_state"]

FORMAT = "lamina-train-1"


class TrainingInterrupted(Exception):
    """Ctrl-C stopped training after ``path`` was written."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"interrupted; checkpoint written to {path}")
        self.path = path


def rng_state(generator: np.random.Generator) -> dict[str, Any]:
    """A copy of ``generator``'s state (JSON-able: nested dicts of ints and strings)."""
    return copy.deepcopy(dict(generator.bit_generator.state))


def set_rng_state(generator: np.random.Generator, state: dict[str, Any]) -> None:
    """Put ``generator`` back in ``state`` (in place)."""
    generator.bit_generator.state = state


def new_run_id(recipe: str) -> str:
    """A fresh run id: the recipe, the local start time (so ids sort by age) and a
    random suffix (so two runs started in the same second differ)."""
    return f"{recipe}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def describe_position(position: dict[str, Any]) -> str:
    """Where a saved loop stands, in words: ``epoch 3``, ``epoch 2 after batch 4``,
    ``iteration 7``."""
    if "iter" in position:
        return f"iteration {position['iter'] + 1}"
    batch = (position.get("totals") or {}).get("batch", 0)
    return f"epoch {position['epoch']}" + (f" after batch {batch}" if batch else "")


def describe_resume(ckpt: dict[str, Any], path: str | Path) -> str:
    """The line a resumed run prints: which run it continues, from where."""
    run = ckpt.get("run") or "(written before run ids)"
    return f"resuming run {run} at {describe_position(ckpt['position'])} from {path}"


class Checkpoints:
    """The checkpoints of one training run: what they hold, when and where they are written.

    A recipe builds its model, optimizer and scheduler, then calls
    :meth:`attach` (which restores them when resuming and returns the saved
    position). Its loop calls :meth:`check_stop` after every step, so Ctrl-C
    (caught by :meth:`catch_interrupt`) writes a checkpoint at a step
    boundary, and :meth:`periodic` after every epoch (or iteration).

    The run gets a new id (:attr:`run`); its checkpoints go to the folder
    :attr:`directory`, ``root/<run id>``, created with the first one.

    Args:
        recipe: the recipe's name (files are named ``{recipe}-{unit}{n}.safetensors``).
        options: the recipe's options (JSON-able values), replayed on resume.
        root: the folder that holds one folder per run (``--checkpoint-dir``).
        every: a periodic checkpoint every this many epochs or iterations; 0 for none.
        keep: how many of this run's periodic checkpoints to keep; older ones
            of this run are deleted (never another run's).
        resume: a checkpoint read by :func:`read_checkpoint` to continue, or None.
    """

    def __init__(self, recipe: str, options: dict[str, Any], root: str | Path,
                 every: int = 1, keep: int = 3, resume: dict[str, Any] | None = None) -> None:
        if every < 0 or keep < 1:
            raise ValueError(f"Checkpoints: every must be >= 0 and keep >= 1, got "
                             f"{every} and {keep}")
        self.recipe, self.options = recipe, dict(options)
        self.root, self.every, self.keep = Path(root), every, keep
        self.run = new_run_id(recipe)
        self.resume = resume
        self.resumed_from = None if resume is None else resume.get("run")
        self.written: list[Path] = []  # this run's periodic checkpoints, oldest first
        self._claimed = False
        self.position: dict[str, Any] | None = None  # the last one check_stop saw
        self._parts: dict[str, Any] | None = None
        self._stop = False

    @property
    def directory(self) -> Path:
        """This run's folder of periodic and Ctrl-C checkpoints."""
        return self.root / self.run

    def _claim_directory(self) -> Path:
        """Create this run's folder; should another process hold its name, take a new id
        (nothing names this run's folder before its first checkpoint)."""
        while not self._claimed:
            self.root.mkdir(parents=True, exist_ok=True)
            try:
                self.directory.mkdir()
                self._claimed = True
            except FileExistsError:
                self.run = new_run_id(self.recipe)
        return self.directory

    # ------------------------------------------------------------ what is saved
    def attach(self, model: nn.Module, optimizer: Any, scheduler: Any = None,
               model_config: dict[str, Any] | None = None, scaler: Any = None, **extra: Any
               ) -> dict[str, Any] | None:
        """Register what checkpoints save; when resuming, restore it.

        Call it once the model, optimizer and scheduler exist (and after any
        random initialisation), before training.

        Args:
            model, optimizer, scheduler: saved and restored by state dict.
            scaler: the run's GradScaler (``--precision fp16``), likewise.
            model_config: keyword arguments of the recipe's ``model_from_config``.
            extra: more JSON-able entries to store (e.g. a vocabulary).

        Returns:
            The saved ``position`` when resuming (the loop's own state, as it
            passed it to :meth:`save`), else None.
        """
        self._parts = {"model": model, "optimizer": optimizer, "scheduler": scheduler,
                       "scaler": scaler, "model_config": model_config or {}, "extra": extra}
        if self.resume is None:
            return None
        saved = self.resume
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        if scheduler is not None:
            scheduler.load_state_dict(saved["scheduler"])
        if scaler is not None and saved.get("scaler"):
            scaler.load_state_dict(saved["scaler"])
        set_rng_state(nd.generator(), saved["rng"])
        self.position = saved["position"]
        return self.position

    def state(self, position: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint object for the loop's ``position``."""
        if self._parts is None:
            raise RuntimeError("Checkpoints.state: attach() the model and optimizer first")
        parts = self._parts
        return {"format": FORMAT, "recipe": self.recipe, "options": self.options,
                "run": self.run, "resumed_from": self.resumed_from,
                "model_config": parts["model_config"], **parts["extra"],
                "model": parts["model"].state_dict(),
                "optimizer": parts["optimizer"].state_dict(),
                "scheduler": None if parts["scheduler"] is None
                else parts["scheduler"].state_dict(),
                "scaler": None if parts["scaler"] is None else parts["scaler"].state_dict(),
                "rng": rng_state(nd.generator()), "position": position}

    def save(self, path: str | Path, position: dict[str, Any]) -> Path:
        """Write the checkpoint for ``position`` to ``path`` (atomically, see :func:`nn.save`)."""
        path = Path(path)
        nn.save(self.state(position), path)
        return path

    def _save_in_run(self, name: str, position: dict[str, Any]) -> Path:
        """Write the checkpoint ``name`` into this run's folder."""
        return self.save(self._claim_directory() / name, position)

    # ------------------------------------------------------------ when it is saved
    def periodic(self, count: int, unit: str, position: dict[str, Any]) -> Path | None:
        """After ``count`` epochs or iterations (``unit``): save if ``count`` is a
        multiple of ``every``, then keep only this run's newest ``keep`` files."""
        if not self.every or count % self.every:
            return None
        path = self._save_in_run(f"{self.recipe}-{unit}{count:07d}.safetensors", position)
        self.written.append(path)
        # only what this run wrote: a file of another run is never deleted
        while len(self.written) > self.keep:
            self.written.pop(0).unlink(missing_ok=True)
        return path

    def check_stop(self, position: dict[str, Any]) -> None:
        """After a step: if Ctrl-C was pressed, save ``position`` and raise
        :class:`TrainingInterrupted`. The loop's last call, at the end of
        training, gives the position that ``--save`` writes."""
        self.position = position
        if self._stop:
            raise TrainingInterrupted(
                self._save_in_run(f"{self.recipe}-interrupted.safetensors", position))

    @contextmanager
    def catch_interrupt(self) -> Iterator[None]:
        """Within the block, Ctrl-C (SIGINT) asks the loop to checkpoint and stop at
        the next step boundary. Before :meth:`attach` there is nothing to save,
        and a second Ctrl-C means "now": both raise KeyboardInterrupt at once."""
        def handler(signum: int, frame: FrameType | None) -> None:
            if self._parts is None or self._stop:
                raise KeyboardInterrupt
            self._stop = True
            print("\nCtrl-C: writing a checkpoint after this step (Ctrl-C again: quit "
                  "without one)", file=sys.stderr, flush=True)

        if threading.current_thread() is not threading.main_thread():
            yield  # only the main thread may handle signals; Ctrl-C stays as it is
            return
        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def read_checkpoint(path: str | Path, device: Any = None) -> dict[str, Any]:
    """A training checkpoint written by ``lamina-train``, checked for its format.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is a checkpoint of something else.
    """
    ckpt = nn.load(path, device=device)
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise ValueError(f"{path} is not a lamina-train checkpoint (no {FORMAT!r} format "
                         f"entry); checkpoints of --checkpoint-dir, --save and Ctrl-C are")
    return ckpt

