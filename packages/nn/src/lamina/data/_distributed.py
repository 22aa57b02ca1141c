"""DistributedSampler: each rank's share of a dataset's indices, PyTorch's rules."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ._dataset import Dataset


class DistributedSampler:
    """Splits a dataset's indices into ``num_replicas`` equal, disjoint shares.

    Every rank gets ``ceil(len / num_replicas)`` indices (``drop_last=False``:
    the list is padded by repeating its start, so every rank runs the same
    number of steps) or ``floor`` of it (``drop_last=True``: the tail is
    dropped). With ``shuffle`` the order is a permutation seeded by
    ``seed + epoch``, the same on every rank; call ``set_epoch`` at the start
    of each epoch for a new one. The split is PyTorch's (rank r takes
    positions r, r + N, r + 2N, ...); the shuffled order comes from numpy, so
    it differs from PyTorch's.

    Args:
        dataset: any sized dataset.
        num_replicas: number of ranks (default: the process group's world size).
        rank: this rank (default: the process group's rank).
        shuffle: permute the indices each epoch.
        seed: base seed of the permutation; identical on every rank.
        drop_last: drop the tail instead of padding.

    Example:
        >>> s = DistributedSampler(list(range(5)), num_replicas=2, rank=1, shuffle=False)
        >>> list(s), len(s)
        ([1, 3, 0], 3)

    Use it by giving each epoch's share to a loader:
    ``DataLoader(Subset(ds, list(sampler)), batch_size=B // N)``.
    """

    def __init__(self, dataset: Dataset | list[object], num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            import lamina.distributed as dist
            if not dist.is_initialized():
                raise RuntimeError("DistributedSampler: pass num_replicas and rank, or call "
                                   "lamina.distributed.init_process_group() first")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be >= 1, got {num_replicas}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank}, rank should be in the "
                             f"interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch that seeds the next permutation (call it before each epoch)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(n)
        else:
            order = np.arange(n)
        if self.drop_last:
            order = order[:self.total_size]
        elif self.total_size > n and n:
            order = np.resize(order, self.total_size)  # repeats from the start
        return iter(order[self.rank:self.total_size:self.num_replicas].tolist())
