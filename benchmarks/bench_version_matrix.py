"""Benchmark: what the static part of the version-matrix check adds to `msdoctor check --quick`.

Prints, side by side (median of --runs):
  1. in-process cost of the static part on an already-probed target: a fresh interpreter imports the
     check, loads and validates compat_matrix/, reads the CANN/GPU files and evaluates every rule
     (cold: includes the imports and the first matrix load), and the same evaluation warm;
  2. end to end: `msdoctor check --quick --only python-env` vs `--only python-env,version-matrix`;
  3. the anchor: `<python> -m pip check` on the same interpreter (what rule 1 reproduces);
  4. with the import smoke: the check alone and a full `msdoctor check`, next to importing MindSpore
     (and transformers) once, since the smoke overlaps the other live probes.

Usage: python benchmarks/bench_version_matrix.py [--python /path/to/python] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MSDOCTOR = Path(sys.executable).with_name("msdoctor")

IN_PROCESS = r"""
import json, sys, time
from msdoctor.probe import run_script
from msdoctor.facts.target import TargetFacts
data, _ = run_script(sys.argv[1], "target_probe.py", timeout=60)
import msdoctor.context, msdoctor.model, msdoctor.plugins  # the foundation, loaded by every msdoctor run
ti = time.perf_counter()
import msdoctor.checks.version_matrix  # what loading the entry point costs every run, selected or not
registration = time.perf_counter() - ti
t0 = time.perf_counter()
from msdoctor.checks.version_matrix import MatrixInputs, evaluate_static
from msdoctor.checks.version_matrix.common import mindspore_dir
from msdoctor.checks.version_matrix.gpu import read_gpu
from msdoctor.facts.cann import read_cann
from msdoctor.matrix import load
import os
def once():
    t = TargetFacts.from_probe(data)
    inputs = MatrixInputs(t, load(), read_cann(os.environ), read_gpu(os.environ, t.env.get("LD_LIBRARY_PATH", ""), mindspore_dir(t)))
    return evaluate_static(inputs)
n = len(once())
cold = time.perf_counter() - t0
t1 = time.perf_counter()
for _ in range(20):
    once()
warm = (time.perf_counter() - t1) / 20
print(json.dumps({"registration_s": registration, "cold_s": cold, "warm_s": warm, "findings": n, "dists": len(data["distributions"])}))
"""


def wall(argv: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    return time.perf_counter() - t0


def median_wall(argv: list[str], runs: int, env: dict) -> float:
    wall(argv, env)  # warm the page cache and .pyc files
    return statistics.median(wall(argv, env) for _ in range(runs))


def paired(a: list[str], b: list[str], runs: int, env: dict) -> tuple[float, float, float]:
    """Medians of a, of b, and of the per-pair difference b - a, measured interleaved (load drifts)."""
    wall(a, env), wall(b, env)
    ta, tb = [], []
    for _ in range(runs):
        ta.append(wall(a, env))
        tb.append(wall(b, env))
    return statistics.median(ta), statistics.median(tb), statistics.median(y - x for x, y in zip(ta, tb))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable, help="target interpreter (default: this one)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    env = dict(os.environ, NO_COLOR="1", MSDOCTOR_NO_SPINNER="1")
    # an installed msdoctor has its .pyc files (pip compiles them); let the warm-up run write them
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    samples = []
    subprocess.run([sys.executable, "-c", IN_PROCESS, args.python], capture_output=True, env=env, timeout=300)
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, "-c", IN_PROCESS, args.python], capture_output=True, text=True, env=env, timeout=300
        )
        samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cold = statistics.median(s["cold_s"] for s in samples)
    warm = statistics.median(s["warm_s"] for s in samples)
    registration = statistics.median(s["registration_s"] for s in samples)

    base_cmd = [str(MSDOCTOR), "check", "--python", args.python, "--quick", "--format", "json"]
    without, with_vm, added = paired(
        base_cmd + ["--only", "python-env"], base_cmd + ["--only", "python-env,version-matrix"], args.runs, env
    )
    pip_check = median_wall([args.python, "-m", "pip", "check"], args.runs, env)
    bare = median_wall([args.python, "-c", "pass"], args.runs, env)
    full_runs = max(1, min(3, args.runs))
    full = median_wall([str(MSDOCTOR), "check", "--python", args.python, "--format", "json"], full_runs, env)
    smoke_only = median_wall(
        [str(MSDOCTOR), "check", "--python", args.python, "--only", "version-matrix", "--format", "json"],
        full_runs,
        env,
    )
    import_ms = median_wall([args.python, "-c", "import mindspore"], full_runs, env)
    import_stack = median_wall(
        [args.python, "-c", "import mindspore, transformers; transformers.PretrainedConfig"], full_runs, env
    )

    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"target: {args.python}  ({samples[0]['dists']} distributions on sys.path; runs: {args.runs}, median; "
        f"{os.cpu_count()} CPUs, load average {load1:.1f})"
    )
    print(f"{'measure':78} {'time':>10}")
    rows = [
        ("importing the check module (entry-point load, paid by every run)", registration),
        ("static part, in process, cold (imports + matrix load + rules)", cold),
        ("static part, in process, warm (rules only)", warm),
        ("msdoctor check --quick --only python-env", without),
        ("msdoctor check --quick --only python-env,version-matrix", with_vm),
        ("  added by running version-matrix, end to end (median of paired differences)", added),
        ("anchor: python -m pip check (same interpreter)", pip_check),
        ("anchor: python -c pass (interpreter start-up)", bare),
        (f"msdoctor check --only version-matrix (with the import smoke; {full_runs} runs)", smoke_only),
        (f"msdoctor check, every check, live probes included ({full_runs} runs)", full),
        ("anchor: python -c 'import mindspore'", import_ms),
        ("anchor: python -c 'import mindspore, transformers' (what the smoke imports)", import_stack),
    ]
    for label, value in rows:
        print(f"{label:78} {value * 1000:8.1f} ms")
    print(
        f"budget: version-matrix adds < 100 ms to `msdoctor check --quick` -> "
        f"{(added + registration) * 1000:.0f} ms (run + module import), {'OK' if added + registration < 0.1 else 'OVER'}  (the in-process cold figure also pays imports, e.g. packaging, "
        "that other checks share in a full run)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
