"""Real MindFormers configs (tests/data/memory/mindformers/SOURCES.toml: mindspore-lab/mindformers r1.5.0,
r1.7.0 and the mindformers 2.1.0 wheel) on the hardware their docs state, and the MindFormers semantics
the estimate follows: SeqPipe, parallel optimizer levels, combined recompute lists, both selective
recompute conventions, mcore defaults, GLM key names, pretrained_model_dir, tie_word_embeddings defaults
and the config.json options."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import run_json

from msdoctor.context import Context
from msdoctor.memory import GIB, Device, Overrides, Setup, estimate, load_source, make_plan, total_params
from msdoctor.memory import keys as K
from msdoctor.memory.estimator import activation_components, layer_activation, layer_plan
from msdoctor.domain.problems import ConfigError  # what msdoctor's readers raise (the trainer has its own)

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomli is a dependency below 3.11 (pyproject.toml)
    import tomli as tomllib

DATA = Path(__file__).parent / "data" / "memory" / "mindformers"
HF = Path(__file__).parent / "data" / "memory" / "hf"
SOURCES = tomllib.loads((DATA / "SOURCES.toml").read_text())["config"]
NO_OVERHEAD = Device("Ascend", fragmentation=0.0)


def _pretrained(row: dict) -> str | None:
    return str(HF / Path(row["pretrained_model_dir"]).name) if row.get("pretrained_model_dir") else None


def _source(rel: str, **kw):
    return load_source(DATA / rel, Overrides(**kw) if kw else None)


def test_sources_list_every_shipped_config_with_its_origin():
    shipped = {str(p.relative_to(DATA)) for p in DATA.rglob("*.yaml")}
    listed = {row["file"] for row in SOURCES}
    assert shipped == listed and len(listed) >= 20
    for row in SOURCES:
        assert row["file"].endswith(row["path"]) and row["hardware"] and row["docs"] and row["devices"] >= 1
        assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]) or row["repo"].startswith("pypi:mindformers==")
    families = " ".join(listed)
    for family in ("llama2", "llama3", "qwen2", "qwen2_5", "qwen3", "glm3", "glm4", "internlm2", "deepseek", "mixtral"):
        assert family in families


@pytest.mark.parametrize("row", SOURCES, ids=lambda r: r["file"])
def test_every_documented_config_fits_its_documented_hardware(row):
    """As the issue ran them: --devices N --device-memory 64GiB --device-target ascend."""
    src = load_source(
        DATA / row["file"],
        Overrides(devices=row["devices"], device_target="Ascend", pretrained_model_dir=_pretrained(row)),
    )
    assert src.setup.devices == row["devices"]
    plan = make_plan(src, Context(facts={}), device_memory=row["device_memory"], probe=False, limit=0)
    assert plan.estimate.capacity <= 64 * GIB
    assert plan.verdict in ("fits", "tight"), (
        plan.estimate.total / GIB,
        [(c.label, round(c.gib, 2)) for c in plan.estimate.components],
    )


def test_command_line_run_of_a_shipped_config():
    res, data = run_json(
        "memory",
        "--config",
        str(DATA / "r1.5.0/research/qwen2_5/finetune_qwen2.5_72B_32K.yaml"),
        "--devices",
        "64",
        "--device-memory",
        "64GiB",
        "--device-target",
        "ascend",
    )
    assert res.returncode == 0, res.stderr
    assert data["verdict"] == "fits" and data["setup"]["pipeline_scheduler"] == "seqpipe"
    assert any("schedule modelled: seqpipe with 8 sequence chunks" in n for n in data["notes"])


# -- 1. SeqPipe -----------------------------------------------------------------------------------
def test_seqpipe_splits_the_in_flight_sequences():
    src = _source("r1.5.0/research/qwen2_5/finetune_qwen2.5_72B_32K.yaml")
    s = src.setup
    assert (s.pipeline_scheduler, s.seq_split_num, s.pipeline_stages, s.micro_batch_num) == ("seqpipe", 8, 8, 32)
    seq = estimate(src.model, s, NO_OVERHEAD)
    plain = estimate(src.model, s.with_(pipeline_scheduler="1f1b"), NO_OVERHEAD)

    def stage0(setup: Setup) -> int:
        return next(c.bytes for c in activation_components(src.model, setup, 0, 10) if c.key == "activations")

    # stage 0: 8 in-flight chunks of 4096 tokens instead of 8 micro-batches of 32768: activations / 8
    assert stage0(s) == pytest.approx(stage0(s.with_(pipeline_scheduler="1f1b")) / 8, rel=1e-9)
    assert plain.verdict == "unknown" and plain.total > 64 * GIB > seq.total
    # the per-layer K/V caches (and their gradients) of the whole sequence
    kv = 4 * 1 * (8 / 8) * 32768 * 128 * 2
    assert seq.bytes_of("seqpipe_kv_cache") == 10 * kv


# -- 2. parallel optimizer ------------------------------------------------------------------------
def test_parallel_optimizer_levels_and_gathered_weights():
    src = _source("r1.5.0/research/internlm2/internlm2_7b/finetune_internlm2_7b.yaml")
    m, s = src.model, src.setup
    assert (s.optimizer_sharding, s.data_parallel, s.param_dtype, s.precision) == ("optimizer", 8, "fp32", "bf16")
    assert s.shard_threshold == 64 * 1024  # parallel_optimizer_threshold: 64 (KB)
    e1 = estimate(m, s, NO_OVERHEAD)
    n = e1.params_on_device
    small = 32 * 2 * 4096 + 4096  # RMSNorm weights: 16 KB each, under the 64 KB threshold, stay whole
    # gathered in the compute dtype (the AllGather goes after the fp32 -> bf16 Cast), held forward to backward
    assert e1.bytes_of("gathered_parameters") == (n - small) * 2
    assert e1.bytes_of("parameters") == (n - small) * 4 // 8 + small * 4
    assert e1.bytes_of("gradients") == e1.bytes_of("parameters")  # reduce-scattered to the weight's slice
    # level2 = level1 without an accumulation buffer; with gradient accumulation it shards accu_grads
    assert estimate(m, s.with_(optimizer_sharding="grads"), NO_OVERHEAD).total == e1.total
    ga = s.with_(grad_accumulation=4)
    whole = estimate(m, ga, NO_OVERHEAD).bytes_of("accumulation")
    assert whole == n * 4
    assert estimate(m, ga.with_(optimizer_sharding="grads"), NO_OVERHEAD).bytes_of("accumulation") == pytest.approx(
        whole / 8, rel=1e-3
    )
    assert estimate(m, ga.with_(accumulation_shard=True), NO_OVERHEAD).bytes_of("accumulation") == pytest.approx(
        whole / 8, rel=1e-3
    )
    # level3 and parallel_optimizer_comm_recompute free the gathered copy per layer: two blocks at a time
    e3 = estimate(m, s.with_(optimizer_sharding="params"), NO_OVERHEAD)
    assert e3.bytes_of("gathered_parameters") < e1.bytes_of("gathered_parameters") / 10
    assert estimate(m, s.with_(comm_recompute=True), NO_OVERHEAD).bytes_of("gathered_parameters") == e3.bytes_of(
        "gathered_parameters"
    )
    # optimizer_weight_shard_size: a smaller shard group keeps bigger shards
    e4 = estimate(m, s.with_(optimizer_shard_size=4), NO_OVERHEAD)
    assert e4.bytes_of("optimizer_states") == pytest.approx(2 * e1.bytes_of("optimizer_states"), rel=1e-3)
    # a size that does not divide the data-parallel group "will not take effect" (mindspore/context.py)
    assert estimate(m, s.with_(optimizer_shard_size=3), NO_OVERHEAD).total == e1.total


def test_parallel_optimizer_config_keys_are_read(tmp_path):
    text = (DATA / "r1.5.0/research/internlm2/internlm2_7b/finetune_internlm2_7b.yaml").read_text()
    assert "  enable_parallel_optimizer: True\n" in text
    text = text.replace(
        "  enable_parallel_optimizer: True\n",
        "  enable_parallel_optimizer: True\n"
        "  parallel_optimizer_config:\n    optimizer_level: level3\n"
        "    optimizer_weight_shard_size: 2\n    parallel_optimizer_threshold: 1\n",
        1,
    )
    path = tmp_path / "x.yaml"
    path.write_text(text)
    s = load_source(path).setup
    assert (s.optimizer_sharding, s.optimizer_shard_size, s.shard_threshold) == ("params", 2, 1024)


# -- 3. combined recompute lists ------------------------------------------------------------------
def test_full_recompute_list_and_select_recompute_combine_per_stage():
    src = _source("r1.5.0/research/qwen2_5/finetune_qwen2_5_7b_8k.yaml")
    s = src.setup
    assert (s.recompute, s.recompute_layers, s.selective_layers) == ("full", (7, 7), (14, 14))
    assert layer_plan(s, 0, 14) == (7, 7, 0)  # 7 full, the other 7 selective, none without recompute
    est = estimate(src.model, s, NO_OVERHEAD)
    full, sel = layer_activation(src.model, s, "full").bytes, layer_activation(src.model, s, "selective").bytes
    flight = 2 - est.stage  # 1F1B on 2 stages: stage 0 holds 2 micro-batches, stage 1 one
    assert est.bytes_of("activations") == pytest.approx(flight * (7 * full + 7 * sel), rel=1e-9)
    as_before = estimate(src.model, s.with_(selective_layers=None), NO_OVERHEAD)  # the other 7 not recomputed
    assert as_before.total > est.total


def test_select_comm_recompute_lists():
    s = _source("r1.5.0/research/qwen2_5/finetune_qwen2.5_72B_32K.yaml").setup
    assert s.comm_recompute_layers == (6, 2, 1, 0, 0, 0, 0, 0)
    assert layer_plan(s, 0, 10) == (0, 10, 6) and layer_plan(s, 3, 10) == (0, 10, 0)


# -- 4. the two selective conventions -------------------------------------------------------------
def test_selective_conventions_from_yaml_and_command_line():
    src = _source("r1.5.0/research/qwen2_5/finetune_qwen2_5_7b_8k.yaml")
    m, s = src.model, src.setup
    assert s.selective_ffn is True  # select_recompute names feed_forward.mul / w1.activation.silu
    mf = layer_activation(m, s, "selective").bytes
    megatron = layer_activation(m, s.with_(selective_ffn=False), "selective").bytes
    # t = 1: the FFN activation MindFormers recomputes is the 16-bit f x s x b tensor
    assert s.tensor_parallel == 1 and megatron - mf == pytest.approx(2 * 18944 * 8192, rel=1e-9)
    cfg = str(HF / "Qwen3-32B" / "config.json")
    got = {}
    for choice in ("selective-attention", "selective-ffn", "selective"):
        res, data = run_json(
            "memory",
            "--config",
            cfg,
            "--seq-length",
            "4096",
            "--device-memory",
            "64GiB",
            "--device-target",
            "ascend",
            "--recompute",
            choice,
            "--suggestions",
            "0",
        )
        got[choice] = next(c["bytes"] for c in data["components"] if c["key"] == "activations")
        assert data["setup"]["recompute"] == "selective"
    assert got["selective-attention"] > got["selective-ffn"] == got["selective"]  # mindspore's own meaning


# -- 5. mcore defaults ----------------------------------------------------------------------------
def test_mcore_configs_shard_the_embedding_over_tp():
    src = _source("r1.7.0/configs/qwen3/pretrain_qwen3_32b_4k.yaml")
    assert src.setup.embedding_tp_sharded and src.setup.tensor_parallel == 4
    est = make_plan(src, Context(facts={}), probe=False, limit=0).estimate
    assert round(est.total / GIB, 2) == 46.34  # 57.75 GiB with the embedding and head unsharded
    unsharded = estimate(src.model, src.setup.with_(embedding_tp_sharded=False), est.device)
    assert unsharded.total > est.total * 1.2
    legacy = _source("r1.5.0/configs/glm3/run_glm3_6b_finetune_800T_A2_64G.yaml")
    assert not legacy.setup.embedding_tp_sharded  # vocab_emb_dp: True


def test_family_defaults_follow_the_mindformers_source():
    assert K.MF_FAMILY_DEFAULTS["legacy"]["vocab_emb_dp"] is True
    assert K.MF_FAMILY_DEFAULTS["mcore"]["vocab_emb_dp"] is False
    src = _source("r1.7.0/configs/qwen3/finetune_qwen3.yaml", pretrained_model_dir=str(HF / "Qwen3-32B"))
    assert src.setup.flash_attention and src.setup.seq_length == 4096  # TransformerConfig defaults
    assert any("TransformerConfig default" in n for n in src.notes)


# -- 6. GLM keys, pretrained_model_dir, tie defaults -----------------------------------------------
def test_glm_key_names():
    m = _source("r1.5.0/configs/glm3/run_glm3_6b_finetune_800T_A2_64G.yaml").model
    assert (m.vocab_size, m.ffn, m.kv_heads, m.head_width, m.qkv_bias, m.bias) == (65024, 13696, 2, 128, True, False)
    assert total_params(m) == 6_243_584_000  # THUDM/chatglm3-6b


def test_pretrained_model_dir_placeholder_and_followed():
    rel = "r1.7.0/configs/qwen3/finetune_qwen3.yaml"
    with pytest.raises(ConfigError) as exc:
        _source(rel)
    (p,) = exc.value.problems
    assert p.keys == ("pretrained_model_dir",) and "placeholder" in p.message and p.line == 12
    src = _source(rel, pretrained_model_dir=str(HF / "Qwen3-32B"))
    assert (src.model.num_layers, src.model.head_width, src.model.qk_norm) == (64, 128, True)
    assert total_params(src.model) == 32_762_123_264
    assert any("model shape from" in n for n in src.notes)


def test_pretrained_model_dir_relative_to_the_yaml(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text((HF / "Qwen3-32B" / "config.json").read_text())
    text = (DATA / "r1.7.0/configs/qwen3/finetune_qwen3.yaml").read_text().replace('"/path/to/Qwen3-32B"', '"model"')
    (tmp_path / "ft.yaml").write_text(text)
    assert total_params(load_source(tmp_path / "ft.yaml").model) == 32_762_123_264


def test_config_json_without_tie_uses_the_model_types_default(tmp_path):
    from transformers import LlamaConfig

    cfg = LlamaConfig(
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
        max_position_embeddings=8192,
    )
    data = cfg.to_dict()
    data.pop("tie_word_embeddings", None)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    m = load_source(path).model
    assert not m.tie_embeddings and total_params(m) == 8_030_261_248  # Meta-Llama-3-8B: 8.03B, not 7.50B


def test_tie_defaults_match_the_installed_transformers_source():
    """Each HF_TIE_DEFAULT entry is the default its configuration_<type>.py declares."""
    import transformers

    root = Path(transformers.__file__).parent / "models"
    for model_type, tied in K.HF_TIE_DEFAULT.items():
        path = root / model_type / f"configuration_{model_type}.py"
        if model_type == "gemma3_text":
            path = root / "gemma3" / "configuration_gemma3.py"
        text = path.read_text()
        found = re.findall(r"tie_word_embeddings(?::[^=\n]*)?\s*=\s*(True|False)", text)
        assert found and found[0] == str(tied), (model_type, found)


# -- 7. config.json options ----------------------------------------------------------------------
def test_config_json_options_for_sp_flash_micro_batches_and_dropout():
    cfg = str(HF / "Qwen3-32B" / "config.json")
    base = (
        "memory",
        "--config",
        cfg,
        "--seq-length",
        "4096",
        "--device-memory",
        "64GiB",
        "--device-target",
        "ascend",
        "--tensor-parallel",
        "8",
        "--pipeline-stages",
        "4",
        "--devices",
        "32",
        "--suggestions",
        "0",
    )
    _, plain = run_json(*base, "--micro-batch-num", "4")
    _, sp = run_json(*base, "--micro-batch-num", "4", "--sequence-parallel")
    _, noflash = run_json(*base, "--micro-batch-num", "4", "--no-flash-attention")
    _, drop = run_json(*base, "--micro-batch-num", "4", "--dropout")
    _, few = run_json(*base, "--micro-batch-num", "8")
    assert plain["setup"]["micro_batch_num"] == 4 and few["setup"]["micro_batch_num"] == 8
    assert sp["setup"]["sequence_parallel"] and not noflash["setup"]["flash_attention"]
    assert drop["model"]["dropout"] and drop["model"]["attention_dropout"]

    def act(d: dict) -> int:
        return next(c["bytes"] for c in d["components"] if c["key"] == "activations")

    assert act(sp) < act(plain) < act(drop) < act(noflash)
    assert act(few) == act(plain)  # 4 stages: min(p, micro-batches) = 4 in flight either way


def test_overrides_replace_a_yaml_recompute_list():
    src = _source("r1.5.0/research/qwen2_5/finetune_qwen2_5_7b_8k.yaml", recompute="full")
    assert src.setup.recompute_layers is None and src.setup.selective_layers is None


def test_setup_defaults_keep_the_python_api_meaning():
    assert Setup(4096).ffn_selective and not Setup(4096, framework="megatron").ffn_selective
    assert replace(Setup(4096), selective_ffn=False).ffn_selective is False
