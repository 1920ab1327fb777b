"""The real cases behind fix-stack, on real venvs built with the real pip from the real index.

* mindnlp 0.5.1 installed on MindSpore 2.10.0 (what `pip install mindspore` gives): pip drops MindSpore
  to 2.7.0 and pulls transformers 5.x; msdoctor's ONE printed command must make `import mindnlp` work
  and version-matrix pass. The venv gets exactly the set pip's own dry-run report chose (read from a
  real MindSpore 2.10.0 venv), installed --no-deps, without torch and its CUDA wheels (GBs; mindnlp
  brings its own torch front-end), over the test environment's MindSpore 2.7.0.
* mindformers 2.1.0 installed --no-deps on MindSpore 2.10.0: it needs mindspore~=2.11.0 and
  hyper-parallel, which the index does not have; the printed command must name only versions the
  index has and leave a stack that imports and passes.
* MindSpore 2.7.0 with numpy 2.2.6 on CPU: metadata says numpy<2, the live probe proves the stack
  works on CPU; version-matrix warns and `msdoctor train` starts.

Module fixtures share the venvs; everything lives under pytest's tmp dir. Skips when the index is offline.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import (
    BASE_PURELIB,
    BASE_PYTHON,
    Venv,
    built_once,
    check_of,
    linked_copy,
    make_venv,
    run_json,
    run_msdoctor,
)
from test_fix_stack import need_index

pytestmark = [pytest.mark.slow, pytest.mark.mindspore]

#: torch and the CUDA stack it pulls (several GB); the mindnlp case is installed without them
NOT_INSTALLED = ("torch", "triton", "nvidia-", "nvidia_", "cuda-", "cuda_")


def _vm(python: str) -> tuple[dict, int]:
    res, report = run_json("check", "--python", python, "--only", "version-matrix", timeout=1200)
    return check_of(report, "version-matrix"), res.returncode


def _plan_finding(check: dict) -> dict:
    return next(f for f in check["findings"] if f.get("evidence", {}).get("stack_plan"))


def _follow(fix: str, python: str) -> None:
    """Run the printed command exactly as a user pastes it. PIP_COMPILE=0 (pip's ``--compile`` option off, as
    ``--no-compile``; PIP_NO_COMPILE=1 would turn it on, observed with pip 23.2.1) leaves out writing the .pyc files
    of what it installs (a MindSpore release has 2,000 modules): the same packages, versions and files are installed,
    and Python compiles what the import smoke imports when it imports it."""
    argv = shlex.split(fix.splitlines()[0])
    assert argv[:4] == [python, "-m", "pip", "install"], argv
    res = subprocess.run(argv, capture_output=True, text=True, timeout=1800, env=dict(os.environ, PIP_COMPILE="0"))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]


def _smoke(check: dict) -> dict:
    return next(
        f for f in check["findings"] if "training-script order" in f["title"] or f.get("code") == "import-fails"
    )


def _index_versions(python: str, name: str) -> list[str]:
    res = subprocess.run([python, "-m", "pip", "index", "versions", name], capture_output=True, text=True, timeout=300)
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("Available versions:"))
    return [v.strip() for v in line.split(":", 1)[1].split(",")]


def _record(name: str, before: dict, fix: str, after: dict) -> None:
    """Before/after of each case, for the closing note (MSDOCTOR_CASES_LOG=path to collect them)."""
    path = os.environ.get("MSDOCTOR_CASES_LOG")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    "case": name,
                    "before": [[x["status"], x["title"]] for x in before["findings"]],
                    "fix": fix,
                    "after": [[x["status"], x["title"]] for x in after["findings"]],
                }
            )
            + "\n"
        )


def _ms210(root: Path) -> Venv:
    """A real venv with what `pip install mindspore` gives today (MindSpore 2.10.0, numpy 2.x)."""
    need_index()
    venv = make_venv(root, with_pip=True)  # msdoctor asks the target's pip
    venv.pip("install", "--quiet", "--no-compile", "mindspore", timeout=1800)
    return venv


def _ms210_once() -> Venv:
    """The MindSpore 2.10.0 venv of this pytest run: installed from the index once, by the first test that asks, on
    either xdist worker (tests/helpers.built_once)."""
    need_index()
    return Venv(built_once("ms210-venv", _ms210))


@pytest.fixture(scope="module")
def ms210() -> Venv:
    """Read only (pip's dry runs): shared by the tests that do not install into it."""
    return _ms210_once()


@pytest.fixture
def ms210_own(tmp_path: Path) -> Venv:
    """A venv of the test's own, for a test that installs into it: the files of the run's MindSpore 2.10.0 venv,
    hard-linked (tests/helpers.linked_copy), instead of a second `pip install mindspore` of 2 GB. With no module
    fixture the test is a unit of its own (tests/conftest.py), so it runs on the other worker while the mindnlp
    case reads ``ms210``."""
    return linked_copy(_ms210_once(), tmp_path / "ms210")


def _version(venv: Venv, dist: str) -> str:
    res = venv.run(f"from importlib.metadata import version; print(version({dist!r}))")
    return res.stdout.strip()


def test_mindnlp_051_on_mindspore_2100_one_command_repairs_it(ms210: Venv, tmp_path: Path) -> None:
    assert _version(ms210, "mindspore") == "2.10.0"
    report = tmp_path / "report.json"
    ms210.pip("install", "--dry-run", "--quiet", "--report", str(report), "mindnlp==0.5.1", timeout=1800)
    chosen = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert chosen["mindspore"] == "2.7.0" and chosen["transformers"].startswith("5.")  # what pip does silently
    assert chosen["mindspore"] == _base_version("mindspore")
    venv = make_venv(tmp_path / "nlp", layered=True)  # the test env's MindSpore 2.7.0 underneath
    pins = [f"{n}=={v}" for n, v in chosen.items() if n != "mindspore" and not n.lower().startswith(NOT_INSTALLED)]
    venv.pip("install", "--no-deps", "--quiet", "--no-compile", *pins, timeout=1800)

    before, rc = _vm(venv.python)
    assert rc == 1 and _smoke(before).get("code") == "import-fails"
    f = _plan_finding(before)
    assert f["evidence"]["stack_plan"]["state"] == "found"
    fix = f["fix"]
    assert fix.count(" -m pip install ") == 1 and "huggingface_hub==0.36.2" in fix  # <1.0, as transformers 4.57 needs
    _follow(fix, venv.python)

    after, rc = _vm(venv.python)
    assert rc == 0 and after["status"] in ("pass", "warn"), [x["title"] for x in after["findings"]]
    assert _smoke(after)["status"] == "pass" and "mindnlp" in _smoke(after)["title"]
    assert not [x for x in after["findings"] if x["status"] == "warn" and "torch" not in x["title"]]
    _record("mindnlp 0.5.1 over MindSpore 2.10.0", before, fix, after)


def _base_version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def test_mindformers_210_on_mindspore_2100_only_versions_the_index_has(ms210_own: Venv) -> None:
    ms210 = ms210_own
    ms210.pip("install", "--no-deps", "--quiet", "--no-compile", "mindformers==2.1.0")
    before, rc = _vm(ms210.python)
    codes = {x.get("code") for x in before["findings"] if x["status"] == "fail"}
    assert rc == 1 and "mindformers-mindspore" in codes
    fix = _plan_finding(before)["fix"]
    command = fix.splitlines()[0]
    assert "2.11.0" not in command and "hyper-parallel" not in command and command.count(" -m pip install ") == 1
    pins = dict(a.split("==") for a in shlex.split(command)[5:])
    for name in ("mindspore", "mindformers"):
        assert pins[name] in _index_versions(ms210.python, name), (name, pins[name])
    _follow(fix, ms210.python)

    after, rc = _vm(ms210.python)
    assert rc == 0 and after["status"] == "pass", [x["title"] for x in after["findings"]]
    assert "mindformers" in _smoke(after)["title"] and _smoke(after)["status"] == "pass"
    _record("mindformers 2.1.0 (--no-deps) over MindSpore 2.10.0", before, fix, after)


def _venv_without(root: Path, exclude: tuple[str, ...]) -> Venv:
    """A venv that sees the test environment's packages except ``exclude`` (links, not copies)."""
    venv = make_venv(root)
    shared = venv.site_packages.parent / "shared-site"  # the depth of site-packages: RECORD's ../../../bin paths
    shared.mkdir()
    for entry in Path(BASE_PURELIB).iterdir():
        if not entry.name.lower().startswith(exclude):
            (shared / entry.name).symlink_to(entry)
    for script in Path(BASE_PYTHON).parent.iterdir():  # the console scripts those RECORDs list, as pip writes them
        if (venv.bin / script.name).exists() or script.name.startswith(("pip", "activate", "python")):
            continue
        text = script.read_bytes()
        if text.startswith(b"#!" + BASE_PYTHON.encode()):
            out = venv.bin / script.name
            out.write_bytes(b"#!" + venv.python.encode() + text[2 + len(BASE_PYTHON.encode()) :])
            out.chmod(0o755)
    (venv.site_packages / "_msdoctor_test_shared.pth").write_text(f"import site; site.addsitedir({str(shared)!r})\n")
    return venv


def test_numpy_2_under_mindspore_270_on_cpu_warns_and_train_starts(tmp_path: Path) -> None:
    need_index()
    venv = _venv_without(tmp_path / "np2", ("numpy",))
    venv.pip("install", "--no-deps", "--quiet", "numpy==2.2.6")
    check, rc = _vm(venv.python)
    f = next(x for x in check["findings"] if x.get("code") == "mindspore-numpy")
    assert rc == 0 and f["status"] == "warn" and f["evidence"]["ground_truth"]["device"] == "CPU:0"
    config = tmp_path / "tiny.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "numpy2",
                "runtime": {"device_target": "CPU", "device_num": 1},
                "model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "num_kv_heads": 2},
                "train": {"micro_batch_size": 8, "seq_length": 64, "max_steps": 3, "warmup_steps": 1},
                "logging": {"every_steps": 1, "tensorboard": False},
                "checkpoint": {"every_steps": 0},
                "data": {"cache_dir": str(tmp_path / "tokens")},
            }
        )
    )
    res = run_msdoctor(
        "train",
        "--python",
        venv.python,
        "--config",
        str(config),
        "--output-dir",
        str(tmp_path / "run"),
        cwd=tmp_path,
        timeout=900,
    )
    assert "checks passed" in res.stdout and "starting 1 training process" in res.stdout, res.stdout[-3000:]
    assert res.returncode == 0 and (tmp_path / "run" / "metrics.csv").is_file(), res.stderr[-2000:]
    report = json.loads((tmp_path / "run" / "check-report.json").read_text())
    assert check_of(report, "version-matrix")["status"] == "warn"
