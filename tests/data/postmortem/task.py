"""The msrun task of tests/test_postmortem_msrun.py: init, one AllReduce, then rank PM_RANK fails as PM_MODE says.

PM_MODE: raise (opens a data shard that does not exist), kill (SIGKILLs itself), hang (sleeps while the others
run a second AllReduce), or nothing (every rank finishes). Run by msrun with MindSpore 2.7.0 on CPU (mccl).
"""

import os
import time

import numpy as np

import mindspore as ms
from mindspore import Tensor, ops
from mindspore.communication import get_rank, init

ms.set_device("CPU")
init()
rank = get_rank()
allreduce = ops.AllReduce()
print(f"rank {rank} first allreduce {allreduce(Tensor(np.ones(4, np.float32))).asnumpy()}", flush=True)
mode, bad = os.environ.get("PM_MODE", ""), int(os.environ.get("PM_RANK", "2"))
if rank == bad and mode == "raise":
    open(f"/nonexistent/data/shard_{rank:05d}.bin", "rb")
elif rank == bad and mode == "kill":
    os.kill(os.getpid(), 9)
elif rank == bad and mode == "hang":
    time.sleep(3600)
time.sleep(1)
print(f"rank {rank} second allreduce {allreduce(Tensor(np.ones(4, np.float32))).asnumpy()}", flush=True)
