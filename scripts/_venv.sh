# Sourced by scripts/doctor.sh and scripts/test.sh: create .venv and install msdoctor into it.
# Usage: . scripts/_venv.sh EXTRAS   (e.g. "train" or "train,test")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras="$1"
. scripts/_python.sh
# .venv gets MindSpore 2.7.0 (scripts/constraints/oldest.txt), whose wheels are for CPython 3.9-3.11:
# prefer 3.11. The newest supported release is tested in .venv-newest (scripts/_venv_newest.sh).
py="$(pick_python 3.11 3.10 3.9)" || { echo "no Python 3.9-3.11 found; install one first" >&2; exit 2; }
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $("$py" --version 2>&1)" >&2
  "$py" -m venv .venv
fi
# About 750 MB on the first run (MindSpore and its dependencies), and pip -q prints nothing meanwhile.
echo "installing msdoctor[${extras}] into .venv (the first time takes a few minutes)" >&2
.venv/bin/python -m pip install --disable-pip-version-check -q \
  -c scripts/constraints/oldest.txt -e ".[${extras}]"
