"""device-target: static evidence time, and `msdoctor check` next to `import mindspore; mindspore.run_check()`.

Prints (median of N runs, seconds):

* static evidence, in process (device nodes, CANN environment, npu-smi, nvidia-smi +
  ldconfig, evaluation; the target probe precomputed), on this host and on an
  Ascend-like fixture host (fake npu-smi printing a real 8 x 910B3 table)   target: < 0.100 s
* ``python -c "import mindspore; mindspore.run_check()"``                     anchor
* ``msdoctor check --only device-target``  (the live probe: one MindSpore import)
* ``msdoctor check``  (every installed check; the live probe overlaps them)   target: <= 1.2 x anchor

Usage: python benchmarks/bench_device_target.py [--python PATH] [--runs N]
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
from typing import Mapping

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_timing.py
from _timing import median_of

REPO = Path(__file__).resolve().parents[1]


def static_once(python: str, target_facts: object, environ: Mapping[str, str]) -> None:
    from msdoctor.checks.device_target import evaluate, gather
    from msdoctor.context import Context, Options
    from msdoctor.facts.target import TARGET

    ctx = Context(Options(python=python, quick=True), facts={TARGET.name: target_facts}, environ=environ)
    evaluate(gather(ctx))


def ascend_host(root: Path) -> dict[str, str]:
    """A fixture host with 8 device nodes, driver and toolkit dirs, and a fake npu-smi (real 910B3 output)."""
    for i in range(8):
        (root / "dev").mkdir(parents=True, exist_ok=True)
        (root / "dev" / f"davinci{i}").write_text("")
    for name in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        (root / "dev" / name).write_text("")
    (root / "usr/local/Ascend/driver/lib64").mkdir(parents=True, exist_ok=True)
    latest = root / "usr/local/Ascend/ascend-toolkit/latest/lib64"
    latest.mkdir(parents=True, exist_ok=True)
    (latest / "libge_runner.so").write_text("")
    (root / "usr/local/Ascend/ascend-toolkit/set_env.sh").write_text("")
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    table = REPO / "tests/data/npu_smi/910b3_8npu_processes.txt"
    tool = bin_dir / "npu-smi"
    tool.write_text(f'#!/bin/sh\ncat "{table}"\n')
    tool.chmod(0o755)
    env = dict(os.environ)
    env["MSDOCTOR_SYSROOT"] = str(root)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    return env


def wall(argv: list[str], runs: int, cwd: str, env: Mapping[str, str]) -> tuple[float, int]:
    times, rc = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        rc = subprocess.run(
            argv, cwd=cwd, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ).returncode
        times.append(time.perf_counter() - t0)
    return statistics.median(times), rc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="target interpreter (default: this one)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))

    from msdoctor.facts.target import TARGET
    from msdoctor.context import Context, Options

    target_facts = Context(Options(python=args.python)).get(TARGET)
    scratch = Path(tempfile.mkdtemp(prefix="msdoctor-bench-dt-"))
    fixture_env = ascend_host(scratch / "root")
    static_here = median_of(lambda: static_once(args.python, target_facts, os.environ), args.runs * 4)
    static_ascend = median_of(lambda: static_once(args.python, target_facts, fixture_env), args.runs * 4)

    msdoctor = shutil.which("msdoctor", path=str(Path(sys.executable).parent)) or "msdoctor"
    env = dict(os.environ, NO_COLOR="1", MSDOCTOR_NO_SPINNER="1")
    cwd = str(scratch)  # MindSpore may write into the cwd
    anchor, _ = wall([args.python, "-c", "import mindspore; mindspore.run_check()"], args.runs, cwd, env)
    only, rc_only = wall([msdoctor, "check", "--only", "device-target", "--python", args.python], args.runs, cwd, env)
    full, rc_full = wall([msdoctor, "check", "--python", args.python], args.runs, cwd, env)
    shutil.rmtree(scratch, ignore_errors=True)

    print(f"device-target benchmark: median of {args.runs} runs (static: {args.runs * 4}), python {args.python}")
    print(f"{'what':<58} {'seconds':>8}  {'target':>14}")
    print(f"{'static evidence, this host (no NPU/GPU)':<58} {static_here:8.3f}  {'< 0.100':>14}")
    print(f"{'static evidence, fixture Ascend host (8 x 910B3, npu-smi)':<58} {static_ascend:8.3f}  {'< 0.100':>14}")
    label = 'python -c "import mindspore; mindspore.run_check()"'
    print(f"{label:<58} {anchor:8.3f}  {'anchor':>14}")
    print(
        f"{'msdoctor check --only device-target':<58} {only:8.3f}  {f'{only / anchor:.2f}x anchor':>14}  rc={rc_only}"
    )
    print(
        f"{'msdoctor check (all installed checks)':<58} {full:8.3f}  {f'{full / anchor:.2f}x anchor':>14}  rc={rc_full}"
        f"  (target <= 1.20x)"
    )


if __name__ == "__main__":
    main()
