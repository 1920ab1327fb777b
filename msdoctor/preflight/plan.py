"""``msdoctor preflight plan``: what can be known on one node before msrun starts, in about a second.

No collectives and no MindSpore import: the msrun arguments add up, the master address is this
host's (node_rank 0, where msrun starts the scheduler: ``_is_local_ip`` in
mindspore/parallel/cluster/process_entity/_utils.py) or reachable from here, the master port is free
(MindSpore itself only says "Failed to init the tcp server", observed on 2.7.0) and who holds it,
local_worker_num fits the visible devices, and ``python`` on PATH (what msrun starts) is the job's
interpreter.
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from msdoctor.model import Finding, Status
from msdoctor.redact import command_line, one_line


@dataclass
class MsrunArgs:
    worker_num: int
    local_worker_num: int
    master_addr: str
    master_port: int
    node_rank: int
    cluster_time_out: int = 600

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PlanResult:
    args: MsrunArgs
    findings: list[Finding] = field(default_factory=list)

    @property
    def status(self) -> Status:
        from msdoctor.model import worst

        return worst(f.status for f in self.findings)


def local_addresses() -> set[str]:
    import psutil

    out = {"127.0.0.1", "::1"}
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                out.add(a.address.split("%")[0])
    return out


def resolve(addr: str) -> Optional[str]:
    """The IPv4 address of a host name; None when it does not resolve (a name IDNA cannot encode, e.g. a label
    over 63 characters, RFC 1035 2.3.4, does not resolve either)."""
    try:
        return socket.gethostbyname(addr)
    except (OSError, UnicodeError, ValueError):
        return None


def port_holder(port: int) -> Optional[dict[str, Any]]:
    """The process listening on a TCP port (pid, name, command line), from psutil; None when unknown."""
    import psutil

    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        conns = []
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port:
            info: dict[str, Any] = {"pid": c.pid, "address": f"{c.laddr.ip}:{c.laddr.port}"}
            if c.pid:
                try:
                    p = psutil.Process(c.pid)
                    # another user's process: its arguments may carry a password, its name escapes
                    info.update(name=one_line(p.name()), cmdline=command_line(p.cmdline()), user=p.username())
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            return info
    return None


def bind_test(addr: str, port: int) -> Optional[int]:
    """None when addr:port can be bound now, else the errno."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((addr, port))
        return None
    except OSError as exc:
        return exc.errno or -1
    finally:
        s.close()


def reachable(addr: str, port: int, timeout: float = 1.0) -> tuple[bool, str]:
    """Whether a TCP SYN to addr:port gets an answer: accepted, or refused (the host answered: nothing listens yet)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((addr, port))
        return True, "a process accepts connections there (the scheduler is up)"
    except ConnectionRefusedError:
        return True, "the host answered (connection refused: nothing listens yet, as expected before msrun)"
    except socket.timeout:
        return False, f"no answer within {timeout:g} s (a firewall, a wrong address or a down link)"
    except OSError as exc:
        return False, os.strerror(exc.errno) if exc.errno else str(exc)
    finally:
        s.close()


def visible_devices(device_target: str, env: Mapping[str, str]) -> tuple[Optional[int], str]:
    """How many devices this node's workers can use, and from what."""
    if device_target == "Ascend":
        chips = sorted(glob.glob("/dev/davinci[0-9]*"))
        vis = env.get("ASCEND_RT_VISIBLE_DEVICES")
        if vis:
            return len([x for x in vis.split(",") if x.strip()]), f"ASCEND_RT_VISIBLE_DEVICES={vis}"
        return len(chips), f"{len(chips)} /dev/davinci* device files"
    if device_target == "GPU":
        gpus = sorted(glob.glob("/dev/nvidia[0-9]*"))
        vis = env.get("CUDA_VISIBLE_DEVICES")
        if vis is not None and vis.strip() != "":
            return len([x for x in vis.split(",") if x.strip()]), f"CUDA_VISIBLE_DEVICES={vis}"
        return len(gpus), f"{len(gpus)} /dev/nvidia* device files"
    return None, "CPU workers share the host's cores"


def check(
    args: MsrunArgs, *, device_target: str, expected_python: Optional[str], env: Optional[Mapping[str, str]] = None
) -> PlanResult:
    env = dict(os.environ if env is None else env)
    res = PlanResult(args)
    a = args
    nodes = a.worker_num // a.local_worker_num if a.local_worker_num > 0 else 0
    res.findings.append(_args_finding(a, nodes))
    ip = resolve(a.master_addr)
    local = local_addresses()
    res.findings.append(_master_addr_finding(a, ip, local, nodes))
    if a.node_rank == 0 and ip is not None and ip in local:  # only the master binds the port
        res.findings.append(_master_port_finding(a, ip))
    res.findings.append(_devices_finding(a, device_target, env))
    on_path = shutil.which("python", path=env.get("PATH"))
    if expected_python:
        res.findings.append(_interpreter_finding(on_path, expected_python))
    if on_path:
        res.findings.extend(_msdoctor_importable_findings(on_path, env, expected_python))
    return res


def _args_finding(a: MsrunArgs, nodes: int) -> Finding:
    """The msrun arguments add up: whole nodes of local_worker_num workers, and node_rank among them."""
    if a.local_worker_num <= 0 or a.worker_num <= 0 or a.worker_num % a.local_worker_num:
        return Finding.fail(
            f"--worker_num {a.worker_num} is not a multiple of --local_worker_num {a.local_worker_num}",
            detail="msrun numbers ranks node_rank x local_worker_num + local index: every node must "
            "start the same number of workers",
            fix="give every node the same --local_worker_num and --worker_num = nodes x local_worker_num",
            code="args",
        )
    if not 0 <= a.node_rank < nodes:
        return Finding.fail(
            f"--node_rank {a.node_rank} is outside 0..{nodes - 1}",
            detail=f"{a.worker_num} workers / {a.local_worker_num} per node = {nodes} nodes",
            fix=f"number the nodes 0..{nodes - 1}, one number per node",
            code="args",
        )
    return Finding.passed(
        f"{nodes} node(s) x {a.local_worker_num} workers = {a.worker_num}; this is node_rank "
        f"{a.node_rank}, ranks {a.node_rank * a.local_worker_num}.."
        f"{(a.node_rank + 1) * a.local_worker_num - 1}",
        proved="the msrun arguments are consistent on this node",
        code="args",
    )


def _loopback(*addrs: Optional[str]) -> bool:
    """Whether any of the addresses (as given, or as resolved) is a loopback address (127.0.0.0/8, ::1)."""
    import ipaddress

    for addr in addrs:
        try:
            if addr is not None and ipaddress.ip_address(addr.strip("[]").split("%")[0]).is_loopback:
                return True
        except ValueError:
            continue
    return False


def _master_addr_finding(a: MsrunArgs, ip: Optional[str], local: set[str], nodes: int) -> Finding:
    """node_rank 0 owns the master address (msrun starts the scheduler there); any other node reaches it."""
    if nodes > 1 and (_loopback(a.master_addr, ip) or a.master_addr.lower().rstrip(".") == "localhost"):
        # on every node the loopback address is that node itself: node 0's scheduler is unreachable from the
        # others, and each other node would see a "local" master (a connection there reaches itself, not node 0)
        here = (
            (
                "other nodes cannot reach the loopback address of this host, and every node would think the master "
                'is local and start its own scheduler (observed: the second fails with "Failed to init the tcp '
                'server")'
            )
            if a.node_rank == 0
            else (
                f"on node_rank {a.node_rank} {a.master_addr} is this node itself, not node_rank 0: msrun would start "
                "a scheduler here, or reach one of this node's own processes, never node 0's"
            )
        )
        return Finding.fail(
            f"--master_addr {a.master_addr} is a loopback address in a {nodes}-node job",
            detail=here,
            fix="give every node node_rank 0's address on the network the nodes share",
            code="master-addr",
        )
    if ip is None:
        return Finding.fail(
            f"--master_addr {a.master_addr} does not resolve",
            fix="use the master node's IPv4 address",
            code="master-addr",
        )
    if a.node_rank == 0:
        if ip not in local:
            return Finding.fail(
                f"node_rank 0 but --master_addr {a.master_addr} ({ip}) is not an address of this host",
                detail="msrun starts the scheduler only where the master address is local; nobody would start it",
                fix="run node_rank 0 on the host that owns the master address, or give that host's address",
                code="master-addr",
            )
        return Finding.passed(
            f"--master_addr {a.master_addr} is this host's address",
            proved="msrun will start the scheduler here",
            code="master-addr",
        )
    if ip in local and not ip.startswith("127."):
        return Finding.fail(
            f"node_rank {a.node_rank} but --master_addr {a.master_addr} is this host",
            detail="msrun would start a second scheduler here",
            fix="run node_rank 0 on this host, or give the master node's address",
            code="master-addr",
        )
    ok, why = reachable(ip, a.master_port)
    if ok:
        return Finding.passed(
            f"master {a.master_addr}:{a.master_port} is reachable: {why}",
            proved="a TCP connection attempt got an answer",
            code="master-addr",
        )
    return Finding.fail(
        f"master {a.master_addr}:{a.master_port} is not reachable from this host: {why}",
        fix="check the address, the route (ip route get " + ip + ") and firewalls between the nodes",
        code="master-addr",
    )


def _master_port_finding(a: MsrunArgs, ip: str) -> Finding:
    """The master port can be bound on the master address now; when not, who holds it."""
    err = bind_test(ip, a.master_port)
    if err is None:
        return Finding.passed(f"port {a.master_port} is free on {ip}", proved="a bind on it succeeded", code="port")
    holder = port_holder(a.master_port)
    who = (
        f"pid {holder.get('pid')} ({holder.get('name', '?')}: {holder.get('cmdline', '')})"
        if holder and holder.get("pid")
        else "another process (run `ss -ltnp` as root to see which)"
    )
    return Finding.fail(
        f"port {a.master_port} on {ip} is taken by {who}",
        detail=f'bind: {errno.errorcode.get(err, err)}. The scheduler would fail with "Failed '
        'to init the tcp server" and the workers wait until --cluster_time_out',
        fix=f"pick another --master_port on every node, or stop pid {holder.get('pid')}"
        if holder and holder.get("pid")
        else "pick another --master_port on every node",
        evidence={"port": a.master_port, "holder": holder},
        code="port",
    )


def _devices_finding(a: MsrunArgs, device_target: str, env: Mapping[str, str]) -> Finding:
    """local_worker_num fits the devices this node's workers can see (CPU workers: the cores)."""
    count, source = visible_devices(device_target, env)
    if count is not None and a.local_worker_num > count:
        return Finding.fail(
            f"--local_worker_num {a.local_worker_num} > {count} visible {device_target} devices ({source})",
            fix=f"--local_worker_num {count} (and --worker_num nodes x {count})",
            code="devices",
        )
    if count is not None:
        return Finding.passed(
            f"{a.local_worker_num} workers for {count} visible devices ({source})",
            proved="each worker gets its own device",
            code="devices",
        )
    cores = os.cpu_count() or 1
    if a.local_worker_num <= cores:
        return Finding.passed(
            f"{a.local_worker_num} CPU workers on {cores} cores", proved="CPU workers need no device", code="devices"
        )
    return Finding.warn(
        f"{a.local_worker_num} CPU workers on {cores} cores", detail="workers will share cores", code="devices"
    )


def _interpreter_finding(on_path: Optional[str], expected_python: str) -> Finding:
    """``python`` on PATH, which msrun starts for every worker, is the job's interpreter."""
    if on_path is not None and _same_interpreter(on_path, expected_python):
        return Finding.passed(
            f"`python` on PATH is the job's interpreter ({on_path})",
            proved="msrun starts `python` from PATH, and that is the target",
            code="python",
        )
    return Finding.fail(
        f"`python` on PATH is {on_path or '(none)'}, not the job's interpreter {expected_python}",
        detail="msrun starts every worker as `python` from PATH, not with its own interpreter",
        fix=f"export PATH={os.path.dirname(expected_python)}:$PATH before msrun",
        code="python",
    )


def msdoctor_source() -> tuple[Optional[str], str]:
    """Where this msdoctor was installed from, as a pip argument (msdoctor is not on the package index), and what
    it is: the checkout of an editable or directory install, or the wheel/sdist file, from the distribution's
    ``direct_url.json`` (PEP 610, https://packaging.python.org/en/latest/specifications/direct-url/).
    (None, why) when it does not say, or the place no longer exists here."""
    import json
    from urllib.parse import unquote, urlparse

    # every msdoctor metadata on sys.path (a checkout's own msdoctor.egg-info, found first from its directory,
    # has no direct_url.json): the first that says where it came from
    raws = []
    for entry in sys.path:
        for found in glob.glob(os.path.join(glob.escape(entry or "."), "msdoctor-*.dist-info")):
            try:
                raws.append((Path(found) / "direct_url.json").read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    info = None
    for raw in raws:
        try:
            info = json.loads(raw or "")
        except ValueError:
            continue
        if isinstance(info, dict):
            break
    url = urlparse(str(info.get("url", ""))) if isinstance(info, dict) else None
    if url is None or url.scheme != "file":
        checkout = Path(__file__).resolve().parents[2]  # msdoctor/preflight/plan.py in a checkout
        if (checkout / "pyproject.toml").is_file() and (checkout / "msdoctor").is_dir():
            return str(checkout), "the checkout this msdoctor runs from"
        return None, (
            "this msdoctor's metadata does not say where it was installed from"
            if raws
            else "no msdoctor metadata on sys.path says where this msdoctor came from"
        )
    path = unquote(url.path)
    if not os.path.exists(path):
        return None, f"it was installed from {path}, which no longer exists"
    return path, ("the checkout it was installed from" if os.path.isdir(path) else "the file it was installed from")


def _has_msdoctor(python: str, env: Mapping[str, str]) -> Any:
    from msdoctor import proc

    return proc.run(
        [python, "-I", "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('msdoctor') else 1)"],
        timeout=10,
        env=env,
    )


def _msdoctor_fix(on_path: str, expected_python: Optional[str], env: Mapping[str, str]) -> str:
    """What makes ``python -m msdoctor`` work for msrun's workers, verified where it can be here."""
    fixes = []
    if expected_python and not _same_interpreter(on_path, expected_python):
        # this msdoctor's own interpreter needs no question: it is running msdoctor now
        if _same_interpreter(expected_python, sys.executable) or _has_msdoctor(expected_python, env).returncode == 0:
            fixes.append(
                f"export PATH={os.path.dirname(expected_python)}:$PATH before msrun, on every node "
                f"(verified here: {expected_python} has msdoctor)"
            )
    source, what = msdoctor_source()
    if source is not None:
        fixes.append(
            f"{on_path} -m pip install {source} on every node ({what}; unverified: not installed by "
            "this check, and the path must exist on each node)"
        )
    else:
        fixes.append(
            f"{on_path} -m pip install /path/to/msdoctor-checkout on every node (unverified: {what}; "
            "msdoctor is not on the package index)"
        )
    return "; or ".join(fixes)


def _msdoctor_importable_findings(
    on_path: str, env: Mapping[str, str], expected_python: Optional[str] = None
) -> list[Finding]:
    """The task is ``python -m msdoctor preflight``: msdoctor must be importable by the ``python`` msrun starts."""
    probe = _has_msdoctor(on_path, env)
    if probe.returncode == 1:
        return [
            Finding.fail(
                f"msdoctor is not installed for {on_path}",
                detail="msrun runs `python -m msdoctor preflight` with that interpreter on every rank",
                fix=_msdoctor_fix(on_path, expected_python, env),
                code="msdoctor-importable",
            )
        ]
    if not probe.ok:
        return [
            Finding.warn(
                f"could not ask {on_path} whether it has msdoctor: {probe.describe_failure()}",
                code="msdoctor-importable",
            )
        ]
    return []


def _same_interpreter(a: str, b: str) -> bool:
    """The same environment: both in one bin directory (a venv's python is a symlink to the base interpreter, so
    resolving the file itself would call the system Python and every venv on it the same)."""

    def where(p: str) -> str:
        return os.path.realpath(os.path.dirname(os.path.abspath(p)))

    return where(a) == where(b)


def compare(plans: list[dict[str, Any]]) -> list[Finding]:
    """Several nodes' ``--plan --json`` outputs side by side: do they describe one job?

    The same --worker_num, --master_addr/--master_port and --cluster_time_out everywhere (a node with a
    shorter cluster_time_out gives up first), node ranks unique and complete, local workers adding up.
    """
    out: list[Finding] = []
    args = [p.get("args") or {} for p in plans]
    for key in ("worker_num", "master_addr", "master_port", "cluster_time_out", "local_worker_num"):
        values = {str(a.get(key)) for a in args}
        if len(values) > 1:
            shown = ", ".join(f"node_rank {a.get('node_rank')}: {a.get(key)}" for a in args)
            out.append(
                Finding.fail(
                    f"--{key} differs between the nodes' plans ({shown})",
                    fix=f"give every node the same --{key}",
                    code=f"plans-{key}",
                )
            )
    ranks = [a.get("node_rank") for a in args]
    dup = sorted({r for r in ranks if ranks.count(r) > 1}, key=str)
    if dup:
        out.append(
            Finding.fail(
                f"node_rank {', '.join(map(str, dup))} used by more than one node",
                fix="number the nodes 0..N-1, one number per node",
                code="plans-node-rank",
            )
        )
    total = sum(int(a.get("local_worker_num") or 0) for a in args)
    wn = args[0].get("worker_num") if args else None
    if wn is not None and not dup and total != wn:
        missing = sorted(set(range(int(wn) // max(int(args[0].get("local_worker_num") or 1), 1))) - set(ranks))
        out.append(
            Finding.fail(
                f"the plans' local workers add up to {total}, --worker_num is {wn}",
                detail=f"node ranks without a plan: {', '.join(map(str, missing))}" if missing else "",
                fix="run --plan on every node and compare all of them",
                code="plans-sum",
            )
        )
    for p in plans:
        if p.get("status") in ("fail", "error"):
            a = p.get("args") or {}
            out.append(
                Finding.fail(
                    f"node_rank {a.get('node_rank')}'s own plan failed",
                    detail="; ".join(
                        f["title"] for f in p.get("findings") or [] if f.get("status") in ("fail", "error")
                    ),
                    code="plans-node",
                )
            )
    if not out:
        out.append(
            Finding.passed(
                f"{len(plans)} plans describe one job of {wn} workers",
                proved="same worker_num, master, port and cluster_time_out; node ranks unique "
                "and local workers adding up",
                code="plans",
            )
        )
    return out
