"""The per-device memory estimate: parameters, model states, activations, logits, overheads.

Formulas and their sources are in research/memory.md; the section numbers below
point there. Everything is in bytes, per device, on each pipeline stage; the
estimate reports the most loaded stage.

* Parameter count (section 3.1, 11): attention h*(a*d) Q + 2*h*(g*d) K,V + (a*d)*h O,
  FFN 3*h*f (SwiGLU) or 2*h*f (GeLU), norms 1 or 2 per channel, biases when present;
  TP shards the matrices (norms and row-parallel biases are replicated); the
  embedding lives on the first stage and the untied (or, with pp > 1, the copied
  tied) output layer on the last; V is padded to vocab_multiple x TP.
* Model states: bytes per parameter by precision and framework (section 9), divided
  by the sharding degree as each sharding level does (sections 3.1, 7.4, 11).
* Activations per layer (section 2.5, derived from Korthikanti et al. 2022, Table 2):
  s*b*h*(R/t_sp + S/t + core/t), with R = 4 (norm inputs) + 4 (QKV and FC1 inputs)
  + 2 (1-byte dropout masks, only with dropout), S = 2 Q + 4 g/a K,V + 2 attention
  output + k f/h FFN (k = 4 GeLU, 6 SwiGLU), core = 5 a s/h materialised attention
  (2 without attention dropout; 0 with flash attention or selective recompute).
  For GPT shapes (g = a, f = 4h, GeLU, dropout) this is exactly Table 2's
  10 + 24/t + 5as/(ht). Full recompute keeps the layer input (2sbh, /t with SP) plus
  one layer's working set while it is recomputed. 16-bit terms double for fp32.
* Pipeline (section 2.3): stage i keeps min(pp - i, micro_batch_num) micro-batches in
  flight (stage 0: L layers' worth), x (1 + (p-1)/(p*m)) with m interleaved chunks.
* Logits (sections 2.3, 3.6): the last stage holds the logits in the compute dtype
  plus the fp32 copy the softmax cross-entropy keeps: (bytes + 4)*s*b*V/t.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from msdoctor.memory.spec import DTYPE_BYTES, Component, Device, Estimate, ModelShape, Setup, StageTotal
from msdoctor.memory.units import fmt_bytes, fmt_count

SHARD_LEVEL = {"none": 0, "optimizer": 1, "grads": 2, "params": 3}


# -- parameters -------------------------------------------------------------------
@dataclass(frozen=True)
class LayerParams:
    per_device: float  # this device's share (TP-sharded part / t + replicated part)
    whole: int  # the whole layer


def layer_params(m: ModelShape, t: int) -> LayerParams:
    """Parameters of one transformer layer: (this device's share under TP t, whole layer)."""
    h, d, f = m.hidden_size, m.head_width, m.ffn
    q, kv = m.num_heads * d, m.kv_heads * d
    norm_w = 1 if m.norm == "rmsnorm" else 2
    sharded = h * q + 2 * h * kv + q * h + h * f * (3 if m.activation == "swiglu" else 2)
    replicated = 2 * h * norm_w + (2 * d * norm_w if m.qk_norm else 0)
    if m.bias:
        # column-parallel biases (QKV, FC1) are sharded; row-parallel ones (O, FC2) replicated
        sharded += q + 2 * kv + (2 * f if m.activation == "swiglu" else f)
        replicated += 2 * h
    return LayerParams(sharded / t + replicated, sharded + replicated)


def total_params(m: ModelShape, tensor_parallel: int = 1) -> int:
    """Parameters of the whole model (padded vocabulary)."""
    v = m.padded_vocab(tensor_parallel)
    h = m.hidden_size
    out = m.num_layers * layer_params(m, 1).whole + v * h + m.position_embeddings * h
    out += h * (1 if m.norm == "rmsnorm" else 2)
    if not m.tie_embeddings:
        out += v * h
    return out


def stage_layers(m: ModelShape, s: Setup) -> list[int]:
    """Layers on each pipeline stage (MindFormers offsets move layers between stages)."""
    p = s.pipeline_stages
    base = m.num_layers // p
    if s.stage_offsets and len(s.stage_offsets) == p:
        return [base + int(o) for o in s.stage_offsets]
    out = [base] * p
    for i in range(m.num_layers - base * p):  # uneven split: the remainder goes to the last stages
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


def stage_params(m: ModelShape, s: Setup, stage: int, layers: int, lp: LayerParams) -> StageParams:
    t, p = s.tensor_parallel, s.pipeline_stages
    h = m.hidden_size
    v = m.padded_vocab(t)
    emb_div = t if s.embedding_tp_sharded else 1
    embedding = output = 0.0
    parts = [f"{layers} layers x {fmt_count(lp.per_device)}"]
    if stage == 0:
        embedding = v * h / emb_div + m.position_embeddings * h
        parts.append(f"embedding {v}x{h}" + (f"/{emb_div}" if emb_div > 1 else ""))
        if m.position_embeddings:
            parts.append(f"positions {m.position_embeddings}x{h}")
    if stage == p - 1:
        output = h * (1 if m.norm == "rmsnorm" else 2)
        if not m.tie_embeddings or p > 1:
            output += v * h / emb_div
            parts.append(("output layer" if not m.tie_embeddings else "tied output copy") + f" {v}x{h}"
                         + (f"/{emb_div}" if emb_div > 1 else ""))
        parts.append("final norm")
    total = layers * lp.per_device + embedding + output
    largest = max(lp.per_device, embedding, output)
    return StageParams(layers, total, embedding, output, largest, " + ".join(parts))


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
    w = DTYPE_BYTES[s.param_dtype]
    half = s.param_dtype in ("bf16", "fp16")
    megatron = s.framework == "megatron"
    master = s.master_weights if s.master_weights is not None else (megatron and half)
    if s.grad_dtype is not None:
        g = DTYPE_BYTES[s.grad_dtype]
    elif megatron and s.param_dtype == "bf16":
        g = 4  # fp32 main gradients (Megatron's bf16 default, research/memory.md 3.1)
    else:
        g = w
    state = DTYPE_BYTES[s.optimizer_state_dtype]
    opt = 2 * state if s.optimizer == "adamw" else state
    why = f"{'Adam m, v' if s.optimizer == 'adamw' else 'SGD momentum'} in {s.optimizer_state_dtype} = {opt} B/param"
    if megatron and s.param_dtype == "fp16" and s.grad_dtype is None:
        opt += 4  # the fp32 copy of the fp16 gradients the optimizer steps on (20 B/param in total)
        why += " + fp32 main-grad copy 4 B/param"
    accumulate = s.accumulation_buffer
    if accumulate is None:
        accumulate = s.framework == "mindspore" and (s.grad_accumulation > 1 or s.pipeline_stages > 1)
    return Widths(w, g, 4 if master else 0, opt, w if accumulate else 0, why)


def shard_degree(s: Setup) -> int:
    """Devices each sharded state is split over (1: sharding off or nothing to shard over)."""
    if s.optimizer_sharding == "none":
        return 1
    return max(1, s.optimizer_shard_size or s.data_parallel * s.context_parallel)


def state_components(m: ModelShape, s: Setup, sp: StageParams) -> list[Component]:
    """Weights, gathered weights, gradients, master, optimizer states, accumulation buffer."""
    wd = widths(s)
    n = sp.params
    d = shard_degree(s)
    level = SHARD_LEVEL[s.optimizer_sharding] if d > 1 else 0
    ms = s.framework == "mindspore"
    out: list[Component] = []
    pn = f"{round(n):,} params"

    def div(shard: bool) -> tuple[int, str]:
        return (d, f" / {d} (sharded)") if shard else (1, "")

    # weights: the stored copy; ZeRO-3 and MindSpore's parallel optimizer store a 1/d shard
    k, note = div(level >= 3 or (ms and level >= 1))
    out.append(Component("parameters", "parameters", round(n * wd.weights / k),
                         f"{pn} x {wd.weights} B ({s.param_dtype}){note}"))
    # gathered weights: what the all-gather adds to this device's own 1/d shard, (1 - 1/d) of each block
    gathered, gwhy = 0.0, ""
    rest = 1 - 1 / d
    if level >= 3 or (ms and level >= 1 and s.comm_recompute):
        block = min(n, 2 * sp.largest_unit)
        gathered = block * wd.weights * rest
        gwhy = (f"two blocks of {round(sp.largest_unit):,} params gathered at a time x {wd.weights} B x (1 - 1/{d}) "
                "beyond the own shard (ZeRO-3 / gathered again in backward)")
    elif ms and level >= 1:
        gathered = n * wd.weights * rest
        gwhy = (f"{pn} x {wd.weights} B x (1 - 1/{d}): MindSpore's parallel optimizer all-gathers the weights "
                "for forward and keeps them until backward in graph mode (research/memory.md 7.4)")
    if gathered:
        out.append(Component("gathered_parameters", "gathered weights", round(gathered), gwhy))
    # gradients: ZeRO-2 and MindSpore's parallel optimizer (ReduceScatter) keep a 1/d shard
    k, note = div(level >= 2 or (ms and level >= 1))
    gdt = "fp32" if wd.grads == 4 else "16-bit"
    out.append(Component("gradients", "gradients", round(n * wd.grads / k), f"{pn} x {wd.grads} B ({gdt}){note}"))
    if wd.master:
        k, note = div(level >= 1)
        out.append(Component("master_weights", "master weights", round(n * wd.master / k),
                             f"{pn} x 4 B (fp32 master copy of 16-bit weights){note}"))
    k, note = div(level >= 1)
    out.append(Component("optimizer_states", "optimizer states", round(n * wd.optimizer / k),
                         f"{pn} x {wd.optimizer} B ({wd.why_optimizer}){note}"))
    if wd.accumulation:
        k, note = div(level >= 2 or (level >= 1 and s.accumulation_shard))
        reason = "gradient accumulation" if s.grad_accumulation > 1 else "pipeline micro-batches"
        out.append(Component("accumulation", "accumulation buffer", round(n * wd.accumulation / k),
                             f"{pn} x {wd.accumulation} B (accu_grads for {reason}){note}"))
    return out


# -- activations ------------------------------------------------------------------
@dataclass(frozen=True)
class LayerActivation:
    bytes: float  # one layer, one micro-batch
    why: str


def layer_activation(m: ModelShape, s: Setup, mode: str) -> LayerActivation:
    """Activation bytes one layer keeps for backward, for one micro-batch.

    mode: "none" | "selective" | "full" (full: only the checkpointed layer input).
    """
    seq = s.seq_length / s.context_parallel
    b, h, t = s.micro_batch_size, m.hidden_size, s.tensor_parallel
    sbh = seq * b * h
    scale = DTYPE_BYTES[s.precision] / 2  # the paper's coefficients are for 16-bit tensors
    sp = s.sequence_parallel and t > 1
    tr = t if sp else 1
    if mode == "full":
        full = 2 * scale * sbh / tr
        return LayerActivation(full, f"layer input only: 2*s*b*h{'/t' if sp else ''} = 2*{seq:g}*{b}*{h}"
                               + (f"/{t}" if sp else "") + (" (fp32)" if scale == 2 else ""))
    drop = 2 if m.dropout else 0
    r = 8 * scale + drop
    qf = m.num_heads * m.head_width / h
    kvf = m.kv_heads * m.head_width / h
    k = 6 if m.activation == "swiglu" else 4
    ffn_note = f"{m.activation} k={k}"
    if mode == "selective" and s.framework == "mindspore":
        k -= 2  # the FFN activation output (FC2 input) is recomputed
        ffn_note += "-2 (FFN activation recomputed)"
    s_coef = (2 * qf + 4 * kvf + 2 * qf + k * m.ffn / h) * scale
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
    per = sbh * (r / tr + s_coef / t + core / t)
    why = (f"s*b*h*(R/{tr} + S/{t} + core/{t}) = {seq:g}*{b}*{h}*({r:g}/{tr} + {s_coef:.3f}/{t} + {core:.3f}/{t}) "
           f"[R: norm, QKV and FC1 inputs{', dropout masks' if drop else ''}; S: Q, K, V, attention output, "
           f"FFN ({ffn_note}); core: {core_note}]")
    return LayerActivation(per, why)


def in_flight(s: Setup, stage: int) -> float:
    """Micro-batches whose activations stage `stage` holds at its peak (1F1B schedule)."""
    p = s.pipeline_stages
    if p == 1:
        return 1.0
    n = float(min(p - stage, max(1, s.micro_batch_num)))
    if s.virtual_pipeline_chunks > 1:
        n *= 1 + (p - 1) / (p * s.virtual_pipeline_chunks)
    return n


def recomputed_layers(s: Setup, stage: int, layers: int) -> int:
    if s.recompute != "full":
        return 0
    if s.recompute_layers is None:
        return layers
    counts = list(s.recompute_layers)
    return min(layers, int(counts[stage])) if stage < len(counts) else 0


def activation_components(m: ModelShape, s: Setup, stage: int, layers: int,
                          cache: Optional[dict] = None) -> list[Component]:
    cache = cache if cache is not None else {}

    def act(mode: str) -> LayerActivation:
        if mode not in cache:
            cache[mode] = layer_activation(m, s, mode)
        return cache[mode]

    p, t = s.pipeline_stages, s.tensor_parallel
    seq = s.seq_length / s.context_parallel
    b, h = s.micro_batch_size, m.hidden_size
    sbh = seq * b * h
    scale = DTYPE_BYTES[s.precision] / 2
    tr = t if (s.sequence_parallel and t > 1) else 1
    flight = in_flight(s, stage)
    full_n = recomputed_layers(s, stage, layers)
    other_mode = "selective" if s.recompute == "selective" else "none"
    other = act(other_mode)
    out: list[Component] = []
    stored = flight * (full_n * act("full").bytes + (layers - full_n) * other.bytes)
    flight_txt = f"{flight:g} micro-batch{'es' if flight != 1 else ''} in flight"
    if full_n:
        why = (f"{full_n} layers x {flight_txt} x {fmt_bytes(act('full').bytes)} ({act('full').why})")
        if layers - full_n:
            why += f" + {layers - full_n} layers x {fmt_bytes(other.bytes)} ({other_mode}: {other.why})"
    else:
        why = f"{layers} layers x {flight_txt} x {fmt_bytes(other.bytes)}/layer ({other_mode}: {other.why})"
    out.append(Component("activations", "activations", round(stored), why, "activation"))
    # while one layer is recomputed in backward, it briefly holds what the recompute had dropped
    kept = act("full") if full_n else (other if other_mode == "selective" else None)
    if kept is not None and act("none").bytes > kept.bytes:
        work = act("none").bytes - kept.bytes
        out.append(Component("recompute_working_set", "recompute working set", round(work),
                             f"one layer recomputed in backward: {fmt_bytes(act('none').bytes)} without recompute "
                             f"- {fmt_bytes(kept.bytes)} kept", "activation"))
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
        out.append(Component("embedding_io", "embedding / head inputs", round(extras), " + ".join(parts),
                             "activation"))
    if stage == p - 1:
        v = m.padded_vocab(t)
        cb = DTYPE_BYTES[s.precision]
        logits = (cb + 4) * seq * b * v / t
        out.append(Component("logits", "logits / loss buffers", round(logits),
                             f"({cb} B {s.precision} logits + 4 B fp32 softmax for the cross-entropy) x s*b*V/t = "
                             f"{cb + 4}*{seq:g}*{b}*{v}/{t}", "activation"))
    return out


# -- the estimate -----------------------------------------------------------------
def overhead_components(device: Device, allocated: float) -> list[Component]:
    out = [Component("runtime_reserve", "runtime reserve", int(device.reserve),
                     device.reserve_why or "none counted", "overhead")]
    if device.fragmentation:
        out.append(Component("fragmentation", "fragmentation margin", round(allocated * device.fragmentation),
                             f"{device.fragmentation:.0%} of the {fmt_bytes(allocated)} allocated "
                             "(allocator caching and fragmentation)", "overhead"))
    return out


def _stage_breakdown(m: ModelShape, s: Setup, lp: LayerParams, layers: list[int], stage: int,
                     cache: dict) -> tuple[StageParams, list[Component]]:
    sp = stage_params(m, s, stage, layers[stage], lp)
    comps = state_components(m, s, sp) + activation_components(m, s, stage, layers[stage], cache)
    return sp, comps


def estimate(model: ModelShape, setup: Setup, device: Optional[Device] = None) -> Estimate:
    """Memory per device on the most loaded pipeline stage, every component with its why."""
    device = device or Device()
    lp = layer_params(model, setup.tensor_parallel)
    layers = stage_layers(model, setup)
    cache: dict = {}
    best = None
    stages = []
    for i in _candidate_stages(model, setup):
        sp, comps = _stage_breakdown(model, setup, lp, layers, i, cache)
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
        notes.append(f"pipeline stage {stage} of {setup.pipeline_stages} is the most loaded "
                     f"({sp.layers} layers: {sp.why})")
    return Estimate(model, setup, device, stage, tuple(comps), total_params(model, setup.tensor_parallel),
                    round(sp.params), tuple(stages), tuple(notes))


def _candidate_stages(m: ModelShape, s: Setup) -> list[int]:
    """Stages that can be the most loaded: all with uneven layers, else the first and the last
    (a middle stage has fewer micro-batches in flight than the first and no embedding or head)."""
    p = s.pipeline_stages
    if p == 1:
        return [0]
    if s.stage_offsets or s.recompute_layers is not None or m.num_layers % p:
        return list(range(p))
    return [0, p - 1]

