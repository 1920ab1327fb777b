"""A Hugging Face config.json as a memory Source: the model shape; the training setup comes from options."""

from __future__ import annotations

from typing import Optional

from msdoctor.docfile import Document
from msdoctor.memory import keys as K
from msdoctor.memory.reader import MAX_HINTS, Reader, did_you_mean
from msdoctor.memory.source import Source
from msdoctor.memory.spec import ModelShape, Setup
from msdoctor.domain.problems import ConfigError, Problem


def _unknown(doc: Document) -> tuple[list[Problem], list[Problem]]:
    """Unknown top-level keys (with a did-you-mean), and those that look like a typo of a key read."""
    unknown: list[Problem] = []
    relevant: list[Problem] = []
    for key in doc.data:
        if key in K.HF_KNOWN or key.endswith("_config") or key.startswith("_"):
            continue
        hint = did_you_mean(key, K.HF_READ) if len(unknown) < MAX_HINTS else ""
        problem = Problem(
            (key,),
            "unknown key, not read by the memory estimate" + (f"; {hint}" if hint else ""),
            None,
            doc.line_of(key),
        )
        unknown.append(problem)
        if hint:
            relevant.append(problem)
    return unknown, relevant


def _moe(r: Reader) -> dict:
    """Mixture-of-experts, latent-attention and MTP fields of a config.json (keys.HF_MOE_ALIASES)."""
    A = K.HF_MOE_ALIASES
    out: dict = {}
    experts = 0
    for key in A["num_experts"]:
        value, keys = r.find((), (key,))
        if isinstance(value, int) and not isinstance(value, bool) and value > 1 and keys is not None:
            experts = value
            r.origins["num_experts"] = keys
            break
    if experts:
        out["num_experts"] = experts
        out["experts_per_token"] = r.int("experts_per_token", (), A["experts_per_token"], 1) or 1
        out["expert_ffn_size"] = r.int("expert_ffn_size", (), A["expert_ffn_size"])
        out["shared_experts"] = r.int("shared_experts", (), A["shared_experts"], 0) or 0
        out["shared_ffn_size"] = r.int("shared_ffn_size", (), A["shared_ffn_size"])
        out["dense_layers"] = max(0, r.int("dense_layers", (), A["dense_layers"], 0) or 0)
        sparse = _sparse_dense_layers(r, experts)
        if sparse is not None:
            out["dense_layers"] = sparse
    for key in K.HF_MLA_KEYS:
        got = r.int(key, (), (key,))
        if got:
            out[key] = got
    mtp = r.int("mtp_layers", (), K.HF_MTP_KEYS, 0) or 0
    if mtp > 0:
        out["mtp_layers"] = mtp
    return out


def _sparse_dense_layers(r: Reader, experts: int) -> Optional[int]:
    """The dense layers of a Qwen2-MoE / Qwen3-MoE config: transformers builds a sparse MLP in layer i when
    ``i not in mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0``, else a dense MLP of
    intermediate_size (Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer, transformers 4.57 models/qwen2_moe and
    models/qwen3_moe modeling files; the keys and their defaults 1 and [] from Qwen2MoeConfig / Qwen3MoeConfig).
    None when the config has neither key (every layer sparse after first_k_dense_replace)."""
    step_raw, step_keys = r.find((), K.HF_SPARSE_STEP)
    only_raw, only_keys = r.find((), K.HF_MLP_ONLY_LAYERS)
    layers, _ = r.find((), K.HF_INTS["num_layers"])
    if (step_keys is None and only_keys is None) or not isinstance(layers, int) or isinstance(layers, bool):
        return None
    step = step_raw if isinstance(step_raw, int) and not isinstance(step_raw, bool) and step_raw > 0 else 1
    if step_keys is not None and step != step_raw:
        r.bad(step_keys, "expected a positive integer (a sparse MLP every this many layers)", step_raw)
    only = set(only_raw) if isinstance(only_raw, list) and all(isinstance(i, int) for i in only_raw) else set()
    if only_keys is not None and only_raw not in (None, []) and not only:
        r.bad(only_keys, "expected a list of layer indices", only_raw)
    dense = sum(1 for i in range(layers) if i in only or not (experts > 0 and (i + 1) % step == 0))
    if step_keys is not None:
        r.origins["dense_layers"] = step_keys
    if only and only_keys is not None:
        r.origins["dense_layers"] = only_keys
    return dense


def _model(r: Reader, doc: Document, notes: list) -> tuple[Optional[ModelShape], int]:
    """The model shape (None when a required key is missing) and max_position_embeddings."""
    top = ()
    ints = {name: r.int(name, top, names) for name, names in K.HF_INTS.items()}
    for name, what in (
        ("num_layers", "layers"),
        ("hidden_size", "hidden size"),
        ("num_heads", "heads"),
        ("vocab_size", "vocabulary"),
    ):
        if ints[name] is None:
            r.problems.append(Problem((K.HF_INTS[name][0],), f"is missing: the estimate needs the {what}", None, None))
    kv = ints["num_kv_heads"]
    if kv is None and r.bool("multi_query", top, ("multi_query",), False):
        kv = 1
    model_type = str(doc.data.get("model_type") or "")
    act_raw, act_keys = r.find(top, ("hidden_act", "activation_function"))
    gelu = act_raw is not None and "gelu" in str(act_raw).lower()
    activation = "gelu" if gelu or (act_raw is None and model_type in K.HF_GELU_TYPES) else "swiglu"
    if act_keys:
        r.origins["activation"] = act_keys
    max_pos = ints["seq_length"] or 0
    tie_default = K.HF_TIE_DEFAULT.get(model_type, K.HF_TIE_DEFAULT_REMOTE.get(model_type, K.HF_TIE_FALLBACK))
    tie = r.bool("tie_embeddings", top, ("tie_word_embeddings",), tie_default)
    if "tie_embeddings" not in r.origins:
        notes.append(
            f"tie_word_embeddings not set: {tie_default} for model_type {model_type or '(none)'} "
            "(the transformers config class default)"
        )
    bias = r.bool("bias", top, ("mlp_bias",), False) or r.bool("bias", top, ("bias",), model_type in K.HF_BIAS_TYPES)
    qkv_bias = r.bool("qkv_bias", top, ("attention_bias",), model_type in K.HF_QKV_BIAS)
    dropout = max(r.number("dropout", top, (k,), 0.0) for k in K.HF_DROPOUT)
    attention_dropout = max(r.number("attention_dropout", top, (k,), 0.0) for k in K.HF_ATTENTION_DROPOUT)
    moe = _moe(r)
    layers, hidden, heads, vocab = ints["num_layers"], ints["hidden_size"], ints["num_heads"], ints["vocab_size"]
    if r.problems or layers is None or hidden is None or heads is None or vocab is None:
        return None, max_pos
    ffn = ints["ffn_size"]
    if ffn is None:
        notes.append(
            "no intermediate_size: " + ("4 x hidden" if activation == "gelu" else "the Llama rule") + " assumed"
        )
    if moe.get("num_experts"):
        notes.append(
            f"mixture of experts: {moe['num_experts']} routed experts of width "
            f"{moe['expert_ffn_size'] or ffn}, top-{moe['experts_per_token']}"
            + (f", {moe['shared_experts']} shared" if moe["shared_experts"] else "")
            + (f", shared width {moe['shared_ffn_size']}" if moe["shared_ffn_size"] else "")
            + (
                f", {moe['dense_layers']} dense layers (counted as the first ones for the pipeline)"
                if moe["dense_layers"]
                and "dense_layers" in r.origins
                and r.origins["dense_layers"][-1] in K.HF_SPARSE_STEP + K.HF_MLP_ONLY_LAYERS
                else f", first {moe['dense_layers']} layers dense"
                if moe["dense_layers"]
                else ""
            )
        )
    if moe.get("kv_lora_rank"):
        notes.append(
            f"multi-head latent attention: kv_lora_rank {moe['kv_lora_rank']}, q_lora_rank {moe.get('q_lora_rank', 0)}"
        )
    if moe.get("mtp_layers"):
        notes.append(f"{moe['mtp_layers']} multi-token-prediction layer(s) (num_nextn_predict_layers)")
    model = ModelShape(
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
        norm="layernorm" if r.find(top, K.HF_LAYERNORM_EPS)[1] is not None else "rmsnorm",
        qk_norm=model_type.startswith("qwen3") or r.bool("qk_norm", top, ("qk_norm",), False),
        position_embeddings=max_pos if model_type in K.HF_LEARNED_POSITIONS else 0,
        dropout=dropout > 0,
        attention_dropout=attention_dropout > 0,
        **moe,
    )
    return model, max_pos


def from_hf(doc: Document) -> Source:
    """A Hugging Face config.json: the model only; batch, sequence and layout come from options.

    Defaults filled in (each listed in ``notes``): sequence = max_position_embeddings,
    micro-batch 1, no parallelism, bf16 compute with fp32 weights (MindSpore mixed
    precision), AdamW, no recompute, flash attention; tie_word_embeddings as the model
    type's transformers config class declares it.
    """
    if not isinstance(doc.data, dict):
        raise ConfigError(doc.path, [Problem((), "a config.json must be a JSON object")])
    r = Reader(doc)
    notes: list[str] = []
    unknown, relevant = _unknown(doc)
    model, seq = _model(r, doc, notes)
    if r.problems or model is None:
        raise ConfigError(doc.path, r.problems)
    notes.append(
        f"a config.json has no training setup: sequence {seq or '(none: pass --seq-length)'} "
        "(max_position_embeddings), micro-batch 1, no parallelism, bf16 compute with fp32 weights, "
        "AdamW, no recompute, flash attention assumed unless given on the command line"
    )
    setup = Setup(seq_length=seq, precision="bf16", param_dtype="fp32")
    return Source(
        doc.path, "hf", model, setup, None, None, None, dict(r.origins), unknown, relevant, notes, dict(doc.lines)
    )
