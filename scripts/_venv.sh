# Sourced by scripts/doctor.sh and scripts/test.sh: create .venv and install msdoctor into it.
# Usage: . scripts/_venv.sh EXTRAS   (e.g. "train" or "train,test")
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras="$1"
# MindSpore 2.7.0 has wheels for CPython 3.9-3.11 only: prefer 3.11.
py=""
for cand in python3.11 python3.10 python3.9 python3; do
  if command -v "$cand" >/dev/null 2>&1; then py="$cand"; break; fi
done
[ -n "$py" ] || { echo "no python3 found; install Python 3.9-3.11 first" >&2; exit 2; }
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($py --version 2>&1)" >&2
  "$py" -m venv .venv
fi
# pip keeps downloaded wheels in its cache, so the 750 MB MindSpore wheel is fetched once per machine.
.venv/bin/python -m pip install --disable-pip-version-check -q -e ".[${extras}]"
