#!/usr/bin/env bash
# Set up .venv with the test extras (real MindSpore 2.7.0, transformers, ipykernel) and .venv-newest
# (the newest supported MindSpore), then run ruff and mypy (scripts/lint.sh) and the whole test suite.
# Extra arguments go to pytest, e.g. ./scripts/test.sh -k memory
. "$(dirname "$0")/_venv.sh" train,test
. scripts/_venv_newest.sh
./scripts/lint.sh
exec .venv/bin/python -m pytest "$@"
