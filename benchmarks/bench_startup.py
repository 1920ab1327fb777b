"""Wall time of msdoctor's entry points next to the anchors, on the same interpreter.

Prints, side by side in one run (median of N runs, seconds):

* ``msdoctor --help``                 (target: < 0.150 s: no heavy import at CLI start)
* ``msdoctor check --quick``          (target: no slower than ``pip check`` while doing far more)
* ``python -m pip check``             (anchor)
* ``python -c "import mindspore; mindspore.run_check()"``   (anchor; what people run today)
* ``msdoctor check`` (full, with the live probes)           (target: within 1.2x of run_check)

Usage: python benchmarks/bench_startup.py [--python PATH] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(argv: list[str], runs: int, cwd: str, env: dict) -> tuple[float, float, int]:
    times = []
    rc = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        res = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        rc = res.returncode
    return statistics.median(times), min(times), rc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="target interpreter (default: this one)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--full", action="store_true", help="also time the full check and run_check (slow)")
    args = parser.parse_args()

    msdoctor = shutil.which("msdoctor", path=str(Path(sys.executable).parent)) or "msdoctor"
    env = dict(os.environ, NO_COLOR="1", MSDOCTOR_NO_SPINNER="1", GLOG_v="3")
    cwd = tempfile.mkdtemp(prefix="msdoctor-bench-")  # MindSpore writes into the cwd; keep the repo clean
    rows = [
        ("msdoctor --help", [msdoctor, "--help"], 0.150),
        ("msdoctor check --quick", [msdoctor, "check", "--quick", "--python", args.python], None),
        ("python -m pip check (anchor)", [args.python, "-m", "pip", "check"], None),
    ]
    if args.full:
        rows += [
            ("import mindspore; run_check() (anchor)",
             [args.python, "-c", "import mindspore; mindspore.run_check()"], None),
            ("msdoctor check (full)", [msdoctor, "check", "--python", args.python], None),
        ]
    # one warm-up run of each, so the page cache is not what is measured
    for _, argv, _ in rows:
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"target: {args.python}   runs: {args.runs}   cpus: {os.cpu_count()}")
    print(f"{'command':<42} {'median s':>9} {'min s':>8} {'rc':>3}  target")
    results = {}
    for name, argv, limit in rows:
        med, best, rc = timed(argv, args.runs, cwd, env)
        results[name] = med
        verdict = "" if limit is None else (f"< {limit:.3f} s: " + ("ok" if med < limit else "MISSED"))
        print(f"{name:<42} {med:>9.3f} {best:>8.3f} {rc:>3}  {verdict}")
    quick, pipcheck = results["msdoctor check --quick"], results["python -m pip check (anchor)"]
    print(f"\ncheck --quick / pip check = {quick / pipcheck:.2f} (target <= 1.0)")
    if args.full:
        full = results["msdoctor check (full)"]
        anchor = results["import mindspore; run_check() (anchor)"]
        print(f"check (full) / run_check  = {full / anchor:.2f} (target <= 1.2)")
    shutil.rmtree(cwd, ignore_errors=True)


if __name__ == "__main__":
    main()
