"""docs/ci.md cannot rot: its CI jobs are parsed, and their `msdoctor check` lines are run exactly as written.

The YAML blocks are parsed as YAML; the GitHub job's `run:` and the GitLab job's
`script:` lines that start with `msdoctor check` are split like a shell would
(no expansion is needed: they contain none) and run with the installed msdoctor
first on PATH, in a project holding a small CPU training config at the path the
docs use. The only substitution is the value of MSDOCTOR_PYTHON, which the docs
set to the runner's training env (/opt/envs/ms/bin/python) and which here is the
test environment's interpreter (real MindSpore 2.7.0). All checks run, as in CI.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
import yaml

from helpers import BASE_PYTHON, env_with, msdoctor_exe

DOC = Path(__file__).resolve().parents[1] / "docs" / "ci.md"
XSD = Path(__file__).parent / "data" / "junit" / "junit-10.xsd"
CONFIG = """\
name: pretrain-ci-test
runtime: {device_target: CPU, device_num: 1}
model: {num_layers: 2, hidden_size: 64, num_heads: 4, vocab_size: 256}
parallel: {data_parallel: 1}
train: {micro_batch_size: 2, seq_length: 32, max_steps: 200}
"""


def yaml_blocks() -> list[dict]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    return [yaml.safe_load(b) for b in blocks]


def github_workflow() -> dict:
    return next(b for b in yaml_blocks() if "jobs" in b)


def gitlab_pipeline() -> dict:
    return next(b for b in yaml_blocks() if "stages" in b)


def check_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.strip().startswith("msdoctor check")]


def run_documented(command: str, cwd: Path, extra_env: dict) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[0] == "msdoctor" and not any("$" in a for a in argv), command
    env = env_with(
        {"MSDOCTOR_PYTHON": BASE_PYTHON, **extra_env},
        path_first=[Path(msdoctor_exe()).parent],
        drop=["GITHUB_STEP_SUMMARY", "MSDOCTOR_NO_REDACT"],
    )
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "pretrain.yaml").write_text(CONFIG)
    return tmp_path


def test_docs_jobs_are_wired_as_a_gate() -> None:
    gh = github_workflow()
    assert gh["jobs"]["train"]["needs"] == "preflight"
    assert gh["jobs"]["preflight"]["env"]["MSDOCTOR_PYTHON"]
    gl = gitlab_pipeline()
    job = gl["msdoctor-preflight"]
    (line,) = check_lines(job["script"])
    argv = shlex.split(line)
    assert job["artifacts"]["reports"]["junit"] == argv[argv.index("--output") + 1]
    assert job["artifacts"]["when"] == "always"
    assert gl["pretrain"]["needs"] == ["msdoctor-preflight"] and gl["stages"] == ["preflight", "train"]


@pytest.mark.slow
def test_github_job_command_runs_as_written(project: Path) -> None:
    steps = github_workflow()["jobs"]["preflight"]["steps"]
    (command,) = check_lines([s.get("run", "") for s in steps])
    summary = project / "step_summary.md"
    res = run_documented(command, project, {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(project)})
    assert res.returncode in (0, 1), res.stdout + res.stderr
    errors = [line for line in res.stdout.splitlines() if line.startswith("::error ")]
    assert (res.returncode == 1) == bool(errors), res.stdout  # the gate and the annotations agree
    assert res.stdout.rstrip().splitlines()[-1].startswith("msdoctor: ")
    text = summary.read_text()
    assert "msdoctor check" in text and "`python-env`" in text and "| check |" in text


@pytest.mark.slow
def test_gitlab_job_command_runs_as_written(project: Path) -> None:
    job = gitlab_pipeline()["msdoctor-preflight"]
    (command,) = check_lines(job["script"])
    res = run_documented(command, project, {})
    assert res.returncode in (0, 1), res.stdout + res.stderr
    report = project / job["artifacts"]["reports"]["junit"]
    xmlschema.XMLSchema(str(XSD)).validate(str(report))
    suite = ET.parse(report).getroot().find("testsuite")
    problems = int(suite.get("failures")) + int(suite.get("errors"))
    assert (res.returncode == 1) == (problems > 0)
    names = {c.get("name") for c in suite.iter("testcase")}
    assert "python-env" in names
    assert "Python environment (python-env)" in res.stdout  # the job log keeps the human view
    assert os.path.getsize(report) > 0
