"""The fast path of ``explain --log``: a literal prefilter over large blocks of raw bytes, before any per-line work.

A log of a large job is gigabytes, nearly all of it lines no catalogue entry can match. The file is read in
blocks of :data:`FAST_BLOCK` bytes cut at a newline (memory stays bounded by the block, never the file). A block
that is plain ASCII with no terminal escape or HTML entity reads the same after normalisation, letters, digits
and punctuation unchanged (normalising only turns tabs and carriage returns into spaces and folds runs of
spaces), so an entry can match a line only where the lower-cased bytes hold one of its required literals, and
so one of the literal's pieces without whitespace. A few short keys cover every such piece (the same greedy cover
as the scanner's); each key is one C-speed substring search over the block. Only the lines around a key
(:data:`BEFORE` lines before it, for a signature wrapped over lines; :data:`AFTER` lines after it, for CANN's
own "Possible Cause" / "Solution" lines) are decoded and handed to the ordinary scanner, with their real line
numbers. A block that is not plain ASCII (UTF-8 text, colour codes, HTML escapes), or has keys everywhere, goes
through the ordinary scanner whole. The answers are the ordinary scanner's: it sees every line that could match.

With google-re2 installed (the optional extra ``fast``; ``MSDOCTOR_NO_RE2=1`` turns it off), each 64 KiB piece
is first searched once, in one DFA pass, for anything that would give the piece a span: a byte that makes it not
plain, any required literal (ASCII case folded, a space matching a newline too) or a gate's match. A piece with
none is skipped (the substring searches would find nothing in it); a piece with one goes through the pure-Python
path above, unchanged. So a clean piece costs one linear pass instead of one pass per key, and the lines handed
to the scanner, and so the answers, are the same with and without it. RE2 runs in Latin-1 mode on bytes, so a
byte class means bytes, as in Python's ``re`` (https://github.com/google/re2/wiki/Syntax).
"""

from __future__ import annotations

import os
import re
from typing import Any, BinaryIO, Optional

from msdoctor.explain.describe import Match
from msdoctor.explain.scan import AFTER_LINES, DEVICE_LINES, FRAME_LINES, JOIN_LINES, _cover, _Feeder, _Scanner
from msdoctor.explain.parse import CONTEXT_LINES

#: bytes read at a time (a block is cut at its last newline)
FAST_BLOCK = 8 << 20
#: lines decoded before / after a key's line
#: a traceback's last frames, and the device rule's evidence (the structural rules)
BEFORE = max(JOIN_LINES, FRAME_LINES, DEVICE_LINES)
AFTER = CONTEXT_LINES + JOIN_LINES
#: lines decoded after a literal's line: a wrapped signature, and pip's conflict lines (the structural rules)
AFTER_LITERAL = max(JOIN_LINES, AFTER_LINES)
#: more key hits than this in one block: the block goes through the ordinary scanner whole
MAX_BLOCK_HITS = 20_000
#: a block is judged plain (normalising it changes nothing but case) in pieces of about this many bytes
SUB_BLOCK = 1 << 16
_ENTITY = rb"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});"
_ENTITY_B = re.compile(_ENTITY)
#: what makes a piece not plain (:func:`_plain`), as one pattern; a piece's leading space is its "\n " with the
#: newline that ends the piece before it
_UNPLAIN = rb"[\x80-\xff]|\x1b|\t|  | \n|\n |" + _ENTITY
#: the environment variable that turns the native matcher off
NO_RE2_ENV = "MSDOCTOR_NO_RE2"


def _key_literals(scanner: _Scanner) -> Optional[tuple[tuple[bytes, tuple[bytes, ...]], ...]]:
    """(key, the literals it stands for): a text holds a literal only if it holds the literal's key, so a block
    is searched once per key and for a literal only where its key is (None: an entry has neither a literal nor
    a gate, so nothing can exclude a line)."""
    lits: set[str] = set()
    for entry, required in scanner.prepared:
        if required is None:
            if entry.gate is None:
                return None
            continue
        lits.update(required)
    if scanner.scheduler is not None:
        lits.update(lit.lower() for lit in scanner.scheduler_literals)
    # a literal with other characters than ASCII cannot be in a plain block, and the other blocks are read whole
    keys = _cover(frozenset(lit for lit in lits if lit.isascii()))
    by_key: dict[str, list[bytes]] = {}
    for lit, key in keys.items():
        by_key.setdefault(key, []).append(lit.encode())
    return tuple((k.encode(), tuple(sorted(v))) for k, v in sorted(by_key.items()))


def _plain(sub: bytes) -> bool:
    """Whether normalising these lines changes nothing but case: ASCII, no escape, entity, tab, run of spaces,
    or space at a line's start or end."""
    return (
        sub.isascii()
        and b"\x1b" not in sub
        and b"\t" not in sub
        and b"  " not in sub
        and b" \n" not in sub
        and b"\n " not in sub
        and not sub.startswith(b" ")
        and not (b"&" in sub and _ENTITY_B.search(sub))
    )


def native_enabled() -> bool:
    """Whether the native matcher is used: google-re2 importable and not turned off by MSDOCTOR_NO_RE2=1."""
    return os.environ.get(NO_RE2_ENV, "").strip() not in ("1", "true", "yes") and _re2() is not None


def _re2() -> Any:
    """google-re2's module, or None (not installed, or another package's ``re2`` with a different API)."""
    try:
        import re2  # type: ignore[import-not-found, import-untyped, unused-ignore]

        re2.Options().encoding = re2.Options.Encoding.LATIN1
        return re2
    except Exception:  # noqa: BLE001 - any failure means the pure-Python path
        return None


def _flat_literal(lit: bytes) -> bytes:
    """An RE2 pattern for a literal of the flattened text in the raw one: a space is a space or a newline, other
    bytes are letters and digits or written as \\xHH (no escaping rule of either dialect to get wrong)."""
    return b"".join(b"[ \n]" if c == 0x20 else bytes([c]) if bytes([c]).isalnum() else b"\\x%02x" % c for c in lit)


class _Native:
    """One RE2 pattern that a piece must match for the per-key searches to find anything in it: what makes it not
    plain, any required literal (case-insensitive, a space also a newline: the lower-cased, flattened text the
    searches read) and every gate. A piece it does not match is skipped; one it matches takes the pure-Python
    path, so the native matcher only ever skips pieces in which that path finds nothing."""

    def __init__(self, re2: Any, literals: tuple[bytes, ...], gates: tuple["re.Pattern[bytes]", ...]) -> None:
        opt = re2.Options()
        opt.encoding = re2.Options.Encoding.LATIN1
        opt.never_capture = True
        opt.log_errors = False
        opt.max_mem = 64 << 20
        parts = [_UNPLAIN]
        if literals:
            parts.append(b"(?i:" + b"|".join(map(_flat_literal, literals)) + b")")
        self.all_gates = True  # every gate is in the pattern (else each piece also runs the ones RE2 lacks)
        for gate in gates:
            try:
                re2.compile(gate.pattern, opt)
                parts.append(b"(?:" + gate.pattern + b")")
            except Exception:  # noqa: BLE001 - a construct RE2 lacks (a lookaround): Python's re runs it
                self.all_gates = False
        self.pattern = re2.compile(b"|".join(parts), opt)
        self.longest = max(map(len, literals), default=0)

    def may_hold(self, block: bytes, pos: int, end: int) -> bool:
        """Whether block[pos:end] (pos 0 or just after a newline) may be not plain, or hold a literal starting
        in it, or a gate's match: the window starts one byte early (a piece's leading space is "\\n " there) and
        ends a literal's length late."""
        if not self.all_gates or (pos == 0 and block.startswith(b" ")):
            return True
        return self.pattern.search(block, max(pos - 1, 0), end + self.longest) is not None


class _FastScan:
    def __init__(self, scanner: _Scanner, native: Optional[bool] = None) -> None:
        self.scanner = scanner
        self.feeder = _Feeder(scanner)
        self.keys = _key_literals(scanner)
        self.gates = tuple(e.gate for e, lits in scanner.prepared if lits is None and e.gate is not None)
        self.line = 1  # number of the first line of the next block
        self.first = True
        use = native_enabled() if native is None else native
        module = _re2() if use else None
        if use and module is None:
            raise RuntimeError("the native matcher was asked for but google-re2 is not importable")
        self.native: Optional[_Native] = None
        if module is not None and self.keys is not None:
            try:
                self.native = _Native(module, tuple(lit for _, lits in self.keys for lit in lits), self.gates)
            except Exception:  # noqa: BLE001 - RE2 refused the pattern (its memory budget): the pure-Python path
                if native:
                    raise
        #: how far past a piece its literal searches read
        self.reach = max((len(x) for k, lits in self.keys or () for x in (k, *lits)), default=0)

    def _feed_at(self, no: int, lines: list[str]) -> None:
        f = self.feeder
        if f.next_no != no:
            f.flush()
            f.first = f.next_no = no
        f.add(lines)

    def block(self, block: bytes, complete: bool) -> None:
        """Scan one block of whole lines (``complete``: it ends with a newline; else it is a piece of one line)."""
        if self.first:
            self.first = False
            if block.startswith(b"\xef\xbb\xbf"):
                block = block[3:]
        if b"\r" in block:  # universal newlines, as the text reader has them
            block = block.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        newlines = block.count(b"\n")
        if self.keys is None or not complete:
            self._feed_range(block, 0, len(block), self.line)
        else:
            self._fast(block, newlines)
        self.line += newlines

    def _feed_range(self, block: bytes, start: int, end: int, no: int) -> None:
        lines = block[start:end].decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "" and end > start and block[end - 1 : end] == b"\n":
            lines.pop()
        self._feed_at(no, lines)

    def _piece(
        self, block: bytes, flat: bytes, off: int, pos: int, end: int, spans: list[tuple[int, int, int, int]]
    ) -> None:
        """The spans of block[pos:end] (``flat``: block[off:] lower-cased, newlines as spaces, at least up to a
        literal's length past ``end``): the whole piece where it is not plain, else each literal's and gate's."""
        assert self.keys is not None
        if not _plain(block[pos:end]):
            spans.append((pos, end, BEFORE, AFTER))
            return
        a, b = pos - off, end - off
        for key, lits in self.keys:
            if flat.find(key, a, b + len(key)) < 0:
                continue
            for lit in lits:
                at = flat.find(lit, a, b + len(lit))
                while at >= 0:
                    spans.append((at + off, at + off + len(lit), BEFORE, AFTER_LITERAL))
                    at = flat.find(lit, at + 1, b + len(lit))
        for gate in self.gates:
            for m in gate.finditer(block, pos, end):
                spans.append((m.start(), m.end(), BEFORE, AFTER))

    def _fast(self, block: bytes, newlines: int) -> None:
        native = self.native
        flat = b"" if native is not None else block.lower().replace(b"\n", b" ")
        reach = self.reach
        spans: list[tuple[int, int, int, int]] = []  # (start, end, lines before, lines after) to feed
        pos, size = 0, len(block)
        while pos < size:
            cut = block.find(b"\n", min(pos + SUB_BLOCK, size) - 1)
            end = size if cut < 0 else cut + 1
            if native is None:
                self._piece(block, flat, 0, pos, end, spans)
            elif native.may_hold(block, pos, end):
                self._piece(block, block[pos : end + reach].lower().replace(b"\n", b" "), pos, pos, end, spans)
            if len(spans) > MAX_BLOCK_HITS:
                break
            pos = end
        if len(spans) > MAX_BLOCK_HITS:
            self._feed_range(block, 0, size, self.line)
            return
        spans.sort()
        regions: list[list[int]] = []
        for a, b, before, after in spans:
            start = a
            for _ in range(before + 1):
                start = block.rfind(b"\n", 0, start)
                if start < 0:
                    break
            start = start + 1 if start >= 0 else 0
            end = max(b - 1, a)
            for _ in range(after + 1):
                nxt = block.find(b"\n", end)
                if nxt < 0:
                    end = size
                    break
                end = nxt + 1
            if regions and start <= regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], end)
            else:
                regions.append([start, end])
        counted, no = 0, self.line
        for start, end in regions:
            no += block.count(b"\n", counted, start)
            counted = start
            self._feed_range(block, start, end, no)
        last = self.line + newlines
        if self.feeder.next_no != last:
            self.feeder.flush()
            self.feeder.first = self.feeder.next_no = last

    def finish(self) -> list[Match]:
        self.feeder.flush()
        return self.scanner.matches()


def scan_binary(fh: BinaryIO, scanner: _Scanner, native: Optional[bool] = None) -> list[Match]:
    """Every match in a UTF-8 (or ASCII) byte stream, read in blocks of FAST_BLOCK bytes.

    ``native``: use google-re2 (True), do not (False), or as :func:`native_enabled` says (None)."""
    fast = _FastScan(scanner, native)
    carry = b""
    while True:
        data = fh.read(FAST_BLOCK)
        if not data:
            break
        buf = carry + data if carry else data
        cut = buf.rfind(b"\n") + 1
        if cut == 0:
            if len(buf) < FAST_BLOCK:
                carry = buf
                continue
            cut = len(buf)  # no newline in a whole block: scan it as a piece of one line, memory stays bounded
            while cut > 0 and 0x80 <= buf[cut - 1] < 0xC0:
                cut -= 1  # never split a UTF-8 character
            cut = cut - 1 if cut > 0 and buf[cut - 1] >= 0xC0 else cut
            cut = cut or len(buf)
            fast.block(buf[:cut], False)
            carry = buf[cut:]
            continue
        fast.block(buf[:cut], True)
        carry = buf[cut:]
    if carry:
        fast.block(carry + b"\n", True)
    return fast.finish()
