"""Speed of `msdoctor explain --log` and of report redaction, next to anchors on the same files.

Prints, in one run (median of N runs, seconds):

* explain_file() on a synthetic training log of --lines lines (realistic step / warning lines with a
  few known errors near the end), with throughput in lines/s and MB/s, wall and CPU (the goal is per core: CPU
  time), with the native matcher (google-re2, the extra ``fast``) and without it (MSDOCTOR_NO_RE2=1), and
  whether both found the same; ``--gb 1`` instead writes a 1 GB log in /tmp (the same lines repeated, the
  errors near the end; deleted afterwards), which explain streams in blocks of
  msdoctor.explain.fastscan.FAST_BLOCK bytes, and prints the peak RSS of a process that explains it
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

Usage: python benchmarks/bench_explain.py [--lines N | --gb N] [--runs N] [--log-only]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_timing.py
from _timing import median_of as timed

STEP = "[INFO] step {i}/200000 loss {loss:.4f} lr 3.0e-04 grad_norm 0.812 tokens/s 25123 step_time 0.163"
WARN = (
    "[WARNING] ANALYZER(1201,7f3a,python):2026-01-01-10:00:00.000.000 [auto_monad.cc:1590] "
    "ClearIsolatedNodes] Some side effect nodes were eliminated by mistake."
)
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


def make_big_log(path: Path, size: int) -> int:
    """A log of about ``size`` bytes: 20,000 lines of make_log's kind written over and over, the known errors in
    the last 20 lines. Returns the number of lines."""
    chunk_path = path.with_suffix(".chunk")
    make_log(chunk_path, 20_000)
    chunk = chunk_path.read_bytes().split(b"\n")
    chunk_path.unlink()
    errors = [i for i, line in enumerate(chunk) if any(e.encode()[:30] in line for e in ERRORS)]
    tail = b"\n".join(chunk[min(errors) - 100 :]) if errors else b""
    body = b"\n".join(line for i, line in enumerate(chunk) if i not in set(errors)) + b"\n"
    lines = 0
    with path.open("wb") as fh:
        while fh.tell() + len(body) + len(tail) < size:
            fh.write(body)
            lines += body.count(b"\n")
        fh.write(tail)
    return lines + tail.count(b"\n")


def cpu_and_wall(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """(best CPU seconds of this process, median wall seconds) of runs calls."""
    cpu, wall = [], []
    for _ in range(max(1, runs)):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), sorted(wall)[len(wall) // 2]


def child_cpu_and_wall(argv: list[str], runs: int) -> tuple[float, float]:
    """(best CPU seconds, median wall seconds) of a command."""
    cpu, wall = [], []
    for _ in range(max(1, runs)):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
        wall.append(time.perf_counter() - w0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(cpu), sorted(wall)[len(wall) // 2]


def peak_rss_mib(log: Path, native: bool) -> tuple[float, float]:
    """(peak RSS (Linux) of a fresh process that only imports explain and loads the catalogue, of one that also explains
    the log) in MiB."""
    env = dict(os.environ)
    env.pop("MSDOCTOR_NO_RE2", None)
    if not native:
        env["MSDOCTOR_NO_RE2"] = "1"
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent's size at fork through exec
    code = (
        "import sys; from msdoctor.explain import explain_file, load_catalogue; load_catalogue(); "
        "import msdoctor.explain.fastscan; "
        "sys.argv[1:] and explain_file(__import__('pathlib').Path(sys.argv[1])); "
        "print([ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM:')][0])"
    )
    out = []
    for extra in ([], [str(log)]):
        res = subprocess.run([sys.executable, "-c", code, *extra], env=env, capture_output=True, text=True, check=True)
        out.append(int(res.stdout.split()[-1]) / 1024)
    return out[0], out[1]


def log_rows(log: Path, lines: int, runs: int) -> None:
    """explain_file with and without RE2 beside grep on the same file."""
    from msdoctor.explain import explain_file
    from msdoctor.explain import fastscan

    size_mb = log.stat().st_size / 1e6
    rows: dict[str, tuple[float, float]] = {}
    found: dict[str, list[str]] = {}
    for label, native in (("with google-re2", True), ("pure Python (MSDOCTOR_NO_RE2=1)", False)):
        if native and fastscan._re2() is None:
            print(f"  explain_file, {label}: google-re2 is not installed (pip install 'msdoctor[fast]')")
            continue
        if native:
            os.environ.pop(fastscan.NO_RE2_ENV, None)
        else:
            os.environ[fastscan.NO_RE2_ENV] = "1"
        try:
            found[label] = [m.entry_id for m in explain_file(log)]
            rows[label] = cpu_and_wall(lambda: explain_file(log), runs if native or size_mb < 200 else 1)
        finally:
            os.environ.pop(fastscan.NO_RE2_ENV, None)
    grep = shutil.which("grep")
    g_cpu, g_wall = (
        child_cpu_and_wall([grep, "-c", "-E", "Traceback|Error", str(log)], runs)
        if grep
        else (float("nan"), float("nan"))
    )
    print(f"log: {lines:,} lines, {size_mb:,.1f} MB")
    for label, (cpu, wall) in rows.items():
        print(
            f"  {'explain_file, ' + label:<48} CPU {cpu:7.3f} s {size_mb / cpu:7.1f} MB/s   wall {wall:7.3f} s "
            f"{size_mb / wall:7.1f} MB/s   {lines / cpu:>12,.0f} lines/s (CPU)"
        )
    print(
        f"  {'anchor: grep -c -E Traceback|Error':<48} CPU {g_cpu:7.3f} s {size_mb / g_cpu:7.1f} MB/s   wall "
        f"{g_wall:7.3f} s {size_mb / g_wall:7.1f} MB/s"
    )
    for label, (cpu, _) in rows.items():
        print(
            f"  {label}: explain takes {cpu / g_cpu:.1f}x grep's CPU time; goal >= 100 MB/s per core (CPU): "
            f"{'met' if size_mb / cpu >= 100 else 'NOT met'}"
        )
    answers = list(found.values())
    print(
        f"  found {answers[0] if answers else []}; the same with and without RE2: "
        f"{all(a == answers[0] for a in answers)}"
    )
    for label, native in (("with google-re2", True), ("pure Python", False)):
        if native and fastscan._re2() is None:
            continue
        base, peak = peak_rss_mib(log, native)
        print(
            f"  peak RSS explaining it, {label}: {peak:.0f} MiB (a process that only loads the catalogue: "
            f"{base:.0f} MiB; the file: {size_mb / 1.048576:,.0f} MiB)"
        )


def real_set() -> tuple[int, int, int, int, float, int, int]:
    """(cases, recognised with the right cause, negatives, negatives claimed, seconds for all texts,
    held-out reports, held-out recognised)."""
    import time
    import tomllib

    from msdoctor.explain import explain_text

    data = tomllib.loads(
        (Path(__file__).resolve().parent.parent / "tests" / "data" / "explain" / "real_cases.toml").read_text(
            encoding="utf-8"
        )
    )
    start = time.perf_counter()
    right = sum(1 for c in data["case"] if c["expect"] in {m.entry_id for m in explain_text(c["text"])})
    claimed = sum(1 for n in data["negative"] if explain_text(n["text"]))
    seconds = time.perf_counter() - start
    held = sum(1 for h in data["holdout"] if h["expect"] in {m.entry_id for m in explain_text(h["text"])})
    return len(data["case"]), right, len(data["negative"]), claimed, seconds, len(data["holdout"]), held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--gb", type=float, default=0.0, help="a log of this many GB in /tmp instead of --lines")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--log-only", action="store_true", help="only the whole-log rows (explain_file beside grep)")
    args = parser.parse_args()

    from msdoctor.explain import explain_file, explain_text, load_catalogue
    from msdoctor.redact import redact_report

    load_catalogue()
    if args.gb:
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            log = Path(tmp) / "train.log"
            lines = make_big_log(log, int(args.gb * 1e9))
            log_rows(log, lines, args.runs)
        if args.log_only:
            return
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        make_log(log, args.lines)
        if not args.gb:
            log_rows(log, args.lines, args.runs)
        if args.log_only:
            return
        found = [m.entry_id for m in explain_file(log)]
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

    report = diagnose(
        make_context(build_options(sys.executable, None, None, None, True, False, 30.0)), Selection()
    ).report
    t_redact = timed(lambda: redact_report(report), max(args.runs, 20))

    print(f"catalogue: {len(load_catalogue())} entries; the {args.lines}-line log: found {found}")
    print(f"{'explain_file (same log, ANSI colours)':<38} {t_ansi:8.3f} s   found the same: {found_ansi == found}")
    print(f"{'explain_file (same log, UTF-16)':<38} {t_utf16:8.3f} s   found the same: {found_utf16 == found}")
    print(f"{'explain_text (last 200 lines)':<38} {t_tail * 1000:8.2f} ms")
    print(
        f"{'real set (public reports)':<38} {right}/{cases} recognised with the right cause "
        f"({100 * right / cases:.0f}%), {claimed}/{negatives} negatives claimed, {t_real * 1000:.0f} ms for all texts"
    )
    print(f"{'held-out reports (not tuned to)':<38} {held}/{holdout} recognised with the right cause")
    print(f"{'redact_report (check --quick report)':<38} {t_redact * 1000:8.2f} ms   ({len(report.results)} checks)")


if __name__ == "__main__":
    main()
