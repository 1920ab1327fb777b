"""README_CN.md keeps step with README.md: the same commands, each shown with the same options.

Both are read as a newcomer reads them: every `msdoctor <command> ...` line in a code block. A
command or option added to one README and not the other fails here, naming it. The diff exit codes,
which README_CN once gave wrongly, are compared with the command's own --help (the reference moved
to docs/report-diff.md and, in Chinese, docs/zh-CN.md).
"""

from __future__ import annotations

import re
import subprocess

from helpers import REPO, msdoctor_exe

LINE = re.compile(r"^\s*(?:\.venv/bin/)?msdoctor\s+([a-z][\w-]*)(.*)$")


def examples(name: str) -> dict[str, set[str]]:
    """command -> the options its example lines use, from the code blocks of one README."""
    out: dict[str, set[str]] = {}
    inside = False
    for line in (REPO / name).read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        m = LINE.match(line) if inside else None
        if m and not m.group(1).startswith("-"):
            code = m.group(2).split("#", 1)[0]
            out.setdefault(m.group(1), set()).update(re.findall(r"(?<![\w-])--[a-z][\w-]*", code))
    return out


def test_both_readmes_show_the_same_commands_and_options() -> None:
    en, cn = examples("README.md"), examples("README_CN.md")
    assert len(en) >= 5, sorted(en)
    assert set(en) == set(cn), (
        f"only in README.md: {sorted(set(en) - set(cn))}; only in README_CN.md: {sorted(set(cn) - set(en))}"
    )
    for cmd in en:
        assert en[cmd] == cn[cmd], (
            f"msdoctor {cmd}: only in README.md {sorted(en[cmd] - cn[cmd])}, "
            f"only in README_CN.md {sorted(cn[cmd] - en[cmd])}"
        )


def test_both_readmes_link_the_plugin_page() -> None:
    assert '[project.entry-points."msdoctor.checks"]' in (REPO / "docs/plugins.md").read_text(encoding="utf-8")
    for name in ("README.md", "README_CN.md", "docs/zh-CN.md"):
        assert "plugins.md" in (REPO / name).read_text(encoding="utf-8"), name


def test_the_diff_exit_codes_match_the_command() -> None:
    helptext = subprocess.run([msdoctor_exe(), "diff", "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "0 nothing that matters differs, 1 something does" in " ".join(helptext.split())
    cn = (REPO / "docs/zh-CN.md").read_text(encoding="utf-8")
    section = cn[cn.index("msdoctor diff") :]
    assert re.search(r"退出码[^0-9]*0[^1]*1[^2]*2", section), "docs/zh-CN.md must give diff's exit codes 0 / 1 / 2"
    en = (REPO / "docs/report-diff.md").read_text(encoding="utf-8")
    section = " ".join(en[en.index("## `msdoctor diff`") :].split())
    assert re.search(r"Exit `1` when something that matters differs, `0` otherwise, `2`", section), section
