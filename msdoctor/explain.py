"""Explain error text: match it against the offline catalogue of known error signatures (compat_matrix/errors.toml).

Public API (the trainer calls it on the tail of a failed run's log)::

    from msdoctor.explain import explain_text
    for m in explain_text(log_tail):
        print(m.title, m.cause, m.fix, m.check_id, m.line)

Matching is line by line (a log can be large; each line is cut to 4000
characters), one Match per catalogue entry at its first occurrence, ordered by
where it occurs. An entry's regex runs only on lines that hold a literal the
regex requires, so scanning a clean log costs a few substring searches.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping, Optional

CATALOGUE = "errors.toml"
KIND = "error-catalogue"
REQUIRED = ("id", "title", "pattern", "cause", "fix", "check", "source")
OPTIONAL = ("device_target",)
DEVICE_TARGETS = ("Ascend", "GPU", "CPU")
MAX_LINE = 4000
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


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
    device_target: Optional[str] = None


@dataclass(frozen=True)
class Match:
    """A catalogue entry found in a text.

    Attributes:
        entry_id: the catalogue entry's id.
        title: what happened, in one line.
        cause: why it happens (placeholders filled from the matched text).
        fix: what to do; ``{python}`` is filled by :meth:`fix_for`, other placeholders from the match.
        check_id: the msdoctor check that detects the cause, or None.
        source: where the signature and the fix come from.
        line: the matched line (stripped).
        line_no: its 1-based line number in the text.
        count: how many lines matched this entry.
        groups: named groups of the match.
        device_target: the device the error is about (Ascend, GPU), when the entry or the text says so.
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

    def fix_for(self, python: Optional[str]) -> str:
        """The fix with ``{python}`` replaced by the target interpreter (``python`` when unknown)."""
        return _fill(self.fix, {"python": python or "python"})


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


def parse_catalogue(text: str, where: str = CATALOGUE) -> list[Entry]:
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
        missing = [k for k in REQUIRED if k not in raw]
        if missing:
            raise CatalogueError(f"{label}: missing {', '.join(missing)}")
        unknown = [k for k in raw if k not in REQUIRED + OPTIONAL]
        if unknown:
            raise CatalogueError(f"{label}: unknown key(s) {', '.join(unknown)}")
        if not _ID.match(raw["id"]) or raw["id"] in seen:
            raise CatalogueError(f"{label}: id must be unique kebab-case")
        seen.add(raw["id"])
        try:
            pattern = re.compile(raw["pattern"])
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
        entries.append(Entry(raw["id"], raw["title"].strip(), pattern, " ".join(raw["cause"].split()),
                             " ".join(raw["fix"].split()), check or None, raw["source"].strip(), target))
    if not entries:
        raise CatalogueError(f"{where}: no [[error]] entries")
    return entries


@functools.lru_cache(maxsize=1)
def load_catalogue() -> tuple[Entry, ...]:
    """The bundled catalogue (parsed once per process)."""
    path = catalogue_path()
    return tuple(parse_catalogue(path.read_text(encoding="utf-8"), str(path)))


#: characters a backslash turns into themselves (everything else after a backslash is a class or an anchor)
_LITERAL_ESCAPES = set(".()[]{}*+?|^$\\/'\"-:=,<>!&%@#~` ")
BLOCK_CHARS = 1 << 20


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
        else:
            run.append(c)
        i += 1
    close()
    return best


def required_literals(src: str) -> Optional[tuple[bool, tuple[str, ...]]]:
    """(case_insensitive, literals): a line can match only if it contains one of the literals.

    None when some alternative has no literal of 4+ characters (then every line is tried).
    """
    icase = False
    m = re.fullmatch(r"\(\?i:(.*)\)", src, re.S)
    if m and _split_top(m.group(1)) is not None:
        icase, src = True, m.group(1)
    alts = _split_top(src)
    if alts is None:
        return None
    lits = []
    for alt in alts:
        lit = _longest_literal(alt)
        if len(lit) < 4:
            return None
        lits.append(lit.lower() if icase else lit)
    return icase, tuple(lits)


def _scan(block: list[str], first_no: int, prepared: list[tuple[Entry, Any]], found: dict[str, dict[str, Any]]) -> None:
    text = "\n".join(block)
    lower: Optional[str] = None
    lower_lines: Optional[list[str]] = None
    for e, lits in prepared:
        if lits is None:
            candidates: Iterable[int] = range(len(block))
        else:
            icase, needles = lits
            if icase:
                lower = lower if lower is not None else text.lower()
                if not any(n in lower for n in needles):
                    continue
                lower_lines = lower_lines if lower_lines is not None else [x.lower() for x in block]
                candidates = [i for i, x in enumerate(lower_lines) if any(n in x for n in needles)]
            else:
                if not any(n in text for n in needles):
                    continue
                candidates = [i for i, x in enumerate(block) if any(n in x for n in needles)]
        for i in candidates:
            m = e.pattern.search(block[i])
            if m is None:
                continue
            if e.id in found:
                found[e.id]["count"] += 1
                continue
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            found[e.id] = {"entry": e, "line": block[i].strip(), "no": first_no + i, "count": 1, "groups": groups}


def explain_lines(lines: Iterable[str], entries: Optional[Iterable[Entry]] = None) -> list[Match]:
    """Match an iterable of lines (a file object works) against the catalogue.

    Lines are scanned in blocks of about a megabyte: an entry's regex runs only on
    lines holding one of the literals it requires (:func:`required_literals`), so
    a clean log costs a few substring searches per block.
    """
    entries = tuple(entries) if entries is not None else load_catalogue()
    prepared = [(e, required_literals(e.pattern.pattern)) for e in entries]
    found: dict[str, dict[str, Any]] = {}
    block: list[str] = []
    size, first_no, no = 0, 1, 0
    for no, raw in enumerate(lines, 1):
        line = raw[:MAX_LINE]
        block.append(line)
        size += len(line) + 1
        if size >= BLOCK_CHARS:
            _scan(block, first_no, prepared, found)
            block, size, first_no = [], 0, no + 1
    if block:
        _scan(block, first_no, prepared, found)
    out = []
    for hit in sorted(found.values(), key=lambda h: h["no"]):
        e: Entry = hit["entry"]
        groups = hit["groups"]
        out.append(Match(
            entry_id=e.id, title=_fill(e.title, groups), cause=_fill(e.cause, groups), fix=_fill(e.fix, groups),
            check_id=e.check_id, source=e.source, line=hit["line"], line_no=hit["no"], count=hit["count"],
            groups=groups, device_target=groups.get("target") or e.device_target,
        ))
    return out


def explain_text(text: str) -> list[Match]:
    """Every known error signature in ``text``, in order of first occurrence."""
    return explain_lines(text.splitlines())


def explain_file(path: Path) -> list[Match]:
    """Scan a whole log file (streamed; undecodable bytes replaced)."""
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        return explain_lines(_chomp(fh))


def _chomp(fh: IO[str]) -> Iterator[str]:
    for line in fh:
        yield line.rstrip("\r\n")


def describe(match: Match, python: Optional[str] = None) -> str:
    """A plain-text explanation of one match (for logs and the trainer's failure message)."""
    lines = [
        f"{match.title}  [{match.entry_id}]",
        f"  line {match.line_no}: {match.line[:300]}" + (f"  (x{match.count})" if match.count > 1 else ""),
        f"  cause: {match.cause}",
        f"  fix:   {match.fix_for(python)}",
    ]
    if match.check_id:
        lines.append(f"  check: msdoctor check --only {match.check_id}")
    lines.append(f"  source: {match.source}")
    return "\n".join(lines)
