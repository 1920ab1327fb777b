"""The matcher: lines are scanned in blocks of about a megabyte, and a catalogue entry's regex runs only where the
block holds a literal the regex requires; the scanner keeps what each entry matched first."""

from __future__ import annotations

import bisect
import functools
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO, Iterable, Iterator, Optional, Sequence

from msdoctor.explain.catalogue import (
    DEVICE_TARGETS,
    ENV_LOOKUPS,
    SOURCE_CANN,
    Catalogue,
    Entry,
    _fill,
    load_catalogue_full,
    required_literals,
)
from msdoctor.explain.describe import Match
from msdoctor.explain.parse import MAX_LINE, _log_advice, _normalize_text, _windows, normalize, open_log, sniff_encoding

#: a signature may be wrapped over at most this many lines
JOIN_LINES = 3
#: lookups that read the traceback's frames before the matched line (msdoctor/explain/rules/), and how many lines
STRUCTURAL = (
    "import",
    "pairing",
    "wheel",
    "distribution",
    "conflict",
    "port",
    "keyword",
    "build",
    "requirement",
    "circular",
    "version",
    "signature",
    "opcheck",
) + ENV_LOOKUPS
#: lookups that also read the lines after the matched one (pip's requirement and build lines, a stated Python)
AFTER = (
    "conflict",
    "build",
    "wheel",
    "requirement",
    "port",
    "import",
    "pairing",
    "version",
    "signature",
    "library",
    "numpy",
    "removed",
    "aclcode",
    "mindspore-wheel",
) + ENV_LOOKUPS
FRAME_LINES = 10
#: how far back the device rule looks for evidence (`id`, CapEff, `ls -l /dev/davinci*` printed before the error)
DEVICE_LINES = 25
#: lines after the matched line the "conflict" rule reads (pip's requirement lines)
AFTER_LINES = 8
BLOCK_CHARS = 1 << 20
#: occurrences of one literal looked at per block (bounds the cost of a literal that is everywhere)
MAX_HITS = 5000


@dataclass
class _Hit:
    no: int
    line: str
    groups: dict[str, str]
    cause: Optional[str] = None
    solution: Optional[str] = None
    before: tuple[str, ...] = ()  # the lines before it, for the rules that read a traceback's frames
    after: tuple[str, ...] = ()  # the lines after it, for the rule that reads pip's conflict lines


@dataclass
class _Found:
    entry: Entry
    hits: list[_Hit] = field(default_factory=list)  # the first hit; every hit of a fallback entry
    starts: set[int] = field(default_factory=set)


#: how far below a headline entry (catalogue `headline = true`) a match can be its detail
HEADLINE_SPAN = 12


def _headlines_last(out: list[Match], headlines: set[str], structural: set[str]) -> list[Match]:
    """Matches in line order, except that a headline (a message that says its cause is in the lines under it) comes
    after the last claim of a structural rule within HEADLINE_SPAN lines below it: that rule read the detail (a
    device id against the count) and names the cause; a catalogue entry matching there does not outrank it."""

    if not any(m.entry_id in headlines for m in out):
        return out
    claims = [o.line_no for o in out if o.entry_id in structural]

    def key(m: Match) -> tuple[int, int]:
        below = [n for n in claims if m.line_no < n <= m.line_no + HEADLINE_SPAN] if m.entry_id in headlines else []
        return (max(below), 1) if below else (m.line_no, 0)

    return sorted(out, key=key)


class _Scanner:
    """Scans blocks of lines; keeps what each entry (and each `per` value) matched first."""

    def __init__(self, catalogue: Catalogue, entries: tuple[Entry, ...]) -> None:
        from msdoctor.cluster_logs import LITERALS, SchedulerLogParser

        self.catalogue = catalogue
        self.prepared = [(e, _literals(e.pattern.pattern)) for e in entries]
        self.keys = _cover(frozenset(lit for _, lits in self.prepared for lit in (lits or ())))
        self.found: dict[tuple[str, str], _Found] = {}
        self.scheduler = SchedulerLogParser() if any(e.lookup == "scheduler" for e in entries) else None
        self.scheduler_literals = LITERALS
        self.structural = {e.id for e in entries if e.lookup in STRUCTURAL}

    def scan(self, raw: list[str], nos: "Sequence[int]") -> None:
        text = _normalize_text("\n".join(raw))
        norm = text.split("\n")
        if len(norm) != len(raw):  # cannot happen (normalisation keeps newlines); keep line numbers honest
            norm = [normalize(x) for x in raw]
            text = "\n".join(norm)
        low = text.lower()
        flat = low.replace("\n", " ")
        lines = _Lines(text, low)
        present: dict[str, bool] = {}  # is this key substring in the block (each key searched once)
        for entry, lits in self.prepared:
            if lits is None:
                for m in entry.pattern.finditer(text):
                    i = lines.index_in_text(m.start())
                    self._record(entry, m, _shown(raw[i], norm[i], m), i, norm, nos)
                continue
            positions: list[tuple[int, int]] = []
            for lit in lits:
                key = self.keys[lit]
                if key not in present:
                    present[key] = key in flat
                if not present[key]:
                    continue
                at = flat.find(lit)
                while at >= 0 and len(positions) < MAX_HITS:
                    positions.append((at, at + len(lit) - 1))
                    at = flat.find(lit, at + 1)
            if positions:
                self._try(entry, positions, norm, raw, nos, lines)
        if self.scheduler is not None and any(lit in low for lit in self.scheduler_literals):
            for line, no in zip(norm, nos):
                if any(lit in line.lower() for lit in self.scheduler_literals):
                    self.scheduler.feed(line, no)

    def _try(
        self,
        entry: Entry,
        positions: list[tuple[int, int]],
        norm: list[str],
        raw: list[str],
        nos: "Sequence[int]",
        lines: "_Lines",
    ) -> None:
        done: set[int] = set()
        last = len(norm) - 1
        for begin, end in sorted(positions):
            a, b = lines.index_in_low(begin), lines.index_in_low(end)
            if a in done or b - a >= JOIN_LINES:
                continue
            done.add(a)
            windows = [(a, b), (a - 1, b), (a, b + 1), (a - 1, b + 1), (a - 2, b), (a, b + 2)]
            for s, e in windows:
                if s < 0 or e > last or e - s >= JOIN_LINES:
                    continue
                seg = norm[s] if s == e else " ".join(norm[s : e + 1])
                m = entry.pattern.search(seg)
                if m is None:
                    continue
                first, last_line = _line_of(norm, s, e, m.start()), _line_of(norm, s, e, max(m.end() - 1, m.start()))
                one = first == last_line  # the match lies in one line of the window: show that line as it came
                shown = _shown(raw[first], norm[first], m) if one else _around(seg, m)
                self._record(entry, m, shown, first, norm, nos)
                break

    def _record(
        self, entry: Entry, m: "re.Match[str]", shown: str, i: int, norm: list[str], nos: "Sequence[int]"
    ) -> None:
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        key = (entry.id, groups.get(entry.per, "") if entry.per else "")
        found = self.found.setdefault(key, _Found(entry))
        no = nos[i]
        if no in found.starts:
            return
        found.starts.add(no)
        if found.hits and not entry.fallback:
            return
        if len(found.hits) >= 200:
            return
        cause, solution = _log_advice(norm, i)
        # a rich traceback prints up to a dozen source lines in its box after the frame line (signature errors are
        # pasted from such tracebacks): that lookup reads as far back as the device evidence
        back = (
            DEVICE_LINES
            if entry.lookup in ("device", "signature")
            else FRAME_LINES
            if entry.lookup in STRUCTURAL
            or entry.lookup in ("library", "numpy", "removed", "aclcode", "mindspore-wheel")
            else 0
        )
        before = tuple(norm[max(0, i - back) : i]) if back else ()
        after = tuple(norm[i + 1 : i + 1 + AFTER_LINES]) if entry.lookup in AFTER else ()
        if entry.lookup == "aclcode":  # the whole line too (a JSON-escaped log is one long line; `shown` is a window)
            after = (norm[i], *after)
        found.hits.append(_Hit(no, shown, groups, cause, solution, before, after))

    def matches(self) -> list[Match]:
        near: set[int] = set()  # lines a specific entry explains, and their neighbours
        for f in self.found.values():
            if not f.entry.fallback:
                for s in f.starts:
                    near.update((s - 1, s, s + 1))
        out = []
        for f in self.found.values():
            e = f.entry
            hits = f.hits
            if e.fallback:
                hits = [h for h in hits if h.no not in near]
                if not hits:
                    continue
                count = len(f.starts - near)
            else:
                count = len(f.starts)
            hit = hits[0]
            groups = dict(hit.groups)  # what the line matched: a lookup reads only these
            if not self._lookup(e, groups, hit):
                continue
            for name in e.groups:  # a template's group the line did not match (one side of an alternation)
                groups.setdefault(name, "?")
            title = groups.pop("_title", "")
            out.append(
                Match(
                    entry_id=e.id,
                    title=title or _fill(e.title, groups),
                    cause=groups.pop("_cause", "") or _fill(e.cause, groups),
                    fix=groups.pop("_fix", "") or _fill(e.fix, groups),
                    check_id=e.check_id,
                    source=e.source,
                    line=hit.line,
                    line_no=hit.no,
                    count=max(count, 1),
                    groups=groups,
                    device_target=groups.get("target")
                    if groups.get("target") in DEVICE_TARGETS
                    else (groups.get("lib_target") or e.device_target),
                    category=e.category,
                    log_cause=hit.cause,
                    log_solution=hit.solution,
                )
            )
        out.sort(key=lambda m: m.line_no)
        out = _headlines_last(out, {e.id for e, _ in self.prepared if e.headline}, self.structural)
        # a structural rule yields to a specific entry that explains the same line (or a neighbour); a generic
        # (fallback) entry's text yields to a structural rule that made a claim there (it read the frames)
        fallback = {e.id for e, _ in self.prepared if e.fallback}
        explained = {
            n
            for m in out
            if m.entry_id not in self.structural and m.entry_id not in fallback
            for n in (m.line_no - 1, m.line_no, m.line_no + 1)
        }
        kept = [m for m in out if m.entry_id not in self.structural or m.line_no not in explained]
        claimed = {m.line_no for m in kept if m.entry_id in self.structural}
        return [
            m for m in kept if m.entry_id in self.structural or m.entry_id not in fallback or m.line_no not in claimed
        ]

    def _lookup(self, e: Entry, groups: dict[str, str], hit: _Hit) -> bool:
        """Add the values an entry's lookup provides; False drops the match (nothing is wrong after all, or the
        structure does not tell)."""
        from msdoctor.explain.rules import CLAIMS, claim

        if e.lookup in CLAIMS:  # a rule that makes a claim from the structure, or none (the match is dropped)
            found = claim(e.lookup, groups, hit.before, hit.line, hit.after)
            groups.update(found)
            return bool(found)
        if e.lookup == "port":
            from msdoctor.explain.rules.launch import port_groups

            groups.update(port_groups((*hit.before, hit.line), hit.after))
            return True
        if e.lookup == "runtime":
            from msdoctor.explain.rules.native import runtime_groups

            groups.update(runtime_groups(groups.get("lib", ""), groups.get("what", ""), groups.get("v", "")))
            return True
        if e.lookup == "numpy":
            from msdoctor.explain.rules.native import numpy_groups

            groups.update(numpy_groups(hit.line, (*hit.before, *hit.after)))
            return True
        if e.lookup == "mindspore-wheel":
            from msdoctor.explain.rules.packaging import mindspore_wheel_groups

            groups.update(mindspore_wheel_groups(groups.get("msver", ""), (*hit.before, hit.line, *hit.after)))
            return True
        if e.lookup == "device":
            from msdoctor.explain.rules.launch import device_access_groups

            groups.update(device_access_groups(hit.before))
            return True
        if e.lookup == "symbol-owner":  # no library named before the symbol: only the symbol's owner can tell
            from msdoctor.explain.owners import importer_of, undefined_symbol_groups

            importer = importer_of(hit.line)
            found = undefined_symbol_groups(importer, groups.get("sym", ""))
            if found:
                found["rule"] = "symbol-owner"
                found["_title"] = (
                    f"{importer or 'a library'} and {found['sym_owner']} are releases that do not pair "
                    f"(undefined symbol {groups.get('sym', '')})"
                )
            groups.update(found)
            return bool(found)
        if e.lookup == "symbol":
            from msdoctor.explain.owners import undefined_symbol_groups

            groups.update(undefined_symbol_groups(groups.get("lib", ""), groups.get("sym", "")))
        elif e.lookup == "library":
            lib = self.catalogue.library(groups.get("lib", ""))
            groups["lib_owner"] = (
                lib.owner if lib else "shipped by a package that is missing or not on the loader's path"
            )
            groups["lib_cause"] = lib.cause if lib else ""
            groups["lib_fix"] = (
                _fill(lib.fix, {"source": SOURCE_CANN})
                if lib
                else (
                    f"find the package that ships {groups.get('lib', 'the library')} (`ldconfig -p | grep "
                    f"{groups.get('lib', '').split('.so')[0]}`, `find / -name '{groups.get('lib', '')}*'`) and add its "
                    "directory to LD_LIBRARY_PATH, or install it"
                )
            )
            if lib and lib.device_target:
                groups["lib_target"] = lib.device_target
            if lib and lib.device_target == "GPU":
                from msdoctor.explain.rules.native import cuda_build_groups

                extra = cuda_build_groups(groups.get("lib", ""), (*hit.before, hit.line, *hit.after))
                if extra:  # the paste states another CUDA than the one the library belongs to
                    groups["lib_cause"] = extra["cause"]
                    groups["lib_fix"] = extra["fix"]
            if lib and lib.device_target == "Ascend":
                from msdoctor.explain.rules.native import ascend_loader_groups

                extra = ascend_loader_groups(groups.get("lib", ""), (*hit.before, hit.line, *hit.after))
                if extra:  # the table's text speaks of MindSpore, the usual loader; here torch_npu is
                    groups["lib_cause"] = (
                        extra["cause"] + " " + groups["lib_cause"].replace("this MindSpore", "this torch_npu")
                    )
                    groups["lib_fix"] = (
                        extra["fix"]
                        + " "
                        + groups["lib_fix"].replace(
                            "`msdoctor matrix --mindspore <version>` pairs with your MindSpore",
                            "your torch_npu release names (its README's version table)",
                        )
                    )
                    groups["loader"] = extra["loader"]
        elif e.lookup == "scheduler":
            if self.scheduler is None:
                return True
            s = self.scheduler.summary
            if s.complete and not s.timed_out:
                return False
            groups["cluster"] = s.describe()
            missing = s.missing_ranks
            groups["missing"] = ", ".join(map(str, missing)) if missing else "?"
        return True


@functools.lru_cache(maxsize=512)
def _literals(src: str) -> Optional[tuple[str, ...]]:
    return required_literals(src)


@functools.lru_cache(maxsize=8)
def _cover(literals: frozenset[str], width: int = 5) -> dict[str, str]:
    """A short key substring for each literal, shared by as many literals as possible (greedy set cover):
    a block is searched once per key, and a literal only when its key is there."""
    keys: dict[str, str] = {}
    todo = set(literals)
    while todo:
        holders: dict[str, set[str]] = {}
        for lit in todo:
            subs = {lit} if len(lit) <= width else {lit[i : i + width] for i in range(len(lit) - width + 1)}
            for sub in subs:
                holders.setdefault(sub, set()).add(lit)
        best = max(sorted(holders), key=lambda k: (len(holders[k]), len(k)))
        for lit in holders[best]:
            keys[lit] = best
        todo -= holders[best]
    return keys


class _Lines:
    """Line index of a character offset, in the normalised block and in its lower-case copy (built on first use)."""

    def __init__(self, text: str, low: str) -> None:
        self.text, self.low = text, low
        self._text_starts: Optional[list[int]] = None
        self._low_starts: Optional[list[int]] = None

    @staticmethod
    def _starts(text: str) -> list[int]:
        return [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def index_in_text(self, pos: int) -> int:
        if self._text_starts is None:
            self._text_starts = self._starts(self.text)
        return bisect.bisect_right(self._text_starts, pos) - 1

    def index_in_low(self, pos: int) -> int:
        if len(self.low) == len(self.text):
            return self.index_in_text(pos)
        if self._low_starts is None:
            self._low_starts = self._starts(self.low)
        return bisect.bisect_right(self._low_starts, pos) - 1


_NEWLINE = re.compile("\n")


def _line_of(norm: list[str], s: int, e: int, offset: int) -> int:
    """Which line of the window norm[s..e] (joined with spaces) holds this character offset."""
    i = s
    while i < e and offset >= len(norm[i]) + 1:
        offset -= len(norm[i]) + 1
        i += 1
    return i


def _shown(raw: str, line: str, m: "re.Match[str]") -> str:
    """The line as it came; a window around the match when the line is long."""
    if len(raw) <= 500:
        return raw.strip()
    hit = re.search(re.escape(m.group(0)[:60]), line)
    if hit is None:
        return raw[:500].strip() + "…"
    a, b = max(0, hit.start() - 150), min(len(line), hit.start() + len(m.group(0)) + 150)
    return ("…" if a else "") + line[a:b].strip() + ("…" if b < len(line) else "")


def _around(seg: str, m: "re.Match[str]", room: int = 150) -> str:
    a, b = max(0, m.start() - room), min(len(seg), m.end() + room)
    return ("…" if a else "") + seg[a:b].strip() + ("…" if b < len(seg) else "")


class _Feeder:
    """Collects lines into blocks of about BLOCK_CHARS characters and hands them to the scanner."""

    def __init__(self, scanner: _Scanner) -> None:
        self.scanner = scanner
        self.raw: list[str] = []
        self.nos: Optional[list[int]] = None  # only once a long line was cut into windows
        self.first = 1  # line number of raw[0]
        self.next_no = 1
        self.size = 0

    def add(self, lines: list[str]) -> None:
        """Add consecutive lines (without their newlines)."""
        if lines and max(map(len, lines)) > MAX_LINE:
            for line in lines:
                self._add_one(line)
            return
        for i in range(0, len(lines), 4096):
            part = lines[i : i + 4096]
            self.raw.extend(part)
            if self.nos is not None:
                self.nos.extend(range(self.next_no, self.next_no + len(part)))
            self.next_no += len(part)
            self.size += sum(map(len, part)) + len(part)
            if self.size >= BLOCK_CHARS:
                self.flush()

    def _add_one(self, line: str) -> None:
        if len(line) > MAX_LINE:
            if self.nos is None:
                self.nos = list(range(self.first, self.next_no))
            for piece in _windows(line):
                self.raw.append(piece)
                self.nos.append(self.next_no)
        else:
            self.raw.append(line)
            if self.nos is not None:
                self.nos.append(self.next_no)
        self.next_no += 1
        self.size += len(line) + 1
        if self.size >= BLOCK_CHARS:
            self.flush()

    def flush(self) -> None:
        if self.raw:
            nos: Any = self.nos if self.nos is not None else range(self.first, self.first + len(self.raw))
            self.scanner.scan(self.raw, nos)
        self.raw, self.nos, self.first, self.size = [], None, self.next_no, 0


def _scanner(entries: Optional[Iterable[Entry]]) -> _Scanner:
    catalogue = load_catalogue_full()
    return _Scanner(catalogue, tuple(entries) if entries is not None else catalogue.entries)


def explain_lines(lines: Iterable[str], entries: Optional[Iterable[Entry]] = None) -> list[Match]:
    """Match an iterable of lines (a file object works) against the catalogue.

    Lines are scanned in blocks of about a megabyte: an entry's regex runs only where the block holds one
    of the literals it requires (:func:`required_literals`).
    """
    scanner = _scanner(entries)
    feeder = _Feeder(scanner)
    batch: list[str] = []
    for line in lines:
        batch.append(line.replace("\n", " ") if "\n" in line else line)
        if len(batch) >= 4096:
            feeder.add(batch)
            batch = []
    feeder.add(batch)
    feeder.flush()
    return scanner.matches()


#: A log line longer than this is cut (a binary file, a progress bar without newlines).


def _explain_stream_text(fh: IO[str], entries: Optional[Iterable[Entry]] = None) -> list[Match]:
    """Read a text stream in chunks (much faster than line by line); newlines are universal."""
    scanner = _scanner(entries)
    feeder = _Feeder(scanner)
    rest = ""
    while True:
        chunk = fh.read(BLOCK_CHARS)
        if not chunk:
            break
        lines = (rest + chunk).split("\n")
        rest = lines.pop()
        if len(rest) > MAX_LINE:  # no newline for a long while (binary data): memory stays bounded
            rest = rest[:MAX_LINE]
        feeder.add(lines)
    if rest:
        feeder.add([rest])
    feeder.flush()
    return scanner.matches()


def explain_text(text: str) -> list[Match]:
    """Every known error signature in ``text``, in order of first occurrence."""
    return explain_lines(text.splitlines())


def _explain_binary(binary: BinaryIO, entries: Optional[Iterable[Entry]] = None) -> list[Match]:
    """UTF-8 (the usual case) through the block prefilter of :mod:`msdoctor.explain.fastscan`; UTF-16 through the
    text reader."""
    from msdoctor.explain.fastscan import scan_binary

    buffered: Any = binary if hasattr(binary, "peek") else io.BufferedReader(binary)  # type: ignore[type-var]
    if sniff_encoding(buffered.peek(4096)[:4096]) in ("utf-8", "utf-8-sig"):
        return scan_binary(buffered, _scanner(entries))
    return _explain_stream_text(open_log(buffered), entries)


def explain_file(path: Path) -> list[Match]:
    """Scan a whole log file (streamed in large blocks, never read whole; BOM / UTF-16 detected; undecodable bytes
    replaced).

    Only a regular file is read (a FIFO or a device is a UserError, exit 2)."""
    from msdoctor.inputs import open_regular

    with open_regular(path) as fh:
        return _explain_binary(fh)


def explain_stream(binary: BinaryIO) -> list[Match]:
    """Scan a binary stream such as ``sys.stdin.buffer``."""
    return _explain_binary(binary)


def _readable_now(fd: int) -> bool:
    """Whether more bytes can be read from fd without waiting (True where select cannot tell)."""
    import select

    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):  # Windows pipes, closed descriptors: scan what we have
        return False


def iter_explain_stream(binary: BinaryIO, entries: Optional[Iterable[Entry]] = None) -> Iterator[Match]:
    """Yield each match as soon as it is final while the text is still arriving, as grep does on a pipe that
    never closes (``tail -f train.log | msdoctor explain -``); the rest at the end of the stream.

    Bytes are read as they come (``os.read``); the lines read so far are scanned whenever no more bytes are
    waiting or a block is full, so a fast producer still gets megabyte blocks. A match is final when nothing
    later can change it: a generic (fallback) entry once the line after it was scanned (a specific entry on
    a neighbouring line would replace it), an entry that reads the scheduler's registrations only at the end.
    A signature wrapped over lines that arrive in two separate writes is matched in each part only.
    """
    import codecs
    import os

    scanner = _scanner(entries)
    feeder = _Feeder(scanner)
    by_id = {e.id: e for e, _ in scanner.prepared}
    emitted: set[tuple[str, int]] = set()
    try:
        fd: Optional[int] = binary.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        fd = None
    decoder: Any = None
    head = b""
    rest = ""
    pending_cr = False

    def ready(final: bool) -> list[Match]:
        out = []
        scanned = feeder.next_no - 1  # the last line number scanned
        for m in scanner.matches():
            if (m.entry_id, m.line_no) in emitted:
                continue
            e = by_id[m.entry_id]
            if not final and (e.lookup == "scheduler" or (e.fallback and m.line_no + 1 > scanned)):
                continue
            emitted.add((m.entry_id, m.line_no))
            out.append(m)
        return out

    while True:
        chunk = os.read(fd, BLOCK_CHARS) if fd is not None else binary.read(BLOCK_CHARS)
        if decoder is None:
            head += chunk
            if len(head) < 4 and chunk:
                continue
            decoder = codecs.getincrementaldecoder(sniff_encoding(head))(errors="replace")
            chunk, head = head, b""
        text = decoder.decode(chunk, final=not chunk)
        if pending_cr:
            text = "\r" + text
        pending_cr = bool(chunk) and text.endswith("\r")
        if pending_cr:
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = (rest + text).split("\n")
        rest = lines.pop()
        if len(rest) > MAX_LINE:
            rest = rest[:MAX_LINE]
        if not chunk:
            break
        feeder.add(lines)
        if fd is None or not _readable_now(fd):
            feeder.flush()
            yield from ready(False)
    if rest:
        feeder.add([rest])
    feeder.flush()
    yield from ready(True)
