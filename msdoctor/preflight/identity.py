"""Who this process is in an msrun job, read from the environment msrun sets before it starts the task.

msrun (mindspore/parallel/cluster/process_entity/_api.py in MindSpore 2.7.0) exports, per worker:
MS_WORKER_NUM (the world size), MS_SCHED_HOST / MS_SCHED_PORT, MS_TOPO_TIMEOUT (--cluster_time_out),
MS_ROLE (MS_WORKER, or MS_SCHED for the scheduler process that runs the same task), MS_NODE_RANK
(--node_rank), DEVICE_ID (the local index 0 .. local_worker_num-1) and, when --node_rank is set,
RANK_ID = MS_NODE_ID = node_rank * local_worker_num + local index.

"First rank on its node" is therefore DEVICE_ID == 0 under msrun, known before init().
``get_local_rank()`` is not used: after two msrun on one host it counts across both (observed on
MindSpore 2.7.0: two msrun with --master_addr 127.0.0.1 gave local ranks 0..3 of 4).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class Identity:
    role: str  # "worker", "scheduler" or "standalone" (not under msrun)
    rank: Optional[int]  # RANK_ID (None until init() when --node_rank was not given)
    world_size: Optional[int]
    node_rank: Optional[int]
    local_index: Optional[int]
    sched_host: Optional[str]
    sched_port: Optional[int]
    cluster_time_out: Optional[int]

    @property
    def first_on_node(self) -> bool:
        """The rank that runs the node-level checks: local index 0 (standalone: the only process)."""
        return self.role == "standalone" or self.local_index == 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _int(env: Mapping[str, str], name: str) -> Optional[int]:
    value = env.get(name, "").strip()
    try:
        return int(value)
    except ValueError:
        return None


def identify(env: Mapping[str, str]) -> Identity:
    role_env = env.get("MS_ROLE", "")
    role = {"MS_WORKER": "worker", "MS_SCHED": "scheduler"}.get(role_env, "standalone")
    node_rank = _int(env, "MS_NODE_RANK")
    return Identity(
        role=role,
        rank=_int(env, "RANK_ID") if role != "scheduler" else None,
        world_size=_int(env, "MS_WORKER_NUM"),
        node_rank=node_rank if node_rank is not None and node_rank >= 0 else None,
        local_index=_int(env, "DEVICE_ID") if role == "worker" else (0 if role == "standalone" else None),
        sched_host=env.get("MS_SCHED_HOST") or None,
        sched_port=_int(env, "MS_SCHED_PORT"),
        cluster_time_out=_int(env, "MS_TOPO_TIMEOUT"),
    )


#: environment variable prefixes recorded on every rank (what MindSpore, HCCL, CANN and NCCL read)
ENV_PREFIXES = ("MS_", "HCCL_", "ASCEND_", "NCCL_", "GLOG_", "GE_", "RANK_")
ENV_NAMES = ("DEVICE_ID", "RANK_ID", "RANK_SIZE", "CUDA_VISIBLE_DEVICES", "LD_PRELOAD", "PYTHONPATH", "OMP_NUM_THREADS")

#: set per node or per rank by construction (msrun, the runtime, or the site's launch script): never a difference
PER_NODE_ENV = frozenset(
    {
        "MS_NODE_RANK",
        "MS_NODE_ID",
        "MS_WORKER_IP",
        "MS_ROLE",
        "HCCL_IF_IP",
        "RANK_ID",
        "DEVICE_ID",
        "ASCEND_RT_VISIBLE_DEVICES",
        "ASCEND_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
        "NCCL_SOCKET_IFNAME",
        "HCCL_SOCKET_IFNAME",
        "GLOO_SOCKET_IFNAME",
        "RANK",
        "LOCAL_RANK",
        "NODE_RANK",
        "HOSTNAME",
    }
)


def interesting_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment variables compared across ranks (values redacted later, at output)."""
    return {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


#: the HCCL timeouts that must agree on every rank; MindSpore sets HCCL_CONNECT_TIMEOUT=600 when it is unset
#: (mindspore/context.py in MindSpore 2.7.0: ``os.environ["HCCL_CONNECT_TIMEOUT"] = "600"`` when absent)
TIMEOUT_VARS = ("HCCL_CONNECT_TIMEOUT", "HCCL_EXEC_TIMEOUT")
MINDSPORE_DEFAULTS = {"HCCL_CONNECT_TIMEOUT": "600"}


def timeouts(before_import: Mapping[str, str], after_init: Mapping[str, str]) -> dict[str, dict[str, Optional[str]]]:
    """Each HCCL timeout's value and where it came from.

    msrun imports mindspore itself, so a launch environment without HCCL_CONNECT_TIMEOUT reaches the task
    with MindSpore's 600 already set: 600 "from the environment" may be that default (said so), any other
    value was set by the user or the site.
    """
    out: dict[str, dict[str, Optional[str]]] = {}
    for name in TIMEOUT_VARS:
        default = MINDSPORE_DEFAULTS.get(name)
        if name in before_import:
            value = before_import[name]
            src = (
                (
                    "environment, or MindSpore's default (mindspore/context.py sets 600 when unset; msrun's own import "
                    "of mindspore does it)"
                )
                if value == default
                else "environment (set by the user or the site)"
            )
            out[name] = {"value": value, "source": src}
        elif name in after_init:
            out[name] = {
                "value": after_init[name],
                "source": "MindSpore's default, set during import (mindspore/context.py)"
                if after_init[name] == default
                else "set during import/init",
            }
        else:
            out[name] = {"value": None, "source": "unset (HCCL's own default applies)"}
    return out
