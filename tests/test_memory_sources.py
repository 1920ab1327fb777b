"""Config sources of the memory estimate: MindFormers YAML (legacy and new field names), a Hugging
Face config.json written by the real transformers, msdoctor's own training YAML; unknown keys listed
with a did-you-mean; impossible values as errors that point at file:line.

The MindFormers fixtures under tests/data/memory/ are Llama-2-7B pretraining configs for 8 x 910B in
the shape of mindspore-lab/mindformers r1.5.0 configs/llama2/pretrain_llama2_7b.yaml (legacy names)
and the mcore names; the real configs are under tests/data/memory/mindformers/.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from msdoctor.errors import UserError
from msdoctor.memory import GIB, Overrides, estimate, load_source, total_params
from msdoctor.memory.capacity import Detected, make_device
from msdoctor.domain.problems import ConfigError  # what msdoctor's readers raise (the trainer has its own)

DATA = Path(__file__).parent / "data" / "memory"
LEGACY = DATA / "pretrain_llama2_7b_legacy.yaml"
MCORE = DATA / "pretrain_llama2_7b_mcore.yaml"
P7 = 6_738_415_616


def _line(path: Path, text: str) -> int:
    """1-based line of the first line containing text (what the error must point at)."""
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if text in line and not line.lstrip().startswith("#"):
            return i
    raise AssertionError(f"{text!r} not in {path}")


def _edit(src: Path, dst: Path, old: str, new: str) -> Path:
    text = src.read_text()
    assert old in text, old
    dst.write_text(text.replace(old, new, 1))
    return dst


def _problems(exc: pytest.ExceptionInfo) -> dict:
    return {".".join(str(k) for k in p.keys): p for p in exc.value.problems}


# -- MindFormers --------------------------------------------------------------------------------
def test_mindformers_legacy_names():
    src = load_source(LEGACY)
    m, s = src.model, src.setup
    assert src.kind == "mindformers" and src.target == "Ascend"
    assert (m.num_layers, m.hidden_size, m.num_heads, m.kv_heads, m.ffn, m.vocab_size) == (
        32,
        4096,
        32,
        32,
        11008,
        32000,
    )
    assert total_params(m) == P7
    assert (s.data_parallel, s.tensor_parallel, s.pipeline_stages, s.micro_batch_size, s.grad_accumulation) == (
        8,
        1,
        1,
        1,
        8,
    )
    assert (s.optimizer_sharding, s.recompute, s.flash_attention) == ("optimizer", "none", True)
    assert (s.param_dtype, s.precision, s.optimizer_state_dtype) == ("fp16", "fp16", "fp32")  # FP32StateAdam...
    assert src.cap.bytes == 58 * GIB  # MindSpore reads "58GB" as 58 * 2**30
    assert src.cap.line == _line(LEGACY, "max_device_memory")
    assert src.unknown == []  # every key of a real MindFormers config is known


def test_mindformers_new_names_give_the_same_model():
    legacy, mcore = load_source(LEGACY), load_source(MCORE)
    assert mcore.model.num_layers == 32 and mcore.model.num_heads == 32 and mcore.model.ffn == 11008
    assert total_params(mcore.model) == total_params(legacy.model) == P7
    assert (mcore.setup.param_dtype, mcore.setup.precision, mcore.setup.optimizer) == ("fp32", "bf16", "adamw")
    assert mcore.unknown == []
    dev = make_device("Ascend", Detected(), mcore.cap)
    legacy_est = estimate(legacy.model, legacy.setup, make_device("Ascend", Detected(), legacy.cap))
    mcore_est = estimate(mcore.model, mcore.setup, dev)
    # fp32 weights (16 B/param + a 4 B accumulation buffer) against fp16 weights (12 + 2)
    assert mcore_est.bytes_of("accumulation") == 2 * legacy_est.bytes_of("accumulation") == 4 * P7
    # over the capacity only by the unconfirmed accumulation buffer and margins: inside the band
    assert legacy_est.verdict in ("fits", "tight") and mcore_est.verdict == "tight" and mcore_est.may_not_fit


def test_mindformers_recompute_list_and_offsets(tmp_path):
    cfg = _edit(LEGACY, tmp_path / "pp.yaml", "  pipeline_stage: 1\n", "  pipeline_stage: 4\n")
    cfg = _edit(cfg, cfg, "  micro_batch_num: 1\n", "  micro_batch_num: 8\n")
    cfg = _edit(cfg, cfg, "  data_parallel: 8\n", "  data_parallel: 2\n")
    cfg = _edit(cfg, cfg, "  recompute: False\n", "  recompute: [6, 4, 0, 0]\n")
    cfg = _edit(cfg, cfg, "    offset: 0\n", "    offset: [-1, 0, 0, 1]\n")
    src = load_source(cfg)
    assert src.setup.recompute == "full" and src.setup.recompute_layers == (6, 4, 0, 0)
    assert src.setup.stage_offsets == (-1, 0, 0, 1)
    est = estimate(src.model, src.setup, make_device("Ascend", Detected(), src.cap))
    assert [st.layers for st in est.stages] == [7, 8, 8, 9]


def test_unknown_keys_are_listed_with_did_you_mean(tmp_path):
    cfg = _edit(LEGACY, tmp_path / "typo.yaml", "    num_heads: 32\n", "    num_heads: 32\n    num_head_kv: 8\n")
    cfg = _edit(cfg, cfg, "recompute_config:\n", "recompute_conifg:\n  recompute: True\nrecompute_config:\n")
    src = load_source(cfg)
    listed = {".".join(p.keys): p for p in src.unknown}
    assert set(listed) == {"model.model_config.num_head_kv", "recompute_conifg"}
    assert "did you mean 'recompute_config'?" in listed["recompute_conifg"].message
    assert listed["recompute_conifg"].line == _line(cfg, "recompute_conifg")
    assert listed["model.model_config.num_head_kv"].line == _line(cfg, "num_head_kv")
    # both may change the estimate: a typo in the model section, a near miss of a relevant section
    assert {".".join(p.keys) for p in src.relevant_unknown} == set(listed)


def test_deprecated_optimizer_shard_is_noted(tmp_path):
    cfg = _edit(
        LEGACY, tmp_path / "old.yaml", "  vocab_emb_dp: True\n", "  vocab_emb_dp: True\n  optimizer_shard: True\n"
    )
    src = load_source(cfg)
    assert any("optimizer_shard is deprecated" in n and "no effect" in n for n in src.notes)


@pytest.mark.parametrize(
    "old, new, key, message",
    [
        (
            "  model_parallel: 1\n",
            "  model_parallel: 3\n",
            "parallel_config.model_parallel",
            "must divide the attention",
        ),
        ("  pipeline_stage: 1\n", "  pipeline_stage: 3\n", "parallel_config.pipeline_stage", "must divide the layers"),
        ("    hidden_size: 4096\n", "    hidden_size: -4096\n", "model.model_config.hidden_size", "positive"),
        ("  data_parallel: 8\n", "  data_parallel: eight\n", "parallel_config.data_parallel", "expected an integer"),
        (
            "    num_heads: 32\n",
            "    num_heads: 32\n    n_kv_heads: 5\n",
            "model.model_config.n_kv_heads",
            "must divide the attention heads",
        ),
        (
            '  max_device_memory: "58GB"\n',
            '  max_device_memory: "lots"\n',
            "context.max_device_memory",
            "not a memory size",
        ),
        (
            '    param_init_type: "float16"\n',
            '    param_init_type: "float8"\n',
            "model.model_config.param_init_type",
            "expected a dtype",
        ),
    ],
)
def test_impossible_values_point_at_file_and_line(tmp_path, old, new, key, message):
    cfg = _edit(LEGACY, tmp_path / "bad.yaml", old, new)
    with pytest.raises(ConfigError) as exc:
        load_source(cfg)
    problems = _problems(exc)
    assert key in problems, problems
    p = problems[key]
    assert message in p.message
    assert p.line == _line(cfg, new.strip().splitlines()[-1].split(":")[0])
    assert p.render(cfg).startswith(f"{cfg}:{p.line}: {key}")


def test_pipeline_needs_enough_micro_batches(tmp_path):
    cfg = _edit(LEGACY, tmp_path / "pp.yaml", "  pipeline_stage: 1\n", "  pipeline_stage: 4\n")
    with pytest.raises(ConfigError) as exc:
        load_source(cfg)
    p = _problems(exc)["parallel_config.micro_batch_num"]
    assert ">= the pipeline stages (4)" in p.message and p.line == _line(cfg, "micro_batch_num")


def test_devices_must_match_the_layout():
    with pytest.raises(ConfigError) as exc:
        load_source(LEGACY, Overrides(devices=16, data_parallel=8))
    p = _problems(exc)["--devices"]
    assert "= 8, not the 16 devices" in p.message
    # --devices alone re-derives data parallel and keeps the global batch (8 accumulation steps -> 4)
    src = load_source(LEGACY, Overrides(devices=16))
    assert (src.setup.data_parallel, src.setup.grad_accumulation, src.setup.global_batch) == (16, 4, 64)


# -- Hugging Face config.json (written by the real transformers) --------------------------------
def test_hf_llama_config_json(tmp_path):
    from transformers import LlamaConfig

    path = tmp_path / "config.json"
    LlamaConfig().to_json_file(str(path))  # Llama-2-7B defaults of transformers 4.57
    src = load_source(path, Overrides(seq_length=4096, devices=8, optimizer_sharding="optimizer"))
    assert src.kind == "hf" and src.unknown == []
    assert total_params(src.model) == P7
    assert (src.setup.seq_length, src.setup.data_parallel, src.setup.devices) == (4096, 8, 8)
    assert any("config.json has no training setup" in n for n in src.notes)


def test_hf_gpt2_config_json(tmp_path):
    from transformers import GPT2Config

    path = tmp_path / "config.json"
    GPT2Config().to_json_file(str(path))
    src = load_source(path, Overrides(seq_length=1024))
    m = src.model
    assert (m.activation, m.norm, m.tie_embeddings, m.bias, m.position_embeddings) == (
        "gelu",
        "layernorm",
        True,
        True,
        1024,
    )
    assert total_params(m) == 124_439_808  # GPT2LMHeadModel, tied head
    assert src.unknown == []


def test_hf_unknown_keys_and_moe(tmp_path):
    data = json.loads(
        json.dumps(
            {
                "model_type": "llama",
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "num_attention_heads": 4,
                "vocab_size": 100,
                "max_position_embeddings": 128,
                "num_hiden_layers": 4,
                "my_custom_flag": 1,
            }
        )
    )
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2))
    src = load_source(path)
    listed = {p.keys[0]: p for p in src.unknown}
    assert set(listed) == {"num_hiden_layers", "my_custom_flag"}
    assert "did you mean 'num_hidden_layers'?" in listed["num_hiden_layers"].message
    assert listed["num_hiden_layers"].line == _line(path, "num_hiden_layers")
    assert [p.keys[0] for p in src.relevant_unknown] == ["num_hiden_layers"]
    data.update(num_local_experts=8, num_experts_per_tok=2, intermediate_size=32)
    path.write_text(json.dumps(data, indent=2))
    moe = load_source(path).model  # Mixtral-style MoE: 8 SwiGLU experts and a router per layer
    assert (moe.num_experts, moe.experts_per_token) == (8, 2)
    dense = load_source(path).model.__class__(**{**moe.__dict__, "num_experts": 0})
    assert total_params(moe) - total_params(dense) == 2 * (7 * 3 * 64 * 32 + 64 * 8)


def test_hf_impossible_option_names_the_option(tmp_path):
    from transformers import LlamaConfig

    path = tmp_path / "config.json"
    LlamaConfig().to_json_file(str(path))
    with pytest.raises(ConfigError) as exc:
        load_source(path, Overrides(tensor_parallel=3))
    assert "must divide the attention heads (32)" in _problems(exc)["--tensor-parallel"].message


# -- msdoctor's training YAML ------------------------------------------------------------------------
MSDOCTOR_7B = textwrap.dedent("""\
    name: llama7b-910b
    runtime:
      device_target: Ascend
      device_num: 8
      device_memory: 58GB
    model:
      vocab_size: 32000
      num_layers: 32
      hidden_size: 4096
      num_heads: 32
      ffn_hidden_size: 11008
    parallel:
      data_parallel: 8
      optimizer_sharding: optimizer
    train:
      micro_batch_size: 1
      seq_length: 4096
      precision: bf16
      param_dtype: fp32
      recompute: full
      flash_attention: true
      max_steps: 1000
      warmup_steps: 20
    """)


def test_msdoctor_yaml(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(MSDOCTOR_7B)
    src = load_source(path)
    assert src.kind == "msdoctor" and src.devices == 8 and src.target == "Ascend"
    assert total_params(src.model) == P7
    s = src.setup
    assert (s.data_parallel, s.optimizer_sharding, s.recompute, s.param_dtype, s.precision, s.framework) == (
        8,
        "optimizer",
        "full",
        "fp32",
        "bf16",
        "mindspore",
    )
    assert src.cap.bytes == 58 * GIB and src.cap.line == _line(path, "device_memory")
    est = estimate(src.model, s, make_device("Ascend", Detected(), src.cap))
    assert est.verdict == "fits"
    assert 27 * GIB < est.total < 30 * GIB  # the worked example of the msdoctor.memory docstring: 28.7 GiB


def test_msdoctor_yaml_errors_come_with_file_and_line(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(
        MSDOCTOR_7B.replace(
            "  optimizer_sharding: optimizer\n", "  optimizer_sharding: optimizer\n  tensor_parallel: 3\n"
        )
    )
    with pytest.raises(UserError) as exc:
        load_source(path)
    assert f"{path}:{_line(path, 'tensor_parallel')}: parallel.tensor_parallel = 3" in exc.value.message
    path.write_text(MSDOCTOR_7B.replace("device_memory: 58GB", "device_memory: plenty"))
    with pytest.raises(ConfigError) as exc2:
        load_source(path)
    p = _problems(exc2)["runtime.device_memory"]
    assert p.line == _line(path, "device_memory") and "not a memory size" in p.message
