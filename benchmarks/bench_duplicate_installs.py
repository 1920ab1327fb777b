"""What duplicate-installs adds to `msdoctor check --quick` on an environment with ~300 distributions.

The environment: a venv layered over the test environment (its ~70 real distributions, among them
MindSpore 2.7.0 with a 1.7 MB RECORD, transformers, numpy, scipy) plus generated distributions
written straight into the venv's site-packages: real dist-info directories (METADATA with
Requires-Dist, top_level.txt, INSTALLER, a RECORD with sha256 hashes) and the package files their
RECORD lists, ~30 files each. Nothing is downloaded.

Prints, side by side (median of N runs):

* the check's own evaluation over the probe facts (RECORD reads, stat of sampled files, PATH)
* the probe, and the part of it this check added (find_spec of shadow-prone names, install scheme)
* `msdoctor check --quick --only python-env` vs `--only python-env,duplicate-installs` (wall time)
* `python -m pip check` on the same environment (anchor: metadata only, no duplicate detection)

Target (issue 5): the check adds well under 100 ms to `msdoctor check --quick`.

Usage: python benchmarks/bench_duplicate_installs.py [--dists 300] [--runs 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers import make_venv  # noqa: E402  (the tests' real-venv builder)

from msdoctor.checks.duplicate_installs import evaluate  # noqa: E402
from msdoctor.facts.target import TargetFacts  # noqa: E402
from msdoctor.probe import run_script, script_source  # noqa: E402


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def write_dists(site: Path, count: int) -> None:
    """``count`` installed-looking projects: package files + dist-info with a hashed RECORD."""
    for i in range(count):
        name, pkg = f"benchpkg-{i:03d}", f"benchpkg_{i:03d}"
        info = site / f"{pkg}-1.0.{i}.dist-info"
        info.mkdir()
        rows = []
        files = {f"{pkg}/__init__.py": f"VERSION = '1.0.{i}'\n"}
        files.update({f"{pkg}/mod_{k}.py": f"def f{k}():\n    return {k}\n" for k in range(25)})
        files[f"{pkg}/sub/__init__.py"] = ""
        files[f"{pkg}/_native.cpython-311-x86_64-linux-gnu.so"] = "\0" * 64
        for rel, text in files.items():
            path = site / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = text.encode()
            path.write_bytes(data)
            rows.append(f"{rel},{_hash(data)},{len(data)}")
        requires = f"Requires-Dist: benchpkg-{i - 1:03d}>=1.0\n" if i else ""
        meta = {
            "METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0.{i}\n{requires}\n",
            "INSTALLER": "pip\n",
            "top_level.txt": f"{pkg}\n",
            "WHEEL": "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        for fname, text in meta.items():
            (info / fname).write_text(text)
            rows.append(f"{info.name}/{fname},{_hash(text.encode())},{len(text)}")
        rows.append(f"{info.name}/RECORD,,")
        (info / "RECORD").write_text("\n".join(rows) + "\n")


def timed_ms(fn, runs: int) -> tuple[float, float]:
    """(median, min) wall time in ms; the min is the better estimate on a busy machine."""
    fn()  # warm-up: page cache, .pyc files
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), min(times)


def run_quiet(argv: list[str], cwd: str, env: dict) -> None:
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)


def probe_without_additions() -> str:
    """The probe as it was before this check: no top_level_specs / scheme keys."""
    src = script_source("target_probe.py")
    for line in ('"top_level_specs": _top_level_specs(stems, dists),', '"scheme": _scheme(),'):
        assert line in src, f"the probe changed: {line!r} not found"
        src = src.replace(line, "")
    return src


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dists", type=int, default=300, help="total distributions wanted (default 300)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the environment here and keep it")
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="msdoctor-bench-dups-"))
    venv = make_venv(root / "venv", layered=True)
    cwd = str(root)
    data, _ = run_script(venv.python, "target_probe.py", timeout=120, cwd=Path(cwd))
    have = len(data["distributions"])
    write_dists(venv.site_packages, max(0, args.dists - have))
    data, _ = run_script(venv.python, "target_probe.py", timeout=120, cwd=Path(cwd))
    t = TargetFacts.from_probe(data)
    findings = evaluate(t)
    print(f"environment: {venv.root} ({len(t.distributions)} distributions, "
          f"{sum(1 for e in t.sys_path if e.get('is_dir'))} sys.path directories); "
          f"check verdict: {findings[0].status.value} ({len(findings)} finding(s))")

    env = dict(os.environ, NO_COLOR="1", MSDOCTOR_NO_SPINNER="1")
    msdoctor = shutil.which("msdoctor", path=str(Path(sys.executable).parent)) or "msdoctor"
    base = [msdoctor, "check", "--quick", "--python", venv.python, "--only"]
    old_probe = probe_without_additions()

    def probe_old() -> None:
        subprocess.run([venv.python, "-W", "ignore", "-"], input=old_probe, text=True, cwd=cwd,
                       stdout=subprocess.DEVNULL, timeout=120)

    def probe_new() -> None:
        subprocess.run([venv.python, "-W", "ignore", "-"], input=script_source("target_probe.py"), text=True,
                       cwd=cwd, stdout=subprocess.DEVNULL, timeout=120)

    rows = [
        ("duplicate-installs evaluate() over the probe facts", timed_ms(lambda: evaluate(t), args.runs)),
        ("target probe, before this check's additions", timed_ms(probe_old, args.runs)),
        ("target probe, with top_level_specs + scheme", timed_ms(probe_new, args.runs)),
        ("msdoctor check --quick --only python-env",
         timed_ms(lambda: run_quiet(base + ["python-env"], cwd, env), args.runs)),
        ("msdoctor check --quick --only python-env,duplicate-installs",
         timed_ms(lambda: run_quiet(base + ["python-env,duplicate-installs"], cwd, env), args.runs)),
        ("python -m pip check (anchor)",
         timed_ms(lambda: run_quiet([venv.python, "-m", "pip", "check"], cwd, env), args.runs)),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure (' + str(args.runs) + ' runs)':<{width}}  {'median ms':>9}  {'min ms':>8}")
    for label, (med, low) in rows:
        print(f"{label:<{width}}  {med:9.1f}  {low:8.1f}")
    added = [rows[0][1][i] + rows[2][1][i] - rows[1][1][i] for i in (0, 1)]
    cli = [rows[4][1][i] - rows[3][1][i] for i in (0, 1)]
    print(f"{'added by the check: evaluate() + probe additions':<{width}}  {added[0]:9.1f}  {added[1]:8.1f}")
    print(f"{'added by the check, end to end (difference of walls)':<{width}}  {cli[0]:9.1f}  {cli[1]:8.1f}")
    print("target (issue 5): well under 100 ms added to `msdoctor check --quick`")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
