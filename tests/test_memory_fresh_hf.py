"""A fresh set of real Hugging Face config.json files (tests/data/memory_fresh_hf/SOURCES.toml: each file's
model repository, where it was retrieved, the model card's published totals, and for some a documented training
layout of the same shape), run through the real ``msdoctor memory`` command:

* every MoE model's parameter count (and every dense one's) is within 5% of its published total;
* a documented-working layout, given as options to the config.json, comes out fits or tight, and the options
  give the layout of the MindFormers YAML that documents it;
* the same run with micro-batch x4 on the tight one whose activations weigh most is caught (exit 1), naming
  the option that sets the micro-batch;
* a layout that needs MindFormers' offset list (DeepSeek-V3's pipeline of 16 over 61 + 1 MTP layers) is estimated
  with --stage-offsets, and refused without it (exit 2, the option named, not a traceback).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from helpers import run_json, run_msdoctor

from msdoctor.memory import load_source, total_params

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = Path(__file__).parent / "data"
FRESH = DATA / "memory_fresh_hf"
ROWS = tomllib.loads((FRESH / "SOURCES.toml").read_text(encoding="utf-8"))["model"]
DEPLOYED = [r for r in ROWS if "args" in r]


def _config(row: dict) -> Path:
    return FRESH / row["dir"] / "config.json"


def test_the_set_is_fresh_real_and_covers_moe_and_mla():
    assert len(ROWS) >= 10
    on_disk = sorted(p.parent.name for p in FRESH.glob("*/config.json"))
    assert on_disk == sorted(r["dir"] for r in ROWS), "every file has its SOURCES.toml row, and every row its file"
    mine = {hashlib.sha256(_config(r).read_bytes()).hexdigest() for r in ROWS}
    elsewhere = {hashlib.sha256(p.read_bytes()).hexdigest() for p in DATA.rglob("*.json") if FRESH not in p.parents}
    assert not mine & elsewhere, "none of the files was under tests/data before"
    for row in ROWS:
        assert row["url"].startswith("https://huggingface.co/") and row["url"].endswith("/config.json")
        assert row["published_source"] and row["retrieved"]
    models = [load_source(_config(r)).model for r in ROWS]
    assert sum(m.moe for m in models) >= 8 and sum(m.mla for m in models) >= 3
    assert any(m.shared_ffn_size for m in models) and any(m.shared_experts for m in models)
    assert any(m.dense_layers for m in models) and any(m.mtp_layers for m in models)
    assert any(m.mla and not m.q_lora_rank for m in models), "an MLA model with a full query projection (V2-Lite)"


@pytest.mark.parametrize("row", ROWS, ids=[r["dir"] for r in ROWS])
def test_parameter_count_within_5_percent_of_the_published_total(row):
    src = load_source(_config(row))
    got = total_params(src.model)
    assert abs(got / row["published_params"] - 1) < 0.05, (row["dir"], got / 1e9, row["published_params"] / 1e9)


def test_the_cli_reports_the_same_count():
    row = next(r for r in ROWS if r["dir"] == "deepseek-ai--DeepSeek-V3")
    res, data = run_json("memory", "--config", str(_config(row)), "--seq-length", "4096", "--device-memory", "64GiB")
    assert res.returncode in (0, 1), res.stderr
    assert data["params_total"] == total_params(load_source(_config(row)).model)
    assert abs(data["params_total"] / row["published_params"] - 1) < 0.05


def _run(row: dict, *extra: str):
    return run_json("memory", "--config", str(_config(row)), "--device-target", "Ascend", *row["args"], *extra)


def _option(args: list, name: str) -> str:
    return str(args[args.index(name) + 1])


@pytest.mark.parametrize("row", DEPLOYED, ids=[r["dir"] for r in DEPLOYED])
def test_documented_layout_fits_or_is_tight(row):
    # the options are the documented YAML's layout (what a config.json cannot say comes from the options)
    yaml_setup = load_source(DATA / row["layout_from"]).setup
    args = row["args"]
    for option, field in (
        ("--devices", "devices"),
        ("--data-parallel", "data_parallel"),
        ("--tensor-parallel", "tensor_parallel"),
        ("--pipeline-stages", "pipeline_stages"),
        ("--expert-parallel", "expert_parallel"),
        ("--micro-batch-size", "micro_batch_size"),
        ("--micro-batch-num", "micro_batch_num"),
        ("--seq-length", "seq_length"),
        ("--optimizer-sharding", "optimizer_sharding"),
        ("--precision", "precision"),
        ("--param-dtype", "param_dtype"),
    ):
        assert _option(args, option) == str(getattr(yaml_setup, field)), (option, field)
    offsets = next((a.split("=", 1)[1] for a in args if a.startswith("--stage-offsets=")), None)
    assert (tuple(int(x) for x in offsets.split(",")) if offsets else None) == yaml_setup.stage_offsets
    assert ("--sequence-parallel" in args) == yaml_setup.sequence_parallel
    assert ("--flash-attention" in args) == yaml_setup.flash_attention
    res, data = _run(row)
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr)
    assert data["capacity"]["bytes"] == load_source(DATA / row["layout_from"]).cap.bytes
    assert data["setup"]["expert_parallel"] == yaml_setup.expert_parallel
    assert data["verdict"] in ("fits", "tight"), (row["dir"], data["total_bytes"] / 2**30, data["low_bytes"] / 2**30)
    assert data["low_bytes"] <= data["capacity"]["bytes"]


def test_micro_batch_x4_on_the_tight_layout_is_caught_with_its_option():
    runs = []
    for row in DEPLOYED:
        _, data = _run(row)
        if data["verdict"] == "tight":
            act = sum(c["bytes"] for c in data["components"] if c.get("kind") == "activation")
            runs.append((act / data["total_bytes"], row["dir"], row))
    assert runs, "the fresh set has a tight layout"
    row = max(runs)[2]
    mbs = int(_option(row["args"], "--micro-batch-size"))
    res, data = _run(row, "--micro-batch-size", str(mbs * 4))
    assert res.returncode == 1 and data["verdict"] == "does not fit", (row["dir"], data["verdict"])
    assert data["low_bytes"] > data["capacity"]["bytes"]
    assert data["drivers"][0]["key"] == "--micro-batch-size" and data["drivers"][0]["value"] == mbs * 4


def test_a_layout_a_config_json_cannot_place_is_refused_naming_the_option():
    row = next(r for r in ROWS if r["dir"] == "deepseek-ai--DeepSeek-V3")
    res = run_msdoctor(
        "memory",
        "--config",
        str(_config(row)),
        "--device-target",
        "Ascend",
        "--devices",
        "1024",
        "--data-parallel",
        "16",
        "--tensor-parallel",
        "4",
        "--pipeline-stages",
        "16",
        "--expert-parallel",
        "8",
        "--seq-length",
        "4096",
        "--device-memory",
        "55GiB",
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--pipeline-stages = 16" in res.stderr and "61 + 1 MTP" in res.stderr
    wrong = run_msdoctor(
        "memory",
        "--config",
        str(_config(row)),
        "--pipeline-stages",
        "16",
        "--micro-batch-num",
        "32",
        "--seq-length",
        "4096",
        "--stage-offsets=1,1",
    )
    assert wrong.returncode == 2 and "--stage-offsets" in wrong.stderr and "offset has 2 entries" in wrong.stderr
    bad = run_msdoctor("memory", "--config", str(_config(row)), "--stage-offsets=1,x", "--seq-length", "4096")
    assert bad.returncode == 2 and "--stage-offsets" in bad.stderr and "Traceback" not in bad.stderr
    # pipeline 2 divides the 62 layers: the same file is estimated
    ok = run_msdoctor(
        "memory",
        "--config",
        str(_config(row)),
        "--device-target",
        "Ascend",
        "--devices",
        "1024",
        "--data-parallel",
        "128",
        "--tensor-parallel",
        "4",
        "--pipeline-stages",
        "2",
        "--micro-batch-num",
        "32",
        "--expert-parallel",
        "8",
        "--seq-length",
        "4096",
        "--device-memory",
        "55GiB",
    )
    assert ok.returncode in (0, 1) and "Traceback" not in ok.stderr, ok.stderr


def test_qwen_moe_dense_layers_follow_the_sparse_step_and_mlp_only_layers(tmp_path):
    """Qwen2MoeConfig / Qwen3MoeConfig: transformers builds a sparse MLP in layer i only when i is not in
    mlp_only_layers and (i + 1) % decoder_sparse_step == 0 (Qwen3MoeDecoderLayer, transformers
    models/qwen3_moe/modeling_qwen3_moe.py; the installed source is read here). The fresh Qwen3-30B-A3B file with
    decoder_sparse_step 2 has 24 dense layers of intermediate_size; with mlp_only_layers [0, 1, 2] too, 25."""
    import dataclasses
    import json

    import transformers

    for kind in ("qwen2_moe", "qwen3_moe"):
        rule = (Path(transformers.__file__).parent / "models" / kind / f"modeling_{kind}.py").read_text()
        assert "(layer_idx not in config.mlp_only_layers) and (" in rule
        assert "config.num_experts > 0 and (layer_idx + 1) % config.decoder_sparse_step == 0" in rule
    row = next(r for r in ROWS if r["dir"] == "Qwen--Qwen3-30B-A3B")
    cfg = json.loads(_config(row).read_text())
    base = load_source(_config(row)).model
    assert (cfg["decoder_sparse_step"], cfg["mlp_only_layers"], base.dense_layers) == (1, [], 0)
    for changes, dense in (
        ({"decoder_sparse_step": 2}, 24),
        ({"decoder_sparse_step": 2, "mlp_only_layers": [0, 1, 2]}, 25),
        ({"mlp_only_layers": [5, 40]}, 2),
    ):
        path = tmp_path / f"{dense}" / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(dict(cfg, **changes)))
        model = load_source(path).model
        assert model.dense_layers == dense and model.moe_layers == 48 - dense
        # each dense layer is an MLP of intermediate_size (6144) in place of 128 experts of 768 and the router
        assert total_params(model) == total_params(dataclasses.replace(base, dense_layers=dense))
        assert total_params(model) < total_params(base)
    bad = tmp_path / "bad" / "config.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(dict(cfg, decoder_sparse_step=0)))
    res = run_msdoctor("memory", "--config", str(bad), "--seq-length", "4096", "--device-memory", "64GiB")
    assert res.returncode == 2 and "decoder_sparse_step" in res.stderr and "Traceback" not in res.stderr
