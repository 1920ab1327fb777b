"""The target's own pip as an oracle: what would it install, and which versions does its index have.

Nothing is installed here. Every question is one subprocess of the TARGET interpreter's pip, run
with an argument list, from an empty scratch directory, with a time limit and bounded output
(msdoctor.proc), and the user's own pip configuration (index, proxy, find-links):

* ``TARGET -m pip install --dry-run --quiet --report - [--no-deps] SPEC...`` -> :class:`DryRun`
  (pip's installation report: https://pip.pypa.io/en/stable/reference/installation-report/);
* ``TARGET -m pip index versions NAME`` -> the versions the index really has for this target
  (Python version and platform tags applied by pip itself), falling back to the list in pip's
  "from versions: ..." error for pips without ``index``.

Answers are cached per :class:`Resolver` (one per msdoctor run). Network trouble is recognised
from pip's own messages and reported as ``offline`` with pip's words, so that a fix can say why
it is unverified instead of claiming a version does not exist.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from msdoctor import proc

#: one dry run may download wheels to read their metadata (MindSpore: ~780 MB)
DRY_RUN_TIMEOUT_S = 240.0
INDEX_TIMEOUT_S = 60.0
#: pip's socket timeout and retries: an unreachable index answers in seconds, not minutes
PIP_NET_ARGS = ("--retries", "1", "--timeout", "20")
MAX_OUTPUT = 4_000_000

#: what pip (and urllib3/requests under it) print when the index cannot be reached
_OFFLINE_RE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|Connection refused|ProxyError|ConnectTimeoutError|"
    r"Read timed out|ReadTimeoutError|SSLError|No route to host|nodename nor servname|"
    r"Could not fetch URL|connection broken|RemoteDisconnected",
    re.I,
)
_NOT_FOUND_RE = re.compile(r"Could not find a version that satisfies the requirement (.+?) \(from versions: ([^)]*)\)")
_NO_DIST_RE = re.compile(r"No matching distribution found for (\S+)")
_AVAILABLE_RE = re.compile(r"^Available versions:\s*(.*)$", re.M)


@dataclass(frozen=True)
class Planned:
    """One distribution pip would install (from its report)."""

    name: str
    version: str
    requires: tuple[str, ...]
    requires_python: Optional[str]
    url: Optional[str]
    requested: bool

    @property
    def key(self) -> str:
        from packaging.utils import canonicalize_name

        return canonicalize_name(self.name)


@dataclass
class DryRun:
    """pip's answer to one ``install --dry-run --report -``.

    state: "ok" (``install`` lists what pip would install; empty: all already satisfied),
    "unsatisfiable" (the index has no version for ``missing``: pip's words in ``error``),
    "offline" (the index could not be reached), "timeout" (pip did not answer in time),
    "nopip" (the target interpreter has no pip),
    "failed" (anything else pip refused).
    """

    argv: list[str]
    state: str
    install: list[Planned] = field(default_factory=list)
    error: str = ""
    missing: Optional[str] = None  # the requirement no version satisfies ("mindspore~=2.11.0")
    available: Optional[list[str]] = None  # pip's "from versions: ..." for it
    seconds: float = 0.0
    pip_version: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.state == "ok"


def parse_report(text: str) -> tuple[list[Planned], Optional[str]]:
    """The install list and pip version of an installation report (raises ValueError when it is not one)."""
    data = json.loads(text)
    if not isinstance(data, dict) or "install" not in data:
        raise ValueError("not a pip installation report")
    out = []
    for item in data.get("install") or []:
        md = item.get("metadata") or {}
        if not md.get("name") or not md.get("version"):
            continue
        out.append(
            Planned(
                name=str(md["name"]),
                version=str(md["version"]),
                requires=tuple(str(r) for r in md.get("requires_dist") or ()),
                requires_python=md.get("requires_python"),
                url=(item.get("download_info") or {}).get("url"),
                requested=bool(item.get("requested")),
            )
        )
    return out, data.get("pip_version")


def classify_failure(stderr: str) -> tuple[str, Optional[str], Optional[list[str]], str]:
    """(state, missing requirement, versions pip listed, the error in pip's words) of a failed pip run."""
    if "No module named pip" in stderr:
        return "nopip", None, None, "the target interpreter has no pip (python -m ensurepip --upgrade installs it)"
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and "is ignored: it is neither" not in ln]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    words = " ".join(errors[:3]) or (lines[-1] if lines else "pip printed nothing")
    m = _NOT_FOUND_RE.search(stderr)
    available = None
    missing = None
    if m:
        missing = m.group(1).strip()
        listed = m.group(2).strip()
        available = [] if listed in ("", "none") else [v.strip() for v in listed.split(",") if v.strip()]
    elif n := _NO_DIST_RE.search(stderr):
        missing = n.group(1).strip()
    if _OFFLINE_RE.search(stderr) and not available:
        net = next((ln for ln in lines if _OFFLINE_RE.search(ln)), words)
        return "offline", missing, None, net[:400]
    if missing is not None:
        return "unsatisfiable", missing, available, words[:600]
    return "failed", None, None, words[:600]


def _env(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    env["PYTHONIOENCODING"] = "utf-8"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    env.pop("PYTHONINSPECT", None)
    return env


@dataclass
class Resolver:
    """Asks one target interpreter's pip; every answer is cached for the life of the object.

    ``runner`` is msdoctor.proc.run (tests may count calls through it); ``environ`` is the user's
    environment, so pip's own configuration (PIP_INDEX_URL, pip.conf, proxies) applies.
    """

    python: str
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    runner: Callable[..., proc.ProcResult] = proc.run
    dry_run_timeout_s: float = DRY_RUN_TIMEOUT_S
    budget_s: float = 600.0
    calls: int = 0
    spent_s: float = 0.0
    _cache: dict = field(default_factory=dict)

    def _run(self, args: Sequence[str], timeout: float) -> proc.ProcResult:
        key = tuple(args)
        if key in self._cache:
            return self._cache[key]
        left = self.budget_s - self.spent_s
        if left <= 5:
            res = proc.ProcResult([self.python, "-m", "pip", *args], None, "", "", 0.0, timed_out=True)
            self._cache[key] = res
            return res
        scratch = tempfile.mkdtemp(prefix="msdoctor-pip-")
        try:
            res = self.runner(
                [self.python, "-m", "pip", *args], timeout=min(timeout, left), cwd=scratch, env=_env(self.environ)
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        res.stdout = res.stdout[:MAX_OUTPUT]
        res.stderr = res.stderr[-MAX_OUTPUT:]
        self.calls += 1
        self.spent_s += res.duration_s
        self._cache[key] = res
        return res

    def dry_run(
        self,
        specs: Sequence[str],
        *,
        no_deps: bool = True,
        constraints: Sequence[str] = (),
        timeout_s: Optional[float] = None,
    ) -> DryRun:
        """What ``pip install SPEC...`` would install now (nothing is installed); ``timeout_s`` bounds this
        one call below the default (a shortcut the caller can do without)."""
        args = ["install", "--dry-run", "--quiet", "--report", "-", *PIP_NET_ARGS]
        if no_deps:
            args.append("--no-deps")
        scratch_c = None
        if constraints:
            fd, scratch_c = tempfile.mkstemp(prefix="msdoctor-constraints-", suffix=".txt")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write("\n".join(constraints) + "\n")
            args += ["-c", scratch_c]
        started = time.monotonic()
        try:
            key_args = [*args[:-2], "-c", "\n".join(constraints)] if constraints else args
            key = tuple(key_args) + tuple(specs)
            if key in self._cache:
                res = self._cache[key]
            else:
                res = self._run([*args, *specs], min(self.dry_run_timeout_s, timeout_s or self.dry_run_timeout_s))
                self._cache[key] = res
        finally:
            if scratch_c:
                os.unlink(scratch_c)
        argv = [self.python, "-m", "pip", "install", "--dry-run", *(["--no-deps"] if no_deps else []), *specs]
        out = DryRun(argv=argv, state="failed", seconds=time.monotonic() - started)
        if res.start_error:
            out.error = f"could not run {self.python} -m pip: {res.start_error}"
            return out
        if res.timed_out:
            out.state = "timeout"
            out.error = (
                f"pip did not answer within {self.dry_run_timeout_s:.0f} s"
                if res.duration_s
                else f"msdoctor's time for asking pip ({self.budget_s:.0f} s) ran out"
            )
            return out
        if res.returncode == 0:
            try:
                out.install, out.pip_version = parse_report(res.stdout)
            except ValueError:
                out.error = "pip printed no installation report (pip 22.2 or newer is needed for --report)"
                return out
            out.state = "ok"
            return out
        out.state, out.missing, out.available, out.error = classify_failure(res.stderr)
        if "no such option: --report" in res.stderr or "no such option: --dry-run" in res.stderr:
            out.state, out.error = "failed", "this pip is too old for --dry-run --report (pip 22.2 or newer is needed)"
        return out

    def versions(self, name: str) -> tuple[Optional[list[str]], str]:
        """(versions the index has for this target, newest first; None when it cannot tell, why)."""
        res = self._run(["index", "versions", name, *PIP_NET_ARGS], INDEX_TIMEOUT_S)
        if res.returncode == 0:
            m = _AVAILABLE_RE.search(res.stdout)
            if m:
                return [v.strip() for v in m.group(1).split(",") if v.strip()], ""
        state, _, available, words = classify_failure(res.stderr)
        if state in ("offline", "nopip") or res.timed_out:
            return None, words if state != "failed" else "pip did not answer in time"
        if "No matching distribution" in res.stderr:
            return [], words
        # pip without `index` (older than 21.2): the resolver's own error lists the versions
        probe = self.dry_run([f"{name}==0+msdoctor.no.such.version"])
        if probe.state == "unsatisfiable" and probe.available is not None:
            return _newest_first(probe.available), ""
        return None, probe.error or words


def _newest_first(versions: Sequence[str]) -> list[str]:
    from packaging.version import InvalidVersion, Version

    def key(v: str) -> Any:
        try:
            return (1, Version(v))
        except InvalidVersion:
            return (0, v)

    return sorted(dict.fromkeys(versions), key=key, reverse=True)
