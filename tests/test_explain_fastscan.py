"""The block prefilter of `explain --log` (msdoctor/explain/fastscan.py) gives the same answers as the
line-by-line text reader: every real report of tests/data/explain/real_cases.toml, placed in a long synthetic
training log, plain and mangled the way logs arrive (CRLF, tabs, colour codes, indentation, HTML escapes, a UTF-8
BOM, Chinese lines nearby). With and without the native matcher (google-re2, the extra ``fast``): the same lines
reach the scanner, so the same answers."""

from __future__ import annotations

import io
import random
import tracemalloc
from pathlib import Path

import pytest

from msdoctor.explain import CatalogueError, explain_file, load_catalogue, parse_catalogue
from msdoctor.explain import fastscan
from msdoctor.explain.fastscan import scan_binary
from msdoctor.explain.parse import open_log
from msdoctor.explain.scan import _explain_stream_text, _scanner

DATA = Path(__file__).parent / "data"
STEP = "[INFO] step {i}/200000 loss {loss:.4f} lr 3.0e-04 grad_norm 0.812 tokens/s 25123 step_time 0.163"
WARN = (
    "[WARNING] ANALYZER(1201,7f3a,python):2026-01-01-10:00:00.000.000 [auto_monad.cc:1590] "
    "ClearIsolatedNodes] Some side effect nodes were eliminated by mistake."
)


def _texts() -> dict[str, str]:
    import tomllib

    data = tomllib.loads((DATA / "explain" / "real_cases.toml").read_text(encoding="utf-8"))
    return {c["id"]: c["text"] for key in ("case", "negative", "holdout") for c in data.get(key, [])}


TEXTS = _texts()
MANGLE = {
    "plain": lambda t: t,
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "tabs": lambda t: t.replace(" ", "\t", 3),
    "ansi": lambda t: "\n".join(f"\x1b[31m{line}\x1b[0m" for line in t.split("\n")),
    "indented": lambda t: "\n".join("    " + line for line in t.split("\n")),
    "html": lambda t: t.replace("'", "&#39;").replace('"', "&quot;"),
    "chinese-nearby": lambda t: "训练开始\n" + t + "\n训练结束",
}


needs_re2 = pytest.mark.skipif(fastscan._re2() is None, reason="google-re2 (the extra `fast`) is not installed")
NATIVE = [False, pytest.param(True, marks=needs_re2)]


def _both(raw: bytes, native: bool = False) -> tuple[list, list]:
    fast = scan_binary(io.BytesIO(raw), _scanner(None), native=native)
    slow = _explain_stream_text(open_log(io.BytesIO(raw)))
    return fast, slow


def _fed(raw: bytes, native: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    """(the (line number, lines) handed to the scanner, the matches) of one fast scan."""
    fed: list[tuple[int, list[str]]] = []
    real = fastscan._FastScan._feed_at
    with monkeypatch.context() as m:
        m.setattr(
            fastscan._FastScan,
            "_feed_at",
            lambda self, no, lines: (fed.append((no, list(lines))), real(self, no, lines)),
        )
        found = scan_binary(io.BytesIO(raw), _scanner(None), native=native)
    return fed, found


def _log(rng: random.Random, inserts: list[str], lines: int = 3000) -> str:
    body = [WARN if i % 50 == 0 else STEP.format(i=i, loss=rng.uniform(0.1, 6)) for i in range(lines)]
    for text in inserts:
        at = rng.randrange(len(body))
        body[at:at] = text.strip("\n").split("\n")
    return "\n".join(body) + "\n"


@pytest.mark.parametrize("native", NATIVE)
@pytest.mark.parametrize("mangle", sorted(MANGLE))
def test_same_answers_as_the_text_reader_on_every_real_report(mangle: str, native: bool) -> None:
    rng = random.Random(mangle)
    ids = sorted(TEXTS)
    found = 0
    for start in range(0, len(ids), 12):  # a dozen reports per log, at random places
        log = _log(rng, [MANGLE[mangle](TEXTS[i]) for i in ids[start : start + 12]])
        fast, slow = _both(log.encode(), native)
        assert fast == slow, ids[start : start + 12]
        found += len(slow)
    assert found > len(ids) // 2  # the reports are found at all


def test_bom_and_a_line_without_newline_at_the_end() -> None:
    text = "\ufeff" + _log(random.Random(1), [TEXTS[sorted(TEXTS)[0]]]).rstrip("\n")
    fast, slow = _both(text.encode("utf-8"))
    assert fast == slow and fast


@pytest.mark.parametrize("native", NATIVE)
def test_clean_lines_are_never_decoded(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    """The prefilter's point: a clean plain block costs substring searches, not per-line work."""
    error = "ImportError: numpy.core.multiarray failed to import"
    log = _log(random.Random(2), [error], lines=50_000)
    fed, matches = _fed(log.encode(), native, monkeypatch)
    assert [m.entry_id for m in matches] == ["numpy2-abi"]
    # the error line and its neighbours (fastscan.BEFORE back), not 50,000 lines
    assert sum(len(lines) for _, lines in fed) < 40, fed


def test_memory_is_bounded_by_the_block_not_the_file(tmp_path: Path) -> None:
    import msdoctor.explain.fastscan as fs

    log = tmp_path / "no-newline.log"
    with log.open("wb") as fh:
        for _ in range(12):
            fh.write(b"x" * (1 << 20))  # 12 MiB without a newline (a binary file, a progress bar)
        fh.write(b"\nImportError: numpy.core.multiarray failed to import\n")
    tracemalloc.start()
    try:
        found = [m.entry_id for m in explain_file(log)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == ["numpy2-abi"]
    assert peak < 8 * fs.FAST_BLOCK, peak


def test_every_bundled_entry_can_be_prefiltered() -> None:
    """An entry with neither a required literal nor a gate would send every log through the line reader."""
    from msdoctor.explain.catalogue import required_literals

    for e in load_catalogue():
        assert required_literals(e.pattern.pattern) is not None or e.gate is not None, e.id


def test_gate_is_validated() -> None:
    base = (
        'kind = "error-catalogue"\n[[error]]\nid = "x"\ntitle = "t"\npattern = "a"\ncause = "c"\nfix = "f"\n'
        'check = ""\nsource = "s"\ncategory = "cann-code"\n'
    )
    assert parse_catalogue(base + "gate = 'E[0-9]{4}'\n")[0].gate is not None
    with pytest.raises(CatalogueError, match="whitespace"):
        parse_catalogue(base + "gate = 'E\\s[0-9]'\n")
    with pytest.raises(CatalogueError, match="ASCII"):
        parse_catalogue(base + "gate = '错误'\n")


@needs_re2
def test_the_native_matcher_skips_clean_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """With google-re2 a clean 64 KiB piece is skipped after one DFA pass: the per-key searches run only on the
    piece that holds the error (without it they run on every piece)."""
    pieces: dict[bool, int] = {}
    log = _log(random.Random(3), ["ImportError: numpy.core.multiarray failed to import"], lines=50_000).encode()
    real = fastscan._FastScan._piece
    for use in (False, True):
        calls = [0]
        with monkeypatch.context() as m:
            m.setattr(
                fastscan._FastScan, "_piece", lambda self, *a, c=calls: (c.__setitem__(0, c[0] + 1), real(self, *a))
            )
            found = scan_binary(io.BytesIO(log), _scanner(None), native=use)
        assert [f.entry_id for f in found] == ["numpy2-abi"]
        pieces[use] = calls[0]
    assert pieces[False] >= len(log) // fastscan.SUB_BLOCK and pieces[True] <= 2, pieces


@needs_re2
def test_native_and_pure_python_hand_the_scanner_the_same_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every real report, plain and mangled, in pieces of 512 bytes (so signatures, wrapped lines, leading spaces
    and entities fall on piece boundaries): the lines the scanner sees are the same with and without RE2."""
    monkeypatch.setattr(fastscan, "SUB_BLOCK", 512)
    rng = random.Random("boundaries")
    ids = sorted(TEXTS)
    reports = [MANGLE[k](TEXTS[i]) for k in sorted(MANGLE) for i in ids]
    rng.shuffle(reports)
    wrapped = [
        "ImportError: numpy.core.multiarray\nfailed to import",
        " Traceback (most recent call last):",
        "x &amp; y",
        "RuntimeError: EI0006: Getting socket times out.",
    ]
    for start in range(0, len(reports), 40):
        log = _log(rng, reports[start : start + 40] + wrapped, lines=600).encode()
        fed_py, found_py = _fed(log, False, monkeypatch)
        fed_re2, found_re2 = _fed(log, True, monkeypatch)
        assert fed_re2 == fed_py
        assert found_re2 == found_py == _explain_stream_text(open_log(io.BytesIO(log)))


@needs_re2
def test_same_answers_on_a_big_generated_log() -> None:
    """A 20 MB training log (three read blocks) with every real report at a random place: the same answers from
    the native matcher, the pure-Python prefilter and the line reader."""
    rng = random.Random("big")
    body = _log(rng, [], lines=200_000).split("\n")
    for i in sorted(TEXTS):
        at = rng.randrange(len(body))
        body[at:at] = TEXTS[i].strip("\n").split("\n")
    log = "\n".join(body).encode()
    assert len(log) > 2 * fastscan.FAST_BLOCK
    with_re2 = scan_binary(io.BytesIO(log), _scanner(None), native=True)
    assert with_re2 == scan_binary(io.BytesIO(log), _scanner(None), native=False)
    assert with_re2 == _explain_stream_text(open_log(io.BytesIO(log)))
    assert len({m.entry_id for m in with_re2}) > 20


def test_msdoctor_no_re2_turns_the_native_matcher_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fastscan.NO_RE2_ENV, "1")
    assert not fastscan.native_enabled()
    assert fastscan._FastScan(_scanner(None)).native is None
    monkeypatch.delenv(fastscan.NO_RE2_ENV)
    assert fastscan.native_enabled() == (fastscan._re2() is not None)
    assert (fastscan._FastScan(_scanner(None)).native is not None) == (fastscan._re2() is not None)


@needs_re2
def test_native_filter_at_piece_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each line its own piece (lines of SUB_BLOCK bytes): a piece that is not plain only by its leading space, a
    signature wrapped over two pieces, an entity, a tab and a colour code at a piece's end reach the scanner the
    same way with and without RE2."""
    monkeypatch.setattr(fastscan, "SUB_BLOCK", 128)

    def line(text: str) -> str:
        return text + "." * (127 - len(text)) if len(text) < 127 else text

    clean = [line(f"[INFO] step {i} loss 0.5") for i in range(40)]
    odd = [
        line(" leading space, nothing else"),
        "ImportError: numpy.core.multiarray failed to\n" + line("import"),
        ("ImportError: numpy.core.multiarray failed to").rjust(127, ".") + "\n" + line("import"),
        line("a value &amp;"),
        line("tab\tat the end"),
        line("colour \x1b[0m"),
    ]
    for k, special in enumerate(odd):
        body = clean[: 10 + k] + [special] + clean[10 + k :]
        log = ("\n".join(body) + "\n").encode()
        fed_py, found_py = _fed(log, False, monkeypatch)
        fed_re2, found_re2 = _fed(log, True, monkeypatch)
        assert fed_py, special  # the pure-Python path sees something there
        assert fed_re2 == fed_py, special
        assert found_re2 == found_py


@needs_re2
def test_a_pattern_re2_refuses_falls_back_to_pure_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """RE2 over its memory budget (a plugin catalogue with very many literals): the scan goes on without it."""

    def refuse(*_a: object, **_k: object) -> None:
        raise RuntimeError("pattern too large - compile failed")

    monkeypatch.setattr(fastscan._Native, "__init__", refuse)
    assert fastscan._FastScan(_scanner(None)).native is None
    log = _log(random.Random(4), ["ImportError: numpy.core.multiarray failed to import"]).encode()
    assert [m.entry_id for m in scan_binary(io.BytesIO(log), _scanner(None))] == ["numpy2-abi"]
    with pytest.raises(RuntimeError):
        fastscan._FastScan(_scanner(None), native=True)
