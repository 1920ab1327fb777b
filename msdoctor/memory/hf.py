"""A Hugging Face config.json as a memory Source: the model shape; the training setup comes from options."""

from __future__ import annotations

from dataclasses import replace

from msdoctor.docfile import Document
from msdoctor.memory import keys as K
from msdoctor.memory.reader import Reader, did_you_mean
from msdoctor.memory.source import Source
from msdoctor.memory.spec import ModelShape, Setup
from msdoctor.training.config import ConfigError, Problem


def from_hf(doc: Document) -> Source:
    """A Hugging Face config.json: the model only; batch, sequence and layout come from options.

    Defaults filled in (each listed in ``notes``): sequence = max_position_embeddings,
    micro-batch 1, no parallelism, bf16 compute with fp32 weights (MindSpore mixed
    precision), AdamW, no recompute, flash attention.
    """
    r = Reader(doc)
    notes: list[str] = []
    unknown: list[Problem] = []
    relevant: list[Problem] = []
    if not isinstance(doc.data, dict):
        raise ConfigError(doc.path, [Problem((), "a config.json must be a JSON object")])
    for key in doc.data:
        if key in K.HF_KNOWN or key.endswith("_config") or key.startswith("_"):
            continue
        hint = did_you_mean(key, K.HF_READ)
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
    tie_default = K.HF_TIE_DEFAULT.get(model_type, K.HF_TIE_DEFAULT_REMOTE.get(model_type, K.HF_TIE_FALLBACK))
    tie = r.bool("tie_embeddings", top, ("tie_word_embeddings",), tie_default)
    if "tie_embeddings" not in r.origins:
        notes.append(f"tie_word_embeddings not set: {tie_default} for model_type {model_type or '(none)'} "
                     "(the transformers config class default)")
    bias = (r.bool("bias", top, ("mlp_bias",), False)
            or r.bool("bias", top, ("bias",), model_type in ("gpt2", "gpt_neox", "gptj", "gpt_bigcode")))
    qkv_bias = r.bool("qkv_bias", top, ("attention_bias",), model_type in K.HF_QKV_BIAS)
    layernorm = r.find(top, ("layer_norm_eps", "layer_norm_epsilon"))[1] is not None
    head_dim = r.int("head_dim", top, ("head_dim",))
    dropout = max(r.number("dropout", top, (k,), 0.0) for k in ("hidden_dropout", "resid_pdrop", "embd_pdrop"))
    attention_dropout = max(r.number("attention_dropout", top, (k,), 0.0) for k in ("attention_dropout",
                                                                                     "attn_pdrop"))
    qk_norm = model_type.startswith("qwen3") or r.bool("qk_norm", top, ("qk_norm",), False)
    experts = 0
    for key in K.HF_MOE_KEYS:
        value, keys = r.find(top, (key,))
        if isinstance(value, int) and value > 1:
            experts = value
            r.origins["num_experts"] = keys
    chosen = r.int("experts_per_token", top, ("num_experts_per_tok",), 1) or 1
    moe_ffn = r.int("ffn_size", top, ("moe_intermediate_size",)) if experts else None
    if r.problems:
        raise ConfigError(doc.path, r.problems)
    if ffn is None:
        notes.append("no intermediate_size: " + ("4 x hidden" if activation == "gelu" else "the Llama rule")
                     + " assumed")
    model = ModelShape(
        num_layers=layers, hidden_size=hidden, num_heads=heads, vocab_size=vocab, num_kv_heads=kv, ffn_size=ffn,
        activation=activation, head_dim=head_dim, tie_embeddings=tie, bias=bias, qkv_bias=qkv_bias,
        norm="layernorm" if layernorm else "rmsnorm", qk_norm=qk_norm,
        position_embeddings=max_pos if learned_positions else 0, dropout=dropout > 0,
        attention_dropout=attention_dropout > 0, num_experts=experts, experts_per_token=chosen,
    )
    if moe_ffn:
        model = replace(model, ffn_size=moe_ffn)
    if experts:
        notes.append(f"mixture of experts: {experts} experts, {chosen} per token"
                     + (" (shared experts and dense layers not modelled)" if "n_shared_experts" in doc.data else ""))
    seq = max_pos or 0
    notes.append(f"a config.json has no training setup: sequence {seq or '(none: pass --seq-length)'} "
                 "(max_position_embeddings), micro-batch 1, no parallelism, bf16 compute with fp32 weights, "
                 "AdamW, no recompute, flash attention assumed unless given on the command line")
    setup = Setup(seq_length=seq, precision="bf16", param_dtype="fp32")
    origins = dict(r.origins)
    return Source(doc.path, "hf", model, setup, None, None, None, origins, unknown, relevant, notes, dict(doc.lines))
