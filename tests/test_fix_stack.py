"""fix-stack: the target's own pip as the oracle of every printed fix (msdoctor/fix/resolver.py, checks/version_matrix/fix.py).

Real parts: the real pip of real venvs, the real package index (tests skip when it cannot be
reached), an unreachable index made real by pointing pip at a closed local port (the offline path),
and the real `msdoctor` command. The venvs are layered over the test environment (MindSpore 2.7.0)
and get numpy 2.2.6 with the real pip, the metadata-only conflict MindSpore 2.7.0 has with it.
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, Venv, check_of, make_venv, run_json, run_msdoctor

from msdoctor.fix.resolver import Resolver, classify_failure

pytestmark = [pytest.mark.slow, pytest.mark.mindspore]


@functools.lru_cache(maxsize=1)
def index_reachable() -> bool:
    res = subprocess.run(
        [BASE_PYTHON, "-m", "pip", "index", "versions", "numpy", "--retries", "1", "--timeout", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return res.returncode == 0 and "Available versions" in res.stdout


def need_index() -> None:
    if not index_reachable():
        pytest.skip("the package index cannot be reached from here")


def offline_env() -> dict[str, str]:
    """pip pointed at a closed port on this machine: a real unreachable index, answered in milliseconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"})
    return env


@pytest.fixture(scope="module")
def numpy2(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    need_index()
    venv = make_venv(tmp_path_factory.mktemp("np2") / "venv", layered=True)
    venv.pip("install", "--no-deps", "--quiet", "numpy==2.2.6")
    return venv


def _vm(python: str, *extra: str) -> tuple[dict, int]:
    res, report = run_json("check", "--python", python, "--only", "version-matrix", *extra, timeout=900)
    return check_of(report, "version-matrix"), res.returncode


# -- pip's own words ---------------------------------------------------------------------------
def test_pip_errors_are_classified_from_pips_own_messages() -> None:
    # observed: `pip install --dry-run --no-deps "mindspore~=2.11.0"` and an index at a closed port
    missing = (
        "ERROR: Could not find a version that satisfies the requirement mindspore~=2.11.0 (from versions: "
        "2.7.0, 2.7.1, 2.7.1.post1, 2.7.2, 2.8.0, 2.9.0, 2.10.0)\n"
        "ERROR: No matching distribution found for mindspore~=2.11.0\n"
    )
    state, req, versions, words = classify_failure(missing)
    assert (state, req) == ("unsatisfiable", "mindspore~=2.11.0") and versions[-1] == "2.10.0"
    offline = (
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after "
        "connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at "
        "0x7f>: Failed to establish a new connection: [Errno 111] Connection refused')': /simple/numpy/\n"
        "ERROR: Could not find a version that satisfies the requirement numpy==1.26.4 (from versions: none)\n"
    )
    state, _, _, words = classify_failure(offline)
    assert state == "offline" and "Connection refused" in words


def test_offline_the_plan_is_unverified_and_says_why(numpy2: Venv) -> None:
    check, rc = _vm(numpy2.python, "--device-target", "Ascend")  # no Ascend here: nothing proved, it fails
    assert rc == 1
    from msdoctor.context import Context, Options
    from msdoctor.checks.version_matrix.fix import plan_stack
    from msdoctor.matrix import load

    resolver = Resolver(numpy2.python, environ=offline_env(), budget_s=120)
    plan = plan_stack(Context(Options(python=numpy2.python)).target, load(), resolver)
    assert plan.state == "unverified"
    assert "could not check it" in plan.reason and "Connection refused" in plan.reason
    assert plan.command == [numpy2.python, "-m", "pip", "install", "numpy>=1.20.0,<2.0.0"]
    assert plan.summary().startswith("UNVERIFIED: ")


# -- the plan with the real index --------------------------------------------------------------
def test_plan_is_one_checked_command_and_resolver_answers_are_cached(numpy2: Venv) -> None:
    from msdoctor.context import Context, Options
    from msdoctor.checks.version_matrix.fix import plan_stack
    from msdoctor.matrix import load

    t = Context(Options(python=numpy2.python)).target
    resolver = Resolver(numpy2.python)
    plan = plan_stack(t, load(), resolver)
    assert plan.state == "found", plan.to_json()
    assert [str(c) for c in plan.changes] == ["numpy 2.2.6 -> 1.26.4"]
    assert plan.command_text == f'{numpy2.python} -m pip install --no-deps "numpy==1.26.4"'
    versions, _ = resolver.versions("numpy")
    assert versions and "1.26.4" in versions  # the printed version is one the index has
    calls = resolver.calls
    again = plan_stack(t, load(), resolver)
    assert again.command == plan.command and resolver.calls == calls  # cached per run


def test_numpy_2_on_cpu_is_a_warning_with_what_was_proved(numpy2: Venv) -> None:
    check, rc = _vm(numpy2.python)
    assert rc == 0 and check["status"] == "warn", [f["title"] for f in check["findings"]]
    f = next(x for x in check["findings"] if x.get("code") == "mindspore-numpy")
    assert f["status"] == "warn" and f["title"].endswith("(metadata only: the stack works on CPU)")
    proof = f["evidence"]["ground_truth"]
    assert proof["device"] == "CPU:0" and proof["imported"][0] == "mindspore 2.7.0"
    assert "proves nothing about Ascend or GPU" in f["detail"]
    assert f["fix"].splitlines()[0] == f'{numpy2.python} -m pip install --no-deps "numpy==1.26.4"'
    assert f["evidence"]["stack_plan"]["state"] == "found"


def test_a_runtime_device_that_was_not_proved_keeps_the_failure(numpy2: Venv) -> None:
    check, rc = _vm(numpy2.python, "--device-target", "Ascend")
    f = next(x for x in check["findings"] if x.get("code") == "mindspore-numpy")
    assert rc == 1 and f["status"] == "fail" and "ground_truth" not in f["evidence"]


# -- the command ---------------------------------------------------------------------------------
def test_fix_stack_refuses_without_a_terminal_and_without_yes(numpy2: Venv) -> None:
    res = run_msdoctor("fix-stack", "--python", numpy2.python, timeout=900)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "not on a terminal and --yes was not given" in res.stderr
    assert "numpy 2.2.6 -> 1.26.4" in res.stdout
    assert _numpy(numpy2) == "2.2.6"


def test_fix_stack_dry_run_then_apply_then_nothing_to_do(tmp_path: Path) -> None:
    need_index()
    venv = make_venv(tmp_path / "venv", layered=True)
    venv.pip("install", "--no-deps", "--quiet", "numpy==2.2.6")
    dry = run_msdoctor("fix-stack", "--python", venv.python, "--dry-run", timeout=900)
    assert dry.returncode == 0 and "dry run: 1 package(s) would change, nothing was changed" in dry.stdout
    assert f'command: {venv.python} -m pip install --no-deps "numpy==1.26.4"' in dry.stdout
    assert "pip install --dry-run --no-deps numpy==1.26.4: would install numpy 1.26.4" in dry.stdout
    assert _numpy(venv) == "2.2.6"
    done = run_msdoctor("fix-stack", "--python", venv.python, "--yes", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "version-matrix before: warn; after: pass" in done.stdout
    assert "import smoke after: the stack imports in training-script order" in done.stdout
    assert _numpy(venv) == "1.26.4"
    again = run_msdoctor("fix-stack", "--python", venv.python, "--yes", timeout=900)
    assert again.returncode == 0 and "nothing to change" in again.stdout


def _numpy(venv: Venv) -> str:
    res = venv.run("import numpy; print(numpy.__version__)")
    return res.stdout.strip()


def run_printed_fix(fix: str, python: str) -> subprocess.CompletedProcess:
    """Run the first line of a printed fix exactly as a user would paste it (it starts with the target)."""
    argv = shlex.split(fix.splitlines()[0])
    assert argv[0] == python and argv[1:4] == ["-m", "pip", "install"], argv
    return subprocess.run(argv, capture_output=True, text=True, timeout=1800)


def test_a_target_without_pip_gets_an_unverified_plan_that_says_so(tmp_path: Path) -> None:
    need_index()
    bare = make_venv(tmp_path / "bare")  # no pip inside; installed into with the test env's pip
    bare.pip("install", "--no-deps", "--quiet", "tokenizers==0.22.2")
    from msdoctor.context import Context, Options
    from msdoctor.checks.version_matrix.fix import plan_stack
    from msdoctor.matrix import load

    plan = plan_stack(Context(Options(python=bare.python)).target, load(), Resolver(bare.python))
    assert plan.state == "unverified" and "has no pip" in plan.reason, plan.to_json()
    assert plan.command and plan.command[4:] == ["huggingface-hub>=0.16.4,<2.0"]  # tokenizers 0.22.2 needs it


def test_a_dependency_nobody_installed_is_left_alone(tmp_path: Path) -> None:
    """accelerate's torch, missing and only warned about: no plan pulls in a multi-GB torch by itself."""
    need_index()
    venv = make_venv(tmp_path / "venv", layered=True)
    venv.pip("install", "--no-deps", "--quiet", "accelerate==1.15.0")
    from msdoctor.context import Context, Options
    from msdoctor.checks.version_matrix.fix import plan_stack
    from msdoctor.matrix import load

    resolver = Resolver(venv.python)
    plan = plan_stack(Context(Options(python=venv.python)).target, load(), resolver)
    assert plan.state == "ok" and plan.command is None and plan.left_alone == ["torch"], plan.to_json()
    assert resolver.calls == 0
