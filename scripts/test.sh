#!/usr/bin/env bash
# Set up .venv with the test extras (real MindSpore 2.7.0, transformers, ipykernel) and run the whole test suite.
# Extra arguments go to pytest, e.g. ./scripts/test.sh -k memory
. "$(dirname "$0")/_venv.sh" train,test
exec .venv/bin/python -m pytest "$@"
