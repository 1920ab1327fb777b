"""README.md is a quickstart a newcomer reads in one screen; the reference lives in docs/, one page per command.

Checked as a newcomer would meet it: the README fits a screen, gives exactly the two set-up commands
(and .ci/run runs the test one verbatim), shows a handful of commands, the exit codes, and links a docs page
for every command `msdoctor --help` lists; every relative link in the READMEs and docs/ points at a file.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers import REPO

from msdoctor.cli import COMMANDS

SETUP = [
    "./scripts/doctor.sh     # set up .venv (msdoctor + MindSpore 2.7.0) and run `msdoctor check` on it",
    "./scripts/test.sh       # set up .venv with the test extras, and .venv-newest, run ruff and mypy, then the whole test suite",
]
SCREEN_LINES = 60
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def code_lines(text: str) -> list[str]:
    out, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside:
            out.append(line)
    return out


def test_the_readmes_fit_one_screen() -> None:
    for name in ("README.md", "README_CN.md"):
        n = len((REPO / name).read_text(encoding="utf-8").splitlines())
        assert n <= SCREEN_LINES, f"{name} has {n} lines; the reference belongs in docs/"


def test_exactly_the_two_setup_commands_and_ci_runs_the_test_one() -> None:
    for name in ("README.md", "README_CN.md"):
        scripts = [
            line for line in code_lines((REPO / name).read_text(encoding="utf-8")) if line.startswith("./scripts/")
        ]
        assert scripts == SETUP, name
    ci = [
        line
        for line in (REPO / ".ci/run").read_text().splitlines()
        if line and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == [SETUP[1].split("#")[0].strip()]


def test_readme_shows_first_commands_and_exit_codes() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    cmds = [line.split()[1] for line in code_lines(text) if line.startswith("msdoctor ")]
    assert len(cmds) == len(set(cmds)) == 5, cmds
    assert set(cmds) <= set(COMMANDS)
    section = text[text.index("## Exit codes") :]
    for code in ("`0`", "`1`", "`2`", "`3`"):
        assert code in section


def test_every_command_has_a_docs_page_linked_from_both_readmes() -> None:
    page = {name: f"docs/{name}.md" for name in COMMANDS}
    page.update(
        {
            "list-checks": "docs/check.md",
            "report": "docs/report-diff.md",
            "diff": "docs/report-diff.md",
            "fix": "docs/fix-stack.md",
        }
    )
    for name in ("README.md", "README_CN.md"):
        links = set(LINK.findall((REPO / name).read_text(encoding="utf-8")))
        for cmd, doc in page.items():
            assert (REPO / doc).is_file(), doc
            assert doc in links, f"{name} does not link {doc} (msdoctor {cmd})"
            assert f"msdoctor {cmd}" in (REPO / doc).read_text(encoding="utf-8"), (cmd, doc)


def test_relative_links_resolve() -> None:
    files = [REPO / "README.md", REPO / "README_CN.md", *sorted((REPO / "docs").glob("*.md"))]
    for f in files:
        for target in LINK.findall(f.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            assert (f.parent / target).exists(), f"{f.relative_to(REPO)}: broken link {target}"


def test_moved_reference_kept_its_content() -> None:
    """What the old README said about each command is now on that command's page (spot checks of each section)."""
    expect = {
        "docs/check.md": ["--fail-on warn|fail", "`python-env`", "msdoctor.toml", "--format github --fail-on fail"],
        "docs/train.md": ["One writer per run directory", "A corrupt checkpoint never wins", "--resume"],
        "docs/memory.md": ["--framework megatron|deepspeed|zero-paper", "msdoctor memory --config train.yaml"],
        "docs/explain.md": ["msdoctor explain --log"],
        "docs/preflight.md": ["msdoctor preflight plan"],
        "docs/report-diff.md": ["msdoctor report --output", "msdoctor diff node1.json node2.json"],
        "docs/matrix.md": ["msdoctor matrix --cann"],
        "docs/fix-stack.md": ["--dry-run --report -"],
        "docs/fix-kernel.md": ["--remove-stale"],
        "docs/vscode.md": ["msdoctor vscode init --project"],
        "docs/setup.md": ["scripts/constraints/newest.txt"],
    }
    for doc, needles in expect.items():
        text = Path(REPO / doc).read_text(encoding="utf-8")
        for needle in needles:
            assert needle in text, (doc, needle)
