"""Speed of `msdoctor explain --log` and of report redaction, next to anchors on the same files.

Prints, in one run (median of N runs, seconds):

* explain_file() on a synthetic training log of --lines lines (realistic step / warning lines with a
  few known errors near the end), with throughput in lines/s and MB/s
* anchor: ``grep -c -E 'Traceback|Error'`` over the same log (how long a plain scan takes)
* anchor: ``tail -n 200`` + explain_text() (what the trainer does after a failed run)
* redact_report() of the real report of this interpreter (``msdoctor check --quick``), which every
  output format pays once

Usage: python benchmarks/bench_explain.py [--lines N] [--runs N]
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_timing.py
from _timing import median_of as timed

STEP = "[INFO] step {i}/200000 loss {loss:.4f} lr 3.0e-04 grad_norm 0.812 tokens/s 25123 step_time 0.163"
WARN = ("[WARNING] ANALYZER(1201,7f3a,python):2026-01-01-10:00:00.000.000 [auto_monad.cc:1590] "
        "ClearIsolatedNodes] Some side effect nodes were eliminated by mistake.")
ERRORS = [
    "ValueError: 'aimv2' is already used by a Transformers config, pick another name.",
    "Load dynamic library: libmindspore_ascend.so.2 failed. libge_runner.so: cannot open shared object file: "
    "No such file or directory",
    "ImportError: numpy.core.multiarray failed to import",
]


def make_log(path: Path, lines: int) -> None:
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(lines):
            fh.write((WARN if i % 50 == 0 else STEP.format(i=i, loss=rng.uniform(0.1, 6))) + "\n")
            if i == lines - 20:
                fh.write("\n".join(ERRORS) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    from msdoctor.explain import explain_file, explain_text, load_catalogue
    from msdoctor.redact import redact_report

    load_catalogue()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        make_log(log, args.lines)
        size_mb = log.stat().st_size / 1e6
        found = [m.entry_id for m in explain_file(log)]
        t_explain = timed(lambda: explain_file(log), args.runs)
        grep = shutil.which("grep")
        t_grep = timed(lambda: subprocess.run([grep, "-c", "-E", "Traceback|Error", str(log)],
                                              stdout=subprocess.DEVNULL), args.runs) if grep else float("nan")
        tail = "\n".join(log.read_text().splitlines()[-200:])
        t_tail = timed(lambda: explain_text(tail), max(args.runs, 20))

    from msdoctor.commands.check import build_options, make_context
    from msdoctor.doctor import Selection, diagnose

    report = diagnose(make_context(build_options(sys.executable, None, None, None, True, False, 30.0)),
                      Selection()).report
    t_redact = timed(lambda: redact_report(report), max(args.runs, 20))

    print(f"log: {args.lines} lines, {size_mb:.1f} MB; catalogue: {len(load_catalogue())} entries; found {found}")
    print(f"{'explain_file (whole log)':<38} {t_explain:8.3f} s   {args.lines / t_explain:>10,.0f} lines/s"
          f"   {size_mb / t_explain:6.1f} MB/s")
    print(f"{'anchor: grep -c -E Traceback|Error':<38} {t_grep:8.3f} s")
    print(f"{'explain_text (last 200 lines)':<38} {t_tail * 1000:8.2f} ms")
    print(f"{'redact_report (check --quick report)':<38} {t_redact * 1000:8.2f} ms   "
          f"({len(report.results)} checks)")


if __name__ == "__main__":
    main()
