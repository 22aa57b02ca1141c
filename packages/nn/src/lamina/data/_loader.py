"""DataLoader: batches from a map-style dataset, optionally built in worker processes.

Workers build numpy batches (picklable, device-free); the main process turns
them into Tensors. Each batch gets its own seed for random transforms, drawn
from the loader's generator in the main process, so every batch is identical
whatever ``num_workers`` is, and batches arrive in sampler order. A worker
that dies mid-epoch raises :class:`WorkerError` in the main process (see
``_workers``).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ._dataset import Dataset
from ._random import as_generator, seed_transforms
from ._workers import WorkerError, parallel_batches

__all__ = ["DataLoader", "WorkerError", "default_collate", "to_tensors"]


def default_collate(samples: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, keeping the samples' structure.

    Arrays and numbers are stacked along a new first axis; tuples, lists and
    dicts are collated field by field.

    Args:
        samples: B samples of the same structure.

    Returns:
        The batch: each array leaf of shape (B, ...).

    Example:
        >>> import numpy as np
        >>> x, y = default_collate([(np.zeros(3), 1), (np.ones(3), 2)])
        >>> x.shape, y.tolist()
        ((2, 3), [1, 2])
    """
    first = samples[0]
    if isinstance(first, Mapping):
        return {key: default_collate([s[key] for s in samples]) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate: samples have different numbers of fields")
        return type(first)(default_collate(list(f)) for f in zip(*samples))
    if hasattr(first, "numpy") and not isinstance(first, np.ndarray):
        samples = [s.numpy() for s in samples]
    return np.stack([np.asarray(s) for s in samples])


def to_tensors(batch: Any, device: Any = None) -> Any:
    """Turn the numpy leaves of a batch into Tensors on ``device``.

    Floating arrays become float32 (float64 stays float64); integer and
    boolean arrays become int64, Lamina's index and label dtype.
    """
    from lamina import autograd

    if isinstance(batch, Mapping):
        return {k: to_tensors(v, device) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_tensors(v, device) for v in batch)
    if isinstance(batch, np.ndarray):
        if batch.dtype.kind == "f":
            dtype = "float64" if batch.dtype == np.float64 else "float32"
        elif batch.dtype.kind in "iub":
            dtype = "int64"
        else:
            return batch
        array = np.ascontiguousarray(batch, dtype=dtype)
        return autograd.tensor(array, dtype=dtype, device=device)
    return batch


def _build_batch(dataset: Dataset, collate_fn: Callable[[list[Any]], Any],
                 indices: list[int], seed: int) -> Any:
    seed_transforms(seed)
    getitems = getattr(dataset, "__getitems__", None)
    samples = getitems(indices) if getitems is not None else [dataset[i] for i in indices]
    return collate_fn(list(samples))


class DataLoader:
    """Iterate over a dataset in batches.

    Args:
        dataset: a map-style dataset (``__len__`` and ``__getitem__``).
        batch_size: samples per batch B.
        shuffle: draw a new permutation of the dataset every epoch.
        drop_last: drop the last batch when it has fewer than B samples.
        collate_fn: turns a list of samples into a batch (numpy leaves);
            defaults to :func:`default_collate`.
        num_workers: worker processes building batches; 0 builds them in the
            main process. The result is the same batches in the same order.
        generator: a numpy Generator or an int seed for the shuffle order and
            the per-batch transform seeds; None draws fresh entropy.
        device: device of the Tensors handed out (default device when None).
        as_tensor: hand out Tensors (True) or the numpy batches (False).
        prefetch_factor: batches in flight per worker.
        multiprocessing_context: ``"fork"``, ``"spawn"`` or ``"forkserver"``;
            defaults to fork where the platform has it.
        timeout: with workers, seconds to wait for one batch before raising
            :class:`WorkerError` (0 waits as long as it takes). A worker that
            dies raises at once, whatever the timeout.

    Yields:
        Batches with the dataset's structure, each leaf of shape (B, ...).

    Example:
        >>> import numpy as np
        >>> from lamina.data import TensorDataset
        >>> ds = TensorDataset(np.arange(10).reshape(5, 2), np.arange(5))
        >>> [y.tolist() for _, y in DataLoader(ds, batch_size=2, as_tensor=False)]
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False, *,
                 drop_last: bool = False, collate_fn: Callable[[list[Any]], Any] | None = None,
                 num_workers: int = 0, generator: np.random.Generator | int | None = None,
                 device: Any = None, as_tensor: bool = True, prefetch_factor: int = 2,
                 multiprocessing_context: str | None = None, timeout: float = 0) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be an int >= 0, got {num_workers!r}")
        if prefetch_factor < 1:
            raise ValueError(f"DataLoader: prefetch_factor must be >= 1, got {prefetch_factor}")
        if not timeout >= 0:
            raise ValueError(f"DataLoader: timeout must be >= 0, got {timeout!r}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.collate_fn = collate_fn or default_collate
        self.num_workers = num_workers
        self.generator = as_generator(generator)
        self.device = device
        self.as_tensor = as_tensor
        self.prefetch_factor = prefetch_factor
        self.multiprocessing_context = multiprocessing_context
        self.timeout = timeout

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _plan(self) -> list[tuple[list[int], int]]:
        n = len(self.dataset)
        order = self.generator.permutation(n) if self.shuffle else np.arange(n)
        batches = [order[i:i + self.batch_size].tolist() for i in range(0, n, self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        seeds = self.generator.integers(0, 2**63 - 1, size=len(batches)).tolist()
        return list(zip(batches, seeds))

    def __iter__(self) -> Iterator[Any]:
        plan = self._plan()
        batches = self._serial(plan) if self.num_workers == 0 else self._parallel(plan)
        for batch in batches:
            yield to_tensors(batch, self.device) if self.as_tensor else batch

    def _serial(self, plan: list[tuple[list[int], int]]) -> Iterator[Any]:
        for indices, seed in plan:
            yield _build_batch(self.dataset, self.collate_fn, indices, seed)

    def _parallel(self, plan: list[tuple[list[int], int]]) -> Iterator[Any]:
        method = self.multiprocessing_context
        if method is None:
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        return parallel_batches(ctx, _build_batch, self.dataset, self.collate_fn, plan,
                                self.num_workers, self.prefetch_factor, self.timeout)
