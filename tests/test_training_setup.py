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
        i for i, t in enumerate((FRESH / "v1.5.0__finetune_deepseek2_236B.yaml").read_text().splitlines(), 1)
        if t.strip().startswith("expert_parallel:"))
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
    cfg.write_text(MCORE.read_text().replace("  model_parallel: 1\n", "  tensor_model_parallel_size: 4\n")
                   .replace("  data_parallel: 8\n", "  data_parallel: 2\n"))
    calls = []
    real = sources.load
    monkeypatch.setattr(sources, "load", lambda *a, **k: calls.append(a) or real(*a, **k))
    ctx = make_ctx(facts={CONFIG.name: load_config(cfg)}, config_path=cfg, project_dir=tmp_path)
    fit = MemoryFitCheck().run(ctx)
    tc = TrainingConfigCheck().run(ctx)
    assert len(calls) == 1, "the file is read once per run"
    assert ctx.get(TRAINING_SETUP).layout.tensor_parallel == 4
    assert fit[0].evidence and fit[0].evidence["components"]
    # training-config resolves tensor_model_parallel_size as TP 4 as well (MindFormers' alias)
    from msdoctor.checks.training_config.resolve import resolve

    assert resolve(load_config(cfg)).tensor_parallel.value == ctx.get(TRAINING_SETUP).layout.tensor_parallel
    assert tc and all(f.status.value != "error" for f in tc)
