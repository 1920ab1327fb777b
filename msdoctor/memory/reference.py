"""Published reference formulas, implemented from their descriptions for cross-checks.

* Megatron-LM ``megatron/training/theoretical_memory_usage.py`` (NVIDIA/Megatron-LM @d98e8a64):
  weights + optimizer, the SP + selective activation
  formula, and the ``without_sp`` one. Dense models only (no MoE, MTP or MLA terms).
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models" (arXiv 2205.05198), Table 2 per-layer activation memory and the section 4.3
  extras.

These are what the estimator is checked against (tests/test_memory_reference.py) and
what ``msdoctor memory -v`` prints as a second opinion. They are not the estimator:
Megatron's functions ignore SwiGLU and GQA in activations and only look at stage 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

KORTHIKANTI_MODES = ("none", "tp", "tp_sp", "tp_selective", "tp_sp_selective", "full", "full_sp")


@dataclass(frozen=True)
class MegatronArgs:
    """The subset of Megatron's args its theoretical memory functions read."""

    num_layers: int
    hidden_size: int
    num_attention_heads: int
    ffn_hidden_size: int
    padded_vocab_size: int
    seq_length: int
    micro_batch_size: int = 1
    num_query_groups: Optional[int] = None  # None: no GQA
    kv_channels: Optional[int] = None  # None: hidden / heads
    swiglu: bool = False
    rmsnorm: bool = False
    untie_embeddings_and_output_weights: bool = False
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    data_parallel_size: int = 1
    virtual_pipeline_model_parallel_size: Optional[int] = None
    use_distributed_optimizer: bool = False
    sequence_parallel: bool = False
    recompute_granularity: Optional[str] = None  # "selective" | "full" | None


def megatron_weight_count(a: MegatronArgs) -> tuple[float, float]:
    """(parameters in the whole model, parameters on the most loaded shard), Megatron's way."""
    h, L = a.hidden_size, a.num_layers
    heads = a.num_attention_heads
    groups = a.num_query_groups or heads
    kv = a.kv_channels or h // heads
    ratio = kv * heads / h
    norm_size = 1 if a.rmsnorm else 2
    attention = 2 * h * h * (1 + groups / heads) * ratio
    mlp = 2 * h * a.ffn_hidden_size * (1.5 if a.swiglu else 1)
    block = L * (attention + mlp)
    norms = L * 2 * h * norm_size + norm_size * h  # two per layer plus the final norm
    embedding = h * a.padded_vocab_size
    total = block + norms + embedding * (2 if a.untie_embeddings_and_output_weights else 1)
    t, p = a.tensor_model_parallel_size, a.pipeline_model_parallel_size
    shard = (block / p + embedding) / t + norms / p
    if a.untie_embeddings_and_output_weights and p == 1:
        shard += embedding / t
    return total, shard


def megatron_weight_and_optimizer_bytes(a: MegatronArgs) -> float:
    """compute_weight_and_optimizer_memory: 18 B/param, or 6 + 12/d with the distributed optimizer."""
    _, shard = megatron_weight_count(a)
    per_param = 6 + 12 / a.data_parallel_size if a.use_distributed_optimizer else 18
    return shard * per_param


def _pipeline_factor(a: MegatronArgs, num_microbatches: Optional[int]) -> float:
    p = a.pipeline_model_parallel_size
    if a.virtual_pipeline_model_parallel_size:
        return 1 + (p - 1) / (p * a.virtual_pipeline_model_parallel_size)
    if p > 1 and num_microbatches is not None:
        return min(1.0, num_microbatches / p)
    return 1.0


def megatron_activation_layer_bytes(a: MegatronArgs) -> float:
    """One layer under SP + selective, per TP rank (the verbose line's "per layer" figure)."""
    s, b, h = a.seq_length, a.micro_batch_size, a.hidden_size
    return s * b * h * (18 + 4 * a.ffn_hidden_size / h) / a.tensor_model_parallel_size


def megatron_activation_bytes(a: MegatronArgs, num_microbatches: Optional[int] = None) -> float:
    """compute_activation_memory: first stage, assumes sequence parallel + selective recompute."""
    s, b, h, p = a.seq_length, a.micro_batch_size, a.hidden_size, a.pipeline_model_parallel_size
    act = s * b * h * (18 + 4 * a.ffn_hidden_size / h) * a.num_layers
    act += 8 * s * b * p  # int64 token ids, p micro-batches in flight
    act += s * b * h * p  # embedding dropout mask
    act *= _pipeline_factor(a, num_microbatches)
    if p == 1:
        act += s * b * h * 4 * (1 + a.padded_vocab_size / h)  # final LN, output-layer input, fp32 logits
    return act / a.tensor_model_parallel_size


def megatron_activation_bytes_without_sp(a: MegatronArgs, num_microbatches: Optional[int] = None) -> float:
    """compute_activation_memory_without_sp (HEAD): TP only, x1.05 for temporaries."""
    s, b, h, p, t = (
        a.seq_length,
        a.micro_batch_size,
        a.hidden_size,
        a.pipeline_model_parallel_size,
        a.tensor_model_parallel_size,
    )
    act = s * b * h * (10 + 24 / t) * a.num_layers
    act += 8 * s * b * p + s * b * h * p  # not divided by t
    act *= _pipeline_factor(a, num_microbatches)
    if p == 1:
        act += 2 * (s * b * a.padded_vocab_size / t + s * b * h)  # bf16 logits + final-LN output
    return act * 1.05


def megatron_theoretical_bytes(a: MegatronArgs, num_microbatches: Optional[int] = None) -> tuple[float, float]:
    """(weight and optimizer, activation) as report_theoretical_memory picks them (HEAD):
    the SP formula when sequence_parallel and selective recompute, else without_sp."""
    wo = megatron_weight_and_optimizer_bytes(a)
    if a.sequence_parallel and a.recompute_granularity == "selective":
        return wo, megatron_activation_bytes(a, num_microbatches)
    return wo, megatron_activation_bytes_without_sp(a, num_microbatches)


# -- Korthikanti et al. 2022, Table 2 -------------------------------------------------
def korthikanti_layer_bytes(s: int, b: int, h: int, a: int, t: int, mode: str) -> float:
    """Activation bytes of one layer (16-bit activations, 1-byte dropout masks, f = 4h)."""
    sbh = s * b * h
    if mode == "none":
        return sbh * (34 + 5 * a * s / h)
    if mode == "tp":
        return sbh * (10 + 24 / t + 5 * a * s / (h * t))
    if mode == "tp_sp":
        return sbh * (34 / t + 5 * a * s / (h * t))
    if mode == "tp_selective":
        return sbh * (10 + 24 / t)
    if mode == "tp_sp_selective":
        return sbh * 34 / t
    if mode == "full":
        return sbh * 2
    if mode == "full_sp":
        return sbh * 2 / t
    raise ValueError(f"unknown mode {mode!r}; one of {', '.join(KORTHIKANTI_MODES)}")


def korthikanti_total_bytes(s: int, b: int, h: int, a: int, t: int, p: int, L: int, v: int, mode: str) -> float:
    """First-stage total: L x per layer, + embedding dropout mask sbhp/t, + (p = 1) 4sbh/t (1 + v/h)."""
    out = L * korthikanti_layer_bytes(s, b, h, a, t, mode) + s * b * h * p / t
    if p == 1:
        out += 4 * s * b * h / t * (1 + v / h)
    return out
