"""MoE, MLA and MTP in the model shape, and the MindFormers key aliases (issue 26).

The aliases are MindFormers' own: ``COMMON_CONFIG_MAPPING`` in
mindformers/parallel_core/transformer_config_utils.py (mindspore-lab/mindformers v1.7.0).
"""

from __future__ import annotations

import json
from pathlib import Path

from msdoctor.memory import Detected, estimate, load_source, make_device, total_params
from msdoctor.memory.estimator import expert_shard_degree, in_flight
from msdoctor.memory.spec import ModelShape, Setup

DATA = Path(__file__).parent / "data" / "memory"
MCORE = DATA / "pretrain_llama2_7b_mcore.yaml"
LEGACY = DATA / "pretrain_llama2_7b_legacy.yaml"

# DeepSeek-V2 (arXiv 2405.04434 Appendix B.1 / its config.json): 60 layers, h 5120, 128 heads, MLA ranks
# q 1536 / kv 512, rope 64, nope 128, v 128, 160 routed experts of 1536 + 2 shared, top-6, first layer dense.
DSV2 = ModelShape(
    num_layers=60,
    hidden_size=5120,
    num_heads=128,
    vocab_size=102400,
    ffn_size=12288,
    num_experts=160,
    experts_per_token=6,
    expert_ffn_size=1536,
    shared_experts=2,
    dense_layers=1,
    q_lora_rank=1536,
    kv_lora_rank=512,
    qk_rope_head_dim=64,
    qk_nope_head_dim=128,
    v_head_dim=128,
)


def test_deepseek_v2_counts_236b_not_1819b():
    assert abs(total_params(DSV2) / 236e9 - 1) < 0.01
    # without the expert width, shared experts and dense layer read (the old reading): far off
    old = ModelShape(
        num_layers=60,
        hidden_size=5120,
        num_heads=128,
        vocab_size=102400,
        ffn_size=12288,
        num_experts=160,
        experts_per_token=6,
    )
    assert total_params(old) > 1.5e12


def test_deepseek_v3_config_json_counts_671b_plus_mtp(tmp_path):
    # deepseek-ai/DeepSeek-V3 config.json fields (huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json)
    cfg = {
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "vocab_size": 129280,
        "num_nextn_predict_layers": 1,
        "max_position_embeddings": 163840,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg, indent=1))
    m = load_source(path).model
    assert (m.num_experts, m.expert_ffn, m.shared_experts, m.dense_layers, m.mtp_layers) == (256, 2048, 1, 3, 1)
    # README_WEIGHTS.md of deepseek-ai/DeepSeek-V3: 671B main model + 14B MTP module = 685B
    assert abs(total_params(m) / 685e9 - 1) < 0.02
    assert abs(total_params(m.__class__(**{**m.__dict__, "mtp_layers": 0})) / 671e9 - 1) < 0.02


def test_qwen3_moe_mcore_yaml_and_config_json_agree(tmp_path):
    yaml = tmp_path / "q.yaml"
    yaml.write_text(
        MCORE.read_text().replace(
            "    num_hidden_layers: 32\n",
            "    num_hidden_layers: 32\n"
            "    num_experts: 128\n    num_experts_per_tok: 8\n"
            "    moe_intermediate_size: 768\n",
        )
    )
    m = load_source(yaml).model
    assert (m.num_experts, m.experts_per_token, m.expert_ffn) == (128, 8, 768)
    js = tmp_path / "config.json"
    js.write_text(
        json.dumps(
            {
                "model_type": "qwen3_moe",
                "num_hidden_layers": m.num_layers,
                "hidden_size": m.hidden_size,
                "num_attention_heads": m.num_heads,
                "num_key_value_heads": m.kv_heads,
                "intermediate_size": m.ffn,
                "vocab_size": m.vocab_size,
                "num_experts": 128,
                "num_experts_per_tok": 8,
                "moe_intermediate_size": 768,
                "tie_word_embeddings": False,
                "max_position_embeddings": 4096,
            }
        )
    )
    h = load_source(js).model
    assert total_params(h) == total_params(m.__class__(**{**m.__dict__, "qk_norm": h.qk_norm}))


def test_mcore_parallel_names_are_aliases(tmp_path):
    """The old readers disagreed: training-config read tensor_model_parallel_size as TP, memory-fit called it
    an unknown key and estimated TP 1. MindFormers maps model_parallel and tensor_model_parallel_size to one
    field (COMMON_CONFIG_MAPPING), so it is TP 4."""
    text = MCORE.read_text()
    assert "  model_parallel: 1\n" in text
    cfg = tmp_path / "tp.yaml"
    cfg.write_text(
        text.replace("  model_parallel: 1\n", "  tensor_model_parallel_size: 4\n").replace(
            "  data_parallel: 8\n", "  data_parallel: 2\n"
        )
    )
    src = load_source(cfg)
    assert src.setup.tensor_parallel == 4 and src.origins["tensor_parallel"][-1] == "tensor_model_parallel_size"
    assert not [p for p in src.unknown if p.keys[-1] == "tensor_model_parallel_size"]
    from msdoctor.domain.run_plan import from_mindformers
    from msdoctor.docfile import load

    assert from_mindformers(load(cfg)).tensor_parallel.value == 4


def test_experts_are_sharded_over_their_own_data_parallel_group():
    """TeleChat2-39B-A12B: optimizer_weight_shard_size 8 with dp 128, ep 2: the experts' group is 64 devices;
    8 divides it, so the expert states are / 8 (the old reading divided by 8 // ep = 4)."""
    s = Setup(
        4096,
        data_parallel=128,
        tensor_parallel=4,
        expert_parallel=2,
        optimizer_sharding="optimizer",
        optimizer_shard_size=8,
    )
    assert expert_shard_degree(s) == 8
    # a size larger than the experts' group does not take effect: the whole group
    assert expert_shard_degree(s.with_(data_parallel=8, expert_parallel=8)) == 1
    assert expert_shard_degree(s.with_(data_parallel=32, expert_parallel=8, optimizer_shard_size=8)) == 4


def test_interleaved_pipeline_never_holds_more_micro_batches_than_there_are():
    s = Setup(4096, pipeline_stages=4, micro_batch_num=4, virtual_pipeline_chunks=2)
    assert in_flight(s, 0) == 4  # min(p, m) x (1 + (p - 1)/(p v)) = 5.5 would be more than the 4 there are
    assert in_flight(s.with_(micro_batch_num=16), 0) == 4 * (1 + 3 / 8)


def test_mla_kv_and_mtp_on_the_last_stage():
    s = Setup(4096, pipeline_stages=2, micro_batch_num=4)
    m = DSV2.__class__(**{**DSV2.__dict__, "mtp_layers": 1, "num_layers": 59})
    est = estimate(m, s, make_device("Ascend", Detected(), None))
    assert [st.layers for st in est.stages] == [30, 30]
    assert est.params_total == total_params(m)


def _v3_json(tmp_path):
    cfg = {
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "vocab_size": 129280,
        "num_nextn_predict_layers": 1,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg, indent=1))
    return path


def test_expert_parallel_option_for_config_json(tmp_path):
    from helpers import run_json, run_msdoctor

    path = _v3_json(tmp_path)
    base = [
        "memory",
        "--config",
        str(path),
        "--devices",
        "64",
        "--pipeline-stages",
        "2",
        "--micro-batch-num",
        "8",
        "--device-memory",
        "64GiB",
        "--recompute",
        "full",
    ]
    res1, one = run_json(*base)
    res8, eight = run_json(*base, "--expert-parallel", "8")
    assert res8.returncode in (0, 1) and res1.returncode in (0, 1), res8.stderr
    p1 = one["components"]["parameters"]["bytes"] if isinstance(one["components"], dict) else None
    assert eight["total_bytes"] < one["total_bytes"] / 3, (one["total_bytes"], eight["total_bytes"], p1)
    bad = run_msdoctor(*base, "--expert-parallel", "3")
    assert bad.returncode == 2 and "--expert-parallel" in bad.stderr and "must divide the experts" in bad.stderr


def test_experts_without_a_data_parallel_replica_are_not_gathered():
    """Mixtral 8x7B as MindFormers v1.6.0 finetunes it (dp 2, ep 2, tp 4, pp 2, parallel optimizer): every expert
    weight lives on one device of its data-parallel group, so the parallel optimizer neither shards nor all-gathers
    it; only the dense weights are gathered (before: all 2.99B params of the stage were counted gathered)."""
    m = ModelShape(
        num_layers=32,
        hidden_size=4096,
        num_heads=32,
        vocab_size=32000,
        num_kv_heads=8,
        ffn_size=14336,
        num_experts=8,
        experts_per_token=2,
    )
    s = Setup(
        4096,
        data_parallel=2,
        tensor_parallel=4,
        pipeline_stages=2,
        micro_batch_num=16,
        expert_parallel=2,
        optimizer_sharding="optimizer",
        precision="fp16",
        recompute="full",
    )
    est = estimate(m, s, make_device("Ascend", Detected(), None))
    assert expert_shard_degree(s) == 1
    expert = 16 * 8 * 3 * 4096 * 14336 / (4 * 2)  # the stage's expert weights on this device
    gathered = est.component("gathered_parameters").bytes
    assert gathered < (est.params_on_device - expert) * 2 * 1.01 and gathered > 0
    # with a replica (dp 4, ep 2) the experts are sharded over 2 and gathered again
    est4 = estimate(m, s.with_(data_parallel=4), make_device("Ascend", Detected(), None))
    assert est4.component("gathered_parameters").bytes > expert * 2
