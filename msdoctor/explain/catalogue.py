"""The offline catalogue of known error signatures (compat_matrix/errors.toml): its data model, its loader and
validator, and the literal prefilter each signature's regex is reduced to (:func:`required_literals`)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

CATALOGUE = "errors.toml"
KIND = "error-catalogue"
REQUIRED = ("id", "title", "pattern", "cause", "fix", "check", "source", "category")
OPTIONAL = ("device_target", "fallback", "per", "live", "lookup", "gate", "headline")
DEVICE_TARGETS = ("Ascend", "GPU", "CPU")
CATEGORIES = (
    "device-oom",
    "host-oom",
    "hccl",
    "msrun",
    "cann-code",
    "api-skew",
    "shared-lib",
    "abi",
    "glibc",
    "cuda",
    "cann-env",
    "cann-version",
    "visible-devices",
    "enospc",
    "install",
    "shadowing",
    "registry",
    "parallel-config",
    "cpu-backend",
    "interpreter",
    "api-name",
    "device-busy",
) + ("network", "host-limits")
#: the lookups of the environment rules (msdoctor/explain/rules/env.py)
ENV_LOOKUPS = (
    "mindspore-core",
    "cann-python",
    "device-range",
    "ranktable",
    "rank-arguments",
    "pip-network",
    "loader-version",
    "system-tool",
    "linker-needed",
    "cluster-role",
    "gpu-collective",
    "network-interface",
    "wrong-arch",
    "pillow-headers",
    "thread-limit",
    "numpy-size",
    "dataset-workers",
    "host-unresolved",
    "metadata-missing",
    "device-memory",
    "shell",
    "kernel-headers",
    "stream-limit",
)
LOOKUPS = (
    "library",
    "scheduler",
    "symbol",
    "symbol-owner",
    "import",
    "pairing",
    "keyword",
    "wheel",
    "distribution",
    "conflict",
    "port",
    "device",
    "runtime",
    "build",
    "requirement",
    "circular",
    "version",
    "signature",
    "opcheck",
    "numpy",
    "removed",
    "aclcode",
    "mindspore-wheel",
    "requires-python",
) + ENV_LOOKUPS
LIVE_STATUSES = ("fail", "warn")
#: how a fix says "set CANN's environment" when the target's CANN path is unknown
SOURCE_CANN = "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
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
    #: for a pattern with no required literal: a case-sensitive regex, without whitespace, that a raw ASCII line
    #: must match for the pattern to match it after normalisation (the fast log scan looks only at such lines)
    gate: Optional["re.Pattern[bytes]"] = None
    #: a headline whose cause is in the lines under it (MindSpore's "... initialization failed. The details refer to
    #: 'Ascend Error Message'"): a match within HEADLINE_SPAN lines below it comes first, the headline after it
    headline: bool = False

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


def _fill(text: str, values: Mapping[str, Optional[str]]) -> str:
    """Replace {name} placeholders that have a value; leave every other brace alone (shell ${VAR} etc.)."""

    def sub(m: "re.Match[str]") -> str:
        value = values.get(m.group(1))
        return value if value is not None else m.group(0)

    return _PLACEHOLDER.sub(sub, text)


def _toml() -> Any:
    from msdoctor.tomlcompat import tomllib

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
    if live and (
        set(live) - {"code", "status"}
        or not _ID.match(str(live.get("code", "")))
        or live.get("status", "warn") not in LIVE_STATUSES
    ):
        raise CatalogueError(f'{label}: live must be {{code = "kebab-id", status = "fail"|"warn"}}')
    gate = None
    if "gate" in raw:
        try:
            gate = re.compile(str(raw["gate"]).encode("ascii"))
        except (re.error, UnicodeEncodeError) as exc:
            raise CatalogueError(f"{label}: gate must be an ASCII regex: {exc}") from None
        if re.search(r"\\s|\s", str(raw["gate"])):
            raise CatalogueError(f"{label}: gate must not involve whitespace (normalisation changes it)")
    return Entry(
        raw["id"],
        raw["title"].strip(),
        pattern,
        _text(raw, "cause"),
        _text(raw, "fix"),
        check or None,
        raw["source"].strip(),
        raw["category"],
        target,
        bool(raw.get("fallback", False)),
        per,
        live.get("code"),
        live.get("status", "warn"),
        lookup,
        gate,
        bool(raw.get("headline", False)),
    )


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
        libraries.append(
            Library(
                tuple(raw["prefixes"]),
                _text(raw, "owner"),
                _text(raw, "cause"),
                _text(raw, "fix"),
                str(raw["source"]).strip(),
                raw.get("device_target"),
            )
        )
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


# -- literal prefilter --------------------------------------------------------------------------------------
#: characters a backslash turns into themselves (everything else after a backslash is a class or an anchor)
_LITERAL_ESCAPES = set(".()[]{}*+?|^$\\/'\"-:=,<>!&%@#~` ")


def _split_top(src: str) -> Optional[list[str]]:
    """Top-level alternatives of a regex source (None when it cannot be split safely)."""
    parts, depth, cur, i, in_class = [], 0, [], 0, False
    while i < len(src):
        c = src[i]
        if c == "\\" and i + 1 < len(src):
            cur.append(src[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if src[i + 1 : i + 2] == "]":  # a ']' first in a class is literal
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
            if alt[j : j + 1] == "^":
                j += 1
            if alt[j : j + 1] == "]":
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
