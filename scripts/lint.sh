#!/usr/bin/env bash
# ruff and mypy as configured in pyproject.toml. scripts/test.sh runs this before pytest.
# Usage: ./scripts/lint.sh   (needs .venv with the test extra: ./scripts/test.sh builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check --quiet .
# msdoctor is installed from five folders (package-dir in pyproject.toml: checks/ is msdoctor.checks, ...).
# mypy checks the package laid out as installed: the tree setuptools' strict editable mode builds from
# pyproject.toml (scripts/static_tree.py; editors use the same tree, docs/architecture.md). Its messages name
# build/static-tree/msdoctor/checks/..., which is checks/... here.
tree=$(.venv/bin/python scripts/static_tree.py)
cd "$tree"
"$OLDPWD/.venv/bin/mypy" --config-file "$OLDPWD/pyproject.toml" --cache-dir "$OLDPWD/build/mypy_cache" -p msdoctor
