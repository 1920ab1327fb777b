"""The rules over a job's launch: a port already bound (and the scheduler's variables that chose it), and NPU device
nodes the process cannot open."""

from __future__ import annotations

import re
from typing import Optional, Sequence


# -- a port already bound -----------------------------------------------------------------------------------------
#: where the paste names the port: host:port, [::]:port, ('0.0.0.0', port), "port N"
_PORT = re.compile(r"(?:[\w.\]]:|\(['\"][\d.:]*['\"], |\bport[= ]?)(?P<port>\d{2,5})\b", re.I)


def port_groups(context: Sequence[str], after: Sequence[str] = ()) -> dict[str, str]:
    """Cause and fix for ``Address already in use`` from the port the paste names (none named: the general text): the
    last one named up to the matched line (the last of ``context``). The lines after it tell only whose bind failed
    (MindSpore's scheduler logs its own lines after the socket's)."""
    port = None
    for line in context:
        for m in _PORT.finditer(line):
            if 0 < int(m.group("port")) < 65536:
                port = m.group("port")
    which = f"port {port}" if port else "the port it listens on"
    if any(_MS_SCHEDULER.search(line) for line in (*context, *after)):
        return _scheduler_port_groups(which, port)
    return {
        "_title": f"a process could not listen on {which}: another process holds it",
        "_cause": (
            f"Binding {which} failed because another process on this host already listens on it: a previous "
            f"run whose workers have not exited yet (or were left behind by a crash), a second job started "
            f"with the same master port (msrun's --master_port, 8118 by default; torchrun's 29500), or "
            f"another service."
        ),
        "_fix": (
            (
                f"`ss -ltnp | grep ':{port} '` (or `lsof -iTCP:{port} -sTCP:LISTEN`) shows the process that holds "
                f"it: stop it if it is a leftover run, or start this job on a free port (msrun --master_port "
                f"<free port>, torchrun --master_port <free port>)."
            )
            if port
            else (
                "`ss -ltnp` (or `lsof -iTCP -sTCP:LISTEN`) lists the listening processes: stop a leftover run, or "
                "start this job on a free port (msrun --master_port <free port>, torchrun --master_port <free "
                "port>)."
            )
        )
        + " Unverified: msdoctor did not look at this host's sockets.",
        "rule": "port-bound",
    }


#: MindSpore's cluster scheduler (the meta server node of its dynamic cluster) and its TCP server, as its log names
#: them (mindspore/ccsrc/distributed/cluster/topology/meta_server_node.cc, distributed/rpc/tcp/tcp_comm.cc)
_MS_SCHEDULER = re.compile(r"meta_server_node\.cc|MetaServerNode|\bInitTCPServer\b|DISTRIBUTED\(.*tcp_comm\.cc")
#: the variables that make a MindSpore process a member of a dynamic cluster
#: (https://www.mindspore.cn/tutorials/en/r2.7.0/parallel/dynamic_cluster.html)
MS_CLUSTER_VARS = ("MS_ROLE", "MS_SCHED_HOST", "MS_SCHED_PORT", "MS_WORKER_NUM", "MS_NODE_ID")


def _scheduler_port_groups(which: str, port: Optional[str]) -> dict[str, str]:
    """The bind that failed is MindSpore's own scheduler (the meta server node that every worker registers with, on
    MS_SCHED_HOST:MS_SCHED_PORT): a second scheduler was started on a port one already holds."""
    names = " ".join(MS_CLUSTER_VARS)
    return {
        "_title": f"MindSpore's cluster scheduler could not listen on {which}: another scheduler holds it",
        "_cause": (
            f"The bind that failed is MindSpore's scheduler (the meta server of its dynamic cluster, which every "
            f"worker registers with on MS_SCHED_HOST:MS_SCHED_PORT), so a second scheduler was started on "
            f"{which}. Either the environment already carries MindSpore's cluster variables ({names}), set "
            f"by a launcher (a Kubernetes MindSpore job, a cluster scheduler's template) that starts its own "
            f"scheduler, while the script or msrun starts another on the same port; or a scheduler of an "
            f"earlier run is still alive; or two jobs share one MS_SCHED_PORT / msrun --master_port."
        ),
        "_fix": (
            f"`env | grep '^MS_'` in the job shows injected cluster variables: for a single-node job started with "
            f"msrun, `unset {names}` before msrun (or at the top of the script, before MindSpore is imported); "
            + (
                f"`ss -ltnp | grep ':{port} '` shows the process that holds the port (a leftover run: stop it); "
                if port
                else "`ss -ltnp` shows the process that holds the port (a leftover run: stop it); "
            )
            + "or start the job on a free port (msrun --master_port <free port>). Unverified: msdoctor did not "
            "look at this job's environment or this host's sockets."
        ),
        "rule": "scheduler-port",
    }


# -- NPU device nodes the process cannot open -------------------------------------------------------------------
#: `grep Cap /proc/N/status`: the effective capability set (all zero: even root has no CAP_DAC_OVERRIDE)
_CAP_EFF = re.compile(r"\bCapEff:\s*(?P<mask>[0-9a-fA-F]{8,16})\b")
#: `ls -l /dev/davinci*`: a character device's mode, owner and group, and its name
_DEV_NODE = re.compile(
    r"(?<![\w-])c(?P<mode>[rwx-]{9})\S*\s+\d+\s+(?P<user>\S+)\s+(?P<group>\S+)\s.*?"
    r"(?P<node>/dev/(?:davinci\w*|devmm_svm|hisi_hdc))\b"
)
#: `id`: the process's uid
_ID = re.compile(r"\buid=(?P<uid>\d+)(?:\((?P<name>[^)]*)\))?")
_CAP_DAC_OVERRIDE = 1 << 1  # capability number 1 (linux/capability.h)


def device_access_groups(before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for a DCMI / device open failure when the lines before it show why the process cannot open the
    device nodes: nodes not readable by others, owned by another uid, and a process without CAP_DAC_OVERRIDE (all
    capabilities dropped, as container runtimes and Kubernetes securityContext can do). Empty when the paste does not
    show that evidence (the catalogue's general text stands)."""
    caps = None
    uid = None
    nodes: list[tuple[str, str, str, str]] = []
    for line in before:
        c = _CAP_EFF.search(line)
        if c:
            caps = int(c.group("mask"), 16)
        i = _ID.search(line)
        if i:
            uid = i.group("uid")
        d = _DEV_NODE.search(line)
        if d:
            nodes.append((d.group("node"), d.group("mode"), d.group("user"), d.group("group")))
    closed = [n for n in nodes if n[1][6:8] != "rw"]  # others may not read and write
    if not closed or caps is None or caps & _CAP_DAC_OVERRIDE:
        return {}
    owner = {f"{n[2]}:{n[3]}" for n in closed}
    names = ", ".join(n[0] for n in closed[:4]) + (", ..." if len(closed) > 4 else "")
    who = f"uid {uid}" if uid is not None else "the process"
    return {
        "_title": "the process cannot open the NPU device nodes: a permission failure, not a busy device",
        "_cause": (
            f"The paste shows the device nodes {names} with mode {closed[0][1]} owned by "
            f"{', '.join(sorted(owner))}, and the process's effective capabilities are {caps:#x}: without "
            f"CAP_DAC_OVERRIDE even root cannot open a file it does not own, so {who} cannot open the devices "
            f"and DCMI (npu-smi, the runtime) reports that it could not initialise. The devices were passed "
            f"in; the process is not allowed to use them."
        ),
        "_fix": (
            f"Run the process as the devices' owner or group (`docker run --user {next(iter(owner))}` or "
            "`--group-add` that group; Kubernetes securityContext runAsUser/runAsGroup/supplementalGroups), or "
            "give back only CAP_DAC_OVERRIDE (`docker run --cap-add DAC_OVERRIDE`; securityContext.capabilities."
            'add: ["DAC_OVERRIDE"]). Check in the container: `ls -l /dev/davinci*` and `grep CapEff '
            "/proc/self/status`. Unverified: msdoctor read only the lines pasted."
        ),
        "rule": "device-permission",
    }
