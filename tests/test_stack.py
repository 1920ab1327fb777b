"""The training stack is data (compat_matrix/stack.toml, each package with its role), read by every check that
lists it: a problem with a stack package has one status in every check, and no module keeps its own list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from msdoctor.checks.duplicate_installs.scan import status_for
from msdoctor.checks.version_matrix.requires import evaluate_requirements
from msdoctor.domain import stack
from msdoctor.matrix_schema import MatrixError, validate
from msdoctor.model import Status
from msdoctor.render import RenderOptions
from test_version_matrix import dist, target

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "compat_matrix" / "stack.toml"
#: the probe reports find_spec for import names (torch, mindtorch, tbe too) and runs in the target with the
#: standard library only: a list of modules to locate, not of distributions in the stack
NOT_THE_STACK = {"msdoctor/probe/target_probe.py"}
#: lists of another fact that name some stack packages: (file, the names)
OTHER_FACTS = {
    # the model libraries whose auto registries registry-collisions reads (AUTO_DIRS beside it says where)
    ("msdoctor/registry_scan/builtins.py", ("mindformers", "mindnlp", "transformers")),
    # the projects whose console scripts start training (msrun and friends), for duplicate-installs
    ("checks/duplicate_installs/scripts.py", ("mindformers", "mindnlp", "mindspore")),
}


def test_the_file_validates_deeply_and_each_row_has_a_role_and_a_source() -> None:
    kind, _, tables = validate(DATA.read_text(encoding="utf-8"), str(DATA), "stack", deep=True)
    rows = tables["package"]
    assert kind == "stack" and len({r["name"] for r in rows}) == len(rows)
    assert {"mindspore", "numpy", "protobuf", "te", "hccl"} <= stack.training_stack()
    assert not {"msdoctor", "ipykernel", "jupyter-client"} & stack.training_stack()  # listed beside, not in it
    assert stack.listed("doctor")[0] == "mindspore" and stack.listed("doctor")[-1] == "msdoctor"


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('role = "serialization"', 'role = "glue"', "role: 'glue' is not one of framework"),
        ('name = "protobuf"', 'name = "Proto_Buf"', "is not a canonical distribution name"),
        ('name = "hccl"', 'name = "te"', "duplicate row: 'te'"),
    ],
)
def test_a_broken_row_names_file_line_and_row(old: str, new: str, message: str) -> None:
    text = DATA.read_text(encoding="utf-8")
    assert old in text
    with pytest.raises(MatrixError) as exc:
        stack.parse(text.replace(old, new, 1), "compat_matrix/stack.toml")
    assert message in str(exc.value) and "compat_matrix/stack.toml:" in str(exc.value)


def test_every_check_gives_a_stack_package_the_same_status() -> None:
    """A broken protobuf used to fail version-matrix and only warn in duplicate-installs: now one list decides."""
    for name in sorted(stack.training_stack()):
        assert status_for(name) is Status.FAIL, name
        out = evaluate_requirements(target(dist(name, "1.0", "zz-not-installed>=1")), set())
        assert [f.status for f in out if f.code == "requirement-missing"] == [Status.FAIL], name
    for name in ("requests", "msdoctor", "ipykernel"):
        assert status_for(name) is Status.WARN, name
        out = evaluate_requirements(target(dist(name, "1.0", "zz-not-installed>=1")), set())
        assert [f.status for f in out if f.code == "requirement-missing"] == [Status.WARN], name


def test_the_report_lists_the_stack_the_file_names() -> None:
    """The markdown renderer reads no data file: the command passes the list (RenderOptions.stack)."""
    from msdoctor.commands.common import report_stack
    from msdoctor.model import Report, Target
    from msdoctor.render.markdown import render_markdown

    rep = Report(
        target=Target(executable="/env/bin/python"),
        results=[],
        msdoctor_version="0",
        started_at="now",
        duration_s=0.0,
        facts={"packages": {"protobuf": "7.36.2", "jupyter_client": "8.10.0", "requests": "2.32.0"}},
    )
    text = render_markdown(rep, RenderOptions(stack=report_stack()), facts_open=True, full_facts=True)
    table = text.split("**Training stack**", 1)[1].split("<details>", 1)[0]
    assert "| protobuf |" in table and "| jupyter_client |" in table and "requests" not in table


def _string_collections(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if names:
                yield node.lineno, names


def test_no_module_keeps_its_own_list_of_the_stack() -> None:
    """A tuple, list or set literal naming three or more stack packages is a second home of the list."""
    names = stack.training_stack() | {n.replace("-", "_") for n in stack.training_stack()}
    found = []
    for folder in ("msdoctor", "checks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel in NOT_THE_STACK:
                continue
            for line, strings in _string_collections(ast.parse(path.read_text(encoding="utf-8"))):
                if len(strings & names) >= 3 and (rel, tuple(sorted(strings))) not in OTHER_FACTS:
                    found.append(f"{rel}:{line}: {sorted(strings & names)}")
    assert not found, "read msdoctor.domain.stack instead:\n" + "\n".join(found)
