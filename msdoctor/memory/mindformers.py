"""A MindFormers YAML as a memory :class:`~msdoctor.memory.source.Source`.

Reads legacy model configs (``LlamaConfig``, ``ChatGLM2Config``, ``InternLM2Config``: ``num_layers``,
``param_init_type``) and mcore ones (``TransformerConfig``: ``num_hidden_layers``, ``params_dtype``,
``pretrained_model_dir``), the parallel layout, the parallel optimizer, pipeline scheduler and
recompute settings. Which key feeds which field, and each family's defaults, are the tables in
:mod:`msdoctor.memory.keys`; this module applies them and records where each value came from.

A config that takes its shape from ``pretrained_model_dir`` (the Hugging Face model directory)
is followed to that directory's ``config.json``; a missing directory is reported with the
key's line, saying that it is a placeholder to replace (or to pass ``--pretrained-model-dir``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from msdoctor.docfile import Document
from msdoctor.memory import keys as K
from msdoctor.memory.reader import Partial, Reader, SourceError, cap_of, target_of, unknown_keys
from msdoctor.memory.source import Source
from msdoctor.memory.spec import ModelShape, Setup
from msdoctor.domain.problems import Problem

MC = ("model", "model_config")
PC = ("parallel_config",)
RC = ("recompute_config",)
PAR = ("parallel",)
POC = ("parallel", "parallel_optimizer_config")
PIPE = ("parallel", "pipeline_config")
LEVELS = {"level1": "optimizer", "level2": "grads", "level3": "params"}


def llama_ffn(hidden: int, multiple_of: int, multiplier: Optional[float]) -> int:
    """MindFormers LlamaFeedForward (r1.5.0 mindformers/models/llama/llama_layer.py): 4h, x (ffn_dim_multiplier
    + 0.01), x 2/3, rounded up to multiple_of (Llama-2-70B: 28672)."""
    f = 4 * hidden
    if multiplier:
        f = int((multiplier + 0.01) * f)
    f = int(2 * f / 3)
    return multiple_of * ((f + multiple_of - 1) // multiple_of)


def family(r: Reader) -> str:
    """legacy | mcore: ``use_legacy: False`` or mcore-only key names mean the mcore TransformerConfig."""
    use_legacy, keys = r.find((), ("use_legacy",))
    if keys is not None and use_legacy is False:
        return "mcore"
    if r.find(MC, K.MF_LEGACY_MARKERS)[1]:
        return "legacy"
    if r.find(MC, K.MF_MCORE_MARKERS)[1] or r.find((), ("pretrained_model_dir",))[1]:
        return "mcore"
    return "legacy"


def _stage_counts(r: Reader, value: Any, keys: tuple, what: str) -> Optional[tuple]:
    """A per-stage layer-count list (a 2D list for pp_interleave_num > 1 sums each stage's chunks);
    True: every layer (None); False / empty: no layer (())."""
    if isinstance(value, bool):
        return None if value else ()
    if isinstance(value, (list, tuple)):
        counts = []
        for item in value:
            if isinstance(item, (list, tuple)):
                counts.append(sum(int(x) for x in item if isinstance(x, int) and not isinstance(x, bool)))
            elif isinstance(item, bool):
                counts.append(10**6 if item else 0)
            elif isinstance(item, int):
                counts.append(item)
            elif isinstance(item, str):
                return None  # a list of op-name patterns: every layer
            else:
                r.bad(keys, f"expected true/false or a list of layer counts per stage for {what}", value)
                return ()
        return tuple(counts)
    r.bad(keys, f"expected true/false, a list of layer counts per stage or a mapping of patterns for {what}", value)
    return ()


def _merge(a: Optional[tuple], b: Optional[tuple]) -> Optional[tuple]:
    """Layers covered by either of two per-stage counts (None: every layer)."""
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    return tuple(max(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0) for i in range(n))


def _patterns(r: Reader, value: Any, keys: tuple, default: tuple) -> tuple[Optional[tuple], list]:
    """(layers covered, patterns) of select_recompute / select_comm_recompute as LayerSetting reads them:
    True or a layer list applies the default patterns; a list of strings or a mapping names patterns."""
    if value in (None, False, [], {}, 0):
        return (), []
    if isinstance(value, dict):
        covered: Optional[tuple] = ()
        for pattern, layers in value.items():
            covered = _merge(covered, _stage_counts(r, layers, keys, str(pattern)))
        return covered, [str(p) for p in value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(x, str) for x in value):
        return None, [str(x) for x in value]
    return _stage_counts(r, value, keys, keys[-1]), list(default)


def recompute(r: Reader, notes: list) -> dict:
    """Full, selective and communication recompute per stage, as MindFormers' LayerSetting combines them."""
    full_raw, full_keys = r.find(RC, ("recompute",))
    sel_raw, sel_keys = r.find(RC, ("select_recompute",))
    comm_raw, comm_keys = r.find(RC, ("select_comm_recompute",))
    comm_opt = r.bool("comm_recompute", RC, ("parallel_optimizer_comm_recompute",))
    full: Optional[tuple] = ()
    if full_keys:
        r.origins["recompute"] = full_keys
        full = _stage_counts(r, full_raw, full_keys, "recompute")
    sel, sel_patterns = _patterns(r, sel_raw, sel_keys or RC, K.MF_SELECT_DEFAULT) if sel_keys else ((), [])
    comm, _ = _patterns(r, comm_raw, comm_keys or RC, K.MF_SELECT_COMM_DEFAULT) if comm_keys else ((), [])
    ffn = any(w in p.lower() for p in sel_patterns for w in K.MF_FFN_PATTERN_WORDS)
    out: dict = {
        "comm_recompute": comm_opt,
        "recompute": "none",
        "recompute_layers": None,
        "selective_layers": None,
        "comm_recompute_layers": comm if comm != () else None,
        "selective_ffn": ffn if sel_patterns else None,
    }
    if full is None or (full and any(full)):
        out["recompute"] = "full"
        out["recompute_layers"] = full
        if full is not None and sel != ():
            out["selective_layers"] = sel if sel is not None else (10**6,) * max(1, len(full))
            notes.append(
                "recompute: the first layers of each stage listed in recompute get full recompute, "
                "select_recompute applies to the rest it covers (MindFormers LayerSetting)"
            )
    elif sel != ():
        out["recompute"] = "selective"
        out["selective_layers"] = sel
        if sel_keys:
            r.origins["recompute"] = sel_keys
    if out["recompute"] in ("selective", "full") and sel_patterns:
        notes.append(
            "select_recompute "
            + ", ".join(sel_patterns)
            + ": "
            + (
                "the FFN activation and the attention core are recomputed (MindFormers' meaning)"
                if ffn
                else "the attention core is recomputed; no FFN activation pattern named"
            )
        )
    return out


def optimizer(r: Reader, param_dtype: str, notes: list) -> tuple[str, str]:
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
        # (FP32StateAdamWeightDecay, mindformers/core/optim/optim.py, exists to keep them in fp32)
        return "adamw", param_dtype
    return "adamw", "fp32"


def parallel_optimizer(r: Reader, notes: list) -> dict:
    """enable_parallel_optimizer and parallel_optimizer_config (MindSpore set_auto_parallel_context)."""
    enabled = r.bool("optimizer_sharding", PAR, ("enable_parallel_optimizer",), False)
    sharding = "optimizer" if enabled else "none"
    level_raw, level_keys = r.find(POC, ("optimizer_level",))
    if enabled and level_keys:
        sharding = LEVELS.get(str(level_raw), "")
        if not sharding:
            r.bad(level_keys, "expected level1, level2 or level3", level_raw)
            sharding = "optimizer"
    size = r.int("optimizer_shard_size", POC, ("optimizer_weight_shard_size",), -1)
    threshold_kb = r.number("shard_threshold", POC, ("parallel_optimizer_threshold",), 64.0)
    accu = r.bool("accumulation_shard", POC, ("gradient_accumulation_shard",), False)
    _, shard_keys = r.find(PC, ("optimizer_shard",))
    if shard_keys:
        notes.append(
            f"{'.'.join(shard_keys)} is deprecated since MindFormers r0.7 and has no effect; "
            "parallel.enable_parallel_optimizer turns the parallel optimizer on"
        )
    return {
        "optimizer_sharding": sharding,
        "optimizer_shard_size": size if size and size > 0 else None,
        "shard_threshold": int(max(0.0, threshold_kb) * 1024),
        "accumulation_shard": accu,
    }


def scheduler(r: Reader, pp: int, notes: list) -> str:
    raw, keys = r.find(PIPE, ("pipeline_scheduler",))
    if keys is None:
        return "1f1b"
    name = str(raw).strip().lower()
    got = K.MF_SCHEDULERS.get(name)
    if got is None:
        r.bad(keys, f"expected one of {', '.join(K.MF_SCHEDULERS)}", raw)
        return "1f1b"
    if pp > 1 and got != name:
        notes.append(f"pipeline_scheduler {name}: modelled as {got}")
    return got


def _pretrained(r: Reader, doc: Document, override: Optional[str], notes: list) -> Optional[Source]:
    """The model shape from pretrained_model_dir's config.json, or None when the YAML has no such key."""
    raw, keys = r.find((), ("pretrained_model_dir",))
    if keys is None and not override:
        return None
    text = override or str(raw)
    where = (
        "--pretrained-model-dir" if override or keys is None else f"pretrained_model_dir (line {doc.line_of(*keys)})"
    )
    folder = Path(text).expanduser()
    if not folder.is_absolute() and doc.path is not None and not override:
        folder = Path(doc.path).parent / folder
    config = folder / "config.json"
    if not config.is_file():
        if r.find(MC, ("num_hidden_layers", "num_layers"))[1] and r.find(MC, ("hidden_size",))[1]:
            notes.append(
                f"{where} = {text}: no config.json there (a placeholder); the model shape comes from model.model_config"
            )
            return None
        r.problems.append(
            Problem(
                keys or ("pretrained_model_dir",),
                f"{text!r} has no config.json: this is a placeholder for the Hugging Face model "
                "directory the shape comes from; point it at the downloaded model (or pass "
                "--pretrained-model-dir DIR)",
                None,
                doc.line_of(*keys) if keys else None,
            )
        )
        return None
    from msdoctor.docfile import load
    from msdoctor.memory.hf import from_hf

    hf = from_hf(load(config))
    notes.append(f"model shape from {config} ({where})")
    return hf


def _model(r: Reader, doc: Document, fam: str, notes: list) -> Optional[ModelShape]:
    ints = {name: r.int(name, MC, names) for name, names in K.MF_MODEL_INTS.items() if name != "seq_length"}
    hidden, heads, layers, vocab = ints["hidden_size"], ints["num_heads"], ints["num_layers"], ints["vocab_size"]
    for _name, value, hint in (
        ("hidden_size", hidden, "hidden_size"),
        ("num_heads", heads, "num_heads"),
        ("num_layers", layers, "num_layers / num_hidden_layers"),
        ("vocab_size", vocab, "vocab_size / padded_vocab_size"),
    ):
        if value is None:
            r.problems.append(
                Problem(MC + (hint.split(" ")[0],), f"is missing: the estimate needs {hint}", None, doc.line_of(*MC))
            )
    kv = ints["num_kv_heads"]
    glm = _glm(r)
    if kv is None and glm:
        mqa, _ = r.find(MC, (K.MF_GLM_KV[0],))
        if mqa is not False:  # ChatGLM2Config: multi_query_attention True, multi_query_group_num 2 by default
            kv = r.int("num_kv_heads", MC, (K.MF_GLM_KV[1],), 2)
    ffn = ints["ffn_size"]
    if ffn is None and hidden:
        multiple_of = r.int("multiple_of", MC, ("multiple_of",), 256) or 256
        mult = r.number("ffn_dim_multiplier", MC, ("ffn_dim_multiplier",), 0.0) or None
        ffn = llama_ffn(hidden, multiple_of, mult)
        notes.append(
            f"FFN size {ffn} from the Llama rule (multiple_of {multiple_of}"
            + (f", ffn_dim_multiplier {mult}" if mult else "")
            + ")"
        )
    act_raw, act_keys = r.find(MC, ("hidden_act",))
    activation = "swiglu"
    if act_keys:
        r.origins["activation"] = act_keys
        low = str(act_raw).lower()
        if "gelu" in low:
            activation = "gelu"
        elif not any(x in low for x in ("silu", "swiglu", "swish")):
            notes.append(f"hidden_act {act_raw!r}: counted as SwiGLU (gate, up and down projections)")
    tie = r.bool("tie_embeddings", MC, ("tie_word_embeddings",), K.MF_FAMILY_DEFAULTS[fam]["tie_embeddings"])
    untie, untie_keys = r.find(MC, ("untie_embeddings_and_output_weights",))
    if untie_keys and isinstance(untie, bool):
        tie = not untie
    bias = any(r.bool("bias", MC, (k,), False) for k in K.MF_BIAS_KEYS)
    qkv_bias = any(r.bool("qkv_bias", MC, (k,), False) for k in K.MF_QKV_BIAS_KEYS)
    norm_raw, _ = r.find(MC, ("normalization",))
    if r.problems or hidden is None or heads is None or layers is None or vocab is None:
        return None
    return ModelShape(
        num_layers=layers,
        hidden_size=hidden,
        num_heads=heads,
        vocab_size=vocab,
        num_kv_heads=kv,
        ffn_size=ffn,
        activation=activation,
        head_dim=ints["head_dim"],
        tie_embeddings=tie,
        bias=bias,
        qkv_bias=qkv_bias,
        norm="layernorm" if norm_raw is not None and "layer" in str(norm_raw).lower() else "rmsnorm",
        qk_norm=r.bool("qk_norm", MC, ("qk_layernorm",), False),
        fused_qkv=glm,
        dropout=r.number("dropout", MC, ("hidden_dropout",), 0.0) > 0,
        attention_dropout=r.number("attention_dropout", MC, ("attention_dropout",), 0.0) > 0,
    )


def _glm(r: Reader) -> bool:
    """A ChatGLM2/3/4 model config (ChatGLM2Config: multi_query_attention / multi_query_group_num, or the type named):
    Q, K and V come from one fused query_key_value projection (mindformers/models/glm2/glm2_transformer.py)."""
    typ, _ = r.find(MC, ("type",))
    return bool(r.find(MC, K.MF_GLM_KV)[1]) or str(typ or "").lower().startswith(K.MF_GLM_TYPE)


def _seq_length(r: Reader, doc: Document, defaults: dict, notes: list) -> int:
    seq = r.int("seq_length", MC, ("seq_length",))
    if seq is None and defaults["seq_length"]:
        seq = defaults["seq_length"]
        notes.append(f"model_config.seq_length not set: {seq} (the mcore TransformerConfig default)")
    if seq is None:
        seq = r.int("seq_length", MC, ("max_position_embeddings",))
    if seq is None:
        r.problems.append(
            Problem(MC + ("seq_length",), "is missing: the estimate needs the sequence length", None, doc.line_of(*MC))
        )
    return seq or 0


def _moe(r: Reader, model: Optional[ModelShape], notes: list) -> Optional[ModelShape]:
    """Mixture of experts, latent attention and MTP layers: the legacy ``moe_config`` section or the
    mcore model_config keys, by MindFormers' own aliases (keys.MF_MOE_ALIASES)."""
    if model is None:
        return None

    def pick(field: str, names: tuple, default: Any = None, number: bool = False) -> Any:
        for path in (("moe_config",), MC):
            if r.find(path, names)[1] is None:
                continue
            return r.number(field, path, names, default or 0.0) if number else r.int(field, path, names, default)
        return default

    A = K.MF_MOE_ALIASES
    changes: dict = {}
    experts = pick("num_experts", A["num_experts"], 0) or 0
    if experts > 1:
        chosen = pick("experts_per_token", A["experts_per_token"], 1) or 1
        cf = pick("capacity_factor", A["capacity_factor"], 1.0, number=True)
        dense = pick("dense_layers", A["dense_layers"], 0)
        # MoEConfig's first_k_dense_replace defaults to True (a flag); only a count says how many layers
        dense = dense if isinstance(dense, int) and not isinstance(dense, bool) and dense > 0 else 0
        changes.update(
            num_experts=experts,
            experts_per_token=chosen,
            capacity_factor=cf,
            expert_ffn_size=pick("expert_ffn_size", A["expert_ffn_size"]),
            shared_experts=pick("shared_experts", A["shared_experts"], 0) or 0,
            shared_ffn_size=pick("shared_ffn_size", A["shared_ffn_size"]),
            dense_layers=min(dense, model.num_layers),
        )
        notes.append(
            f"mixture of experts: {experts} routed experts of width "
            f"{changes['expert_ffn_size'] or model.ffn}, top-{chosen}, capacity factor {cf:g}"
            + (f", {changes['shared_experts']} shared" if changes["shared_experts"] else "")
            + (f", first {changes['dense_layers']} layers dense" if changes["dense_layers"] else "")
            + "; expert weights split over expert_parallel"
        )
    for field, names in K.MF_MLA_ALIASES.items():
        got = r.int(field, MC, names, None)
        if got:
            changes[field] = got
    if changes.get("kv_lora_rank"):
        notes.append(
            "multi-head latent attention: kv_lora_rank {kv_lora_rank}, q_lora_rank {q}".format(
                kv_lora_rank=changes["kv_lora_rank"], q=changes.get("q_lora_rank", 0)
            )
        )
    mtp = r.int("mtp_layers", MC, K.MF_MTP_ALIASES, 0) or 0
    if mtp > 0:
        changes["mtp_layers"] = mtp
        notes.append(f"{mtp} multi-token-prediction layer(s) on the last pipeline stage")
    return replace(model, **changes) if changes else model


def _layout(r: Reader, fam: str, defaults: dict, flash: bool, notes: list) -> dict:
    """parallel_config, parallel (optimizer, pipeline scheduler) and recompute_config, as Setup fields."""
    par = {
        name: r.int(name, PC, K.MF_PARALLEL_ALIASES.get(name, (key,)), default)
        for name, (key, default) in K.MF_PARALLEL_INTS.items()
    }
    vocab_dp = r.bool("embedding_tp_sharded", PC, ("vocab_emb_dp",), defaults["vocab_emb_dp"])
    if fam == "mcore" and vocab_dp:
        vocab_dp = False
        notes.append(
            "vocab_emb_dp is ignored by mcore models (MindFormers turns it off): embedding and output "
            "layer are counted TP-sharded"
        )
    sched = scheduler(r, par["pipeline_stages"] or 1, notes)
    if sched == "seqpipe" and (par["seq_split_num"] or 1) > 1 and not flash:
        notes.append("SeqPipe needs flash attention (MindFormers raises 'Seq pipe must using flash attention')")
    out = dict(
        par,
        seq_split_num=par["seq_split_num"] or 1,
        pipeline_scheduler=sched,
        sequence_parallel=r.bool("sequence_parallel", PC, K.MF_SEQ_PARALLEL_ALIASES, False),
        embedding_tp_sharded=not vocab_dp,
        expert_parallel=r.int("expert_parallel", PC, K.MF_PARALLEL_ALIASES["expert_parallel"], 1) or 1,
        virtual_pipeline_chunks=(
            r.int("virtual_pipeline_chunks", MC, K.MF_VPP_ALIASES, None)
            or r.int("virtual_pipeline_chunks", PC, K.MF_VPP_ALIASES, 1)
            or 1
        ),
        stage_offsets=_offsets(r, notes),
        micro_batch_size=r.int("micro_batch_size", ("runner_config",), ("batch_size",), 1),
        grad_accumulation=r.int("grad_accumulation", ("runner_config",), ("gradient_accumulation_steps",), 1),
    )
    out.update(parallel_optimizer(r, notes))
    out.update(recompute(r, notes))
    return out


def from_mindformers(doc: Document, pretrained_model_dir: Optional[str] = None) -> Source:
    """A MindFormers YAML (legacy or mcore field names; see the module docstring)."""
    r = Reader(doc)
    notes: list[str] = []
    unknown: list[Problem] = []
    relevant: list[Problem] = []
    unknown_keys(doc, (), K.MF_TOP, unknown, relevant, False, K.MF_RELEVANT)
    for path, known in K.MF_SECTIONS.items():
        unknown_keys(doc, path, known, unknown, relevant, True)
    fam = family(r)
    defaults = K.MF_FAMILY_DEFAULTS[fam]
    hf = _pretrained(r, doc, pretrained_model_dir, notes)
    model = None
    if not r.problems:  # a placeholder pretrained_model_dir: no shape, but the layout is still read below
        model = hf.model if hf is not None else _model(r, doc, fam, notes)
    seq = _seq_length(r, doc, defaults, notes)
    compute = r.dtype("precision", MC, K.MF_DTYPE_KEYS["precision"], defaults["precision"])
    param = r.dtype("param_dtype", MC, K.MF_DTYPE_KEYS["param_dtype"], defaults["param_dtype"])
    if "param_dtype" not in r.origins:
        notes.append(f"weights dtype not set: {defaults['param_dtype']} assumed (the {fam} config default)")
    flash = r.bool("flash_attention", MC, ("use_flash_attention",), defaults["flash_attention"])
    layout = _layout(r, fam, defaults, flash, notes)
    opt, state_dtype = optimizer(r, param, notes)
    target_raw, target_keys = r.find(("context",), ("device_target",))
    target = target_of(target_raw)
    if target_keys:
        r.origins["device_target"] = target_keys
    cap = cap_of(r, ("context",), ("max_device_memory",))
    model = _moe(r, model, notes)
    setup = Setup(
        seq_length=seq,
        precision=compute,
        param_dtype=param,
        optimizer=opt,
        optimizer_state_dtype=state_dtype,
        flash_attention=flash and target != "CPU",
        framework="mindspore",
        **layout,
    )
    # the shape a pretrained_model_dir's config.json gave is located at that key of this file
    origins = {name: ("pretrained_model_dir",) + tuple(keys) for name, keys in hf.origins.items()} if hf else {}
    origins.update(r.origins)
    if r.problems or model is None:
        raise SourceError(
            doc.path,
            r.problems,
            Partial(setup, target, None, origins, dict(r.defaults), dict(doc.lines), notes, unknown),
        )
    return Source(
        doc.path,
        "mindformers",
        model,
        setup,
        target,
        cap,
        None,
        origins,
        unknown,
        relevant,
        notes,
        dict(doc.lines),
        dict(r.defaults),
    )


def _offsets(r: Reader, notes: list) -> Any:
    """``model_config.offset`` as written (lists as tuples): one per stage, pp_interleave_num rows of one per stage,
    or an int; placed by :func:`msdoctor.domain.pipeline.stage_layers` (MindFormers' LayerSetting). None: absent or
    all zero (an even split)."""
    raw, keys = r.find(MC, ("offset",))
    if not keys:
        return None
    r.origins["stage_offsets"] = keys
    if isinstance(raw, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in raw):
        return tuple(raw) if any(raw) or not raw else None  # [] is refused by the placement, as MindFormers does
    if (
        isinstance(raw, (list, tuple))
        and raw
        and all(isinstance(x, (list, tuple)) for x in raw)
        and all(isinstance(v, int) and not isinstance(v, bool) for c in raw for v in c)
    ):
        return tuple(tuple(c) for c in raw) if any(v for c in raw for v in c) else None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw or None
    r.bad(keys, "expected an integer or a list of integers (one per pipeline stage)", raw)
    return None
