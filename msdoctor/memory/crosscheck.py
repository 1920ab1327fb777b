"""The estimator against published references, each under its own convention: a table of
(reference, msdoctor, ratio) rows that ``tests/test_memory_reference_table.py`` holds to 5% and
``benchmarks/bench_memory.py`` prints.

References and where their numbers come from:

* Korthikanti et al. 2022 (arXiv 2205.05198) Table 2: activation bytes per layer, GPT-3 175B
  shape (s 2048, h 12288, a 96, t 8), 16-bit activations, 1-byte dropout masks, f = 4h.
* Rajbhandari et al. 2020, ZeRO (arXiv 1910.02054) Figure 1: model states per device for
  Psi = 7.5B, N_d = 64, K = 12: 120 / 31.4 / 16.6 / 1.9 GB (baseline, P_os, P_os+g, P_os+g+p).
* DeepSpeed ``deepspeed/runtime/zero/stage_1_and_2.py`` ``estimate_zero2_model_states_mem_needs``
  (2P + 18P/N without offload) and ``stage3.py`` ``estimate_zero3_model_states_mem_needs``
  (4 x largest layer + 18P/N), evaluated on the Llama-2-7B shape over 8 GPUs.
* Megatron-LM ``megatron/training/theoretical_memory_usage.py``: weights + optimizer, 18 B/param
  and 6 + 12/d with the distributed optimizer (msdoctor.memory.reference implements it).
* Megatron-LM CI ``tests/functional_tests/test_cases/gpt/gpt3_7b_tp4_pp1_memory_speed``: 53.22 GiB
  max-allocated measured on H100 (a measurement, not a formula).
* accelerate ``accelerate estimate-memory`` (``src/accelerate/commands/estimate.py``):
  meta-device weights, Llama-2-7b-hf in float16: 12.37 GiB (the base model without the LM head;
  it also counts 134 MB of rotary buffers that are not parameters).
* Published parameter counts (the model cards on huggingface.co, rounded as printed there),
  counted by msdoctor from the shipped MindFormers configs and config.json files.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from msdoctor.memory.estimator import estimate, layer_activation, total_params
from msdoctor.memory.reference import korthikanti_layer_bytes
from msdoctor.memory.spec import Device, ModelShape, Setup

GB = 10**9
GIB = 1 << 30
NO_OVERHEAD = Device("GPU", fragmentation=0.0)


@dataclass(frozen=True)
class Row:
    group: str
    case: str
    reference: float
    unit: str
    ours: float
    source: str

    @property
    def ratio(self) -> float:
        return self.ours / self.reference


LLAMA7 = ModelShape(num_layers=32, hidden_size=4096, num_heads=32, vocab_size=32000, ffn_size=11008)
LLAMA13 = ModelShape(num_layers=40, hidden_size=5120, num_heads=40, vocab_size=32000, ffn_size=13824)
GPT3 = ModelShape(96, 12288, 96, 51200, activation="gelu", norm="layernorm", dropout=True, attention_dropout=True)


def _korthikanti() -> list[Row]:
    base = Setup(2048, tensor_parallel=8, flash_attention=False, framework="megatron")
    modes = {
        "tp": (base, "none"),
        "tp_sp": (base.with_(sequence_parallel=True), "none"),
        "tp_selective": (base, "selective"),
        "tp_sp_selective": (base.with_(sequence_parallel=True), "selective"),
        "full": (base, "full"),
        "full_sp": (base.with_(sequence_parallel=True), "full"),
    }
    out = []
    for mode, (setup, ours) in modes.items():
        ref = korthikanti_layer_bytes(2048, 1, 12288, 96, 8, mode)
        out.append(
            Row(
                "Korthikanti Table 2",
                f"175B per layer, {mode}",
                ref / GB,
                "GB",
                layer_activation(GPT3, setup, ours).bytes / GB,
                "arXiv 2205.05198 Table 2",
            )
        )
    return out


def zero_paper_setup(level: str) -> Setup:
    return Setup(
        1024, data_parallel=64, param_dtype="fp16", precision="fp16", framework="zero-paper", optimizer_sharding=level
    )


ZERO_FIGURE_1 = {"none": 120.0, "optimizer": 31.4, "grads": 16.6, "params": 1.9}


def _zero(model: ModelShape) -> list[Row]:
    names = {"none": "baseline", "optimizer": "P_os", "grads": "P_os+g", "params": "P_os+g+p"}
    return [
        Row(
            "ZeRO Figure 1",
            f"Psi 7.5B, N_d 64, {names[lvl]}",
            ref,
            "GB",
            estimate(model, zero_paper_setup(lvl), NO_OVERHEAD).model_states / GB,
            "arXiv 1910.02054 Figure 1",
        )
        for lvl, ref in ZERO_FIGURE_1.items()
    ]


def _deepspeed() -> list[Row]:
    out = []
    for name, model, refs in (
        ("Llama-2-7B shape", LLAMA7, (28_638_266_368, 15_685_723_136)),
        ("Llama-2-13B shape", LLAMA13, (55_317_423_360, 29_941_054_720)),
    ):
        # refs: DeepSpeed's two functions run on the shape (num_gpus_per_node 8, num_nodes 1, no offload):
        # 2P + 18P/N and 4 x largest layer (here the 32000 x h embedding) + 18P/N
        for stage, ref in (("grads", refs[0]), ("params", refs[1])):
            setup = Setup(
                4096,
                data_parallel=8,
                param_dtype="bf16",
                precision="bf16",
                framework="deepspeed",
                optimizer_sharding=stage,
            )
            est = estimate(model, setup, NO_OVERHEAD)
            ours = est.model_states + est.bytes_of("gathered_parameters")
            out.append(
                Row(
                    "DeepSpeed estimators",
                    f"{name}, 8 GPUs, ZeRO-{2 if stage == 'grads' else 3}",
                    ref / GIB,
                    "GiB",
                    ours / GIB,
                    "estimate_zero2/zero3_model_states_mem_needs (deepspeed/runtime/zero)",
                )
            )
    return out


def _megatron() -> list[Row]:
    from msdoctor.memory.reference import MegatronArgs, megatron_weight_and_optimizer_bytes

    out = []
    for name, model, tp, dp in (("R1 7B tp1 dp8", LLAMA7, 1, 8), ("R2 13B tp2 dp4", LLAMA13, 2, 4)):
        args = MegatronArgs(
            model.num_layers,
            model.hidden_size,
            model.num_heads,
            model.ffn,
            model.vocab_size,
            4096,
            swiglu=True,
            rmsnorm=True,
            untie_embeddings_and_output_weights=True,
            tensor_model_parallel_size=tp,
            data_parallel_size=dp,
        )
        for dist in (False, True):
            ref = megatron_weight_and_optimizer_bytes(replace(args, use_distributed_optimizer=dist))
            setup = Setup(
                4096,
                data_parallel=dp,
                tensor_parallel=tp,
                framework="megatron",
                param_dtype="bf16",
                optimizer_sharding="optimizer" if dist else "none",
            )
            ours = estimate(model, setup, NO_OVERHEAD).model_states
            out.append(
                Row(
                    "Megatron theoretical",
                    f"{name}{', dist-opt' if dist else ''}",
                    ref / GB,
                    "GB",
                    ours / GB,
                    "megatron/training/theoretical_memory_usage.py",
                )
            )
    return out


def _m1() -> list[Row]:
    model = ModelShape(
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
    setup = Setup(
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
    est = estimate(model, setup, NO_OVERHEAD)
    return [
        Row(
            "Megatron CI (measured)",
            "gpt3_7b_tp4_pp1, H100 max-allocated",
            53.22,
            "GiB",
            est.allocated / GIB,
            "tests/functional_tests/test_cases/gpt/gpt3_7b_tp4_pp1_memory_speed",
        )
    ]


def _accelerate() -> list[Row]:
    base = total_params(LLAMA7) - LLAMA7.vocab_size * LLAMA7.hidden_size  # LlamaModel: no LM head
    return [
        Row(
            "accelerate estimate-memory",
            "Llama-2-7b-hf float16 weights",
            12.37,
            "GiB",
            base * 2 / GIB,
            "src/accelerate/commands/estimate.py (incl. 134 MB rotary buffers msdoctor does not count)",
        )
    ]


#: (model card, its printed parameter count in billions, the shipped config that gives the shape)
PUBLISHED_PARAMS = (
    ("meta-llama/Llama-2-7b-hf", 6.74, "r1.5.0/configs/llama2/pretrain_llama2_7b.yaml"),
    ("meta-llama/Llama-2-13b-hf", 13.0, "r1.5.0/configs/llama2/pretrain_llama2_13b.yaml"),
    ("meta-llama/Llama-2-70b-hf", 69.0, "r1.5.0/configs/llama2/finetune_llama2_70b_bf16_32p.yaml"),
    ("meta-llama/Meta-Llama-3-8B", 8.03, "r1.5.0/research/llama3/llama3_8b/finetune_llama3_8b.yaml"),
    ("Qwen/Qwen2.5-7B", 7.62, "r1.5.0/research/qwen2_5/finetune_qwen2_5_7b_8k.yaml"),
    ("Qwen/Qwen2.5-72B", 72.7, "r1.5.0/research/qwen2_5/finetune_qwen2.5_72B_32K.yaml"),
    ("Qwen/Qwen3-32B", 32.8, "r1.7.0/configs/qwen3/pretrain_qwen3_32b_4k.yaml"),
    ("THUDM/chatglm3-6b", 6.24, "r1.5.0/configs/glm3/run_glm3_6b_finetune_800T_A2_64G.yaml"),
    ("THUDM/glm-4-9b", 9.40, "r1.5.0/configs/glm4/finetune_glm4_9b.yaml"),
    ("internlm/internlm2-7b", 7.74, "r1.5.0/research/internlm2/internlm2_7b/finetune_internlm2_7b.yaml"),
    ("mistralai/Mixtral-8x7B-v0.1", 46.7, "r1.5.0/research/mixtral/mixtral_8x7b/finetune_mixtral-8x7b.yaml"),
)


def _params(data: Path) -> list[Row]:
    from msdoctor.memory.sources import load

    out = []
    for card, billions, rel in PUBLISHED_PARAMS:
        path = data / rel
        if not path.is_file():
            continue
        out.append(
            Row(
                "parameter counts",
                card,
                billions,
                "B",
                total_params(load(path).model) / 1e9,
                f"huggingface.co/{card} (shape from {rel})",
            )
        )
    return out


def table(data: Path) -> list[Row]:
    """Every reference row; ``data`` is tests/data/memory/mindformers (the shipped configs)."""
    zero = data.parent / "hf" / "zero-7.5b" / "config.json"
    parts: list[Callable[[], list[Row]]] = [_korthikanti, _megatron, _deepspeed, _m1, _accelerate]
    rows = [r for f in parts for r in f()]
    if zero.is_file():
        from msdoctor.memory.sources import load

        rows += _zero(load(zero).model)
    rows += _params(data)
    return rows


def render(rows: list[Row]) -> str:
    w = max(len(f"{r.group}: {r.case}") for r in rows)
    lines = [f"{'reference':<{w}}  {'reference':>11}  {'msdoctor':>11}  {'ratio':>6}  unit"]
    for r in rows:
        lines.append(
            f"{r.group + ': ' + r.case:<{w}}  {r.reference:>11.4g}  {r.ours:>11.4g}  {r.ratio:>6.3f}  {r.unit}"
        )
    return "\n".join(lines)
