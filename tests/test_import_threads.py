"""Checks import their libraries lazily from their own threads: concurrent first imports must not deadlock.

`msdoctor.memory`'s __init__ once imported every submodule, so memory-fit importing msdoctor.memory.plan while
training-config imported msdoctor.memory.validate raised _DeadlockError in one of them (seen in every run of
`msdoctor check --quick --config training/configs/tiny-cpu-2nodes.yaml`). Each run below is a fresh interpreter
whose threads, released together by a barrier, each make a first import of a different module.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import importlib, json, sys, threading
first, names = sys.argv[1].split(","), sys.argv[2:]
for name in first:  # what the main thread imports before any check runs: the check packages
    importlib.import_module(name)
barrier = threading.Barrier(len(names))
errors = {}
def load(name):
    barrier.wait()
    try:
        importlib.import_module(name)
    except BaseException as exc:
        errors[name] = f"{type(exc).__name__}: {exc}"
threads = [threading.Thread(target=load, args=(n,)) for n in names]
for t in threads: t.start()
for t in threads: t.join(60)
print(json.dumps(errors))
"""


def _check_packages() -> list[str]:
    return sorted(f"msdoctor.checks.{p.name}" for p in (REPO / "checks").iterdir() if (p / "__init__.py").exists())


def _lazy_imports() -> list[str]:
    """The msdoctor modules that checks and fact functions import inside a function: the imports that run in the
    runner's threads."""
    found: set[str] = set()
    files = [
        *(REPO / "checks").rglob("*.py"),
        *(REPO / "msdoctor" / "facts").rglob("*.py"),
        *(REPO / "msdoctor" / "domain").rglob("*.py"),
    ]
    for path in files:
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("msdoctor."):
                    found.add(node.module or "")
    return sorted(m for m in found if importlib.util.find_spec(m) is not None)


def test_concurrent_first_imports_do_not_deadlock() -> None:
    names = _lazy_imports()
    assert "msdoctor.memory.plan" in names and "msdoctor.memory.validate" in names, names
    for _ in range(3):
        r = subprocess.run(
            [sys.executable, "-c", SCRIPT, ",".join(_check_packages()), *names],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.strip().splitlines()[-1]) == {}
