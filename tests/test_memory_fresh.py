"""Issue 26: a fresh set of real MindFormers configs (tests/data/memory_fresh/SOURCES.toml, collected after
the MoE / MLA / MTP reader change, each with its URL and documented hardware).

* every documented-working config comes out fits or tight (never "does not fit");
* every MoE model's parameter count is within 5% of its published total;
* a config made not to fit (micro-batch x4 on a tight one) is caught, with the key and line to change.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from msdoctor.memory import Detected, estimate, load_source, make_device, total_params
from msdoctor.memory.sources import validate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FRESH = Path(__file__).parent / "data" / "memory_fresh"
ROWS = tomllib.loads((FRESH / "SOURCES.toml").read_text(encoding="utf-8"))["config"]
#: the second fresh set (tests/data/memory_fresh2/SOURCES.toml), collected after the one-reading change
FRESH2 = Path(__file__).parent / "data" / "memory_fresh2"
ROWS2 = [
    dict(r, file=str(FRESH2 / r["file"]))
    for r in tomllib.loads((FRESH2 / "SOURCES.toml").read_text(encoding="utf-8"))["config"]
]


def _estimate(path: Path):
    src = load_source(path)
    assert validate(src) == []
    return src, estimate(src.model, src.setup, make_device("Ascend", Detected(), src.cap))


@pytest.mark.parametrize(
    "row",
    ROWS + [r for r in ROWS2 if r["documented_working"]],
    ids=[r["name"] for r in ROWS + [r for r in ROWS2 if r["documented_working"]]],
)
def test_documented_working_configs_fit_or_are_tight(row):
    src, est = _estimate(FRESH / row["file"])
    assert src.cap is not None, "every fresh config states context.max_device_memory"
    assert src.setup.devices == row.get("devices", src.setup.devices)
    assert est.verdict in ("fits", "tight"), (row["name"], est.total / 2**30, est.low / 2**30)


@pytest.mark.parametrize(
    "row",
    [r for r in ROWS + ROWS2 if "published_params" in r],
    ids=[r["name"] for r in ROWS + ROWS2 if "published_params" in r],
)
def test_moe_parameter_counts_within_5_percent(row):
    src = load_source(FRESH / row["file"])
    assert src.model.num_experts > 1
    got = total_params(src.model)
    assert abs(got / row["published_params"] - 1) < 0.05, (row["name"], got / 1e9)


def _tight_one():
    """The tight config whose activations weigh most (micro-batch x4 scales them)."""
    tight = []
    for row in ROWS:
        src, est = _estimate(FRESH / row["file"])
        if est.verdict == "tight":
            tight.append((est.bytes_of("activations") / est.total, row["name"], row, src))
    assert tight, "the fresh set has a tight config"
    return max(tight)[2:]


def test_micro_batch_x4_on_a_tight_config_is_caught_with_its_key_and_line(tmp_path):
    row, src = _tight_one()
    path = FRESH / row["file"]
    keys = src.origins["micro_batch_size"]
    line = src.line_of(keys)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    old = lines[line - 1]
    value = src.setup.micro_batch_size
    assert f"batch_size: {value}" in old
    lines[line - 1] = old.replace(f"batch_size: {value}", f"batch_size: {value * 4}", 1)
    bad = tmp_path / path.name
    bad.write_text("".join(lines), encoding="utf-8")
    from msdoctor.checks.memory_fit import evaluate
    from msdoctor.memory.plan import make_plan

    src2 = load_source(bad)
    est = estimate(src2.model, src2.setup, make_device("Ascend", Detected(), src2.cap))
    assert est.verdict == "does not fit" and est.low > est.capacity
    assert src2.line_of(src2.origins["micro_batch_size"]) == line and keys == ("runner_config", "batch_size")
    plan = make_plan(src2, None, probe=False, detected=Detected())
    [finding] = [f for f in evaluate(plan, str(bad)) if f.code == "does-not-fit"]
    assert finding.status.value == "fail" and finding.location.path == str(bad)
    # the finding points at the key the activations scale with, at its line, and names it
    assert plan.largest_kind == "activation" and plan.drivers()[0].key == "runner_config.batch_size"
    assert finding.location.line == line and f"runner_config.batch_size = {value * 4} (line {line})" in finding.detail


def test_deepseek_v3_offsets_count_the_mtp_layer():
    """MindFormers builds LayerSetting(num_layers + mtp_depth): the 16 offsets add up to 61 + 1 layers."""
    src = load_source(FRESH / "mindformers/v1.5.0__finetune_deepseek3_671b.yaml")
    assert src.model.mtp_layers == 1 and src.model.num_layers == 61 and validate(src) == []


def test_sequence_parallel_kept_inputs_are_a_term_of_the_band():
    """Yi-34B finetune (MindFormers v1.5.0, use_seq_parallel, no select_comm_recompute): the all-gathered layer
    inputs MindSpore graph mode may keep whole are their own unconfirmed term, so 58.03 GiB of 57 is "tight: may
    not fit", and the band's low end leaves them out."""
    src, est = _estimate(FRESH2 / "mindformers" / "v1.5.0__finetune_yi_34b.yaml")
    assert src.setup.sequence_parallel and src.setup.tensor_parallel == 4
    kept = est.bytes_of("sp_gathered_inputs")
    assert kept > 0 and "sp_gathered_inputs" in [u[0] for u in est.unconfirmed]
    assert est.verdict == "tight" and est.may_not_fit and est.low <= est.capacity - 0 < est.total
    # Megatron keeps the sequence shard and gathers again in backward: no such term
    meg = estimate(src.model, src.setup.with_(framework="megatron"), est.device)
    assert meg.bytes_of("sp_gathered_inputs") == 0
