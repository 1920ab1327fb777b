"""Where the CPU time of ``msdoctor check --quick`` goes: run by bench_startup.py --breakdown as a child process.

Runs ``msdoctor check --quick --python TARGET`` in this process (the CLI's own ``main``), with every child
reaped through ``os.wait4`` so that each child's CPU time is known, and prints one JSON object:

* ``self_s``: this process, its interpreter's start included (``start_s``: a bare ``python -c pass``);
* ``imports_s``: importing, in a fresh interpreter, every module the run imported (less ``start_s``);
  the rest of ``self_s`` is the checks' and facts' own work and the rendering;
* ``children``: each child's argv (the supervisor's script left out) and CPU seconds.

Usage (from bench_startup.py): python benchmarks/_startup_breakdown.py TARGET_PYTHON
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys


def _cpu(argv: list[str], runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def main() -> None:
    target = sys.argv[1]
    if sys.argv[2:3] == ["--imports"]:  # the second pass: import what the first pass listed
        import importlib

        for name in sys.argv[3].split(","):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a module that imports only in its own context
                pass
        return
    names: dict[int, str] = {}
    used: list[tuple[int, float]] = []
    real_init = subprocess.Popen.__init__

    def init(self: subprocess.Popen, args: object, *a: object, **k: object) -> None:
        real_init(self, args, *a, **k)  # type: ignore[arg-type]
        argv = [str(x) for x in (args if isinstance(args, (list, tuple)) else [args])]
        names[self.pid] = " ".join(x for x in argv if "\n" not in x)[:160]

    def waitpid(pid: int, options: int) -> tuple[int, int]:
        got, status, usage = os.wait4(pid, options)
        if got:
            used.append((got, usage.ru_utime + usage.ru_stime))
        return got, status

    real_waitpid = os.waitpid
    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    os.waitpid = waitpid  # type: ignore[assignment]
    before = set(sys.modules)
    sys.argv = ["msdoctor", "check", "--quick", "--python", target]
    from msdoctor.cli import main as cli_main

    out, sys.stdout = sys.stdout, io.StringIO()
    try:
        cli_main()
    except SystemExit:
        pass
    finally:
        sys.stdout = out
    own = resource.getrusage(resource.RUSAGE_SELF)
    self_s = own.ru_utime + own.ru_stime
    subprocess.Popen.__init__ = real_init  # type: ignore[method-assign]
    os.waitpid = real_waitpid  # type: ignore[assignment]
    children = [[names.get(pid, str(pid)), round(t, 3)] for pid, t in used]
    modules = sorted(m for m in sys.modules if m not in before and not m.startswith("__"))
    start_s = _cpu([sys.executable, "-c", "pass"])
    imports_s = _cpu([sys.executable, __file__, target, "--imports", ",".join(modules)]) - start_s
    print(
        json.dumps(
            {
                "self_s": round(self_s, 3),
                "start_s": round(start_s, 3),
                "imports_s": round(imports_s, 3),
                "modules": len(modules),
                "children": children,
            }
        )
    )


if __name__ == "__main__":
    main()
