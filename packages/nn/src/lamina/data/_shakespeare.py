"""Tiny Shakespeare as character ids, split 90% train / 10% validation.

The file is Karpathy's ``input.txt`` (about 1.1 MB; see ``../shared/data``'s
README). The vocabulary is every character of the whole file, sorted (65 of
them), so the two splits share one tokenizer. A sample is a window of
``block_size`` ids and the same window shifted by one (the next-character
targets).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._dataset import Dataset
from ._ptb import read_utf8
from ._text import CharTokenizer

__all__ = ["Shakespeare", "default_shakespeare_dir"]

_FILE = "input.txt"
_SPLITS = ("train", "val")


def default_shakespeare_dir() -> Path:
    """``$LAMINA_DATA/shakespeare`` if set, else ``../shared/data/shakespeare`` from the cwd."""
    env = os.environ.get("LAMINA_DATA")
    return (Path(env) if env else Path("..") / "shared" / "data") / "shakespeare"


class Shakespeare(Dataset):
    """Character-level Tiny Shakespeare: ``ds[i]`` is (ids[i:i+T], ids[i+1:i+T+1]).

    Args:
        root: folder holding ``input.txt`` (default :func:`default_shakespeare_dir`),
            or the path of the file itself.
        split: ``"train"`` (the first 90% of the characters) or ``"val"`` (the last 10%).
        block_size: T, the window length.
        train_fraction: the share of the text in the training split.

    Attributes:
        tokenizer: the CharTokenizer over the whole file.
        data: the split's ids, int64 (n,).

    Shape:
        each sample: (x (T,), y (T,)) int64; ``get_batch`` gives (N, T) pairs.
    """

    def __init__(self, root: str | Path | None = None, split: str = "train",
                 block_size: int = 64, train_fraction: float = 0.9) -> None:
        if split not in _SPLITS:
            raise ValueError(f"Shakespeare: split must be one of {_SPLITS}, got {split!r}")
        if block_size < 1:
            raise ValueError(f"Shakespeare: block_size must be >= 1, got {block_size}")
        path = Path(root) if root is not None else default_shakespeare_dir()
        if path.is_dir():
            path = path / _FILE
        if not path.is_file():
            raise FileNotFoundError(f"Shakespeare: {path} not found; pass the folder holding "
                                    f"Tiny Shakespeare's {_FILE} (e.g. ../shared/data/shakespeare)")
        text = read_utf8(path, "Shakespeare")
        self.tokenizer = CharTokenizer(text)
        ids = self.tokenizer.encode(text)
        cut = int(len(ids) * train_fraction)
        self.data = ids[:cut] if split == "train" else ids[cut:]
        self.split, self.block_size = split, block_size
        if len(self.data) <= block_size:
            raise ValueError(f"Shakespeare: the {split} split has {len(self.data)} characters, "
                             f"too few for block_size {block_size}")

    @property
    def vocab_size(self) -> int:
        """Distinct characters (65 for the standard file)."""
        return len(self.tokenizer.vocab)

    def __len__(self) -> int:
        return len(self.data) - self.block_size

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"Shakespeare: index {index} out of range for {len(self)} windows")
        i = index % len(self)
        return self.data[i:i + self.block_size], self.data[i + 1:i + 1 + self.block_size]

    def get_batch(self, batch_size: int, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray]:
        """``batch_size`` windows at random offsets: x, y int64 (N, T)."""
        starts = rng.integers(0, len(self), batch_size)
        offsets = starts[:, None] + np.arange(self.block_size)[None, :]
        return self.data[offsets], self.data[offsets + 1]
