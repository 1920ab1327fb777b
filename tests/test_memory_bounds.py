"""Issue 31 item 10: absurd numbers are refused with their key and line, the suggestion search is bounded,
and many findings or unknown keys are summarised instead of costing quadratic time."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from helpers import check_of, run_json, run_msdoctor

from msdoctor.memory.suggest import _divisors
from msdoctor.model import CheckResult, Finding
from msdoctor.render.console import make_console
from msdoctor.render.terminal import MAX_FINDINGS, _result

DATA = Path(__file__).parent / "data" / "memory"
LEGACY = DATA / "pretrain_llama2_7b_legacy.yaml"


def test_divisors_are_exact_and_take_sqrt_steps():
    for n in list(range(1, 400)) + [720720, 2**20, 999_983]:
        assert _divisors(n) == [d for d in range(1, n + 1) if n % d == 0]
    t = time.perf_counter()
    assert _divisors(10**12)[:4] == [1, 2, 4, 5] and len(_divisors(10**12)) == 169
    assert time.perf_counter() - t < 5  # was a 10**12-step loop


@pytest.mark.parametrize(
    "old, new",
    [
        ("  batch_size: 1\n", "  batch_size: 1000000000000\n"),
        ("  pipeline_stage: 1\n", "  pipeline_stage: 1000000000\n"),
        ("  data_parallel: 8\n", "  data_parallel: 1000000000000\n"),
    ],
)
def test_values_past_physical_sense_are_refused_with_key_and_line(tmp_path, old, new):
    text = LEGACY.read_text()
    assert old in text
    cfg = tmp_path / "absurd.yaml"
    cfg.write_text(text.replace(old, new, 1))
    line = next(i for i, t in enumerate(cfg.read_text().splitlines(), 1) if t == new.rstrip("\n"))
    t = time.perf_counter()
    res = run_msdoctor("memory", "--config", str(cfg), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{cfg}:{line}:" in res.stderr and "past any real training run" in res.stderr
    assert "Traceback" not in res.stderr and time.perf_counter() - t < 60


def test_absurd_option_is_refused():
    res = run_msdoctor("memory", "--config", str(LEGACY), "--devices", str(10**12), timeout=120)
    assert res.returncode == 2 and "--devices" in res.stderr and "past any real training run" in res.stderr


def test_many_unknown_keys_are_listed_once_and_summarised(tmp_path):
    text = LEGACY.read_text()
    junk = "".join(f"junk_key_number_{i}: {i}\n" for i in range(3000))
    cfg = tmp_path / "junk.yaml"
    cfg.write_text(text + junk)
    t = time.perf_counter()
    res = run_msdoctor("memory", "--config", str(cfg), timeout=120)
    assert res.returncode in (0, 1), res.stderr
    assert "more unknown keys" in res.stdout and res.stdout.count("unknown key junk_key_number_") == 20
    assert time.perf_counter() - t < 60


def test_many_findings_render_in_linear_time_and_are_summarised():
    def render(n: int, verbose: bool = False) -> tuple[float, str]:
        fs = [Finding.warn(f"unknown key k{i}", detail="why " * 10, fix=f"remove k{i}") for i in range(n)]
        r = CheckResult(id="x", title="X", description="x", findings=fs, duration_s=0.1)
        buf = io.StringIO()
        t = time.perf_counter()
        _result(make_console(buf, False, 100), r, verbose)
        return time.perf_counter() - t, buf.getvalue()

    took, out = render(3000)
    assert out.count("unknown key k") == MAX_FINDINGS and f"and {3000 - MAX_FINDINGS} more findings (" in out
    assert "3000" not in out.split("more findings")[0][-10:] and took < 5
    took_v, out_v = render(3000, verbose=True)
    assert out_v.count("unknown key k") == 3000 and took_v < 30  # was ~40 s at 2,000 findings (quadratic)


def test_training_config_check_refuses_absurd_values_quickly(tmp_path):
    """The training-config rules enumerated divisors of, and built per-stage lists for, these values."""
    text = LEGACY.read_text().replace("  pipeline_stage: 1\n", "  pipeline_stage: 1000000000\n", 1)
    cfg = tmp_path / "absurd.yaml"
    cfg.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t == "  pipeline_stage: 1000000000")
    t = time.perf_counter()
    res, report = run_json("check", "--config", str(cfg), "--only", "training-config", timeout=120)
    [f] = check_of(report, "training-config")["findings"]
    assert f["status"] == "error" and "past any real training run" in f["title"] and res.returncode == 1
    assert f["location"]["path"] == str(cfg) and f["location"]["line"] == line
    assert time.perf_counter() - t < 60
