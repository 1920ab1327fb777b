"""version-matrix: the pure evaluate functions with tiny builders, and `msdoctor matrix` planning queries.

Targets are built from probe-shaped dicts (TargetFacts.from_probe), so each rule is tested on exactly
the facts it concludes from. GPU cases use a fixture tree (no NVIDIA hardware here) and the real
MindSpore 2.7.0 package folder for the plugin list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from helpers import BASE_PYTHON, run_msdoctor
from msdoctor.checks.version_matrix import MatrixInputs, evaluate_static, fold_skips
from msdoctor.checks.version_matrix.common import mindspore_dir
from msdoctor.checks.version_matrix.gpu import GpuFacts, evaluate_gpu, read_gpu
from msdoctor.checks.version_matrix.requires import evaluate_requirements
from msdoctor.checks.version_matrix.smoke import evaluate_smoke
from msdoctor.facts.cann import CannFacts
from msdoctor.facts.import_smoke import SmokeResult
from msdoctor.facts.target import TargetFacts
from msdoctor.matrix import load
from msdoctor.model import Finding, Status

PY = "/env/bin/python"
MARKERS = {
    "implementation_name": "cpython",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "6.0",
    "platform_system": "Linux",
    "platform_version": "#1",
    "sys_platform": "linux",
}


def dist(name: str, version: str, *requires: str, direct_url: Optional[str] = None) -> dict:
    return {
        "name": name,
        "version": version,
        "path": f"/env/site/{name}-{version}.dist-info",
        "location": "/env/site",
        "requires": list(requires),
        "direct_url": direct_url,
    }


def target(*dists: dict, python: str = "3.11.7", find_spec: Optional[dict] = None) -> TargetFacts:
    markers = dict(
        MARKERS, python_version=python.rsplit(".", 1)[0], python_full_version=python, implementation_version=python
    )
    return TargetFacts.from_probe(
        {
            "probe_schema": 1,
            "executable": PY,
            "version": [int(x) for x in python.split(".")],
            "prefix": "/env",
            "base_prefix": "/usr",
            "markers": markers,
            "distributions": list(dists),
            "find_spec": find_spec or {},
            "env": {},
        }
    )


MS270 = dist("mindspore", "2.7.0", "numpy<2.0.0,>=1.20.0", "protobuf>=3.13.0")
NP1 = dist("numpy", "1.26.4")
PB = dist("protobuf", "7.36.2")


def static(t: TargetFacts, cann: Optional[CannFacts] = None) -> list[Finding]:
    return evaluate_static(MatrixInputs(t, load(), cann or CannFacts(), GpuFacts(nvidia=False)))


def problems(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.status > Status.SKIP]


def by_code(findings: list[Finding], code: str) -> Finding:
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, [(f.code, f.title) for f in findings]
    return found[0]


# -- MindSpore vs Python, numpy, protobuf -----------------------------------------------------
def test_healthy_stack_passes_and_says_what_it_proved() -> None:
    out = static(target(MS270, NP1, PB, dist("transformers", "4.57.1")))
    assert problems(out) == []
    ms = next(f for f in out if f.title.startswith("MindSpore 2.7.0 fits Python 3.11"))
    assert "numpy>=1.20.0,<2.0.0" in ms.proved and "3.9, 3.10, 3.11" in ms.proved
    assert any("requirements of all 4 installed distributions" in f.title for f in out)


def test_numpy_2_under_mindspore_270_fails_once_with_the_exact_fix() -> None:
    out = static(target(MS270, dist("numpy", "2.2.6"), PB))
    f = by_code(out, "mindspore-numpy")
    assert f.status is Status.FAIL
    assert f.title == "numpy 2.2.6 is installed, but MindSpore 2.7.0 needs numpy>=1.20.0,<2.0.0"
    assert f.fix == f'{PY} -m pip install "numpy>=1.20.0,<2.0.0"'
    # the generic requirement rule does not report the same pair again
    assert [x.code for x in problems(out)] == ["mindspore-numpy"]


def test_numpy_2_is_fine_for_mindspore_2_10() -> None:
    ms = dist("mindspore", "2.10.0", "numpy>=1.25.0", "protobuf>=7.34.1")
    assert problems(static(target(ms, dist("numpy", "2.2.6"), PB))) == []
    low = static(target(ms, dist("numpy", "2.2.6"), dist("protobuf", "3.20.3")))
    assert by_code(low, "mindspore-protobuf").fix == f'{PY} -m pip install "protobuf>=7.34.1"'


def test_python_without_a_wheel_fails_and_names_a_release_that_has_one() -> None:
    out = static(target(MS270, NP1, PB, python="3.12.4"))
    f = by_code(out, "mindspore-python")
    assert f.status is Status.FAIL and "no wheel for Python 3.12 (wheels: 3.9, 3.10, 3.11)" in f.title
    assert f.fix.startswith(f'{PY} -m pip install "mindspore==2.10.0"')


def test_compiled_for_another_python_fails(tmp_path: Path) -> None:
    pkg = tmp_path / "mindspore"
    pkg.mkdir()
    (pkg / "_c_expression.cpython-310-x86_64-linux-gnu.so").write_bytes(b"")
    spec = {"mindspore": {"found": True, "origin": str(pkg / "__init__.py"), "locations": [str(pkg)]}}
    f = by_code(static(target(MS270, NP1, PB, find_spec=spec)), "mindspore-abi")
    assert f.title == "MindSpore 2.7.0 is built for Python 3.10, but this interpreter is Python 3.11"


def test_newer_mindspore_is_not_in_the_matrix_never_a_false_verdict() -> None:
    out = static(target(dist("mindspore", "2.11.0", "numpy>=1.25.0"), NP1))
    f = by_code(out, "not-in-matrix")
    assert f.status is Status.WARN
    assert f.title == f"MindSpore 2.11.0 is not in the matrix (dated {load().date})"
    assert "newest MindSpore the matrix knows (2.10.0)" in f.detail
    assert not any(x.status is Status.PASS and "MindSpore 2.11.0" in x.title for x in out)


def test_missing_mindspore_fails_with_the_install_command_from_the_matrix() -> None:
    f = by_code(static(target(NP1)), "mindspore-missing")
    assert f.status is Status.FAIL
    assert f.fix == f'{PY} -m pip install "mindspore==2.10.0"'
    assert "2.10.0" in f.detail


# -- MindNLP / transformers / MindFormers ------------------------------------------------------
NLP051 = dist("mindnlp", "0.5.1", "mindspore<=2.7.0,>=2.5.0", "transformers>=4.55.0")


def test_mindnlp_051_with_transformers_5_fails_although_metadata_allows_it() -> None:
    out = static(target(MS270, NP1, PB, NLP051, dist("transformers", "5.0.0")))
    f = by_code(out, "known-breakage")
    assert f.title.startswith("transformers 5.0.0 breaks mindnlp 0.5.1 at import")
    assert "'types.SimpleNamespace' object has no attribute 'read_text'" in f.detail
    assert f.fix == f'{PY} -m pip install "transformers>=4.56,<5"'
    assert f.evidence["source"].startswith("observed:")


def test_mindnlp_051_with_mindspore_271_fails_and_offers_270() -> None:
    out = static(
        target(dist("mindspore", "2.7.1", "numpy<2.0.0,>=1.20.0"), NP1, PB, NLP051, dist("transformers", "4.57.1"))
    )
    f = by_code(out, "mindnlp-mindspore")
    assert f.title == "mindnlp 0.5.1 requires mindspore>=2.5.0,<=2.7.0, but MindSpore 2.7.1 is installed"
    assert f.fix == f'{PY} -m pip install "mindspore==2.7.0"'
    assert "0.4.0, 0.4.1, 0.5.0" in f.detail  # releases whose metadata allows 2.7.1
    assert not [x for x in out if x.code == "requirement-conflict"]  # reported once


def test_mindnlp_with_untested_transformers_warns() -> None:
    out = static(target(MS270, NP1, PB, NLP051, dist("transformers", "4.55.4")))
    f = by_code(out, "mindnlp-transformers-untested")
    assert f.status is Status.WARN and ">=4.56.2,<=4.57.6" in f.title


def test_mindnlp_working_pair_passes() -> None:
    out = static(target(MS270, NP1, PB, NLP051, dist("transformers", "4.57.1")))
    f = next(x for x in out if x.title.startswith("mindnlp 0.5.1 fits"))
    assert "seen to work (>=4.56.2,<=4.57.6)" in f.proved


def test_mindformers_pins() -> None:
    mf17 = dist("mindformers", "1.7.0", "mindspore~=2.7.1", "transformers==4.51.3")
    out = static(target(MS270, NP1, PB, mf17, dist("transformers", "4.51.3")))
    assert by_code(out, "mindformers-mindspore").fix == f'{PY} -m pip install "mindspore==2.7.1"'
    mf16 = dist("mindformers", "1.6.0", "mindspore~=2.7.0rc1", "transformers==4.51.3")
    out = static(target(dist("mindspore", "2.7.2"), NP1, PB, mf16, dist("transformers", "4.57.1")))
    assert by_code(out, "mindformers-version-map").status is Status.WARN
    assert by_code(out, "mindformers-transformers").status is Status.FAIL


# -- rule 1: pip check semantics ---------------------------------------------------------------
def test_requirements_follow_pip_check_semantics() -> None:
    t = target(
        dist(
            "mindnlp",
            "0.5.1",
            "accelerate>=1.6.0",
            "ftfy",
            'colorama; sys_platform == "win32"',
            'pytest; extra == "test"',
        ),
        dist("ipykernel", "7.0.0", "tornado>=6.2"),
        dist("tornado", "6.1"),
        dist("mylib", "1.0", "numpy>=1.0"),
        dist("numpy", "2.0.0rc1"),  # pre-releases allowed
        dist("moxing-framework", "2.2.3.2c7f2141"),
        dist("tool", "1", "moxing-framework>=1"),
    )
    out = evaluate_requirements(t, set())
    missing = by_code(out, "requirement-missing")
    assert missing.status is Status.FAIL  # mindnlp is a stack package
    assert missing.title == "mindnlp 0.5.1 requires accelerate, ftfy, which are not installed"
    assert missing.fix == f'{PY} -m pip install "accelerate>=1.6.0" "ftfy"'
    conflicts = {f.title: f.status for f in out if f.code == "requirement-conflict"}
    assert conflicts == {
        "ipykernel 7.0.0 requires tornado>=6.2, but tornado 6.1 is installed": Status.WARN,
        "tool 1 requires moxing-framework>=1, but moxing-framework 2.2.3.2c7f2141 is installed": Status.WARN,
    }


def test_all_reported_elsewhere_is_not_a_false_pass() -> None:
    from msdoctor.checks.version_matrix.common import pair

    t = target(MS270, dist("numpy", "2.2.6"), PB)
    assert evaluate_requirements(t, {pair("mindspore", "numpy")}) == []


# -- GPU: fixture tree + the real MindSpore plugin folder ----------------------------------------
def _gpu_root(tmp_path: Path, driver: str, cudart: str, cudnn: Optional[str] = "8.5.0") -> Path:
    root = tmp_path / "root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    # the line format of /proc/driver/nvidia/version ("lists the installed driver revision")
    (root / "proc/driver/nvidia/version").write_text(
        f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Thu Jan  1 00:00:00 UTC 2026\n"
        "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
    )
    lib = root / "usr/local/cuda/lib64"
    lib.mkdir(parents=True)
    (lib / f"libcudart.so.{cudart}").write_bytes(b"")
    if cudnn:
        (lib / f"libcudnn.so.{cudnn}").write_bytes(b"")
    return root


@pytest.mark.mindspore
@pytest.mark.parametrize(
    "driver,cudart,cudnn,code,status",
    [
        ("535.104.05", "11.6.55", "8.5.0", None, Status.PASS),
        ("535.104.05", "12.2.140", "8.9.0", "cuda-runtime", Status.FAIL),
        ("470.82.01", "11.6.55", "8.5.0", "cuda-driver", Status.FAIL),
        ("535.104.05", "11.1.74", None, "cudnn-missing", Status.WARN),
    ],
    ids=["cuda-11.6-ok", "cuda-12-only", "driver-too-old", "no-cudnn"],
)
def test_gpu_cuda_against_the_real_plugin_list(
    tmp_path: Path, driver: str, cudart: str, cudnn: Optional[str], code: Optional[str], status: Status
) -> None:
    """NVIDIA facts are a fixture tree (no GPU here); the plugin CUDA list is the real MindSpore 2.7.0's."""
    from helpers import probe_json

    real = TargetFacts.from_probe(probe_json())
    root = _gpu_root(tmp_path, driver, cudart, cudnn)
    gpu = read_gpu({"MSDOCTOR_SYSROOT": str(root)}, "/usr/local/cuda/lib64", mindspore_dir(real))
    assert gpu.plugin_cuda == ["11.1", "11.6"] and gpu.driver == driver
    out = evaluate_gpu(real, gpu, load(), None)
    worst = max(f.status for f in out)
    assert worst is status
    if code:
        assert by_code(out, code).status is status
    else:
        assert out[0].title == "CUDA 11.6 runtime matches MindSpore 2.7.0's GPU plugin"


def test_gpu_skipped_without_nvidia_or_when_another_target_is_asked() -> None:
    t = target(MS270)
    assert evaluate_gpu(t, GpuFacts(nvidia=False), load(), None)[0].status is Status.SKIP
    assert "asks for Ascend" in evaluate_gpu(t, GpuFacts(nvidia=True), load(), "Ascend")[0].detail


# -- the import smoke, evaluated ------------------------------------------------------------------
def _smoke(state: str, steps: list[dict[str, Any]], **kw: Any) -> SmokeResult:
    return SmokeResult(state, PY, planned=[s["module"] for s in steps] or ["mindspore"], steps=steps, **kw)


def test_smoke_findings() -> None:
    t = target(MS270)
    assert evaluate_smoke(t, SmokeResult("skipped", PY, reason="--quick skips live imports"))[0].status is Status.SKIP
    ok = evaluate_smoke(
        t,
        _smoke("ran", [{"module": "mindspore", "ok": True, "version": "2.7.0", "seconds": 2.0, "touched": ["Tensor"]}]),
    )
    assert ok[0].status is Status.PASS and "import mindspore, mindspore.Tensor (2.7.0, 2.0 s)" in ok[0].proved
    bad = evaluate_smoke(
        t,
        _smoke(
            "ran",
            [
                {"module": "mindspore", "ok": True, "seconds": 2.0},
                {
                    "module": "mindnlp",
                    "ok": False,
                    "last_line": "AttributeError: 'types.SimpleNamespace' object has no attribute 'read_text'",
                    "traceback_tail": ["Traceback ...", "AttributeError: ..."],
                },
            ],
        ),
    )
    assert bad[0].status is Status.FAIL and bad[0].title.startswith("`import mindnlp` fails: AttributeError")
    crash = evaluate_smoke(
        t,
        _smoke(
            "crashed",
            [],
            crashed_in="mindspore",
            returncode=-11,
            reason="the process exited with status -11 during `import mindspore`",
        ),
    )
    assert crash[0].status is Status.FAIL and crash[0].code == "import-crash"
    te = evaluate_smoke(
        t,
        _smoke(
            "ran",
            [
                {"module": "mindspore", "ok": True, "seconds": 1},
                {"module": "te", "ok": True, "version": "7.5.0.1.129", "seconds": 1},
            ],
        ),
        accepted=["7.7", "7.8", "8.2"],
    )
    assert by_code(te, "te-version").status is Status.FAIL


def test_smoke_plans_installed_packages_in_training_script_order(tmp_path: Path) -> None:
    """The probe plans in the target itself: findable modules and installed distributions, in ORDER.

    Stand-ins on PYTHONPATH shadow the real packages so no framework is imported: mindnlp and hccl
    are modules, mindformers is only a dist-info (installed but not importable), te is absent.
    """
    from msdoctor.facts.import_smoke import all_steps, run_smoke

    pkgs = tmp_path / "pkgs"
    for name, body in {
        "mindspore": "__version__ = '2.7.0'\nTensor = object\n",
        "mindnlp": "",
        "transformers": "__version__ = '4.57.1'\nPretrainedConfig = object\n",
        "hccl": "",
    }.items():
        (pkgs / name).mkdir(parents=True)
        (pkgs / name / "__init__.py").write_text(body)
    (pkgs / "mindformers-1.6.0.dist-info").mkdir()
    (pkgs / "mindformers-1.6.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mindformers\nVersion: 1.6.0\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(pkgs)}
    res = run_smoke(BASE_PYTHON, all_steps(), timeout=60, environ=env)
    assert res.planned == ["mindspore", "mindnlp", "mindformers", "transformers", "hccl"]
    assert [s["module"] for s in res.steps] == ["mindspore", "mindnlp", "mindformers"]  # stops at the failure
    assert res.steps[2]["last_line"] == "ModuleNotFoundError: No module named 'mindformers'"


def test_fold_skips_keeps_the_verdict_a_pass() -> None:
    findings = [
        Finding.skipped("no Ascend software found", reason="nothing under /usr/local/Ascend"),
        Finding.passed("MindSpore fits", proved="x"),
    ]
    out = fold_skips(findings)
    assert [f.status for f in out] == [Status.PASS]
    assert out[0].evidence["not_compared"] == ["no Ascend software found"]
    only_skips = [Finding.skipped("a", reason="b")]
    assert fold_skips(only_skips) == only_skips


# -- `msdoctor matrix` --------------------------------------------------------------------------
def test_matrix_command_planning_json() -> None:
    res = run_msdoctor("matrix", "--mindspore", "2.7.0", "--cann", "8.0.RC3", "--python", "3.11", "--format", "json")
    assert res.returncode == 1, res.stderr  # one planned pair does not fit
    data = json.loads(res.stdout)
    ms = data["sections"][0]
    assert ms["cann_internal_accepted"] == ["7.7", "7.8", "8.2"] and ms["python"] == ["3.9", "3.10", "3.11"]
    assert {tuple(v["pair"]): v["ok"] for v in data["fits"]} == {
        ("mindspore 2.7.0", "python 3.11"): True,
        ("mindspore 2.7.0", "cann 8.0.RC3"): False,
    }


def test_matrix_command_terminal_and_installed() -> None:
    res = run_msdoctor("matrix", "--mindnlp", "0.5.1")
    assert res.returncode == 0, res.stderr
    assert "what goes with mindnlp 0.5.1" in res.stdout and ">=4.56.2,<=4.57.6" in res.stdout
    res = run_msdoctor("matrix", "--python", BASE_PYTHON, "--format", "json")
    data = json.loads(res.stdout)
    assert data["mode"] == "installed" and data["query"]["mindspore"] == "2.7.0"
    res = run_msdoctor("matrix", "--mindspore", "9.9.9")
    assert res.returncode == 0 and "no (matrix dated" in res.stdout


def test_import_smoke_runs_stdlib_steps_in_order_and_stops_at_the_first_failure(tmp_path: Path) -> None:
    """The real probe under the real interpreter, on stdlib modules: order kept, failure reported, rest not attempted."""
    from msdoctor.facts.import_smoke import run_smoke

    steps = [
        {"module": "json", "touch": ["dumps"], "version_attr": None},
        {"module": "no_such_module_xyz", "touch": [], "version_attr": None},
        {"module": "csv", "touch": [], "version_attr": None},
    ]
    res = run_smoke(BASE_PYTHON, steps, timeout=60, environ={"PATH": "/usr/bin:/bin"})
    assert res.state == "ran" and [s["module"] for s in res.steps] == ["json", "no_such_module_xyz"]
    assert res.steps[0]["ok"] and res.steps[0]["touched"] == ["dumps"]
    assert res.steps[1]["last_line"] == "ModuleNotFoundError: No module named 'no_such_module_xyz'"
    assert not any("<stdin>" in line for line in res.steps[1]["traceback_tail"])


def test_import_smoke_crash_and_timeout_are_results(tmp_path: Path) -> None:
    from msdoctor.facts.import_smoke import run_smoke

    (tmp_path / "crasher.py").write_text("import os\nos.abort()\n")
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(30)\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
    crash = run_smoke(BASE_PYTHON, [{"module": "crasher"}], timeout=60, environ=env)
    assert crash.state == "crashed" and crash.crashed_in == "crasher" and crash.returncode != 0
    slow = run_smoke(BASE_PYTHON, [{"module": "sleeper"}], timeout=2, environ=env)
    assert slow.state == "timeout" and slow.crashed_in == "sleeper"
    f = evaluate_smoke(target(MS270), slow)[0]
    assert f.status is Status.ERROR and "stuck in `import sleeper`" in f.title


def test_a_broken_packaged_matrix_is_one_error_finding_through_the_prefetched_fact(tmp_path: Path) -> None:
    """The matrix is a prefetched fact (parsed while the target probe runs); a schema error in it still comes
    back as the check's error finding, naming the file, not as a crash."""
    from helpers import make_ctx, probe_json
    from msdoctor.checks.version_matrix import MATRIX, VersionMatrixCheck
    from msdoctor.facts.target import TARGET, TargetFacts
    from msdoctor.matrix_schema import MatrixError
    from msdoctor.runner import run_one
    from msdoctor.plugins import LoadedCheck

    target = TargetFacts.from_probe(probe_json(BASE_PYTHON))
    broken = MatrixError("compat_matrix/mindspore.toml", "cann '9.9' has no row", row="[[release]] (version 2.7.0)")
    ctx = make_ctx({TARGET.name: target, MATRIX.name: broken}, quick=True, project_dir=tmp_path)
    result = run_one(LoadedCheck(VersionMatrixCheck(), "msdoctor", "version-matrix = builtin"), ctx)
    (finding,) = result.findings
    assert finding.status.value == "error" and "compatibility matrix is broken" in finding.title
    assert "compat_matrix/mindspore.toml" in finding.title
