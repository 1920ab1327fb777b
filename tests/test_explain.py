"""`msdoctor explain`: the error catalogue (compat_matrix/errors.toml), its matcher, and the command.

Every catalogue entry has a realistic log excerpt below (verbatim error lines
from the cited sources, with the log prefixes and traceback lines that surround
them in real logs). One slow test goes further: it makes the real MindSpore
2.7.0 of the test environment raise the wrong-API-name errors and the Ascend
load failure, and explains that real output.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import BASE_PYTHON, env_with, run_msdoctor
from msdoctor.explain import (
    CatalogueError,
    describe,
    explain_file,
    explain_text,
    load_catalogue,
    normalize,
    parse_catalogue,
    required_literals,
)

EXCERPTS: dict[str, str] = {
    "transformers-config-name-taken": """\
        Traceback (most recent call last):
          File "/home/u/proj/models/__init__.py", line 12, in <module>
            AutoConfig.register("aimv2", AIMv2Config)
          File "/env/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 1281, in register
            CONFIG_MAPPING.register(model_type, config, exist_ok=exist_ok)
          File "/env/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 1081, in register
            raise ValueError(f"'{key}' is already used by a Transformers config, pick another name.")
        ValueError: 'aimv2' is already used by a transformers config, pick another name.
        """,
    "ascend-plugin-not-loaded": """\
        Traceback (most recent call last):
          File "train.py", line 8, in <module>
            ms.set_device("Ascend")
        RuntimeError: Unsupported device target Ascend. This process only supports one of the ['CPU']. Please check whether the Ascend environment is installed and configured correctly, and check whether current mindspore wheel package was built with "-e Ascend". For details, please refer to "Device load error message".
        """,
    "libge-runner-missing": """\
        ----------------------------------------------------
        - Device load error message:
        ----------------------------------------------------
        Load dynamic library: libmindspore_ascend.so.2 failed. libge_runner.so: cannot open shared object file: No such file or directory
        """,
    "mindspore-cann-mismatch": """\
        [WARNING] ME(1049852:281473041023008,MainProcess):2024-12-06-12:23:11.112.000 [mindspore/run_check/_check_version.py:357] MindSpore version 2.3.1 and Ascend AI software package (Ascend Data Center Solution)version 7.5 does not match, the version of software package expect one of ['7.2', '7.3']. Please refer to the match info on: https://www.mindspore.cn/install
        MindSpore version:  2.3.1
        Segmentation fault (core dumped)
        """,
    "te-hccl-wheel-mismatch": """\
        [WARNING] ME(1049852:281473041023008,MainProcess):2024-12-06-12:23:14.201.000 [mindspore/run_check/_check_version.py:375] MindSpore version 2.3.1 and "te" wheel package version 7.5 does not match. For details, refer to the installation guidelines: https://www.mindspore.cn/install
        [WARNING] ME(1049852:281473041023008,MainProcess):2024-12-06-12:23:14.203.000 [mindspore/run_check/_check_version.py:396] Please pay attention to the above warning, countdown: 3
        """,
    "te-not-importable": """\
        [ERROR] ME(1051780:281473416683552,MainProcess):2024-12-06-12:39:02.460.00 [mindspore/run_check/_check_version.py:360] CheckFailed: cannot import name 'version' from 'te' (unknown location)
        [CRITICAL] ME(1051780:281473416683552,MainProcess):2024-12-06-12:39:02.460.00 [mindspore/run_check/_check_version.py:364] MindSpore relies on whl packages of "te" and "hccl" in the "latest" folder of the Ascend AI software package (Ascend Data Center Solution). Please check whether they are installed correctly or not, refer to the match info on: https://www.mindspore.cn/install
        """,
    "ascend-env-not-set": """\
        [WARNING] ME(14470:140665992518528,MainProcess):2026-11-29-19:25:51.496.000 [mindspore/run_check/_check_version.py:415] Can not find driver so(need by mindspore-ascend). Please check whether the Environment Variable LD_LIBRARY_PATH is set. For details, refer to the installation guidelines: https://www.mindspore.cn/install
        """,
    "numpy2-abi": """\
        A module that was compiled using NumPy 1.x cannot be run in
        NumPy 2.2.6 as it may crash. To support both 1.x and 2.x
        versions of NumPy, modules must be compiled with NumPy 2.0.
        Some module may need to rebuild instead e.g. with 'pybind11>=2.12'.
        ImportError: numpy.core.multiarray failed to import
        """,
    "libgomp-static-tls": """\
        Traceback (most recent call last):
          File "/data/conda/envs/llamafactory/lib/python3.10/site-packages/sklearn/__check_build/__init__.py", line 48, in <module>
            from ._check_build import check_build  # noqa
        ImportError: /data/conda/envs/llamafactory/lib/python3.10/site-packages/sklearn/utils/../../scikit_learn.libs/libgomp-d22c30c5.so.1.0.0: cannot allocate memory in static TLS block
        """,
    "soc-name-failed": """\
        [ERROR] DEVICE(3121,ffff8c9ef020,python):2025-10-20-10:12:40.188.220 [mindspore/ccsrc/plugin/ascend/ascend_device_context.cc:283] SetContextSocVersion] Get soc name failed.
        """,
    "mindspore-not-importable": """\
        Traceback (most recent call last):
          File "/home/u/proj/dp_train.py", line 3, in <module>
            import mindspore as ms
        ModuleNotFoundError: No module named 'mindspore'
        """,
    "numpy-shadowed": """\
        File "/env/lib/python3.11/site-packages/mindspore/numpy/__init__.py", line 12, in <module>
        AttributeError: partially initialized module 'numpy' has no attribute 'bool_' (most likely due to a circular import)
        """,
    "amp-convert-convert": """\
        Traceback (most recent call last):
          File "pretrain.py", line 21, in <module>
            from mindspore.amp import convert_convert
        ImportError: cannot import name 'convert_convert' from 'mindspore.amp' (/env/lib/python3.11/site-packages/mindspore/amp.py)
        """,
    "parallel-context-tensor-parallel": """\
          File "/env/lib/python3.11/site-packages/mindspore/parallel/_auto_parallel_context.py", line 1544, in _set_auto_parallel_context
            raise ValueError("Set context keyword %s is not recognized!" % key)
        ValueError: Set context keyword tensor_parallel is not recognized!
        """,
    "cosine-annealing-location": """\
        Traceback (most recent call last):
          File "pretrain.py", line 9, in <module>
            from mindspore.nn import WarmUpLR, CosineAnnealingLR
        ImportError: cannot import name 'CosineAnnealingLR' from 'mindspore.nn' (/env/lib/python3.11/site-packages/mindspore/nn/__init__.py)
        """,
    "nn-learning-rate-schedule": """\
          File "pretrain.py", line 30, in <module>
            class WarmupCosine(nn.LearningRateSchedule):
        AttributeError: module 'mindspore.nn' has no attribute 'LearningRateSchedule'
        """,
    "op-debug-dir-keyerror": """\
          File "/usr/local/Ascend/ascend-toolkit/latest/python/site-packages/te_fusion/parallel_compilation.py", line 183, in check_dict_paras
            if dict_ops['op_debug_dir'] == None or dict_ops['op_debug_dir'] == '':
        KeyError: 'op_debug_dir'
        """,
    "cann-newer-than-driver": """\
        [ACL ERROR] E19999: Inner Error! E19999: [PID: 3370899] 2025-10-17-18:40:43.617.804 Invalid opp version [8.3.T14.0.B101] or compiler_version [],Please check if it is within the required range[FUNC:CheckOsCpuInfoAndOppVersion][FILE:model_helper.cc][LINE:973]
        """,
    "dcmi-init-failed": """\
        $ npu-smi info
        DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)
        dcmi module initialize failed. ret is -8005
        """,
    "libge-compiler-missing": """\
        python: error while loading shared libraries: libge_compiler.so: cannot open shared object file: No such file or directory
        """,
    "soc-op-info-missing": """\
        MindSpore version:  2.1.1
        The result of multiplication calculation is correct, MindSpore has been installed on platform [Ascend] successfully!
        [ERROR] KERNEL(40354,fffdd6e1f1e0,python):2023-10-13-09:30:47.546.313 [mindspore/ccsrc/kernel/oplib/op_info_utils.cc:172] LoadOpInfoJson] Get op info json suffix path failed, soc_version: Ascend310P3
        """,
    "opp-kernel-missing": """\
        [CRITICAL] ME(2214:281473041023008,MainProcess):2025-09-02-10:01:11.002.000 [mindspore/run_check/_check_version.py:377] MindSpore relies on "Ascend opp_kernel" folder of the Ascend AI software package (Ascend Data Center Solution). Please check whether they are installed correctly or not, refer to the match info on: https://www.mindspore.cn/install
        Exception: Ascend opp_kernel is not installed
        """,
    "custom-op-cann-mismatch": """\
        [WARNING] ME(8812:281473041023008,MainProcess):2025-11-02-08:12:51.301.000 [mindspore/run_check/_check_version.py:305] The version 8.5 used for compiling the custom operator does not match Ascend AI software package version 8.2 in the current environment.
        """,
    "mindnlp-transformers-5": """\
          File "/env/lib/python3.11/importlib/metadata/__init__.py", line 1097, in _top_level_declared
            return (dist.read_text('top_level.txt') or '').split()
        AttributeError: 'types.SimpleNamespace' object has no attribute 'read_text'
        """,
    "transformers-imported-before-mindnlp": """\
          File "/env/lib/python3.11/site-packages/transformers/integrations/flex_attention.py", line 61, in WrappedFlexAttention
            @torch.compiler.disable(recursive=False)
        TypeError: 'NoneType' object is not callable
        """,
    "mindformers-hyper-parallel": """\
        ERROR: Could not find a version that satisfies the requirement hyper-parallel~=1.0.0 (from mindformers) (from versions: none)
        ERROR: No matching distribution found for hyper-parallel~=1.0.0
        """,
    "invalid-installed-version": """\
        pip._vendor.packaging.version.InvalidVersion: Invalid version: '2.2.3.2c7f2141'
        """,
    "semi-auto-parallel-on-cpu": """\
        RuntimeError: Invalid communication backend: CPU for semi_auto_parallel/auto_parallel mode, currently only support Ascend/GPU backend.
        """,
    "parallel-optimizer-on-cpu": """\
        RuntimeError: For "Optimizer", parallel optimizer only supports "Ascend" in data parallel mode, but got CPU.
        """,
    "init-without-launcher": """\
        RuntimeError: Maybe you are trying to call 'mindspore.communication.init()' without using 'mpirun', which will make MindSpore load several environment variables and check their validation. Please use 'mpirun' to launch this process to fix this issue, or refer to this link if you want to run distributed training using 'msrun'
        """,
    "op-not-on-cpu": """\
        RuntimeError: Not found op N9mindspore6kernel7pyboost5AdamWE on device CPU
        """,
    "bf16-on-cpu": """\
        TypeError: Select CPU operator[MatMul] fail! Unsupported data type!
        """,
    "allreduce-on-cpu": """\
        [ERROR] ME(2711:140245,MainProcess):2026-11-29-20:58:03.114.000 [mindspore/parallel/cluster/process_entity/_api.py:312] Worker process 2712 exit with exception.
        Traceback (most recent call last):
          File "/tmp/ar/ar.py", line 12, in <module>
            print(op(Tensor(np.ones(3, np.float32))))
        RuntimeError: AllReduce only support reduce sum on CPU, but got max
        """,
    "loss-scale-manager-on-cpu": """\
        ValueError: Only `loss_scale_manager=None` or `loss_scale_manager=FixedLossScaleManager(drop_overflow_update=False)`are supported on device `CPU`. 
        """,
    "protobuf-descriptors": """\
        TypeError: Descriptors cannot be created directly.
        If this call came from a _pb2.py file, your generated code is out of date and must be regenerated with protoc >= 3.19.0.
        """,
    # the warning text of mindspore 2.7.0's run_check/_check_version.py, as its logger prints it
    "libgomp-preload-failed": """\
        [WARNING] ME(2214:281473041023008,MainProcess):2025-09-02-10:01:11.002.000 [mindspore/run_check/_check_version.py:474] Pre-Load Library libgomp.so.1 failed, which might cause TLS memory allocation failure. If the failure occurs, please refer to the FAQ for a solution: https://www.mindspore.cn/docs/en/master/faq/installation.html.
        """,
}

#: an excerpt may legitimately show a second known error (the Ascend load failure carries both)
ALSO = {"allreduce-on-cpu": {"msrun-worker-failed"}}  # the excerpt shows the worker line msrun prints too

CLEAN_LOG = """\
[INFO] step 10/200 loss 4.8123 lr 3.0e-04 tokens/s 25123
[WARNING] ANALYZER(1201,7f,python):2026-01-01-10:00:00.000.000 [auto_monad.cc:1590] ClearIsolatedNodes] Some side effect nodes were eliminated by mistake.
checkpoint saved: runs/tiny/ckpt/step_000100
[INFO] step 200/200 loss 0.0791 done in 41.2 s
"""


def excerpt(entry_id: str) -> str:
    return textwrap.dedent(EXCERPTS[entry_id])


def test_catalogue_is_valid_and_big_enough() -> None:
    entries = load_catalogue()
    assert len(entries) >= 15
    ids = {e.id for e in entries}
    for required in (
        "transformers-config-name-taken",
        "ascend-plugin-not-loaded",
        "libge-runner-missing",
        "mindspore-cann-mismatch",
        "numpy2-abi",
        "libgomp-static-tls",
        "soc-name-failed",
        "mindspore-not-importable",
        "amp-convert-convert",
        "parallel-context-tensor-parallel",
        "cosine-annealing-location",
    ):
        assert required in ids
    assert all(e.source for e in entries)


def _blind_right_entries() -> set[str]:
    """Entries written from a blind hold-out's real case (a vendor FAQ entry of set E) and pinned there as right, with
    the words the answer must name (tests/test_explain_holdout.py)."""
    import tomllib

    cases = tomllib.loads(
        (Path(__file__).parent / "data" / "explain" / "holdout_2026-12-05.toml").read_text(encoding="utf-8")
    )["case"]
    return {c["entry"] for c in cases if c["verdict"] == "right" and "no longer unseen" in c.get("note", "")}


def test_every_entry_is_tested_against_real_text() -> None:
    """Each entry has an excerpt here, or the public reports of tests/data/explain/real_cases.toml it came from
    (tests/test_explain_real.py), or those of rule_cases.toml for the structural rules (tests/test_explain_rules.py); the scheduler entry is tested on a real msrun scheduler.log (tests/data/cluster)."""
    import tomllib

    cases = tomllib.loads((Path(__file__).parent / "data" / "explain" / "real_cases.toml").read_text(encoding="utf-8"))
    rules = tomllib.loads((Path(__file__).parent / "data" / "explain" / "rule_cases.toml").read_text(encoding="utf-8"))
    covered = (
        set(EXCERPTS)
        | {c["expect"] for c in cases["case"]}
        | {c["expect"] for c in rules["case"]}
        | {"msrun-nodes-not-registered"}
        | _blind_right_entries()
    )
    assert {e.id for e in load_catalogue()} <= covered
    assert set(EXCERPTS) <= {e.id for e in load_catalogue()}


@pytest.mark.parametrize("entry_id", sorted(EXCERPTS))
def test_excerpt_is_explained_by_its_entry(entry_id: str) -> None:
    matches = explain_text(excerpt(entry_id))
    got = {m.entry_id for m in matches}
    assert entry_id in got
    assert got - {entry_id} <= ALSO.get(entry_id, set()), f"also matched {got - {entry_id}}"
    m = next(m for m in matches if m.entry_id == entry_id)
    assert m.line in excerpt(entry_id) and m.cause and m.fix
    assert "{" not in m.fix_for("/env/bin/python").replace("${", "")  # every placeholder was filled


def test_placeholders_filled_from_the_text_and_the_target() -> None:
    m = explain_text(excerpt("transformers-config-name-taken"))[0]
    assert m.groups == {"name": "aimv2"} and 'model_type = "my_aimv2"' in m.fix
    n = next(x for x in explain_text(excerpt("numpy2-abi")) if x.entry_id == "numpy2-abi")
    assert '/opt/ms/bin/python -m pip install "numpy<2"' in n.fix_for("/opt/ms/bin/python")
    assert n.count == 2 and n.line_no == 1  # two lines match; the first is reported, the count kept
    assert "check: msdoctor check --only version-matrix" in describe(n)


def test_ascend_entries_ask_the_check_about_ascend() -> None:
    ms = explain_text(excerpt("ascend-plugin-not-loaded") + excerpt("libge-runner-missing"))
    assert [(m.entry_id, m.device_target) for m in ms] == [
        ("ascend-plugin-not-loaded", "Ascend"),
        ("libge-runner-missing", "Ascend"),
    ]


def test_literal_prefilter_is_exact() -> None:
    """The fast path (regex only on lines holding a required literal) finds what a brute-force scan finds."""
    specific = [e for e in load_catalogue() if not e.fallback]
    assert all(required_literals(e.pattern.pattern) is not None for e in specific)
    text = "\n".join(excerpt(k) for k in sorted(EXCERPTS)) + CLEAN_LOG
    brute = {}
    for no, line in enumerate(text.splitlines(), 1):
        for e in specific:
            if e.pattern.search(normalize(line)) and e.id not in brute:
                brute[e.id] = no
    got = {m.entry_id: m.line_no for m in explain_text(text)}
    assert {k: v for k, v in got.items() if k in {e.id for e in specific}} == brute
    assert required_literals(r"(?i:'(?P<n>[\w.-]+)' is used)") == ("' is used",)
    assert required_literals(r"abcDe?f|x\.y\(z\)w") == ("abcd", "x.y(z)w")
    assert required_literals(r"ab|[xyz]+q") is None  # an alternative without a 4-character literal


def test_clean_log_has_no_match() -> None:
    assert explain_text(CLEAN_LOG) == []


def test_bad_catalogue_is_rejected() -> None:
    good = (
        '[[error]]\nid = "x"\ntitle = "t"\npattern = "a"\ncause = "c"\nfix = "f"\ncheck = ""\nsource = "s"\n'
        'category = "abi"\n'
    )
    assert parse_catalogue('kind = "error-catalogue"\n' + good)[0].check_id is None
    with pytest.raises(CatalogueError, match="kind"):
        parse_catalogue(good)
    with pytest.raises(CatalogueError, match="does not compile"):
        parse_catalogue('kind = "error-catalogue"\n' + good.replace('pattern = "a"', 'pattern = "(a"'))
    with pytest.raises(CatalogueError, match="missing source"):
        parse_catalogue('kind = "error-catalogue"\n' + good.replace('source = "s"\n', ""))
    with pytest.raises(CatalogueError, match="category must be one of"):
        parse_catalogue('kind = "error-catalogue"\n' + good.replace('"abi"', '"misc"'))
    with pytest.raises(CatalogueError, match="per names no group"):
        parse_catalogue('kind = "error-catalogue"\n' + good + 'per = "code"\n')


def test_log_file_is_streamed_with_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    with log.open("w", encoding="utf-8") as fh:
        fh.write(CLEAN_LOG * 2000)
        fh.write("\udcff".encode("utf-8", "surrogatepass").decode("utf-8", "replace") + "\n")
        fh.write(excerpt("soc-name-failed"))
    (m,) = explain_file(log)
    assert m.entry_id == "soc-name-failed" and m.line_no == 4 * 2000 + 2


# -- the command ----------------------------------------------------------------------------------------
def test_command_text_json_and_exit_codes(tmp_path: Path) -> None:
    res = run_msdoctor(
        "explain", "--no-confirm", "ImportError: cannot import name 'convert_convert' from 'mindspore.amp'"
    )
    assert res.returncode == 0 and "auto_mixed_precision" in res.stdout
    none = run_msdoctor("explain", "--no-confirm", "all fine here")
    assert none.returncode == 1 and "No known error signature" in none.stdout
    log = tmp_path / "run.log"
    log.write_text(CLEAN_LOG + excerpt("numpy2-abi"))
    js = run_msdoctor("explain", "--log", str(log), "--format", "json", "--python", BASE_PYTHON)
    data = json.loads(js.stdout)
    assert js.returncode == 0 and [m["id"] for m in data["matches"]] == ["numpy2-abi"]
    assert data["matches"][0]["fix"].startswith(f"Install a NumPy 1.x into the environment: `{BASE_PYTHON} -m pip")
    missing = run_msdoctor("explain", "--log", str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "nope.log: no such file" in missing.stderr
    both = run_msdoctor("explain", "x", "--log", str(log))
    assert both.returncode == 2


def test_stdin_and_confirming_check(tmp_path: Path) -> None:
    """The confirming run uses a real check: version-matrix, or its absence is said plainly."""
    res = run_msdoctor("explain", "-", "--quick", input=excerpt("numpy2-abi"), cwd=tmp_path)
    assert res.returncode == 0
    assert "Confirming with version-matrix" in res.stdout or "check version-matrix is not available" in res.stdout


@pytest.mark.slow
@pytest.mark.mindspore
def test_real_mindspore_errors_are_explained(tmp_path: Path) -> None:
    """Make the real MindSpore 2.7.0 raise the seed document's wrong API names and the Ascend load failure."""
    script = tmp_path / "wrong_apis.py"
    script.write_text(
        textwrap.dedent("""\
        import traceback
        import mindspore as ms
        def attempt(fn):
            try:
                fn()
            except Exception:
                traceback.print_exc()
        def amp():
            from mindspore.amp import convert_convert
        def cosine():
            from mindspore.nn import CosineAnnealingLR
        attempt(amp)
        attempt(lambda: ms.set_auto_parallel_context(tensor_parallel=2))
        attempt(cosine)
        attempt(lambda: ms.nn.LearningRateSchedule)
        attempt(lambda: ms.set_device("Ascend"))
        """)
    )
    env = env_with(drop=["ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "LD_LIBRARY_PATH"])
    run = subprocess.run([BASE_PYTHON, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    got = {m.entry_id for m in explain_text(run.stdout + run.stderr)}
    assert {
        "amp-convert-convert",
        "parallel-context-tensor-parallel",
        "cosine-annealing-location",
        "nn-learning-rate-schedule",
        "ascend-plugin-not-loaded",
        "libge-runner-missing",
    } <= got, run.stderr[-2000:]


def test_int32_allreduce_on_cpu_is_not_mistaken_for_bf16() -> None:
    """The dtype error of a CPU AllReduce (observed, MindSpore 2.7.0 under msrun) is the collective's limit, not bf16."""
    text = "TypeError: \nSelect CPU operator[AllReduce] fail! Unsupported data type!\n"
    assert [m.entry_id for m in explain_text(text)] == ["allreduce-on-cpu"]
    assert [m.entry_id for m in explain_text("Select CPU operator[Gather] fail! Unsupported data type!")] == [
        "bf16-on-cpu"
    ]
