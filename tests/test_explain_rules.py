"""The general rules over a traceback's structure (msdoctor/explain/rules/, issue 24 section 3), on real reports
(tests/data/explain/rule_cases.toml): the frame that raised, its owner, and the module the error names decide the
answer; where they do not tell, no claim."""

from __future__ import annotations

import tomllib
from typing import Any
from pathlib import Path

import pytest

from msdoctor.explain import explain_text
from msdoctor.explain.rules.env import NO_PYTHON

DATA = tomllib.loads((Path(__file__).parent / "data" / "explain" / "rule_cases.toml").read_text(encoding="utf-8"))
CASES = {c["id"]: c for c in DATA["case"]}
NEGATIVES = {c["id"]: c for c in DATA["negative"]}


def test_cases_are_sourced() -> None:
    for c in list(CASES.values()) + list(NEGATIVES.values()):
        assert c["source"].startswith("https://") and c["settled"].strip() and c["text"].strip()


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_real_case_gets_the_rule_and_names_the_owners(case_id: str) -> None:
    case = CASES[case_id]
    matches = explain_text(case["text"])
    assert [m.entry_id for m in matches] == [case["expect"]], case_id
    m = matches[0]
    assert m.groups.get("rule") == case["rule"]
    text = f"{m.title}\n{m.cause}\n{m.fix_for('/env/bin/python')}"
    for word in case["names"]:
        assert word in text, (case_id, word, text)
    fix = m.fix_for("/env/bin/python")
    assert "Unverified" in fix
    if (
        case["rule"]
        not in (
            "port-bound",
            "device-permission",
            "symbol-owner",
            "runtime-copy",
            "scheduler-port",
            "two-interpreters",
            "acl-code",
        )
        and case["rule"] not in NO_PYTHON
    ):  # a fix that runs Python names the target interpreter
        assert "/env/bin/python " in fix
    assert "rules/ fills this" not in m.cause + m.fix  # the placeholder text never reaches the user


@pytest.mark.parametrize("case_id", sorted(NEGATIVES))
def test_no_claim_where_the_structure_does_not_tell(case_id: str) -> None:
    assert explain_text(NEGATIVES[case_id]["text"]) == []


def test_the_last_line_alone_is_no_claim() -> None:
    """Without the frames the rule does not know whose import failed: it names no package as the one that needs the
    missing module or name. A name missing from a package module is still a fact (rule name-missing: the code expects
    another release of that package), said without naming who uses it."""
    for case in CASES.values():
        if case["rule"] not in ("missing-dependency", "shadowed-install", "release-pairing"):
            continue  # the pip rules read the line itself (the wheel's name)
        last = case["text"].strip().splitlines()[-1]
        got = [m for m in explain_text(last) if m.entry_id == case["expect"]]
        assert [m.groups.get("rule") for m in got] in ([], ["name-missing"]), case["id"]
        for m in got:
            assert "frame" not in m.groups and "its frame is not in the paste" in m.cause, case["id"]


def test_a_specific_entry_wins_over_the_rule() -> None:
    """mindspore._c_expression has its own entry (c-expression-missing): the rule yields to it."""
    text = (
        '  File "/root/mindspore/mindspore/__init__.py", line 17, in <module>\n'
        "    from ._c_expression import *\nModuleNotFoundError: No module named 'mindspore._c_expression'\n"
    )
    assert [m.entry_id for m in explain_text(text)] == ["c-expression-missing"]


def test_an_install_lacking_its_compiled_part() -> None:
    text = (
        '  File "/opt/conda/lib/python3.9/site-packages/torch/__init__.py", line 81, in <module>\n'
        "    from torch._C import *\nModuleNotFoundError: No module named 'torch._C'\n"
    )
    [m] = explain_text(text)
    assert m.groups["rule"] == "shadowed-install" and "an install" in m.title


def test_a_circular_import_is_not_a_pairing() -> None:
    text = (
        '  File "/e/lib/python3.9/site-packages/foo/bar.py", line 3, in <module>\n    import numpy\n'
        "AttributeError: partially initialized module 'numpy' has no attribute 'ndarray'\n"
    )
    assert "library-release-pairing" not in [m.entry_id for m in explain_text(text)]


def test_the_fast_log_scan_sees_the_frames(tmp_path: Path) -> None:
    """explain --log decodes only the lines around a literal: the frames before the exception are among them."""
    from msdoctor.explain import explain_file

    filler = "".join(f"[INFO] step {i} loss 1.0\n" for i in range(5000))
    for case in CASES.values():
        log = tmp_path / f"{case['id']}.log"
        log.write_text(filler + case["text"] + filler, encoding="utf-8")
        assert [m.groups.get("rule") for m in explain_file(log)] == [case["rule"]], case["id"]


LIBRARY_CASES = {c["id"]: c for c in DATA["library_case"]}


@pytest.mark.parametrize("case_id", sorted(LIBRARY_CASES))
def test_a_missing_library_names_who_ships_it(case_id: str) -> None:
    case = LIBRARY_CASES[case_id]
    [m] = [m for m in explain_text(case["text"]) if m.entry_id == "shared-library-missing"]
    assert case["owner"] in m.cause and case["fix"] in m.fix_for("/env/bin/python")


@pytest.mark.parametrize(
    "lib, owner",
    [
        ("libascend_hal.so", "driver"),
        ("libdrvdsmi_host.so", "driver"),
        ("libdcmi.so", "driver"),
        ("libascendcl.so", "CANN"),
        ("libascend_dump.so", "CANN"),
        ("libacl_op_compiler.so", "CANN"),
        ("libge_runner.so", "CANN"),
        ("libhccl.so", "CANN"),
        ("libruntime.so", "CANN"),
        ("libmsprofiler.so", "CANN"),
        ("libatb.so", "NNAL"),
        ("libasdops.so", "NNAL"),
        ("liblcal.so", "NNAL"),
        ("libcudart.so.11.0", "CUDA"),
        ("libcublas.so.10", "CUDA"),
        ("libcudnn.so.8", "cuDNN"),
        ("libstdc++.so.6", "GCC runtime"),
        ("libgomp.so.1", "GCC runtime"),
    ],
)
def test_who_ships_a_library_is_read_from_its_name(lib: str, owner: str) -> None:
    """The [[library]] table keys on the name's prefix (the product's naming), not on whole names."""
    [m] = explain_text(f"ImportError: {lib}: cannot open shared object file: No such file or directory")
    assert owner in m.cause, m.cause


def test_an_unknown_library_is_not_given_an_owner() -> None:
    [m] = explain_text("OSError: libfoo_bar.so.3: cannot open shared object file: No such file or directory")
    assert "not on the loader's path" in m.cause and "ldconfig -p | grep libfoo_bar" in m.fix


@pytest.mark.parametrize("mangle", ["ansi", "crlf", "rank-prefix", "nbsp"])
def test_the_rules_read_pastes_as_they_arrive(mangle: str) -> None:
    """Colour codes, CRLF, msrun/torchrun `[rank0]:` prefixes and non-breaking spaces leave the structure readable."""
    for case in CASES.values():
        lines = case["text"].strip("\n").split("\n")
        if mangle == "ansi":
            lines = [f"\x1b[31m{line}\x1b[0m" for line in lines]
        elif mangle == "rank-prefix":
            lines = [f"[rank0]: {line}" for line in lines]
        elif mangle == "nbsp":
            lines = [line.replace(" ", "\u00a0", 2) for line in lines]
        text = ("\r\n" if mangle == "crlf" else "\n").join(lines)
        got = [m.groups.get("rule") for m in explain_text(text)]
        assert got == [case["rule"]], (case["id"], mangle, got)


def test_the_import_machinery_frames_are_looked_past() -> None:
    """Python 3 prints importlib's own frames after the importing one: the importer still decides."""
    lines = CASES["pycircstat-64"]["text"].strip("\n").split("\n")
    frozen = [
        '  File "<frozen importlib._bootstrap>", line 1006, in _find_and_load_unlocked',
        '  File "/usr/lib/python3.10/importlib/__init__.py", line 126, in import_module',
        "    return _bootstrap._gcd_import(name[level:], package, level)",
    ]
    text = "\n".join(lines[:-1] + frozen + lines[-1:])
    [m] = explain_text(text)
    assert m.groups["rule"] == "missing-dependency" and "pycircstat needs decorator" in m.title


def test_the_fix_names_the_interpreter_of_the_frames(tmp_path: Path) -> None:
    """With no --python, the fix names the interpreter of the environment the raising frame lies in."""
    from helpers import run_msdoctor

    res = run_msdoctor("explain", CASES["llava-1794"]["text"], "--no-confirm", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "/home_data/home/geyx2023/.conda/envs/llava/bin/python3.10 -m pip show peft transformers" in res.stdout


def test_a_busy_device_without_evidence_keeps_the_general_answer() -> None:
    """-8005 with no `ls -l` / CapEff lines before it: the device rule makes no permission claim."""
    [m] = explain_text("npu-smi: dcmi module initialize failed. ret is -8005\n")
    assert m.entry_id == "dcmi-init-failed" and "rule" not in m.groups and "another container" in m.cause


def test_readable_device_nodes_are_no_permission_claim() -> None:
    text = (
        "CapEff: 0000000000000000\ncrw-rw-rw- 1 1000 1000 236, 0 Jan 1 /dev/davinci0\n"
        "npu-smi: dcmi module initialize failed. ret is -8005\n"
    )
    [m] = explain_text(text)
    assert "rule" not in m.groups


def test_an_alternation_side_that_did_not_match_is_not_a_name() -> None:
    """`module M has no attribute N` fills the pairing from M, not from the unmatched `cannot import name` side."""
    text = (
        '  File "/e/lib/python3.9/site-packages/foo/bar.py", line 3, in f\n    baz.qux()\n'
        "AttributeError: module 'baz' has no attribute 'qux'\n"
    )
    [m] = explain_text(text)
    assert "?" not in m.title and "foo and baz" in m.title


def test_an_undefined_symbol_nobody_owns_is_no_claim() -> None:
    assert [m.entry_id for m in explain_text("undefined symbol: _ZN7myspace3fooEv")] == []


def test_the_systems_own_runtime_keeps_the_general_text() -> None:
    """A system library directory's copy is the system's: the general text (the OS is too old) stands."""
    text = (
        "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by "
        "/home/zk/conda/envs/anylabeling/lib/python3.8/site-packages/matplotlib/_path.cpython-38-x86_64-linux-gnu.so)"
    )
    [m] = explain_text(text)
    assert m.entry_id == "glibc-too-old" and "rule" not in m.groups and "system's" in m.title


def test_a_generic_text_yields_to_the_rule_that_read_the_frames() -> None:
    """`cannot import name` from a MindSpore module raised in another package's file: the pairing rule names both;
    the same line with no frames keeps the general MindSpore text."""
    frame = '  File "/e/lib/python3.7/site-packages/mindcv/optim/adamw.py", line 7, in <module>\n    from x import y\n'
    last = "ImportError: cannot import name 'Rel' from 'mindspore._checkparam' (/e/mindspore/_checkparam.py)\n"
    assert [m.entry_id for m in explain_text(frame + last)] == ["library-release-pairing"]
    assert [m.entry_id for m in explain_text(last)] == ["api-skew"]


def test_a_file_named_like_the_module_it_imports() -> None:
    """The frames show the script itself is torch.py (a constructed excerpt of the situation sahi-402 settled on)."""
    text = (
        '  File "/home/k/sahi/sahi/utils/torch.py", line 5, in <module>\n    import torch\n'
        '  File "/home/k/sahi/sahi/utils/torch.py", line 7, in <module>\n    from torch import stack\n'
        "ImportError: cannot import name 'stack' from partially initialized module 'torch' (most likely due to a "
        "circular import)\n"
    )
    [m] = explain_text(text)
    assert m.groups["rule"] == "file-shadows-module" and "/home/k/sahi/sahi/utils/torch.py" in m.title


def test_a_checkout_named_as_the_package_shadows_it() -> None:
    text = (
        '  File "/work/vllm-main/vllm/__init__.py", line 3, in <module>\n    from vllm import cuda_utils\n'
        "ImportError: cannot import name 'cuda_utils' from partially initialized module 'vllm' (most likely due "
        "to a circular import)\n"
    )
    [m] = explain_text(text)
    assert m.groups["rule"] == "shadowed-install" and "outside site-packages" in m.title


def test_a_bound_port_outside_mindspore_keeps_the_general_text() -> None:
    """torch's c10d store on a bound port (https://github.com/deepspeedai/DeepSpeed/issues/3916): no MindSpore
    scheduler line, so the general answer with the port it names."""
    text = (
        "RuntimeError: The server socket has failed to listen on any local network address. The server socket has "
        "failed to bind to [::]:29600 (errno: 98 - Address already in use). The server socket has failed to bind "
        "to 0.0.0.0:29600 (errno: 98 - Address already in use).\n"
    )
    [m] = explain_text(text)
    assert m.groups["rule"] == "port-bound" and "port 29600" in m.title and "MS_SCHED" not in m.fix


def test_a_printed_version_that_pip_lists_is_no_claim() -> None:
    """The opencv-14495 paste with the versions in agreement (constructed): nothing shadows, no claim."""
    text = "import cv2\ncv2.__version__\n\n'4.0.0.21'\n\npip freeze:\nopencv-python==4.0.0.21\n"
    assert explain_text(text) == []
    assert explain_text("print(torch.__version__)\n2.1.0\n") == []  # no pip list to compare with


def test_one_variant_named_is_no_claim() -> None:
    text = "I installed opencv-contrib-python==4.5.1\nAttributeError: module 'cv2' has no attribute 'xfeatures2d'\n"
    assert explain_text(text) == []


def test_a_missing_cann_library_loaded_by_torch_npu() -> None:
    """X-Oscar-4 (tests/data/explain/real_cases.toml): torch_npu names itself (PTA); the answer speaks of torch_npu and
    of a host without NPUs, not of MindSpore; the same line alone keeps the MindSpore text."""
    import tomllib

    real = tomllib.loads((Path(__file__).parent / "data" / "explain" / "real_cases.toml").read_text(encoding="utf-8"))
    text = next(c["text"] for c in real["case"] if c["id"] == "X-Oscar-4")
    [m] = explain_text(text)
    said = m.cause + m.fix
    assert "torch_npu" in said and "plain torch" in said and "MindSpore" not in said
    [alone] = explain_text(text.strip().splitlines()[0])
    assert "torch_npu" not in alone.cause + alone.fix


def test_an_operator_check_not_called_by_mindspore_is_no_claim() -> None:
    """The mindocr-595 error with the frames of a user's own operator script (constructed): who built the call for
    which CANN is not known, no claim."""
    text = (
        '  File "/home/u/my_op/build_op.py", line 40, in <module>\n    compile_op()\n'
        "RuntimeError: ({'errCode': 'E80003', 'op_name': 'gather_nd', 'param_name': 'kernel_name', 'param_type': "
        "'str', 'actual_type': 'bool'}, \"In op[gather_nd], ...\")\n"
    )
    assert explain_text(text) == []


def test_versions_equal_as_pep440_are_the_same() -> None:
    """`2.0` printed, `2.0.0` listed: one release (PEP 440 normalisation), no claim (constructed)."""
    assert explain_text("import yaml\nyaml.__version__\n'6.0'\npip freeze\nPyYAML==6.0.0\n") == []
    [m] = explain_text("import yaml\nyaml.__version__\n'5.1'\npip freeze\nPyYAML==6.0.0\n")
    assert m.groups["rule"] == "version-shadow"


# -- rules written on 2026-12-04 from the 2026-12-04 hold-out (tests/data/explain/holdout_2026-12-04.toml) ------------
HOLDOUT_1204 = {
    c["id"]: c
    for c in tomllib.loads(
        (Path(__file__).parent / "data" / "explain" / "holdout_2026-12-04.toml").read_text(encoding="utf-8")
    )["case"]
}


def _first(text: str) -> Any:
    got = explain_text(text)
    assert got, text
    return got[0]


def _said(m: Any) -> str:
    return f"{m.title}\n{m.cause}\n{m.fix_for('/env/bin/python')}"


def test_a_glibcxx_error_naming_no_copy_does_not_blame_the_system() -> None:
    """Open3D-5531: `libstdc++.so.6: version GLIBCXX_3.4.30 not found` with no path: which copy was loaded is not
    shown, so neither the system's nor the environment's is blamed; both are named, with how to tell them apart."""
    m = _first(HOLDOUT_1204["Open3D-5531"]["text"])
    assert (m.entry_id, m.groups.get("rule")) == ("glibc-too-old", "runtime-unnamed")
    assert "system's GLIBCXX is older" not in m.title and "does not show which copy" in m.title
    assert "environment's own lib/libstdc++.so.6" in m.cause and "strings $CONDA_PREFIX/lib/libstdc++.so.6" in m.fix
    # glibc itself is always the system's: the general text stands
    g = _first("ImportError: libm.so.6: version `GLIBC_2.27' not found (required by x.so)")
    assert g.groups.get("rule") is None and "system" in g.title


def test_numpy_s_c_api_failing_without_numpy_2_is_not_the_numpy_2_break() -> None:
    m = _first(HOLDOUT_1204["pytorch-2188"]["text"])
    assert (m.entry_id, m.groups.get("rule")) == ("numpy2-abi", "numpy-missing")
    assert "NumPy 2 is installed" not in m.title and "/env/bin/python -m pip show numpy" in m.fix_for("/env/bin/python")
    # the same line after NumPy 2's own banner is the ABI break: the general text
    banner = (
        "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.2.6 as it may crash.\n"
        "ImportError: numpy.core.multiarray failed to import\n"
    )
    assert [(x.entry_id, x.groups.get("rule")) for x in explain_text(banner)] == [("numpy2-abi", None)]
    after = "ImportError: numpy.core.multiarray failed to import\nnumpy 2.1.3\n"
    assert explain_text(after)[0].groups.get("rule") is None


def test_a_frame_that_only_forwards_its_arguments_is_not_the_caller() -> None:
    """PaddleNLP-8752: paddlenlp's decorator frame calls `init_func(self, *args, **kwargs)`; the call with
    num_classes is the user's train_funsd.py, where the signature rule makes no claim."""
    text = HOLDOUT_1204["PaddleNLP-8752"]["text"]
    assert explain_text(text) == []
    # the same forwarding frame under a package's own caller: that package is the one named
    moved = text.replace('File "train_funsd.py"', 'File "/env/lib/python3.8/site-packages/layoutx/train_funsd.py"')
    m = _first(moved)
    assert m.groups.get("rule") == "release-pairing" and m.title.startswith("layoutx calls")


@pytest.mark.parametrize(
    "case_id,who", [("KnowLM-135", "accelerate"), ("Qwen2.5-Omni-87", "torch"), ("ascend-pytorch-53", "torch_npu")]
)
def test_a_name_missing_from_a_package_module_is_said_without_naming_its_user(case_id: str, who: str) -> None:
    m = _first(HOLDOUT_1204[case_id]["text"])
    assert (m.entry_id, m.groups.get("rule")) == ("library-release-pairing", "name-missing")
    assert f"another release of {who}" in m.cause and f"-m pip show {who}" in m.fix_for("/env/bin/python")
    assert "frame" not in m.groups  # no package is named as the one that uses it


def test_a_name_missing_from_a_plain_or_local_module_is_no_claim() -> None:
    """crowdcount-mcnn-35's `module 'network'` may be the user's own file; a path outside site-packages is the user's
    module or checkout; MindSpore's family keeps its own entry (api-skew)."""
    assert explain_text(HOLDOUT_1204["crowdcount-mcnn-35"]["text"]) == []
    assert explain_text("ImportError: cannot import name 'x' from 'mypkg.utils' (/home/u/proj/mypkg/utils.py)") == []
    assert [m.entry_id for m in explain_text(HOLDOUT_1204["mindnlp-1522"]["text"])] == ["api-skew"]


def test_an_import_from_an_unknown_location_is_a_namespace_package() -> None:
    m = _first(HOLDOUT_1204["LlamaFactory-6261"]["text"])
    assert m.groups.get("rule") == "namespace-package" and "not the installed vllm" in m.title
    # a package's own frame does not make it a pairing: the module found is no installed package at all
    text = (
        '  File "/env/lib/python3.10/site-packages/peft/utils/other.py", line 24, in <module>\n'
        "    from accelerate.utils import is_npu_available\n"
        "ImportError: cannot import name 'is_npu_available' from 'accelerate.utils' (unknown location)\n"
    )
    assert _first(text).groups.get("rule") == "namespace-package"


@pytest.mark.parametrize(
    "case_id,words",
    [
        ("mlc-llm-781", ["macOS 13.0 or later on an Apple silicon Mac (arm64)"]),
        (
            "libwally-core-311",
            ["macOS 10.9 or later on an Intel Mac (x86_64)", "an x86_64 wheel on an Apple silicon Mac"],
        ),
    ],
)
def test_a_macos_wheel_tag_names_the_oldest_macos_and_the_kind_of_mac(case_id: str, words: list[str]) -> None:
    m = _first(HOLDOUT_1204[case_id]["text"])
    for word in words:
        assert word in _said(m), (word, _said(m))


def test_a_cuda_library_of_another_cuda_than_the_stated_one() -> None:
    """LLMDet-32: libcudart.so.10.1 missing on a system the paste says runs CUDA 12.1: the package was built for
    CUDA 10.1. Without a stated CUDA, or with the same major, the general text stands."""
    m = _first(HOLDOUT_1204["LLMDet-32"]["text"])
    assert "built for CUDA 10.1" in m.cause and "build for CUDA 12.1" in m.fix_for("/env/bin/python")
    assert "The paste shows CUDA" not in _first(HOLDOUT_1204["xinference-1286"]["text"]).cause
    same = (
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\nCUDA Version: 12.4\n"
    )
    assert "The paste shows CUDA" not in _first(same).cause


def test_a_python_inside_the_requires_python_range_is_no_claim() -> None:
    """pip prints the line only for a Python outside the range; one inside it, or a range that does not parse, is not
    that line: no claim (and no guess at which side of the range the Python is on)."""
    assert explain_text("ERROR: Package 'x' requires a different Python: 3.9.1 not in '>=3.9'") == []
    assert explain_text("ERROR: Package 'x' requires a different Python: 3.9.1 not in '>=3.9,,'") == []
    m = explain_text("ERROR: Package 'x' requires a different Python: 3.9.1 not in '!=3.9.1'")[0]
    assert "outside that range" in m.cause and "older" not in m.cause and "newer" not in m.cause


# -- name-removed and module-shipper: the data (compat_matrix/modules.toml) and the near misses ------------------------
def _without(text: str, rule: str) -> list[str]:
    return [m.entry_id for m in explain_text(text) if m.groups.get("rule") == rule]


def test_a_removed_name_is_no_claim_where_the_paste_shows_a_release_that_still_has_it() -> None:
    """The real ASFFNet512 traceback with the numpy the reporter went back to (1.23.5, before the 1.24 that removed
    np.float) stated in it: the name was not removed there, so the rule stays silent."""
    text = CASES["ASFFNet512-8"]["text"] + "\n$ pip list | grep numpy\nnumpy 1.23.5\n"
    assert _without(text, "name-removed") == []
    py310 = (
        '  File "/usr/lib/python3.10/site-packages/foo/setup.py", line 3, in <module>\n    import distutils.core\n'
        "ModuleNotFoundError: No module named 'distutils'\n"
    )
    got = explain_text(py310)  # Python 3.10 still had distutils: the Debian split, not the 3.12 removal
    assert [m.groups.get("rule") for m in got] == ["module-shipper"] and "python3-distutils" in got[0].fix
    assert "pip install distutils" not in got[0].fix_for("/env/bin/python")


def test_names_the_data_does_not_list_are_no_claim() -> None:
    assert _without("AttributeError: module 'numpy' has no attribute 'float32'\n", "name-removed") == []
    assert _without("AttributeError: `np.float32` removed\n", "name-removed") == []  # not a name NumPy removed
    text = (
        '  File "/usr/local/lib/python3.10/site-packages/cffi/api.py", line 48, in __init__\n'
        "    import _cffi_backend as backend\nModuleNotFoundError: No module named '_cffi_backend'\n"
    )
    assert _without(text, "module-shipper") == [] and _without(text, "name-removed") == []


def test_a_standard_library_module_is_never_a_dependency_to_pip_install() -> None:
    text = (
        '  File "/env/lib/python3.11/site-packages/foo/__init__.py", line 3, in <module>\n    import readline\n'
        "ModuleNotFoundError: No module named 'readline'\n"
    )
    assert _without(text, "missing-dependency") == []


def test_the_removals_are_true_of_the_real_interpreter_and_numpy() -> None:
    """Every [[removed]] row checked against what runs here: a name or module removed in a release up to this Python
    (or this numpy) is absent; one removed in a later release is still there, so the row names a real name."""
    import importlib
    import importlib.util
    import sys
    import warnings

    import numpy

    from msdoctor.explain.owners import module_facts

    def version(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".")[:2])

    runs = {"Python": sys.version_info[:2], "numpy": version(numpy.__version__)}
    checked = 0
    for r in module_facts().removed:
        if r.dist not in runs:
            continue
        gone = runs[r.dist] >= version(r.release)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if r.names:
                mod = importlib.import_module(r.module)
                for name in r.names:
                    assert hasattr(mod, name) is not gone, (r.module, name, r.release)
                    checked += 1
            else:
                assert (importlib.util.find_spec(r.module) is None) is gone, (r.module, r.release)
                checked += 1
    assert checked > 50


def test_the_module_facts_are_validated() -> None:
    from msdoctor.explain.owners import ModuleFactsError, parse_module_facts

    good = (
        'kind = "module-facts"\n[[removed]]\nmodule = "m"\nnames = ["n"]\ndist = "d"\nrelease = "2.0"\n'
        'instead = "x"\nsource = "https://example.org/notes"\n'
    )
    assert parse_module_facts(good).removed[0].names == ("n",)
    with pytest.raises(ModuleFactsError, match=r"\[\[removed\]\] #1 \(m\).*source"):
        parse_module_facts(good.replace("https://example.org/notes", "somewhere"))
    with pytest.raises(ModuleFactsError, match="release"):
        parse_module_facts(good.replace('"2.0"', '"two"'))


# -- acl-code: a return code of CANN's runtime -------------------------------------------------------------------------
def test_an_acl_code_the_data_does_not_list_or_one_next_to_a_cann_code_is_no_claim() -> None:
    real = CASES["vllm-ascend-7676"]["text"]
    assert _without(real.replace("507011", "507999"), "acl-code") == []  # not a code CANN's runtime lists
    # with CANN's own code printed after it, that code's entry and inner lines answer (the category is said once)
    with_code = real + "E39007: Starting a subprocess on the device timed out.\n"
    assert [m.entry_id for m in explain_text(with_code)] == ["cann-error-code"]
    # a listed code with nothing of Ascend's in the paste (no NPU call, no acl/CANN/npu name) is someone else's code
    assert _without("upload failed, error code: 507011 (gateway timeout)\n", "acl-code") == []
    assert _without("aclrtSynchronizeStream failed, error code: 507011\n", "acl-code") == ["acl-runtime-code"]


def test_the_acl_codes_are_validated() -> None:
    from msdoctor.explain.owners import ModuleFactsError, acl_codes, parse_acl_codes

    codes = acl_codes()
    assert {c.kind for c in codes.values()} == {"task-exception", "timeout", "internal", "memory", "setup"}
    assert all(str(c.code)[0] in "12345" and len(str(c.code)) == 6 for c in codes.values())
    bad = (
        'kind = "acl-error-codes"\nsource = "https://example.org"\n[[kinds]]\nid = "a"\nwhat = "w"\ncollect = "c"\n'
        '[[code]]\ncode = 507001\nkind = "b"\nmeaning = "m"\n'
    )
    with pytest.raises(ModuleFactsError, match=r"\[\[code\]\] #1 \(507001\)"):
        parse_acl_codes(bad)


def test_a_plain_release_pin_is_not_called_another_index_build() -> None:
    """The real OneTrainer lines with a plain release pin: pip's general answer, nothing about a project's own index."""
    text = CASES["OneTrainer-138"]["text"].replace("2.1.2+cu118", "2.9.9")
    [m] = explain_text(text)
    assert m.groups["rule"] == "no-distribution" and "own index" not in m.cause + m.fix
    # a date-like number that is not a .dev nightly (a post release) is not one either
    [p] = explain_text("ERROR: No matching distribution found for torch-npu==2.1.0.post20240101\n")
    assert "nightly" not in p.cause


def test_a_bare_name_missing_from_a_well_known_package_is_said_and_from_another_module_is_not() -> None:
    """`cannot import name N from 'transformers'` with no frame or path: transformers is a package on PyPI, so the
    installed release lacks N (rule name-missing); the same line for a module nobody publishes under that name may be
    the user's own file: no claim."""
    [m] = explain_text("ImportError: cannot import name 'EncoderDecoderCache' from 'transformers'\n")
    assert m.groups["rule"] == "name-missing" and "installed transformers" in m.title
    assert explain_text("ImportError: cannot import name 'EncoderDecoderCache' from 'mycache'\n") == []


def test_setuptools_outside_a_build_environment_is_not_a_build_isolation_claim() -> None:
    """The real torch-mlir frames moved out of pip's build environment (an ordinary site-packages): not a build."""
    text = CASES["torch-mlir-3258"]["text"].replace("/tmp/pip-build-env-j1c2adup/overlay", "/opt/venv")
    assert _without(text, "build-isolation") == []
    # the import ran in code exec'd from a string (a setup.py): setuptools, whose frame is before it, is not the
    # package that needs torch
    assert [m for m in explain_text(text) if "setuptools" in m.title] == []


def test_an_acl_code_with_numpy_2_in_the_paste_names_numpy_first() -> None:
    """The real 507000 line of vllm-ascend-1653 with a NumPy 2 install line before it: numpy<2 comes first; with
    NumPy 1.26 instead, nothing about NumPy."""
    base = CASES["vllm-ascend-1653"]["text"]
    [m] = explain_text("Successfully installed numpy-2.0.2\n" + base)
    assert "numpy 2.0.2" in m.cause and 'pip install "numpy<2"' in m.fix_for("/env/bin/python")
    [n] = explain_text("Successfully installed numpy-1.26.4\n" + base)
    assert "numpy<2" not in n.fix and "NumPy" not in n.cause


def test_no_mindspore_wheel_says_what_the_matrix_knows_of_the_release() -> None:
    """The real ConsistentID-5 lines with a release the compat matrix lists (2.3.0: Python 3.8 to 3.10, not on PyPI)
    and a Python the paste states; a release the matrix does not list adds nothing."""
    text = CASES_REAL["consistentid-5"]["text"].replace("2.2.0", "2.3.0")
    [m] = explain_text("Python 3.11.4\n" + text)
    assert m.entry_id == "mindspore-no-distribution"
    assert "Python 3.8, 3.9, 3.10" in m.cause and "Python 3.11, which is not one of them" in m.cause
    assert "not on PyPI" in m.cause
    [n] = explain_text(CASES_REAL["consistentid-5"]["text"])
    assert "compat_matrix lists" not in n.cause and "{ms_facts}" not in n.cause


CASES_REAL = {
    c["id"]: c
    for c in tomllib.loads(
        (Path(__file__).parent / "data" / "explain" / "real_cases.toml").read_text(encoding="utf-8")
    )["case"]
}


def test_an_old_pip_on_a_new_python_is_reinstalled_not_upgraded_with_itself() -> None:
    """The real pykrx frames moved into pip's vendored pkg_resources (pip 22.3 on Python 3.12): pip cannot upgrade
    itself there, so the fix is ensurepip."""
    text = CASES["pykrx-219"]["text"].replace(
        "site-packages/pkg_resources/", "site-packages/pip/_vendor/pkg_resources/"
    )
    [m] = explain_text(text)
    assert m.groups["rule"] == "name-removed" and "-m ensurepip --upgrade" in m.fix_for("/env/bin/python")
