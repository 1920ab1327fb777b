"""The general rules over a traceback's structure (msdoctor/explain/rules.py, issue 24 section 3), on real reports
(tests/data/explain/rule_cases.toml): the frame that raised, its owner, and the module the error names decide the
answer; where they do not tell, no claim."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from msdoctor.explain import explain_text

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
    if case["rule"] not in ("port-bound", "device-permission", "symbol-owner", "runtime-copy", "scheduler-port", "two-interpreters"):  # a fix that runs Python names the target interpreter
        assert "/env/bin/python " in fix
    assert "rules.py fills this" not in m.cause + m.fix  # the placeholder text never reaches the user


@pytest.mark.parametrize("case_id", sorted(NEGATIVES))
def test_no_claim_where_the_structure_does_not_tell(case_id: str) -> None:
    assert explain_text(NEGATIVES[case_id]["text"]) == []


def test_the_last_line_alone_is_no_claim() -> None:
    """Without the frames the rule does not know whose import failed: it says nothing."""
    for case in CASES.values():
        if case["rule"] not in ("missing-dependency", "shadowed-install", "release-pairing"):
            continue  # the pip rules read the line itself (the wheel's name)
        last = case["text"].strip().splitlines()[-1]
        assert [m for m in explain_text(last) if m.entry_id == case["expect"]] == []


def test_a_specific_entry_wins_over_the_rule() -> None:
    """mindspore._c_expression has its own entry (c-expression-missing): the rule yields to it."""
    text = ('  File "/root/mindspore/mindspore/__init__.py", line 17, in <module>\n'
            "    from ._c_expression import *\nModuleNotFoundError: No module named 'mindspore._c_expression'\n")
    assert [m.entry_id for m in explain_text(text)] == ["c-expression-missing"]


def test_an_install_lacking_its_compiled_part() -> None:
    text = ('  File "/opt/conda/lib/python3.9/site-packages/torch/__init__.py", line 81, in <module>\n'
            "    from torch._C import *\nModuleNotFoundError: No module named 'torch._C'\n")
    [m] = explain_text(text)
    assert m.groups["rule"] == "shadowed-install" and "an install" in m.title


def test_a_circular_import_is_not_a_pairing() -> None:
    text = ('  File "/e/lib/python3.9/site-packages/foo/bar.py", line 3, in <module>\n    import numpy\n'
            "AttributeError: partially initialized module 'numpy' has no attribute 'ndarray'\n")
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


@pytest.mark.parametrize("lib, owner", [
    ("libascend_hal.so", "driver"), ("libdrvdsmi_host.so", "driver"), ("libdcmi.so", "driver"),
    ("libascendcl.so", "CANN"), ("libascend_dump.so", "CANN"), ("libacl_op_compiler.so", "CANN"),
    ("libge_runner.so", "CANN"), ("libhccl.so", "CANN"), ("libruntime.so", "CANN"), ("libmsprofiler.so", "CANN"),
    ("libatb.so", "NNAL"), ("libasdops.so", "NNAL"), ("liblcal.so", "NNAL"),
    ("libcudart.so.11.0", "CUDA"), ("libcublas.so.10", "CUDA"), ("libcudnn.so.8", "cuDNN"),
    ("libstdc++.so.6", "GCC runtime"), ("libgomp.so.1", "GCC runtime"),
])
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
    frozen = ['  File "<frozen importlib._bootstrap>", line 1006, in _find_and_load_unlocked',
              '  File "/usr/lib/python3.10/importlib/__init__.py", line 126, in import_module',
              "    return _bootstrap._gcd_import(name[level:], package, level)"]
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
    text = ("CapEff: 0000000000000000\ncrw-rw-rw- 1 1000 1000 236, 0 Jan 1 /dev/davinci0\n"
            "npu-smi: dcmi module initialize failed. ret is -8005\n")
    [m] = explain_text(text)
    assert "rule" not in m.groups


def test_an_alternation_side_that_did_not_match_is_not_a_name() -> None:
    """`module M has no attribute N` fills the pairing from M, not from the unmatched `cannot import name` side."""
    text = ('  File "/e/lib/python3.9/site-packages/foo/bar.py", line 3, in f\n    baz.qux()\n'
            "AttributeError: module 'baz' has no attribute 'qux'\n")
    [m] = explain_text(text)
    assert "?" not in m.title and "foo and baz" in m.title


def test_an_undefined_symbol_nobody_owns_is_no_claim() -> None:
    assert [m.entry_id for m in explain_text("undefined symbol: _ZN7myspace3fooEv")] == []


def test_the_systems_own_runtime_keeps_the_general_text() -> None:
    """A system library directory's copy is the system's: the general text (the OS is too old) stands."""
    text = ("ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.29' not found (required by "
            "/home/zk/conda/envs/anylabeling/lib/python3.8/site-packages/matplotlib/_path.cpython-38-x86_64-linux-gnu.so)")
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
    text = ('  File "/home/k/sahi/sahi/utils/torch.py", line 5, in <module>\n    import torch\n'
            '  File "/home/k/sahi/sahi/utils/torch.py", line 7, in <module>\n    from torch import stack\n'
            "ImportError: cannot import name 'stack' from partially initialized module 'torch' (most likely due to a "
            "circular import)\n")
    [m] = explain_text(text)
    assert m.groups["rule"] == "file-shadows-module" and "/home/k/sahi/sahi/utils/torch.py" in m.title


def test_a_checkout_named_as_the_package_shadows_it() -> None:
    text = ('  File "/work/vllm-main/vllm/__init__.py", line 3, in <module>\n    from vllm import cuda_utils\n'
            "ImportError: cannot import name 'cuda_utils' from partially initialized module 'vllm' (most likely due "
            "to a circular import)\n")
    [m] = explain_text(text)
    assert m.groups["rule"] == "shadowed-install" and "outside site-packages" in m.title


def test_a_bound_port_outside_mindspore_keeps_the_general_text() -> None:
    """torch's c10d store on a bound port (https://github.com/deepspeedai/DeepSpeed/issues/3916): no MindSpore
    scheduler line, so the general answer with the port it names."""
    text = ("RuntimeError: The server socket has failed to listen on any local network address. The server socket has "
            "failed to bind to [::]:29600 (errno: 98 - Address already in use). The server socket has failed to bind "
            "to 0.0.0.0:29600 (errno: 98 - Address already in use).\n")
    [m] = explain_text(text)
    assert m.groups["rule"] == "port-bound" and "port 29600" in m.title and "MS_SCHED" not in m.fix


def test_a_printed_version_that_pip_lists_is_no_claim() -> None:
    """The opencv-14495 paste with the versions in agreement (constructed): nothing shadows, no claim."""
    text = "import cv2\ncv2.__version__\n\n'4.0.0.21'\n\npip freeze:\nopencv-python==4.0.0.21\n"
    assert explain_text(text) == []
    assert explain_text("print(torch.__version__)\n2.1.0\n") == []  # no pip list to compare with


def test_one_variant_named_is_no_claim() -> None:
    text = ("I installed opencv-contrib-python==4.5.1\nAttributeError: module 'cv2' has no attribute 'xfeatures2d'\n")
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
    text = ('  File "/home/u/my_op/build_op.py", line 40, in <module>\n    compile_op()\n'
            "RuntimeError: ({'errCode': 'E80003', 'op_name': 'gather_nd', 'param_name': 'kernel_name', 'param_type': "
            "'str', 'actual_type': 'bool'}, \"In op[gather_nd], ...\")\n")
    assert explain_text(text) == []


def test_versions_equal_as_pep440_are_the_same() -> None:
    """`2.0` printed, `2.0.0` listed: one release (PEP 440 normalisation), no claim (constructed)."""
    assert explain_text("import yaml\nyaml.__version__\n'6.0'\npip freeze\nPyYAML==6.0.0\n") == []
    [m] = explain_text("import yaml\nyaml.__version__\n'5.1'\npip freeze\nPyYAML==6.0.0\n")
    assert m.groups["rule"] == "version-shadow"
