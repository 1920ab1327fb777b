"""Speed of `msdoctor explain --log` and of report redaction, next to anchors on the same files.

Prints, in one run (median of N runs, seconds):

* explain_file() on a synthetic training log of --lines lines (realistic step / warning lines with a
  few known errors near the end), with throughput in lines/s and MB/s (``--lines 10000000`` makes a 1 GB log;
  explain streams it in blocks of msdoctor.explain.fastscan.FAST_BLOCK bytes)
* anchor: ``grep -c -E 'Traceback|Error'`` over the same log (how long a plain scan takes), in MB/s, and the
  ratio of the two
* anchor: ``tail -n 200`` + explain_text() (what the trainer does after a failed run)
* redact_report() of the real report of this interpreter (``msdoctor check --quick``), which every
  output format pays once
* coverage on the real set (tests/data/explain/real_cases.toml: public reports with their threads): how many are
  recognised with the right cause, how many negatives are wrongly claimed, and the time to explain all of them;
  the catalogue before this set was collected recognised 16 of the first 81 (measured once, not re-run here);
  and the held-out reports (collected after the catalogue was written, never used to change it)
* the same log with every line colour-coded (ANSI) and as UTF-16, which take the normalising path

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


def real_set() -> tuple[int, int, int, int, float, int, int]:
    """(cases, recognised with the right cause, negatives, negatives claimed, seconds for all texts,
    held-out reports, held-out recognised)."""
    import time
    import tomllib

    from msdoctor.explain import explain_text

    data = tomllib.loads((Path(__file__).resolve().parent.parent / "tests" / "data" / "explain" / "real_cases.toml")
                         .read_text(encoding="utf-8"))
    start = time.perf_counter()
    right = sum(1 for c in data["case"] if c["expect"] in {m.entry_id for m in explain_text(c["text"])})
    claimed = sum(1 for n in data["negative"] if explain_text(n["text"]))
    seconds = time.perf_counter() - start
    held = sum(1 for h in data["holdout"] if h["expect"] in {m.entry_id for m in explain_text(h["text"])})
    return len(data["case"]), right, len(data["negative"]), claimed, seconds, len(data["holdout"]), held


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
        ansi = Path(tmp) / "ansi.log"
        ansi.write_text("".join(f"\x1b[32m{line}\x1b[0m\n" for line in log.read_text().splitlines()))
        t_ansi = timed(lambda: explain_file(ansi), args.runs)
        utf16 = Path(tmp) / "utf16.log"
        utf16.write_bytes(log.read_text().encode("utf-16"))
        t_utf16 = timed(lambda: explain_file(utf16), args.runs)
        found_ansi = [m.entry_id for m in explain_file(ansi)]
        found_utf16 = [m.entry_id for m in explain_file(utf16)]
    cases, right, negatives, claimed, t_real, holdout, held = real_set()

    from msdoctor.commands.check import build_options, make_context
    from msdoctor.doctor import Selection, diagnose

    report = diagnose(make_context(build_options(sys.executable, None, None, None, True, False, 30.0)),
                      Selection()).report
    t_redact = timed(lambda: redact_report(report), max(args.runs, 20))

    print(f"log: {args.lines} lines, {size_mb:.1f} MB; catalogue: {len(load_catalogue())} entries; found {found}")
    print(f"{'explain_file (whole log)':<38} {t_explain:8.3f} s   {args.lines / t_explain:>10,.0f} lines/s"
          f"   {size_mb / t_explain:6.1f} MB/s")
    print(f"{'anchor: grep -c -E Traceback|Error':<38} {t_grep:8.3f} s   {'':>10} {'':8}   "
          f"{size_mb / t_grep:6.1f} MB/s   (explain takes {t_explain / t_grep:.1f}x grep's time; goal >= 100 MB/s "
          "per core)")
    print(f"{'explain_file (same log, ANSI colours)':<38} {t_ansi:8.3f} s   found the same: {found_ansi == found}")
    print(f"{'explain_file (same log, UTF-16)':<38} {t_utf16:8.3f} s   found the same: {found_utf16 == found}")
    print(f"{'explain_text (last 200 lines)':<38} {t_tail * 1000:8.2f} ms")
    print(f"{'real set (public reports)':<38} {right}/{cases} recognised with the right cause "
          f"({100 * right / cases:.0f}%), {claimed}/{negatives} negatives claimed, {t_real * 1000:.0f} ms for all texts")
    print(f"{'held-out reports (not tuned to)':<38} {held}/{holdout} recognised with the right cause")
    print(f"{'redact_report (check --quick report)':<38} {t_redact * 1000:8.2f} ms   "
          f"({len(report.results)} checks)")


if __name__ == "__main__":
    main()
