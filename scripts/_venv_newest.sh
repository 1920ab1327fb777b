# Sourced by scripts/test.sh: build .venv-newest, an interpreter with the newest MindSpore msdoctor
# supports (scripts/constraints/newest.txt), and export MSDOCTOR_TEST_NEWEST_PYTHON for the tests that
# run the live probe and the trainer on it (tests/test_newest_mindspore.py). msdoctor is not installed
# there: it examines that interpreter with --python, as it would a user's. When it cannot be built
# (no Python 3.10-3.12, no package index) the tests say why they skip.
newest_py="$(pick_python 3.12 3.11 3.10)" || newest_py=""
if [ -z "$newest_py" ]; then
  echo "no Python 3.10-3.12 for .venv-newest: its tests will skip" >&2
else
  if [ ! -x .venv-newest/bin/python ]; then
    echo "creating .venv-newest with $("$newest_py" --version 2>&1)" >&2
    "$newest_py" -m venv .venv-newest
  fi
  if .venv-newest/bin/python -m pip install --disable-pip-version-check -q -r scripts/constraints/newest.txt; then
    export MSDOCTOR_TEST_NEWEST_PYTHON="$PWD/.venv-newest/bin/python"
  else
    echo "could not install scripts/constraints/newest.txt into .venv-newest: its tests will skip" >&2
  fi
fi
