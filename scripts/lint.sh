#!/usr/bin/env bash
# ruff and mypy as configured in pyproject.toml. scripts/test.sh runs this before pytest.
# Usage: ./scripts/lint.sh   (needs .venv with the test extra: ./scripts/test.sh builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check --quiet .
# msdoctor is installed from five folders (package-dir in pyproject.toml: checks/ is msdoctor.checks, ...).
# mypy cannot follow that mapping, so it checks a tree of links laid out as the installed package;
# its messages name build/typecheck/msdoctor/checks/..., which is checks/... here.
tree=build/typecheck
rm -rf "$tree"
mkdir -p "$tree/msdoctor"
for f in msdoctor/* checks compat_matrix training docs; do
  case "$f" in */__pycache__) continue ;; esac
  ln -s "$PWD/$f" "$tree/msdoctor/"
done
cd "$tree"
../../.venv/bin/mypy --config-file ../../pyproject.toml --cache-dir ../mypy_cache -p msdoctor
