"""The terminal renderer: literal text (no markup), ASCII fallback, problems before passes, summary line."""

from __future__ import annotations

import io
import re

from msdoctor.render import RenderOptions, render

from test_report_schema import sample_report


class AsciiStream(io.StringIO):
    encoding = "ascii"


class Utf8Stream(io.StringIO):
    encoding = "utf-8"


def text(verbose: bool = False, stream=None) -> str:
    buf = stream or Utf8Stream()
    render("terminal", sample_report(), buf, RenderOptions(verbose=verbose, color=False, width=120))
    return buf.getvalue()


def test_problems_fixes_and_locations_are_shown() -> None:
    out = text()
    lines = out.splitlines()
    assert lines[0] == "msdoctor 0.1.0 · target /env/bin/python (Python 3.11.7, conda ms)"
    assert "    ✗ dup" in out
    assert "      fix: /env/bin/python -m pip uninstall -y numpy" in out
    assert "tight  (t.yaml:3:1)" in out
    assert "accepted  [suppressed: known, until 2027-01-01]" in out
    # the failing finding comes before the passing one within a check
    assert out.index("✗ dup") < out.index("• ok")
    assert lines[-1] == "2 checks: 1 failed, 1 errored in 1.2s: problems found"


def test_markup_like_text_prints_literally() -> None:
    """Titles, details and fixes hold text such as `transformers[torch]` and `[/]`: rich would eat them as markup."""
    from msdoctor.model import CheckResult, Finding, Report, Target

    title = "[bold]numpy[/bold] and [red]two[/red] copies"
    fix = "pip install 'transformers[torch]' [/]"
    report = Report(
        "0.1.0",
        Target("/env/bin/python", "3.11.7"),
        [
            CheckResult(
                "demo",
                "Demo [x]",
                "demo",
                [Finding.fail(title, detail="see [link=https://x]here[/link]", fix=fix)],
                0.1,
            )
        ],
        "2026-11-29T00:00:00+00:00",
        0.1,
    )
    buf = Utf8Stream()
    render("terminal", report, buf, RenderOptions(color=True))
    plain = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())
    for literal in (title, fix, "[link=https://x]here[/link]", "Demo [x]"):
        assert literal in plain, literal
    assert "[☠] Crashy (crashy)" in text()  # a bracketed glyph


def test_verbose_shows_evidence_and_traceback() -> None:
    quiet, loud = text(False), text(True)
    assert "copies: ['/a', '/b']" not in quiet and "copies: ['/a', '/b']" in loud
    assert "KeyError: 'x'" in loud and "Traceback" not in quiet


def test_ascii_terminal_gets_ascii_glyphs() -> None:
    out = text(stream=AsciiStream())
    assert "[FAIL] Demo (demo)" in out and "[ERR] Crashy (crashy)" in out


def test_a_passing_check_is_one_line_and_its_proof_shows_under_verbose() -> None:
    from msdoctor.model import CheckResult, Finding, Report, Target

    proofs = [
        Finding.passed("MindSpore 2.7.0 fits Python 3.11", proved="Requires-Python >=3.9 holds for 3.11.7"),
        Finding.passed("numpy 1.26.4 fits", proved="numpy<2.0.0,>=1.20.0 holds"),
    ]
    report = Report(
        "0.1.0",
        Target("/env/bin/python", "3.11.7"),
        [
            CheckResult("healthy", "Healthy", "h", proofs, 0.1),
            CheckResult("demo", "Demo", "d", [Finding.fail("dup", fix="uninstall one")], 0.1),
        ],
        "2026-11-29T00:00:00+00:00",
        0.2,
    )

    def lines(verbose: bool) -> list[str]:
        buf = Utf8Stream()
        render("terminal", report, buf, RenderOptions(verbose=verbose, color=False, width=120))
        return buf.getvalue().splitlines()

    quiet = lines(False)
    (head,) = [line for line in quiet if "(healthy)" in line]
    assert "(2 proofs: -v)" in head
    assert not any("fits Python" in line or "holds" in line for line in quiet)
    assert any("✗ dup" in line for line in quiet)  # problems keep their detail
    loud = "\n".join(lines(True))
    assert "MindSpore 2.7.0 fits Python 3.11" in loud and "Requires-Python >=3.9 holds" in loud


class TtyStream(Utf8Stream):
    def isatty(self) -> bool:
        return True


def test_text_console_colours_by_the_rules(monkeypatch) -> None:
    """--color / --no-color decide; NO_COLOR turns it off, FORCE_COLOR on, a terminal gets it unless TERM=dumb."""
    from msdoctor.render.console import TextConsole

    for var in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(var, raising=False)
    assert not TextConsole(Utf8Stream()).color  # a pipe or a file
    assert TextConsole(TtyStream()).color
    assert TextConsole(Utf8Stream(), color=True).color  # --color on a pipe: forced, as its help says
    monkeypatch.setenv("TERM", "dumb")
    assert not TextConsole(TtyStream()).color
    monkeypatch.delenv("TERM")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not TextConsole(TtyStream()).color and TextConsole(TtyStream(), color=True).color
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert TextConsole(Utf8Stream()).color and not TextConsole(Utf8Stream(), color=False).color


def test_text_console_styles_each_line_and_keeps_text_literal() -> None:
    from msdoctor.render.console import TextConsole

    buf = Utf8Stream()
    c = TextConsole(buf, color=True)
    c.print("[bold]a[/bold]\n\n\tb", style="bold red")
    c.print("plain", end="")
    c.print(" more", style="dim")
    assert buf.getvalue() == "\x1b[1;31m[bold]a[/bold]\x1b[0m\n\n\x1b[1;31m        b\x1b[0m\nplain\x1b[2m more\x1b[0m\n"


def test_text_console_wraps_on_a_terminal_only_keeping_the_indent() -> None:
    """A terminal wraps at spaces to its width (East Asian wide characters count two cells); a pipe keeps lines."""
    from msdoctor.render.console import TextConsole, wrap

    line = "      fix: " + " ".join(["word"] * 12)
    tty = TtyStream()
    TextConsole(tty, color=False, width=30).print(line)
    out = tty.getvalue().splitlines()
    assert len(out) > 1 and all(len(x) <= 30 for x in out) and all(x.startswith("      ") for x in out)
    assert " ".join(x.strip() for x in out) == line.strip()
    pipe = Utf8Stream()
    TextConsole(pipe, color=False, width=30).print(line)
    assert pipe.getvalue() == line + "\n"
    cjk = wrap("  昇腾设备 不可用 " * 4, 20)
    assert all(sum(2 if ord(ch) > 0x2E80 else 1 for ch in x) <= 20 for x in cjk), cjk
    long = wrap("  /a/very/long/path/" + "x" * 50, 24)
    assert all(len(x) <= 24 for x in long) and "".join(x.strip() for x in long) == "/a/very/long/path/" + "x" * 50


def test_check_quick_loads_no_renderer_or_pool_it_does_not_use(tmp_path) -> None:
    """check --quick's own time is mostly imports: the report is text, so rich (tables, the spinner) is not loaded;
    nor concurrent.futures (plain threads), importlib.resources and zipfile (shipped files are read from disk),
    or socket (the host name is uname's)."""
    import subprocess
    import sys

    unused = ("rich", "rich.console", "concurrent.futures", "importlib.resources", "zipfile", "socket")
    code = (
        "import sys; from msdoctor.cli import main\n"
        "try:\n    main(['check', '--quick'])\n"
        "except SystemExit:\n    pass\n"
        f"print([m for m in {unused!r} if m in sys.modules], file=sys.stderr)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.stderr.strip().splitlines()[-1] == "[]", res.stderr
    assert "(python-env)" in res.stdout and "(kernel-mismatch)" in res.stdout
