"""The layering rules of the house (docs/architecture.md), checked on the imports of the source tree.

The imports are read from the AST of every file, with the installed names: checks/ is msdoctor.checks and
training/ is msdoctor.training (pyproject.toml's package-dir), relative imports are resolved, and imports
inside functions and under ``if TYPE_CHECKING:`` count too. RULES is the one list of the rules:
docs/architecture.md's "Layering rules" section must state exactly these sentences (a test below).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
#: source folder -> the package it is installed as
ROOTS = {"msdoctor": "msdoctor", "checks": "msdoctor.checks", "training": "msdoctor.training"}
#: commands/ modules that commands may share (shell helpers, not commands)
COMMAND_HELPERS = ("msdoctor.commands.common",)


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@dataclass(frozen=True)
class Rule:
    id: str
    sentence: str  # as docs/architecture.md states it
    applies: Callable[[str, str], bool]  # (importer module, its source folder) -> is it bound by the rule
    forbidden: Callable[[str, str], bool]  # (importer module, imported name) -> does the import break it


def _command_import(importer: str, name: str) -> bool:
    if not _under(name, "msdoctor.commands") or name == "msdoctor.commands":
        return False
    if _under(importer, "msdoctor.commands"):  # a command may use the shell helpers, never another command
        return not any(_under(name, h) for h in COMMAND_HELPERS) and not _under(name, importer)
    return True


RULES = [
    Rule(
        "commands",
        "Only the CLI table (`msdoctor/cli.py`) imports `msdoctor.commands`; a command imports no other "
        "command, only the shell helpers in `commands/common.py`.",
        lambda mod, folder: mod != "msdoctor.cli",
        _command_import,
    ),
    Rule(
        "checks",
        "Nothing in `msdoctor/` outside `commands/` imports a check (`msdoctor.checks`).",
        lambda mod, folder: folder == "msdoctor" and not _under(mod, "msdoctor.commands"),
        lambda mod, name: _under(name, "msdoctor.checks"),
    ),
    Rule(
        "render",
        "Renderers (`msdoctor/render/`) import only the model, redaction and `render/` from msdoctor.",
        lambda mod, folder: _under(mod, "msdoctor.render"),
        lambda mod, name: (
            _under(name, "msdoctor")
            and name != "msdoctor"
            and not any(_under(name, ok) for ok in ("msdoctor.model", "msdoctor.redact", "msdoctor.render"))
        ),
    ),
    Rule(
        "memory",
        "`msdoctor/memory/` imports nothing from `training/` (`msdoctor.training`).",
        lambda mod, folder: _under(mod, "msdoctor.memory"),
        lambda mod, name: _under(name, "msdoctor.training"),
    ),
    Rule(
        "training",
        "`training/` imports nothing from msdoctor outside `msdoctor.training`.",
        lambda mod, folder: folder == "training",
        lambda mod, name: _under(name, "msdoctor") and name != "msdoctor" and not _under(name, "msdoctor.training"),
    ),
]

#: Violations that other work in flight removes: (rule id, importer, imported) -> who removes it. Empty: the
#: tree keeps every rule. A new violation fails, and so does an entry here that no longer occurs (delete it then).
KNOWN: dict[tuple[str, str, str], str] = {}


def module_name(path: Path, root: Path) -> tuple[str, str, bool]:
    """(installed module name, source folder, is a package __init__) of a file under root."""
    rel = path.relative_to(root)
    folder = rel.parts[0]
    parts = [ROOTS[folder]] + list(rel.with_suffix("").parts[1:])
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), folder, is_pkg


def imported_names(tree: ast.AST, module: str, is_pkg: bool) -> Iterator[tuple[str, int]]:
    """Every name an import statement of ``tree`` brings in, absolute: ``from a.b import c`` gives a.b and a.b.c."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            yield stem, node.lineno
            for alias in node.names:
                if alias.name != "*":
                    yield f"{stem}.{alias.name}", node.lineno


@dataclass(frozen=True)
class Violation:
    rule: str
    importer: str
    imported: str
    where: str

    def key(self) -> tuple[str, str, str]:
        return (self.rule, self.importer, self.imported)


def violations(root: Path) -> list[Violation]:
    out = []
    for folder in ROOTS:
        for path in sorted((root / folder).rglob("*.py")) if (root / folder).is_dir() else []:
            module, src_folder, is_pkg = module_name(path, root)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for name, line in imported_names(tree, module, is_pkg):
                for rule in RULES:
                    if rule.applies(module, src_folder) and rule.forbidden(module, name):
                        out.append(Violation(rule.id, module, name, f"{path.relative_to(root)}:{line}"))
    return _collapse(out)


def _collapse(found: list[Violation]) -> list[Violation]:
    """One row per import statement and rule: the module it names (``from a.b import c`` names a.b), unless only
    the imported name breaks the rule (``from msdoctor import checks``)."""
    by_stmt: dict[tuple[str, str], list[Violation]] = {}
    for v in found:
        by_stmt.setdefault((v.rule, v.where), []).append(v)
    return [min(vs, key=lambda v: len(v.imported)) for vs in by_stmt.values()]


def test_the_source_tree_keeps_the_layering_rules() -> None:
    found = violations(REPO)
    new = [
        f"{v.where}: {v.importer} imports {v.imported} (rule {v.rule!r}: "
        f"{next(r.sentence for r in RULES if r.id == v.rule)})"
        for v in found
        if v.key() not in KNOWN
    ]
    assert not new, "layering rules broken (docs/architecture.md):\n" + "\n".join(new)
    stale = sorted(set(KNOWN) - {v.key() for v in found})
    assert not stale, f"no longer violated, delete from KNOWN in tests/test_layering.py: {stale}"


def test_the_architecture_page_states_exactly_these_rules() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layering rules", 1)[1].split("\n## ", 1)[0]
    stated = [m.group(1).strip() for m in re.finditer(r"^\d+\. (.+?)(?=^\d+\. |\n\n|\Z)", section, re.M | re.S)]
    stated = [" ".join(s.split()) for s in stated]
    assert stated == [r.sentence for r in RULES]


def _plant(root: Path, rel: str, body: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        if str(parent) != ".":
            (root / parent / "__init__.py").touch()
    path.write_text(textwrap.dedent(body))


@pytest.mark.parametrize(
    "rel, body, rule, imported",
    [
        (
            "msdoctor/preflight/x.py",
            "from msdoctor.commands.check import build_options\n",
            "commands",
            "msdoctor.commands.check",
        ),
        (
            "msdoctor/commands/report.py",
            "def f():\n    from msdoctor.commands.check import prepare\n",
            "commands",
            "msdoctor.commands.check",
        ),
        (
            "msdoctor/doctor.py",
            "from msdoctor.checks.version_matrix import evaluate\n",
            "checks",
            "msdoctor.checks.version_matrix",
        ),
        ("msdoctor/doctor.py", "from msdoctor import checks\n", "checks", "msdoctor.checks"),
        (
            "msdoctor/fix/stack.py",
            "from ..checks.version_matrix import common\n",
            "checks",
            "msdoctor.checks.version_matrix",
        ),
        (
            "msdoctor/render/terminal.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from msdoctor.context import Context\n",
            "render",
            "msdoctor.context",
        ),
        ("msdoctor/render/json_report.py", "from .. import runner\n", "render", "msdoctor.runner"),
        ("msdoctor/memory/estimator.py", "import msdoctor.training.config\n", "memory", "msdoctor.training.config"),
        ("training/train.py", "from msdoctor.redact import Redactor\n", "training", "msdoctor.redact"),
        ("training/logs.py", "from .. import proc\n", "training", "msdoctor.proc"),
    ],
)
def test_a_planted_violation_fails(tmp_path: Path, rel: str, body: str, rule: str, imported: str) -> None:
    _plant(tmp_path, rel, body)
    (v,) = violations(tmp_path)
    assert (v.rule, v.imported) == (rule, imported)
    assert v.where.startswith(rel + ":")


@pytest.mark.parametrize(
    "rel, body",
    [
        ("msdoctor/cli.py", "import msdoctor.commands.check\n"),
        ("msdoctor/commands/train.py", "from msdoctor.commands.common import resolve_target\n"),
        ("msdoctor/commands/fix_stack.py", "from msdoctor.checks.version_matrix import fix\n"),
        (
            "msdoctor/render/github.py",
            "from msdoctor.model import Report\nfrom msdoctor.redact import sanitize\nfrom .terminal import x\n",
        ),
        ("checks/memory_fit/__init__.py", "from msdoctor.training.config import ConfigError\n"),
        ("training/train.py", "from msdoctor.training import config\nfrom .logs import x\n"),
    ],
)
def test_what_the_rules_allow_passes(tmp_path: Path, rel: str, body: str) -> None:
    _plant(tmp_path, rel, body)
    assert violations(tmp_path) == []


def test_the_checker_finds_the_same_imports_as_the_interpreter_would(tmp_path: Path) -> None:
    """Relative imports resolve as Python resolves them, from a package __init__ and from a module."""
    _plant(tmp_path, "checks/a/__init__.py", "from .b import x\nfrom ..c import y\n")
    tree = ast.parse((tmp_path / "checks/a/__init__.py").read_text())
    names = {n for n, _ in imported_names(tree, "msdoctor.checks.a", True)}
    assert {"msdoctor.checks.a.b", "msdoctor.checks.c", "msdoctor.checks.c.y"} <= names
    tree = ast.parse("from . import sibling\n")
    names = {n for n, _ in imported_names(tree, "msdoctor.render.terminal", False)}
    assert "msdoctor.render.sibling" in names


# -- rule 4 holds at run time too: the estimator's readers raise msdoctor.domain.problems, not the trainer's pair --
def test_estimating_a_mindformers_or_hf_file_loads_nothing_of_the_trainer() -> None:
    """A fresh interpreter reads a MindFormers YAML and a Hugging Face config.json (a good one and an
    impossible one each), and msdoctor.training is not in sys.modules afterwards: no re-export hides the import."""
    code = textwrap.dedent("""\
        import sys
        from pathlib import Path
        from msdoctor.domain.problems import ConfigError
        from msdoctor.memory import load_source
        from msdoctor.memory.sources import Overrides
        raised = []
        for name, over in [("tests/data/memory/pretrain_llama2_7b_legacy.yaml", None),
                           ("tests/data/memory/pretrain_llama2_7b_legacy.yaml", Overrides(tensor_parallel=3)),
                           ("tests/data/memory/hf/Qwen3-32B/config.json", Overrides(seq_length=4096)),
                           ("tests/data/memory/hf/Qwen3-32B/config.json", Overrides(tensor_parallel=3))]:
            try:
                load_source(Path(name), over) if over else load_source(Path(name))
            except ConfigError as exc:
                raised.append(len(exc.problems))
        print(raised, sorted(m for m in sys.modules if m.startswith("msdoctor.training")))
        """)
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["[1,", "1]", "[]"], res.stdout


def test_the_readers_and_the_trainer_state_a_problem_the_same_way() -> None:
    """The two Problem/ConfigError pairs (msdoctor's readers, the reference trainer) have the same fields and
    print the same text, so a message reads the same whichever of them found it."""
    import dataclasses

    from msdoctor.domain import problems as domain
    from msdoctor.training import config as trainer

    assert [(f.name, f.default) for f in dataclasses.fields(domain.Problem)] == [
        (f.name, f.default) for f in dataclasses.fields(trainer.Problem)
    ]
    cases = [
        ((), "must be a mapping", None, None),
        (("model", "num_heads"), "must divide", 3, 12),
        (("--devices",), "is 8, not 16", 8, None),
        ((0, "x"), "odd key", {"a": 1}, 7),
    ]
    for path in (None, Path("cfg.yaml")):
        for case in cases:
            assert domain.Problem(*case).render(path) == trainer.Problem(*case).render(path)
        assert str(domain.ConfigError(path, [domain.Problem(*c) for c in cases])) == str(
            trainer.ConfigError(path, [trainer.Problem(*c) for c in cases])
        )
