"""The target-interpreter probe (msdoctor/probe/target_probe.py), run for real.

It runs under the test interpreter (real MindSpore 2.7.0, numpy, transformers) and under every
older or newer CPython that pyenv keeps on this machine, so the "parses and runs as Python 3.7"
promise is checked by the interpreters themselves, not only by ast.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from helpers import BASE_PURELIB, BASE_PYTHON, env_with, no_python_reason, which_python
from msdoctor.checks.duplicate_installs import evaluate
from msdoctor.facts.target import TargetFacts
from msdoctor.probe import run_script, script_source

TOP_KEYS = {
    "probe_schema",
    "executable",
    "executable_realpath",
    "version",
    "version_string",
    "implementation",
    "prefix",
    "base_prefix",
    "exec_prefix",
    "cwd",
    "platform",
    "in_venv",
    "pyvenv_cfg",
    "conda",
    "sys_path",
    "site_packages",
    "user_site",
    "flags",
    "markers",
    "distributions",
    "pth_files",
    "find_spec",
    "env",
    "modules_preloaded",
    "top_level_specs",
    "scheme",
}
DIST_KEYS = {
    "path",
    "location",
    "kind",
    "files",
    "name",
    "version",
    "requires",
    "requires_python",
    "top_level",
    "installer",
    "direct_url",
    "editable",
}


def _probe(python: str, cwd: Path, **env: str) -> dict:
    """The probe run with ``cwd`` as the caller's cwd (the probe itself runs in a scratch dir)."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        data, _ = run_script(python, "target_probe.py", timeout=60, env=env_with(env))
    finally:
        os.chdir(here)
    return data


def test_probe_parses_as_python_37() -> None:
    ast.parse(script_source("target_probe.py"), feature_version=(3, 7))


def test_schema_fields_of_the_real_test_environment(tmp_path: Path) -> None:
    data = _probe(BASE_PYTHON, tmp_path)
    assert TOP_KEYS <= set(data) and data["probe_schema"] == 1
    # an empty scratch cwd, and neither it nor the caller's cwd on sys.path
    assert data["cwd"] != str(tmp_path) and not os.path.exists(data["cwd"])
    assert all(e["entry"] and e["abspath"] not in (str(tmp_path), data["cwd"]) for e in data["sys_path"])
    for entry in data["sys_path"]:
        assert {"entry", "abspath", "exists", "is_dir"} <= set(entry)
    ms = [d for d in data["distributions"] if d["name"] == "mindspore"]
    assert len(ms) == 1 and DIST_KEYS <= set(ms[0]) and ms[0]["version"] == "2.7.0"
    assert ms[0]["location"] == BASE_PURELIB and "RECORD" in ms[0]["files"] and ms[0]["top_level"] == ["mindspore"]
    assert data["find_spec"]["mindspore"]["origin"] == os.path.join(BASE_PURELIB, "mindspore", "__init__.py")
    assert data["scheme"]["purelib"] == BASE_PURELIB
    assert data["scheme"]["scripts"] == str(Path(BASE_PYTHON).parent)
    TargetFacts.from_probe(data)  # the foundation's reader accepts it


def test_the_probe_never_imports_what_it_reports(tmp_path: Path) -> None:
    """mindspore, numpy, transformers are installed and located, but not imported. The control run
    shows modules_preloaded does see an import: a sitecustomize that imports numpy."""
    data = _probe(BASE_PYTHON, tmp_path)
    assert data["find_spec"]["numpy"]["found"] and data["find_spec"]["transformers"]["found"]
    assert data["modules_preloaded"] == []
    custom = tmp_path / "custom"
    custom.mkdir()
    (custom / "sitecustomize.py").write_text("import numpy\n")
    assert _probe(BASE_PYTHON, tmp_path, PYTHONPATH=str(custom))["modules_preloaded"] == ["numpy"]


def test_top_level_specs_answer_only_where_an_earlier_entry_can_shadow(tmp_path: Path) -> None:
    (tmp_path / "six.py").write_text("# shadows the installed six\n")
    data = _probe(BASE_PYTHON, tmp_path, PYTHONPATH=str(tmp_path))
    specs = data["top_level_specs"]
    assert specs["six"]["origin"] == str(tmp_path / "six.py")
    assert "idna" not in specs and "yaml" not in specs  # nothing earlier on sys.path holds those names


@pytest.mark.parametrize("version", ["3.7", "3.8", "3.9", "3.10", "3.12", "3.13"])
def test_probe_runs_under_other_interpreters_and_the_check_reads_it(version: str, tmp_path: Path) -> None:
    python = which_python(version)
    if python is None:
        pytest.skip(no_python_reason(version))
    lib = tmp_path / "lib"
    (lib / "demo").mkdir(parents=True)
    (lib / "demo" / "__init__.py").write_text("")
    info = lib / "demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
    (info / "RECORD").write_text("demo/__init__.py,,\ndemo-1.0.dist-info/METADATA,,\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "demo.py").write_text("")  # an earlier PYTHONPATH entry shadows the installed demo
    data = _probe(python, tmp_path, PYTHONPATH=os.pathsep.join([str(project), str(lib)]))
    assert data["version"][:2] == [int(x) for x in version.split(".")]
    assert data["modules_preloaded"] == [] and data["scheme"]["purelib"].endswith("site-packages")
    demo = [d for d in data["distributions"] if d["name"] == "demo"]
    assert demo and demo[0]["location"] == str(lib) and demo[0]["top_level"] == ["demo"]
    assert data["top_level_specs"]["demo"]["origin"] == str(project / "demo.py")
    findings = evaluate(TargetFacts.from_probe(data))
    assert [(f.code, f.location.path) for f in findings if f.code] == [("shadowed-module", str(project / "demo.py"))]


def test_metadata_headers_read_as_the_email_parser_reads_them(tmp_path: Path) -> None:
    """The probe reads core metadata without email.parser (its import cost more than the parsing):
    every distribution of the test environment gives the same fields as HeaderParser, folded lines included."""
    import email.parser

    folded = tmp_path / "folded.dist-info"
    folded.mkdir()
    (folded / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: folded\nVersion: 1.0\nSummary: one\n  two\n"
        "Requires-Dist: a>=1\nrequires-dist: b ; extra == 'x'\nno header here\n"
        "Requires-Dist: never\n\nRequires-Dist: body\n"
    )
    data = _probe(BASE_PYTHON, tmp_path, PYTHONPATH=str(tmp_path))
    dists = [d for d in data["distributions"] if d["kind"] == "dist-info"]
    assert len(dists) > 20
    for d in dists:
        with open(os.path.join(d["path"], "METADATA"), encoding="utf-8", errors="replace") as f:
            want = email.parser.HeaderParser().parsestr(f.read().split("\n\n", 1)[0])
        assert (d["name"], d["version"], d["requires"], d["requires_python"]) == (
            want.get("Name"),
            want.get("Version"),
            want.get_all("Requires-Dist") or [],
            want.get("Requires-Python"),
        ), d["path"]
    mine = next(d for d in dists if d["name"] == "folded")
    assert mine["requires"] == ["a>=1", "b ; extra == 'x'"]


# -- several probes in one start (msdoctor.probe.run_scripts) --------------------------------------------------
@pytest.mark.parametrize("version", [None, "3.7"])
def test_combined_probes_give_what_each_gives_alone(version: "str | None", tmp_path: Path) -> None:
    """The target probe and the interpreter probe run in one start (one interpreter start saved per check)
    answer exactly as when each runs on its own, under the test interpreter and under Python 3.7."""
    from msdoctor.probe import run_scripts

    python = BASE_PYTHON if version is None else which_python(version)
    if python is None:
        pytest.skip(no_python_reason(version))
    (target, interp), _ = run_scripts(
        python, ("target_probe.py", "interp_probe.py"), timeout=60, args={"jupyter": True}
    )
    alone_interp, _ = run_script(python, "interp_probe.py", timeout=60, args={"jupyter": True})
    assert interp == alone_interp and interp["jupyter"]["kernel_dirs"]
    alone_target = _probe(python, tmp_path)
    for key in ("cwd",):  # each run has its own scratch directory
        target.pop(key), alone_target.pop(key)
    assert target == alone_target


def test_a_failing_companion_probe_gives_none_and_leaves_the_main_one(tmp_path: Path, monkeypatch) -> None:
    import msdoctor.probe as probe

    real = probe.script_source
    monkeypatch.setattr(
        probe,
        "script_source",
        lambda name: "raise RuntimeError('companion broke')\n" if name == "broken.py" else real(name),
    )
    (target, broken), result = probe.run_scripts(BASE_PYTHON, ("target_probe.py", "broken.py"), timeout=60)
    assert broken is None and "companion broke" in result.stderr
    assert target["probe_schema"] == 1 and any(d["name"] == "mindspore" for d in target["distributions"])
    monkeypatch.setattr(
        probe, "script_source", lambda name: "raise RuntimeError('main broke')\n" if name == "broken.py" else real(name)
    )
    with pytest.raises(probe.ProbeError, match="main broke"):
        probe.run_scripts(BASE_PYTHON, ("broken.py", "interp_probe.py"), timeout=60)


def test_check_starts_the_target_interpreter_once(tmp_path: Path) -> None:
    """`check --quick` asks the target for its probe, its Jupyter paths and its modules in ONE start: a wrapper
    that logs each start of the target counts them."""
    import subprocess
    import sys

    log = tmp_path / "starts.log"
    wrapper = tmp_path / "bin" / "python"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {BASE_PYTHON} "$@"\n')
    wrapper.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "msdoctor",
            "check",
            "--quick",
            "--python",
            str(wrapper),
            "--only",
            "kernel-mismatch,python-env",
            "--format",
            "json",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode in (0, 1), res.stderr
    starts = log.read_text().splitlines()
    assert len(starts) == 1, starts
