"""lamina.distributed: process groups and collectives over MPI (NCCL for cuda tensors).

Launch one process per replica with MPI's own launcher, then join the group:

    mpiexec -n 2 python train.py

    import lamina.distributed as dist
    dist.init_process_group("mpi")
    dist.all_reduce(t, op=dist.ReduceOp.AVG)

Names and semantics follow ``torch.distributed``. Install with
``pip install 'lamina-nn[distributed]'`` (mpi4py and the MPICH wheel).
"""

from ._checkpoint import save_on_rank0
from ._collectives import Work, all_gather, all_reduce, barrier, broadcast, reduce_scatter
from ._group import (
    abort,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
)
from ._launch import mpiexec_command
from ._nccl import unavailable_reason as nccl_unavailable_reason
from ._reduce_op import ReduceOp

__all__ = [
    "ReduceOp", "Work", "abort", "all_gather", "all_reduce", "barrier", "broadcast",
    "destroy_process_group", "get_backend", "get_rank", "get_world_size",
    "init_process_group", "is_available", "is_initialized", "mpiexec_command",
    "nccl_unavailable_reason", "reduce_scatter", "save_on_rank0",
]
