"""Editors and type checkers see msdoctor.checks / msdoctor.training (checks/ and training/ in the repository)
through the tree scripts/static_tree.py builds: setuptools' strict editable layout, made from pyproject.toml's
package-dir, nothing installed. scripts/lint.sh runs mypy on it; VS Code/Pylance reads it as an extra path
(docs/architecture.md, "Editors and type checkers").

Pyright's import resolution is emulated with the standard library's static finder (importlib.machinery.PathFinder finds files, it runs none) over the roots pyright searches, in
pyright's documented order (https://github.com/microsoft/pyright/blob/main/docs/import-resolution.md: the
execution environment's root, then extraPaths), and checked with pyright itself where scripts/test.sh could install
it (build/node, from the npm registry). mypy is the real mypy of the test environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Optional

import pytest

from helpers import REPO

#: source folder -> installed package (as in tests/test_layering.py, from pyproject.toml's package-dir)
ROOTS = {"msdoctor": "msdoctor", "checks": "msdoctor.checks", "training": "msdoctor.training"}


def _copy(dst: Path) -> Path:
    """What the wheel is built from, copied: the build writes build/ and *.egg-info into its project."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("msdoctor", "checks", "training", "compat_matrix", "docs"):
        shutil.copytree(REPO / name, dst / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dst / name)
    return dst


def _tree(project: Path) -> Path:
    res = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "static_tree.py"), str(project)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return Path(res.stdout.strip())


def resolve(name: str, roots: list[Path]) -> Optional[str]:
    """The file a static tool resolves ``name`` to: the first root under which every part of it is found."""
    parts = name.split(".")
    for root in roots:
        path: Optional[list[str]] = [str(root)]
        spec = None
        for i in range(len(parts)):
            spec = PathFinder.find_spec(".".join(parts[: i + 1]), path) if path is not None else None
            if spec is None:
                break
            path = list(spec.submodule_search_locations or []) or None  # a module has no children
        if spec is not None and spec.origin:
            return os.path.realpath(spec.origin)
    return None


def modules(project: Path) -> dict[str, str]:
    """Every module of the three source folders: installed name -> its source file."""
    out = {}
    for folder, package in ROOTS.items():
        for path in sorted((project / folder).rglob("*.py")):
            parts = [package] + list(path.relative_to(project / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = os.path.realpath(path)
    return out


def test_every_module_resolves_to_its_source_file_through_the_tree(tmp_path: Path) -> None:
    project = _copy(tmp_path / "src")
    tree = _tree(project)
    assert tree == project / "build" / "static-tree" and (tree / "msdoctor" / "checks").is_dir()
    wanted = modules(project)
    assert len(wanted) > 150 and "msdoctor.checks.version_matrix.fix" in wanted and "msdoctor.training.config" in wanted
    # the workspace root first (pyright's execution root: the repository's msdoctor/ answers msdoctor.*), the tree
    # second (extraPaths): each module lands on its own file in the repository
    editor = {name: resolve(name, [project, tree]) for name in wanted}
    assert editor == wanted
    assert {name: resolve(name, [tree]) for name in wanted} == wanted  # mypy's view: the tree alone
    # without the tree, the remapped packages are what an editor cannot find
    bare = {name for name in wanted if resolve(name, [project]) is None}
    assert bare == {n for n in wanted if n.startswith(("msdoctor.checks", "msdoctor.training"))}


def _remap(project: Path, to: str) -> subprocess.CompletedProcess:
    toml = project / "pyproject.toml"
    text = toml.read_text()
    assert '"msdoctor.training" = "training"\n' in text
    toml.write_text(text.replace('"msdoctor.training" = "training"\n', f'"msdoctor.training" = "{to}"\n'))
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "static_tree.py"), str(project)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_broken_mapping_leaves_the_remapped_modules_unresolved(tmp_path: Path) -> None:
    project = _copy(tmp_path / "a")
    res = _remap(project, "checks")  # msdoctor.training taken from the wrong folder: the tree follows it
    assert res.returncode == 0, res.stderr
    tree = Path(res.stdout.strip())
    assert resolve("msdoctor.training.config", [project, tree]) is None
    assert resolve("msdoctor.training", [project, tree]) == os.path.realpath(project / "checks" / "__init__.py")
    assert resolve("msdoctor.checks.version_matrix.fix", [project, tree]) is not None
    res = _remap(_copy(tmp_path / "b"), "msdoctor/nowhere")  # a folder that is not there: setuptools refuses
    assert res.returncode == 1 and "static_tree: setuptools could not build the tree" in res.stderr.splitlines()[-1]
    assert "package directory 'msdoctor/nowhere' does not exist" in res.stderr.splitlines()[-1]


def test_mypy_sees_the_remapped_packages_through_the_tree(tmp_path: Path) -> None:
    project = _copy(tmp_path / "src")
    tree = _tree(project)
    use = tmp_path / "use.py"
    use.write_text(
        "from msdoctor.checks.kernel_mismatch.fixer import FIXER\n"
        "from msdoctor.training.config import ConfigError\n"
        "from msdoctor.domain.problems import Problem\n"
        "reveal_type(FIXER)\nreveal_type(ConfigError)\nreveal_type(Problem)\n"
    )
    env = {**os.environ, "MYPYPATH": str(tree)}
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--follow-imports",
            "silent",
            "--python-executable",
            sys.executable,
            str(use),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert "Cannot find implementation" not in res.stdout, res.stdout
    assert 'Revealed type is "msdoctor.fix.Fixer[msdoctor.checks.kernel_mismatch.fix.KernelPlan]"' in res.stdout, (
        res.stdout
    )
    assert "msdoctor.training.config.ConfigError" in res.stdout and "msdoctor.domain.problems.Problem" in res.stdout
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(tmp_path / "cache2"),
            "--follow-imports",
            "silent",
            "--python-executable",
            sys.executable,
            str(use),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(project)},
        timeout=600,
    )
    assert 'Cannot find implementation or library stub for module named "msdoctor.checks' in res.stdout, res.stdout


def test_real_pyright_sees_the_remapped_packages_through_the_tree(tmp_path: Path) -> None:
    """Pyright itself (the engine of Pylance), where it is installed (build/node, or on PATH): with the tree as
    its extraPaths it resolves and types msdoctor.checks.* and msdoctor.training.*; without it, it cannot."""
    import json

    local = REPO / "build" / "node" / "node_modules" / ".bin" / "pyright"  # scripts/test.sh installs it there
    pyright = str(local) if local.exists() else shutil.which("pyright")
    if pyright is None:
        pytest.skip(
            "pyright is not installed here (scripts/test.sh puts it in build/node when npm is on PATH); "
            "the emulation above stands for it"
        )
    project = _copy(tmp_path / "src")
    tree = _tree(project)
    use = tmp_path / "use.py"
    use.write_text(
        "from msdoctor.checks.kernel_mismatch.fixer import FIXER\n"
        "from msdoctor.training.config import ConfigError\n"
        "reveal_type(FIXER)\nreveal_type(ConfigError)\n"
    )

    def run(extra: list[str]) -> str:
        (tmp_path / "pyrightconfig.json").write_text(json.dumps({"extraPaths": extra, "pythonVersion": "3.11"}))
        res = subprocess.run([pyright, str(use)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
        return res.stdout

    seen = run([str(tree)])
    assert (
        'Type of "FIXER" is "Fixer[KernelPlan]"' in seen and 'Type of "ConfigError" is "type[ConfigError]"' in seen
    ), seen
    assert "could not be resolved" not in seen, seen
    blind = run([str(project)])
    assert 'Import "msdoctor.training.config" could not be resolved' in blind, blind


@pytest.mark.parametrize("script", ["scripts/lint.sh"])
def test_lint_checks_the_tree_static_tree_builds_not_a_tree_of_its_own(script: str) -> None:
    text = (REPO / script).read_text()
    assert "scripts/static_tree.py" in text and "ln -s" not in text
