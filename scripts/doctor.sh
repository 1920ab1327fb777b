#!/usr/bin/env bash
# Set up .venv (msdoctor + MindSpore 2.7.0 for CPU, the oldest supported release) and run `msdoctor check` on it.
# Extra arguments go to `msdoctor check`, e.g. ./scripts/doctor.sh --config training/configs/tiny-cpu.yaml
. "$(dirname "$0")/_venv.sh" train
exec .venv/bin/msdoctor check "$@"
