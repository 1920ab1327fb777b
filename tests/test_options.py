"""Each shared CLI option is defined once (msdoctor/options.py) and means the same in every command."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import click
import pytest

from helpers import env_with, run_msdoctor

from msdoctor.cli import COMMANDS, cli
from msdoctor.options import DEVICE_TARGETS

REPO = Path(__file__).resolve().parents[1]
SHARED = ("--device-target", "--format", "--quick", "--no-plugins", "--no-redact", "--only", "--skip")


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    out, todo = [], [(name, cli.get_command(ctx, name)) for name in COMMANDS]
    while todo:
        name, cmd = todo.pop()
        assert cmd is not None
        out.append((name, cmd))
        if isinstance(cmd, click.Group):
            todo += [(f"{name} {sub}", cmd.get_command(ctx, sub)) for sub in cmd.list_commands(ctx)]
    return out


def _param(cmd: click.Command, flag: str):
    return next((p for p in cmd.params if flag in getattr(p, "opts", ())), None)


def test_no_command_defines_a_shared_option_itself() -> None:
    """The flags of msdoctor/options.py appear in no click.option(...) call anywhere else."""
    found = []
    for path in sorted((REPO / "msdoctor").rglob("*.py")):
        if path.name == "options.py" and path.parent.name == "msdoctor":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "option"
                and any(isinstance(a, ast.Constant) and a.value in SHARED for a in node.args)
            ):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, "define these through msdoctor/options.py: " + ", ".join(found)


def test_device_target_takes_the_same_values_everywhere() -> None:
    seen = []
    for name, cmd in _commands():
        p = _param(cmd, "--device-target")
        if p is None:
            continue
        seen.append(name)
        ctx = click.Context(cmd)
        for given in ("cpu", "CPU", "Cpu", "ascend", "gpu"):
            assert p.type.convert(given, p, ctx) in DEVICE_TARGETS, (name, given)
        assert p.type.convert("cpu", p, ctx) == "CPU"
        with pytest.raises(click.BadParameter):
            p.type.convert("tpu", p, ctx)
    # the six commands of issue 27 (preflight and fix-stack used to refuse `cpu`)
    assert {"check", "explain", "memory", "preflight", "train", "fix-stack"} <= set(seen)


def test_format_is_a_choice_in_every_command() -> None:
    for name, cmd in _commands():
        p = _param(cmd, "--format")
        if p is not None:
            assert isinstance(p.type, click.Choice) and not p.type.case_sensitive, name
            assert p.type.convert("JSON" if "json" in p.type.choices else "TERMINAL", p, click.Context(cmd))


def test_preflight_plan_format_json_and_the_deprecated_json_flag_agree() -> None:
    args = [
        "preflight",
        "--plan",
        "--worker-num",
        "1",
        "--local-worker-num",
        "1",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        "18118",
        "--node-rank",
        "0",
        "--device-target",
        "cpu",
    ]
    new = run_msdoctor(*args, "--format", "json", env=env_with(), timeout=120)
    old = run_msdoctor(*args, "--json", env=env_with(), timeout=120)
    a, b = json.loads(new.stdout), json.loads(old.stdout)
    assert new.returncode == old.returncode
    for d in (a, b):
        d.pop("seconds", None)
        d.pop("took_s", None)
    assert a.keys() == b.keys() and a["args"] == b["args"]


def test_preflight_is_a_group_whose_commands_list_only_their_own_options(tmp_path: Path) -> None:
    """plan, launch and compare each list their own options; the old --plan/--compare-plans spellings give the
    same answers as the subcommands (and stay out of `preflight --help`)."""
    ctx = click.Context(cli)
    group = cli.get_command(ctx, "preflight")
    assert isinstance(group, click.Group) and group.list_commands(ctx) == ["compare", "launch", "plan"]

    def flags(cmd: click.Command) -> set[str]:
        return {o for p in cmd.params if isinstance(p, click.Option) and not p.hidden for o in p.opts}

    plan, launch, compare = (group.get_command(ctx, n) for n in ("plan", "launch", "compare"))
    msrun = {
        "--worker-num",
        "--local-worker-num",
        "--master-addr",
        "--master-port",
        "--node-rank",
        "--cluster-time-out",
    }
    task = {"--out", "--iters", "--warmup", "--min-bytes", "--max-bytes", "--matmul-size", "--baseline"}
    assert msrun <= flags(plan) and not task & flags(plan)
    assert msrun | task | {"--log-dir"} <= flags(launch)
    assert task <= flags(group) and not msrun & flags(group) and "--plan" not in flags(group)
    assert flags(compare) == set()
    help_text = run_msdoctor("preflight", "--help").stdout
    listed = help_text.split("\nOptions:", 1)[1].split("\nCommands:", 1)[0]
    assert "--out" in listed and "--worker-num" not in listed and "--compare-plans" not in listed
    assert "plan " in help_text.split("\nCommands:", 1)[1]

    args = [
        "--worker-num",
        "1",
        "--local-worker-num",
        "1",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        "18118",
        "--node-rank",
        "0",
        "--device-target",
        "cpu",
        "--format",
        "json",
    ]
    new = run_msdoctor("preflight", "plan", *args, env=env_with(), timeout=120)
    old = run_msdoctor("preflight", "--plan", *args, env=env_with(), timeout=120)
    a, b = json.loads(new.stdout), json.loads(old.stdout)
    a.pop("seconds"), b.pop("seconds")
    assert (new.returncode, a) == (old.returncode, b)
    (tmp_path / "node0.json").write_text(new.stdout)
    by_group = run_msdoctor("preflight", "compare", str(tmp_path / "node0.json"), str(tmp_path / "node0.json"))
    by_flag = run_msdoctor(
        "preflight", "--compare-plans", str(tmp_path / "node0.json"), "--compare-plans", str(tmp_path / "node0.json")
    )
    assert (by_group.returncode, by_group.stdout) == (by_flag.returncode, by_flag.stdout)
    assert "node_rank 0 used by more than one node" in by_group.stdout
    wrong = run_msdoctor("preflight", "plan", "--iters", "3")
    assert wrong.returncode == 2 and "No such option" in wrong.stderr  # the task's options are not the plan's
