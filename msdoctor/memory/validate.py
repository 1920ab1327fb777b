"""Command-line values applied to a Source, and the checks that reject impossible layouts (file:line)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from msdoctor.domain.pipeline import stage_layers as placed
from msdoctor.memory.reader import target_of
from msdoctor.memory.source import Overrides, Source
from msdoctor.domain.problems import ConfigError, Problem

OPTION_OF = {
    "seq_length": "--seq-length",
    "micro_batch_size": "--micro-batch-size",
    "grad_accumulation": "--grad-accumulation",
    "data_parallel": "--data-parallel",
    "tensor_parallel": "--tensor-parallel",
    "pipeline_stages": "--pipeline-stages",
    "expert_parallel": "--expert-parallel",
    "devices": "--devices",
    "recompute": "--recompute",
    "optimizer_sharding": "--optimizer-sharding",
    "precision": "--precision",
    "param_dtype": "--param-dtype",
    "device_target": "--device-target",
    "micro_batch_num": "--micro-batch-num",
    "sequence_parallel": "--sequence-parallel",
    "flash_attention": "--flash-attention",
    "dropout": "--dropout",
    "framework": "--framework",
    "master_weights": "--master-weights",
    "grad_dtype": "--grad-dtype",
    "selective_ffn": "--recompute",
    "pretrained_model_dir": "--pretrained-model-dir",
    "stage_offsets": "--stage-offsets",
}
#: options that change the model rather than the setup
MODEL_OPTIONS = ("dropout",)
NOT_SETUP = ("devices", "device_target", "pretrained_model_dir") + MODEL_OPTIONS


def apply_overrides(src: Source, ov: Optional[Overrides]) -> Source:
    """The source with command-line values applied; --devices alone re-derives data parallel."""
    if ov is None or not ov.given():
        return src
    given = ov.given()
    setup_fields = {k: v for k, v in given.items() if k not in NOT_SETUP}
    if "framework" in setup_fields and setup_fields["framework"] != "mindspore":
        setup_fields.setdefault("accumulation_buffer", False)  # accu_grads is MindSpore's
    if "recompute" in setup_fields:  # the option replaces the config's per-stage recompute lists
        setup_fields.update(recompute_layers=None, selective_layers=None)
    setup = replace(src.setup, **setup_fields)
    model = src.model
    if ov.dropout is not None:
        model = replace(model, dropout=ov.dropout, attention_dropout=ov.dropout)
    origins = dict(src.origins)
    for k in given:
        origins[k] = (OPTION_OF[k],)
    devices = src.devices
    if ov.devices is not None:
        devices = ov.devices
        if ov.data_parallel is None:
            rest = setup.tensor_parallel * setup.pipeline_stages * setup.context_parallel
            if rest and ov.devices % rest == 0:
                new_dp = ov.devices // rest
                if new_dp != setup.data_parallel:
                    # keep the global batch when the accumulation steps allow it
                    gb = setup.global_batch
                    per = setup.micro_batch_size * new_dp * setup.pipeline_micro_batches
                    ga = gb // per if per and gb % per == 0 else setup.grad_accumulation
                    setup = replace(setup, data_parallel=new_dp, grad_accumulation=max(1, ga))
                    origins["data_parallel"] = ("--devices",)
    if setup.tensor_parallel == 1 and setup.sequence_parallel:
        setup = replace(setup, sequence_parallel=False)
    target = target_of(ov.device_target) if ov.device_target else src.target
    if target == "CPU" and setup.flash_attention:
        setup = replace(setup, flash_attention=False)
    return replace(src, model=model, setup=setup, origins=origins, devices=devices, target=target)


#: upper bounds of physical sense: a value past one is a typo or an attack, not a training run. The largest
#: published runs are far inside them (Llama 3: 16,384 GPUs and 128k context, arXiv 2407.21783; DeepSeek-V3:
#: 61 layers, 256 experts, arXiv 2412.19437); the bounds also keep the suggestion search and the per-stage
#: lists finite.
LIMITS = {
    "num_layers": 100_000,
    "hidden_size": 1_000_000,
    "num_heads": 100_000,
    "num_kv_heads": 100_000,
    "vocab_size": 100_000_000,
    "ffn_size": 10_000_000,
    "head_dim": 100_000,
    "seq_length": 1 << 30,
    "micro_batch_size": 1_000_000,
    "grad_accumulation": 1_000_000,
    "data_parallel": 1_000_000,
    "tensor_parallel": 100_000,
    "pipeline_stages": 100_000,
    "context_parallel": 1_000_000,
    "micro_batch_num": 1_000_000,
    "virtual_pipeline_chunks": 100_000,
    "devices": 10_000_000,
    "expert_parallel": 1_000_000,
    "num_experts": 1_000_000,
    "seq_split_num": 1 << 30,
    "mtp_layers": 100_000,
    "dense_layers": 100_000,
}


def _limit_problems(src: Source) -> list[Problem]:
    """Values past the bounds of physical sense (LIMITS), with the key and line they came from."""
    m, s = src.model, src.setup
    out: list[Problem] = []
    for name, limit in LIMITS.items():
        value = getattr(m, name, None)
        if value is None:
            value = getattr(s, name, None)
        if name == "devices":
            value = src.devices
        if isinstance(value, int) and value > limit:
            out.append(
                _problem(src, name, f"is {value:,}: past any real training run (at most {limit:,}); a typo?", value)
            )
    return out


def validate(src: Source) -> list[Problem]:
    """Impossible values, each pointing at the key (or the option) it came from."""
    out = _limit_problems(src) + _size_problems(src)
    if out:
        return out  # the divisibility rules below assume positive sizes
    return (
        _head_problems(src)
        + _pipeline_problems(src)
        + _sequence_problems(src)
        + _recompute_problems(src)
        + _expert_problems(src)
        + _devices_problems(src)
    )


def _problem(src: Source, fieldname: str, msg: str, value: Any) -> Problem:
    """A problem with the key a field came from, and its line when that key is in the file (not an option)."""
    keys = src.key_of(fieldname)
    return Problem(keys, msg, value, src.line_of(keys) if not keys[0].startswith("--") else None)


def _size_problems(src: Source) -> list[Problem]:
    """Every size and count is a positive integer (the optional ones when given)."""
    m, s = src.model, src.setup
    out: list[Problem] = []
    positive = (
        ("num_layers", m.num_layers),
        ("hidden_size", m.hidden_size),
        ("num_heads", m.num_heads),
        ("vocab_size", m.vocab_size),
        ("seq_length", s.seq_length),
        ("micro_batch_size", s.micro_batch_size),
        ("grad_accumulation", s.grad_accumulation),
        ("data_parallel", s.data_parallel),
        ("tensor_parallel", s.tensor_parallel),
        ("pipeline_stages", s.pipeline_stages),
        ("context_parallel", s.context_parallel),
        ("micro_batch_num", s.micro_batch_num),
        ("virtual_pipeline_chunks", s.virtual_pipeline_chunks),
    )
    for name, value in positive:
        if value is None or value < 1:
            out.append(_problem(src, name, "must be a positive integer", value))
    optional: tuple[tuple[str, Optional[int]], ...] = (
        ("num_kv_heads", m.num_kv_heads),
        ("ffn_size", m.ffn_size),
        ("head_dim", m.head_dim),
    )
    for name, opt in optional:
        if opt is not None and opt < 1:
            out.append(_problem(src, name, "must be a positive integer", opt))
    if src.devices is not None and src.devices < 1:
        out.append(_problem(src, "devices", "must be a positive integer", src.devices))
    return out


def _head_problems(src: Source) -> list[Problem]:
    """KV heads divide the heads, the heads the hidden size, and tensor parallel the heads, KV heads and FFN."""
    m, t = src.model, src.setup.tensor_parallel
    out: list[Problem] = []
    if m.num_heads % m.kv_heads:
        out.append(_problem(src, "num_kv_heads", f"must divide the attention heads ({m.num_heads})", m.kv_heads))
    if m.head_dim is None and m.hidden_size % m.num_heads:
        out.append(
            _problem(src, "hidden_size", f"must be divisible by the attention heads ({m.num_heads})", m.hidden_size)
        )
    if m.num_heads % t:
        out.append(_problem(src, "tensor_parallel", f"must divide the attention heads ({m.num_heads})", t))
    elif m.kv_heads % t and not m.fused_qkv:
        out.append(_problem(src, "tensor_parallel", f"must divide the KV heads ({m.kv_heads})", t))
    elif m.ffn % t:
        out.append(_problem(src, "tensor_parallel", f"must divide the FFN size ({m.ffn})", t))
    return out


def _plain(value: Any) -> Any:
    """An offset as the YAML wrote it (lists, not the setup's tuples), for the message."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _pipeline_problems(src: Source) -> list[Problem]:
    """The layers split into the stages (evenly, or by stage_offsets), and every stage gets a micro-batch."""
    m, s = src.model, src.setup
    p = s.pipeline_stages
    out: list[Problem] = []
    if s.stage_offsets is not None:
        n = m.num_layers + m.mtp_layers  # MindFormers places MTP layers by the pipeline too (LayerSetting)
        counts, why = placed(n, p, s.virtual_pipeline_chunks, s.stage_offsets)
        if counts is None:
            mtp = f" ({m.num_layers} + {m.mtp_layers} MTP)" if m.mtp_layers else ""
            out.append(
                _problem(src, "stage_offsets", f"does not place the {n} layers{mtp}: {why}", _plain(s.stage_offsets))
            )
    elif (m.num_layers + m.mtp_layers) % (p * s.virtual_pipeline_chunks):
        what = "pipeline stages" if s.virtual_pipeline_chunks == 1 else "pipeline stages x interleaved chunks"
        mtp = f" + {m.mtp_layers} MTP" if m.mtp_layers else ""
        out.append(
            _problem(
                src,
                "pipeline_stages",
                f"{what} ({p * s.virtual_pipeline_chunks}) must divide the layers ({m.num_layers}{mtp})",
                p,
            )
        )
    if p > 1 and s.micro_batch_num < p:
        out.append(
            _problem(
                src,
                "micro_batch_num",
                f"must be >= the pipeline stages ({p}) so every stage has work",
                s.micro_batch_num,
            )
        )
    return out


def _sequence_problems(src: Source) -> list[Problem]:
    """The sequence splits evenly into seqpipe chunks and over the context-parallel ranks."""
    s = src.setup
    out: list[Problem] = []
    if s.pipeline_scheduler == "seqpipe" and s.seq_split_num > 1 and s.seq_length % s.seq_split_num:
        out.append(_problem(src, "seq_split_num", f"must divide the sequence length ({s.seq_length})", s.seq_split_num))
    if s.seq_length % s.context_parallel:
        out.append(
            _problem(src, "context_parallel", f"must divide the sequence length ({s.seq_length})", s.context_parallel)
        )
    return out


def _expert_problems(src: Source) -> list[Problem]:
    """Expert parallel splits the experts (it divides the expert count) over ranks of one pipeline stage."""
    m, s = src.model, src.setup
    ep = s.expert_parallel
    if ep < 1:
        return [_problem(src, "expert_parallel", "must be a positive integer", ep)]
    if ep == 1:
        return []
    if not m.moe:
        return [_problem(src, "expert_parallel", "needs a mixture-of-experts model (this one has no experts)", ep)]
    if m.num_experts % ep:
        return [_problem(src, "expert_parallel", f"must divide the experts ({m.num_experts})", ep)]
    group = s.data_parallel * s.context_parallel * s.tensor_parallel
    if group % ep:
        # the expert-parallel ranks come from the data, context and tensor-parallel ranks of a stage (Megatron-LM
        # RankGenerator; MindFormers mcore configs/qwen3_moe use data_parallel 1, model_parallel 4, expert_parallel 4)
        return [_problem(src, "expert_parallel", f"must divide data x context x tensor parallel ({group})", ep)]
    return []


def _recompute_problems(src: Source) -> list[Problem]:
    """Per-stage recompute layer counts: at most one per stage, none negative."""
    s = src.setup
    if s.recompute_layers and (len(s.recompute_layers) > s.pipeline_stages or min(s.recompute_layers) < 0):
        return [
            _problem(
                src,
                "recompute",
                f"needs at most one non-negative layer count per pipeline stage ({s.pipeline_stages})",
                list(s.recompute_layers),
            )
        ]
    return []


def _devices_problems(src: Source) -> list[Problem]:
    """The parallel layout uses exactly the devices given."""
    s = src.setup
    if src.devices is not None and s.devices != src.devices:
        return [
            _problem(
                src,
                "devices" if "devices" in src.origins else "data_parallel",
                f"data x tensor x pipeline x context parallel = {s.data_parallel} x {s.tensor_parallel} x "
                f"{s.pipeline_stages} x {s.context_parallel} = {s.devices}, not the {src.devices} devices",
                src.devices,
            )
        ]
    return []


def check(src: Source) -> Source:
    """The source, or ConfigError listing every impossible value with file:line."""
    problems = validate(src)
    if problems:
        raise ConfigError(src.path, problems)
    return src
