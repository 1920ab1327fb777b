"""Each fact read from one place: one TOML reader, the report's facts section through FactSpecs."""

from __future__ import annotations

import ast
from pathlib import Path

from msdoctor.context import Context, Options
from msdoctor.doctor import _device_facts
from msdoctor.facts.nvidia import NVIDIA, NvidiaInfo

REPO = Path(__file__).resolve().parents[1]


def test_tomllib_is_imported_in_one_place() -> None:
    found = []
    for folder in ("msdoctor", "checks", "training"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n.split(".")[0] in ("tomllib", "tomli") for n in names):
                    found.append(str(path.relative_to(REPO)))
    assert sorted(set(found)) == ["msdoctor/tomlcompat.py"]


def test_the_facts_section_reads_the_fact_through_its_spec() -> None:
    ctx = Context(Options(), facts={NVIDIA.name: NvidiaInfo(smi_path="/usr/bin/nvidia-smi", driver_version="550.54.15")},
                  environ={})
    assert _device_facts(ctx)["nvidia"]["driver"] == "550.54.15"
    assert ctx.peek(NVIDIA) is ctx.peek("nvidia")  # a FactSpec or its name
    assert "nvidia" not in _device_facts(Context(Options(), environ={}))  # never computed: not in the report
