"""Map-style datasets: the Dataset protocol, TensorDataset, Subset, random_split.

Datasets hand out numpy arrays (or tuples of them). They stay numpy so that
DataLoader worker processes can build batches without touching a device; the
loader turns finished batches into Tensors in the main process.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._random import as_generator

__all__ = ["ConcatDataset", "Dataset", "Subset", "TensorDataset", "random_split"]


class Dataset:
    """A map-style dataset: ``len(ds)`` samples, ``ds[i]`` returns sample ``i``.

    Subclasses implement ``__getitem__`` and ``__len__``. They may also
    implement ``__getitems__(indices)`` returning a list of samples, which the
    DataLoader calls instead of one ``__getitem__`` per index when present.
    """

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} must implement __len__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


def _as_numpy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "numpy") and callable(value.numpy):
        return np.asarray(value.numpy())
    return np.asarray(value)


class TensorDataset(Dataset):
    """Samples are the rows of equally long arrays.

    Args:
        *arrays: numpy arrays or Tensors, each of shape (N, ...). Tensors are
            copied to numpy once, here.

    Example:
        >>> import numpy as np
        >>> ds = TensorDataset(np.zeros((4, 2)), np.arange(4))
        >>> len(ds), ds[1][1]
        (4, np.int64(1))
    """

    def __init__(self, *arrays: Any) -> None:
        if not arrays:
            raise ValueError("TensorDataset: needs at least one array")
        self.arrays = tuple(_as_numpy(a) for a in arrays)
        sizes = [a.shape[0] if a.ndim else None for a in self.arrays]
        if None in sizes or len(set(sizes)) != 1:
            shapes = [a.shape for a in self.arrays]
            raise ValueError(f"TensorDataset: arrays must share their first dimension, "
                             f"got shapes {shapes}")

    def __getitem__(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(a[index] for a in self.arrays)

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[np.ndarray, ...]]:
        idx = np.asarray(indices, dtype=np.int64)
        columns = [a[idx] for a in self.arrays]
        return [tuple(c[i] for c in columns) for i in range(len(idx))]

    def __len__(self) -> int:
        return int(self.arrays[0].shape[0])


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    Args:
        dataset: the dataset to select from.
        indices: positions in ``dataset``.
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        picked = [self.indices[i] for i in indices]
        if hasattr(self.dataset, "__getitems__"):
            return list(self.dataset.__getitems__(picked))
        return [self.dataset[i] for i in picked]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after another.

    Args:
        datasets: the datasets, in order.
    """

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"ConcatDataset: index {index} out of range for {len(self)} samples")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1]) if self.cumulative_sizes else 0


def random_split(dataset: Dataset, lengths: Sequence[int | float],
                 generator: np.random.Generator | int | None = None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets.

    Args:
        dataset: the dataset to split.
        lengths: sizes of the parts, or fractions summing to 1 (remainders go
            to the first parts round-robin, as in PyTorch).
        generator: a numpy Generator or a seed, for a reproducible split.

    Returns:
        One Subset per entry of ``lengths``.

    Example:
        >>> parts = random_split(TensorDataset(np.arange(10)), [0.8, 0.2], generator=0)
        >>> [len(p) for p in parts]
        [8, 2]
    """
    n = len(dataset)
    sizes = _split_sizes(n, lengths)
    order = as_generator(generator).permutation(n)
    parts, start = [], 0
    for size in sizes:
        parts.append(Subset(dataset, order[start:start + size].tolist()))
        start += size
    return parts


def _split_sizes(n: int, lengths: Sequence[int | float]) -> list[int]:
    if lengths and all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1) < 1e-6:
        if any(x < 0 for x in lengths):
            raise ValueError(f"random_split: fractions must be >= 0, got {list(lengths)}")
        sizes = [int(np.floor(n * x)) for x in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        return sizes
    sizes = [int(x) for x in lengths]
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise ValueError(f"random_split: lengths {list(lengths)} must be non-negative and sum "
                         f"to the dataset's length {n} (or be fractions summing to 1)")
    return sizes
