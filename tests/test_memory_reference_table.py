"""The reference table (msdoctor.memory.crosscheck): every published figure reproduced within 5% under its
own convention, and the ZeRO paper's Figure 1 reproduced from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_json

from msdoctor.memory import total_params
from msdoctor.memory.crosscheck import LLAMA7, LLAMA13, ZERO_FIGURE_1, render, table

DATA = Path(__file__).parent / "data" / "memory" / "mindformers"
ZERO_CONFIG = Path(__file__).parent / "data" / "memory" / "hf" / "zero-7.5b" / "config.json"
ROWS = table(DATA)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.group}: {r.case}")
def test_each_reference_within_5_percent(row):
    assert abs(row.ratio - 1) <= 0.05, (row.reference, row.ours, row.unit)


def test_the_table_covers_every_reference_family():
    groups = {r.group for r in ROWS}
    assert groups == {
        "Korthikanti Table 2",
        "Megatron theoretical",
        "DeepSpeed estimators",
        "Megatron CI (measured)",
        "accelerate estimate-memory",
        "ZeRO Figure 1",
        "parameter counts",
    }
    assert sum(r.group == "parameter counts" for r in ROWS) == 11
    text = render(ROWS)
    assert "reference" in text.splitlines()[0] and "ratio" in text.splitlines()[0]
    assert len(text.splitlines()) == len(ROWS) + 1


def test_deepspeed_references_are_its_formulas():
    """2P + 18P/N (ZeRO-2) and 4 x largest layer + 18P/N (ZeRO-3), N = 8, the largest layer being the embedding."""
    for model, z2, z3 in ((LLAMA7, 28_638_266_368, 15_685_723_136), (LLAMA13, 55_317_423_360, 29_941_054_720)):
        p = total_params(model)
        assert 2 * p + 18 * p // 8 == z2
        assert 4 * model.vocab_size * model.hidden_size + 18 * p // 8 == z3


@pytest.mark.parametrize("level", list(ZERO_FIGURE_1))
def test_zero_figure_1_from_the_command_line(level):
    """msdoctor memory --framework zero-paper: the model states of Psi = 7.5B over N_d = 64, as Figure 1 rounds them."""
    res, data = run_json(
        "memory",
        "--config",
        str(ZERO_CONFIG),
        "--framework",
        "zero-paper",
        "--param-dtype",
        "fp16",
        "--devices",
        "64",
        "--device-memory",
        "80GB",
        "--optimizer-sharding",
        level,
        "--suggestions",
        "0",
    )
    assert res.returncode in (0, 1), res.stderr
    assert data["params_total"] == 7_499_636_736
    assert round(data["model_states_bytes"] / 1e9, 1) == ZERO_FIGURE_1[level]
