"""Owners (msdoctor/explain/owners.py, issue 24 section 2) and the undefined-symbol rule built on them: the
symbol's owner is read from its mangled namespace, the library's from its path, and the answer names both
instead of a list of suspects (real reports in tests/data/explain/owner_cases.toml)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from msdoctor.explain import explain_text
from msdoctor.explain.owners import file_owner, symbol_owner

CASES = {
    c["id"]: c
    for c in tomllib.loads(
        (Path(__file__).parent / "data" / "explain" / "owner_cases.toml").read_text(encoding="utf-8")
    )["case"]
}


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_real_undefined_symbol_names_both_owners(case_id: str) -> None:
    case = CASES[case_id]
    [m] = [m for m in explain_text(case["text"]) if m.entry_id == "undefined-symbol"]
    assert f"is defined by {case['sym_owner']}" in m.cause
    assert f"{case['lib_pkg']} and {case['sym_owner']} are releases that do not pair" in m.cause
    for suspect in ("cuDNN", "oneDNN"):  # the old answer's wrong suspects for a torch symbol
        assert suspect not in m.cause and suspect not in m.fix
    fix = m.fix_for("/env/bin/python")
    assert "Unverified" in fix and "/env/bin/python " in fix


@pytest.mark.parametrize(
    "symbol, owner",
    [
        ("_ZN5torch10ValueErrorC1EPKcz", "torch"),
        ("_ZNK3c104Type14isSubtypeOfExtESt10shared_ptrIS0_EPSo", "torch"),
        ("_ZN2at5ErrorC1ENS_14SourceLocationESs", "torch"),
        ("_ZN7c10_npu9NPUStream4sync", "torch_npu"),
        ("_ZN9mindspore6kernel3Foo", "MindSpore"),
        ("_ZN3atb15CreateOperationINS_5infer14GroupTopkParamEEEiRKT_PPNS_9OperationE", "NNAL"),
        ("_ZN6AsdOps3Ops8InstanceEv", "NNAL"),
        ("aclrtMallocHost", "CANN"),
        ("MsprofReportApi", "CANN"),
        ("_Py_ZeroStruct", "Python"),
        ("PyUnicode_AsUTF8", "Python"),
    ],
)
def test_symbol_owner_from_its_namespace(symbol: str, owner: str) -> None:
    got = symbol_owner(symbol)
    assert got is not None and got.name == owner


@pytest.mark.parametrize(
    "symbol", ["dnnl_threadpool_interop_stream_create", "_ZN3foo3barEv", "_ZN5torc", "cudnnCreate"]
)
def test_unknown_owner_is_not_guessed(symbol: str) -> None:
    assert symbol_owner(symbol) is None


def test_unknown_owner_keeps_the_general_answer() -> None:
    text = (
        "OSError: /env/lib/python3.9/site-packages/mindspore/lib/libmindspore.so: undefined symbol: "
        "dnnl_threadpool_interop_stream_create"
    )
    [m] = explain_text(text)
    assert m.entry_id == "undefined-symbol" and "do not pair" not in m.cause


def test_own_symbol_is_not_called_a_pairing() -> None:
    text = (
        "OSError: /env/lib/python3.10/site-packages/torch/lib/libtorch_cpu.so: undefined symbol: _ZN3c106detail3fooEv"
    )
    [m] = explain_text(text)
    assert "do not pair" not in m.cause


@pytest.mark.parametrize(
    "path, owner",
    [
        ("/x/lib/python3.9/site-packages/torch_npu/lib/libtorch_npu.so", "torch_npu"),
        ("/usr/local/Ascend/ascend-toolkit/8.0.RC2/lib64/libascendcl.so", "CANN"),
        ("/home/u/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libtbe_adapter.so", "NNAL"),
        ("/usr/local/Ascend/driver/lib64/driver/libdcmi.so", "the Ascend driver"),
    ],
)
def test_file_owner_from_its_path(path: str, owner: str) -> None:
    got = file_owner(path)
    assert got is not None and got.name == owner


def test_a_captured_path_excludes_a_glued_error_prefix() -> None:
    """Pasted without a space after the colon, the exception name is not part of the library's path."""
    text = (
        "ImportError:/home/u/miniconda3/envs/ms/lib/python3.9/site-packages/scikit_learn.libs/"
        "libgomp-d22c30c5.so.1.0.0: cannot allocate memory in static TLS block"
    )
    [m] = explain_text(text)
    assert m.groups["lib"].startswith("/home/u/miniconda3/envs/ms/lib/")
    assert "LD_PRELOAD=/home/u/miniconda3/" in m.fix_for("python")


def test_fixes_name_the_interpreter_the_pasted_paths_point_to(tmp_path: Path) -> None:
    from helpers import BASE_PYTHON, run_json, run_msdoctor

    text = CASES["ascend-pytorch-35"]["text"]
    res = run_msdoctor("explain", text, "--no-confirm", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "/home/ma-user/anaconda3/envs/PyTorch-2.1.0/bin/python3.9 -m pip show torch torch_npu" in res.stdout
    assert "the interpreter of the environment the pasted paths are in" in res.stdout
    res, data = run_json("explain", text, cwd=tmp_path)
    assert "/home/ma-user/anaconda3/envs/PyTorch-2.1.0/bin/python3.9 -m pip" in data["matches"][0]["fix"]
    res, data = run_json("explain", text, "--python", BASE_PYTHON, cwd=tmp_path)  # a chosen target wins
    assert f"{BASE_PYTHON} -m pip show torch" in data["matches"][0]["fix"]


def test_interpreter_of_paths_needs_one_environment() -> None:
    from msdoctor.explain.owners import interpreter_of_paths

    assert interpreter_of_paths(["/usr/local/lib/python3.10/dist-packages/torch/x.so"]) == "/usr/local/bin/python3.10"
    assert interpreter_of_paths(["/a/lib/python3.9/site-packages/x", "/b/lib/python3.9/site-packages/y"]) is None
    assert interpreter_of_paths(["no path here"]) is None


def test_a_bare_cann_code_says_it_is_not_a_diagnosis() -> None:
    """A code with nothing the rules know about its inner lines: the category, what to collect, no diagnosis."""
    [m] = explain_text("[ERROR] RUNTIME(1234,python):2025-01-01-00:00:00.000.000 EZ9999: Inner Error!")
    assert m.entry_id == "cann-error-code" and m.groups["code"] == "EZ9999"
    assert "not a diagnosis" in m.cause and "plog" in m.cause
    assert "inner error lines" in m.fix and "plog" in m.fix


def test_a_source_checkout_owns_its_package_files() -> None:
    from msdoctor.explain.owners import checkout_owner

    assert (
        checkout_owner("/home/admin/runtime_package/vllm-ascend/vllm_ascend/ops/rotary_embedding.py").name
        == "vllm_ascend"
    )
    assert checkout_owner("E:\\mindyolo-master\\mindyolo-master\\mindyolo\\utils\\utils.py").name == "mindyolo"
    assert checkout_owner("/work/mindformers-r1.3.0/mindformers/models/llama.py").name == "mindformers"
    # a user's own tree, and an installed package, are not checkouts
    assert checkout_owner("/mnt/c/Users/a/Tello/TelloSDKPy/djitellopy/__init__.py") is None
    assert checkout_owner("/home/u/project/train.py") is None
    assert checkout_owner("/opt/conda/lib/python3.10/site-packages/vllm/utils.py") is None


def test_with_no_paths_and_no_target_a_fix_names_python_not_msdoctors_own(tmp_path: Path) -> None:
    """msdoctor in its own venv: a paste without paths gets `python` (and a note), never msdoctor's interpreter;
    run from the activated environment msdoctor is installed in, its interpreter is the user's."""
    import sys

    from helpers import env_with, run_json, run_msdoctor

    text = "ModuleNotFoundError: No module named 'mindspore'"
    res = run_msdoctor(
        "explain",
        text,
        "--no-confirm",
        cwd=tmp_path,
        env=env_with({"VIRTUAL_ENV": str(tmp_path)}, drop=("CONDA_PREFIX",)),
    )
    assert res.returncode == 0, res.stderr
    assert "fixes name `python`" in res.stdout and sys.executable not in res.stdout
    res, data = run_json("explain", text, cwd=tmp_path, env=env_with({"VIRTUAL_ENV": sys.prefix}))
    assert sys.prefix in data["matches"][0]["fix"]


def test_std_symbols_are_the_cpp_runtimes() -> None:
    from msdoctor.explain.owners import symbol_owner

    for sym in (
        "_ZNSt15__exception_ptr13exception_ptr9_M_addrefEv",
        "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE7compareEPKc",
        "_ZSt28__throw_bad_array_new_lengthv",
    ):
        assert symbol_owner(sym).name == "libstdc++", sym
    assert symbol_owner("_ZN5torch3jit17parseSchemaOrNameERKSs").name == "torch"  # std:: in its arguments only


def test_the_per_user_site_names_no_interpreter() -> None:
    """~/.local/lib/pythonX.Y/site-packages serves every interpreter of that version: ~/.local/bin/pythonX.Y is none."""
    from msdoctor.explain.owners import interpreter_of_paths

    assert interpreter_of_paths(["/home/u/.local/lib/python3.8/site-packages/accelerate/utils/__init__.py"]) is None
    assert (
        interpreter_of_paths(
            ["/home/u/.local/lib/python3.8/site-packages/a.py", "/opt/venv/lib/python3.8/site-packages/b.py"]
        )
        == "/opt/venv/bin/python3.8"
    )
