"""The training setup as one domain object, read once per run (issue 26 item 1).

memory-fit and training-config read the TRAINING_SETUP fact, so within one ``msdoctor check`` they see one
model and one layout; every field says where it came from.
"""

from __future__ import annotations

from pathlib import Path

from helpers import make_ctx

import msdoctor.memory.sources as sources
from msdoctor.domain.training_setup import TRAINING_SETUP, read
from msdoctor.facts.config import CONFIG, load_config

DATA = Path(__file__).parent / "data" / "memory"
MCORE = DATA / "pretrain_llama2_7b_mcore.yaml"
FRESH = Path(__file__).parent / "data" / "memory_fresh" / "mindformers"


def test_every_field_carries_its_key_and_line():
    setup = read(load_config(FRESH / "v1.5.0__finetune_deepseek2_236B.yaml"))
    assert setup.ok and setup.model.num_experts == 160 and setup.layout.expert_parallel == 4
    o = setup.origin("expert_parallel")
    assert o.key == "parallel_config.expert_parallel" and o.line == next(
        i
        for i, t in enumerate((FRESH / "v1.5.0__finetune_deepseek2_236B.yaml").read_text().splitlines(), 1)
        if t.strip().startswith("expert_parallel:")
    )
    assert setup.origin("num_experts").key == "moe_config.expert_num"
    assert setup.origin("kv_lora_rank").key == "model.model_config.kv_lora_rank"
    assert setup.origin("dropout") is None  # a default has no origin


def test_impossible_values_are_problems_not_exceptions(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(MCORE.read_text().replace("  model_parallel: 1\n", "  model_parallel: 3\n"))
    setup = read(load_config(bad))
    assert not setup.ok and setup.problems[0].keys == ("parallel_config", "model_parallel")


def test_memory_fit_and_training_config_share_one_reading(tmp_path, monkeypatch):
    from msdoctor.checks.memory_fit import MemoryFitCheck
    from msdoctor.checks.training_config import TrainingConfigCheck

    cfg = tmp_path / "tp.yaml"
    cfg.write_text(
        MCORE.read_text()
        .replace("  model_parallel: 1\n", "  tensor_model_parallel_size: 4\n")
        .replace("  data_parallel: 8\n", "  data_parallel: 2\n")
    )
    calls = []
    real = sources.from_mindformers
    monkeypatch.setattr(sources, "from_mindformers", lambda *a, **k: calls.append(a) or real(*a, **k))
    ctx = make_ctx(facts={CONFIG.name: load_config(cfg)}, config_path=cfg, project_dir=tmp_path)
    fit = MemoryFitCheck().run(ctx)
    tc = TrainingConfigCheck().run(ctx)
    assert len(calls) == 1, "the file is read once per run"
    setup = ctx.get(TRAINING_SETUP)
    assert setup.layout.tensor_parallel == 4
    assert fit[0].evidence and fit[0].evidence["components"]
    # training-config's values are the setup's, keys and lines included (MindFormers' alias, one reading)
    res = setup.run
    assert res.tensor_parallel.value == 4 and res.tensor_parallel.keys == setup.origin("tensor_parallel").keys
    assert res.tensor_parallel.line == setup.origin("tensor_parallel").line
    layout = next(f for f in tc if f.code == "layout-devices")
    assert "tensor_model_parallel_size" in layout.detail + layout.title + str(layout.evidence)


def test_the_run_is_read_with_its_keys_and_lines():
    """lr, checkpoints and data paths are part of the setup, each with its key and line."""
    path = FRESH / "v1.5.0__finetune_deepseek2_236B.yaml"
    setup = read(load_config(path))
    lines = path.read_text().splitlines()
    run = setup.run
    assert run.lr.value and run.lr.line and "learning_rate" in lines[run.lr.line - 1]
    assert run.ckpt_keep.line and "keep_checkpoint_max" in lines[run.ckpt_keep.line - 1]
    assert run.data_paths and all(
        v.line and v.keys[-1] in lines[v.line - 1] for v in run.data_paths if not isinstance(v.keys[-1], int)
    )
    assert run.data_parallel.value == setup.layout.data_parallel and run.num_layers.value == setup.model.num_layers


def test_a_placeholder_pretrained_dir_still_gives_the_layout():
    """configs/qwen3/finetune_qwen3.yaml (MindFormers r1.7.0) names /path/to/Qwen3-32B: the shape is unknown (a
    problem with its line), the layout and the run are read (training-config checks them)."""
    path = DATA / "mindformers" / "r1.7.0" / "configs" / "qwen3" / "finetune_qwen3.yaml"
    setup = read(load_config(path))
    assert not setup.ok and setup.model is None
    assert setup.problems[0].keys == ("pretrained_model_dir",) and setup.problems[0].line
    assert setup.layout is not None and setup.run is not None
    assert setup.run.data_parallel.value == setup.layout.data_parallel and setup.run.num_heads.value == 0


def test_preflight_collectives_come_from_the_setup_for_a_mindformers_yaml():
    """The preflight's required dtypes are the setup's: a MindFormers YAML's compute_dtype and parallel optimizer
    (before, only an msdoctor YAML's train.precision was read and a MindFormers job was checked as fp32)."""
    from msdoctor.preflight.ranktask import required_collectives

    path = FRESH / "v1.5.0__finetune_deepseek2_236B.yaml"
    setup = read(load_config(path))
    assert setup.layout.precision == "bf16" and setup.layout.optimizer_sharding != "none"
    need = {(op, dtype): (req, why) for op, dtype, req, why in required_collectives(path, 8)}
    assert need[("AllReduce", "bfloat16")][0] and "compute_dtype" in need[("AllReduce", "bfloat16")][1]
    assert need[("ReduceScatter", "bfloat16")][0]


def test_train_announces_the_batch_the_check_resolved(tmp_path, capsys):
    from msdoctor.commands.train import _announce

    facts = load_config(Path(__file__).parent.parent / "training" / "configs" / "tiny-cpu.yaml")
    _announce(facts.run, facts, tmp_path, None)
    text = capsys.readouterr().out
    run = read(facts).run
    assert f"global batch {run.global_batch} sequences = {run.micro_batch.key} {run.micro_batch.value} x" in text
