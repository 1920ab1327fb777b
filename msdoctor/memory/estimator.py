"""The per-device memory estimate: parameters, model states, activations, logits, overheads.

Everything is in bytes, per device, on each pipeline stage; the estimate reports the most
loaded stage. Sources, term by term:

* Parameter count: Megatron-LM ``megatron/training/theoretical_memory_usage.py``
  (attention h*(a*d) Q + 2*h*(g*d) K,V + (a*d)*h O, FFN 3*h*f SwiGLU or 2*h*f GeLU, norms 1 or 2
  per channel) plus biases when present (all linear layers, or Q/K/V only as in Qwen2 and
  ChatGLM); TP shards the matrices (norms and row-parallel biases are replicated); the
  embedding lives on the first stage and the untied (or, with pp > 1, the copied tied) output
  layer on the last; V is padded to vocab_multiple x TP. Mixture of experts: E FFNs split over
  expert parallel and an h x E router. This reproduces the published counts of the Llama-2/3,
  Qwen2.5/3, ChatGLM3, GLM-4, InternLM2 and Mixtral checkpoints (tests/test_memory_reference_table.py).
* Model states: bytes per parameter by convention (Setup's docstring), divided by the sharding
  degree as each level does: Megatron's distributed optimizer (master + Adam), DeepSpeed ZeRO-2/3
  (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py), MindSpore's parallel optimizer levels
  (mindspore/context.py parallel_optimizer_config; gathered weights in the compute dtype,
  step_parallel.cc InsertAllGatherAfterCast).
* Activations per layer, generalised from Korthikanti et al. 2022 (arXiv 2205.05198) Table 2:
  s*b*h*(R/t_sp + S/t + core/t), with R = 4 (norm inputs) + 4 (QKV and FC1 inputs) + 2 (1-byte
  dropout masks, only with dropout), S = 2 Q + 4 g/a K,V + 2 attention output + k f/h FFN
  (k = 4 GeLU, 6 SwiGLU), core = 5 a s/h materialised attention (2 without attention dropout; 0
  with flash attention or selective recompute). For GPT shapes (g = a, f = 4h, GeLU, dropout)
  this is exactly Table 2's 10 + 24/t + 5as/(ht). Full recompute keeps the layer input (2sbh,
  /t with SP) plus one layer's working set while it is recomputed. 16-bit terms double for fp32.
* Pipeline (Korthikanti section 2.3): stage i keeps min(pp - i, micro-batches) in flight (stage 0:
  L layers' worth), x (1 + (p-1)/(p*m)) with m interleaved chunks; SeqPipe (MindSpore
  ``pipeline_scheduler: seqpipe``) sends ``seq_split_num`` sequence chunks through as units and
  keeps per-layer K/V caches (MindFormers mindformers/models/llama/llama_transformer.py).
* Logits: the last stage holds the logits in the compute dtype plus the fp32 copy the softmax
  cross-entropy keeps: (bytes + 4)*s*b*V/t.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from msdoctor.domain.pipeline import stage_layers as placed
from msdoctor.memory.spec import DTYPE_BYTES, Component, Device, Estimate, ModelShape, Setup, StageTotal
from msdoctor.memory.units import fmt_bytes, fmt_count

SHARD_LEVEL = {"none": 0, "optimizer": 1, "grads": 2, "params": 3}


# -- parameters -------------------------------------------------------------------
@dataclass(frozen=True)
class LayerParams:
    per_device: float  # this device's share (TP-sharded part / t + replicated part)
    whole: int  # the whole layer
    expert: float = 0.0  # of per_device: expert FFN weights (split over expert parallel too)


def attention_params(m: ModelShape) -> tuple[int, int]:
    """(TP-sharded, replicated) attention parameters of one layer, biases and norms excluded.

    Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434 section 2.1; MindFormers
    ``MLATransformerConfig`` q_lora_rank / kv_lora_rank / qk_rope_head_dim / qk_nope_head_dim /
    v_head_dim): Q is h x q_lora then q_lora x a(nope + rope) (or h x a(nope + rope) without
    q_lora), K/V go through h x (kv_lora + rope) then kv_lora x a(nope + v), the output is a v x h;
    the down projections and their norms are replicated (Megatron-LM ``multi_latent_attention.py``
    keeps them unsplit), the up and output projections TP-sharded.
    """
    h = m.hidden_size
    if m.mla:
        a = m.num_heads
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        v = m.v_head_dim or m.qk_nope_head_dim
        replicated = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
        sharded = m.kv_lora_rank * a * (m.qk_nope_head_dim + v) + a * v * h
        if m.q_lora_rank:
            replicated += h * m.q_lora_rank + m.q_lora_rank
            sharded += m.q_lora_rank * a * qk
        else:
            sharded += h * a * qk
        return sharded, replicated
    d = m.head_width
    q, kv = m.num_heads * d, m.kv_heads * d
    return h * q + 2 * h * kv + q * h, 0


def layer_params(m: ModelShape, t: int, ep: int = 1, dense: bool = False) -> LayerParams:
    """Parameters of one transformer layer: (this device's share under TP t and expert parallel ep,
    whole layer). A mixture-of-experts layer (``dense`` False and num_experts > 1) has
    num_experts routed FFNs of expert_ffn_size, the shared experts (TP-sharded like a dense FFN)
    and an h x E router; a dense layer one FFN of ffn_size."""
    h, d, f = m.hidden_size, m.head_width, m.ffn
    q, kv = m.num_heads * d, m.kv_heads * d
    norm_w = 1 if m.norm == "rmsnorm" else 2
    glu = 3 if m.activation == "swiglu" else 2
    ffn = h * f * glu
    sharded, replicated = attention_params(m)
    replicated += 2 * h * norm_w + (2 * d * norm_w if m.qk_norm else 0)
    if m.bias:
        # column-parallel biases (QKV, FC1) are sharded; row-parallel ones (O, FC2) replicated
        sharded += q + 2 * kv
        ffn += 2 * f if m.activation == "swiglu" else f
        replicated += h
        ffn_replicated = h
    else:
        ffn_replicated = 0
        if m.qkv_bias:
            sharded += q + 2 * kv
    if m.moe and not dense:
        ef = m.expert_ffn
        one = h * ef * glu + ((2 * ef if m.activation == "swiglu" else ef) + h if m.bias else 0)
        experts = m.num_experts * one
        expert_share = experts / (t * max(1, ep))
        shared = h * m.shared_ffn_size * glu if m.shared_ffn_size else m.shared_experts * one
        router = h * m.num_experts
        return LayerParams(
            (sharded + shared) / t + expert_share + replicated + router,
            sharded + shared + experts + replicated + router,
            expert_share,
        )
    return LayerParams((sharded + ffn) / t + replicated + ffn_replicated, sharded + ffn + replicated + ffn_replicated)


def mtp_params(m: ModelShape, t: int, ep: int = 1) -> LayerParams:
    """One multi-token-prediction module (DeepSeek-V3, arXiv 2412.19437 section 2.2): a full
    transformer layer, two norms and a 2h x h projection; the embedding and output head are shared
    with the main model."""
    lp = layer_params(m, t, ep, dense=not m.moe)
    h = m.hidden_size
    norm_w = 1 if m.norm == "rmsnorm" else 2
    extra = 2 * h * h
    return LayerParams(lp.per_device + extra / t + 3 * h * norm_w, lp.whole + extra + 3 * h * norm_w, lp.expert)


def total_params(m: ModelShape, tensor_parallel: int = 1) -> int:
    """Parameters of the whole model (padded vocabulary)."""
    v = m.padded_vocab(tensor_parallel)
    h = m.hidden_size
    dense = m.dense_layers if m.moe else m.num_layers
    out = dense * layer_params(m, 1, dense=True).whole + m.moe_layers * layer_params(m, 1).whole
    out += m.mtp_layers * mtp_params(m, 1).whole + v * h + m.position_embeddings * h
    out += h * (1 if m.norm == "rmsnorm" else 2)
    if not m.tie_embeddings:
        out += v * h
    return out


def stage_layers(m: ModelShape, s: Setup) -> list[int]:
    """Layers on each pipeline stage, placed as MindFormers' LayerSetting places them (the offsets and interleaved
    chunks included): :func:`msdoctor.domain.pipeline.stage_layers`, which the training-config check uses too."""
    p = s.pipeline_stages
    n = m.num_layers + m.mtp_layers  # MindFormers places the MTP modules by the pipeline too (LayerSetting)
    counts, _ = placed(n, p, s.virtual_pipeline_chunks, s.stage_offsets)
    if counts is not None:
        return counts
    base = n // p  # a split MindFormers refuses (validate says why): the remainder on the last stages
    out = [base] * p
    for i in range(n - base * p):  # uneven split: the remainder goes to the last stages
        out[p - 1 - i] += 1
    return out


@dataclass(frozen=True)
class StageParams:
    layers: int
    params: float  # on this device
    embedding: float
    output: float
    largest_unit: float  # biggest block gathered at once under ZeRO-3 (a layer or the embedding)
    why: str
    small: float = 0.0  # params in tensors under the parallel optimizer's threshold (norm weights)
    expert: float = 0.0  # expert weights on this device (their optimizer shard group is d / ep)
    largest_tensor: float = 0.0  # biggest single weight (DeepSpeed gathers module by module)


def stage_mix(m: ModelShape, counts: list, stage: int) -> tuple[int, int, int]:
    """(dense, MoE, MTP) layers of a stage: the first dense_layers of the model are dense, the
    last mtp_layers of the layer sequence (on the last stage) are the MTP modules."""
    start = sum(counts[:stage])
    end = start + counts[stage]
    dense_end = m.dense_layers if m.moe else m.num_layers
    dense = max(0, min(end, dense_end) - start)
    mtp = max(0, end - max(start, m.num_layers))
    return dense, counts[stage] - dense - mtp, mtp


def stage_layer_params(m: ModelShape, s: Setup, stage: int, counts: list) -> LayerParams:
    """The stage's transformer layers together (dense, MoE and MTP layers each as they are)."""
    t, ep = s.tensor_parallel, s.expert_parallel
    dense_n, moe_n, mtp_n = stage_mix(m, counts, stage)
    parts = []
    if dense_n:
        parts.append((dense_n, layer_params(m, t, ep, dense=True)))
    if moe_n:
        parts.append((moe_n, layer_params(m, t, ep)))
    if mtp_n:
        parts.append((mtp_n, mtp_params(m, t, ep)))
    return LayerParams(
        sum(n * lp.per_device for n, lp in parts),
        sum(n * lp.whole for n, lp in parts),
        sum(n * lp.expert for n, lp in parts),
    )


def stage_params(m: ModelShape, s: Setup, stage: int, layers: int, lp: LayerParams) -> StageParams:
    """``lp``: the stage's layers together (stage_layer_params)."""
    t, p = s.tensor_parallel, s.pipeline_stages
    h = m.hidden_size
    v = m.padded_vocab(t)
    emb_div = t if s.embedding_tp_sharded else 1
    embedding = output = 0.0
    parts = [f"{layers} layers: {fmt_count(lp.per_device)}"]
    if stage == 0:
        embedding = v * h / emb_div + m.position_embeddings * h
        parts.append(f"embedding {v}x{h}" + (f"/{emb_div}" if emb_div > 1 else ""))
        if m.position_embeddings:
            parts.append(f"positions {m.position_embeddings}x{h}")
    if stage == p - 1:
        output = h * (1 if m.norm == "rmsnorm" else 2)
        if not m.tie_embeddings or p > 1:
            output += v * h / emb_div
            parts.append(
                ("output layer" if not m.tie_embeddings else "tied output copy")
                + f" {v}x{h}"
                + (f"/{emb_div}" if emb_div > 1 else "")
            )
        parts.append("final norm")
    total = lp.per_device + embedding + output
    largest = max(lp.per_device / max(1, layers), embedding, output)
    # norm weights are h (or head_dim) wide: below MindSpore's parallel_optimizer_threshold they stay whole
    norm_w = 1 if m.norm == "rmsnorm" else 2
    small = 0.0
    if h * DTYPE_BYTES[s.param_dtype] < s.shard_threshold:
        small = layers * (2 * h * norm_w + (2 * m.head_width * norm_w if m.qk_norm else 0))
        if stage == p - 1:
            small += h * norm_w
    tensor = max(m.hidden_size * m.ffn / t, m.hidden_size * m.num_heads * m.head_width / t, embedding, output)
    return StageParams(layers, total, embedding, output, largest, " + ".join(parts), small, lp.expert, tensor)


# -- model states -----------------------------------------------------------------
@dataclass(frozen=True)
class Widths:
    """Bytes per parameter of each model state, before sharding."""

    weights: int
    grads: int
    master: int
    optimizer: int  # Adam m, v (or SGD momentum), plus Megatron fp16's fp32 main-grad copy
    accumulation: int
    why_optimizer: str


def widths(s: Setup) -> Widths:
    """Bytes per parameter by convention (Setup's docstring says which framework keeps what)."""
    w = DTYPE_BYTES[s.param_dtype]
    half = s.param_dtype in ("bf16", "fp16")
    fw = s.framework
    master = s.master_weights if s.master_weights is not None else (fw != "mindspore" and half)
    if s.grad_dtype is not None:
        g = DTYPE_BYTES[s.grad_dtype]
    elif fw == "megatron" and s.param_dtype == "bf16":
        g = 4  # fp32 main gradients (Megatron's bf16 default, theoretical_memory_usage.py: 18 B/param)
    else:
        g = w
    state = DTYPE_BYTES[s.optimizer_state_dtype]
    opt = 2 * state if s.optimizer == "adamw" else state
    why = f"{'Adam m, v' if s.optimizer == 'adamw' else 'SGD momentum'} in {s.optimizer_state_dtype} = {opt} B/param"
    if fw == "megatron" and s.param_dtype == "fp16" and s.grad_dtype is None:
        opt += 4  # the fp32 copy of the fp16 gradients the optimizer steps on (20 B/param in total)
        why += " + fp32 main-grad copy 4 B/param"
    if fw == "deepspeed" and half:
        # stage_1_and_2.py: single_partition_of_fp32_groups' gradients (the 18 of 2P + 18P/N)
        opt += 4
        why += " + fp32 gradient partition 4 B/param (DeepSpeed stage_1_and_2.py)"
    accumulate = s.accumulation_buffer
    if accumulate is None:
        accumulate = fw == "mindspore" and (s.grad_accumulation > 1 or s.pipeline_stages > 1)
    return Widths(w, g, 4 if master else 0, opt, w if accumulate else 0, why)


def shard_degree(s: Setup) -> int:
    """Devices each sharded state is split over (1: sharding off or nothing to shard over).

    MindSpore's optimizer_weight_shard_size "will not take effect" when it does not divide the
    data-parallel group (mindspore/context.py parallel_optimizer_config); then the group is used.
    """
    if s.optimizer_sharding == "none":
        return 1
    group = s.data_parallel * s.context_parallel
    size = s.optimizer_shard_size
    if size and s.framework == "mindspore" and (size > group or group % size):
        size = None
    return max(1, size or group)


def expert_shard_degree(s: Setup) -> int:
    """Devices an expert weight's optimizer shard is split over.

    Experts are split over expert_parallel inside the data-parallel group, so each expert weight
    is repeated on (data x context parallel) / ep devices; the parallel optimizer shards it over
    that group, or over optimizer_weight_shard_size of it when that divides it (MindSpore
    ``parallel_optimizer_config``: a size that does not divide a parameter's group "will not
    take effect", mindspore/context.py).
    """
    if s.optimizer_sharding == "none":
        return 1
    group = max(1, (s.data_parallel * s.context_parallel) // max(1, s.expert_parallel))
    size = s.optimizer_shard_size
    if size and (s.framework != "mindspore" or (size <= group and group % size == 0)):
        return max(1, min(size, group))
    return group


#: what MindSpore's parallel optimizer keeps per level (MindSpore 2.7 ``mindspore/context.py``,
#: ``set_auto_parallel_context`` parallel_optimizer_config; docs features/parallel/optimizer_parallel.md)
MS_LEVEL_SOURCE = {
    1: "level1 shards weights and optimizer states (mindspore/context.py parallel_optimizer_config)",
    2: "level2 also shards gradients, i.e. the accumulated ones (= gradient_accumulation_shard)",
    3: "level3 also all-gathers the weights again before backward, freeing the forward copy",
}
GATHER_AFTER_CAST = (
    "MindSpore all-gathers after the fp32 -> 16-bit Cast (step_parallel.cc "
    "InsertAllGatherAfterCast / FindChildCastWithFP32ToFP16)"
)


def gather_dtype_bytes(s: Setup) -> int:
    """Width of the all-gathered weights: the compute dtype when 32-bit weights are cast for use."""
    if s.framework == "mindspore" and s.param_dtype == "fp32" and s.precision in ("bf16", "fp16"):
        return DTYPE_BYTES[s.precision]
    return DTYPE_BYTES[s.param_dtype]


def _gathered(
    s: Setup, sp: StageParams, level: int, small: float, weight_bytes: int, unsharded: float = 0.0
) -> tuple[float, str]:
    """What the all-gathers hold next to the own shards (the AllGather's output is a whole tensor).

    ``unsharded``: params the parallel optimizer leaves whole besides the small ones (expert weights with no
    data-parallel replica: expert_parallel = data x context parallel), which are not all-gathered either."""
    fw, n = s.framework, sp.params - unsharded
    ms = fw == "mindspore"
    gb = gather_dtype_bytes(s)
    gdt = {2: "16-bit", 4: "fp32"}.get(gb, f"{gb} B")
    cast = f"; {GATHER_AFTER_CAST}" if ms and gb < weight_bytes else ""
    if level >= 3 or (ms and level >= 1 and s.comm_recompute):
        unit = sp.largest_tensor if fw == "deepspeed" else sp.largest_unit
        why_free = (
            "level3: gathered again before backward"
            if level >= 3 and ms
            else "parallel_optimizer_comm_recompute: gathered again in backward"
            if ms
            else "ZeRO-3: gathered per block"
        )
        return (
            min(n - small, 2 * unit) * gb,
            f"two {'tensors' if fw == 'deepspeed' else 'blocks'} of {round(unit):,} params gathered at a time x "
            f"{gb} B ({gdt}), freed per layer ({why_free}){cast}",
        )
    if ms and level >= 1:
        return (
            (n - small) * gb,
            f"{round(n - small):,} params x {gb} B ({gdt}): the all-gathered weights are kept from forward to "
            "backward in graph mode (set parallel_optimizer_comm_recompute or optimizer_level level3 to free "
            f"them per layer){cast}",
        )
    return 0.0, ""


def state_components(m: ModelShape, s: Setup, sp: StageParams) -> list[Component]:
    """Weights, gathered weights, gradients, master, optimizer states, accumulation buffer."""
    wd = widths(s)
    n = sp.params
    d = shard_degree(s)
    level = SHARD_LEVEL[s.optimizer_sharding] if d > 1 else 0
    fw = s.framework
    ms = fw == "mindspore"
    small = sp.small if ms and level else 0.0
    expert = sp.expert
    de = expert_shard_degree(s) if d > 1 else 1
    out: list[Component] = []
    pn = f"{round(n):,} params"

    def part(width: float, shard: bool) -> tuple[float, str]:
        if not shard:
            return n * width, ""
        dense = n - small - expert
        note = f" / {d} (sharded"
        if expert:
            note += f"; the {round(expert):,} expert params / {de}"
        if small:
            note += f"; {round(small):,} in tensors under the {s.shard_threshold // 1024} KB parallel_optimizer_threshold stay whole"
        return dense * width / d + expert * width / de + small * width, note + ")"

    # weights: the stored copy; ZeRO-3 and MindSpore's parallel optimizer store a 1/d shard
    b, note = part(wd.weights, level >= 3 or (ms and level >= 1))
    src = f"; {MS_LEVEL_SOURCE[level]}" if ms and level else ""
    out.append(Component("parameters", "parameters", round(b), f"{pn} x {wd.weights} B ({s.param_dtype}){note}{src}"))
    gathered, gwhy = _gathered(s, sp, level, small, wd.weights, expert if de == 1 else 0.0)
    if gathered and expert and de == 1:
        gwhy += (
            f"; the {round(expert):,} expert params have no data-parallel replica (expert_parallel = data x "
            "context parallel), so they are neither sharded nor gathered"
        )
    if gathered:
        out.append(Component("gathered_parameters", "gathered weights", round(gathered), gwhy))
    # gradients: a sliced MindSpore weight's gradient is its slice (the AllGather's backward is a
    # ReduceScatter); ZeRO-2 keeps a 1/d partition; DeepSpeed ZeRO-3 reduces straight into the fp32 partition
    if not (fw == "deepspeed" and level >= 3):
        b, note = part(wd.grads, level >= 2 or (ms and level >= 1))
        gname = "fp32" if wd.grads == 4 else "16-bit"
        why = f"{pn} x {wd.grads} B ({gname}){note}"
        if ms and level >= 1:
            why += " (a sliced weight's gradient is reduce-scattered to its slice)"
        out.append(Component("gradients", "gradients", round(b), why))
    if wd.master:
        b, note = part(wd.master, level >= 1)
        out.append(
            Component(
                "master_weights", "master weights", round(b), f"{pn} x 4 B (fp32 master copy of 16-bit weights){note}"
            )
        )
    b, note = part(wd.optimizer, level >= 1)
    out.append(
        Component(
            "optimizer_states", "optimizer states", round(b), f"{pn} x {wd.optimizer} B ({wd.why_optimizer}){note}"
        )
    )
    if wd.accumulation:
        b, note = part(wd.accumulation, level >= 2 or (level >= 1 and s.accumulation_shard))
        reason = "gradient accumulation" if s.grad_accumulation > 1 else "pipeline micro-batches"
        if level == 1 and not s.accumulation_shard:
            note += " (whole at level1: gradient_accumulation_shard / level2 shard it)"
        out.append(
            Component(
                "accumulation",
                "accumulation buffer",
                round(b),
                f"{pn} x {wd.accumulation} B (accu_grads for {reason}){note}",
            )
        )
    return out


# -- activations ------------------------------------------------------------------
@dataclass(frozen=True)
class LayerActivation:
    bytes: float  # one layer, one micro-batch
    why: str


def layer_activation(m: ModelShape, s: Setup, mode: str, comm: bool = False) -> LayerActivation:
    """Activation bytes one layer keeps for backward, for one micro-batch (or SeqPipe chunk).

    mode: "none" | "selective" | "full" (full: only the checkpointed layer input).
    comm: the layer's gathered norm outputs are recomputed (MindFormers select_comm_recompute).
    """
    seq = s.seq_length / s.context_parallel
    b, h, t = s.micro_batch_size, m.hidden_size, s.tensor_parallel
    sbh = seq * b * h
    scale = DTYPE_BYTES[s.precision] / 2  # the paper's coefficients are for 16-bit tensors
    sp = s.sequence_parallel and t > 1
    tr = t if sp else 1
    if mode == "full":
        full = 2 * scale * sbh / tr
        return LayerActivation(
            full,
            f"layer input only: 2*s*b*h{'/t' if sp else ''} = 2*{seq:g}*{b}*{h}"
            + (f"/{t}" if sp else "")
            + (" (fp32)" if scale == 2 else ""),
        )
    drop = 2 if m.dropout else 0
    # R: norm inputs (4) + QKV and FC1 inputs (4) + dropout masks. With sequence parallel Megatron
    # stashes the sequence shard of the QKV/FC1 inputs and gathers again in backward (Korthikanti
    # Table 2: all of R / t); MindSpore graph mode keeps the all-gathered input of the matmul unless
    # select_comm_recompute recomputes the norm and its gather.
    gathered_kept = sp and s.framework == "mindspore" and not comm
    r_sharded = 4 * scale + drop + (0 if gathered_kept else 4 * scale)
    r_full = 4 * scale if gathered_kept else 0.0
    qf = m.num_heads * m.head_width / h
    kvf = m.kv_heads * m.head_width / h
    k = 6 if m.activation == "swiglu" else 4
    ffn_note = f"{m.activation} k={k}"
    if mode == "selective" and s.ffn_selective:
        k -= 2  # the FFN activation output (FC2 input) is recomputed
        ffn_note += "-2 (FFN activation recomputed: MindFormers select_recompute)"
    ffn_coef = k * m.ffn / h
    if m.num_experts > 1:
        # each token's FFN activations in each of its top-k experts (up to capacity), plus the
        # dispatched and combined hidden states (2 x h per routed copy); shared experts see every token
        routed = m.experts_per_token * max(1.0, m.capacity_factor)
        shared = m.shared_ffn_size or m.shared_experts * m.expert_ffn
        ffn_coef = (k * m.expert_ffn / h + 4) * routed + k * shared / h
        ffn_note += f", MoE top-{m.experts_per_token} x{routed:g} routed copies of {m.expert_ffn}" + (
            f" + shared {shared}" if shared else ""
        )
    s_coef = (2 * qf + 4 * kvf + 2 * qf + ffn_coef) * scale
    if s.flash_attention:
        core = 4 * m.num_heads / h  # fp32 softmax statistics (log-sum-exp) only
        core_note = "flash attention: LSE only"
    elif mode == "selective":
        core = 0.0
        core_note = "attention core recomputed"
    else:
        a_drop = 1 if m.attention_dropout else 0
        core = (2 * scale + a_drop * (1 + 2 * scale)) * m.num_heads * seq / h
        core_note = f"materialised attention scores {core * h / (m.num_heads * seq):g}*a*s/h"
    per = sbh * (r_sharded / tr + r_full + s_coef / t + core / t)
    r_txt = f"{r_sharded:g}/{tr}" + (f" + {r_full:g}" if r_full else "")
    why = (
        f"s*b*h*(R/{tr} + S/{t} + core/{t}) = {seq:g}*{b}*{h}*({r_txt} + {s_coef:.3f}/{t} + {core:.3f}/{t}) "
        f"[R: norm, QKV and FC1 inputs{', dropout masks' if drop else ''}"
        + (
            "; the gathered QKV/FC1 inputs are kept whole (MindSpore graph mode, no select_comm_recompute)"
            if r_full
            else ""
        )
        + f"; S: Q, K, V, attention output, FFN ({ffn_note}); core: {core_note}]"
    )
    return LayerActivation(per, why)


def units(s: Setup) -> int:
    """Pieces a micro-batch goes through the pipeline as: SeqPipe chunks, else 1."""
    return max(1, s.seq_split_num) if s.pipeline_scheduler == "seqpipe" else 1


def in_flight(s: Setup, stage: int) -> float:
    """Units (micro-batches, or SeqPipe chunks) whose activations stage `stage` holds at its peak.

    1F1B: min(p - stage, micro-batches); GPipe: all of them; interleaved (virtual chunks m):
    x (1 + (p - 1)/(p m)) (Korthikanti et al. section 2.3). SeqPipe: the units are sequence
    chunks, and a micro-batch's chunks run backward in reverse order (a chunk's K/V gradients come
    from the later chunks that attend to it), so every stage holds at least one micro-batch's
    seq_split_num chunks: min(all chunks, max(p - stage, seq_split_num)).
    """
    p = s.pipeline_stages
    u = units(s)
    if p == 1:
        return float(u)
    total = max(1, s.micro_batch_num) * u
    if s.pipeline_scheduler == "gpipe":
        return float(total)
    n = float(min(p - stage, total)) if u == 1 else float(min(total, max(p - stage, u)))
    if s.virtual_pipeline_chunks > 1:
        n *= 1 + (p - 1) / (p * s.virtual_pipeline_chunks)
    return min(n, float(total))  # never more in flight than there are


def recomputed_layers(s: Setup, stage: int, layers: int) -> int:
    """Layers of the stage with full recompute (MindFormers: the first n of each stage)."""
    if s.recompute != "full":
        return 0
    if s.recompute_layers is None:
        return layers
    counts = list(s.recompute_layers)
    return min(layers, int(counts[stage])) if stage < len(counts) else 0


def _per_stage(counts: Optional[tuple], stage: int, layers: int, default: int) -> int:
    if counts is None:
        return default
    return min(layers, int(counts[stage])) if stage < len(counts) else 0


def layer_plan(s: Setup, stage: int, layers: int) -> tuple[int, int, int]:
    """(full, selective-only, comm-recomputed among the rest) layers of a stage, combined as
    MindFormers' LayerSetting.set applies them (mindformers/models/utils.py): the first n layers of
    each stage get full recompute; select_recompute applies to its first m layers except the fully
    recomputed ones; select_comm_recompute likewise."""
    full = recomputed_layers(s, stage, layers)
    if s.recompute == "selective":
        sel = _per_stage(s.selective_layers, stage, layers, layers)
    elif s.recompute == "full":
        sel = _per_stage(s.selective_layers, stage, layers, 0)
    else:
        sel = 0
    comm = _per_stage(s.comm_recompute_layers, stage, layers, 0)
    return full, max(0, sel - full), max(0, comm - full)


def _io_components(m: ModelShape, s: Setup, stage: int, unit: Setup, flight: float) -> list[Component]:
    """Token ids and embedding mask on the first stage; head inputs and logits on the last."""
    p, t = s.pipeline_stages, s.tensor_parallel
    seq = unit.seq_length / s.context_parallel
    b, h = s.micro_batch_size, m.hidden_size
    sbh = seq * b * h
    scale = DTYPE_BYTES[s.precision] / 2
    tr = t if (s.sequence_parallel and t > 1) else 1
    out: list[Component] = []
    extras, parts = 0.0, []
    if stage == 0:
        ids = flight * 8 * seq * b
        extras += ids
        parts.append(f"int64 token ids 8*{seq:g}*{b} x {flight:g}")
        if m.dropout:
            extras += flight * sbh / tr
            parts.append(f"embedding dropout mask {seq:g}*{b}*{h}/{tr} x {flight:g}")
    if stage == p - 1:
        extras += 2 * (2 * scale * sbh / tr)
        parts.append(f"final-norm and output-layer inputs 2 x {2 * scale:g}*{seq:g}*{b}*{h}/{tr}")
    if extras:
        out.append(Component("embedding_io", "embedding / head inputs", round(extras), " + ".join(parts), "activation"))
    if stage == p - 1:
        v = m.padded_vocab(t)
        cb = DTYPE_BYTES[s.precision]
        seq = s.seq_length / s.context_parallel  # SeqPipe: the chunks' logits wait for their backward together
        logits = (cb + 4) * seq * b * v / t
        out.append(
            Component(
                "logits",
                "logits / loss buffers",
                round(logits),
                f"({cb} B {s.precision} logits + 4 B fp32 softmax for the cross-entropy) x s*b*V/t = "
                f"{cb + 4}*{seq:g}*{b}*{v}/{t}",
                "activation",
            )
        )
    return out


def activation_components(
    m: ModelShape, s: Setup, stage: int, layers: int, cache: Optional[dict] = None
) -> list[Component]:
    cache = cache if cache is not None else {}
    u = units(s)
    unit = s.with_(seq_length=max(1, s.seq_length // u)) if u > 1 else s

    def act(mode: str, comm: bool = False) -> LayerActivation:
        key = (mode, comm)
        if key not in cache:
            cache[key] = layer_activation(m, unit, mode, comm)
        return cache[key]

    p, t = s.pipeline_stages, s.tensor_parallel
    b = s.micro_batch_size
    flight = in_flight(s, stage)
    full_n, sel_n, comm_n = layer_plan(s, stage, layers)
    none_n = layers - full_n - sel_n
    comm_sel = min(comm_n, sel_n)
    comm_none = min(comm_n - comm_sel, none_n)
    groups = [
        (full_n, act("full"), "full"),
        (sel_n - comm_sel, act("selective"), "selective"),
        (comm_sel, act("selective", True), "selective+comm"),
        (none_n - comm_none, act("none"), "none"),
        (comm_none, act("none", True), "none+comm"),
    ]
    groups = [g for g in groups if g[0]]
    stored = flight * sum(n * a.bytes for n, a, _ in groups)
    what = "SeqPipe chunk" if u > 1 else "micro-batch"
    flight_txt = f"{flight:g} {what}{'es' if flight != 1 and u == 1 else 's' if flight != 1 else ''} in flight"
    sched = ""
    if p > 1:
        sched = f"; scheduler {s.pipeline_scheduler}" + (f", {u} chunks of {unit.seq_length} tokens" if u > 1 else "")
    why = (
        f"{flight_txt} x ("
        + " + ".join(f"{n} layers x {fmt_bytes(a.bytes)} ({name}: {a.why})" for n, a, name in groups)
        + ")"
        + sched
    )
    # sequence parallel in MindSpore graph mode: the all-gathered QKV / FC1 inputs are kept whole where Megatron
    # keeps the sequence shard (layer_activation's r_full); counted apart, as an unconfirmed term of the band
    sp_kept = flight * sum(
        n * (a.bytes - act(name.split("+")[0], True).bytes) for n, a, name in groups if name in ("selective", "none")
    )
    out: list[Component] = [Component("activations", "activations", round(stored - sp_kept), why, "activation")]
    if sp_kept > 0:
        out.append(
            Component(
                "sp_gathered_inputs",
                "sequence-parallel gathered inputs",
                round(sp_kept),
                f"{flight_txt} x the all-gathered QKV and FC1 inputs (4*s*b*h*(1 - 1/t) per layer) "
                "kept whole from forward to backward (MindSpore graph mode without "
                "select_comm_recompute)",
                "activation",
            )
        )
    # while one layer is recomputed in backward, it briefly holds what the recompute had dropped
    kept = min((a.bytes for n, a, name in groups if name != "none"), default=None)
    if kept is not None and act("none").bytes > kept:
        work = act("none").bytes - kept
        out.append(
            Component(
                "recompute_working_set",
                "recompute working set",
                round(work),
                f"one layer recomputed in backward: {fmt_bytes(act('none').bytes)} without recompute "
                f"- {fmt_bytes(kept)} kept",
                "activation",
            )
        )
    if u > 1:
        # SeqPipe keeps K/V of the whole sequence and their gradients per layer (MindFormers r1.5.0
        # mindformers/models/llama/llama_transformer.py: key_cache, value_cache, key/value_cache_grad)
        kv = 4 * b * (m.kv_heads / t) * (s.seq_length / s.context_parallel) * m.head_width * DTYPE_BYTES[s.precision]
        out.append(
            Component(
                "seqpipe_kv_cache",
                "SeqPipe K/V caches",
                round(layers * kv),
                f"{layers} layers x 4 x b*(g/t)*s*d*{DTYPE_BYTES[s.precision]} = 4*{b}*{m.kv_heads}/{t}"
                f"*{s.seq_length}*{m.head_width} (key/value caches and their gradients)",
                "activation",
            )
        )
    out += _io_components(m, s, stage, unit, flight)
    return out


# -- the estimate -----------------------------------------------------------------
def overhead_components(device: Device, allocated: float) -> list[Component]:
    out = [
        Component(
            "runtime_reserve", "runtime reserve", int(device.reserve), device.reserve_why or "none counted", "overhead"
        )
    ]
    if device.fragmentation:
        out.append(
            Component(
                "fragmentation",
                "fragmentation margin",
                round(allocated * device.fragmentation),
                f"{device.fragmentation:.0%} of the {fmt_bytes(allocated)} allocated "
                "(allocator caching and fragmentation)",
                "overhead",
            )
        )
    return out


def _stage_breakdown(
    m: ModelShape, s: Setup, layers: list[int], stage: int, cache: dict
) -> tuple[StageParams, list[Component]]:
    sp = stage_params(m, s, stage, layers[stage], stage_layer_params(m, s, stage, layers))
    comps = state_components(m, s, sp) + activation_components(m, s, stage, layers[stage], cache)
    return sp, comps


def estimate(model: ModelShape, setup: Setup, device: Optional[Device] = None) -> Estimate:
    """Memory per device on the most loaded pipeline stage, every component with its why."""
    device = device or Device()
    layers = stage_layers(model, setup)
    cache: dict = {}
    best = None
    stages = []
    for i in _candidate_stages(model, setup):
        sp, comps = _stage_breakdown(model, setup, layers, i, cache)
        allocated = sum(c.bytes for c in comps)
        total = allocated + sum(c.bytes for c in overhead_components(device, allocated))
        stages.append(StageTotal(i, layers[i], round(sp.params), total))
        if best is None or total > best[0]:
            best = (total, i, sp, comps, allocated)
    assert best is not None
    _, stage, sp, comps, allocated = best
    comps = comps + overhead_components(device, allocated)
    notes = []
    if setup.pipeline_stages > 1:
        notes.append(
            f"pipeline stage {stage} of {setup.pipeline_stages} is the most loaded "
            f"({sp.layers} layers: {sp.why}); schedule modelled: {setup.pipeline_scheduler}"
            + (f" with {units(setup)} sequence chunks per micro-batch" if units(setup) > 1 else "")
        )
    return Estimate(
        model,
        setup,
        device,
        stage,
        tuple(comps),
        total_params(model, setup.tensor_parallel),
        round(sp.params),
        tuple(stages),
        tuple(notes),
    )


def _candidate_stages(m: ModelShape, s: Setup) -> list[int]:
    """Stages that can be the most loaded: all with uneven layers, else the first and the last
    (a middle stage has fewer micro-batches in flight than the first and no embedding or head)."""
    p = s.pipeline_stages
    if p == 1:
        return [0]
    if (
        s.stage_offsets
        or s.recompute_layers is not None
        or s.selective_layers is not None
        or s.comm_recompute_layers is not None
        or (m.num_layers + m.mtp_layers) % p
        or (m.moe and m.dense_layers)
        or m.mtp_layers
    ):
        return list(range(p))
    return [0, p - 1]
