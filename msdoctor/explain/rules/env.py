"""General rules for the environment around a run: the install (two MindSpore builds in one environment, CANN's
Python modules), the network pip uses (TLS certificates, proxies), the dynamic loader and linker, the devices a
process sees, and a distributed job's launch (the launcher's variables, the rank table, the ranks' collective
arguments, the network interface).

Each rule reads the structure of what was pasted (the exception and the module or name it names, the library the
loader names, CANN's inner message with its numbers, the variables a launcher sets) and answers with the cause, a fix
marked unverified and the check that confirms it; where the text does not tell, it makes no claim (empty answer).
The catalogue entries whose ``lookup`` is one of :data:`msdoctor.explain.catalogue.ENV_LOOKUPS` dispatch here
(``CLAIMS`` is merged into :func:`msdoctor.explain.rules.claim`'s table).
"""

from __future__ import annotations

import re
from typing import Callable, Optional, Sequence

from msdoctor.explain.catalogue import ENV_LOOKUPS
from msdoctor.explain.rules.native import device_memory_groups, numpy_size_groups, stream_limit_groups
from msdoctor.explain.rules.packaging import metadata_missing_groups

Groups = dict[str, str]

_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\]")


def _raising(before: Sequence[str]) -> Optional[str]:
    from msdoctor.explain.rules.common import _raising_path

    return _raising_path(before)


# -- two MindSpore builds in one environment, or a directory named mindspore -----------------------------------------
#: names every MindSpore release defines at the top of its package (mindspore/__init__.py and the package's own
#: subpackages since 0.1: https://github.com/mindspore-ai/mindspore/blob/master/mindspore/python/mindspore/__init__.py)
#: and the module every built MindSpore carries (mindspore/version.py, written by the build: a source tree holds none
#: before it is built)
MINDSPORE_CORE = ("context", "Tensor", "Parameter", "nn", "ops", "dtype", "common", "train")
#: the distributions that install the module mindspore (https://www.mindspore.cn/install and the releases' old
#: per-device names on https://pypi.org/project/mindspore-gpu/ and https://pypi.org/project/mindspore-ascend/)
MINDSPORE_BUILDS = ("mindspore", "mindspore-gpu", "mindspore-ascend", "mindspore-cpu", "mindspore-dev")


def mindspore_core_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """``cannot import name N from 'mindspore'`` for an N that every release has, or ``No module named
    'mindspore.version'``: not code written for another release (the api-skew reading), but a mindspore package that is
    not a whole install: two builds overwrote each other, or a directory named mindspore is imported instead."""
    name, module = g.get("core", ""), g.get("coremod", "")
    path = (g.get("path") or "").strip()
    shadow_first = bool(module) or (bool(path) and not _SITE.search(path))
    builds = " ".join(MINDSPORE_BUILDS)
    what = f"mindspore.{name}" if name else module
    shadow = (
        "a directory named mindspore (a source checkout not built, or a folder of that name in the current "
        "directory or on PYTHONPATH) is imported instead of the installed package"
        + (f" (Python found it at {path})" if path and not _SITE.search(path) else "")
    )
    mixed = (
        "more than one MindSpore build is installed in this environment (the CPU package mindspore together with "
        "mindspore-gpu or mindspore-ascend, or two releases): every build installs into the same mindspore "
        "directory, so installing or uninstalling one of them left a mix of the other's files"
    )
    first, second = (shadow, mixed) if shadow_first else (mixed, shadow)
    return {
        "_title": f"the mindspore imported is not one whole MindSpore install (it lacks {what})",
        "_cause": (
            f"{what} is part of every MindSpore release, so this is not code written for another release: the "
            f"mindspore package Python imported is not a whole install. Most likely {first}. Otherwise "
            f"{second}."
        ),
        "_fix": (
            f'`{{python}} -c "import mindspore; print(mindspore.__file__)"` shows which mindspore is imported: '
            f"outside site-packages, rename that directory or run from another directory (and drop it from "
            f"PYTHONPATH). In site-packages: `{{python}} -m pip list | grep -i mindspore` lists the builds "
            f"installed; uninstall them all (`{{python}} -m pip uninstall -y {builds}`) and install the one build "
            f"for your device alone (https://www.mindspore.cn/install). Unverified: `msdoctor check --only "
            f"duplicate-installs` lists distributions that own the same files and copies that shadow the install."
        ),
        "rule": "mindspore-incomplete",
    }


# -- CANN's Python modules ---------------------------------------------------------------------------------------------
def cann_python_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """``No module named 'acl'``: pyACL, CANN's Python API, is not a pip package: it lies in the toolkit's
    python/site-packages, which CANN's set_env.sh puts on PYTHONPATH (pyACL guide:
    https://www.hiascend.com/document/detail/zh/canncommercial/700/inferapplicationdev/aclpythondevg/nottoctopics/aclpythondevg_01_0005.html).
    Whoever imports it, the module is CANN's."""
    mod = g.get("cannmod", "")
    if mod != "acl":
        return {}
    return {
        "_title": "CANN's Python module acl (pyACL) is not on this Python's path: CANN's set_env.sh was not sourced",
        "_cause": (
            "acl is pyACL, CANN's own Python API (acl.init, acl.rt.*); it is not installed by pip but ships in "
            "the CANN toolkit's python/site-packages (ascend-toolkit/latest/python/site-packages), which CANN's "
            "set_env.sh puts on PYTHONPATH. This shell or job did not source set_env.sh (or CANN is not "
            "installed, or the Python running is not one CANN supports)."
        ),
        "_fix": (
            "`source /usr/local/Ascend/ascend-toolkit/set_env.sh` (adjust to your CANN install) in the same shell "
            'or job script before Python starts, and add it to ~/.bashrc; then `{python} -c "import acl"`. '
            "Unverified: `ls /usr/local/Ascend/ascend-toolkit/latest/python/site-packages` shows whether pyACL is "
            "installed; `msdoctor check --only device-target` shows the CANN layout and PYTHONPATH."
        ),
        "rule": "cann-python-path",
    }


# -- the device id against the devices the process sees ---------------------------------------------------------------
def device_range_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """CANN's ``set device=D, valid device range is [0, N)`` and MindSpore's GPU ``SetDevice for id:D failed,
    ret[101], invalid device ordinal`` (CUDA's cudaErrorInvalidDevice is 101:
    https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html): the device id asked for lies outside the
    devices this process sees."""
    if (g.get("dev") and g.get("n")) or (g.get("dev2") and g.get("n2")):
        # CANN's `set device=D, valid device range is [0, N)` or MindSpore's `Got device count[N] and device id[D]`
        dev, n = int(g.get("dev") or g["dev2"]), int(g.get("n") or g["n2"])
        if dev < n:
            return {}  # in range: CANN failed for another reason
        return {
            "_title": f"device {dev} was asked for, and this process sees {n} NPU(s) (ids 0 to {n - 1})",
            "_cause": (
                f"CANN refused to open device {dev}: the devices this process sees are numbered 0 to {n - 1}. "
                f"The id comes from DEVICE_ID or device_id in set_context (or from a launcher's per-rank id: "
                f"msrun's, the rank table's) and counts within the devices visible to the process "
                f"(ASCEND_RT_VISIBLE_DEVICES renumbers them from 0). Usually more ranks were started on this node "
                f"than it has cards, a physical card id was given while ASCEND_RT_VISIBLE_DEVICES limits the "
                f"visible set, or a DEVICE_ID was left set from another job. In a multi-node msrun job, nodes that "
                f"share one hostname do this too: msrun hands out device ids per host name, so the ranks of "
                f"two nodes count on as if on one, from {n} up (MindSpore's distributed parallel FAQ)."
            ),
            "_fix": (
                f"Give a device id below {n}: `export DEVICE_ID=<0..{n - 1}>` (or `unset DEVICE_ID`), or device_id "
                f"in set_context; start at most {n} ranks on this node (msrun's --local_worker_num); on several "
                f"nodes, give each its own hostname (`hostname` on each; `hostnamectl set-hostname NAME`); with "
                f"ASCEND_RT_VISIBLE_DEVICES set, ids count within its list. Unverified: `npu-smi info` lists the "
                f"cards, `echo $ASCEND_RT_VISIBLE_DEVICES $DEVICE_ID` the job's settings; `msdoctor check --only "
                f"device-target` counts the devices MindSpore sees."
            ),
            "rule": "device-out-of-range",
        }
    gpu = g.get("gdev", "")
    if not gpu:
        return {}
    return {
        "_title": f"GPU {gpu} was asked for and is not among the GPUs this process sees (CUDA_VISIBLE_DEVICES)",
        "_cause": (
            f"CUDA refused device {gpu} as an invalid device ordinal: the process sees fewer GPUs. When "
            f"CUDA_VISIBLE_DEVICES is set it lists the GPUs a process sees and renumbers them from 0, so a job "
            f"that starts more processes than it lists gives some ranks an id outside the list; those ranks fail "
            f"while the others wait in NCCL's initialisation for them (a hang)."
        ),
        "_fix": (
            "Stop the whole job (the waiting ranks too), then make CUDA_VISIBLE_DEVICES list as many GPUs as "
            "processes are started (or start as many processes as it lists), and restart. Unverified: `nvidia-smi "
            "-L` lists the GPUs, `echo $CUDA_VISIBLE_DEVICES` the job's list."
        ),
        "rule": "device-out-of-range",
    }


# -- HCCL: the rank table, and ranks that disagree ---------------------------------------------------------------------
_DEVICE_ID = re.compile(r'"device_id"\s*:\s*"?(?P<id>\d+)"?')


def _duplicate_device_ids(text: str) -> list[str]:
    """device_id values given twice within one server's device list of a pasted rank table (CANN's rank table format:
    each server lists its devices, each with its own device_id)."""
    dups: list[str] = []
    for server in re.split(r'"device"\s*:\s*\[', text)[1:]:
        ids = [m.group("id") for m in _DEVICE_ID.finditer(server.split("]", 1)[0])]
        dups += sorted({i for i in ids if ids.count(i) > 1} - set(dups))
    return dups


def ranktable_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """HCCL's ``The ranktable is invalid, Reason:[...]`` (EI0004): the rank table file (RANK_TABLE_FILE) does not
    describe this machine; a pasted rank table with one device_id twice on one server is named."""
    reason = (g.get("reason") or "").strip().rstrip(".")
    dups = _duplicate_device_ids("\n".join((g.get("table", ""), *after)))  # the shown line may be a window
    found = (
        f" The pasted rank table gives device_id {', '.join(dups)} to more than one rank of one server: each "
        f"device of a server must appear once, with its own device_id."
        if dups
        else ""
    )
    return {
        "_title": "HCCL rejected the rank table" + (f": device_id {', '.join(dups)} is given twice" if dups else ""),
        "_cause": (
            "HCCL read the rank table (the JSON file RANK_TABLE_FILE names) and found it does not match this "
            "machine" + (f": {reason}." if reason else ".") + found + " Each rank's entry must name a device of "
            "its server (device_id the card's id, device_ip its NIC address), once per device, with "
            "server_count and rank_id matching the job."
        ),
        "_fix": (
            "Regenerate the rank table on each server with hccl_tools.py (MindSpore's models repository, "
            "utils/hccl_tools) or fix the entries so that every device_id appears once per server and matches "
            "`npu-smi info`; or launch with msrun, which needs no rank table. Unverified: "
            "`for i in 0 1 2 3 4 5 6 7; do hccn_tool -i $i -ip -g; done` prints each card's device_ip."
        ),
        "rule": "ranktable-invalid",
    }


def rank_arguments_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """HCCL's ``The arguments for collective communication are inconsistent between ranks: tag [T], parameter [P],
    local [L], remote [R]`` (EI0005): the ranks called the same collective with different arguments."""
    tag, param = g.get("tag", ""), g.get("param", "")
    op = re.match(r"[A-Za-z]+", tag)
    name = op.group(0) if op else "a collective"
    return {
        "_title": f"the ranks called {name} with different {param or 'arguments'} ({g.get('local', '?')} here, "
        f"{g.get('remote', '?')} on another rank)",
        "_cause": (
            f"HCCL compared the arguments of collective {tag} across the ranks: parameter {param} is "
            f"{g.get('local', '?')} on this rank and {g.get('remote', '?')} on another. Every rank must make the "
            f"same collective calls with the same sizes, so the ranks are not running the same computation: "
            f"the training script, its config (model, batch size, sequence length, parallel settings) or the "
            f"rank table differ between the cards or nodes, or the data gives ranks tensors of different "
            f"shapes."
        ),
        "_fix": (
            "Run the same script and config on every rank (the same commit and YAML on each node; compare with "
            "`md5sum`), use one rank table, and give every rank batches of the same shape (drop_remainder, fixed "
            "padding). Unverified: each rank's log shows the shapes it built; the plog names the ranks."
        ),
        "rule": "ranks-disagree",
    }


# -- the network pip uses ----------------------------------------------------------------------------------------------
_HOST = re.compile(r"host='(?P<h>[^']+)'|https?://(?P<u>[A-Za-z0-9.-]+)")


def pip_network_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """pip's (urllib3's) TLS certificate failure and its proxy failure, with the host read from the lines."""
    hosts = [m.group("h") or m.group("u") for x in (*before, line, *after) for m in _HOST.finditer(x)]
    host = next((h for h in hosts if "proxy" not in h.lower()), "")
    if "tls" in g or "tls2" in g:  # the empty groups that mark the certificate alternatives
        why = re.search(r"certificate verify failed: (?P<w>[^(')]+)", line)
        detail = f" ({why.group('w').strip()})" if why else ""
        h = host or "<the host in the error>"
        return {
            "_title": "the TLS certificate of the server could not be verified" + (f" ({host})" if host else ""),
            "_cause": (
                f"The download's TLS certificate was not trusted{detail}: this machine does not trust the "
                f"certificate the server, or a proxy in between that inspects TLS, presented. The usual causes: "
                f"a company or campus proxy that re-signs TLS with its own certificate, a CA bundle that is "
                f"old or missing, or a system clock far off."
            ),
            "_fix": (
                f"For pip: `{{python}} -m pip install <package> --trusted-host {h}` (each host it downloads from: "
                f"the index and the wheel host; MindSpore's wheels come from "
                f"ms-release.obs.cn-north-4.myhuaweicloud.com), or better give pip your proxy's CA: `{{python}} "
                f"-m pip config set global.cert /path/to/ca.pem` (PIP_CERT; REQUESTS_CA_BUNDLE for other "
                f"clients); check the clock with `date`. Unverified: `{{python}} -m pip config list` shows pip's "
                f"settings."
            ),
            "rule": "tls-untrusted",
        }
    return {
        "_title": "pip could not connect to its proxy",
        "_cause": (
            "pip (through urllib3; requests clients the same) sends its requests to the proxy it was given, and "
            "could not connect to it: the proxy in http_proxy / https_proxy (HTTP_PROXY / HTTPS_PROXY, pip's "
            "--proxy or pip.conf) is wrong, not reachable from this machine, or needs credentials; or its URL "
            "says https:// for a proxy that speaks plain HTTP (urllib3 1.26 and later, pip 20.3 and later, "
            "speak TLS to an https:// proxy: https://github.com/urllib3/urllib3/issues/1850)."
        ),
        "_fix": (
            "`env | grep -i proxy` and `{python} -m pip config list` show the proxy pip uses: set a working one "
            "(`export http_proxy=http://[user:password@]host:port https_proxy=$http_proxy`; on Windows `set "
            "http_proxy=...`; the URL scheme http:// unless the proxy itself speaks TLS), or unset them where the index is reachable directly; `{python} -m pip install "
            "--proxy http://host:port <package>` for one run. Unverified: `curl -I -x $https_proxy "
            "https://pypi.org/simple/` tests the proxy."
        ),
        "rule": "proxy-unreachable",
    }


# -- the dynamic loader and the linker ---------------------------------------------------------------------------------
def loader_version_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """glibc's loader: ``LIB: symbol S version V not defined in file F with link time reference``: LIB was linked against
    a copy of F that defines S@V, and the F loaded is another copy (another build or release) that does not."""
    lib, sym, ver, file = g.get("user", "").strip(), g.get("sym", ""), g.get("ver", ""), g.get("file", "")
    who = lib or "the program"
    stem = file.split(".so")[0]
    return {
        "_title": f"{who} loaded another {file} than the one it was linked against (no {sym}@{ver})",
        "_cause": (
            f"{who} was linked against a {file} that defines {sym} with symbol version {ver}; the {file} the "
            f"loader found at run time is another copy (another build or release) without it. Another copy "
            f"comes first when a directory on LD_LIBRARY_PATH holds one (an SDK's or toolkit's bundled lib "
            f"directory, a library built into /usr/local/lib), or when the system's copy was overwritten."
        ),
        "_fix": (
            f"`ldd {lib or '<the program>'} | grep {stem}` shows which {file} is loaded; take the directory that "
            f"holds the other copy out of LD_LIBRARY_PATH (`echo $LD_LIBRARY_PATH`; a set-up script may add it), "
            f"or run the system tool with `env -u LD_LIBRARY_PATH <command>`. Unverified: `rpm -qf` / `dpkg -S` "
            f"on the loaded file says whether it is the system's."
        ),
        "rule": "loader-other-copy",
    }


#: a system command's own script (yum, dnf, firewall-cmd, apt's helpers): run by the system's Python
_SYSTEM_SCRIPT = re.compile(r"^/usr/(?:s?bin|libexec)/(?P<tool>[\w.+-]+)$")


def system_tool_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """``No module named M`` raised in a system command's script (``File "/usr/bin/yum"``), or yum's own "There was a
    problem importing one of the Python modules required to run yum": the system's Python cannot import the module
    its own package manager installed, so the Python or its search path was changed for this shell."""
    tool, mod = g.get("tool", "").rstrip("."), g.get("mod", "")
    path = f"/usr/bin/{tool}" if tool else ""
    if not tool:
        raising = _raising(before) or ""
        m = _SYSTEM_SCRIPT.match(raising)
        if m is None or not mod:
            return {}
        tool, path = m.group("tool"), raising
    needs = f"{mod}, the system package it needs," if mod else "the system package it needs (the module named below)"
    return {
        "_title": f"the system command {tool} cannot import its own Python modules: its Python was changed in this shell",
        "_cause": (
            f"{path} is a system command run by the system's Python, and {needs} was installed by the OS into "
            f"that Python. That it cannot be imported means the Python that ran is not the system's as "
            f"installed: LD_LIBRARY_PATH holds another Python's library directory (an SDK's, a toolkit's or a "
            f"module system's own Python), PYTHONPATH or PYTHONHOME point at another Python, or the "
            f"interpreter its first line names (/usr/bin/python, /usr/bin/python3) was relinked to another "
            f"Python."
        ),
        "_fix": (
            f"Try `env -u LD_LIBRARY_PATH -u PYTHONPATH -u PYTHONHOME {tool} ...`; if that works, take the other "
            f"Python's directories out of LD_LIBRARY_PATH / PYTHONPATH in the shell profile (or the set-up script "
            f"that adds them); if not, point the interpreter back at the system's. Unverified: `head -1 {path}` "
            f"and `ls -l /usr/bin/python*` show which Python it runs."
        ),
        "rule": "system-python-changed",
    }


def linker_needed_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """GNU ld's ``warning: LIB, needed by X, not found``: the linker found X but not a library X depends on."""
    need, by = g.get("need", ""), g.get("by", "")
    return {
        "_title": f"the linker cannot find {need}, which {by} needs",
        "_cause": (
            f"While linking against {by}, the linker (ld) looked for {need}, a library {by} depends on, and did "
            f"not find it in its search path (the -L directories, -rpath-link, LD_LIBRARY_PATH): the link "
            f"fails with undefined references or the program will not start."
        ),
        "_fix": (
            f"Find the directory that holds it (`find / -name '{need}*' 2>/dev/null`) and add it to "
            f"LD_LIBRARY_PATH (`export LD_LIBRARY_PATH=<dir>:$LD_LIBRARY_PATH`) or pass `-Wl,-rpath-link,<dir>`; "
            f"install it if it is absent. Unverified: `ldd {by}` lists what it needs and what is not found."
        ),
        "rule": "linker-needed",
    }


# -- a distributed job's launch ---------------------------------------------------------------------------------------
_MS_VARS = re.compile(r"\b(?P<v>MS_(?:ROLE|SCHED_HOST|SCHED_PORT|WORKER_NUM|SCHED_NUM|SERVER_NUM|NODE_ID))=(?P<x>\S*)")


def cluster_role_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """MindSpore's ``InitNodeRole] Role name is invalid``: mindspore.communication.init() set up MindSpore's own
    cluster, which reads the process's role from MS_ROLE; a process not started by a launcher has none."""
    shown = {m.group("v"): m.group("x") for x in (*before, line, *after) for m in _MS_VARS.finditer(x)}
    role = shown.get("MS_ROLE")
    state = (
        f"MS_ROLE is {role!r} here, not one of MS_SCHED, MS_WORKER, MS_PSERVER"
        if role
        else "the process has no valid MS_ROLE"
    )
    return {
        "_title": "mindspore.communication.init() was called in a process that no launcher started (no MS_ROLE)",
        "_cause": (
            f"init() sets up MindSpore's cluster, which takes each process's role from MS_ROLE (MS_SCHED, "
            f"MS_WORKER or MS_PSERVER) with MS_SCHED_HOST, MS_SCHED_PORT and MS_WORKER_NUM; {state}. These are "
            f"set by a launcher (msrun, or a script that starts the scheduler and workers), or init() is given "
            f"its ranks by mpirun (OpenMPI): the script was started as a plain single process."
        ),
        "_fix": (
            "Start the job with msrun (`msrun --worker_num=N --local_worker_num=N train.py`) or with mpirun "
            "(`mpirun -n N python train.py`); for a single-card run do not call init(). Unverified: `env | grep "
            "^MS_` inside the job shows the variables the process got."
        ),
        "rule": "no-launcher",
    }


def gpu_collective_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """MindSpore GPU's ``Loading libgpu_collective.so failed``: its collective library needs NCCL and OpenMPI."""
    return {
        "_title": "MindSpore could not load its GPU collective library: NCCL or OpenMPI is missing",
        "_cause": (
            "libgpu_collective.so, MindSpore's GPU collective-communication plug-in, links NCCL and OpenMPI; "
            "loading it failed, so one of them is not installed or not on LD_LIBRARY_PATH, or NCCL is older "
            "than MindSpore needs (2.7.6 or later since MindSpore 1.1)."
        ),
        "_fix": (
            "Install OpenMPI (4.x) and NCCL 2.7.6 or later for your CUDA, and put their lib directories on "
            "LD_LIBRARY_PATH. Unverified: `ldd <site-packages>/mindspore/lib/plugin/gpu*/libgpu_collective.so` "
            "(or `find` it) lists the libraries it cannot find."
        ),
        "rule": "collective-libs",
    }


def network_interface_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """NCCL's ``NCCL WARN Connect to ADDR failed: Network is unreachable`` and OpenMPI UCX's ``Failed to resolve UCX
    endpoint`` / ``Failed to receive UCX worker address``: the nodes talk over an interface that cannot reach the peer."""
    if g.get("peer"):
        return {
            "_title": f"NCCL could not reach {g['peer']} over the network interface it picked",
            "_cause": (
                f"NCCL connects to the other ranks over one network interface (the one NCCL_SOCKET_IFNAME names, "
                f"else the first it finds that is not loopback), and from this node {g['peer']} cannot be "
                f"reached over it ({g.get('why', '')}): most often that interface is not the one on the cluster "
                f"network (the nodes' interfaces differ: docker0, a bridge, a management network), or a firewall "
                f"between the nodes blocks NCCL's ports."
            ),
            "_fix": (
                "`export NCCL_SOCKET_IFNAME=<the interface on the cluster network, e.g. eth0>` on every node (`ip "
                "-br addr` lists them); NCCL_DEBUG=INFO prints the interface NCCL picked. Unverified: `ping` the "
                "peer's address from each node over that interface."
            ),
            "rule": "network-interface",
        }
    return {
        "_title": "OpenMPI (UCX) could not reach the other node: pick the network interface",
        "_cause": (
            "OpenMPI's UCX layer exchanges addresses between the ranks and could not reach the other node's "
            "worker: the machines' network interfaces are configured differently, so the interface UCX chose "
            "does not connect the nodes."
        ),
        "_fix": (
            "Choose the transport and interface explicitly: `mpirun --mca pml ob1 --mca btl tcp,self --mca "
            "btl_tcp_if_include eth0 ...` (or a subnet such as 192.168.0.0/24; UCX_NET_DEVICES for UCX). "
            "Unverified: `ip -br addr` on each node shows the interfaces and their subnets."
        ),
        "rule": "network-interface",
    }


# -- a compiled file for another CPU, and a source build without a library's headers ------------------------------
#: the loaded file in macOS dyld's message: `dlopen(PATH, 0x0002): tried: 'PATH' (mach-o file, but is an incompatible
#: architecture (have 'x86_64', need 'arm64'))`, or the older `dlopen(...): no suitable image found. Did find: PATH:
#: mach-o, but wrong architecture`
_DLOPEN = re.compile(r"dlopen\((?P<path>[^,)]+)|Did find:\s*(?P<found>\S+?):? mach-o")
_EXT = re.compile(r"(?P<file>[\w.+-]+\.(?:so|dylib))\b")
#: a Python extension module's file name or place (https://peps.python.org/pep-3149/), or libpython itself
_PYTHON_EXT = re.compile(r"\.cpython-\d+|\.abi3\.so|[/\\](?:site|dist)-packages[/\\]|libpython\d")


def _package_of(path: str) -> str:
    """The package a compiled file belongs to: its site-packages directory, else its name (`_psutil_osx.cpython-38-
    darwin.so` is psutil's); "" when neither tells."""
    from msdoctor.explain.owners import file_owner

    owner = file_owner(path) if path else None
    if owner is not None and owner.name not in ("NNAL", "CANN", "the Ascend driver"):
        return owner.name
    m = _EXT.search(path)
    name = re.split(r"[._]", m.group("file").lstrip("._"))[0] if m else ""
    return name if len(name) >= 3 and not name.startswith("lib") else ""


def wrong_arch_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """macOS's loader refusing a compiled file built for another CPU (x86_64 on an arm64 Python, or the reverse)."""
    text = "\n".join((*before[-3:], line))
    d = _DLOPEN.search(text)
    path = (g.get("path") or g.get("path2") or ((d.group("path") or d.group("found") or "") if d else "")).strip()
    path = re.sub(r"^(?:find:)", "", path).strip("'\"")
    if not (_PYTHON_EXT.search(path) or re.search(r"ImportError|Traceback|\bimport\b", text)):
        return {}  # not a Python process loading it (a shell's or another program's library): no claim
    pkg = _package_of(path)
    have, need = g.get("have", ""), g.get("need", "")
    arch = f" (it is {have}, this Python runs as {need})" if have and need else ""
    python_itself = bool(re.search(r"libpython\d", path))
    what = pkg or "the package that owns it"
    return {
        "_title": f"{path or 'a compiled file'} was built for another CPU architecture than this Python{arch}",
        "_cause": (
            f"macOS's loader refused {path or 'a compiled extension'}: it was built for another CPU architecture "
            f"than the Python process loading it{arch}. On a Mac with Apple silicon that happens when a package "
            f"was installed by an x86_64 Python (Rosetta, an Intel conda or Homebrew in /usr/local) and is "
            f"loaded by an arm64 one, or the reverse, or when a wheel for the other architecture was installed."
            + (
                " Here it is libpython itself: the whole environment is of the other architecture."
                if python_itself
                else ""
            )
        ),
        "_fix": (
            (
                f"Reinstall {what} with the interpreter that runs it: `{{python}} -m pip install --force-reinstall "
                f"--no-cache-dir {pkg or '<package>'}` (for psutil and other small C extensions, `--no-binary :all:` "
                f"builds it for this CPU; in a conda env, `conda install {pkg or '<package>'}`). "
            )
            if not python_itself
            else "Recreate the environment with a Python of this Mac's architecture. "
        )
        + 'Unverified: `{python} -c "import platform; print(platform.machine())"` and `file <the .so>` show '
        "the two architectures.",
        "rule": "wrong-architecture",
    }


#: Pillow's setup.py names the library it could not find (https://pillow.readthedocs.io/en/stable/installation/
#: building-from-source.html lists each one's package): the development packages to install per system
_PILLOW_DEPS = {
    "jpeg": ("libjpeg-dev", "libjpeg-turbo-devel", "jpeg-turbo"),
    "zlib": ("zlib1g-dev", "zlib-devel", "zlib"),
    "freetype": ("libfreetype6-dev", "freetype-devel", "freetype"),
    "tiff": ("libtiff5-dev", "libtiff-devel", "libtiff"),
    "webp": ("libwebp-dev", "libwebp-devel", "webp"),
}


def pillow_headers_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """Pillow's ``The headers or library files could not be found for DEP``: pip is compiling Pillow from source (no
    wheel of that release fits this Python and platform) and the system lacks DEP's development files."""
    dep = g.get("dep", "").lower()
    apt, yum, brew = _PILLOW_DEPS.get(dep, (f"lib{dep}-dev", f"{dep}-devel", dep))
    return {
        "_title": f"pip is compiling Pillow from source and the system lacks {dep}'s headers (lib{dep})",
        "_cause": (
            f"Pillow's build needs the development files (headers and library) of {dep}; they are not installed, "
            f"so the source build stops. pip builds Pillow from source only when no Pillow wheel of the release "
            f"asked for fits this Python and platform (a release older or newer than this Python, an uncommon "
            f"CPU or OS)."
        ),
        "_fix": (
            f"Install {dep}'s development package (`apt install {apt}`, `yum install {yum}`, `brew install "
            f"{brew}`) and run pip again; or install a Pillow release that has a wheel for this Python "
            f"(`{{python}} -m pip install --only-binary :all: pillow`). Unverified: the Pillow release pip tried is "
            f"on the 'Collecting' or 'Building wheel' line above."
        ),
        "rule": "pillow-headers",
    }


# -- the process or thread limit ---------------------------------------------------------------------------------------
#: OpenBLAS's report after pthread_create failed: `RLIMIT_NPROC 4096 current, 513046 max` (-1 is unlimited)
_NPROC = re.compile(r"RLIMIT_NPROC (?P<cur>-?\d+) current, (?P<max>-?\d+) max")


def thread_limit_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """CPython's ``can't start new thread`` (threading.Thread.start when pthread_create fails) and OpenBLAS's
    ``pthread_create failed for thread N of M``: the OS refused the process another thread. On Linux a thread counts
    against the user's process limit (RLIMIT_NPROC, ``ulimit -u``: getrlimit(2),
    https://man7.org/linux/man-pages/man2/getrlimit.2.html) and a container's or systemd unit's pids limit; else the
    memory for its stack ran out. OpenBLAS prints the limit it saw: an unlimited one (-1) rules RLIMIT_NPROC out."""
    near = (line, *after[:3], *reversed(before[-3:]))  # OpenBLAS prints the limit after the failure (before, in 0.2)
    nproc = next((m for x in near if (m := _NPROC.search(x))), None)
    cur = nproc.group("cur") if nproc else ""
    unlimited = cur == "-1"
    if unlimited:
        why = (
            "OpenBLAS reports RLIMIT_NPROC unlimited (-1), so the user's process limit is not what refused it: a "
            "pids limit of the container or cgroup (docker --pids-limit, Kubernetes' pod pids limit, systemd's "
            "TasksMax), the kernel's threads-max, or memory for the threads' stacks ran out"
        )
    else:
        shown = f" (here RLIMIT_NPROC is {cur})" if cur else ""
        why = (
            f"every thread counts against the user's process limit, RLIMIT_NPROC (`ulimit -u`){shown}, summed over "
            f"all the user's processes on the machine; a container's pids limit or systemd's TasksMax caps it too, "
            f"and a large stack size (`ulimit -s`) times many threads can exhaust memory first"
        )
    blas = "OpenBLAS" in line
    who = "OpenBLAS starts one thread per core in every process that loads it, and" if blas else "the threads add up:"
    return {
        "_title": "the OS refused to start another thread: the process/thread limit (ulimit -u) or a pids limit is "
        "reached",
        "_cause": (
            f"Starting a thread failed in the OS (pthread_create returned EAGAIN), not in the code: {why}. In a "
            f"training job {who} each dataset operation's num_parallel_workers (MindSpore's map, batch and "
            f"GeneratorDataset; a DataLoader's num_workers), each worker process's own thread pools (OpenBLAS, "
            f"OpenMP), times the ranks on the node."
        ),
        "_fix": (
            "Raise the limit for the user that runs the job (`ulimit -u 65535` in the launching shell, or nproc in "
            "/etc/security/limits.conf; a container's `--pids-limit`), or start fewer threads: lower "
            "num_parallel_workers (per operation, or `mindspore.dataset.config.set_num_parallel_workers(N)`), "
            "num_workers, and `export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1` for the worker processes. "
            "Unverified: `ulimit -u` and `ulimit -s` show the limits, `ps -eLf -u $USER | wc -l` the threads the "
            "user already runs, `cat /sys/fs/cgroup/pids.max` a container's pids limit."
        ),
        "rule": "thread-limit",
    }


# -- more dataset workers than CPU threads ----------------------------------------------------------------------------
def dataset_workers_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """MindSpore's dataset check of a worker count against the CPU threads the machine has: the C++ op's
    ``OP's num_workers=N(default=8), this value is not within the required range of [1, cpu_thread_cnt=C]``, the
    Python validator's ``num_parallel_workers exceeds the boundary between 1 and C!`` and ConfigManager's ``... as got
    N``. The range is stated; the value, where stated, is read against it."""
    c = g.get("c") or g.get("c2") or ""
    if not c:
        return {}
    n, op = g.get("n") or g.get("n2") or "", g.get("op", "")
    where = f"{op}'s" if op else "a dataset operation's (or the global config's)"
    default = "(default=" in line
    if n and int(n) < 1:
        what = f"{where} num_parallel_workers is {n}: it must be at least 1"
    elif n:
        what = (
            f"{where} num_parallel_workers asks for {n} workers and this machine gives the process {c} CPU "
            f"thread(s)"
            + (
                f"; {n} is the default, which comes from the global config (mindspore.dataset.config, 8 unless "
                f"set), so passing num_parallel_workers to another operation does not change it"
                if default
                else ""
            )
        )
    else:
        what = (
            f"{where} num_parallel_workers lies outside 1 to {c}, {c} being the CPU threads this machine gives the "
            f"process (a value above it, or below 1)"
        )
    return {
        "_title": f"the dataset asks for more parallel workers than the {c} CPU thread(s) here"
        if not (n and int(n) < 1)
        else "a dataset operation was given fewer than 1 parallel worker",
        "_cause": (
            f"MindSpore's dataset checks every operation's worker count against the CPU threads it finds on the "
            f"machine: {what}. A small VM, a container's CPU quota or a notebook (2 threads on Colab) gives fewer "
            f"than the 8 the dataset defaults to; MindSpore 1.6 and later lower the default to the cores found."
        ),
        "_fix": (
            f"Set the workers to at most {c}: `mindspore.dataset.config.set_num_parallel_workers({c})` before the "
            f"dataset is built (the default of every operation), and num_parallel_workers={c} or less where an "
            f"operation is given one (GeneratorDataset, map, batch); or give the machine or container more CPUs. "
            f'Unverified: `nproc` and `{{python}} -c "import os; print(len(os.sched_getaffinity(0)))"` show the '
            f"threads the process may use."
        ),
        "rule": "dataset-workers",
    }


# -- a host name the launcher cannot resolve ---------------------------------------------------------------------------
#: getaddrinfo's errors as Python prints them ([Errno N], glibc's EAI_* values: getaddrinfo(3),
#: https://man7.org/linux/man-pages/man3/getaddrinfo.3.html): -2 the name is not known, -3 the DNS server did not
#: answer (try again), -5 the name has no address
_EAI = {
    "-2": "the name is not known to the resolver (not in /etc/hosts, and DNS has no such name)",
    "-3": "the DNS server did not answer (a temporary failure: no DNS server reachable from this node)",
    "-5": "the name is known but has no address",
}


def host_unresolved_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """A launcher that cannot turn a node's host name into an address: msrun's ``DNS resolution failed: [Errno N]
    ... Please check whether the correct host name is input`` (its master_addr), and ``ssh: Could not resolve
    hostname H`` from a launcher that reaches the hosts of its hostfile by ssh (deepspeed, mpirun, horovodrun). A
    name with a colon or a space in it is a host:slots or host:port spec, or a command, handed over where a bare
    name is expected: not DNS, no claim."""
    host = g.get("host", "")
    if host and re.search(r"[:\s=;]", host):
        return {}
    errno = g.get("errno", "")
    why = _EAI.get(errno, "the resolver could not find it")
    if host:
        what = f"ssh could not resolve the host name {host}: {why}"
        who = (
            "The launcher reaches every host of its hostfile (or -H list) by ssh, so each name there must resolve "
            "on the node that launches"
        )
        fix_name = host
    else:
        what = f"msrun could not resolve the host name given as master_addr: {why}"
        who = (
            "msrun turns master_addr (the node that runs the scheduler) into an address on every node, so the name "
            "must resolve on each of them; a typo, a name only the master knows (its own /etc/hosts), or a node "
            "that cannot reach the DNS server gives this"
        )
        fix_name = "<master_addr>"
    return {
        "_title": f"a host name the launcher was given does not resolve (DNS or /etc/hosts): {host or 'master_addr'}",
        "_cause": f"{what}. {who}.",
        "_fix": (
            f"Give the node's IP address instead of its name (msrun --master_addr=<IP>; the hostfile's entries), "
            f"or make the name resolve on every node: add `<IP> {fix_name}` to /etc/hosts, or fix the DNS server "
            f"in /etc/resolv.conf. Unverified: `getent hosts {fix_name}` (and `nslookup {fix_name}`) on each node "
            f"shows whether it resolves; a firewall that blocks DNS (port 53) gives errno -3."
        ),
        "rule": "host-unresolved",
    }


# -- the shell that runs a launch script ------------------------------------------------------------------------------
#: a script's name and line as bash and dash print them before their message (`./run.sh: line 3:`, `run.sh: 3:`)
_SCRIPT_AT = re.compile(r"(?P<script>[^\s:'\"]+\.(?:sh|bash))\s*:\s*(?:line\s+|行\s*)?(?P<n>\d+)\s*:")


def shell_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """Two things a launch script's shell says about the machine rather than the script's logic: a token ending in a
    carriage return (bash's ``$'\\r': command not found`` and ``syntax error near unexpected token `$'{\\r''``: the
    script has Windows (CRLF) line endings, so bash reads a \\r at the end of every line; bash(1) QUOTING,
    https://www.gnu.org/software/bash/manual/bash.html#ANSI_002dC-Quoting, prints a word with control characters as
    $'...'), and no command named ``python`` (``sh: 1: python: not found``, ``python: command not found``, ``/usr/bin/env:
    'python': No such file or directory``): the system has python3 only (PEP 394 leaves the name python to the
    distribution; Ubuntu 20.04 and Debian 11 ship none, https://wiki.ubuntu.com/FocalFossa/ReleaseNotes#Python3_by_default).
    A missing python3, or python missing inside an environment that should provide it, is not told apart here: the
    rule says what the shell looked for."""
    at = _SCRIPT_AT.search(line)
    script = at.group("script") if at else ""
    if "cr" in g or "cr2" in g:
        where = f"{script} (line {at.group('n')})" if at else "the script"
        target = script or "<script>.sh"
        return {
            "_title": f"{script or 'the shell script'} has Windows (CRLF) line endings: bash reads a \\r at the end of "
            "every line",
            "_cause": (
                f"The shell printed a word ending in \\r ($'...\\r') in {where}: the file's lines end in CR LF, as "
                f"Windows editors and git's core.autocrlf write them, and bash takes the carriage return as part of "
                f"the last word of each line, so commands, keywords (then, do, {{) and values all carry it. The "
                f"script was copied or checked out on Windows (or through a tool that converted it)."
            ),
            "_fix": (
                f"Convert it to Unix line endings: `dos2unix {target}` (or `sed -i 's/\\r$//' {target}`; in vim "
                f"`:set ff=unix` and save), and for a git checkout `git config core.autocrlf input` or a "
                f"`.gitattributes` line `*.sh text eol=lf`. Unverified: `file {target}` says 'with CRLF line "
                f"terminators' while it has them."
            ),
            "rule": "script-crlf",
        }
    if "py" in g or "py2" in g:
        return {
            "_title": "there is no command named python on this PATH (Python 3 is often installed as python3 only)",
            "_cause": (
                "A script or tool ran the command `python` and the shell found none. Current Linux distributions "
                "install Python 3 as python3 and leave the name python unset or pointing at Python 2 (PEP 394; "
                "Ubuntu 20.04 and Debian 11 ship no python), so build scripts and launchers that call python fail "
                "although Python 3 is installed; inside a virtual or conda environment that is not activated the "
                "same happens."
            ),
            "_fix": (
                "Activate the environment that should run it (`source <env>/bin/activate`, `conda activate <env>`), "
                "or make python name Python 3: `sudo apt install python-is-python3` on Debian/Ubuntu, or a link "
                '`sudo ln -sf "$(command -v python3)" /usr/local/bin/python`. Unverified: `command -v python '
                "python3` and `python --version` show what the name runs."
            ),
            "rule": "python-command-missing",
        }
    return {}


# -- a kernel module built without the running kernel's headers -------------------------------------------------------
def kernel_headers_groups(g: Groups, before: Sequence[str], line: str, after: Sequence[str]) -> Groups:
    """``/lib/modules/VER/build: No such file or directory``: a kernel module build (kbuild's ``make -C
    /lib/modules/$(uname -r)/build M=...``: a driver's installer, the Ascend NPU driver's, NVIDIA's, DKMS) found no
    headers for kernel VER. The build link in /lib/modules/VER is made by the kernel headers package of exactly that
    release (kbuild's external modules, https://docs.kernel.org/kbuild/modules.html)."""
    ver = g.get("kver", "")
    if not ver:
        return {}
    return {
        "_title": f"the headers of kernel {ver} are not installed: a kernel module (a driver) cannot be built",
        "_cause": (
            f"Building a kernel module (a device driver's installer: the Ascend NPU driver, NVIDIA's, a DKMS "
            f"package) needs the headers of the kernel it will load into, which the build finds through "
            f"/lib/modules/{ver}/build. That link is missing: the kernel headers (kernel-devel) package for "
            f"{ver} is not installed, or headers of another kernel release are (a kernel updated and not yet "
            f"booted into, or headers installed for the newest kernel while an older one runs)."
        ),
        "_fix": (
            f"Install the headers of exactly this release: `apt install linux-headers-{ver}` (Debian/Ubuntu; "
            f"`raspberrypi-kernel-headers` on Raspberry Pi OS), `yum install kernel-devel-{ver} "
            f"kernel-headers-{ver}` (CentOS, EulerOS, openEuler, HCE), then run the installer again. If no package "
            f"of that release exists, update the kernel and its headers together and reboot into it. Unverified: "
            f"`uname -r` shows the running kernel, `ls -l /lib/modules/$(uname -r)/build` whether its headers are "
            f"there."
        ),
        "rule": "kernel-headers-missing",
    }


#: lookup -> the rule (the catalogue's ENV_LOOKUPS, each with its function; numpy-size, device-memory,
#: stream-limit and metadata-missing live in their families, native.py and packaging.py, and dispatch through this table)
CLAIMS: dict[str, Callable[[Groups, Sequence[str], str, Sequence[str]], Groups]] = {
    "mindspore-core": mindspore_core_groups,
    "cann-python": cann_python_groups,
    "device-range": device_range_groups,
    "ranktable": ranktable_groups,
    "rank-arguments": rank_arguments_groups,
    "pip-network": pip_network_groups,
    "loader-version": loader_version_groups,
    "system-tool": system_tool_groups,
    "linker-needed": linker_needed_groups,
    "cluster-role": cluster_role_groups,
    "gpu-collective": gpu_collective_groups,
    "network-interface": network_interface_groups,
    "wrong-arch": wrong_arch_groups,
    "pillow-headers": pillow_headers_groups,
    "thread-limit": thread_limit_groups,
    "numpy-size": numpy_size_groups,
    "dataset-workers": dataset_workers_groups,
    "host-unresolved": host_unresolved_groups,
    "metadata-missing": metadata_missing_groups,
    "device-memory": device_memory_groups,
    "shell": shell_groups,
    "kernel-headers": kernel_headers_groups,
    "stream-limit": stream_limit_groups,
}
assert set(CLAIMS) == set(ENV_LOOKUPS), "catalogue.ENV_LOOKUPS and rules.env.CLAIMS name the same lookups"
#: rules whose fix runs no Python (the device, the launch, the network, the loader)
NO_PYTHON = frozenset(
    {
        "device-out-of-range",
        "ranktable-invalid",
        "ranks-disagree",
        "loader-other-copy",
        "system-python-changed",
        "linker-needed",
        "no-launcher",
        "collective-libs",
        "network-interface",
        "thread-limit",
        "host-unresolved",
        "device-memory-held",
        "device-memory-exhausted",
        "script-crlf",
        "python-command-missing",
        "kernel-headers-missing",
        "streams-exhausted",
        "streams-exhausted-capture",
    }
)
