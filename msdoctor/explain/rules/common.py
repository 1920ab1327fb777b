"""What the rules share: the frames of a traceback (CPython's and rich's boxed ones), the frame that raised past the
import machinery, a log's prefixes, pip's version lines, and the Python and distribution versions a paste shows."""

from __future__ import annotations

import re
from typing import Optional, Sequence


#: a Python traceback frame as CPython prints it
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\]")


#: a frame of a rich traceback (https://rich.readthedocs.io/en/stable/traceback.html), inside its box: `│ PATH:LINE in
#: FUNC │`, the path wrapped over box lines when it is longer than the box
_RICH_FRAME = re.compile(r"(?P<path>(?:/|[A-Za-z]:\\)[^\s:│]*?\.py):(?P<line>\d+) in (?P<func>[\w<>]+)")
_BOX = re.compile(r"^\s*[│┃|]\s?(?P<inner>.*?)\s*[│┃|]\s*$")


def _rich_frames(lines: Sequence[str]) -> list[str]:
    """The frames of a rich traceback: the text inside the box lines, a wrapped path joined back."""
    joined = ""
    for line in lines:
        b = _BOX.match(_unprefixed(line))
        if b is None:
            joined += "\n"
            continue
        inner = b.group("inner").strip()
        if not inner:
            joined += "\n"
            continue
        # a path cut at the box's edge continues on the next line with no space
        joined += inner if joined and not joined.endswith("\n") and _RICH_WRAP.search(joined) else "\n" + inner
    return [m.group("path") for m in _RICH_FRAME.finditer(joined)]


#: the text so far ends inside a path (no `:LINE in` after its last slash yet): the next box line continues it
_RICH_WRAP = re.compile(r"(?:^|\n)(?:/|[A-Za-z]:\\)[^\s:]*$")


def frames(lines: Sequence[str]) -> list[str]:
    """The file paths of the traceback frames in these lines, in order (a rich traceback's when there is no plain
    one)."""
    plain = [m.group("path") for line in lines for m in _FRAME.finditer(line)]
    return plain or _rich_frames(lines)


#: frames of the import machinery itself (``<frozen importlib._bootstrap>``, the stdlib's importlib): they raise on
#: behalf of the frame before them
_MACHINERY = re.compile(r"^<|[/\\]lib[/\\]python\d\.\d+[/\\]importlib[/\\]")


def _raising_path(before: Sequence[str]) -> Optional[str]:
    """The file of the last frame printed before the exception line (the frame that raised), past the import
    machinery's own frames."""
    for p in reversed(frames(before)):
        if p.startswith("<") and not p.startswith("<frozen"):
            return None  # code run from a string or typed in (exec'd setup.py, <stdin>): no file owns the import
        if not _MACHINERY.search(p):
            return p
    return None


def _top(module: str) -> str:
    return module.split(".")[0]


def _checkout_of(path: str, package: str) -> bool:
    """Whether ``path`` is a file of a directory named ``package`` outside site-packages (a source tree)."""
    if _SITE.search(path):
        return False
    parts = re.split(r"[/\\]", path)
    return package in parts[:-1]


#: `pip freeze` / `pip list` lines and pip's own `name==version` spellings
_PIP_LINE = re.compile(r"(?<![\w.-])(?P<dist>[A-Za-z0-9][\w.-]*?)(?:==|\s+)(?P<ver>\d[\w.+!-]*)\s*$")


#: a log prefix before the pasted text: `[rank0]:`, `(Worker pid=6871)`, `rank1: `
_LOG_PREFIX = re.compile(r"^(?:\[rank\d+\]:|\(\w+ pid=\d+\)|rank\d+:)\s*")


def _unprefixed(line: str) -> str:
    return _LOG_PREFIX.sub("", line.strip())


def _normal_dist(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip_versions(lines: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in lines:
        line = _unprefixed(raw)
        m = _PIP_LINE.search(line)
        if m and (not line.startswith(("import ", "from ")) and " " not in line.split("==")[0]):
            out[_normal_dist(m.group("dist"))] = m.group("ver")
    return out


def _same_version(a: str, b: str) -> bool:
    """Equal as PEP 440 versions (2.0 is 2.0.0, 1.0RC1 is 1.0rc1); as strings where either does not parse."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


#: the Python version the paste shows: `lib/python3.12/`, `Python312\Lib`, `Python 3.12.5`, `python3.12 -m venv`
_PASTED_PY = re.compile(
    r"[/\\]python(?P<p>3\.\d{1,2})[/\\]|[/\\]Python3(?P<w>\d{1,2})[/\\]|"
    r"\bPython (?P<v>3\.\d{1,2})(?:\.\d+)?\b|\bpython(?P<x>3\.\d{1,2}) -m\b",
    re.I,
)


def _vtuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _python_shown(context: Sequence[str]) -> str:
    """The one Python version (3.X) the paste's paths and lines show; "" when none or several."""
    found = set()
    for line in context:
        for m in _PASTED_PY.finditer(line):
            found.add(m.group("p") or m.group("v") or m.group("x") or f"3.{m.group('w')}")
    return found.pop() if len(found) == 1 else ""


def _dist_shown(dist: str, context: Sequence[str]) -> str:
    """The one version of distribution ``dist`` the paste states as installed: a file or install line
    (`numpy-2.0.2`, `Successfully installed numpy-2.0.2`), a pin (`numpy==1.26.4`), pip list's line (`numpy 1.26.4`),
    torch's environment report (`PyTorch version: 2.0.1`); "" when none or several. Prose naming a release (`deprecated
    in NumPy 1.20`) is not a version installed."""
    names = [re.escape(dist)] + (["PyTorch"] if dist == "torch" else [])
    pat = re.compile(
        rf"(?<![\w.-])(?:(?:{'|'.join(names)})(?:-|==)|(?:{'|'.join(names)}) version: )"
        rf"(?P<v>\d+(?:\.\d+)+)",
        re.I,
    )
    found = {m.group("v") for line in context for m in pat.finditer(_unprefixed(line))}
    listed = re.compile(rf"^{re.escape(dist)}\s+(?P<v>\d+(?:\.\d+)+)\S*\s*$", re.I)  # `pip list`'s line
    found.update(m.group("v") for line in context if (m := listed.match(_unprefixed(line).strip())))
    return found.pop() if len(found) == 1 else ""
