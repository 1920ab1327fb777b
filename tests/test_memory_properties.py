"""Properties of the estimator (hypothesis): more recompute never increases the estimate, more
optimizer sharding never increases it, and doubling the micro-batch never decreases it.

Shapes and layouts are drawn from valid ranges: heads divisible by KV heads and by TP, layers
divisible by the pipeline stages, enough micro-batches for the pipeline, both frameworks'
conventions, every precision, flash on and off, dropout on and off.
"""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from msdoctor.memory import GIB, Device, ModelShape, Setup, estimate

RECOMPUTE = ("none", "selective", "full")
SHARDING = ("none", "optimizer", "grads", "params")


@st.composite
def configs(draw):
    kv = draw(st.sampled_from([1, 2, 4, 8]))
    heads = kv * draw(st.sampled_from([1, 2, 4]))
    head_dim = draw(st.sampled_from([16, 64, 128]))
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if heads % t == 0 and kv % t == 0]))
    pp = draw(st.sampled_from([1, 2, 4]))
    layers = pp * draw(st.integers(1, 12))
    activation = draw(st.sampled_from(["swiglu", "gelu"]))
    ffn = tp * draw(st.integers(1, 512)) * 8
    model = ModelShape(
        num_layers=layers,
        hidden_size=heads * head_dim,
        num_heads=heads,
        num_kv_heads=kv,
        ffn_size=ffn,
        activation=activation,
        vocab_size=draw(st.integers(2, 160_000)),
        tie_embeddings=draw(st.booleans()),
        bias=draw(st.booleans()),
        norm=draw(st.sampled_from(["rmsnorm", "layernorm"])),
        dropout=draw(st.booleans()),
        attention_dropout=draw(st.booleans()),
        vocab_multiple=draw(st.sampled_from([1, 128])),
    )
    setup = Setup(
        seq_length=draw(st.sampled_from([128, 1024, 4096, 8192])),
        micro_batch_size=draw(st.integers(1, 8)),
        grad_accumulation=draw(st.integers(1, 8)),
        data_parallel=draw(st.sampled_from([1, 2, 4, 8, 16])),
        tensor_parallel=tp,
        pipeline_stages=pp,
        micro_batch_num=pp * draw(st.integers(1, 4)),
        virtual_pipeline_chunks=1,
        sequence_parallel=tp > 1 and draw(st.booleans()),
        optimizer_sharding=draw(st.sampled_from(SHARDING)),
        precision=draw(st.sampled_from(["fp32", "bf16", "fp16"])),
        param_dtype=draw(st.sampled_from(["fp32", "bf16", "fp16"])),
        optimizer=draw(st.sampled_from(["adamw", "sgd"])),
        recompute=draw(st.sampled_from(RECOMPUTE)),
        flash_attention=draw(st.booleans()),
        accumulation_shard=draw(st.booleans()),
        comm_recompute=draw(st.booleans()),
        framework=draw(st.sampled_from(["mindspore", "megatron"])),
    )
    device = Device(
        draw(st.sampled_from(["Ascend", "GPU"])), capacity=64 * GIB, reserve=draw(st.sampled_from([0, 2 * GIB]))
    )
    return model, setup, device


@settings(max_examples=150, deadline=None)
@given(configs())
def test_more_recompute_never_increases(cfg):
    model, setup, device = cfg
    totals = [estimate(model, setup.with_(recompute=r), device).total for r in RECOMPUTE]
    assert totals[0] >= totals[1] >= totals[2], totals


@settings(max_examples=150, deadline=None)
@given(configs())
def test_more_sharding_never_increases(cfg):
    """ZeRO-3 / level3 keeps two whole gathered blocks, so it saves memory once a stage has more than
    a few blocks (DeepSpeed's own estimate 4 x largest layer + 18P/N is above ZeRO-2's 2P + 18P/N when
    the largest layer is over half the model)."""
    model, setup, device = cfg
    from msdoctor.memory import layer_params, total_params

    largest = max(layer_params(model, 1).whole, model.padded_vocab(setup.tensor_parallel) * model.hidden_size)
    assume(4 * largest * setup.pipeline_stages <= total_params(model, setup.tensor_parallel))
    totals = [estimate(model, setup.with_(optimizer_sharding=s), device).total for s in SHARDING]
    assert totals == sorted(totals, reverse=True), totals


@settings(max_examples=150, deadline=None)
@given(configs())
def test_doubling_the_micro_batch_never_decreases(cfg):
    model, setup, device = cfg
    one = estimate(model, setup, device).total
    two = estimate(model, setup.with_(micro_batch_size=2 * setup.micro_batch_size), device).total
    assert two >= one
    assert two > one  # activations grow with the micro-batch; nothing else shrinks


@settings(max_examples=60, deadline=None)
@given(configs())
def test_components_add_up_and_each_has_a_reason(cfg):
    model, setup, device = cfg
    est = estimate(model, setup, device)
    assert est.total == sum(c.bytes for c in est.components)
    assert all(c.bytes >= 0 and c.why for c in est.components)
    assert est.stage in range(setup.pipeline_stages)
