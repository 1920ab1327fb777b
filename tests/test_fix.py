"""`msdoctor fix [CHECK-ID]` and the typed fixer of a check (plan, verify, apply: msdoctor/fix/__init__.py).

verify() is tested on probe-shaped targets (as tests/test_version_matrix.py builds them): the check's own rules
on the target as it would be after the plan. The command is the real installed `msdoctor`.
"""

from __future__ import annotations

from helpers import env_with, run_msdoctor
from test_version_matrix import MS270, NP1, PB, dist, target

from msdoctor.checks.version_matrix.fix import FIXER, Change, StackPlan
from msdoctor.context import Context, Options
from msdoctor.facts.target import TARGET
from msdoctor.fix.resolver import Planned

NP2 = dist("numpy", "2.2.6")  # MindSpore 2.7.0 requires numpy<2.0.0: a pip-fixable failure


def _ctx(t) -> Context:
    return Context(Options(python="/env/bin/python"), facts={TARGET.name: t}, environ={})


def _numpy(version: str) -> Planned:
    return Planned("numpy", version, (), None, None, True)


def _plan(*planned: Planned) -> StackPlan:
    return StackPlan(
        python="/env/bin/python",
        state="found",
        planned=list(planned),
        changes=[Change(p.name, "2.2.6", p.version) for p in planned],
        command=["/env/bin/python", "-m", "pip", "install", "--no-deps", *(f"{p.name}=={p.version}" for p in planned)],
    )


def test_verify_runs_the_checks_rules_on_the_target_as_it_would_be_after_the_plan() -> None:
    broken = _ctx(target(MS270, NP2, PB))
    assert FIXER.verify(_plan(_numpy("1.26.4")), broken) == []  # numpy back under 2: nothing left
    left = FIXER.verify(_plan(_numpy("2.1.0")), broken)  # still >= 2: the same rule still breaks
    assert left and all("numpy" in f.title for f in left)
    assert FIXER.verify(_plan(), broken)  # a plan that installs nothing repairs nothing


def test_verify_has_nothing_to_say_about_a_plan_that_is_not_found() -> None:
    plan = StackPlan(python="/env/bin/python", state="none", reason="no versions")
    assert FIXER.verify(plan, _ctx(target(MS270, NP2, PB))) == []


def test_apply_refuses_a_plan_without_a_checked_command() -> None:
    applied = FIXER.apply(
        StackPlan(python="/env/bin/python", state="unverified"), _ctx(target(MS270, NP1, PB)), lambda line: None
    )
    assert not applied.ok and "no checked command" in applied.detail


def test_fix_lists_the_checks_with_a_fixer_and_their_old_names() -> None:
    res = run_msdoctor("fix", env=env_with(), timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert any(line.startswith("kernel-mismatch") and "fix-kernel" in line for line in lines)
    assert any(line.startswith("version-matrix") and "fix-stack" in line for line in lines)


def test_fix_check_id_is_the_fixers_command() -> None:
    for check, old in (("version-matrix", "fix-stack"), ("kernel-mismatch", "fix-kernel")):
        new = run_msdoctor("fix", check, "--help", env=env_with(), timeout=60)
        same = run_msdoctor(old, "--help", env=env_with(), timeout=60)
        assert new.returncode == 0 and same.returncode == 0
        # the same command: the same options and text, only the usage line names it as invoked
        usage_new, rest_new = new.stdout.split("\n", 1)
        usage_old, rest_old = same.stdout.split("\n", 1)
        assert usage_new == usage_old.replace(f"msdoctor {old}", f"msdoctor fix {check}")
        assert rest_new == rest_old


def test_fix_of_an_unknown_check_is_a_usage_error_with_a_hint() -> None:
    res = run_msdoctor("fix", "version-matrx", env=env_with(), timeout=60)
    assert res.returncode == 2
    assert "did you mean 'version-matrix'" in res.stderr and "Traceback" not in res.stderr
    res = run_msdoctor("fix", "python-env", env=env_with(), timeout=60)  # a check without a fixer
    assert res.returncode == 2 and "no fixer for check 'python-env'" in res.stderr


def test_each_check_with_a_fixer_has_one_in_the_protocol_under_its_check_id() -> None:
    from msdoctor.checks.kernel_mismatch.fixer import FIXER as KERNEL_FIXER
    from msdoctor.cli import FIXERS

    fixers = {f.check_id: f for f in (FIXER, KERNEL_FIXER)}
    assert set(fixers) == set(FIXERS)
    for f in fixers.values():
        assert all(callable(getattr(f, step)) for step in ("plan", "verify", "apply"))


def test_the_kernel_fixers_apply_reports_what_it_did_and_a_failed_step(tmp_path) -> None:
    """apply() of kernel-mismatch's fixer on a plan of one real step (VS Code's setting, written in tmp_path)."""
    from msdoctor.checks.kernel_mismatch.fix import KernelRequest, TargetSummary, build_plan
    from msdoctor.checks.kernel_mismatch.fixer import KernelFixer
    from test_fix_kernel import interp, jfacts

    settings = tmp_path / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"python.defaultInterpreterPath": "/usr/bin/python3"}\n')
    t = TargetSummary("/e/ms/bin/python", interp("/e/ms/bin/python"), "ms", "venv")
    plan = build_plan(t, jfacts(tmp_path), KernelRequest(), tmp_path, {})
    plan.steps = [s for s in plan.steps if s.kind == "vscode"]
    ctx = Context(Options(python=t.python, project_dir=tmp_path), environ={})
    settings.write_text('{"python.defaultInterpreterPath": "/usr/bin/python3.12"}\n')  # changed meanwhile
    failed = KernelFixer().apply(plan, ctx, lambda line: None)
    assert not failed.ok and "changed while fix-kernel was running" in failed.detail
    assert failed.fix == "rerun fix-kernel" and failed.done == ()
    settings.write_text('{"python.defaultInterpreterPath": "/usr/bin/python3"}\n')
    done = KernelFixer().apply(plan, ctx, lambda line: None)
    assert done.ok and len(done.done) == 1 and done.done[0].startswith(f"wrote {settings} (backup: ")
    assert '"python.defaultInterpreterPath": "/e/ms/bin/python"' in settings.read_text()


def test_fix_kernel_refuses_a_plan_that_does_not_verify_and_changes_nothing(tmp_path, monkeypatch) -> None:
    """The real command, the real target (this interpreter) and its real plan; only verify's answer is forced."""
    import sys

    from click.testing import CliRunner

    from msdoctor.checks.kernel_mismatch import fixer
    from msdoctor.commands.fix_kernel import fix_kernel
    from msdoctor.model import Finding

    left = Finding.fail("kernel 'x' would still run /elsewhere/bin/python")
    monkeypatch.setattr(fixer.KernelFixer, "verify", lambda self, plan, ctx: [left])
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter"))
    res = CliRunner().invoke(
        fix_kernel,
        ["--python", sys.executable, "--project", str(tmp_path), "--no-vscode", "--yes"],
        standalone_mode=False,
    )
    assert res.exception is None, res.output
    assert res.return_value == 1
    assert "register Jupyter kernel" in res.output
    assert "the plan does not verify" in res.output and "[fail] kernel 'x' would still run" in res.output
    assert "nothing was changed" in res.output and "done:" not in res.output
    assert not (tmp_path / "jupyter").exists()
