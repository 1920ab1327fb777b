"""The block prefilter of `explain --log` (msdoctor/explain/fastscan.py, issue 28 section 2) gives the same
answers as the line-by-line text reader: every real report of tests/data/explain/real_cases.toml, placed in a
long synthetic training log, plain and mangled the way logs arrive (CRLF, tabs, colour codes, indentation,
HTML escapes, a UTF-8 BOM, Chinese lines nearby)."""

from __future__ import annotations

import io
import random
import tracemalloc
from pathlib import Path

import pytest

from msdoctor.explain import CatalogueError, explain_file, load_catalogue, parse_catalogue
from msdoctor.explain.fastscan import scan_binary
from msdoctor.explain.parse import open_log
from msdoctor.explain.scan import _explain_stream_text, _scanner

DATA = Path(__file__).parent / "data"
STEP = "[INFO] step {i}/200000 loss {loss:.4f} lr 3.0e-04 grad_norm 0.812 tokens/s 25123 step_time 0.163"
WARN = ("[WARNING] ANALYZER(1201,7f3a,python):2026-01-01-10:00:00.000.000 [auto_monad.cc:1590] "
        "ClearIsolatedNodes] Some side effect nodes were eliminated by mistake.")


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


def _both(raw: bytes) -> tuple[list, list]:
    fast = scan_binary(io.BytesIO(raw), _scanner(None))
    slow = _explain_stream_text(open_log(io.BytesIO(raw)))
    return fast, slow


def _log(rng: random.Random, inserts: list[str], lines: int = 3000) -> str:
    body = [WARN if i % 50 == 0 else STEP.format(i=i, loss=rng.uniform(0.1, 6)) for i in range(lines)]
    for text in inserts:
        at = rng.randrange(len(body))
        body[at:at] = text.strip("\n").split("\n")
    return "\n".join(body) + "\n"


@pytest.mark.parametrize("mangle", sorted(MANGLE))
def test_same_answers_as_the_text_reader_on_every_real_report(mangle: str) -> None:
    rng = random.Random(mangle)
    ids = sorted(TEXTS)
    found = 0
    for start in range(0, len(ids), 12):  # a dozen reports per log, at random places
        log = _log(rng, [MANGLE[mangle](TEXTS[i]) for i in ids[start:start + 12]])
        fast, slow = _both(log.encode())
        assert fast == slow, ids[start:start + 12]
        found += len(slow)
    assert found > len(ids) // 2  # the reports are found at all


def test_bom_and_a_line_without_newline_at_the_end() -> None:
    text = "\ufeff" + _log(random.Random(1), [TEXTS[sorted(TEXTS)[0]]]).rstrip("\n")
    fast, slow = _both(text.encode("utf-8"))
    assert fast == slow and fast


def test_clean_lines_are_never_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefilter's point: a clean plain block costs substring searches, not per-line work."""
    import msdoctor.explain.fastscan as fs

    fed: list[int] = []
    real = fs._FastScan._feed_at
    monkeypatch.setattr(fs._FastScan, "_feed_at", lambda self, no, lines: (fed.append(len(lines)),
                                                                            real(self, no, lines)))
    error = "ImportError: numpy.core.multiarray failed to import"
    log = _log(random.Random(2), [error], lines=50_000)
    matches = scan_binary(io.BytesIO(log.encode()), _scanner(None))
    assert [m.entry_id for m in matches] == ["numpy2-abi"]
    assert sum(fed) < 40, fed  # the error line and its neighbours (fastscan.BEFORE back), not 50,000 lines


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
    base = ('kind = "error-catalogue"\n[[error]]\nid = "x"\ntitle = "t"\npattern = "a"\ncause = "c"\nfix = "f"\n'
            'check = ""\nsource = "s"\ncategory = "cann-code"\n')
    assert parse_catalogue(base + "gate = 'E[0-9]{4}'\n")[0].gate is not None
    with pytest.raises(CatalogueError, match="whitespace"):
        parse_catalogue(base + "gate = 'E\\s[0-9]'\n")
    with pytest.raises(CatalogueError, match="ASCII"):
        parse_catalogue(base + "gate = '错误'\n")
