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
"""

from __future__ import annotations

import re
from typing import BinaryIO, Optional

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
_ENTITY_B = re.compile(rb"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});")


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
    return (sub.isascii() and b"\x1b" not in sub and b"\t" not in sub and b"  " not in sub and b" \n" not in sub
            and b"\n " not in sub and not sub.startswith(b" ") and not (b"&" in sub and _ENTITY_B.search(sub)))


class _FastScan:
    def __init__(self, scanner: _Scanner) -> None:
        self.scanner = scanner
        self.feeder = _Feeder(scanner)
        self.keys = _key_literals(scanner)
        self.gates = tuple(e.gate for e, lits in scanner.prepared if lits is None and e.gate is not None)
        self.line = 1  # number of the first line of the next block
        self.first = True

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
        if self.keys is None or not complete:
            self._feed_range(block, 0, len(block), self.line)
        else:
            self._fast(block)
        self.line += block.count(b"\n")

    def _feed_range(self, block: bytes, start: int, end: int, no: int) -> None:
        lines = block[start:end].decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "" and end > start and block[end - 1:end] == b"\n":
            lines.pop()
        self._feed_at(no, lines)

    def _fast(self, block: bytes) -> None:
        assert self.keys is not None
        low = block.lower()
        flat = low.replace(b"\n", b" ")
        spans: list[tuple[int, int, int, int]] = []  # (start, end, lines before, lines after) to feed
        pos, size = 0, len(block)
        while pos < size:
            cut = block.find(b"\n", min(pos + SUB_BLOCK, size) - 1)
            end = size if cut < 0 else cut + 1
            if not _plain(block[pos:end]):
                spans.append((pos, end, BEFORE, AFTER))
                if len(spans) > MAX_BLOCK_HITS:
                    break
            else:
                for key, lits in self.keys:
                    if flat.find(key, pos, end + len(key)) < 0:
                        continue
                    for lit in lits:
                        at = flat.find(lit, pos, end + len(lit))
                        while at >= 0:
                            spans.append((at, at + len(lit), BEFORE, AFTER_LITERAL))
                            at = flat.find(lit, at + 1, end + len(lit))
                for gate in self.gates:
                    for m in gate.finditer(block, pos, end):
                        spans.append((m.start(), m.end(), BEFORE, AFTER))
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
                start = low.rfind(b"\n", 0, start)
                if start < 0:
                    break
            start = start + 1 if start >= 0 else 0
            end = max(b - 1, a)
            for _ in range(after + 1):
                nxt = low.find(b"\n", end)
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
        last = self.line + block.count(b"\n")
        if self.feeder.next_no != last:
            self.feeder.flush()
            self.feeder.first = self.feeder.next_no = last

    def finish(self) -> list[Match]:
        self.feeder.flush()
        return self.scanner.matches()


def scan_binary(fh: BinaryIO, scanner: _Scanner) -> list[Match]:
    """Every match in a UTF-8 (or ASCII) byte stream, read in blocks of FAST_BLOCK bytes."""
    fast = _FastScan(scanner)
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
