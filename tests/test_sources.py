"""Shipped code cites public sources, never the authors' private notes or their issue numbers.

Every Python file, matrix table and bundled config that the wheel installs is read as text: string
constants (messages, docstrings) and comments alike. ``research/compat.md C12`` or "issue 5" name
files and threads a user does not have; a URL, a path inside a released wheel or a public
repository, or "observed" (with how) is what a reader can follow (docs/sources.md).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from helpers import REPO

SHIPPED = ("msdoctor", "checks", "training", "compat_matrix")
NOTES = r"(?:compat|memory|anchors_doctor|cluster|mindspore_cpu|aesthetics)"
PRIVATE = [
    re.compile(rf"\bresearch/{NOTES}\b"),  # research/compat.md
    re.compile(rf"(?<![\w/]){NOTES}\.md\b(?<!docs/memory\.md)"),  # compat.md B9 (docs/memory.md is ours)
    re.compile(r"\bresearch\s+(?:[A-D]\d|compat|notes?)\b", re.I),  # "research A9", "research compat.md"
    re.compile(r"\bissue\s+#?\d+\b", re.I),  # "issue 5" (a URL .../issues/5 is fine)
    re.compile(r"\bmemory\.md\s+section\b", re.I),
]


def shipped_files() -> list[Path]:
    out: list[Path] = []
    for top in SHIPPED:
        for p in sorted((REPO / top).rglob("*")):
            if p.is_file() and p.suffix in (".py", ".toml", ".yaml", ".yml") and "__pycache__" not in p.parts:
                out.append(p)
    return out


def texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant and comment of a Python file; every line of a data file."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(source.splitlines(), 1))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.STRING, tokenize.COMMENT) or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            out.append((tok.start[0], tok.string))
    return out


def test_the_scan_sees_the_shipped_files() -> None:
    files = shipped_files()
    names = {p.relative_to(REPO).as_posix() for p in files}
    assert {"msdoctor/cli.py", "checks/version_matrix/ascend.py", "compat_matrix/mindspore.toml"} <= names
    assert sum(len(texts(p)) for p in files) > 5000


@pytest.mark.parametrize(
    "bad", ["see research/compat.md C12", "(compat.md B9)", "(research A9)", "issue 5's rule", "memory.md section 7"]
)
def test_each_pattern_catches_what_it_is_for(bad: str) -> None:
    assert any(p.search(bad) for p in PRIVATE), bad


@pytest.mark.parametrize(
    "fine",
    [
        "https://github.com/candle-org/MindAct/issues/2245",
        "docs/memory.md",
        "mindformers research/deepseek3/deepseek2_model.py",
        "r1.5.0/research/qwen2_5/x.yaml",
    ],
)
def test_public_sources_pass(fine: str) -> None:
    assert not any(p.search(fine) for p in PRIVATE), fine


def test_no_shipped_text_cites_private_notes_or_issue_numbers() -> None:
    hits = []
    for path in shipped_files():
        for line, text in texts(path):
            for pattern in PRIVATE:
                m = pattern.search(text)
                if m:
                    hits.append(f"{path.relative_to(REPO)}:{line}: {m.group(0)!r} in {text.strip()[:100]!r}")
    assert not hits, "cite the public source instead (docs/sources.md):\n" + "\n".join(hits)
