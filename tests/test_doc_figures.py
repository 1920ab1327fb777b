"""The figures the README and docs quote are the figures the commands print (issue 29, item 7).

Each quoted command runs in-process (click's runner; `msdoctor memory` imports no MindSpore) and its output is
compared with the numbers the page gives, in the units it prints. Timings of training runs cannot be rerun per
test; what is checked for them is that the config's comment and the docs quote the same measured figure.
"""

from __future__ import annotations

import re

from click.testing import CliRunner

from helpers import REPO
from msdoctor.commands.memory import memory

MEMORY_DOC = REPO / "docs/memory.md"


def _zero_paragraph() -> str:
    text = " ".join(MEMORY_DOC.read_text(encoding="utf-8").split())
    start = text.index("the ZeRO paper's Figure 1:")
    return text[start : text.index("python benchmarks/bench_memory.py", start)]


def _model_states(args: list[str]) -> str:
    res = CliRunner().invoke(memory, args)
    assert res.exit_code in (0, 1), res.output
    m = re.search(r"of which model states\s+([\d.]+)\s+([\d,]+)", res.output)
    assert m, res.output
    return m.group(1), m.group(2)


def test_zero_example_quotes_what_memory_prints() -> None:
    para = _zero_paragraph()
    cmd = re.search(r"`msdoctor memory ([^`]+)`", para).group(1).split()
    gib, nbytes = _model_states(cmd)
    quoted = re.search(r"prints ([\d.]+) GiB of model states \(([\d,]+) bytes", para)
    assert quoted and quoted.groups() == (gib, nbytes), (quoted and quoted.groups(), gib, nbytes)
    others = re.search(r"`none` / `optimizer` / `params` it prints ([\d.]+) / ([\d.]+) / ([\d.]+) GiB", para)
    assert others, para
    i = cmd.index("--optimizer-sharding")
    for level, want in zip(("none", "optimizer", "params"), others.groups()):
        got, _ = _model_states(cmd[: i + 1] + [level] + cmd[i + 2 :])
        assert got == want, (level, got, want)


def test_tiny_config_time_matches_the_docs() -> None:
    comment = re.search(r"max_steps:.*#.*\(([^)]*minute[^)]*)\)", (REPO / "training/configs/tiny-cpu.yaml").read_text())
    assert comment, "tiny-cpu.yaml: max_steps' comment gives the run's time"
    train_doc = (REPO / "docs/train.md").read_text(encoding="utf-8")
    assert comment.group(1) in train_doc, (comment.group(1), "is not what docs/train.md quotes")
    assert "about a minute" not in comment.group(1)


def test_dp2_example_gives_its_time() -> None:
    train_doc = (REPO / "docs/train.md").read_text(encoding="utf-8")
    line = [ln for ln in train_doc.splitlines() if "msdoctor train --config training/configs/tiny-cpu-dp2.yaml" in ln]
    assert line and re.search(r"\d+\s*min", line[0]), line
