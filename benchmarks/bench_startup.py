"""Wall time of msdoctor's entry points next to the anchors, on the same interpreter.

Prints, side by side in one run (median of N runs, seconds):

* ``msdoctor --help``                 (target: < 0.150 s: no heavy import at CLI start)
* ``msdoctor check --quick``          (target: no slower than ``pip check`` while doing far more)
* ``python -m pip check``             (anchor; the pip installed in the target, whose version is printed:
                                       upgrade it first, ``python -m pip install -U pip``, to compare with
                                       the current pip, which is faster than the one a fresh venv bundles)
* ``python -c "import mindspore; mindspore.run_check()"``   (anchor; what people run today)
* ``msdoctor check`` (full, with the live probes)           (target: within 1.2x of run_check)

Each row gives the median and the best wall time, and the median CPU time (user + system, the
command and all its children): on a shared machine wall times swing with the load, CPU times much
less. Byte-code is written (PYTHONDONTWRITEBYTECODE is dropped from the environment) and each
command runs once before timing, so an editable msdoctor is measured with its .pyc files, as pip's
installed ones are.

Usage: python benchmarks/bench_startup.py [--python PATH] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import resource
import tempfile
import time
from pathlib import Path


def timed(argv: list[str], runs: int, cwd: str, env: dict) -> tuple[float, float, float, int]:
    """(median wall, best wall, median CPU of the command and its children, last exit status)."""
    times, cpus = [], []
    rc = 0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        rc = res.returncode
    return statistics.median(times), min(times), statistics.median(cpus), rc


def pip_version(python: str) -> str:
    res = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True)
    return res.stdout.split()[1] if res.returncode == 0 and res.stdout.startswith("pip ") else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="target interpreter (default: this one)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--full", action="store_true", help="also time the full check and run_check (slow)")
    args = parser.parse_args()

    msdoctor = shutil.which("msdoctor", path=str(Path(sys.executable).parent)) or "msdoctor"
    env = dict(os.environ, NO_COLOR="1", MSDOCTOR_NO_SPINNER="1", GLOG_v="3")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
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
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"target: {args.python}   pip {pip_version(args.python)}   runs: {args.runs}   cpus: {os.cpu_count()}"
          f"   load: {load:.1f}")
    print(f"{'command':<42} {'median s':>9} {'min s':>8} {'cpu s':>7} {'rc':>3}  target")
    results, cpu = {}, {}
    for name, argv, limit in rows:
        med, best, used, rc = timed(argv, args.runs, cwd, env)
        results[name], cpu[name] = med, used
        verdict = "" if limit is None else (f"< {limit:.3f} s: " + ("ok" if med < limit else "MISSED"))
        print(f"{name:<42} {med:>9.3f} {best:>8.3f} {used:>7.3f} {rc:>3}  {verdict}")
    q, p = "msdoctor check --quick", "python -m pip check (anchor)"
    print(f"\ncheck --quick / pip check = {results[q] / results[p]:.2f} wall, {cpu[q] / cpu[p]:.2f} cpu "
          f"(target <= 1.0; pip {pip_version(args.python)})")
    if args.full:
        full = results["msdoctor check (full)"]
        anchor = results["import mindspore; run_check() (anchor)"]
        print(f"check (full) / run_check  = {full / anchor:.2f} (target <= 1.2)")
    shutil.rmtree(cwd, ignore_errors=True)


if __name__ == "__main__":
    main()
