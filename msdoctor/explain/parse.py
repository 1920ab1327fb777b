"""Input -> structure: how pasted text and log files are read (encoding, normalisation of the ways pastes
arrive: ANSI colour, odd spaces and quotes, HTML escapes, case) and the CANN "Possible Cause" / "Solution" lines
that follow an error code."""

from __future__ import annotations

import html
import io
import re
from typing import IO, Any, BinaryIO, Iterator, Optional

#: A log line longer than this is scanned in windows of this size, overlapping by WINDOW_OVERLAP characters,
#: and a line read from a stream with no newline for this long is cut (a binary file, a progress bar).
MAX_LINE = 64 * 1024
WINDOW_OVERLAP = 400
#: lines after a match searched for the log's own "Possible Cause:" / "Solution:" lines
CONTEXT_LINES = 12

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});")
_SPACES = re.compile(r" {2,}")
_LEADING = re.compile(r"\n +")
_TRAILING = re.compile(r" +\n")


def _translation() -> dict[int, Any]:
    table: dict[int, Any] = {
        c: " "
        for c in (
            0x00A0,
            0x2000,
            0x2001,
            0x2002,
            0x2003,
            0x2004,
            0x2005,
            0x2006,
            0x2007,
            0x2008,
            0x2009,
            0x200A,
            0x202F,
            0x205F,
            0x3000,
            0x0B,
            0x0C,
        )
    }
    table.update({c: "" for c in (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)})
    table.update({c: "'" for c in (0x2018, 0x2019, 0x201A, 0x201B, 0x2032, 0x00B4, 0x300C, 0x300D)})
    table.update({c: '"' for c in (0x201C, 0x201D, 0x201E, 0x201F, 0x2033, 0x00AB, 0x00BB, 0x300E, 0x300F)})
    table.update(
        {0x2010: "-", 0x2011: "-", 0x2012: "-", 0x2013: "-", 0x2014: "-", 0x2212: "-", 0x3002: ".", 0x3001: ","}
    )
    for c in range(0xFF01, 0xFF5F):  # full-width ASCII (Chinese input methods): ＇（）：，．Ａ１
        table[c] = chr(c - 0xFEE0)
    table.update({0xFF1A: ": ", 0xFF0C: ", ", 0xFF1B: "; "})  # an IME's colon or comma carries no space after it
    return table


_TRANSLATE = _translation()


def _normalize_text(text: str) -> str:
    """Normalise many lines at once; the number of newlines never changes."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "&" in text:
        text = _ENTITY.sub(lambda m: html.unescape(m.group(0)).replace("\n", " "), text)
    if not text.isascii():
        text = text.translate(_TRANSLATE)
    if "\t" in text or "\r" in text:
        text = text.replace("\t", " ").replace("\r", " ")
    if "  " in text:
        text = _SPACES.sub(" ", text)
    if "\n " in text:
        text = _LEADING.sub("\n", text)
    if " \n" in text:
        text = _TRAILING.sub("\n", text)
    return text.strip(" ")


def normalize(line: str) -> str:
    """One line as the matcher sees it (case kept; matching ignores case)."""
    return _normalize_text(line.replace("\n", " "))


_CANN_CODE_LINE = re.compile(r"(?<![\w.=])E[A-Z0-9]\d{4}(?:[:)\]]|\s+Inner Error)")
_CANN_CODE_ANYWHERE = re.compile(r"E[A-Z0-9]\d{4}(?:[:)\]]|\s+Inner Error)")
_CAUSE = re.compile(r"\bPossible Cause\s*:\s*(?P<v>.+)", re.I)
_SOLUTION = re.compile(r"\bSolution\s*:\s*(?P<v>.+)", re.I)


def _log_advice(norm: list[str], i: int) -> tuple[Optional[str], Optional[str]]:
    """The "Possible Cause:" / "Solution:" lines CANN prints after an error code, up to the next code."""
    cause = solution = None
    lines = norm[i : i + CONTEXT_LINES + 1]
    text = "\n".join(lines).replace("\\n", "\n")  # a log pasted as a JSON string keeps its newlines escaped
    split = text.split("\n")
    if not any(_CANN_CODE_ANYWHERE.search(line) for line in lines[:3]):
        return None, None  # only CANN prints these lines after its codes; elsewhere "Solution:" means nothing
    for k, line in enumerate(split):
        if k > 0 and _CANN_CODE_LINE.search(line) and (cause or solution):
            break
        if cause is None and (c := _CAUSE.search(line)):
            cause = c.group("v").strip()[:500]
        elif solution is None and (s := _SOLUTION.search(line)):
            solution = s.group("v").strip()[:500]
        if cause and solution:
            break
    return cause, solution


def _windows(line: str) -> Iterator[str]:
    if len(line) <= MAX_LINE:
        yield line
        return
    step = MAX_LINE - WINDOW_OVERLAP
    for start in range(0, len(line), step):
        yield line[start : start + MAX_LINE]
        if start + MAX_LINE >= len(line):
            break


def sniff_encoding(head: bytes) -> str:
    """The encoding of a log from its first bytes: a BOM, or the NUL pattern of BOM-less UTF-16."""
    if head.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    sample = head[:4096]
    half = len(sample) // 2
    if half >= 2:
        even, odd = sample[0::2].count(0), sample[1::2].count(0)
        if odd > 0.3 * half and even < 0.05 * half:
            return "utf-16-le"
        if even > 0.3 * half and odd < 0.05 * half:
            return "utf-16-be"
    return "utf-8"


def open_log(binary: BinaryIO) -> IO[str]:
    """A text stream over a binary one, decoded as :func:`sniff_encoding` says (undecodable bytes replaced)."""
    buffered: Any = binary if hasattr(binary, "peek") else io.BufferedReader(binary)  # type: ignore[type-var]
    head = buffered.peek(4096)[:4096]
    return io.TextIOWrapper(buffered, encoding=sniff_encoding(head), errors="replace", newline=None)
