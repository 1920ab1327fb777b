"""The 2026-12-02 hold-out set (tests/data/explain/holdout_2026-12-02.toml): real reports that the rules were not
written from, scored once by hand against the cause each thread settled on. The answers judged right must stay
right; the tally is printed so that a change to explain shows what it did to unseen cases."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest

from msdoctor.explain import explain_text

DATA = Path(__file__).parent / "data" / "explain" / "holdout_2026-12-02.toml"


def _cases() -> list[dict[str, Any]]:
    import tomllib

    return tomllib.loads(DATA.read_text(encoding="utf-8"))["case"]


CASES = _cases()
RIGHT = {c["id"]: c for c in CASES if c["verdict"] == "right"}


def test_the_hold_out_is_sourced_and_tallied() -> None:
    assert len(CASES) >= 40
    assert len({c["source"] for c in CASES}) == len(CASES)
    for c in CASES:
        assert c["source"].startswith("https://") and c["text"].strip() and c["settled"].strip(), c["id"]
        assert c["verdict"] in {"right", "partial", "wrong", "honest", "none"}, c["id"]
        assert c["verdict"] in {"right", "none", "honest"} or c.get("note"), c["id"]
    tally = collections.Counter(c["verdict"] for c in CASES)
    print(f"hold-out 2026-12-02: {dict(tally)} of {len(CASES)}")


@pytest.mark.parametrize("case_id", sorted(RIGHT))
def test_an_answer_judged_right_stays_right(case_id: str) -> None:
    case = RIGHT[case_id]
    got = [m.entry_id for m in explain_text(case["text"])]
    assert got and got[0] == case["entry"], f"{case_id}: {got}"
