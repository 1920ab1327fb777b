"""Helpers of the duplicate-installs check: RECORD files, where a copy lives, who owns a module, fixes."""

from __future__ import annotations

import base64
import csv
import functools
import hashlib
import io
import os
import re
import shlex
from typing import Any, Iterable, Iterator, Mapping, Optional
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name

from msdoctor.facts.target import Distribution, TargetFacts
from msdoctor.model import Status

#: Every copy of every project, by canonical name, in sys.path order.
Groups = dict[str, list[Distribution]]

#: Packages the training stack imports: a problem with one of them fails the check (issue 5).
STACK = frozenset({"mindspore", "mindnlp", "mindformers", "transformers", "numpy", "tokenizers", "safetensors"})
#: Native libraries: what a half-deleted MindSpore loses first (mindspore/lib/*.so).
_NATIVE = re.compile(r"\.(?:so(?:\.\d+)*|pyd|dylib)$")
#: RECORD lines of top-level files and of top-level packages' __init__.py.
_TOP = re.compile(r'^([^,/\r\n"]+(?:/__init__\.py)?),', re.M)


def is_stack(*names: Optional[str]) -> bool:
    return any(canonicalize_name(n) in STACK for n in names if n)


def status_for(*names: Optional[str]) -> Status:
    """fail for the training stack, warn for everything else (issue 5's severity rule)."""
    return Status.FAIL if is_stack(*names) else Status.WARN


@functools.lru_cache(maxsize=8192)
def real(path: str) -> str:
    """os.path.realpath, memoised for one evaluation (evaluate() clears it: files change between runs)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def under(path: str, root: str) -> bool:
    p, r = real(path), real(root).rstrip(os.sep)
    return p == r or p.startswith(r + os.sep)


def q(path: str) -> str:
    return shlex.quote(path)


def is_leftover(d: Distribution) -> bool:
    """A dist-info renamed '~name' by an interrupted pip run: pip ignores it, so do we."""
    return os.path.basename(d.path).startswith("~")


#: Top-level names some wheels ship by mistake (a `tests` package) and that nothing imports: they
#: collide with nearly every project's own tests/ or docs/ directory, so they are not reported.
GENERIC_NAMES = frozenset({"tests", "test", "docs", "doc", "examples", "benchmarks"})


def importable(name: str) -> bool:
    """A top-level name worth reporting: an identifier, not a setuptools editable finder, not generic."""
    return name.isidentifier() and not name.startswith("__editable__") and name not in GENERIC_NAMES


def specs(t: TargetFacts) -> dict[str, Mapping[str, Any]]:
    """find_spec answers of the probe: the key modules plus the names worth asking about."""
    out = dict(t.raw.get("top_level_specs") or {})
    out.update(t.find_spec)
    return out


def editable_source(d: Distribution) -> Optional[str]:
    """The source tree of an editable install (direct_url.json, PEP 610), or None."""
    if not d.editable or not d.direct_url or not d.direct_url.startswith("file:"):
        return None
    return unquote(urlparse(d.direct_url).path) or None


def provider_dirs(spec: Mapping[str, Any]) -> list[str]:
    """The sys.path directories a found module was loaded from (its package's parent)."""
    out = []
    origin = spec.get("origin")
    if origin and os.path.isabs(origin):
        parent = os.path.dirname(origin)
        out.append(os.path.dirname(parent) if os.path.basename(origin).startswith("__init__.") else parent)
    for loc in spec.get("locations") or []:
        out.append(os.path.dirname(loc.rstrip(os.sep)))
    return out


def owns(d: Distribution, spec: Mapping[str, Any]) -> bool:
    """True when the found module lives where distribution ``d`` put it."""
    dirs = {real(p) for p in provider_dirs(spec)}
    if real(d.location) in dirs:
        return True
    src = editable_source(d)
    files = [spec.get("origin") or ""] + list(spec.get("locations") or [])
    return bool(src) and any(f and under(f, src) for f in files)


def module_file(spec: Mapping[str, Any]) -> Optional[str]:
    origin = spec.get("origin")
    if origin and os.path.isabs(origin):
        return os.path.dirname(origin) if os.path.basename(origin).startswith("__init__.") else origin
    locs = spec.get("locations") or []
    return locs[0] if locs else None


# -- where a copy lives, and who can remove it -----------------------------------------------
def user_site(t: TargetFacts) -> Optional[str]:
    us = t.user_site
    return us.get("path") if us.get("enabled") else None


def pythonpath(t: TargetFacts) -> list[str]:
    return [e for e in (t.env.get("PYTHONPATH") or "").split(os.pathsep) if e]


def pth_adding(t: TargetFacts, directory: str) -> Optional[str]:
    """The .pth file that put ``directory`` on sys.path, if one did."""
    for pth in t.pth_files:
        for line in pth.get("lines") or []:
            if line.get("kind") == "path" and real(line.get("resolved", "")) == real(directory):
                return pth["path"]
    return None


def where(t: TargetFacts, location: str) -> str:
    """A few words saying which kind of place a sys.path directory is."""
    if t.raw.get("cwd") and real(location) == real(t.raw["cwd"]):
        return "the current (project) directory"
    if user_site(t) and real(location) == real(user_site(t) or ""):
        return "the user site (pip install --user)"
    if any(real(location) == real(p) for p in pythonpath(t)):
        return "a PYTHONPATH directory"
    pth = pth_adding(t, location)
    if pth:
        return f"a directory added by {pth}"
    if under(location, t.prefix):
        return "this environment"
    return "outside this environment"


def in_env(t: TargetFacts, location: str) -> bool:
    return under(location, t.prefix)


def pip_can_remove(t: TargetFacts, location: str) -> bool:
    # pip's is_local(): inside a virtualenv pip only removes files under sys.prefix and logs
    # "Not uninstalling X at P, outside environment E" otherwise (pypa/pip
    # src/pip/_internal/req/req_uninstall.py UninstallPathSet.from_dist, utils/misc.py is_local)
    return not t.in_venv or in_env(t, location)


def base_python(t: TargetFacts) -> Optional[str]:
    """The interpreter a venv was made from (it owns the user site of this Python version)."""
    major_minor = ".".join(t.python_version.split(".")[:2])
    for name in (f"python{major_minor}", "python3", "python"):
        cand = os.path.join(t.base_prefix, "bin", name)
        if os.path.isfile(cand):
            return cand
    return None


_SITE_DIR = re.compile(r"^(?P<prefix>.+)/lib(?:64)?/python(?P<ver>\d+\.\d+)/(?:site|dist)-packages/?$")


def owner_python(t: TargetFacts, location: str) -> Optional[str]:
    """The interpreter whose pip manages ``location`` (None when no interpreter does)."""
    if in_env(t, location):
        return t.python_cmd()
    us = user_site(t)
    if us and real(location) == real(us):
        return base_python(t) if t.in_venv else t.python_cmd()
    m = _SITE_DIR.match(location)
    if m:
        for name in (f"python{m['ver']}", "python3", "python"):
            cand = os.path.join(m["prefix"], "bin", name)
            if os.path.isfile(cand):
                return cand
    return None


def installed_paths(d: Distribution) -> list[str]:
    """The dist-info directory and the top-level modules of a copy that exist on disk."""
    out = [d.path]
    for name in d.top_level or []:
        for cand in (os.path.join(d.location, name), os.path.join(d.location, name + ".py")):
            if os.path.exists(cand):
                out.append(cand)
    return out


def rm_command(paths: Iterable[str]) -> str:
    """An `rm -rf` for the user to run (msdoctor never deletes anything itself)."""
    return "rm -rf " + " ".join(q(p) for p in paths)


def removal_fix(t: TargetFacts, d: Distribution, first_in_view: bool) -> str:
    """The command that removes copy ``d``, for the interpreter that manages it.

    first_in_view: ``d`` is the first copy of its project on the target's sys.path
    (pip acts on the first copy it finds; pypa/pip metadata/importlib/_envs.py).
    """
    loc = d.location
    if any(real(loc) == real(p) for p in pythonpath(t)):
        return f"remove {loc} from PYTHONPATH, or delete this copy: {rm_command(installed_paths(d))}"
    us = user_site(t)
    owner = owner_python(t, loc)
    if us and real(loc) == real(us) and owner:
        env = f"PYTHONUSERBASE={q(t.env['PYTHONUSERBASE'])} " if t.env.get("PYTHONUSERBASE") else ""
        return f"{env}{owner} -m pip uninstall -y {d.name}"
    if owner and (owner != t.python_cmd() or (first_in_view and pip_can_remove(t, loc))):
        uninstall = f"{owner} -m pip uninstall -y {d.name}"
    else:
        uninstall = rm_command(installed_paths(d))
    pth = pth_adding(t, loc)
    if pth:
        return f"delete the line naming {loc} from {pth} (it adds that directory here), or remove that copy: {uninstall}"
    cfg = t.raw.get("pyvenv_cfg") or {}
    if t.in_venv and under(loc, t.base_prefix) and str(cfg.get("include-system-site-packages")).lower() == "true":
        return (f"set include-system-site-packages = false in {os.path.join(t.prefix, 'pyvenv.cfg')} (the venv "
                f"then stops seeing the base interpreter's packages), or remove the base copy: {uninstall}")
    return uninstall


def reinstall(t: TargetFacts, d: Distribution) -> str:
    py = owner_python(t, d.location) or t.python_cmd()
    pin = f"=={d.version}" if d.version else ""
    return f"{py} -m pip install --force-reinstall --no-deps {d.name}{pin}"


# -- RECORD ----------------------------------------------------------------------------------
class Records:
    """RECORD files, each read once per run. The check reads them itself: mindspore's is 1.7 MB."""

    def __init__(self) -> None:
        self._text: dict[str, Optional[str]] = {}

    def text(self, d: Distribution) -> Optional[str]:
        if d.path not in self._text:
            try:
                with open(os.path.join(d.path, "RECORD"), encoding="utf-8", errors="replace") as f:
                    self._text[d.path] = f.read()
            except OSError:
                self._text[d.path] = None
        return self._text[d.path]

    def rows(self, d: Distribution) -> list[tuple[str, str]]:
        """(path, hash) of every RECORD line (csv only when a path is quoted: the fast path otherwise)."""
        text = self.text(d)
        if not text:
            return []
        lines: Iterable[list[str]] = (
            csv.reader(io.StringIO(text)) if '"' in text else (ln.rsplit(",", 2) for ln in text.splitlines())
        )
        return [(r[0], r[1] if len(r) > 1 else "") for r in lines if r and r[0]]

    def top_files(self, d: Distribution) -> set[str]:
        """RECORD paths at the top of the directory (modules, .pth files) and packages' __init__.py."""
        return set(_TOP.findall(self.text(d) or ""))

    def sample(self, d: Distribution) -> list[str]:
        """The files that matter: top-level modules, packages' __init__.py and .pth files; for the
        stack, the __init__.py of each package and subpackage (mindspore/nn/__init__.py), every
        native library (mindspore/lib/*.so) and console script too.

        Found with str.find over the RECORD text, not by parsing every line: mindspore's RECORD
        has 14,000 lines and this runs on every `msdoctor check`.
        """
        text = self.text(d)
        if not text:
            return []
        text = "\n" + text
        if is_stack(d.name):
            found = [p for needle in ("/__init__.py,", ".so", ".pyd,", "\n../") for p in _paths_with(text, needle)]
            paths = [p for p in found if (p.endswith("/__init__.py") and p.count("/") <= 2)
                     or _NATIVE.search(p) or "/bin/" in p]
        else:
            needles = ["/__init__.py,", ".pth,"] + ["\n" + n + "." for n in d.top_level or [] if importable(n)]
            paths = [p for needle in needles for p in _paths_with(text, needle) if p.count("/") <= 1]
        keep = [p for p in paths if "__pycache__" not in p and not p.endswith(".pyc") and ".dist-info/" not in p]
        return sorted(set(keep))

    def missing(self, d: Distribution) -> tuple[list[str], int]:
        """(sampled files listed in RECORD but absent, number of files checked).

        The stack's RECORD is always read. Other projects are first checked by a stat of each
        top-level package's __init__.py (or module); their RECORD is read only when one is absent,
        so a healthy 300-package environment costs a few hundred stats, not 300 file reads.
        """
        if not is_stack(d.name):
            names = [n for n in d.top_level or [] if importable(n)]
            if all(os.path.exists(os.path.join(d.location, n, "__init__.py"))
                   or os.path.exists(os.path.join(d.location, n + ".py")) for n in names):
                return [], len(names)
        sample = self.sample(d)
        gone = [p for p in sample if not os.path.exists(os.path.join(d.location, p))]
        return gone, len(sample)

    def owned(self, d: Distribution, name: str) -> set[str]:
        """Files of import package ``name`` that RECORD of ``d`` lists (no bytecode)."""
        pre = name + "/"
        return {p for p, _ in self.rows(d)
                if (p.startswith(pre) or p.split(".", 1)[0] == name) and "__pycache__" not in p
                and not p.endswith(".pyc")}


def _paths_with(text: str, needle: str) -> Iterator[str]:
    """The RECORD paths (a line's first CSV field) containing ``needle``; text starts with a newline."""
    i = text.find(needle)
    while i >= 0:
        start = i + 1 if needle.startswith("\n") else text.rfind("\n", 0, i) + 1
        end = text.find(",", start)
        inside = end == i + len(needle) - 1 if needle.endswith(",") else end >= i + len(needle)
        if inside:
            yield text[start:end]
        i = text.find(needle, i + 1)


def file_hash(path: str) -> Optional[str]:
    """A file's hash in RECORD's notation (sha256=urlsafe-b64, no padding; PEP 376/627)."""
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).digest()
    except OSError:
        return None
    return "sha256=" + base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
