"""version-matrix on real environments: real venvs, real pip, the real `msdoctor` command.

Every venv is layered over the test environment (real MindSpore 2.7.0, transformers 4.57.1, numpy
1.26.4) and gets one small variation installed with the real pip (`--no-deps`, so MindSpore is never
reinstalled): mindnlp 0.5.1 + transformers 5.0.0, numpy 2.2.6 under MindSpore 2.7.0, and mindnlp
0.5.1 next to a MindSpore 2.7.1. The last one is the only faked part: a second 750 MB MindSpore wheel
is too slow for a test, so only a `mindspore-2.7.1.dist-info/METADATA` (the real 2.7.0 METADATA with
the version changed) is placed in the venv, which is all the metadata rules read. The numpy case and
the healthy case use only real installed distributions; the healthy case runs the import smoke for
real (MindSpore and transformers imported in a fresh process).
"""

from __future__ import annotations

import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Optional

import pytest

from helpers import BASE_PYTHON, Venv, check_of, env_with, make_venv, pip_from_index, run_json

pytestmark = [pytest.mark.slow, pytest.mark.mindspore]


WHEELS = ("mindnlp==0.5.1", "transformers==5.0.0", "numpy==2.2.6")


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real wheels from the package index, downloaded once for every venv of this module."""
    dest = tmp_path_factory.mktemp("wheels")
    pip_from_index(
        [BASE_PYTHON, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "-d", str(dest), *WHEELS],
        timeout=600,
    )
    found = {}
    for spec in WHEELS:
        name, version = spec.split("==")
        found[spec] = next(dest.glob(f"{name}-{version}-*.whl"))
    return found


def _venv(tmp_path_factory: pytest.TempPathFactory, name: str, wheels: dict[str, Path], *packages: str) -> Venv:
    venv = make_venv(tmp_path_factory.mktemp(name) / "venv", layered=True)
    if packages:
        venv.pip("install", "--no-deps", "--no-index", "--no-compile", "--quiet", *(str(wheels[p]) for p in packages))
    return venv


def _check(venv_python: str, *extra: str, env: Optional[dict] = None) -> tuple[dict, int]:
    res, report = run_json("check", "--python", venv_python, "--only", "version-matrix", *extra, env=env)
    return check_of(report, "version-matrix"), res.returncode


def _no_index() -> dict:
    """pip pointed at a closed local port: the plan search is answered at once (unverified) where a test is
    about the import smoke, not the plan (the plan against the real index: tests/test_fix_stack*.py)."""
    env = {k: v for k, v in env_with().items() if not k.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple"})
    return env


def _codes(check: dict) -> dict[str, dict]:
    return {f["code"]: f for f in check["findings"] if f.get("code")}


@pytest.fixture(scope="module")
def nlp_tf5(tmp_path_factory: pytest.TempPathFactory, wheelhouse: dict[str, Path]) -> Venv:
    return _venv(tmp_path_factory, "nlp-tf5", wheelhouse, "mindnlp==0.5.1", "transformers==5.0.0")


def test_mindnlp_051_with_transformers_5_fails_naming_the_working_range(nlp_tf5: Venv) -> None:
    check, rc = _check(nlp_tf5.python, "--quick")
    assert rc == 1 and check["status"] == "fail"
    f = _codes(check)["known-breakage"]
    assert f["title"].startswith("transformers 5.0.0 breaks mindnlp 0.5.1 at import")
    # --quick does not ask pip: one command, marked unverified, without transformers 5's own huggingface-hub pin
    command, note = f["fix"].split("\n", 1)
    assert command.startswith(f"{nlp_tf5.python} -m pip install ") and '"transformers>=4.56,<5"' in command
    assert "huggingface-hub" not in command and note.startswith("(UNVERIFIED: --quick does not ask the target's pip")
    # installed with --no-deps: mindnlp's missing dependencies are reported too, as one finding
    missing = [x for x in check["findings"] if x.get("code") == "requirement-missing"]
    nlp = next(x for x in missing if x["title"].startswith("mindnlp 0.5.1 requires "))
    assert nlp["status"] == "fail" and "accelerate" in nlp["title"]


def test_import_smoke_reports_the_failing_import(nlp_tf5: Venv) -> None:
    """Without --quick the smoke really imports: mindspore first, then mindnlp, which raises."""
    check, _ = _check(nlp_tf5.python, env=_no_index())
    f = _codes(check)["import-fails"]
    assert f["title"].startswith("`import mindnlp` fails: ")
    steps = f["evidence"]["steps"]
    assert [s["module"] for s in steps] == ["mindspore", "mindnlp"] and steps[0]["ok"] and not steps[1]["ok"]
    assert f["title"].endswith(steps[1]["last_line"])
    assert f["evidence"]["order"] == ["mindspore", "mindnlp", "transformers"]


@pytest.fixture(scope="module")
def nlp_ms271(tmp_path_factory: pytest.TempPathFactory, wheelhouse: dict[str, Path]) -> Venv:
    venv = _venv(tmp_path_factory, "nlp-ms271", wheelhouse, "mindnlp==0.5.1")
    real = metadata.distribution("mindspore")
    fake = venv.site_packages / "mindspore-2.7.1.dist-info"
    fake.mkdir()
    text = real.read_text("METADATA").replace(f"Version: {real.version}\n", "Version: 2.7.1\n", 1)
    assert "Version: 2.7.1\n" in text
    (fake / "METADATA").write_text(text)
    (fake / "INSTALLER").write_text("pip\n")
    return venv


def test_mindnlp_051_with_mindspore_271_metadata_fails(nlp_ms271: Venv) -> None:
    check, rc = _check(nlp_ms271.python, "--quick")
    assert rc == 1
    f = _codes(check)["mindnlp-mindspore"]
    assert f["title"] == "mindnlp 0.5.1 requires mindspore>=2.5.0,<=2.7.0, but MindSpore 2.7.1 is installed"
    first = next(x for x in check["findings"] if x.get("evidence", {}).get("stack_plan"))
    assert '"mindspore>=2.5.0,<=2.7.0"' in first["fix"] and "UNVERIFIED" in first["fix"]
    assert f is first or f["fix"].startswith("see the (unverified) command under")
    conflicts = [x for x in check["findings"] if x.get("code") == "requirement-conflict"]
    assert not any("mindnlp" in x["title"] and "mindspore" in x["title"] for x in conflicts)  # reported once


@pytest.fixture(scope="module")
def numpy2(tmp_path_factory: pytest.TempPathFactory, wheelhouse: dict[str, Path]) -> Venv:
    return _venv(tmp_path_factory, "numpy2", wheelhouse, "numpy==2.2.6")


def test_numpy_2_under_mindspore_270_fails(numpy2: Venv) -> None:
    check, rc = _check(numpy2.python, "--quick")
    assert rc == 1 and check["status"] == "fail"
    f = _codes(check)["mindspore-numpy"]
    assert f["title"] == "numpy 2.2.6 is installed, but MindSpore 2.7.0 needs numpy>=1.20.0,<2.0.0"
    assert f["fix"].startswith(f'{numpy2.python} -m pip install "numpy>=1.20.0,<2.0.0"\n(UNVERIFIED: --quick')
    assert f["evidence"]["pair"] == ["mindspore", "numpy"]


def test_healthy_stack_passes_with_the_import_smoke_run() -> None:
    check, rc = _check(BASE_PYTHON)
    assert rc == 0 and check["status"] == "pass", [f["title"] for f in check["findings"]]
    smoke = next(f for f in check["findings"] if f["title"].startswith("the stack imports in training-script order"))
    assert "import mindspore, mindspore.Tensor (2.7.0," in smoke["proved"]
    assert "import transformers, transformers.PretrainedConfig (4.57.1," in smoke["proved"]
    assert smoke["proved"].index("import mindspore") < smoke["proved"].index("import transformers")


def test_quick_skips_the_smoke_and_says_so() -> None:
    check, rc = _check(BASE_PYTHON, "--quick")
    assert rc == 0 and check["status"] == "pass"
    assert not any("training-script order" in f["title"] for f in check["findings"])
    assert "import smoke not run" in check["findings"][0]["evidence"]["not_compared"]


def test_mindspore_missing_in_a_bare_venv(tmp_path: Path) -> None:
    bare = make_venv(tmp_path / "bare")
    check, _ = _check(bare.python, "--quick")
    f = _codes(check)["mindspore-missing"]
    assert f["fix"] == f'{bare.python} -m pip install "mindspore==2.10.0"'
    assert f["status"] == "fail"
    assert shutil.which(bare.python)


@pytest.mark.parametrize("extra", [("--quick",), ()], ids=["static", "live-probe"])
def test_mindspore_missing_is_said_once_and_the_device_check_says_it_was_skipped(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    """Every check on a bare venv: one finding says MindSpore is missing (version-matrix's, a fail, the version from
    the matrix); device-target, with or without the live probe, says it was skipped because of it."""
    bare = make_venv(tmp_path / "bare")
    res, report = run_json("check", "--python", bare.python, *extra)
    said = [
        (c["id"], f)
        for c in report["checks"]
        for f in c["findings"]
        if "MindSpore is not installed" in f["title"] and f["status"] != "skip"
    ]
    assert [(cid, f["status"], f["code"]) for cid, f in said] == [("version-matrix", "fail", "mindspore-missing")]
    device = {f.get("code"): f for f in check_of(report, "device-target")["findings"]}
    assert device["skipped-mindspore-missing"]["status"] == "skip"
    assert "version-matrix" in device["skipped-mindspore-missing"]["detail"]
    assert res.returncode == 1
