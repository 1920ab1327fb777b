"""Explain error text: match it against the offline catalogue of known error signatures (compat_matrix/errors.toml).

Public API (the trainer calls it on a failed run's logs; the device-target check on MindSpore's own log lines)::

    from msdoctor.explain import explain_text, explain_file
    for m in explain_text(log_tail):
        print(m.title, m.cause, m.fix_for(python, config), m.check_id, m.line)

Logs are matched the way people paste them: each line is normalised (ANSI colour codes, non-breaking and
full-width spaces, curly and full-width quotes, HTML-escaped characters, tabs and runs of spaces, case), a
signature may be wrapped over up to three lines, lines longer than MAX_LINE characters are scanned in
overlapping windows, and files are opened with their BOM or UTF-16 detected. An entry's regex runs only where
the text holds a literal the regex requires, so scanning a clean 200k-line log costs a few substring searches
per megabyte. CANN errors carry their own "Possible Cause:" and "Solution:" lines: a match echoes them.
"""

from __future__ import annotations

import bisect
import functools
import html
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO, Iterable, Iterator, Mapping, Optional, Sequence

CATALOGUE = "errors.toml"
KIND = "error-catalogue"
REQUIRED = ("id", "title", "pattern", "cause", "fix", "check", "source", "category")
OPTIONAL = ("device_target", "fallback", "per", "live", "lookup")
DEVICE_TARGETS = ("Ascend", "GPU", "CPU")
CATEGORIES = ("device-oom", "host-oom", "hccl", "msrun", "cann-code", "api-skew", "shared-lib", "abi", "glibc",
              "cuda", "cann-env", "cann-version", "visible-devices", "enospc", "install", "shadowing", "registry",
              "parallel-config", "cpu-backend", "interpreter", "api-name", "device-busy")
LOOKUPS = ("library", "scheduler")
LIVE_STATUSES = ("fail", "warn")
#: a line longer than this is scanned in windows of this size, overlapping by WINDOW_OVERLAP characters
MAX_LINE = 4000
WINDOW_OVERLAP = 400
#: a signature may be wrapped over at most this many lines
JOIN_LINES = 3
#: lines after a match searched for the log's own "Possible Cause:" / "Solution:" lines
CONTEXT_LINES = 12
BLOCK_CHARS = 1 << 20
#: how a fix says "set CANN's environment" when the target's CANN path is unknown
SOURCE_CANN = "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
#: occurrences of one literal looked at per block (bounds the cost of a literal that is everywhere)
MAX_HITS = 5000
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_GROUP = re.compile(r"\(\?P<(\w+)>")


class CatalogueError(Exception):
    """The catalogue file is malformed (a bug in msdoctor's data, caught by its tests)."""


@dataclass(frozen=True)
class Entry:
    """One known error signature."""

    id: str
    title: str
    pattern: "re.Pattern[str]"
    cause: str
    fix: str
    check_id: Optional[str]
    source: str
    category: str = "cann-code"
    device_target: Optional[str] = None
    fallback: bool = False  # generic: reported only where no specific entry explains the same lines
    per: Optional[str] = None  # one match per distinct value of this named group (e.g. each CANN code)
    live_code: Optional[str] = None  # the device-target check reports it as a finding with this code
    live_status: str = "warn"
    lookup: Optional[str] = None  # "library": fill {lib_*} from [[library]]; "scheduler": read the registrations

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(_GROUP.findall(self.pattern.pattern))


@dataclass(frozen=True)
class Library:
    """Who ships a shared library, and what to do when the loader cannot find it."""

    prefixes: tuple[str, ...]
    owner: str
    cause: str
    fix: str
    source: str
    device_target: Optional[str] = None


@dataclass(frozen=True)
class Catalogue:
    entries: tuple[Entry, ...]
    libraries: tuple[Library, ...]

    def library(self, name: str) -> Optional[Library]:
        for lib in self.libraries:
            if name.startswith(lib.prefixes):
                return lib
        return None


@dataclass(frozen=True)
class Match:
    """A catalogue entry found in a text.

    Attributes:
        entry_id: the catalogue entry's id.
        title: what happened, in one line.
        cause: why it happens (placeholders filled from the matched text).
        fix: what to do; ``{python}``/``{config}`` are filled by :meth:`fix_for`, other placeholders from the match.
        check_id: the msdoctor check that detects the cause, or None.
        source: where the signature and the fix come from.
        line: the matched line (stripped; a window of it when the line is long; joined when wrapped).
        line_no: its 1-based line number in the text.
        count: how many lines matched this entry.
        groups: named groups of the match (and values the entry's lookup added).
        device_target: the device the error is about (Ascend, GPU), when the entry or the text says so.
        category: the entry's cause category.
        log_cause / log_solution: the log's own "Possible Cause:" / "Solution:" lines that follow the match.
    """

    entry_id: str
    title: str
    cause: str
    fix: str
    check_id: Optional[str]
    source: str
    line: str
    line_no: int
    count: int = 1
    groups: Mapping[str, str] = field(default_factory=dict)
    device_target: Optional[str] = None
    category: str = ""
    log_cause: Optional[str] = None
    log_solution: Optional[str] = None

    def fix_for(self, python: Optional[str], config: Optional[str] = None,
                values: Optional[Mapping[str, str]] = None) -> str:
        """The fix with ``{python}`` (the target interpreter), ``{config}`` (the training config, when known)
        and any further ``values`` filled in."""
        filled = {"python": python or "python", "config": config or "<your training config>"}
        filled.update(values or {})
        return _fill(self.fix, filled)


def _fill(text: str, values: Mapping[str, Optional[str]]) -> str:
    """Replace {name} placeholders that have a value; leave every other brace alone (shell ${VAR} etc.)."""

    def sub(m: "re.Match[str]") -> str:
        value = values.get(m.group(1))
        return value if value is not None else m.group(0)

    return _PLACEHOLDER.sub(sub, text)


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib
    return tomllib


def catalogue_path() -> Path:
    import msdoctor.compat_matrix as cm

    return Path(cm.__file__).resolve().parent / CATALOGUE


def _text(raw: Mapping[str, Any], key: str) -> str:
    return " ".join(str(raw[key]).split())


def _entry(raw: Mapping[str, Any], label: str) -> Entry:
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise CatalogueError(f"{label}: missing {', '.join(missing)}")
    unknown = [k for k in raw if k not in REQUIRED + OPTIONAL]
    if unknown:
        raise CatalogueError(f"{label}: unknown key(s) {', '.join(unknown)}")
    try:
        pattern = re.compile(raw["pattern"], re.IGNORECASE)
    except re.error as exc:
        raise CatalogueError(f"{label}: pattern does not compile: {exc}") from None
    for key in ("title", "cause", "fix", "source"):
        if not str(raw[key]).strip():
            raise CatalogueError(f"{label}: {key} is empty")
    check = str(raw["check"]).strip()
    if check and not _ID.match(check):
        raise CatalogueError(f"{label}: check {check!r} is not a check id")
    target = raw.get("device_target")
    if target is not None and target not in DEVICE_TARGETS:
        raise CatalogueError(f"{label}: device_target must be one of {', '.join(DEVICE_TARGETS)}")
    if raw["category"] not in CATEGORIES:
        raise CatalogueError(f"{label}: category must be one of {', '.join(CATEGORIES)}")
    per = raw.get("per")
    if per is not None and per not in pattern.groupindex:
        raise CatalogueError(f"{label}: per names no group of the pattern")
    lookup = raw.get("lookup")
    if lookup is not None and lookup not in LOOKUPS:
        raise CatalogueError(f"{label}: lookup must be one of {', '.join(LOOKUPS)}")
    live = raw.get("live") or {}
    if live and (set(live) - {"code", "status"} or not _ID.match(str(live.get("code", "")))
                 or live.get("status", "warn") not in LIVE_STATUSES):
        raise CatalogueError(f"{label}: live must be {{code = \"kebab-id\", status = \"fail\"|\"warn\"}}")
    return Entry(raw["id"], raw["title"].strip(), pattern, _text(raw, "cause"), _text(raw, "fix"), check or None,
                 raw["source"].strip(), raw["category"], target, bool(raw.get("fallback", False)), per,
                 live.get("code"), live.get("status", "warn"), lookup)


def parse_catalogue_full(text: str, where: str = CATALOGUE) -> Catalogue:
    """Validate and compile a catalogue document; CatalogueError names the entry and the problem."""
    try:
        data = _toml().loads(text)
    except _toml().TOMLDecodeError as exc:
        raise CatalogueError(f"{where}: malformed TOML: {exc}") from None
    if data.get("kind") != KIND:
        raise CatalogueError(f"{where}: kind must be {KIND!r}")
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("error") or []):
        label = f"{where}: error[{i}] ({raw.get('id', '?')})"
        if not _ID.match(str(raw.get("id", ""))) or raw["id"] in seen:
            raise CatalogueError(f"{label}: id must be unique kebab-case")
        seen.add(raw["id"])
        entries.append(_entry(raw, label))
    if not entries:
        raise CatalogueError(f"{where}: no [[error]] entries")
    libraries = []
    for i, raw in enumerate(data.get("library") or []):
        label = f"{where}: library[{i}]"
        keys = ("prefixes", "owner", "cause", "fix", "source")
        if set(raw) - set(keys) - {"device_target"} or not all(raw.get(k) for k in keys):
            raise CatalogueError(f"{label}: needs {', '.join(keys)} (and optionally device_target)")
        libraries.append(Library(tuple(raw["prefixes"]), _text(raw, "owner"), _text(raw, "cause"), _text(raw, "fix"),
                                 str(raw["source"]).strip(), raw.get("device_target")))
    return Catalogue(tuple(entries), tuple(libraries))


def parse_catalogue(text: str, where: str = CATALOGUE) -> list[Entry]:
    return list(parse_catalogue_full(text, where).entries)


@functools.lru_cache(maxsize=1)
def load_catalogue_full() -> Catalogue:
    """The bundled catalogue (parsed once per process)."""
    path = catalogue_path()
    return parse_catalogue_full(path.read_text(encoding="utf-8"), str(path))


def load_catalogue() -> tuple[Entry, ...]:
    return load_catalogue_full().entries


# -- normalisation ------------------------------------------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});")
_SPACES = re.compile(r" {2,}")
_LEADING = re.compile(r"\n +")
_TRAILING = re.compile(r" +\n")


def _translation() -> dict[int, Any]:
    table: dict[int, Any] = {c: " " for c in (0x00A0, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                                              0x2007, 0x2008, 0x2009, 0x200A, 0x202F, 0x205F, 0x3000, 0x0B, 0x0C)}
    table.update({c: "" for c in (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)})
    table.update({c: "'" for c in (0x2018, 0x2019, 0x201A, 0x201B, 0x2032, 0x00B4, 0x300C, 0x300D)})
    table.update({c: '"' for c in (0x201C, 0x201D, 0x201E, 0x201F, 0x2033, 0x00AB, 0x00BB, 0x300E, 0x300F)})
    table.update({0x2010: "-", 0x2011: "-", 0x2012: "-", 0x2013: "-", 0x2014: "-", 0x2212: "-", 0x3002: ".",
                  0x3001: ","})
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


# -- literal prefilter --------------------------------------------------------------------------------------
#: characters a backslash turns into themselves (everything else after a backslash is a class or an anchor)
_LITERAL_ESCAPES = set(".()[]{}*+?|^$\\/'\"-:=,<>!&%@#~` ")


def _split_top(src: str) -> Optional[list[str]]:
    """Top-level alternatives of a regex source (None when it cannot be split safely)."""
    parts, depth, cur, i, in_class = [], 0, [], 0, False
    while i < len(src):
        c = src[i]
        if c == "\\" and i + 1 < len(src):
            cur.append(src[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if src[i + 1:i + 2] == "]":  # a ']' first in a class is literal
                cur.append(c)
                i += 1
                c = "]"
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    if depth != 0 or in_class:
        return None
    parts.append("".join(cur))
    return parts


def _longest_literal(alt: str) -> str:
    """The longest run of literal characters every match of this alternative must contain."""
    best, depth, i = "", 0, 0
    run: list[str] = []

    def close() -> None:
        nonlocal best, run
        if len(run) > len(best):
            best = "".join(run)
        run = []

    while i < len(alt):
        c = alt[i]
        if c == "\\" and i + 1 < len(alt):
            nxt = alt[i + 1]
            if depth == 0 and nxt in _LITERAL_ESCAPES:
                run.append(nxt)
            else:
                close()
            i += 2
            continue
        if c == "[":
            close()
            j = i + 1
            if alt[j:j + 1] == "^":
                j += 1
            if alt[j:j + 1] == "]":
                j += 1
            while j < len(alt) and alt[j] != "]":
                j += 2 if alt[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            close()
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth > 0:
            pass
        elif c in "*?+{":
            if run:
                run.pop()  # the quantified character is optional
            close()
        elif c in ".^$|":
            close()
        elif c == " " and run and run[-1] == " ":
            pass  # normalised text never holds two spaces in a row
        else:
            run.append(c)
        i += 1
    close()
    return best


def required_literals(src: str) -> Optional[tuple[str, ...]]:
    """Lower-case literals such that a text can match ``src`` only if it contains one of them.

    None when some alternative has no literal of 4+ characters (then the whole text is searched).
    """
    m = re.fullmatch(r"\(\?i:(.*)\)", src, re.S)
    if m and _split_top(m.group(1)) is not None:
        src = m.group(1)
    alts = _split_top(src)
    if alts is None:
        return None
    lits = []
    for alt in alts:
        lit = _longest_literal(alt)
        if len(lit) < 4:
            return None
        lits.append(lit.lower())
    return tuple(lits)


# -- matching -----------------------------------------------------------------------------------------------
_CANN_CODE_LINE = re.compile(r"(?<![\w.=])E[A-Z0-9]\d{4}(?:[:)\]]|\s+Inner Error)")
_CANN_CODE_ANYWHERE = re.compile(r"E[A-Z0-9]\d{4}(?:[:)\]]|\s+Inner Error)")
_CAUSE = re.compile(r"\bPossible Cause\s*:\s*(?P<v>.+)", re.I)
_SOLUTION = re.compile(r"\bSolution\s*:\s*(?P<v>.+)", re.I)


@dataclass
class _Hit:
    no: int
    line: str
    groups: dict[str, str]
    cause: Optional[str] = None
    solution: Optional[str] = None


@dataclass
class _Found:
    entry: Entry
    hits: list[_Hit] = field(default_factory=list)  # the first hit; every hit of a fallback entry
    starts: set[int] = field(default_factory=set)


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

    def _try(self, entry: Entry, positions: list[tuple[int, int]], norm: list[str], raw: list[str],
             nos: "Sequence[int]", lines: "_Lines") -> None:
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
                seg = norm[s] if s == e else " ".join(norm[s:e + 1])
                m = entry.pattern.search(seg)
                if m is None:
                    continue
                first, last_line = _line_of(norm, s, e, m.start()), _line_of(norm, s, e, max(m.end() - 1, m.start()))
                one = first == last_line  # the match lies in one line of the window: show that line as it came
                shown = _shown(raw[first], norm[first], m) if one else _around(seg, m)
                self._record(entry, m, shown, first, norm, nos)
                break

    def _record(self, entry: Entry, m: "re.Match[str]", shown: str, i: int, norm: list[str],
                nos: "Sequence[int]") -> None:
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
        found.hits.append(_Hit(no, shown, groups, cause, solution))

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
            groups = dict(hit.groups)
            for name in e.groups:
                groups.setdefault(name, "?")
            if not self._lookup(e, groups):
                continue
            out.append(Match(
                entry_id=e.id, title=_fill(e.title, groups), cause=_fill(e.cause, groups), fix=_fill(e.fix, groups),
                check_id=e.check_id, source=e.source, line=hit.line, line_no=hit.no, count=max(count, 1),
                groups=groups, device_target=groups.get("target") if groups.get("target") in DEVICE_TARGETS
                else (groups.get("lib_target") or e.device_target),
                category=e.category, log_cause=hit.cause, log_solution=hit.solution,
            ))
        out.sort(key=lambda m: m.line_no)
        return out

    def _lookup(self, e: Entry, groups: dict[str, str]) -> bool:
        """Add the values an entry's lookup provides; False drops the match (nothing is wrong after all)."""
        if e.lookup == "library":
            lib = self.catalogue.library(groups.get("lib", ""))
            groups["lib_owner"] = lib.owner if lib else "shipped by a package that is missing or not on the loader's path"
            groups["lib_cause"] = lib.cause if lib else ""
            groups["lib_fix"] = _fill(lib.fix, {"source": SOURCE_CANN}) if lib else (
                f"find the package that ships {groups.get('lib', 'the library')} (`ldconfig -p | grep "
                f"{groups.get('lib', '').split('.so')[0]}`, `find / -name '{groups.get('lib', '')}*'`) and add its "
                "directory to LD_LIBRARY_PATH, or install it")
            if lib and lib.device_target:
                groups["lib_target"] = lib.device_target
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
            subs = {lit} if len(lit) <= width else {lit[i:i + width] for i in range(len(lit) - width + 1)}
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


def _log_advice(norm: list[str], i: int) -> tuple[Optional[str], Optional[str]]:
    """The "Possible Cause:" / "Solution:" lines CANN prints after an error code, up to the next code."""
    cause = solution = None
    lines = norm[i:i + CONTEXT_LINES + 1]
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
        yield line[start:start + MAX_LINE]
        if start + MAX_LINE >= len(line):
            break


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
            part = lines[i:i + 4096]
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
MAX_LINE = 64 * 1024


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


def explain_file(path: Path) -> list[Match]:
    """Scan a whole log file (streamed; BOM / UTF-16 detected; undecodable bytes replaced).

    Only a regular file is read (a FIFO or a device is a UserError, exit 2)."""
    from msdoctor.inputs import open_regular

    with open_regular(path) as fh:
        return _explain_stream_text(open_log(fh))


def explain_stream(binary: BinaryIO) -> list[Match]:
    """Scan a binary stream such as ``sys.stdin.buffer``."""
    return _explain_stream_text(open_log(binary))


def describe(match: Match, python: Optional[str] = None, config: Optional[str] = None) -> str:
    """A plain-text explanation of one match (for logs and the trainer's failure message)."""
    lines = [
        f"{match.title}  [{match.entry_id}]",
        f"  line {match.line_no}: {match.line[:300]}" + (f"  (x{match.count})" if match.count > 1 else ""),
        f"  cause: {match.cause}",
    ]
    if match.log_cause:
        lines.append(f"  the log's own cause: {match.log_cause}")
    lines.append(f"  fix:   {match.fix_for(python, config)}")
    if match.log_solution:
        lines.append(f"  the log's own solution: {match.log_solution}")
    if match.check_id:
        lines.append(f"  check: msdoctor check --only {match.check_id}")
    lines.append(f"  source: {match.source}")
    return "\n".join(lines)
