"""A rank that fails mid-training; the others must end with an error, not hang.

Usage: faults.py MODE, MODE one of raise | kill | exit | hang. Rank 1 fails at
step 3 of a DDP training loop; rank 0 keeps training and would wait forever
in the next all-reduce without the fault handling.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import lamina.autograd as ag
import lamina.distributed as dist
from lamina import nn, optim
from lamina.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi", timeout=float(os.environ.get("FAULT_TIMEOUT", "5")))
rank = dist.get_rank()
mode = sys.argv[1]
model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
opt = optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if rank == 1 and step == 3:
        if mode == "raise":
            raise ValueError("simulated failure in rank 1")
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "exit":
            sys.exit(3)
        if mode == "hang":
            time.sleep(3600)
    opt.zero_grad()
    model(ag.randn(6, 4)).sum().backward()
    opt.step()
print(f"rank {rank}: finished without noticing the failure")
