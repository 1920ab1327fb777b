"""Wall time of msdoctor's entry points next to the anchors, on the same interpreter.

Prints, side by side in one run (median of N runs, seconds):

* ``msdoctor --help``                 (target: < 0.150 s: no heavy import at CLI start)
* ``msdoctor check --quick``          (target: no slower than ``pip check`` while doing far more)
* ``python -m pip check``             (anchor; the pip installed in the target, whose version is printed:
                                       upgrade it first, ``python -m pip install -U pip``, to compare with
                                       the current pip, which is faster than the one a fresh venv bundles)
* ``python -c "import mindspore; mindspore.run_check()"``   (anchor; what people run today)
* ``msdoctor check`` (full, with the live probes)           (target: within 1.2x of run_check)

The commands run interleaved (run i of each, then run i+1). Each row gives the median and the best wall time, and the median CPU time (user + system, the
command and all its children): on a shared machine wall times swing with the load, CPU times much
less. Byte-code is written (PYTHONDONTWRITEBYTECODE is dropped from the environment) and each
command runs once before timing, so an editable msdoctor is measured with its .pyc files, as pip's
installed ones are.

The target's venv is activated for the commands (VIRTUAL_ENV, its bin first on PATH), as a user runs them;
--no-activate measures the other case, where kernel-mismatch also probes the foreign `python` on PATH.

--both prints four tables: the target venv and a fresh venv (a new venv with only msdoctor and its
dependencies and the current pip, built in a temporary directory from this checkout), each activated and not (issue 28 s.3:
check --quick at 1.0x pip check or less in all four).

--breakdown adds, to each table, where check --quick's CPU time went: its own process (the interpreter's start,
the imports, the rest), and each child it ran (benchmarks/_startup_breakdown.py).

Usage: python benchmarks/bench_startup.py [--python PATH] [--runs N] [--no-activate] [--full] [--both] [--breakdown]
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


def timed_once(argv: list[str], cwd: str, env: dict) -> tuple[float, float, int]:
    """(wall, CPU of the command and its children, exit status) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, res.returncode


def pip_version(python: str) -> str:
    res = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True)
    return res.stdout.split()[1] if res.returncode == 0 and res.stdout.startswith("pip ") else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="target interpreter (default: this one)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--full", action="store_true", help="also time the full check and run_check (slow)")
    parser.add_argument(
        "--no-activate",
        action="store_true",
        help="run without the target's environment activated (then `python` on PATH is another "
        "interpreter, which kernel-mismatch probes too)",
    )
    parser.add_argument("--breakdown", action="store_true", help="where check --quick's CPU time goes")
    parser.add_argument(
        "--both",
        action="store_true",
        help="the target and a fresh venv (only msdoctor's dependencies), each activated and not",
    )
    args = parser.parse_args()
    if not args.both:
        bench(args.python, not args.no_activate, args.runs, args.full, args.breakdown)
        return
    fresh_dir = tempfile.mkdtemp(prefix="msdoctor-fresh-venv-")
    try:
        fresh = fresh_venv(Path(fresh_dir))
        for python in (args.python, fresh):
            for activate in (True, False):
                bench(python, activate, args.runs, args.full, args.breakdown)
                print()
    finally:
        shutil.rmtree(fresh_dir, ignore_errors=True)


def fresh_venv(where: Path) -> str:
    """A new venv with msdoctor from this checkout and its dependencies only, and the current pip."""
    repo = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    python = str(where / "venv" / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", str(repo)], check=True)
    # the anchor is a current pip check, not the older pip the venv module bundles (the current one is faster)
    subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-U", "pip"], check=True)
    return python


def breakdown(python: str, msdoctor: str, cwd: str, env: dict) -> None:
    """check --quick's CPU time: its own process (start, imports, the rest) and each child, best of 3 runs."""
    import json

    interp = (
        Path(msdoctor).read_text(errors="replace").splitlines()[0].lstrip("#!").strip()
        if Path(msdoctor).is_file()
        else sys.executable
    )  # msdoctor's own interpreter, from its script's shebang
    script = str(Path(__file__).resolve().parent / "_startup_breakdown.py")
    runs = []
    for _ in range(3):
        res = subprocess.run([interp, script, python], cwd=cwd, env=env, capture_output=True, text=True)
        if res.returncode != 0 or not res.stdout.strip():
            print(f"  breakdown failed: {res.stderr.strip()[-300:]}")
            return
        runs.append(json.loads(res.stdout.splitlines()[-1]))
    best = min(runs, key=lambda r: r["self_s"] + sum(t for _, t in r["children"]))
    kids = sum(t for _, t in best["children"])
    rest = best["self_s"] - best["start_s"] - best["imports_s"]
    print(
        f"  check --quick CPU, best of 3: {best['self_s'] + kids:.3f} s = msdoctor's process {best['self_s']:.3f} "
        f"(interpreter start {best['start_s']:.3f}, imports of {best['modules']} modules {best['imports_s']:.3f}, "
        f"checks, facts and rendering {rest:.3f}) + {len(best['children'])} children {kids:.3f}:"
    )
    for argv, t in best["children"]:
        print(f"    {t:.3f} s  {argv}")


def bench(python: str, activate: bool, runs: int, full: bool, split: bool = False) -> None:
    """One table: the commands interleaved, ``runs`` times, on ``python`` (its venv activated or not)."""
    python = os.path.abspath(python)
    bindir = str(Path(python).parent)
    msdoctor = (
        shutil.which("msdoctor", path=bindir)
        or shutil.which("msdoctor", path=str(Path(sys.executable).parent))
        or "msdoctor"
    )
    env = dict(os.environ, NO_COLOR="1", MSDOCTOR_NO_SPINNER="1", GLOG_v="3")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("VIRTUAL_ENV", None)
    activated = activate and (Path(bindir).parent / "pyvenv.cfg").is_file()
    if activated:  # as `source <venv>/bin/activate` leaves it, the way the README runs msdoctor and pip
        env["VIRTUAL_ENV"] = str(Path(bindir).parent)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    cwd = tempfile.mkdtemp(prefix="msdoctor-bench-")  # MindSpore writes into the cwd; keep the repo clean
    rows = [
        ("msdoctor --help", [msdoctor, "--help"], 0.150),
        ("msdoctor check --quick", [msdoctor, "check", "--quick", "--python", python], None),
        ("python -m pip check (anchor)", [python, "-m", "pip", "check"], None),
    ]
    if full:
        rows += [
            ("import mindspore; run_check() (anchor)", [python, "-c", "import mindspore; mindspore.run_check()"], None),
            ("msdoctor check (full)", [msdoctor, "check", "--python", python], None),
        ]
    # one warm-up run of each, so the page cache is not what is measured
    for _, argv, _ in rows:
        subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"target: {python} ({'activated' if activated else 'not activated'})   pip {pip_version(python)}"
        f"   runs: {runs}   cpus: {os.cpu_count()}   load: {load:.1f}"
    )
    print(f"{'command':<42} {'median s':>9} {'min s':>8} {'cpu s':>7} {'rc':>3}  target")
    # interleaved: run i of every command back to back, so a change in the machine's load hits all alike
    walls: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    cpus: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    codes: dict[str, int] = {}
    for _ in range(runs):
        for name, argv, _ in rows:
            wall, used, codes[name] = timed_once(argv, cwd, env)
            walls[name].append(wall)
            cpus[name].append(used)
    results, cpu = {}, {}
    for name, _, limit in rows:
        med, best, used = statistics.median(walls[name]), min(walls[name]), statistics.median(cpus[name])
        results[name], cpu[name] = med, used
        verdict = "" if limit is None else (f"< {limit:.3f} s: " + ("ok" if med < limit else "MISSED"))
        print(f"{name:<42} {med:>9.3f} {best:>8.3f} {used:>7.3f} {codes[name]:>3}  {verdict}")
    q, p = "msdoctor check --quick", "python -m pip check (anchor)"
    paired = statistics.median(a / b for a, b in zip(walls[q], walls[p]))
    print(
        f"\ncheck --quick / pip check = {results[q] / results[p]:.2f} wall (median of the paired runs' "
        f"ratios: {paired:.2f}), {cpu[q] / cpu[p]:.2f} cpu (target <= 1.0; pip {pip_version(python)})"
    )
    if full:
        full = results["msdoctor check (full)"]
        anchor = results["import mindspore; run_check() (anchor)"]
        print(f"check (full) / run_check  = {full / anchor:.2f} (target <= 1.2)")
    if split:
        breakdown(python, msdoctor, cwd, env)
    shutil.rmtree(cwd, ignore_errors=True)


if __name__ == "__main__":
    main()
