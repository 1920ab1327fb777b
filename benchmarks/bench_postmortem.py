"""Speed and memory of `msdoctor explain --log-dir` (msdoctor/preflight/postmortem.py) on large logs.

Builds a job directory from the real failed run in tests/data/postmortem/msrun/raise: each worker log is grown to
--mb megabytes with its own WARNING lines (the bulk of a real MindSpore log), the failing rank's traceback kept
at its place near the end. Prints, median of --runs runs:

* analyse() of the whole job: seconds, MB/s, and the peak of Python's allocations (tracemalloc, one run)
* anchor: ``grep -c -E 'ERROR|Traceback'`` over the same files (a plain scan of every byte)
* anchor: ``cat`` of the same files to /dev/null (reading them at all)

Usage: python benchmarks/bench_postmortem.py [--mb 100] [--runs 3]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_timing.py
from _timing import median_of as timed

REPO = Path(__file__).resolve().parents[1]
RAISE = REPO / "tests" / "data" / "postmortem" / "msrun" / "raise"


def build(where: Path, mb: int) -> int:
    """The raise job with every worker log grown to ``mb`` MB; the total bytes."""
    total = 0
    for f in sorted(RAISE.iterdir()):
        lines = f.read_text().splitlines(keepends=True)
        if not f.name.startswith("worker_"):
            shutil.copy(f, where / f.name)
            total += f.stat().st_size
            continue
        tb = next((i for i, line in enumerate(lines) if line.startswith("Traceback")), len(lines))
        bulk = "".join(line for line in lines[:tb] if line.startswith("[WARNING]"))
        with open(where / f.name, "w") as fh:
            fh.writelines(lines[:tb])
            while fh.tell() < mb << 20:
                fh.write(bulk)
            fh.writelines(lines[tb:])
            total += fh.tell()
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100, help="size of each worker log (4 workers)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from msdoctor.preflight.postmortem import analyse

    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp)
        size = build(job, args.mb)
        files = [str(p) for p in sorted(job.iterdir())]
        mb = size / 1e6
        result = analyse([job])
        assert result.first_failure is not None and result.first_failure.rank == 2, "the job's verdict changed"
        t = timed(lambda: analyse([job]), args.runs)
        tracemalloc.start()
        analyse([job])
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        grep = timed(
            lambda: subprocess.run(["grep", "-c", "-E", "ERROR|Traceback", *files], stdout=subprocess.DEVNULL),
            args.runs,
        )
        cat = timed(lambda: subprocess.run(["cat", *files], stdout=subprocess.DEVNULL), args.runs)
        print(f"job of {len(files)} logs, {mb:.0f} MB (4 workers x {args.mb} MB + scheduler + msrun output)")
        print(f"  analyse():                 {t:7.2f} s  {mb / t:7.0f} MB/s  peak Python memory {peak / 1e6:.1f} MB")
        print(f"  anchor grep -c -E ...:     {grep:7.2f} s  {mb / grep:7.0f} MB/s")
        print(f"  anchor cat > /dev/null:    {cat:7.2f} s  {mb / cat:7.0f} MB/s")


if __name__ == "__main__":
    main()
