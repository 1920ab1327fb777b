#!/usr/bin/env bash
# ruff (lint and format) and mypy as configured in pyproject.toml. scripts/test.sh runs this before pytest.
# The formatting: `.venv/bin/ruff format .` fixes what `ruff format --check` reports.
# Usage: ./scripts/lint.sh   (needs .venv with the test extra: ./scripts/test.sh builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet . || { echo 'lint: files not formatted; run: .venv/bin/ruff format .' >&2; exit 1; }
# msdoctor is installed from five folders (package-dir in pyproject.toml: checks/ is msdoctor.checks, ...).
# mypy checks the package laid out as installed: the tree setuptools' strict editable mode builds from
# pyproject.toml (scripts/static_tree.py; editors use the same tree, docs/architecture.md). Its messages name
# build/static-tree/msdoctor/checks/..., which is checks/... here.
tree=$(.venv/bin/python scripts/static_tree.py)
cd "$tree"
"$OLDPWD/.venv/bin/mypy" --config-file "$OLDPWD/pyproject.toml" --cache-dir "$OLDPWD/build/mypy_cache" -p msdoctor
