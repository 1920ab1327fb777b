"""The environment rules (msdoctor/explain/rules/env.py) on real texts they must not answer (the [[near]] cases of
tests/data/explain/rule_cases.toml: another entry, or none, answers them), and the structure each rule reads: the
numbers CANN states, a pasted rank table, the host pip names, the frame of a system command. The real cases each rule
must answer are the [[case]] entries of the same file (tests/test_explain_rules.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from msdoctor.explain import explain_text, load_catalogue
from msdoctor.explain.catalogue import ENV_LOOKUPS
from msdoctor.explain.rules.env import CLAIMS

DATA = tomllib.loads((Path(__file__).parent / "data" / "explain" / "rule_cases.toml").read_text(encoding="utf-8"))
NEAR = {c["id"]: c for c in DATA["near"]}


@pytest.mark.parametrize("case_id", sorted(NEAR))
def test_a_near_miss_is_not_claimed_by_the_rule(case_id: str) -> None:
    case = NEAR[case_id]
    assert case["source"].startswith("https://") and case["settled"].strip()
    got = [m.entry_id for m in explain_text(case["text"])]
    assert case["not_entry"] not in got, (case_id, got)


def test_every_env_lookup_has_an_entry_and_a_real_case() -> None:
    entries = {e.lookup: e.id for e in load_catalogue() if e.lookup in ENV_LOOKUPS}
    assert set(entries) == set(ENV_LOOKUPS) == set(CLAIMS)
    expected = {c["expect"] for c in DATA["case"]} | {SET_E_CASES[i]["entry"] for i in SET_E}
    assert set(entries.values()) <= expected


def test_the_device_id_is_read_against_the_range_cann_states() -> None:
    line = "EE1001: The argument is invalid.Reason: Set device failed, invalid device, set device={d}, valid device range is [0, {n})"
    [m] = [m for m in explain_text(line.format(d=3, n=2)) if m.entry_id == "device-id-out-of-range"]
    assert "device 3" in m.title and "0 to 1" in m.title
    # inside the range CANN failed for another reason: no claim, the generic code answer stands
    assert [m.entry_id for m in explain_text(line.format(d=1, n=2))] == ["cann-error-code"]


def test_mindspore_s_device_count_line_comes_before_its_runtime_headline() -> None:
    """MindSpore's `Ascend kernel runtime initialization failed ... The details refer to 'Ascend Error Message'`
    (a headline entry) yields first place to the rule that read the detail under it: `Got device count[N] and device
    id[D]` (the text of MindSpore's distributed parallel FAQ, set F). An id inside the count makes no claim; a plain
    catalogue entry matching the detail does not outrank the headline, while the device-memory rule, which reads the
    free and total figures under it, does (set E's occupied card)."""
    text = (
        "RuntimeError: Ascend kernel runtime initialization failed, device id: {d}. The details refer to 'Ascend "
        "Error Message'.\n-Framework Error Message: (For framework developers)\n"
        "Call aclrtSetDevice failed, ret[107001]. Got device count[8] and device id[{d}], please check if device "
        "id is valid."
    )
    got = explain_text(text.format(d=9))
    assert [m.entry_id for m in got] == ["device-id-out-of-range", "ascend-runtime-init-failed"]
    assert "device 9" in got[0].title and "hostname" in got[0].cause and "hostnamectl" in got[0].fix
    assert [m.entry_id for m in explain_text(text.format(d=3))] == ["ascend-runtime-init-failed"]


def test_a_rank_table_without_a_duplicate_names_no_device_id() -> None:
    text = (
        "EI0004: The ranktable is invalid,Reason:[The ranktable config devId is inconsistent with the local devId.]. "
        '[{"server_count":"1","server_list":[{"device":[{"device_id":"0","rank_id":"0"},{"device_id":"1","rank_id":"1"}]}]}]'
    )
    [m] = explain_text(text)
    assert m.entry_id == "hccl-ranktable-invalid" and "twice" not in m.title and "devId is inconsistent" in m.cause


def test_the_pip_host_is_read_from_the_line() -> None:
    text = (
        "WARNING: Retrying (Retry(total=4)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: "
        "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self signed certificate in certificate chain "
        "(_ssl.c:1108)'))': /simple/mindspore/ HTTPSConnectionPool(host='pypi.tuna.tsinghua.edu.cn', port=443)"
    )
    [m] = explain_text(text)
    fix = m.fix_for("/env/bin/python")
    assert "--trusted-host pypi.tuna.tsinghua.edu.cn" in fix and "self signed certificate" in m.cause


def test_a_name_not_every_mindspore_release_has_stays_a_release_pairing() -> None:
    got = [m.entry_id for m in explain_text("ImportError: cannot import name 'mint' from 'mindspore'")]
    assert got == ["api-skew"]
    [m] = explain_text("ImportError: cannot import name 'Tensor' from 'mindspore' (/home/u/work/mindspore/__init__.py)")
    assert m.entry_id == "mindspore-incomplete-install" and "/home/u/work/mindspore" in m.cause
    assert m.cause.index("directory named mindspore") < m.cause.index("more than one MindSpore build")


def test_a_system_command_is_read_from_its_frame() -> None:
    frame = "  File \"{path}\", line 57, in <module>\n    from dnf.cli import main\nModuleNotFoundError: No module named 'dnf'"
    [m] = explain_text(frame.format(path="/usr/bin/yum"))
    assert m.entry_id == "system-tool-python-changed" and "env -u LD_LIBRARY_PATH" in m.fix_for("python")
    assert "system-tool-python-changed" not in [m.entry_id for m in explain_text(frame.format(path="/home/u/yum.py"))]


#: the set E case (tests/data/explain/holdout_2026-12-05.toml, a vendor FAQ entry) each rule was written from -> rule
SET_E = {
    "ms-faq-install-cpu-gpu-overwrite": "mindspore-incomplete",
    "ms-faq-shadowed-package-dir": "mindspore-incomplete",
    "mindspeed-mm-faq-no-module-acl": "cann-python-path",
    "ms-tut-cann-ee1001-device-id": "device-out-of-range",
    "ms-faq-dist-cuda-visible-devices-short": "device-out-of-range",
    "ms-tut-cann-ei0004-ranktable": "ranktable-invalid",
    "ms-tut-cann-ei0005-args-differ": "ranks-disagree",
    "ms-faq-dist-init-without-launcher": "no-launcher",
    "ms-faq-dist-gpu-collective-load": "collective-libs",
    "ms-faq-dist-nccl-socket-ifname": "network-interface",
    "ms-faq-dist-openmpi-ucx-nic": "network-interface",
    "mindsdk-faq-yum-no-dnf": "system-python-changed",
    "mindsdk-faq-yum-libssl": "loader-other-copy",
    "ms-faq-ld-warning-libmindspore-needs": "linker-needed",
    "ms-faq-install-ssl-verify": "tls-untrusted",
    "ms-faq-install-proxyerror": "proxy-unreachable",
    "ms-faq-install-psutil-wrong-arch": "wrong-architecture",
    "ms-faq-install-pillow-libjpeg": "pillow-headers",
}
SET_E_CASES = {
    c["id"]: c
    for c in tomllib.loads(
        (Path(__file__).parent / "data" / "explain" / "holdout_2026-12-05.toml").read_text(encoding="utf-8")
    )["case"]
}


@pytest.mark.parametrize("case_id", sorted(SET_E))
def test_the_set_e_case_a_rule_was_written_from_gets_that_rule(case_id: str) -> None:
    case = SET_E_CASES[case_id]
    [m] = explain_text(case["text"])
    assert m.entry_id == case["entry"] and m.groups.get("rule") == SET_E[case_id]
    fix = m.fix_for("/env/bin/python")
    assert "Unverified" in fix and "rules/env.py fills this" not in m.cause + fix
    assert case["verdict"] == "right" and "no longer unseen" in case["note"]


def test_an_unlimited_process_limit_is_not_blamed() -> None:
    # OpenBLAS's lines from https://github.com/occlum/occlum/issues/1564 (inside an SGX library OS): it prints the
    # RLIMIT_NPROC it saw, -1 (unlimited), so the answer must not say the user's ulimit -u refused the thread
    text = (
        "OpenBLAS blas_thread_init: pthread_create failed for thread 71 of 104: Resource temporarily unavailable\n"
        "OpenBLAS blas_thread_init: RLIMIT_NPROC -1 current, -1 max\n"
    )
    [m] = explain_text(text)
    assert m.entry_id == "thread-limit-reached"
    assert "unlimited (-1)" in m.cause and "not what refused it" in m.cause
    # the same failure under a limit it states: the limit is named
    [m] = explain_text(text.replace("-1 current, -1 max", "4096 current, 513046 max"))
    assert "RLIMIT_NPROC is 4096" in m.cause and "not what refused it" not in m.cause


def test_the_numpy_size_check_reads_the_direction() -> None:
    # Cython raises only when the installed struct is smaller than the headers' (built against a newer NumPy): the
    # reverse is a warning that is no claim (https://github.com/numpy/numpy/issues/15748), whatever prefix it has
    line = "ValueError: numpy.ndarray size changed, may indicate binary incompatibility. Expected {} from C header, got {} from PyObject"
    assert [m.entry_id for m in explain_text(line.format(88, 80))] == ["numpy-built-newer"]
    assert explain_text(line.format(80, 88)) == []


def test_the_worker_count_is_read_against_the_cpu_threads() -> None:
    # MindSpore's C++ check as the error-analysis tutorial prints it
    # (https://www.mindspore.cn/tutorials/en/r2.6.0/debug/error_analysis/minddata_debug.html), with the count varied
    line = (
        "RuntimeError: Thread ID 1 Unexpected error. GeneratorDataset's num_workers={}, this value is not within the "
        "required range of [1, cpu_thread_cnt=2]."
    )
    [m] = explain_text(line.format(8))
    assert m.entry_id == "dataset-workers-over-cpus" and "asks for 8 workers" in m.cause
    assert "global config" not in m.cause  # an explicit count, not the default
    [m] = explain_text(line.format(0))
    assert "at least 1" in m.cause and "more parallel workers" not in m.title
    # the Python validator states only the range: both sides are named, neither chosen
    [m] = explain_text("ValueError: num_parallel_workers exceeds the boundary between 1 and 12!")
    assert "a value above it, or below 1" in m.cause and "set_num_parallel_workers(12)" in m.fix


def test_package_metadata_missing_reads_the_frames() -> None:
    # pySmartHashtag's own __init__.py in a downloaded archive asking its version
    # (https://github.com/DasBasti/pySmartHashtag/issues/103): a source tree run without being installed
    text = (
        "Traceback (most recent call last):\n"
        '  File "/Users/humpataa/Downloads/pySmartHashtag-main/pysmarthashtag/__init__.py", line 5, in <module>\n'
        '    __version__ = version("pySmartHashtag")\n'
        '  File "/Library/Frameworks/Python.framework/Versions/3.10/lib/python3.10/importlib/metadata/__init__.py", '
        "line 548, in from_name\n"
        "    raise PackageNotFoundError(name)\n"
        "importlib.metadata.PackageNotFoundError: No package metadata was found for pySmartHashtag\n"
    )
    [m] = explain_text(text)
    assert m.groups.get("rule") == "metadata-source-tree" and "pip install -e ." in m.fix_for("/env/bin/python")
    # a library asking a dependency's version from site-packages (pydantic asks for email-validator:
    # https://github.com/open-webui/open-webui/issues/12915): neither a console script of it nor its source tree
    text = (
        '  File "/usr/local/lib/python3.11/site-packages/pydantic/networks.py", line 928, in import_email_validator\n'
        "    if not version('email-validator').partition('.')[0] == '2':\n"
        "importlib.metadata.PackageNotFoundError: No package metadata was found for email-validator\n"
    )
    [m] = explain_text(text)
    assert m.groups.get("rule") == "metadata-missing" and "email-validator" in m.title


def test_the_device_memory_rule_reads_each_form_s_figures() -> None:
    """MindSpore's device memory messages, their byte figures read: the old pool form (a request larger than the whole
    pool names the batch and an abnormal shape), the start-up check's free against total (another process holds the
    card), and the runtime's alloc size; a line without figures of that form is no claim."""
    pool = "Out of Memory!!! total[{t}] (dynamic[0] memory poll[524288000]) malloc[{m}] failed!"
    [m] = explain_text(pool.format(t=3212254720, m=32611480064))
    assert m.entry_id == "device-memory-exhausted" and "30.4 GiB" in m.title
    assert "larger than the whole pool" in m.cause and "abnormal shape" in m.cause
    [m] = explain_text(pool.format(t=34359738368, m=1073741824))
    assert "larger than the whole pool" not in m.cause and "too little of it is left" in m.cause
    moc = (
        "Malloc device memory failed, free memory size is less than half of total memory size.Device 0 Device MOC "
        "total size:{t} Device MOC free size:{f} may be other processes occupying this card, check as: ps -ef|grep python"
    )
    [m] = explain_text(moc.format(t=34359738368, f=2140602368))
    assert m.groups["rule"] == "device-memory-held" and "32.0 GiB" in m.cause and "(6%)" in m.cause
    assert "npu-smi info" in m.fix and "python_multiprocessing=False" in m.fix
    [m] = explain_text(
        "Device(id:3) memory isn't enough and alloc failed, kernel name: Default/MatMul-op1, alloc size: 2147483648B."
    )
    assert "2.0 GiB" in m.title
    assert [x.entry_id for x in explain_text("Out of Memory!!! total[] malloc[] failed")] == []
