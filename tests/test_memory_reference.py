"""The estimator against published arithmetic and one published measurement.

Reference values: Megatron-LM ``megatron/training/theoretical_memory_usage.py`` @d98e8a64 run
with the args below (observed: call its functions with an argparse.Namespace of these fields);
Korthikanti et al. 2022 (arXiv 2205.05198) Table 2 evaluated on its Table 3 models; bytes per
parameter by scheme (Megatron 18/20, mixed precision 16, MindFormers float16 12); and M1:
Megatron-LM CI ``tests/functional_tests/test_cases/gpt/gpt3_7b_tp4_pp1_memory_speed``, 53.22 GiB
max-allocated measured on H100 (its golden values).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from msdoctor.memory import GIB, Device, ModelShape, Setup, estimate, layer_activation, total_params
from msdoctor.memory.reference import (
    MegatronArgs,
    korthikanti_layer_bytes,
    korthikanti_total_bytes,
    megatron_activation_bytes,
    megatron_activation_bytes_without_sp,
    megatron_activation_layer_bytes,
    megatron_theoretical_bytes,
    megatron_weight_and_optimizer_bytes,
)

MIB = 1 << 20
NO_OVERHEAD = Device("GPU", fragmentation=0.0)  # compare allocated bytes only

# R1: Llama-2-7B shape, s4096 b1, tp1 pp1 dp8; R2: Llama-2-13B shape, tp2 dp4
R1 = MegatronArgs(
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    ffn_hidden_size=11008,
    padded_vocab_size=32000,
    seq_length=4096,
    swiglu=True,
    rmsnorm=True,
    untie_embeddings_and_output_weights=True,
    data_parallel_size=8,
)
R2 = MegatronArgs(
    num_layers=40,
    hidden_size=5120,
    num_attention_heads=40,
    ffn_hidden_size=13824,
    padded_vocab_size=32000,
    seq_length=4096,
    swiglu=True,
    rmsnorm=True,
    untie_embeddings_and_output_weights=True,
    tensor_model_parallel_size=2,
    data_parallel_size=4,
)
# GPT-3 175B as in Korthikanti Table 3: tied, LayerNorm, GeLU, V 50257 padded to 51200, tp8 pp8, GBS 64
GPT3 = MegatronArgs(
    num_layers=96,
    hidden_size=12288,
    num_attention_heads=96,
    ffn_hidden_size=4 * 12288,
    padded_vocab_size=51200,
    seq_length=2048,
    tensor_model_parallel_size=8,
    pipeline_model_parallel_size=8,
    data_parallel_size=1,
    sequence_parallel=True,
    recompute_granularity="selective",
)

LLAMA7 = ModelShape(num_layers=32, hidden_size=4096, num_heads=32, vocab_size=32000, ffn_size=11008)
LLAMA13 = ModelShape(num_layers=40, hidden_size=5120, num_heads=40, vocab_size=32000, ffn_size=13824)
P7 = 6_738_415_616


# -- Megatron theoretical_memory_usage, exact bytes -----------------------------------------
@pytest.mark.parametrize(
    "args, dist_opt, expected",
    [
        (R1, False, 121_291_481_088),
        (R1, True, 50_538_117_120),
        (R2, False, 117_146_511_360),
        (R2, True, 58_573_255_680),
        (GPT3, False, 50_348_611_584),
    ],
)
def test_megatron_weight_and_optimizer_exact(args, dist_opt, expected):
    assert megatron_weight_and_optimizer_bytes(replace(args, use_distributed_optimizer=dist_opt)) == expected


def test_megatron_activation_formulas_exact():
    assert megatron_activation_bytes(R1) == 16_043_245_568
    assert megatron_activation_bytes_without_sp(R1) == pytest.approx(19_494_425_395.2, abs=1e-3)
    assert megatron_activation_bytes(R2) == 12_394_184_704
    assert megatron_activation_bytes_without_sp(R2) == pytest.approx(19_581_404_774.4, abs=1e-3)
    assert megatron_activation_bytes(GPT3, num_microbatches=64) == 10_292_838_400
    # the verbose "per layer" lines, MiB per TP rank: R1 460.0, R2 288.0, GPT-3 102.0
    assert megatron_activation_layer_bytes(R1) / MIB == 460.0
    assert megatron_activation_layer_bytes(R2) / MIB == 288.0
    assert megatron_activation_layer_bytes(GPT3) / MIB == 102.0


def test_megatron_report_lines_in_mib():
    """report_theoretical_memory prints MiB labelled "MB" (it divides by 1024 * 1024)."""
    wo, act = megatron_theoretical_bytes(replace(R1, use_distributed_optimizer=True))  # tp1: SP forced off
    assert (round(wo / MIB, 2), round(act / MIB, 2), round((wo + act) / MIB, 2)) == (48196.90, 18591.33, 66788.24)
    wo, act = megatron_theoretical_bytes(
        replace(R2, use_distributed_optimizer=True, sequence_parallel=True, recompute_granularity="selective")
    )
    assert (round(wo / MIB, 2), round(act / MIB, 2), round((wo + act) / MIB, 2)) == (55859.81, 11820.02, 67679.83)
    c1 = replace(GPT3, data_parallel_size=8, use_distributed_optimizer=True)
    wo, act = megatron_theoretical_bytes(c1, num_microbatches=64)
    assert (round(wo / MIB, 2), round(act / MIB, 2)) == (20006.74, 9816.02)
    wo, act = megatron_theoretical_bytes(replace(GPT3, virtual_pipeline_model_parallel_size=3), 64)
    assert round(act / MIB, 2) == 12679.02


# -- the estimator reproduces Megatron's weight + optimizer bytes ------------------------------
def _states(est) -> int:
    return sum(
        est.bytes_of(k)
        for k in (
            "parameters",
            "gathered_parameters",
            "gradients",
            "master_weights",
            "optimizer_states",
            "accumulation",
        )
    )


@pytest.mark.parametrize(
    "model, tp, dp, dist_opt, expected",
    [
        (LLAMA7, 1, 8, False, 121_291_481_088),
        (LLAMA7, 1, 8, True, 50_538_117_120),
        (LLAMA13, 2, 4, False, 117_146_511_360),
        (LLAMA13, 2, 4, True, 58_573_255_680),
    ],
)
def test_estimator_model_states_match_megatron(model, tp, dp, dist_opt, expected):
    setup = Setup(
        4096,
        data_parallel=dp,
        tensor_parallel=tp,
        framework="megatron",
        param_dtype="bf16",
        optimizer_sharding="optimizer" if dist_opt else "none",
    )
    assert _states(estimate(model, setup, NO_OVERHEAD)) == expected


def test_parameter_count_of_llama2_7b():
    assert total_params(LLAMA7) == P7


# -- Korthikanti et al. 2022, Table 2 and the evaluated totals ----------------------------------
def test_korthikanti_table_values():
    # 175B per layer (s2048 b1 h12288 a96 t8): TP baseline and TP+SP+selective
    assert korthikanti_layer_bytes(2048, 1, 12288, 96, 8, "tp") == 578_813_952
    assert korthikanti_layer_bytes(2048, 1, 12288, 96, 8, "tp_sp_selective") == 106_954_752
    # R1 (t1 p1) and R2 (t2 p1) first-stage totals: L x Table 2 per layer + the section 4.3 extras
    r1 = dict(s=4096, b=1, h=4096, a=32, t=1, p=1, L=32, v=32000)
    assert korthikanti_total_bytes(**r1, mode="tp") == 104_761_131_008
    assert korthikanti_total_bytes(**r1, mode="tp_selective") == 18_861_785_088
    assert korthikanti_total_bytes(**r1, mode="full") == 1_681_915_904
    r2 = dict(s=4096, b=1, h=5120, a=40, t=2, p=1, L=40, v=32000)
    assert korthikanti_total_bytes(**r2, mode="tp_sp_selective") == 14_575_206_400
    # Table 2 x L + extras, GB, for the Table 3 22B (b4, t8, p1) and 175B (b1, t8, p8)
    table = {
        (2048, 4, 6144, 64, 8, 1, 48): (63.86, 42.72, 31.65, 10.51, 5.07, 0.85),
        (2048, 1, 12288, 96, 8, 8, 96): (55.59, 34.45, 31.43, 10.29, 4.86, 0.63),
    }
    modes = ("tp", "tp_sp", "tp_selective", "tp_sp_selective", "full", "full_sp")
    for (s, b, h, a, t, p, L), row in table.items():
        got = tuple(round(korthikanti_total_bytes(s, b, h, a, t, p, L, 51200, m) / 1e9, 2) for m in modes)
        assert got == row


GPT_SHAPES = [  # (L, h, a, s, b, t)
    (48, 6144, 64, 2048, 4, 8),
    (96, 12288, 96, 2048, 1, 8),
    (32, 4096, 32, 4096, 1, 1),
    (40, 5120, 40, 4096, 2, 4),
]


@pytest.mark.parametrize("L, h, a, s, b, t", GPT_SHAPES)
def test_estimator_layer_activation_is_table_2_for_gpt_shapes(L, h, a, s, b, t):
    """With the paper's assumptions (f = 4h GeLU, MHA, dropout, no flash) the estimator's own per-layer
    formula gives Table 2 row by row."""
    gpt = ModelShape(L, h, a, 51200, activation="gelu", norm="layernorm", dropout=True, attention_dropout=True)
    base = Setup(s, micro_batch_size=b, tensor_parallel=t, flash_attention=False, framework="megatron")
    rows = {
        "tp": (base, "none"),
        "tp_sp": (base.with_(sequence_parallel=True), "none"),
        "tp_selective": (base, "selective"),
        "tp_sp_selective": (base.with_(sequence_parallel=True), "selective"),
        "full": (base, "full"),
        "full_sp": (base.with_(sequence_parallel=True), "full"),
    }
    for mode, (setup, ours) in rows.items():
        if t == 1 and "sp" in mode:
            continue  # sequence parallel needs TP
        expected = korthikanti_layer_bytes(s, b, h, a, t, mode)
        assert layer_activation(gpt, setup, ours).bytes == pytest.approx(expected, rel=1e-12), mode
    if t == 1:
        no_par = korthikanti_layer_bytes(s, b, h, a, 1, "none")
        assert layer_activation(gpt, base, "none").bytes == pytest.approx(no_par, rel=1e-12)


def test_llama_layer_activation_is_the_derived_swiglu_value():
    """Llama-2-7B (SwiGLU, no dropout) keeps 32.125*sbh per layer, + the flash LSE (Table 2's terms with a
    6f/h SwiGLU FFN and GQA; Ascend/MindSpeed's white-box memory_model.py gives the same)."""
    setup = Setup(4096, flash_attention=True, framework="megatron")
    per = layer_activation(LLAMA7, setup, "none").bytes
    sbh = 4096 * 4096
    lse = 4 * 32 * 4096  # fp32 log-sum-exp per head and token, what flash attention keeps of the scores
    assert per == pytest.approx(sbh * 32.125 + lse, rel=1e-12)
    assert round(32 * (per - lse) / 1e9, 2) == 17.25


# -- section 9: bytes per parameter by scheme (the seed's 12 B/param is one scheme, not the rule) ---
def _per_param(setup: Setup) -> float:
    return _states(estimate(LLAMA7, setup, NO_OVERHEAD)) / P7


@pytest.mark.parametrize(
    "setup, per_param, gb",
    [
        (Setup(4096, param_dtype="fp16", framework="mindspore"), 12, 80.86),  # MindFormers float16, no master
        (Setup(4096, param_dtype="bf16", master_weights=True, grad_dtype="bf16"), 16, 107.81),  # Apex/DeepSpeed
        (Setup(4096, param_dtype="bf16", framework="megatron"), 18, 121.29),  # Megatron bf16 (fp32 main grads)
        (Setup(4096, param_dtype="fp16", framework="megatron"), 20, 134.77),  # Megatron fp16
        (Setup(4096, param_dtype="fp32", precision="fp32"), 16, 107.81),  # pure fp32
        (Setup(4096, param_dtype="fp32", precision="bf16"), 16, 107.81),  # MindFormers params_dtype float32
    ],
)
def test_section_9_bytes_per_param(setup, per_param, gb):
    assert _per_param(setup) == per_param
    assert round(per_param * P7 / 1e9, 2) == gb


def test_section_9_accumulation_buffer_and_distributed_optimizer():
    assert _per_param(Setup(4096, param_dtype="fp16", grad_accumulation=2)) == 14  # + accu_grads
    assert _per_param(Setup(4096, param_dtype="fp32", grad_accumulation=2)) == 20
    dist = Setup(4096, data_parallel=8, param_dtype="bf16", framework="megatron", optimizer_sharding="optimizer")
    assert _per_param(dist) == 7.5
    assert round(_states(estimate(LLAMA7, dist, NO_OVERHEAD)) / 1e9, 2) == 50.54


def test_section_9_seven_b_fits_80gib_not_58():
    """50.5 GB of states + 16-19 GB of activations: fits an 80 GB A100, not a 58 GiB 910B pool."""
    dist = Setup(4096, data_parallel=8, param_dtype="bf16", framework="megatron", optimizer_sharding="optimizer")
    assert estimate(LLAMA7, dist, Device("GPU", capacity=80 * GIB, reserve=2 * GIB)).verdict == "fits"
    assert estimate(LLAMA7, dist, Device("Ascend", capacity=58 * GIB)).verdict == "does not fit"


# -- M1: Megatron CI measurement, predicted within 5% ---------------------------------------------
M1_MEASURED_GIB = 53.22  # H100 max-allocated, gpt3_7b_tp4_pp1_memory_speed golden values
M1_MODEL = ModelShape(
    num_layers=32,
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=8,
    ffn_size=4 * 4096,
    activation="gelu",
    vocab_size=131073,
    vocab_multiple=128,
    bias=True,
    norm="layernorm",
    tie_embeddings=False,
    dropout=True,
    attention_dropout=True,
)
M1_SETUP = Setup(
    8192,
    micro_batch_size=2,
    data_parallel=2,
    tensor_parallel=4,
    optimizer_sharding="optimizer",
    framework="megatron",
    param_dtype="bf16",
    precision="bf16",
    flash_attention=True,
)


def test_m1_estimate_within_5_percent_of_measured():
    est = estimate(M1_MODEL, M1_SETUP, Device("GPU", capacity=80 * GIB, reserve=2 * GIB))
    assert M1_MODEL.padded_vocab(4) == 131584
    predicted = est.allocated / GIB  # max-allocated excludes the CUDA context and allocator caching
    assert abs(predicted / M1_MEASURED_GIB - 1) < 0.05, predicted


def test_m1_megatron_reference_within_one_percent():
    m1 = MegatronArgs(
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_query_groups=8,
        ffn_hidden_size=16384,
        padded_vocab_size=131584,
        seq_length=8192,
        micro_batch_size=2,
        untie_embeddings_and_output_weights=True,
        tensor_model_parallel_size=4,
        data_parallel_size=2,
        use_distributed_optimizer=True,
    )
    wo, act = megatron_theoretical_bytes(m1)
    assert (round(wo / GIB, 2), round(act / GIB, 2)) == (18.77, 34.85)
    assert abs((wo + act) / GIB / M1_MEASURED_GIB - 1) < 0.01


# -- pipeline: in-flight micro-batches and the interleave factor (Korthikanti section 2.3) ----------
GPT3_SHAPE = ModelShape(
    96,
    12288,
    96,
    50257,
    activation="gelu",
    norm="layernorm",
    tie_embeddings=True,
    vocab_multiple=128,
    dropout=True,
    attention_dropout=True,
)
GPT3_SETUP = Setup(
    2048,
    tensor_parallel=8,
    pipeline_stages=8,
    micro_batch_num=64,
    sequence_parallel=True,
    recompute="selective",
    flash_attention=False,
    framework="megatron",
    param_dtype="bf16",
)


def test_first_stage_holds_l_layers_and_interleaving_adds_its_factor():
    per_layer = korthikanti_layer_bytes(2048, 1, 12288, 96, 8, "tp_sp_selective")
    plain = estimate(GPT3_SHAPE, GPT3_SETUP, NO_OVERHEAD)
    assert plain.stage == 0
    assert plain.bytes_of("activations") == 96 * per_layer  # 8 micro-batches in flight x 12 layers
    interleaved = estimate(GPT3_SHAPE, GPT3_SETUP.with_(virtual_pipeline_chunks=3), NO_OVERHEAD)
    assert interleaved.bytes_of("activations") == pytest.approx(96 * per_layer * (1 + 7 / 24), rel=1e-12)
    # Korthikanti's 175B interleaved (m = 3) TP+SP+selective total: 13.29 GB with the embedding mask
    extras = interleaved.bytes_of("embedding_io") - 8 * 2048 * 8 * (1 + 7 / 24)  # minus the token ids
    assert round((interleaved.bytes_of("activations") + extras) / 1e9, 2) == 13.29
    # fewer micro-batches than stages: only those are in flight
    few = estimate(GPT3_SHAPE, GPT3_SETUP.with_(micro_batch_num=2), NO_OVERHEAD)
    assert few.bytes_of("activations") == 2 * 12 * per_layer


def test_last_stage_holds_the_logits_and_the_output_layer():
    first, last = estimate(GPT3_SHAPE, GPT3_SETUP, NO_OVERHEAD).stages
    assert (first.stage, last.stage) == (0, 7)
    # both hold 12 layers and a 51200 x 12288 / 8 vocabulary matrix (embedding; tied head copy);
    # the last stage adds the final LayerNorm (weight + bias)
    assert last.params - first.params == 2 * 12288
    from msdoctor.memory.estimator import activation_components

    comps = {c.key: c.bytes for c in activation_components(GPT3_SHAPE, GPT3_SETUP, 7, 12)}
    assert comps["logits"] == (2 + 4) * 2048 * 51200 // 8  # bf16 logits + fp32 softmax, V padded to 51200
    assert "logits" not in {c.key for c in activation_components(GPT3_SHAPE, GPT3_SETUP, 0, 12)}
