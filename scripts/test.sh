#!/usr/bin/env bash
# Set up .venv with the test extras (real MindSpore 2.7.0, transformers, ipykernel) and .venv-newest
# (the newest supported MindSpore), then run ruff and mypy (scripts/lint.sh) and the test suite.
#
#   ./scripts/test.sh                  everything, as CI does: the fast tier (-m "not slow"), then the slow one
#   ./scripts/test.sh -m "not slow"    any arguments: one pytest run with them, e.g. tests/test_foo.py or -k memory
#
# pytest runs on parallel workers (pytest-xdist, one per CPU (nproc); MSDOCTOR_TEST_WORKERS=N to choose, 0 for none):
# tests that share a module fixture stay on one worker, the others spread (--dist loadgroup, units from
# tests/conftest.py). Each run prints its 30 slowest tests. docs/testing.md has the figures.
started=$SECONDS
phase() { echo "== $1 ($((SECONDS - started)) s since start)" >&2; }
here="$(cd "$(dirname "$0")/.." && pwd)"

# The two venvs are built at the same time: pip installs on one core, and the newest MindSpore wheel does
# not wait for the oldest. .venv-newest's interpreter comes back through a file (a subshell cannot export).
# pyright (Pylance's engine) for tests/test_static_tree.py, into build/node (nothing global), where npm is here
npm_pid=""
if [ ! -x "$here/build/node/node_modules/.bin/pyright" ] && command -v npm >/dev/null 2>&1; then
  (cd "$here" && npm install --silent --no-audit --no-fund --prefix build/node pyright@1.1.414 >/dev/null 2>&1 \
    || echo "pyright not installed (npm failed): tests/test_static_tree.py skips its pyright test" >&2) &
  npm_pid=$!
fi
phase "building .venv and .venv-newest"
newest_out="$(mktemp)"
(
  cd "$here" && . scripts/_python.sh && . scripts/_venv_newest.sh >&2
  echo "${MSDOCTOR_TEST_NEWEST_PYTHON:-}" >"$newest_out"
) &
newest_pid=$!
. "$here/scripts/_venv.sh" train,test
phase "lint"
lint_rc=0
./scripts/lint.sh || lint_rc=$?
wait "$newest_pid" || true
[ -z "$npm_pid" ] || wait "$npm_pid" || true
MSDOCTOR_TEST_NEWEST_PYTHON="$(cat "$newest_out")"
rm -f "$newest_out"
[ -n "$MSDOCTOR_TEST_NEWEST_PYTHON" ] && export MSDOCTOR_TEST_NEWEST_PYTHON || unset MSDOCTOR_TEST_NEWEST_PYTHON
[ "$lint_rc" -eq 0 ] || { echo "lint failed (exit $lint_rc)" >&2; exit "$lint_rc"; }

# Bytecode of msdoctor and the tests is cached in __pycache__ (git ignores it): every `msdoctor` a test
# starts would otherwise compile the package again, and every worker rewrite the tests' asserts again.
unset PYTHONDONTWRITEBYTECODE
# one worker per CPU this process may use (nproc; xdist's -n auto counts physical cores, 1 on some 2-vCPU VMs)
workers="${MSDOCTOR_TEST_WORKERS:-$(nproc 2>/dev/null || echo 2)}"
xdist=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
[ "$workers" = 0 ] && xdist=(-p no:xdist)

# pytest's exit 5 means that nothing was selected (e.g. a tier with no test for the given -k): not a failure.
run_pytest() {
  local rc=0
  .venv/bin/python -m pytest "${xdist[@]}" --durations=30 "$@" || rc=$?
  [ "$rc" -eq 5 ] && rc=0
  return "$rc"
}

if [ "$#" -gt 0 ]; then
  phase "pytest $*"
  run_pytest "$@"
  exit $?
fi
phase "fast tier: pytest -m 'not slow'"
fast_rc=0
run_pytest -m "not slow" || fast_rc=$?
phase "slow tier: pytest -m slow"
slow_rc=0
run_pytest -m slow || slow_rc=$?
phase "done: fast tier exit $fast_rc, slow tier exit $slow_rc"
[ "$fast_rc" -eq 0 ] && [ "$slow_rc" -eq 0 ]
