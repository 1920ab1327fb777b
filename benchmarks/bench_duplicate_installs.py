"""What duplicate-installs adds to `msdoctor check --quick` on an environment with ~300 distributions.

The environment: a venv layered over the test environment (its ~70 real distributions, among them
MindSpore 2.7.0 with a 1.7 MB RECORD, transformers, numpy, scipy) plus generated distributions
written straight into the venv's site-packages: real dist-info directories (METADATA with
Requires-Dist, top_level.txt, INSTALLER, a RECORD with sha256 hashes) and the package files their
RECORD lists, ~30 files each. Nothing is downloaded.

Prints, side by side (median of N runs):

* the check's own evaluation over the probe facts (RECORD reads, stat of sampled files, PATH)
* the part of the probe this check added (find_spec of shadow-prone names, the install scheme),
  timed inside the target interpreter, and the whole probe for scale
* `msdoctor check --quick --only duplicate-installs` and `msdoctor check --quick` (wall time)
* `python -m pip check` on the same environment (anchor: metadata only, no duplicate detection)

The added cost is evaluate() plus the probe additions; the wall-time rows show scale (on a busy
machine their noise is larger than the check itself).

Target: the check adds well under 100 ms to `msdoctor check --quick`.

Usage: python benchmarks/bench_duplicate_installs.py [--dists 300] [--runs 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import base64
import json
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from helpers import make_venv  # noqa: E402  (the tests' real-venv builder)

from msdoctor.checks.duplicate_installs import evaluate  # noqa: E402
from msdoctor.facts.target import TargetFacts  # noqa: E402
from msdoctor.probe import run_script, script_source  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_timing.py
from _timing import median_min_ms  # noqa: E402


def _timed_ms(fn, runs: int) -> tuple[float, float]:
    """(median, min) wall ms after one warm-up call (page cache, .pyc files)."""
    return median_min_ms(fn, runs, warmup=True)


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


def run_quiet(argv: list[str], cwd: str, env: dict) -> None:
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)


#: Appended to the probe instead of its main(): times, in the target interpreter, what this check
#: added to the probe, in the order main() runs it (after the key-module find_spec calls).
_PROBE_TIMER = """
import time as _time
_stems = []
_entries, _dists, _pths = _walk_sys_path(_stems)
_find_specs()
_t0 = _time.perf_counter()
_specs = _top_level_specs(_stems, _dists)
_t1 = _time.perf_counter()
_scheme()
_t2 = _time.perf_counter()
print(json.dumps({"ms": (_t2 - _t0) * 1000, "names": len(_specs)}))
"""


def probe_additions_ms(python: str, cwd: str) -> tuple[float, int]:
    """(ms, names asked) of top_level_specs + scheme in one fresh run of the target interpreter."""
    src = script_source("target_probe.py")
    body, tail = src.rsplit("\nmain()", 1)
    assert not tail.strip(), "the probe no longer ends with main()"
    out = subprocess.run(
        [python, "-W", "ignore", "-"],
        input=body + _PROBE_TIMER,
        text=True,
        cwd=cwd,
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    data = json.loads(out.strip().splitlines()[-1])
    return data["ms"], data["names"]


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
    print(
        f"environment: {venv.root} ({len(t.distributions)} distributions, "
        f"{sum(1 for e in t.sys_path if e.get('is_dir'))} sys.path directories); "
        f"check verdict: {findings[0].status.value} ({len(findings)} finding(s))"
    )

    env = dict(os.environ, NO_COLOR="1", MSDOCTOR_NO_SPINNER="1")
    msdoctor = shutil.which("msdoctor", path=str(Path(sys.executable).parent)) or "msdoctor"
    check = [msdoctor, "check", "--quick", "--python", venv.python]
    additions = [probe_additions_ms(venv.python, cwd) for _ in range(args.runs)]
    added_probe = (statistics.median(a for a, _ in additions), min(a for a, _ in additions))

    def probe() -> None:
        run_script(venv.python, "target_probe.py", timeout=120, cwd=Path(cwd))

    rows = [
        ("duplicate-installs evaluate() over the probe facts", _timed_ms(lambda: evaluate(t), args.runs)),
        (f"probe additions in the target ({additions[0][1]} names find_spec'd, scheme)", added_probe),
        ("the whole target probe (shared by every check)", _timed_ms(probe, args.runs)),
        (
            "msdoctor check --quick --only duplicate-installs (wall)",
            _timed_ms(lambda: run_quiet(check + ["--only", "duplicate-installs"], cwd, env), args.runs),
        ),
        ("msdoctor check --quick, every check (wall)", _timed_ms(lambda: run_quiet(check, cwd, env), args.runs)),
        (
            "python -m pip check (anchor, wall)",
            _timed_ms(lambda: run_quiet([venv.python, "-m", "pip", "check"], cwd, env), args.runs),
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure (' + str(args.runs) + ' runs)':<{width}}  {'median ms':>9}  {'min ms':>8}")
    for label, (med, low) in rows:
        print(f"{label:<{width}}  {med:9.1f}  {low:8.1f}")
    added = [rows[0][1][i] + rows[1][1][i] for i in (0, 1)]
    print(f"{'added to msdoctor check --quick by this check':<{width}}  {added[0]:9.1f}  {added[1]:8.1f}")
    print("target: well under 100 ms added to `msdoctor check --quick`")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
