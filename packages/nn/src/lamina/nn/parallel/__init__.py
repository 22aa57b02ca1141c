"""Data parallelism: ``DistributedDataParallel`` over ``lamina.distributed``."""

from ._ddp import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
