"""Builders shared by the tests: real venvs, fake tools on PATH, contexts from fake facts.

Real parts where users have them: venvs are made with the real ``venv`` module
and filled with the real pip; "layered" venvs see the test environment's
packages (MindSpore 2.7.0, transformers, ...) through a .pth file, so the
800 MB wheel is installed once per machine and every broken variation is a
few small installs on top of it.

Ascend and NVIDIA hardware are not here: their tools are faked by executables
that print the real formats taken from public issues (tests/data/npu_smi/SOURCES.md).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

REPO = Path(__file__).resolve().parents[1]
#: the interpreter running the tests: it has MindSpore 2.7.0 and the test extras
BASE_PYTHON = sys.executable
BASE_PURELIB = sysconfig.get_paths()["purelib"]


def msdoctor_exe() -> str:
    """The installed console script next to the test interpreter."""
    exe = Path(BASE_PYTHON).with_name("msdoctor")
    return str(exe) if exe.exists() else "msdoctor"


@dataclass
class Venv:
    """A virtual environment made for a test."""

    root: Path

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def site_packages(self) -> Path:
        found = sorted((self.root / "lib").glob("python*/site-packages"))
        return found[0]

    def pip(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        """Run the real pip (the test env's) against this venv: ``pip --python <venv> ...``.

        With ``check``, a failure because the package index cannot be reached skips the test."""
        cmd = [BASE_PYTHON, "-m", "pip", "--python", self.python, "--disable-pip-version-check", *args]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check:
            skip_if_index_unreachable(res)
        if check and res.returncode != 0:
            raise RuntimeError(f"pip {' '.join(args)} failed:\n{res.stdout}\n{res.stderr}")
        return res

    def run(
        self, code: str, *, env: Optional[Mapping[str, str]] = None, cwd: Optional[Path] = None, timeout: float = 300
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.python, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
        )


#: what pip prints when it cannot reach the package index (DNS, no route, proxy, timeouts); "(from
#: versions: none)" for a pinned release that exists means the index answered nothing
_OFFLINE = (
    "(from versions: none)",
    "Network is unreachable",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Max retries exceeded",
    "Name or service not known",
    "Read timed out",
    "ProxyError",
)


def skip_if_index_unreachable(res: subprocess.CompletedProcess) -> None:
    """Skip the running test when a pip command failed only because the package index is unreachable."""
    import pytest

    out = (res.stdout or "") + (res.stderr or "")
    out = out if isinstance(out, str) else out.decode("utf-8", "replace")
    if res.returncode != 0 and any(s in out for s in _OFFLINE):
        pytest.skip(
            "the package index cannot be reached from here (pip: " + next(s for s in _OFFLINE if s in out) + ")"
        )


def pip_from_index(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """subprocess.run of a pip command that downloads from the index: checked, skipped when offline."""
    res = subprocess.run(list(argv), capture_output=True, text=True, **kwargs)
    skip_if_index_unreachable(res)
    if res.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, argv))} failed:\n{res.stdout}\n{res.stderr}")
    return res


def make_venv(root: Path, *, layered: bool = False, with_pip: bool = False) -> Venv:
    """Create a real venv at root.

    Args:
        layered: make the test environment's site-packages (MindSpore, transformers, ...)
            importable after the venv's own, through a .pth file.
        with_pip: bootstrap pip inside the venv (slower; only when the test needs the
            venv's own pip). Otherwise use :meth:`Venv.pip`, which drives the real pip
            of the test environment with ``--python``.
    """
    base = getattr(sys, "_base_executable", None) or sys.executable
    args = [base, "-m", "venv", str(root)]
    if not with_pip:
        args.insert(3, "--without-pip")
    subprocess.run(args, check=True, capture_output=True, timeout=300)
    venv = Venv(root)
    if layered:
        # addsitedir (not a bare path line) also runs the base's own .pth files, e.g. the
        # editable-install finder of msdoctor, as --system-site-packages would
        (venv.site_packages / "_msdoctor_test_base.pth").write_text(f"import site; site.addsitedir({BASE_PURELIB!r})\n")
    return venv


def built_once(name: str, build: Callable[[Path], Any]) -> Path:
    """The folder ``build(folder)`` fills, built once per pytest run and shared by all its xdist workers: the first
    test that asks builds it under the run's temporary cache folder (``MSDOCTOR_TEST_CACHE_HOME``, set by the
    controller in tests/conftest.py and removed with it) while it holds a lock; a worker that asks meanwhile waits
    for it. A build that fails or skips leaves nothing behind, and the next test that asks tries again."""
    import fcntl

    base = Path(os.environ["MSDOCTOR_TEST_CACHE_HOME"]) / ".built-once"
    base.mkdir(parents=True, exist_ok=True)
    folder, done = base / name, base / f"{name}.done"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed, also when build raises
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            try:
                build(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            done.touch()
    return folder


def linked_copy(venv: Venv, root: Path) -> Venv:
    """A venv of the test's own with the files of ``venv``: each file a hard link (``cp -al``: seconds, not the
    minutes of installing a 2 GB MindSpore again), its scripts' ``#!`` lines pointing at the copy. A venv is not
    relocatable by itself only through those lines: ``sys.prefix`` comes from the copy's ``pyvenv.cfg``. Safe to
    install into: pip unlinks a file before it writes one of the same name (``File.save`` in
    https://github.com/pypa/pip/blob/23.2.1/src/pip/_internal/operations/install/wheel.py) and moves an
    uninstalled one aside by renaming it, and Python writes a ``.pyc`` to a temporary file that it renames over the
    old one (``_write_atomic`` in https://github.com/python/cpython/blob/3.11/Lib/importlib/_bootstrap_external.py),
    so none of them writes into a file the original shares."""
    subprocess.run(["cp", "-al", str(venv.root), str(root)], check=True, capture_output=True, timeout=300)
    old, new = f"#!{venv.root}/".encode(), f"#!{root}/".encode()
    for script in (root / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        text = script.read_bytes()
        if text.startswith(old):
            mode = script.stat().st_mode
            script.unlink()  # a new file, not a write into the one the original shares
            script.write_bytes(new + text[len(old) :])
            script.chmod(mode)
    return Venv(root)


def fake_tool(
    bin_dir: Path, name: str, stdout: str = "", *, exit_code: int = 0, stderr: str = "", sleep: float = 0.0
) -> Path:
    """An executable ``name`` in bin_dir that prints stdout/stderr and exits with exit_code."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    data_out = bin_dir / f".{name}.stdout"
    data_err = bin_dir / f".{name}.stderr"
    data_out.write_text(stdout)
    data_err.write_text(stderr)
    script = bin_dir / name
    script.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        {"sleep " + str(sleep) if sleep else ":"}
        cat "{data_out}"
        cat "{data_err}" >&2
        exit {exit_code}
        """)
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def env_with(
    extra: Optional[Mapping[str, str]] = None, *, drop: Sequence[str] = (), path_first: Sequence[Path] = ()
) -> dict:
    """os.environ plus extra, minus drop, with dirs put first on PATH; spinner and colour off."""
    env = dict(os.environ)
    for k in drop:
        env.pop(k, None)
    env.update({"NO_COLOR": "1", "MSDOCTOR_NO_SPINNER": "1", "COLUMNS": "200"})
    if extra:
        env.update(extra)
    if path_first:
        env["PATH"] = os.pathsep.join([str(p) for p in path_first] + [env.get("PATH", "")])
    return env


def run_msdoctor(
    *args: str,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[Path] = None,
    timeout: float = 600,
    input: Optional[str] = None,
) -> subprocess.CompletedProcess:
    """Run the real installed ``msdoctor`` command."""
    return subprocess.run(
        [msdoctor_exe(), *args],
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else env_with(),
        cwd=cwd,
        timeout=timeout,
        input=input,
    )


def run_json(*args: str, **kw: Any) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``msdoctor ... --format json`` and parse stdout."""
    res = run_msdoctor(*args, "--format", "json", **kw)
    try:
        data = json.loads(res.stdout)
    except ValueError as exc:
        raise AssertionError(f"not JSON (rc={res.returncode}):\n{res.stdout}\n{res.stderr}") from exc
    return res, data


def check_of(report: dict, check_id: str) -> dict:
    for c in report["checks"]:
        if c["id"] == check_id:
            return c
    raise AssertionError(f"no check {check_id} in report: {[c['id'] for c in report['checks']]}")


_PROBE_CACHE: dict[str, dict] = {}


def probe_json(python: str = BASE_PYTHON) -> dict:
    """The real probe JSON of an interpreter (cached per interpreter for unit tests)."""
    from msdoctor.probe import run_script

    key = python
    if key not in _PROBE_CACHE:
        data, _ = run_script(python, "target_probe.py", timeout=60)
        _PROBE_CACHE[key] = data
    return json.loads(json.dumps(_PROBE_CACHE[key]))  # a deep copy the test may change


def make_ctx(facts: Optional[Mapping[str, Any]] = None, environ: Optional[Mapping[str, str]] = None, **options: Any):
    """A Context from fake facts: no subprocess runs unless a fact is missing."""
    from msdoctor.context import Context, Options

    return Context(Options(**options), facts=dict(facts or {}), environ=environ if environ is not None else {})


def free_port() -> int:
    """A TCP port that is free now and that the OS will not hand out meanwhile: below the ephemeral range
    (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default), from which every outgoing connection takes
    its local port. A test can hold a port for minutes before msrun binds it (msdoctor train runs its gate first);
    a port from bind(0), in that range, was once taken by another test's pip connection in that time ("Building
    networking for MS_SCHED failed"). Random, bound once to check: parallel workers do not pick the same one, as
    ``18000 + pid % 1000`` could."""
    import random
    import socket

    low = 32768
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    lo, hi = 20000, max(20001, min(low, 32768) - 1)
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randint(lo, hi)
        with socket.socket() as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # every try in use: the OS's choice, as before
        s.bind(("", 0))
        return int(s.getsockname()[1])


def pyenv_root() -> Path:
    """pyenv's root as pyenv itself finds it: $PYENV_ROOT, else ~/.pyenv (as scripts/_python.sh does)."""
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


@functools.lru_cache(maxsize=None)
def which_python(version: str) -> Optional[str]:
    """An installed interpreter of another version (on PATH, or in pyenv's versions folder), or None.

    Cached per pytest process: each candidate is run once, not once per test that asks."""
    pyenv = pyenv_root() / "versions"
    candidates = [shutil.which(f"python{version}")] + [
        str(c / "bin" / "python") for c in sorted(pyenv.glob(f"{version}.*"))
    ]
    for exe in candidates:
        # a pyenv shim is on PATH for every installed version but fails ("command not found")
        # unless that version is selected: only an interpreter that runs counts
        if (
            exe
            and os.path.exists(exe)
            and subprocess.run(
                [exe, "-c", f"import sys; assert '%d.%d' % sys.version_info[:2] == '{version}'"],
                capture_output=True,
                timeout=30,
            ).returncode
            == 0
        ):
            return exe
    return None


def no_python_reason(version: str) -> str:
    """The skip reason when :func:`which_python` finds no ``version``: what is missing and how to get it."""
    return (
        f"no Python {version} on this machine (looked for python{version} on PATH and in "
        f"{pyenv_root()}/versions/{version}.*): install one, e.g. `pyenv install {version}` "
        "(docs/testing.md, 'Old Pythons')"
    )
