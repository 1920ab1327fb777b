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
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                if any(n.split(".")[0] in ("tomllib", "tomli") for n in names):
                    found.append(str(path.relative_to(REPO)))
    assert sorted(set(found)) == ["msdoctor/tomlcompat.py"]


def test_the_facts_section_reads_the_fact_through_its_spec() -> None:
    ctx = Context(
        Options(),
        facts={NVIDIA.name: NvidiaInfo(smi_path="/usr/bin/nvidia-smi", driver_version="550.54.15")},
        environ={"MSDOCTOR_SYSROOT": "/nonexistent-sysroot"},
    )
    assert _device_facts(ctx)["nvidia"]["driver"] == "550.54.15"
    assert ctx.peek(NVIDIA) is ctx.peek("nvidia")  # a FactSpec or its name
    assert "nvidia" not in _device_facts(Context(Options(), environ={}))  # never computed: not in the report


def test_the_nvidia_driver_version_has_one_answer(tmp_path: Path) -> None:
    """nvidia-smi (fake, as a fixture would print it) says one version, /proc/driver/nvidia/version another: the
    report's facts and the version-matrix rule give the same one, the loaded kernel module's."""
    from msdoctor.checks.version_matrix.gpu import read_gpu

    proc = tmp_path / "proc" / "driver" / "nvidia"
    proc.mkdir(parents=True)
    # the line's format: http://http.download.nvidia.com/XFree86/Linux-x86_64/460.80/README/procinterface.html
    (proc / "version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
        "GCC version:  gcc version 12.2.0\n"
    )
    environ = {"MSDOCTOR_SYSROOT": str(tmp_path)}
    smi = NvidiaInfo(smi_path="/usr/bin/nvidia-smi", driver_version="535.104.05")
    ctx = Context(Options(), facts={NVIDIA.name: smi}, environ=environ)
    assert _device_facts(ctx)["nvidia"]["driver"] == "550.54.15"
    assert read_gpu(environ, "", None, lambda: smi).driver == "550.54.15"
    (proc / "version").unlink()  # no /proc file: nvidia-smi's answer, in both
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "nvidiactl").touch()
    assert _device_facts(ctx)["nvidia"]["driver"] == "535.104.05"
    assert read_gpu(environ, "", None, lambda: smi).driver == "535.104.05"
