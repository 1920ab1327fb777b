"""pyenv shims are followed by pyenv's rules without being run (msdoctor/facts/pyenv.py).

The shim text is the prototype pyenv-rehash writes (pyenv 2.x, libexec/pyenv-rehash,
create_prototype_shim; the same text is in /root/.pyenv/shims/* on these machines). The real
pyenv, where installed, is asked the same question with ``pyenv which``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import pyenv_root
from msdoctor.facts.interpreters import InterpreterProbes
from msdoctor.facts.pyenv import resolve_shim, shim_of

SHIM = """#!/usr/bin/env bash
set -e
[ -n "$PYENV_DEBUG" ] && set -x

program="${{0##*/}}"

export PYENV_ROOT="{root}"
SHIM_PATH=${{0%/*}}
if [[ $SHIM_PATH != "{root}/shims" ]]; then
  export _PYENV_SHIM_PATH="$SHIM_PATH"
fi
exec "{root}/libexec/pyenv" exec "$program" "$@"
"""


def make_root(tmp: Path, versions: dict[str, list[str]], global_version: str = "") -> Path:
    """A pyenv root: shims for python/python3, versions/<v>/bin/<cmd> linked to this interpreter.

    libexec/pyenv is absent, so running a shim fails: a probe that succeeds never ran it.
    """
    root = tmp / "pyenv"
    (root / "shims").mkdir(parents=True)
    for name in ("python", "python3"):
        shim = root / "shims" / name
        shim.write_text(SHIM.format(root=root))
        shim.chmod(0o755)
    for v, cmds in versions.items():
        bindir = root / "versions" / v / "bin"
        bindir.mkdir(parents=True)
        for cmd in cmds:
            (bindir / cmd).symlink_to(sys.executable)
    if global_version:
        (root / "version").write_text(global_version + "\n")
    return root


def test_the_global_version_file_decides(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"3.11.7": ["python", "python3"]}, "3.11.7")
    assert shim_of(str(root / "shims" / "python3")) == (str(root), f"{root}/libexec/pyenv")
    got = resolve_shim(str(root / "shims" / "python3"), {}, str(tmp_path))
    assert got == str(root / "versions" / "3.11.7" / "bin" / "python3")


def test_pyenv_version_and_local_file_come_first(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"3.11.7": ["python3"], "3.10.13": ["python3"], "3.9.18": ["python3"]}, "3.11.7")
    project = tmp_path / "proj" / "sub"
    project.mkdir(parents=True)
    (tmp_path / "proj" / ".python-version").write_text("# pinned\n\n3.10.13\n")
    shim = str(root / "shims" / "python3")
    assert resolve_shim(shim, {}, str(project)) == str(root / "versions" / "3.10.13" / "bin" / "python3")
    assert resolve_shim(shim, {"PYENV_VERSION": "3.9.18"}, str(project)) == str(
        root / "versions" / "3.9.18" / "bin" / "python3"
    )
    # PYENV_DIR moves the search start, as in libexec/pyenv-version-file
    assert resolve_shim(shim, {"PYENV_DIR": str(tmp_path)}, str(tmp_path)) == str(
        root / "versions" / "3.11.7" / "bin" / "python3"
    )


def test_the_first_version_with_the_command_runs(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"2.7.18": ["python"], "3.11.7": ["python", "python3"]}, "2.7.18\n3.11.7")
    assert resolve_shim(str(root / "shims" / "python3"), {}, str(tmp_path)) == str(
        root / "versions" / "3.11.7" / "bin" / "python3"
    )
    assert resolve_shim(str(root / "shims" / "python"), {}, str(tmp_path)) == str(
        root / "versions" / "2.7.18" / "bin" / "python"
    )


@pytest.mark.parametrize("setting", ["system", "3.11", "3.12.0", "../../etc", ""])
def test_what_only_pyenv_can_decide_is_left_to_it(tmp_path: Path, setting: str) -> None:
    root = make_root(tmp_path, {"3.11.7": ["python3"]}, setting)
    assert resolve_shim(str(root / "shims" / "python3"), {}, str(tmp_path)) is None


def test_a_version_name_hook_or_an_unknown_which_hook_is_left_to_pyenv(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"3.11.7": ["python3"]}, "3.11.7")
    shim = str(root / "shims" / "python3")
    known = root / "plugins" / "pyenv-virtualenv" / "etc" / "pyenv.d" / "which"
    known.mkdir(parents=True)
    (known / "system-site-packages.bash").write_text("")
    assert resolve_shim(shim, {}, str(tmp_path)) is not None
    (known / "my-own.bash").write_text("")
    assert resolve_shim(shim, {}, str(tmp_path)) is None
    (known / "my-own.bash").unlink()
    hooks = root / "pyenv.d" / "version-name"
    hooks.mkdir(parents=True)
    (hooks / "pick.bash").write_text("")
    assert resolve_shim(shim, {}, str(tmp_path)) is None


def test_a_plain_interpreter_is_not_a_shim(tmp_path: Path) -> None:
    assert shim_of(sys.executable) is None
    assert resolve_shim(sys.executable, {}, str(tmp_path)) is None


def test_probes_follow_a_shim_without_running_it_and_share_one_probe(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"3.11.7": ["python", "python3"]}, "3.11.7")
    probes = InterpreterProbes({"PATH": os.environ["PATH"]}, timeout=60)
    runs: list[str] = []
    real_run = probes._run

    def counting(path: str, jupyter: bool):  # type: ignore[no-untyped-def]
        runs.append(path)
        return real_run(path, jupyter)

    probes._run = counting  # type: ignore[method-assign]
    got = probes.many([str(root / "shims" / "python"), str(root / "shims" / "python3")])
    for shim, info in got.items():
        assert info.ok, info.error  # the shim itself cannot run (no libexec/pyenv)
        assert info.path == shim and info.executable and info.via and "pyenv shim" in info.via
    assert len(runs) == 1, runs


def test_a_reserved_jupyter_probe_answers_the_plain_request(tmp_path: Path) -> None:
    probes = InterpreterProbes({"PATH": os.environ["PATH"]}, timeout=60)
    runs: list[tuple[str, bool]] = []
    real_run = probes._run

    def counting(path: str, jupyter: bool):  # type: ignore[no-untyped-def]
        runs.append((path, jupyter))
        return real_run(path, jupyter)

    probes._run = counting  # type: ignore[method-assign]
    probes.reserve(sys.executable, jupyter=True)
    plain = probes.get(sys.executable)
    with_jupyter = probes.get(sys.executable, jupyter=True)
    assert runs == [(sys.executable, True)]
    assert plain.ok and plain.jupyter is not None and with_jupyter.jupyter == plain.jupyter


@pytest.mark.skipif(
    not (pyenv_root() / "shims").is_dir() or shutil.which("bash") is None,
    reason=f"no pyenv installed here (no {pyenv_root()}/shims; pyenv's root is $PYENV_ROOT, else ~/.pyenv)",
)
def test_agrees_with_the_real_pyenv(tmp_path: Path) -> None:
    shims = pyenv_root() / "shims"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYENV_VERSION")}
    compared = 0
    for name in ("python", "python3", "pip"):
        shim = shims / name
        if not shim.exists():
            continue
        ours = resolve_shim(str(shim), env, str(tmp_path))
        if ours is None:
            continue  # left to pyenv: nothing to compare
        res = subprocess.run(
            [str(shim.parent.parent / "libexec" / "pyenv"), "which", name],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == ours
        compared += 1
    if not compared:
        pytest.skip("pyenv here runs the system Python or a version prefix: left to pyenv")
