"""Config sources for the estimator: msdoctor's training YAML, MindFormers YAML, HF config.json.

Each reader turns a parsed file (``msdoctor.docfile.Document``, which knows the line of
every key) into a :class:`Source`: the model shape, the training setup, the device
target and memory cap the file states, and everything msdoctor noticed on the way:
unknown keys (with a did-you-mean), keys that have no effect, and the defaults it
filled in. Impossible values raise ``ConfigError`` (msdoctor.training.config) whose
problems each point at the key's file:line.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from msdoctor.docfile import Document
from msdoctor.memory import keys as K
from msdoctor.memory.spec import TARGETS, ModelShape, Setup
from msdoctor.memory.units import SizeError, parse_size
from msdoctor.training.config import ConfigError, Problem

DTYPE_NAMES = {
    "float16": "fp16", "fp16": "fp16", "half": "fp16",
    "bfloat16": "bf16", "bf16": "bf16",
    "float32": "fp32", "fp32": "fp32", "float": "fp32",
}


@dataclass(frozen=True)
class DeviceCap:
    """A memory cap the config sets (MindSpore max_device_memory / runtime.device_memory)."""

    bytes: int
    text: str
    key: str
    line: Optional[int]


@dataclass
class Source:
    """What a config file says about memory, in the estimator's terms.

    Attributes:
        origins: estimator field name -> the key path it came from (for error locations).
        unknown: unknown keys, each with a did-you-mean or the known keys.
        relevant_unknown: the subset that may change the estimate (a typo in a
            memory-relevant section, or a near miss of such a section's name).
        notes: keys that have no effect, defaults filled in, what is not modelled.
    """

    path: Optional[Path]
    kind: str
    model: ModelShape
    setup: Setup
    target: Optional[str] = None
    cap: Optional[DeviceCap] = None
    devices: Optional[int] = None
    origins: dict = field(default_factory=dict)
    unknown: list = field(default_factory=list)
    relevant_unknown: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)

    def line_of(self, keys: tuple) -> Optional[int]:
        while keys:
            if keys in self.lines:
                return self.lines[keys]
            keys = keys[:-1]
        return None

    def key_of(self, fieldname: str) -> tuple:
        return tuple(self.origins.get(fieldname, (fieldname,)))


@dataclass(frozen=True)
class Overrides:
    """Command-line values that replace or complete the file's (``msdoctor memory`` options)."""

    seq_length: Optional[int] = None
    micro_batch_size: Optional[int] = None
    grad_accumulation: Optional[int] = None
    data_parallel: Optional[int] = None
    tensor_parallel: Optional[int] = None
    pipeline_stages: Optional[int] = None
    devices: Optional[int] = None
    recompute: Optional[str] = None
    optimizer_sharding: Optional[str] = None
    precision: Optional[str] = None
    param_dtype: Optional[str] = None
    device_target: Optional[str] = None

    def given(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


# -- reading typed values with their key ------------------------------------------
class _Reader:
    """Typed access to a Document's values; wrong types become problems at the key's line."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.problems: list[Problem] = []
        self.origins: dict[str, tuple] = {}

    def section(self, *path: str) -> dict:
        node: Any = self.doc.data
        for p in path:
            node = node.get(p) if isinstance(node, dict) else None
        if node is None:
            return {}
        if not isinstance(node, dict):
            self.problems.append(Problem(path, f"must be a mapping of keys, got {type(node).__name__}",
                                         None, self.doc.line_of(*path)))
            return {}
        return node

    def find(self, path: tuple, names: tuple) -> tuple[Any, Optional[tuple]]:
        sec = self.section(*path)
        for n in names:
            if n in sec and sec[n] is not None:
                return sec[n], path + (n,)
        return None, None

    def _bad(self, keys: tuple, msg: str, value: Any) -> None:
        self.problems.append(Problem(keys, msg, value, self.doc.line_of(*keys)))

    def int(self, fieldname: str, path: tuple, names: tuple, default: Optional[int] = None) -> Optional[int]:
        value, keys = self.find(path, names)
        if keys is None:
            return default
        self.origins[fieldname] = keys
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            self._bad(keys, "expected an integer", value)
            return default
        return value

    def bool(self, fieldname: str, path: tuple, names: tuple, default: bool = False) -> bool:
        value, keys = self.find(path, names)
        if keys is None:
            return default
        self.origins[fieldname] = keys
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            self._bad(keys, "expected true or false", value)
            return default
        return value

    def number(self, fieldname: str, path: tuple, names: tuple, default: float = 0.0) -> float:
        value, keys = self.find(path, names)
        if keys is None:
            return default
        self.origins[fieldname] = keys
        try:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        except (TypeError, ValueError):
            self._bad(keys, "expected a number", value)
            return default

    def dtype(self, fieldname: str, path: tuple, names: tuple, default: str) -> str:
        value, keys = self.find(path, names)
        if keys is None:
            return default
        self.origins[fieldname] = keys
        got = DTYPE_NAMES.get(str(value).strip().lower())
        if got is None:
            self._bad(keys, "expected a dtype: float16, bfloat16 or float32", value)
            return default
        return got


def _did_you_mean(key: str, known: Any) -> str:
    close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _unknown_keys(doc: Document, path: tuple, known: frozenset, out: list, relevant: list, is_relevant: bool,
                  relevant_names: tuple = ()) -> None:
    node: Any = doc.data
    for p in path:
        node = node.get(p) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return
    for key in node:
        if key in known:
            continue
        keys = path + (key,)
        hint = _did_you_mean(key, known)
        msg = "unknown key, not read by the memory estimate" + (f"; {hint}" if hint else "")
        problem = Problem(keys, msg, None, doc.line_of(*keys))
        out.append(problem)
        near_relevant = bool(relevant_names) and bool(difflib.get_close_matches(str(key), relevant_names, n=1,
                                                                                 cutoff=0.75))
        if is_relevant or near_relevant:
            relevant.append(problem)


# -- MindFormers YAML --------------------------------------------------------------
def _llama_ffn(hidden: int, multiple_of: int, multiplier: Optional[float]) -> int:
    """MindFormers LlamaFeedForward: int(2*4h/3), x ffn_dim_multiplier, rounded up to multiple_of."""
    f = int(2 * 4 * hidden / 3)
    if multiplier:
        f = int(multiplier * f)
    return multiple_of * ((f + multiple_of - 1) // multiple_of)


def _recompute(r: _Reader, notes: list) -> tuple[str, Optional[tuple], bool]:
    """(recompute level, per-stage full-recompute layer counts, comm_recompute) from recompute_config."""
    rc = ("recompute_config",)
    full, full_keys = r.find(rc, ("recompute",))
    sel, sel_keys = r.find(rc, ("select_recompute",))
    comm = r.bool("comm_recompute", rc, ("parallel_optimizer_comm_recompute",))
    layers: Optional[tuple] = None
    level = "none"
    if full_keys:
        r.origins["recompute"] = full_keys
        if isinstance(full, bool):
            level = "full" if full else "none"
        elif isinstance(full, (list, tuple)):
            counts = []
            for item in full:  # a 2D list (pp_interleave_num > 1) sums each stage's chunks
                if isinstance(item, (list, tuple)):
                    counts.append(sum(int(x) for x in item if isinstance(x, int)))
                elif isinstance(item, int) and not isinstance(item, bool):
                    counts.append(item)
                else:
                    r._bad(full_keys, "expected true/false or a list of layer counts per stage", full)
                    counts = []
                    break
            if counts and any(counts):
                level, layers = "full", tuple(counts)
        else:
            r._bad(full_keys, "expected true/false or a list of layer counts per stage", full)
    if level != "full" or layers is not None:
        if sel_keys and sel not in (False, None, [], {}, 0):
            if level == "none":
                level = "selective"
                r.origins["recompute"] = sel_keys
            else:
                notes.append("select_recompute is also set; the estimate counts the full-recompute layers and "
                             "keeps the other layers at no recompute")
    return level, layers, comm


def _optimizer(r: _Reader, param_dtype: str, notes: list) -> tuple[str, str]:
    value, keys = r.find(("optimizer",), ("type",))
    if keys is None:
        return "adamw", "fp32"
    r.origins["optimizer"] = keys
    name = str(value)
    low = name.lower()
    if "sgd" in low or "momentum" in low:
        return "sgd", "fp32"
    if "adam" not in low and "lamb" not in low:
        notes.append(f"optimizer.type {name}: not one the estimator knows; counted as AdamW (two fp32 states)")
        return "adamw", "fp32"
    if name == "AdamWeightDecay":
        # MindSpore's AdamWeightDecay clones the weights for m and v: states in the weights' dtype
        # (FP32StateAdamWeightDecay exists to keep them in fp32; research/memory.md 7.4)
        return "adamw", param_dtype
    return "adamw", "fp32"


def from_mindformers(doc: Document) -> Source:
    """A MindFormers YAML, legacy (``num_layers``, ``param_init_type``) or new (``num_hidden_layers``,
    ``params_dtype``) field names (research/memory.md 7.3)."""
    r = _Reader(doc)
    notes: list[str] = []
    unknown: list[Problem] = []
    relevant: list[Problem] = []
    _unknown_keys(doc, (), K.MF_TOP, unknown, relevant, False, K.MF_RELEVANT)
    for path, known in K.MF_SECTIONS.items():
        _unknown_keys(doc, path, known, unknown, relevant, True)
    mc = ("model", "model_config")
    legacy = bool(r.find(mc, ("num_layers", "num_heads", "param_init_type", "n_kv_heads"))[1])
    hidden = r.int("hidden_size", mc, ("hidden_size",))
    heads = r.int("num_heads", mc, ("num_heads", "num_attention_heads"))
    layers = r.int("num_layers", mc, ("num_layers", "num_hidden_layers"))
    vocab = r.int("vocab_size", mc, ("vocab_size",))
    for name, value, hint in (("hidden_size", hidden, "hidden_size"), ("num_heads", heads, "num_heads"),
                              ("num_layers", layers, "num_layers / num_hidden_layers"),
                              ("vocab_size", vocab, "vocab_size")):
        if value is None:
            r.problems.append(Problem(mc + (hint.split(" ")[0],), f"is missing: the estimate needs {hint}",
                                      None, doc.line_of(*mc)))
    kv = r.int("num_kv_heads", mc, ("n_kv_heads", "num_key_value_heads"))
    head_dim = r.int("head_dim", mc, ("head_dim", "kv_channels"))
    ffn = r.int("ffn_size", mc, ("intermediate_size",))
    if ffn is None and hidden:
        multiple_of = r.int("multiple_of", mc, ("multiple_of",), 256) or 256
        mult = r.number("ffn_dim_multiplier", mc, ("ffn_dim_multiplier",), 0.0) or None
        ffn = _llama_ffn(hidden, multiple_of, mult)
        notes.append(f"FFN size {ffn} from the Llama rule (multiple_of {multiple_of}"
                     + (f", ffn_dim_multiplier {mult}" if mult else "") + ")")
    act_raw, act_keys = r.find(mc, ("hidden_act",))
    activation = "swiglu"
    if act_keys:
        r.origins["activation"] = act_keys
        low = str(act_raw).lower()
        if "gelu" in low:
            activation = "gelu"
        elif not any(x in low for x in ("silu", "swiglu", "swish")):
            notes.append(f"hidden_act {act_raw!r}: counted as SwiGLU (gate, up and down projections)")
    seq = r.int("seq_length", mc, ("seq_length", "max_position_embeddings"))
    if seq is None:
        r.problems.append(Problem(mc + ("seq_length",), "is missing: the estimate needs the sequence length",
                                  None, doc.line_of(*mc)))
    tie = r.bool("tie_embeddings", mc, ("tie_word_embeddings",), False)
    untie, untie_keys = r.find(mc, ("untie_embeddings_and_output_weights",))
    if untie_keys and isinstance(untie, bool):
        tie = not untie
    bias = any(r.bool("bias", mc, (k,), False) for k in ("add_bias_linear", "attention_bias", "qkv_has_bias",
                                                          "add_qkv_bias"))
    hidden_dropout = r.number("dropout", mc, ("hidden_dropout",), 0.0)
    attention_dropout = r.number("attention_dropout", mc, ("attention_dropout",), 0.0)
    norm_raw, _ = r.find(mc, ("normalization",))
    norm = "layernorm" if norm_raw is not None and "layer" in str(norm_raw).lower() else "rmsnorm"
    qk_norm = r.bool("qk_norm", mc, ("qk_layernorm",), False)
    compute = r.dtype("precision", mc, ("compute_dtype",), "fp16" if legacy else "bf16")
    param_default = "fp16" if legacy else "fp32"  # LlamaConfig's default vs the mcore configs' default
    param = r.dtype("param_dtype", mc, ("param_init_type", "params_dtype"), param_default)
    if "param_dtype" not in r.origins:
        notes.append(f"weights dtype not set: {param_default} assumed ({'legacy LlamaConfig' if legacy else 'mcore'}"
                     " default)")
    flash = r.bool("flash_attention", mc, ("use_flash_attention",), False)
    vpp = r.int("virtual_pipeline_chunks", mc, ("pp_interleave_num",), 1) or 1
    offsets_raw, off_keys = r.find(mc, ("offset",))
    offsets: Optional[tuple] = None
    if off_keys:
        r.origins["stage_offsets"] = off_keys
        if isinstance(offsets_raw, (list, tuple)) and all(isinstance(x, int) for x in offsets_raw):
            offsets = tuple(offsets_raw) if any(offsets_raw) else None
        elif isinstance(offsets_raw, int) and not isinstance(offsets_raw, bool):
            if offsets_raw:
                notes.append(f"model_config.offset = {offsets_raw}: a single offset is not modelled; layers are "
                             "split evenly")
        else:
            r._bad(off_keys, "expected an integer or a list of integers (one per pipeline stage)", offsets_raw)

    pc = ("parallel_config",)
    dp = r.int("data_parallel", pc, ("data_parallel",), 1)
    tp = r.int("tensor_parallel", pc, ("model_parallel",), 1)
    pp = r.int("pipeline_stages", pc, ("pipeline_stage",), 1)
    cp = r.int("context_parallel", pc, ("context_parallel",), 1)
    mbn = r.int("micro_batch_num", pc, ("micro_batch_num",), 1)
    sp = r.bool("sequence_parallel", pc, ("use_seq_parallel",), False)
    vocab_dp = r.bool("embedding_tp_sharded", pc, ("vocab_emb_dp",), True)
    _, shard_keys = r.find(pc, ("optimizer_shard",))
    if shard_keys:
        notes.append(f"{'.'.join(shard_keys)} is deprecated since MindFormers r0.7 and has no effect; "
                     "parallel.enable_parallel_optimizer turns the parallel optimizer on")

    par = ("parallel",)
    poc = ("parallel", "parallel_optimizer_config")
    enabled = r.bool("optimizer_sharding", par, ("enable_parallel_optimizer",), False)
    sharding = "optimizer" if enabled else "none"
    level_raw, level_keys = r.find(poc, ("optimizer_level",))
    if enabled and level_keys:
        sharding = {"level1": "optimizer", "level2": "grads", "level3": "params"}.get(str(level_raw), "")
        if not sharding:
            r._bad(level_keys, "expected level1, level2 or level3", level_raw)
            sharding = "optimizer"
    shard_size = r.int("optimizer_shard_size", poc, ("optimizer_weight_shard_size",), -1)
    accu_shard = r.bool("accumulation_shard", poc, ("gradient_accumulation_shard",), False)
    recompute, recompute_layers, comm = _recompute(r, notes)
    rn = ("runner_config",)
    mbs = r.int("micro_batch_size", rn, ("batch_size",), 1)
    ga = r.int("grad_accumulation", rn, ("gradient_accumulation_steps",), 1)
    optimizer, state_dtype = _optimizer(r, param, notes)
    cx = ("context",)
    target_raw, target_keys = r.find(cx, ("device_target",))
    target = _target(target_raw)
    if target_keys:
        r.origins["device_target"] = target_keys
    cap = _cap(r, cx, ("max_device_memory",))
    moe, moe_keys = r.find(("moe_config",), ("expert_num",))
    if isinstance(moe, int) and moe > 1:
        r._bad(moe_keys, "mixture-of-experts models are not modelled by the memory estimate", moe)
    if r.problems:
        raise ConfigError(doc.path, r.problems)
    model = ModelShape(
        num_layers=layers, hidden_size=hidden, num_heads=heads, vocab_size=vocab, num_kv_heads=kv,
        ffn_size=ffn, activation=activation, head_dim=head_dim, tie_embeddings=tie, bias=bias, norm=norm,
        qk_norm=qk_norm, dropout=hidden_dropout > 0, attention_dropout=attention_dropout > 0,
    )
    setup = Setup(
        seq_length=seq, micro_batch_size=mbs, grad_accumulation=ga, data_parallel=dp, tensor_parallel=tp,
        pipeline_stages=pp, context_parallel=cp, micro_batch_num=mbn, virtual_pipeline_chunks=vpp,
        sequence_parallel=sp, optimizer_sharding=sharding,
        optimizer_shard_size=shard_size if shard_size and shard_size > 0 else None,
        precision=compute, param_dtype=param, optimizer=optimizer, optimizer_state_dtype=state_dtype,
        recompute=recompute, recompute_layers=recompute_layers, flash_attention=flash and target != "CPU",
        accumulation_shard=accu_shard, comm_recompute=comm, embedding_tp_sharded=not vocab_dp,
        stage_offsets=offsets, framework="mindspore",
    )
    return Source(doc.path, "mindformers", model, setup, target, cap, None, r.origins, unknown, relevant, notes,
                  dict(doc.lines))


def _target(value: Any) -> Optional[str]:
    if not isinstance(value, str):
        return None
    for t in TARGETS:
        if value.strip().lower() == t.lower():
            return t
    return None


def _cap(r: _Reader, path: tuple, names: tuple) -> Optional[DeviceCap]:
    value, keys = r.find(path, names)
    if keys is None:
        return None
    r.origins["device_memory"] = keys
    try:
        n = parse_size(value, gb_is_gib=True)
    except SizeError as exc:
        r._bad(keys, f"{exc}", None)
        return None
    return DeviceCap(n, str(value), ".".join(keys), r.doc.line_of(*keys))


# -- Hugging Face config.json --------------------------------------------------------
def from_hf(doc: Document) -> Source:
    """A Hugging Face config.json: the model only; batch, sequence and layout come from options.

    Defaults filled in (each listed in ``notes``): sequence = max_position_embeddings,
    micro-batch 1, no parallelism, bf16 compute with fp32 weights (MindSpore mixed
    precision), AdamW, no recompute, flash attention.
    """
    r = _Reader(doc)
    notes: list[str] = []
    unknown: list[Problem] = []
    relevant: list[Problem] = []
    if not isinstance(doc.data, dict):
        raise ConfigError(doc.path, [Problem((), "a config.json must be a JSON object")])
    for key in doc.data:
        if key in K.HF_KNOWN or key.endswith("_config") or key.startswith("_"):
            continue
        hint = _did_you_mean(key, K.HF_READ)
        problem = Problem((key,), "unknown key, not read by the memory estimate" + (f"; {hint}" if hint else ""),
                          None, doc.line_of(key))
        unknown.append(problem)
        if hint:
            relevant.append(problem)
    top = ()
    layers = r.int("num_layers", top, ("num_hidden_layers", "n_layer", "num_layers"))
    hidden = r.int("hidden_size", top, ("hidden_size", "n_embd", "d_model"))
    heads = r.int("num_heads", top, ("num_attention_heads", "n_head"))
    vocab = r.int("vocab_size", top, ("vocab_size",))
    for name, value, key in (("layers", layers, "num_hidden_layers"), ("hidden size", hidden, "hidden_size"),
                             ("heads", heads, "num_attention_heads"), ("vocabulary", vocab, "vocab_size")):
        if value is None:
            r.problems.append(Problem((key,), f"is missing: the estimate needs the {name}", None, None))
    kv = r.int("num_kv_heads", top, ("num_key_value_heads", "num_kv_heads"))
    if kv is None and r.bool("multi_query", top, ("multi_query",), False):
        kv = 1
    model_type = str(doc.data.get("model_type") or "")
    act_raw, act_keys = r.find(top, ("hidden_act", "activation_function"))
    ffn = r.int("ffn_size", top, ("intermediate_size", "n_inner", "ffn_dim"))
    gelu = act_raw is not None and "gelu" in str(act_raw).lower()
    activation = "gelu" if gelu or (act_raw is None and model_type in ("gpt2", "gpt_neox", "gptj")) else "swiglu"
    if act_keys:
        r.origins["activation"] = act_keys
    max_pos = r.int("seq_length", top, ("max_position_embeddings", "n_positions", "seq_length"))
    learned_positions = model_type in ("gpt2", "gpt_bigcode", "opt") and max_pos
    tie = r.bool("tie_embeddings", top, ("tie_word_embeddings",), True)  # PretrainedConfig's default is True
    bias = (r.bool("bias", top, ("attention_bias",), False) or r.bool("bias", top, ("mlp_bias",), False)
            or r.bool("bias", top, ("bias",), model_type in ("gpt2", "gpt_neox", "gptj", "gpt_bigcode")))
    layernorm = r.find(top, ("layer_norm_eps", "layer_norm_epsilon"))[1] is not None
    head_dim = r.int("head_dim", top, ("head_dim",))
    dropout = max(r.number("dropout", top, (k,), 0.0) for k in ("hidden_dropout", "resid_pdrop", "embd_pdrop"))
    attention_dropout = max(r.number("attention_dropout", top, (k,), 0.0) for k in ("attention_dropout",
                                                                                     "attn_pdrop"))
    qk_norm = model_type.startswith("qwen3") or r.bool("qk_norm", top, ("qk_norm",), False)
    for key in K.HF_MOE_KEYS:
        value, keys = r.find(top, (key,))
        if isinstance(value, int) and value > 1:
            r._bad(keys, "mixture-of-experts models are not modelled by the memory estimate", value)
    if r.problems:
        raise ConfigError(doc.path, r.problems)
    if ffn is None:
        notes.append("no intermediate_size: " + ("4 x hidden" if activation == "gelu" else "the Llama rule")
                     + " assumed")
    model = ModelShape(
        num_layers=layers, hidden_size=hidden, num_heads=heads, vocab_size=vocab, num_kv_heads=kv, ffn_size=ffn,
        activation=activation, head_dim=head_dim, tie_embeddings=tie, bias=bias,
        norm="layernorm" if layernorm else "rmsnorm", qk_norm=qk_norm,
        position_embeddings=max_pos if learned_positions else 0, dropout=dropout > 0,
        attention_dropout=attention_dropout > 0,
    )
    seq = max_pos or 0
    notes.append(f"a config.json has no training setup: sequence {seq or '(none: pass --seq-length)'} "
                 "(max_position_embeddings), micro-batch 1, no parallelism, bf16 compute with fp32 weights, "
                 "AdamW, no recompute, flash attention assumed unless given on the command line")
    setup = Setup(seq_length=seq, precision="bf16", param_dtype="fp32")
    origins = dict(r.origins)
    return Source(doc.path, "hf", model, setup, None, None, None, origins, unknown, relevant, notes, dict(doc.lines))


# -- msdoctor's training config ------------------------------------------------------
MSDOCTOR_ORIGINS = {
    "num_layers": ("model", "num_layers"), "hidden_size": ("model", "hidden_size"),
    "num_heads": ("model", "num_heads"), "num_kv_heads": ("model", "num_kv_heads"),
    "vocab_size": ("model", "vocab_size"), "ffn_size": ("model", "ffn_hidden_size"),
    "seq_length": ("train", "seq_length"), "micro_batch_size": ("train", "micro_batch_size"),
    "grad_accumulation": ("train", "grad_accumulation"), "data_parallel": ("parallel", "data_parallel"),
    "tensor_parallel": ("parallel", "tensor_parallel"), "pipeline_stages": ("parallel", "pipeline_stages"),
    "micro_batch_num": ("parallel", "micro_batch_num"),
    "virtual_pipeline_chunks": ("parallel", "virtual_pipeline_chunks"),
    "sequence_parallel": ("parallel", "sequence_parallel"), "optimizer_sharding": ("parallel", "optimizer_sharding"),
    "precision": ("train", "precision"), "param_dtype": ("train", "param_dtype"),
    "recompute": ("train", "recompute"), "flash_attention": ("train", "flash_attention"),
    "device_target": ("runtime", "device_target"), "devices": ("runtime", "device_num"),
    "device_memory": ("runtime", "device_memory"),
}


def from_run_config(run: Any, doc: Optional[Document] = None) -> Source:
    """msdoctor's own training config (a validated ``msdoctor.training.config.RunConfig``).

    The mapping is one to one (see the msdoctor.memory module docstring); framework
    conventions are MindSpore's, the trainer's attention on CPU is plain attention.
    """
    m, p, t, rt = run.model, run.parallel, run.train, run.runtime
    notes = []
    precision = t.precision
    if rt.device_target == "CPU" and precision != "fp32" and not getattr(t, "half_on_cpu", False):
        precision = "fp32"  # the trainer runs fp32 on CPU (training.config.warnings)
        notes.append(f"train.precision = {t.precision} runs as fp32 on CPU: activations counted at 4 bytes")
    model = ModelShape(
        num_layers=m.num_layers, hidden_size=m.hidden_size, num_heads=m.num_heads, vocab_size=m.vocab_size,
        num_kv_heads=m.num_kv_heads, ffn_size=m.ffn_size, activation=m.activation, tie_embeddings=m.tie_embeddings,
        bias=m.bias, norm="rmsnorm", vocab_multiple=max(1, m.make_vocab_size_divisible_by),
    )
    setup = Setup(
        seq_length=t.seq_length, micro_batch_size=t.micro_batch_size, grad_accumulation=t.grad_accumulation,
        data_parallel=p.data_parallel, tensor_parallel=p.tensor_parallel, pipeline_stages=p.pipeline_stages,
        micro_batch_num=p.micro_batch_num, virtual_pipeline_chunks=p.virtual_pipeline_chunks,
        sequence_parallel=p.sequence_parallel, optimizer_sharding=p.optimizer_sharding,
        precision=precision, param_dtype=t.param_dtype, optimizer=t.optimizer, recompute=t.recompute,
        flash_attention=t.flash_attention and rt.device_target != "CPU", framework="mindspore",
    )
    if t.flash_attention and rt.device_target == "CPU":
        notes.append("train.flash_attention is ignored on CPU (the CPU path uses plain attention)")
    lines = dict(doc.lines) if doc is not None else {}
    cap = None
    if rt.device_memory:
        keys = ("runtime", "device_memory")
        try:
            cap = DeviceCap(parse_size(rt.device_memory, gb_is_gib=True), str(rt.device_memory),
                            "runtime.device_memory", lines.get(keys))
        except SizeError as exc:
            raise ConfigError(doc.path if doc else None,
                              [Problem(keys, str(exc), None, lines.get(keys))]) from None
    return Source(doc.path if doc else None, "msdoctor", model, setup, rt.device_target, cap, rt.device_num,
                  dict(MSDOCTOR_ORIGINS), [], [], notes, lines)


# -- overrides and validation ----------------------------------------------------------
OPTION_OF = {
    "seq_length": "--seq-length", "micro_batch_size": "--micro-batch-size", "grad_accumulation": "--grad-accumulation",
    "data_parallel": "--data-parallel", "tensor_parallel": "--tensor-parallel", "pipeline_stages": "--pipeline-stages",
    "devices": "--devices", "recompute": "--recompute", "optimizer_sharding": "--optimizer-sharding",
    "precision": "--precision", "param_dtype": "--param-dtype", "device_target": "--device-target",
}


def apply_overrides(src: Source, ov: Optional[Overrides]) -> Source:
    """The source with command-line values applied; --devices alone re-derives data parallel."""
    if ov is None or not ov.given():
        return src
    given = ov.given()
    setup_fields = {k: v for k, v in given.items() if k not in ("devices", "device_target")}
    setup = replace(src.setup, **setup_fields)
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
    target = _target(ov.device_target) if ov.device_target else src.target
    if target == "CPU" and setup.flash_attention:
        setup = replace(setup, flash_attention=False)
    return replace(src, setup=setup, origins=origins, devices=devices, target=target)


def validate(src: Source) -> list[Problem]:
    """Impossible values, each pointing at the key (or the option) it came from."""
    m, s = src.model, src.setup
    out: list[Problem] = []

    def bad(fieldname: str, msg: str, value: Any) -> None:
        keys = src.key_of(fieldname)
        out.append(Problem(keys, msg, value, src.line_of(keys) if not keys[0].startswith("--") else None))

    positive = (("num_layers", m.num_layers), ("hidden_size", m.hidden_size), ("num_heads", m.num_heads),
                ("vocab_size", m.vocab_size), ("seq_length", s.seq_length),
                ("micro_batch_size", s.micro_batch_size), ("grad_accumulation", s.grad_accumulation),
                ("data_parallel", s.data_parallel), ("tensor_parallel", s.tensor_parallel),
                ("pipeline_stages", s.pipeline_stages), ("context_parallel", s.context_parallel),
                ("micro_batch_num", s.micro_batch_num), ("virtual_pipeline_chunks", s.virtual_pipeline_chunks))
    for name, value in positive:
        if value is None or value < 1:
            bad(name, "must be a positive integer", value)
    for name, value in (("num_kv_heads", m.num_kv_heads), ("ffn_size", m.ffn_size), ("head_dim", m.head_dim)):
        if value is not None and value < 1:
            bad(name, "must be a positive integer", value)
    if src.devices is not None and src.devices < 1:
        bad("devices", "must be a positive integer", src.devices)
    if out:
        return out  # the divisibility rules below assume positive sizes
    t, p = s.tensor_parallel, s.pipeline_stages
    if m.num_heads % m.kv_heads:
        bad("num_kv_heads", f"must divide the attention heads ({m.num_heads})", m.kv_heads)
    if m.head_dim is None and m.hidden_size % m.num_heads:
        bad("hidden_size", f"must be divisible by the attention heads ({m.num_heads})", m.hidden_size)
    if m.num_heads % t:
        bad("tensor_parallel", f"must divide the attention heads ({m.num_heads})", t)
    elif m.kv_heads % t:
        bad("tensor_parallel", f"must divide the KV heads ({m.kv_heads})", t)
    elif m.ffn % t:
        bad("tensor_parallel", f"must divide the FFN size ({m.ffn})", t)
    if s.stage_offsets:
        offs = list(s.stage_offsets)
        counts = [m.num_layers // p + o for o in offs]
        if len(offs) != p:
            bad("stage_offsets", f"needs one entry per pipeline stage ({p}), has {len(offs)}", list(offs))
        elif sum(counts) != m.num_layers or min(counts) < 1:
            bad("stage_offsets", f"gives stages of {counts} layers; they must be >= 1 and add up to "
                f"{m.num_layers}", list(offs))
    elif m.num_layers % (p * s.virtual_pipeline_chunks):
        what = "pipeline stages" if s.virtual_pipeline_chunks == 1 else "pipeline stages x interleaved chunks"
        bad("pipeline_stages", f"{what} ({p * s.virtual_pipeline_chunks}) must divide the layers ({m.num_layers})", p)
    if p > 1 and s.micro_batch_num < p:
        bad("micro_batch_num", f"must be >= the pipeline stages ({p}) so every stage has work", s.micro_batch_num)
    if s.seq_length % s.context_parallel:
        bad("context_parallel", f"must divide the sequence length ({s.seq_length})", s.context_parallel)
    if s.recompute_layers is not None and (len(s.recompute_layers) > p or min(s.recompute_layers) < 0):
        bad("recompute", f"needs at most one non-negative layer count per pipeline stage ({p})",
            list(s.recompute_layers))
    if src.devices is not None and s.devices != src.devices:
        bad("devices" if "devices" in src.origins else "data_parallel",
            f"data x tensor x pipeline x context parallel = {s.data_parallel} x {t} x {p} x {s.context_parallel} "
            f"= {s.devices}, not the {src.devices} devices", src.devices)
    return out


def check(src: Source) -> Source:
    """The source, or ConfigError listing every impossible value with file:line."""
    problems = validate(src)
    if problems:
        raise ConfigError(src.path, problems)
    return src


def load(config: Any, overrides: Optional[Overrides] = None) -> Source:
    """A validated Source from a ``msdoctor.facts.config.ConfigFacts`` (or a path), options applied.

    Raises:
        ConfigError: impossible values or unreadable fields, each with file:line.
        msdoctor.errors.UserError: the file is missing or malformed.
    """
    if not hasattr(config, "kind"):
        from msdoctor.facts.config import load_config

        config = load_config(Path(config))
    if config.kind == "msdoctor":
        src = from_run_config(config.run, config.doc)
    elif config.kind == "mindformers":
        src = from_mindformers(config.doc)
    else:
        src = from_hf(config.doc)
    return check(apply_overrides(src, overrides))
