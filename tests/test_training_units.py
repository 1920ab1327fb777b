"""The trainer's pure parts, without MindSpore: schedule, batch layout, checkpoints, data cache, launch, docs."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from msdoctor.training import checkpoint as ckpt
from msdoctor.training import launch
from msdoctor.training.config import RunConfig, TrainConfig, from_dict
from msdoctor.training.configdoc import render
from msdoctor.training.data import ByteTokenizer, DataError, JsonTokenizer, Sampler, TokenFile, resolve_files
from msdoctor.training.flops import cpu_peak_tflops, flops_per_token, matmul_params, mfu
from msdoctor.training.parallel import data_rank, plan_problems, shard_plan, stage_of_layer
from msdoctor.training.schedule import get_lr, rows_of

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted((REPO / "training" / "configs").glob("*.yaml"))


# -- schedule -------------------------------------------------------------------------------------
def test_lr_warms_up_linearly_then_decays_by_cosine_to_min_lr():
    t = TrainConfig(lr=1.0, min_lr=0.1, warmup_steps=4, max_steps=104)
    warm = [get_lr(s, t) for s in range(4)]
    assert warm == pytest.approx([0.2, 0.4, 0.6, 0.8])  # never 0 on the first update
    assert get_lr(4, t) == pytest.approx(1.0)
    assert get_lr(54, t) == pytest.approx(0.1 + 0.45)  # half way through the cosine: the mean of lr and min_lr
    assert get_lr(103, t) == pytest.approx(0.1, abs=1e-3)
    assert get_lr(500, t) == 0.1
    decay = [get_lr(s, t) for s in range(4, 104)]
    assert all(a >= b for a, b in zip(decay, decay[1:]))


def test_warmup_counts_optimizer_steps_whatever_the_accumulation():
    a = TrainConfig(warmup_steps=10, max_steps=1000, grad_accumulation=1)
    b = TrainConfig(warmup_steps=10, max_steps=1000, grad_accumulation=8)
    assert [get_lr(s, a) for s in range(20)] == [get_lr(s, b) for s in range(20)]


def test_data_parallel_ranks_read_exactly_the_rows_of_one_process_with_the_same_global_batch():
    single = from_dict({"train": {"micro_batch_size": 8, "grad_accumulation": 2}})
    dp = from_dict(
        {
            "runtime": {"device_num": 2},
            "parallel": {"data_parallel": 2},
            "train": {"micro_batch_size": 4, "grad_accumulation": 2},
        }
    )
    assert single.global_batch == dp.global_batch == 16
    rows_single = [list(range(16))[rows_of(single, 0, k)] for k in range(2)]
    rows_dp = [list(range(16))[rows_of(dp, r, k)] for k in range(2) for r in range(2)]
    assert sorted(sum(rows_dp, [])) == list(range(16))
    # micro-step k of the two ranks together is micro-step k of the single process
    assert sorted(rows_dp[0] + rows_dp[1]) == rows_single[0]


def test_tensor_parallel_peers_feed_the_same_rows():
    cfg = from_dict(
        {
            "runtime": {"device_num": 8, "device_target": "Ascend"},
            "parallel": {"data_parallel": 4, "tensor_parallel": 2},
        }
    )
    assert [data_rank(r, cfg) for r in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]


# -- checkpoints ---------------------------------------------------------------------------------
def _writers(payload: bytes):
    return {"model.bin": lambda p: p.write_bytes(payload), "opt.bin": lambda p: p.write_bytes(payload[::-1])}


def test_checkpoint_is_complete_verified_and_only_the_last_k_kept(tmp_path):
    for step in (10, 20, 30, 40):
        ckpt.save(tmp_path, step, _writers(os.urandom(1000)), {"data": {"position": step}}, keep_last=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000030", "step_00000040"]
    found = ckpt.find_latest(tmp_path)
    assert found.step == 40 and found.state["data"]["position"] == 40 and found.state["step"] == 40
    assert ckpt.verify(found.path) is None


@pytest.mark.parametrize("damage", ["truncate", "flip", "no-manifest", "missing-file"])
def test_a_damaged_checkpoint_is_never_picked(tmp_path, damage):
    ckpt.save(tmp_path, 1, _writers(b"a" * 500), {})
    newest = ckpt.save(tmp_path, 2, _writers(b"b" * 500), {})
    target = newest / "model.bin"
    if damage == "truncate":
        os.truncate(target, 100)
    elif damage == "flip":
        target.write_bytes(b"c" + b"b" * 499)
    elif damage == "no-manifest":
        (newest / ckpt.MANIFEST).unlink()
    else:
        target.unlink()
    notes: list[str] = []
    found = ckpt.find_latest(tmp_path, notes.append)
    assert found.step == 1
    assert notes and "step_00000002" in notes[0]


def test_a_killed_writer_leaves_a_temporary_directory_that_is_ignored_and_cleaned(tmp_path):
    ckpt.save(tmp_path, 5, _writers(b"x" * 10), {})

    def dies(path: Path) -> None:
        path.write_bytes(b"half")
        raise KeyboardInterrupt  # the process is gone mid-write

    with pytest.raises(KeyboardInterrupt):
        ckpt.save(tmp_path, 6, {"model.bin": dies}, {})
    assert ckpt.find_latest(tmp_path).step == 5
    assert [p.name for p in ckpt.clean_stale(tmp_path)] == [f".tmp-step_00000006-{os.getpid()}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_00000005"]


# -- data ------------------------------------------------------------------------------------------
def test_token_file_is_built_once_and_rebuilt_when_a_file_changes(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("hello world " * 50)
    (corpus / "b.txt").write_text("second file " * 50)
    files = resolve_files([str(corpus / "*.txt")], 10)
    first = TokenFile.build(files, ByteTokenizer(), tmp_path / "cache")
    assert not first.meta["reused"] and first.meta["num_tokens"] == 600 + 600 + 2 * 2
    assert bytes(first.tokens[:11].astype(np.uint8)) == b"hello world"
    again = TokenFile.build(files, ByteTokenizer(), tmp_path / "cache")
    assert again.meta["reused"] and again.path == first.path
    time.sleep(0.01)
    (corpus / "b.txt").write_text("changed " * 10)
    changed = TokenFile.build(files, ByteTokenizer(), tmp_path / "cache")
    assert not changed.meta["reused"] and changed.path != first.path


def test_unigram_entropy_is_that_of_the_token_frequencies(tmp_path):
    (tmp_path / "t.txt").write_text("ab" * 100)  # with the separator: a 100, b 100, newline 2
    tf = TokenFile.build(resolve_files([str(tmp_path / "t.txt")], 1), ByteTokenizer(), tmp_path / "c")
    p = np.array([100, 100, 2]) / 202
    assert tf.meta["unigram_entropy"] == pytest.approx(float(-(p * np.log(p)).sum()))


def test_a_local_tokenizer_json_is_used_through_tokenizers(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["the cat sat on the mat"] * 20, trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]"])
    )
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    jt = JsonTokenizer(path)
    assert jt.vocab_size == tok.get_vocab_size() and jt.identity.startswith("tokenizer.json:")
    assert list(jt.encode("the cat")) == tok.encode("the cat").ids


def test_sampler_is_a_pure_function_of_seed_and_step():
    toks = np.arange(10_000, dtype=np.uint16)
    s = Sampler(toks, 16, seed=7)
    x1, y1 = s.batch(3, 4)
    x2, y2 = Sampler(toks, 16, seed=7).batch(3, 4)
    assert (x1 == x2).all() and (y1 == y2).all() and x1.dtype == np.int32
    assert (y1[:, :-1] == x1[:, 1:]).all()  # targets are the next tokens
    assert not (Sampler(toks, 16, seed=8).batch(3, 4)[0] == x1).all()


def test_no_matching_files_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no files match"):
        resolve_files([str(tmp_path / "*.nothing")], 5)


def test_default_corpus_is_the_standard_library():
    files = resolve_files([], 400)
    assert len(files) > 100 and all(f.suffix == ".py" for f in files)
    assert any(f.name == "os.py" for f in files)


# -- FLOPs and peaks ------------------------------------------------------------------------------
def test_flops_per_token_follows_palm_appendix_b():
    cfg = from_dict(
        {"model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4, "num_kv_heads": 2, "ffn_hidden_size": 128}}
    ).model
    # q,o: 64x64 each; k,v: 64x32 each; swiglu: 3 x 64x128; head 64x256
    per_layer = 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128
    assert matmul_params(cfg, 256) == 2 * per_layer + 64 * 256
    assert flops_per_token(cfg, 128, 256) == 6 * (2 * per_layer + 64 * 256) + 12 * 2 * 64 * 128
    assert mfu(1000.0, 1e6, 2, 1.0) == pytest.approx(1e9 / 2e12)
    assert mfu(1000.0, 1e6, 1, None) is None


def test_cpu_peak_from_cpuinfo():
    info = "processor: 0\ncpu MHz\t\t: 2000.000\nflags\t\t: fpu avx avx2 fma\n"
    tflops, how = cpu_peak_tflops(info, cores=4)
    assert tflops == pytest.approx(4 * 2.0e9 * 32 / 1e12) and "32 fp32 FLOPs/cycle" in how
    assert cpu_peak_tflops("no frequency here", cores=1) is None


@pytest.mark.parametrize(
    "vendor, family, per_cycle, bound",
    [
        ("AuthenticAMD", 25, 32, False),  # Zen 4 (family 19h, these machines): AVX-512 on 256-bit units
        ("AuthenticAMD", 26, 64, False),  # Zen 5 (family 1Ah): full-width AVX-512
        ("GenuineIntel", 6, 64, True),  # one or two 512-bit FMA units: cannot tell, an upper bound
    ],
)
def test_cpu_peak_follows_the_microarchitecture(vendor: str, family: int, per_cycle: int, bound: bool) -> None:
    info = (
        f"processor: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\ncpu MHz\t\t: 2000.000\n"
        "flags\t\t: fpu avx avx2 fma avx512f avx512bw\n"
    )
    tflops, how = cpu_peak_tflops(info, cores=2)
    assert tflops == pytest.approx(2 * 2.0e9 * per_cycle / 1e12)
    assert f"{per_cycle} fp32 FLOPs/cycle" in how and ("upper bound" in how) is bound


def test_cpu_peak_of_this_machine_reads_its_own_cpuinfo() -> None:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "AuthenticAMD" not in text or "\ncpu family\t: 25" not in text:
        pytest.skip("not an AMD family 19h (Zen 3/4) machine")
    tflops, how = cpu_peak_tflops()
    assert "32 fp32 FLOPs/cycle" in how  # Zen 4 advertises avx512f but does 32


# -- parallel plan --------------------------------------------------------------------------------
def test_megatron_plan_splits_heads_and_ffn_over_tensor_parallel():
    plan = shard_plan(dp=4, tp=2)
    assert plan["column"]["matmul"] == ((4, 1), (2, 1))  # weight rows (output features) split
    assert plan["row"]["matmul"] == ((4, 2), (1, 2))  # input features split, partial sums reduced
    assert plan["attention"]["qk"] == ((4, 2, 1, 1), (4, 2, 1, 1))  # heads split
    assert plan["mlp"]["mul"] == ((4, 1, 2), (4, 1, 2))  # FFN inner dimension split
    for kind in plan.values():  # no strategy asks for more devices than dp x tp
        for strategy in kind.values():
            for dims in strategy:
                assert math.prod(dims) <= 8


def test_sequence_parallel_splits_norms_and_residuals_along_the_sequence():
    plain, sp = shard_plan(4, 2), shard_plan(4, 2, sequence_parallel=True)
    assert plain["norm"]["square"] == ((4, 1, 1),) and sp["norm"]["square"] == ((4, 2, 1),)
    assert sp["block"]["add_mlp"] == ((4, 2, 1), (4, 2, 1))
    assert sp["column"] == plain["column"] and sp["attention"] == plain["attention"]


def test_plan_problems_name_what_tensor_parallel_cannot_split():
    cfg = from_dict(
        {
            "runtime": {"device_num": 4, "device_target": "Ascend"},
            "parallel": {"tensor_parallel": 4},
            "model": {"vocab_size": 250, "hidden_size": 64, "num_heads": 4, "ffn_hidden_size": 130},
        }
    )
    problems = plan_problems(cfg)
    assert any("FFN size 130" in p for p in problems) and any("vocabulary 250" in p for p in problems)
    assert stage_of_layer(5, 8, 2) == 1 and stage_of_layer(3, 8, 2) == 0


@pytest.mark.parametrize("path", [c for c in CONFIGS if "910b" in c.name], ids=lambda p: p.name)
def test_ascend_configs_split_evenly_under_their_tensor_parallel(path):
    import yaml

    cfg = from_dict(yaml.safe_load(path.read_text()), path=path)
    assert plan_problems(cfg) == []


# -- launch ---------------------------------------------------------------------------------------
def test_one_device_runs_the_target_python_on_the_entry_script(tmp_path):
    cfg = from_dict({})
    how = launch.build(cfg, "/envs/ms/bin/python", tmp_path, True, {"PATH": "/usr/bin", "PYTHONPATH": "/x"})
    assert how.argv == [
        "/envs/ms/bin/python",
        str(launch.ENTRY),
        "--config",
        str(tmp_path / "config.json"),
        "--run-dir",
        str(tmp_path),
        "--resume",
    ]
    assert how.env["PATH"].split(os.pathsep)[0] == "/envs/ms/bin" and "PYTHONPATH" not in how.env


def test_several_devices_go_through_msrun_with_join_and_the_configured_port(tmp_path):
    cfg = from_dict(
        {
            "runtime": {
                "device_num": 16,
                "device_target": "Ascend",
                "num_nodes": 2,
                "node_rank": 1,
                "master_addr": "10.0.0.1",
                "master_port": 29000,
                "cluster_time_out": 60,
            },
            "parallel": {"data_parallel": 8, "tensor_parallel": 2},
        }
    )
    bindir = tmp_path / "env" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "msrun").write_text("")
    how = launch.build(cfg, str(bindir / "python"), tmp_path / "run", False, {"PATH": "/usr/bin"})
    assert how.argv[:9] == [
        str(bindir / "msrun"),
        "--worker_num=16",
        "--local_worker_num=8",
        "--master_addr=10.0.0.1",
        "--master_port=29000",
        "--node_rank=1",
        f"--log_dir={tmp_path / 'run' / 'msrun_log'}",
        "--join=True",
        "--cluster_time_out=60",
    ]
    assert how.argv[9] == str(launch.ENTRY)
    assert how.env["PATH"].startswith(str(bindir) + os.pathsep)
    # without an msrun script next to the interpreter, the module it wraps
    assert launch.msrun_command("/nowhere/bin/python") == [
        "/nowhere/bin/python",
        "-m",
        "mindspore.parallel.cluster.run",
    ]


# -- configs and docs -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads_and_warns_about_nothing(path):
    import yaml

    from msdoctor.training.config import warnings

    cfg = from_dict(yaml.safe_load(path.read_text()), path=path)
    assert isinstance(cfg, RunConfig) and cfg.name == path.stem
    assert warnings(cfg) == []
    assert cfg.runtime.master_port != 8118  # msrun's default collides with its workers' port


def test_docs_training_config_is_generated_from_the_schema():
    doc = (REPO / "docs" / "training-config.md").read_text()
    assert doc == render(), "regenerate: python -m msdoctor.training.configdoc > docs/training-config.md"
    from msdoctor.training.config import describe

    for key, _, _ in describe():
        assert f"`{key}`" in doc


def test_shipped_configs_use_only_documented_keys():
    import yaml

    from msdoctor.training.config import describe

    known = {k for k, _, _ in describe()}
    for path in CONFIGS:
        data = yaml.safe_load(path.read_text())
        keys = {f"{s}.{k}" for s, sub in data.items() if isinstance(sub, dict) for k in sub}
        assert keys <= known, (path.name, keys - known)


def test_resolved_config_round_trips_through_json():
    from msdoctor.training.config import to_dict

    cfg = from_dict({"model": {"num_layers": 3}, "data": {"paths": ["a/*.txt"]}})
    assert from_dict(json.loads(json.dumps(to_dict(cfg)))) == cfg


def test_mfu_peak_comes_from_the_config_the_chip_npu_smi_named_or_the_cpu():
    from msdoctor.training.flops import peak_tflops

    assert peak_tflops("Ascend", 300.0, "910B3") == (300.0, "runtime.device_peak_tflops")
    assert peak_tflops("Ascend", None, "910B3")[0] == 313.0
    assert peak_tflops("Ascend", None, "") is None  # unknown chip: no MFU rather than a wrong one
    assert peak_tflops("GPU", None, "NVIDIA H100 80GB HBM3")[0] == 989.0


def test_train_passes_the_chip_npu_smi_reported_to_the_trainer():
    """npu-smi's chip name, as the Ascend facts parsed it during the checks (real npu-smi format, tests/data/npu_smi)."""
    from msdoctor.commands.train import chip_name
    from msdoctor.context import Context
    from msdoctor.facts.ascend import NPU_SMI, NpuChip, NpuSmiInfo

    chip = NpuChip(0, 0, None, "910B3", "OK", 93.1, 40, 0, 0, 0, 3403, 65536, "0000:C1:00.0")
    assert chip_name(Context(facts={NPU_SMI.name: NpuSmiInfo("23.0.6", "23.0.6", chips=[chip])})) == "910B3"
    assert chip_name(Context(facts={NPU_SMI.name: None})) == ""
    assert chip_name(Context(facts={})) == ""  # not probed during the checks: not probed again


@pytest.mark.parametrize("path", [c for c in CONFIGS if "910b" in c.name], ids=lambda p: p.name)
def test_ascend_configs_fit_their_stated_hardware_by_memory_fit(path):
    """msdoctor.memory's estimate against the config's own runtime.device_memory (58 GB of a 64 GB 910B)."""
    from msdoctor.context import Context
    from msdoctor.memory import load_source, make_plan

    plan = make_plan(load_source(str(path)), Context(facts={}), probe=False)
    est = plan.estimate
    assert est.capacity == 58 * 2**30  # MindSpore max_device_memory "58GB" = 58 GiB
    assert plan.verdict == "fits", (est.total / 2**30, [(c.label, c.bytes / 2**30) for c in est.components])
