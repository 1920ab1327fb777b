"""registry-collisions: the check on a generated 2,000-file project plus a site-packages with transformers.

Prints (median of N runs, seconds):

* the check, cold: a fresh process per run (empty parse cache), the target probe precomputed:
  built-in names (transformers' models/auto/*.py), the project scan, the installed-package scan
                                                                                        target: < 1.000 s
* the same check again in the same process (parse cache warm)
* anchor: ``python -c "from transformers import AutoConfig, CONFIG_MAPPING; len(CONFIG_MAPPING)"``
  (what reading the registry by importing it costs, before any project code runs)
* anchor: ast.parse of every project file, no prefilter (what the byte prefilter saves)
* ``msdoctor check --only registry-collisions --project DIR`` wall time (startup + probe + check)

The generated project: 40 packages x 50 modules of ordinary code; 80 config classes whose model_type
is a constant of another module, 40 registration modules (AutoConfig.register(Cls.model_type, Cls)
and AutoModelForCausalLM.register, one built-in collision: aimv2), and 160 modules that say
"register" for other reasons (atexit, hooks). The byte prefilter parses only files that set a
model_type or call register on a name spelled like a registry (Auto*, *MAPPING, MindFormerRegister):
120 of the 2,000 here.

Usage: python benchmarks/bench_registry_collisions.py [--python PATH] [--runs N] [--files N]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PLAIN = '''"""Module {i} of package {p}: ordinary project code."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Record{i}:
    name: str
    value: float = 0.0

    def scaled(self, factor: float) -> float:
        return self.value * factor + math.sqrt(abs(self.value))


def helper_{i}(items: list[Record{i}]) -> dict[str, float]:
    out = {{}}
    for item in items:
        out[item.name] = item.scaled(1.5)
        if item.value > 10:
            out[item.name] += sum(range(int(item.value) % 7))
    return out


def pipeline_{i}(xs: list[float]) -> list[float]:
    ys = [x * 2 for x in xs if x > 0]
    zs = sorted(ys, reverse=True)[:10]
    return [round(z, 3) for z in zs]
'''

OTHER_REGISTER = (
    PLAIN
    + """

import atexit


class Hooks:
    def __init__(self):
        self.fns = []

    def register(self, fn):
        self.fns.append(fn)


HOOKS = Hooks()
HOOKS.register(print)
atexit.register(lambda: None)
"""
)

CONFIG = '''"""Config classes of family {i}."""
from transformers import PretrainedConfig

from .names import NAME_{i}


class Family{i}Config(PretrainedConfig):
    model_type = NAME_{i}

    def __init__(self, hidden_size: int = 64, num_layers: int = 2, **kwargs):
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        super().__init__(**kwargs)
'''

REGISTER = '''"""Registers family {i}."""
from transformers import AutoConfig
from transformers.models.auto.modeling_auto import AutoModelForCausalLM

from {pkg}.config_{i} import Family{i}Config


class Family{i}Model:
    config_class = Family{i}Config


AutoConfig.register(Family{i}Config.model_type, Family{i}Config)
AutoModelForCausalLM.register(Family{i}Config, Family{i}Model)
'''


def generate(root: Path, n_files: int) -> dict[str, int]:
    """Write the project (packages of 50 files); returns what it holds."""
    per_pkg = 50
    counts = {"files": 0, "configs": 0, "registrations": 0, "other_register": 0}
    fam = 0
    for p in range(max(1, n_files // per_pkg)):
        pkg = root / f"pkg{p:02d}"
        pkg.mkdir(parents=True, exist_ok=True)
        files = {"__init__.py": f'"""Package {p}."""\n'}
        names = []
        for k in range(2):  # two config families per package, the first one registered
            fam += 1
            names.append(f'NAME_{fam} = "{"aimv2" if fam == 1 else f"family_{fam}"}"\n')  # one built-in clash
            files[f"config_{fam}.py"] = CONFIG.format(i=fam)
            counts["configs"] += 1
            if k == 0:
                files[f"register_{fam}.py"] = REGISTER.format(i=fam, pkg=pkg.name)
                counts["registrations"] += 2
        files["names.py"] = "".join(names)
        i = 0
        while len(files) < per_pkg:
            i += 1
            if i % 10 == 0:
                files[f"mod_{i}.py"] = OTHER_REGISTER.format(i=i, p=p)
                counts["other_register"] += 1
            else:
                files[f"mod_{i}.py"] = PLAIN.format(i=i, p=p)
        for rel, text in files.items():
            (pkg / rel).write_text(text)
            counts["files"] += 1
    return counts


CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from msdoctor.checks.registry_collisions import RegistryCollisionsCheck
from msdoctor.context import Context, Options
from msdoctor.facts.registries import INSTALLED_REGISTRATIONS, PROJECT_REGISTRATIONS, REGISTRY_BUILTINS
from msdoctor.facts.target import TARGET, TargetFacts
imports = time.perf_counter() - t0
target = TargetFacts.from_probe(json.load(open(sys.argv[1])))
out = {"imports": imports}
for run in ("cold", "warm"):
    ctx = Context(Options(python=target.executable, project_dir=sys.argv[2]), facts={TARGET.name: target})
    t = time.perf_counter(); ctx.get(REGISTRY_BUILTINS); b = time.perf_counter() - t
    t = time.perf_counter(); ctx.get(PROJECT_REGISTRATIONS); p = time.perf_counter() - t
    t = time.perf_counter(); ctx.get(INSTALLED_REGISTRATIONS); i = time.perf_counter() - t
    t = time.perf_counter(); findings = RegistryCollisionsCheck().run(ctx); e = time.perf_counter() - t
    parsed = ctx.get(PROJECT_REGISTRATIONS).result.files_parsed
    out[run] = {"builtins": b, "project": p, "installed": i, "evaluate": e, "total": b + p + i + e, "parsed": parsed,
                "statuses": sorted({f.status.value for f in findings}), "n_findings": len(findings)}
print(json.dumps(out))
"""


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="target interpreter (with transformers)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", type=int, default=2000)
    args = ap.parse_args()

    from msdoctor.probe import run_script

    with tempfile.TemporaryDirectory(prefix="msd-bench-reg-") as tmp:
        project = Path(tmp) / "project"
        counts = generate(project, args.files)
        probe, _ = run_script(args.python, "target_probe.py", timeout=60, cwd=project)
        probe_file = Path(tmp) / "probe.json"
        probe_file.write_text(json.dumps(probe))

        runs = []
        for _ in range(args.runs):
            res = subprocess.run(
                [sys.executable, "-c", CHILD, str(probe_file), str(project)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if res.returncode != 0:
                print(res.stderr, file=sys.stderr)
                return 1
            runs.append(json.loads(res.stdout))

        def med(run: str, key: str) -> float:
            return median([r[run][key] for r in runs])

        anchor_import = []
        for _ in range(args.runs):
            t = time.perf_counter()
            subprocess.run(
                [
                    args.python,
                    "-c",
                    "from transformers import AutoConfig\n"
                    "from transformers.models.auto.configuration_auto import CONFIG_MAPPING\n"
                    "len(CONFIG_MAPPING.keys())",
                ],
                capture_output=True,
                timeout=120,
                check=True,
            )
            anchor_import.append(time.perf_counter() - t)

        files = sorted(project.rglob("*.py"))
        t = time.perf_counter()
        for f in files:
            ast.parse(f.read_bytes())
        parse_all = time.perf_counter() - t

        cli = []
        exe = Path(sys.executable).with_name("msdoctor")
        for _ in range(max(1, args.runs // 2)):
            t = time.perf_counter()
            subprocess.run(
                [
                    str(exe),
                    "check",
                    "--only",
                    "registry-collisions",
                    "--python",
                    args.python,
                    "--project",
                    str(project),
                    "--format",
                    "json",
                ],
                capture_output=True,
                timeout=120,
            )
            cli.append(time.perf_counter() - t)

    cold_total = med("cold", "total")
    print(
        f"project: {counts['files']} files ({counts['configs']} config classes, {counts['registrations']} "
        f"registrations, {counts['other_register']} other 'register' modules); target {args.python}"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"cpu cores: {os.cpu_count()}; load average {load:.1f}; median of {args.runs} runs, seconds; "
        f"project files parsed (prefilter + followed imports): {runs[0]['cold']['parsed']}"
    )
    print(
        f"{'check, cold (fresh process)':<58}{cold_total:8.3f}   target < 1.000  {'OK' if cold_total < 1.0 else 'OVER'}"
    )
    for key in ("builtins", "project", "installed", "evaluate"):
        print(f"  {key:<56}{med('cold', key):8.3f}")
    print(f"{'check, warm (same process, parse cache)':<58}{med('warm', 'total'):8.3f}")
    print(f"{'msdoctor imports for the check (not counted above)':<58}{median([r['imports'] for r in runs]):8.3f}")
    print(f"{'anchor: import transformers + CONFIG_MAPPING keys':<58}{median(anchor_import):8.3f}")
    print(f"{'anchor: ast.parse of every project file (no prefilter)':<58}{parse_all:8.3f}")
    print(f"{'msdoctor check --only registry-collisions (wall)':<58}{median(cli):8.3f}")
    print(f"verdict on the generated project: {runs[0]['cold']['statuses']} ({runs[0]['cold']['n_findings']} findings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
