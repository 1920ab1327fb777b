"""kernel-mismatch and fix-kernel: time to judge every interpreter a notebook or VS Code may run.

Prints (median of N runs, seconds), for a user with K kernelspecs spread over 4 real venvs
(3 layered over this environment's MindSpore, 1 bare), a stale kernel, a broken kernel.json,
a project .vscode/settings.json and a notebook:

* the rows, in process, probes concurrent (8 at a time)              target: < 1.0 s
* the same with one probe at a time (what the concurrency saves)
* ``msdoctor check --only kernel-mismatch``  wall time (startup + target probe + rows)
* ``msdoctor fix-kernel --dry-run``           wall time (the plan)
* anchor: ``jupyter kernelspec list --json`` (lists the kernels; says nothing about mindspore)
* anchor: ``python -c "import mindspore"`` in ONE interpreter (answering the question by importing,
  which the probe's find_spec avoids; multiply by the number of interpreters)

Usage: python benchmarks/bench_kernel_mismatch.py [--runs N] [--kernels K]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_timing.py
from _timing import median_of

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def build(root: Path, kernels: int) -> dict:
    from helpers import make_venv

    venvs = [make_venv(root / f"env{i}", layered=True) for i in range(3)] + [make_venv(root / "bare")]
    data = root / "home" / "jdata"
    for i in range(kernels):
        py = venvs[i % len(venvs)].python if i % 5 else venvs[i % len(venvs)].root / "bin" / "python3"
        d = data / "kernels" / f"k{i:02d}"
        d.mkdir(parents=True)
        (d / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [str(py), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": f"K{i}",
                    "language": "python",
                }
            )
        )
    for name, body in (
        ("stale", json.dumps({"argv": [str(root / "gone/bin/python")], "language": "python"})),
        ("broken", '{"argv": [\n'),
    ):
        (data / "kernels" / name).mkdir()
        (data / "kernels" / name / "kernel.json").write_text(body)
    project = root / "project"
    (project / ".vscode").mkdir(parents=True)
    (project / ".vscode" / "settings.json").write_text(
        '// x\n{"python.defaultInterpreterPath": "%s",}\n' % venvs[-1].python
    )
    (project / "a.ipynb").write_text(json.dumps({"cells": [], "metadata": {"kernelspec": {"name": "k01"}}}))
    env = dict(os.environ, HOME=str(root / "home"), JUPYTER_DATA_DIR=str(data), NO_COLOR="1", MSDOCTOR_NO_SPINNER="1")
    for k in ("JUPYTER_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "JPY_PARENT_PID"):
        env.pop(k, None)
    return {"target": venvs[0].python, "project": project, "env": env}


def rows_in_process(w: dict, workers: int) -> int:
    from msdoctor.context import Context, Options
    from msdoctor.facts import interpreters
    from msdoctor.facts.kernel_view import KERNEL_VIEW

    interpreters.MAX_WORKERS = workers
    ctx = Context(Options(python=w["target"], project_dir=w["project"]), environ=w["env"])
    return len(ctx.get(KERNEL_VIEW).rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kernels", type=int, default=12)
    args = ap.parse_args()
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        w = build(Path(tmp), args.kernels)
        run = lambda *argv: subprocess.run(list(argv), env=w["env"], cwd=w["project"], capture_output=True)
        rows = rows_in_process(w, 8)
        figures = [
            (
                f"rows in process, concurrent ({rows} rows)",
                median_of(lambda: rows_in_process(w, 8), args.runs),
                "< 1.0",
            ),
            ("rows in process, one probe at a time", median_of(lambda: rows_in_process(w, 1), args.runs), ""),
            (
                "msdoctor check --only kernel-mismatch",
                median_of(
                    lambda: run(
                        str(bin_dir / "msdoctor"), "check", "--only", "kernel-mismatch", "--python", w["target"]
                    ),
                    args.runs,
                ),
                "",
            ),
            (
                "msdoctor fix-kernel --dry-run",
                median_of(
                    lambda: run(str(bin_dir / "msdoctor"), "fix-kernel", "--python", w["target"], "--dry-run"),
                    args.runs,
                ),
                "",
            ),
            (
                "anchor: jupyter kernelspec list --json",
                median_of(lambda: run(str(bin_dir / "jupyter-kernelspec"), "list", "--json"), args.runs),
                "",
            ),
            (
                "anchor: python -c 'import mindspore' (one interpreter)",
                median_of(lambda: run(w["target"], "-c", "import mindspore"), max(1, args.runs // 2)),
                "",
            ),
        ]
    print(f"kernel-mismatch benchmark: {args.kernels} kernelspecs over 4 venvs, median of {args.runs} runs")
    for label, seconds, target in figures:
        print(f"  {label:<58} {seconds:7.3f} s   {('target ' + target + ' s') if target else ''}")


if __name__ == "__main__":
    main()
