"""General rules over the structure of a traceback and the owners of its frames.

A catalogue entry with ``lookup = "import"`` or ``lookup = "pairing"`` matches only the final exception line; the
rule here reads the frames printed before it (``File "PATH", line N, in F``), decides who owns the file that raised
(:func:`msdoctor.explain.owners.file_owner`) and answers from that structure:

- ``No module named M`` raised in a file of package P:
  - M's top-level package is another than P and M has no dot: M is a dependency of P that is not installed;
  - M is P's own compiled part (a component starting with ``_``: ``torch._C``, ``mindspore._c_expression``):
    when P's file lies outside site-packages in a directory named P (a source checkout), that source tree shadows
    the installed package; in site-packages, the install lacks its compiled part (a checkout's own plain module
    that is missing, ``pkg.decorators``, is neither: no claim);
- ``cannot import name N from M`` / ``module M has no attribute N`` raised in a file of package L, M another
  package: L and M are releases that do not pair.

Where the frames do not tell (no frame, the raising file is the user's own), the rule makes no claim: the match is
dropped. A rule's answer yields to any other entry that explains the same line.
"""

from __future__ import annotations

import re
import sys
from typing import Callable, Optional, Sequence

from msdoctor.explain.owners import (checkout_owner, distributions_of, file_owner, frame_owner,
                                     import_name_hint, known_package)

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


def import_groups(module: str, before: Sequence[str], after: Sequence[str] = ()) -> dict[str, str]:
    """Cause, fix and check for ``No module named MODULE``: a module a release removed, or one pip does not install
    (compat_matrix/modules.toml), else from the frames before it, else from two interpreters the paste shows
    (:func:`interpreters_groups`); empty: no claim."""
    found = (removed_groups("", module, before, after) or module_shipper_groups(module)
             or build_isolation_groups(module, before, after) or _import_frame_groups(module, before))
    return found or interpreters_groups(module, (*before, *after))


def _import_frame_groups(module: str, before: Sequence[str]) -> dict[str, str]:
    path = _raising_path(before)
    if path is None:
        return {}
    top = _top(module)
    private = any(part.startswith("_") for part in module.split(".")[1:])
    owner = file_owner(path)
    if private and (_checkout_of(path, top) or (owner is not None and owner.name == top)):
        where = "a source tree" if _checkout_of(path, top) else "an install"
        return {
            "_title": f"{top} was imported from {where} without its compiled part ({module})",
            "_cause": (f"{module} is {top}'s own compiled part, and the {top} that raised is {path}"
                       + (f", a directory named {top} outside site-packages: a source checkout (the current "
                          f"directory, or one on PYTHONPATH) shadows the installed {top}, and the checkout holds no "
                          f"built {module}." if where == "a source tree" else
                          ": that install lacks it (two distributions overwrote each other's files, or the wheel is "
                          "for another Python or platform).")),
            "_fix": (f"Start Python from another directory than the source tree, and remove it from PYTHONPATH; "
                     f"`{{python}} -c \"import importlib.util as u; print(u.find_spec('{top}').origin)\"` shows which "
                     f"{top} is imported. If that is site-packages, reinstall {top}: `{{python}} -m pip install "
                     f"--force-reinstall --no-deps {top}`. Unverified: confirm with `msdoctor check --only "
                     f"duplicate-installs` first."),
            "rule": "shadowed-install", "frame": path,
        }
    if owner is None or "." in module or owner.name.lower() == top.lower():
        return {}  # the user's own file, or a submodule (its package exists: a pairing, not a missing dependency)
    if top in getattr(sys, "stdlib_module_names", ()):
        return {}  # part of Python itself (https://docs.python.org/3/library/sys.html#sys.stdlib_module_names): no pip
    return {
        "_title": f"{owner.name} needs {module}, which is not installed in this environment",
        "_cause": (f"The import of {module} was made by {path} ({owner.name}: {owner.why}); {module} is a dependency "
                   f"of {owner.name} that is not installed in the environment that runs it (or is installed in "
                   f"another one)."),
        "_fix": (f"`{{python}} -m pip install {module}` (the distribution's name can differ from the module's: "
                 f"{import_name_hint()}). Unverified: "
                 f"`{{python}} -m pip check` lists the requirements of installed packages that are missing."),
        "rule": "missing-dependency", "frame": path,
    }


#: the file of the module named in ``cannot import name 'N' from 'M' (PATH)``
_FROM_PATH = re.compile(r"from '[\w.]+' \((?P<path>[^)]+)\)")
#: a per-user site-packages (https://docs.python.org/3/library/site.html#site.USER_SITE): ~/.local/lib/pythonX.Y/
#: site-packages on POSIX, %APPDATA%\Python\PythonXY\site-packages on Windows
_USER_SITE = re.compile(r"(?P<site>.*?[/\\]\.local[/\\]lib[/\\]python\d\.\d+[/\\]site-packages|"
                        r".*?[/\\]AppData[/\\]Roaming[/\\]Python[/\\]Python\d+[/\\]site-packages)[/\\]", re.I)


def user_site_groups(name: str, module: str, line: str) -> dict[str, str]:
    """``cannot import name N from M (PATH)`` where PATH lies in the per-user site-packages: the M imported is the copy
    ``pip install --user`` put there, which Python searches before the environment's own site-packages (outside a
    venv), and that copy has no N. Empty when the message names no such path."""
    f = _FROM_PATH.search(line)
    u = _USER_SITE.match(f.group("path")) if f else None
    if f is None or u is None:
        return {}
    top = _top(module)
    return {
        "_title": f"the {top} imported is the per-user copy in {u.group('site')}, a release without {name}",
        "_cause": (f"{module} was imported from {f.group('path')}, the per-user site-packages that `pip install --user` "
                   f"(or a pip run without a writable environment) fills; Python searches it before the environment's "
                   f"own site-packages, so that copy of {top} is the one used, and it has no {name}: it is another "
                   f"(most often an older) release than the code needs, and any {top} installed in the environment "
                   f"is hidden behind it."),
        "_fix": (f"Upgrade or remove the per-user copy: `{{python}} -m pip install --user -U {top}` (or `{{python}} -m "
                 f"pip uninstall {top}` until `{{python}} -m pip list --user` no longer shows it), or run with "
                 f"PYTHONNOUSERSITE=1 to ignore it. Unverified: `{{python}} -c \"import {top}; print({top}.__version__, "
                 f"{top}.__file__)\"` shows which copy and release is imported."),
        "rule": "user-site",
    }


def pairing_groups(name: str, module: str, before: Sequence[str], line: str = "",
                   after: Sequence[str] = ()) -> dict[str, str]:
    """Cause, fix and check for ``cannot import name NAME from MODULE`` / ``module MODULE has no attribute NAME``
    raised in a file of another package; empty: no claim."""
    if module and name and re.search(r"\(unknown location\)\s*$", line):
        return namespace_groups(name, module)
    if module and name and (removed := removed_groups(name, module, before, (line, *after))):
        return removed  # the data says which release removed it  # whoever imports it: the module found is no installed package
    path = _raising_path(before)
    if path is None or not module:
        if module and any(f"partially initialized module '{module}'" in x for x in (*before, *after)):
            return {}  # the paste shows that this M is being imported from elsewhere: the circular-import rule's
        return (user_site_groups(name, module, line) or variants_groups(module, (*before, line, *after))
                or missing_name_groups(name, module, line, None)) if module else {}
    owner = frame_owner(path)
    top = _top(module)
    if owner is None or owner.name.lower() in (top.lower(), "python"):
        return (user_site_groups(name, module, line) or variants_groups(module, (*before, line, *after))
                or (missing_name_groups(name, module, line, path) if owner is None else {}))
    lib = owner.name
    if name == "__version__" and module == top:
        # every release of a distributed package sets it; a module without it is not the installed package: a
        # directory named like it imported as a namespace package (https://peps.python.org/pep-0420/), which has no
        # __init__.py and so none of the package's attributes
        return {
            "_title": f"the {top} that {lib} imported is not the installed {top} package (it has no __version__)",
            "_cause": (f"{path} ({lib}: {owner.why}) reads {top}.__version__, which every release of {top} sets; the "
                       f"module Python imported as {top} has none, so it is not the installed package: most often a "
                       f"directory named {top} (a source checkout, or a folder in the current directory or on "
                       f"PYTHONPATH) imported as a namespace package, or an install of {top} left without its files."),
            "_fix": (f"`{{python}} -c \"import {top}; print(getattr({top}, '__file__', None), list({top}.__path__))\"` "
                     f"shows what was imported: start Python from another directory, drop that directory from "
                     f"PYTHONPATH, or build and install the checkout (`{{python}} -m pip install -e <checkout>`); if "
                     f"it points into site-packages, reinstall {top}. Unverified: `msdoctor check --only "
                     f"duplicate-installs` finds a shadowing copy."),
            "rule": "shadowed-install", "frame": path,
        }
    return {
        "_title": f"{lib} and {top} are releases that do not pair ({lib} uses {module}.{name})",
        "_cause": (f"{path} ({lib}: {owner.why}) uses {name} from {module}, and the installed {top} has no {name}: "
                   f"{lib} was written for another release of {top} (one that still has, or already has, {name}). "
                   f"{lib} and {top} are releases that do not pair."),
        "_fix": (f"Install the {lib} release made for the installed {top}, or the {top} release {lib} was written for "
                 f"(its requirements: `{{python}} -m pip show {lib} {top}`). Unverified: compare the two releases "
                 f"first; `msdoctor check --only version-matrix` names the pairing msdoctor's compat data has for "
                 f"MindSpore, mindnlp, mindformers and transformers."),
        "rule": "release-pairing", "frame": path,
    }


def missing_name_groups(name: str, module: str, line: str, caller: Optional[str]) -> dict[str, str]:
    """``cannot import name N from M`` / ``module M has no attribute N`` where no package's frame shows who uses N (no
    frame, or the user's own file): the fact is that the M imported has no N; which release of M the code expects,
    and whether M is the installed package at all, the paste does not tell. Said as that, and how to tell, for a
    package module (a dotted M, or an M whose path lies in site-packages); no claim for a plain module name found
    elsewhere (it may be the user's own file), for a module that is being imported (a circular import: another
    rule), or where MindSpore's family has its own entry (api-skew)."""
    if not name or name == "__version__" or "partially initialized" in line:
        return {}
    from_path = _FROM_PATH.search(line)  # `from 'M' (PATH)`: where Python found M
    where = from_path.group("path").strip() if from_path else ""
    if where == "unknown location":
        return namespace_groups(name, module)
    in_site = bool(where) and bool(_SITE.search(where))
    if where and not in_site:
        return {}  # found outside site-packages: the user's own module or a checkout, another reading
    if "." not in module and not in_site and known_package(module) is None:
        return {}  # a plain name that is not a well-known package may be the user's own module
    if _specific_entry_explains(line):
        return {}
    top = _top(module)
    used = (f"Your code ({caller}) uses {module}.{name}" if caller
            else f"The code that uses {module}.{name} (its frame is not in the paste) needs it")
    return {
        "_title": f"the installed {top} has no {module}.{name}: the code expects another {top} release",
        "_cause": (f"{used}, and the {module} that Python imported has no {name}. An installed package gains and loses "
                   f"names between releases (added in a later one, renamed or removed in another), so the code was "
                   f"written for another release of {top} than the one installed: the two do not pair. (If {top} is "
                   f"not the installed package at all, a directory or file of that name first on sys.path, "
                   f"`{top}.__file__` shows it.)"),
        "_fix": (f"`{{python}} -c \"import {top}; print({top}.__file__, getattr({top}, '__version__', None))\"` shows "
                 f"which copy and release is imported; then install the {top} release that has {module}.{name} (the "
                 f"one the code or the package importing it requires: `{{python}} -m pip check` and `{{python}} -m pip "
                 f"show {top}`), or change the code to the name the installed release has. Unverified: msdoctor did "
                 f"not read either release."),
        "rule": "name-missing",
    }


def namespace_groups(name: str, module: str) -> dict[str, str]:
    """``cannot import name N from M (unknown location)``: Python says "unknown location" for a module without a file,
    a namespace package (https://peps.python.org/pep-0420/): a directory named M with no __init__.py on sys.path. The
    installed package has an __init__.py, so the M imported is not it: a checkout or folder of that name in the current
    directory or on PYTHONPATH, or a site-packages/M directory left behind by an uninstall or a broken install."""
    top = _top(module)
    return {
        "_title": f"the {top} that was imported is not the installed {top} package (a directory without __init__.py)",
        "_cause": (f"Python found {module} at an unknown location: it imported a directory named {top} that has no "
                   f"__init__.py as a namespace package, and such a directory has none of the package's names, so "
                   f"{name} cannot be imported from it. The installed {top} has an __init__.py; the directory taken "
                   f"instead is a folder or source checkout named {top} in the current directory or on PYTHONPATH, "
                   f"or a site-packages/{top} left behind by an uninstall or a broken install (no {top} installed at "
                   f"all)."),
        "_fix": (f"`{{python}} -c \"import {top}; print(list({top}.__path__))\"` shows the directory: start Python "
                 f"elsewhere or drop it from PYTHONPATH; if it is site-packages/{top}, remove it (`{{python}} -m pip "
                 f"uninstall {top}`, then delete what is left) and install {top} again if the code needs it. "
                 f"Unverified: `msdoctor check --only duplicate-installs` finds a shadowing copy."),
        "rule": "namespace-package",
    }


def _specific_entry_explains(line: str) -> bool:
    """Whether the catalogue has a generic entry of its own for this line's family (MindSpore's api-skew, which knows
    which releases added and dropped its names): that text is better than this rule's."""
    from msdoctor.explain.catalogue import load_catalogue

    return any(e.id == "api-skew" and e.pattern.search(line) for e in load_catalogue())


# -- pip: a wheel's tags against the interpreter ------------------------------------------------------------------
#: a wheel file name: name-version(-build)?-python-abi-platform.whl (https://packaging.python.org/en/latest/
#: specifications/binary-distribution-format/#file-name-convention); the platform tag may be a dotted set
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(?:-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
_CPY = re.compile(r"^cp(?P<major>\d)(?P<minor>\d+)$")
_MANYLINUX = re.compile(r"^manylinux_(?P<maj>\d+)_(?P<min>\d+)_(?P<arch>\w+)$")
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
#: the Python version the paste states (`python version is 3.7.7`, `Python 3.10`, `pip3.10 install`)
_STATED_PY = re.compile(r"\bpython(?: version)?(?: is|:)? ?(?P<v>3\.\d+)(?:\.\d+)?\b|\bpip(?P<p>3\.\d+) install", re.I)


#: a macOS platform tag names the oldest macOS the wheel runs on and the machine it is built for
#: (https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/#macos)
_MACOSX = re.compile(r"^macosx_(?P<maj>\d+)_(?P<min>\d+)_(?P<arch>\w+)$")
_MAC_MACHINES = {"arm64": "an Apple silicon Mac (arm64)", "x86_64": "an Intel Mac (x86_64)",
                 "universal2": "an Intel or Apple silicon Mac (universal2)", "intel": "an Intel Mac"}


def _platform(tag: str) -> tuple[str, str]:
    """(operating system, machine) a platform tag stands for; what pip needs for it."""
    need = ""
    m = _MANYLINUX.match(tag)
    if m:
        need = f"glibc {m.group('maj')}.{m.group('min')} or newer and pip 20.3 or newer"
        return f"Linux {m.group('arch')} ({need})", m.group("arch")
    for legacy, glibc in _LEGACY_MANYLINUX.items():
        if tag.startswith(legacy + "_"):
            arch = tag[len(legacy) + 1:]
            return f"Linux {arch} (glibc {glibc} or newer)", arch
    if tag.startswith("linux_"):
        return f"Linux {tag[6:]}", tag[6:]
    if tag.startswith("win"):
        return f"Windows ({tag})", tag
    mac = _MACOSX.match(tag)
    if mac:
        arch = mac.group("arch")
        machine = _MAC_MACHINES.get(arch, arch)
        return f"macOS {mac.group('maj')}.{mac.group('min')} or later on {machine} ({tag})", arch
    if tag.startswith("macosx"):
        return f"macOS ({tag})", tag
    return tag, tag


def wheel_groups(wheel: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for ``WHEEL is not a supported wheel on this platform`` from the wheel's own tags; empty
    when the file name is not a wheel name."""
    m = _WHEEL.match(wheel.rsplit("/", 1)[-1].rsplit("\\", 1)[-1])
    if m is None:
        return {}
    py, plat = m.group("py"), m.group("plat")
    cp = _CPY.match(py)
    python = f"CPython {cp.group('major')}.{cp.group('minor')}" if cp else (
        "any Python 3" if py.startswith("py3") else py)
    by_arch: dict[str, str] = {}
    for tag in plat.split("."):  # a compressed tag set: per machine, the least demanding tag (legacy manylinux)
        desc, arch = _platform(tag)
        if arch not in by_arch or "pip 20.3" in by_arch[arch]:
            by_arch[arch] = desc
    platforms = sorted(by_arch.values()) if plat != "any" else ["any platform"]
    stated = None
    for line in context:
        s = _STATED_PY.search(line)
        if s:
            stated = s.group("v") or s.group("p")
    mismatch = ""
    abi = m.group("abi")
    if cp and abi == f"{py}m" and (int(cp.group("major")), int(cp.group("minor"))) >= (3, 8):
        # CPython 3.8 dropped the "m" (pymalloc) ABI flag: its interpreters' ABI tag is cp38, never cp38m
        # (https://docs.python.org/3/whatsnew/3.8.html#build-and-c-api-changes)
        return {
            "_title": f"pip refused {wheel}: its ABI tag {abi} matches no CPython {cp.group('major')}."
                      f"{cp.group('minor')}",
            "_cause": (f"The wheel's file name says ABI {abi}, but CPython 3.8 and later have no 'm' ABI flag: a "
                       f"CPython {cp.group('major')}.{cp.group('minor')} interpreter accepts {py}-{py} (or abi3), "
                       f"never {py}-{abi}. The file was built or renamed with a wrong tag, so no interpreter installs "
                       f"it, whichever Python or machine runs pip."),
            "_fix": (f"Get a correctly tagged {m.group('name')} wheel for CPython {cp.group('major')}."
                     f"{cp.group('minor')} on {', '.join(platforms)} (or rebuild it). If the build itself is right "
                     f"and only the name is wrong, renaming the file to the interpreter's tags "
                     f"({py}-{py} or {py}-none) lets pip install it; "
                     f"`{{python}} -m pip debug --verbose` lists the tags this interpreter accepts. Unverified: "
                     f"msdoctor did not read the wheel's WHEEL metadata."),
            "rule": "wheel-tags",
        }
    if cp and stated and stated != f"{cp.group('major')}.{cp.group('minor')}":
        mismatch = (f" The paste shows Python {stated}: the Python tag ({py}) is the mismatch.")
    elif cp and stated:
        mismatch = (f" The paste shows Python {stated}, which the Python tag fits: the platform tag is the mismatch "
                    f"(another OS or machine than {', '.join(platforms)}, e.g. an aarch64 server, Windows or "
                    f"macOS, or a pip that is not the Linux one).")
    if any(t.startswith("macosx_") for t in plat.split(".")) and not mismatch:
        mismatch = (" On macOS both halves of the platform tag count: a macOS older than the version the tag names "
                    "refuses the wheel, and so does a Mac of the other kind (an x86_64 wheel on an Apple silicon Mac "
                    "whose Python runs natively as arm64, or an arm64 one on an Intel Mac); `sw_vers` and `python -c "
                    "\"import platform; print(platform.mac_ver(), platform.machine())\"` show which.")
    return {
        "_title": f"pip refused {wheel}: it is built for {python} on {', '.join(platforms)}",
        "_cause": (f"A wheel's file name states where it installs: {py} (Python tag), {m.group('abi')} (ABI), {plat} "
                   f"(platform): {python} on {', '.join(platforms)}. pip installs it only into an interpreter whose "
                   f"own tags include all three; the pip that ran belongs to an interpreter that does not match."
                   + mismatch),
        "_fix": (f"Compare with the tags this interpreter accepts: `{{python}} -m pip debug --verbose`. Then install "
                 f"the {m.group('name')} wheel made for your Python and platform (for MindSpore, "
                 f"https://www.mindspore.cn/install lists them), or run pip with an interpreter that fits "
                 f"({python}): `<that python> -m pip install {wheel}`. Unverified: msdoctor did not read this "
                 f"interpreter's tags."),
        "rule": "wheel-tags",
    }


_FROM_VERSIONS = re.compile(r"\(from versions:? (?P<v>[^)]*)\)?")


#: a pinned version that names a build made for one index: a local version label (`+cpu`, `+cu121`: the index
#: server rejects those on upload, https://packaging.python.org/en/latest/specifications/version-specifiers/#local-
#: version-identifiers) or a development build dated by its nightly (`.dev20250619`)
_LOCAL_PIN_VERSION = re.compile(r"==\s*[\w.!]+\+(?P<label>[\w.]+)")
_NIGHTLY_PIN = re.compile(r"==\s*[\w.!]*?\.dev(?P<date>20\d{6})\b")


#: the indexes pip says it used (`Looking in indexes: A, B`, `Looking in links: URL`) or the command names
_LOOKING = re.compile(r"Looking in (?:indexes|links): (?P<urls>.+)$|(?:--extra-index-url|--index-url|--find-links|"
                      r"(?<!\S)-[if])[ =](?P<url>https?://\S+)", re.I)


def _extra_indexes(context: Sequence[str]) -> list[str]:
    """The indexes other than PyPI that the paste shows pip using."""
    found: list[str] = []
    for line in context:
        for m in _LOOKING.finditer(line):
            for url in re.split(r"[,\s]+", m.group("urls") or m.group("url") or ""):
                if url.startswith("http") and "pypi.org" not in url and url not in found:
                    found.append(url)
    return found


def _build_kind(req: str) -> str:
    """What kind of build a pinned requirement names, when it is one only its project's own index carries."""
    if (m := _LOCAL_PIN_VERSION.search(req)) is not None:
        return f"a local build variant (+{m.group('label')})"
    if (n := _NIGHTLY_PIN.search(req)) is not None:
        return f"a nightly development build (.dev{n.group('date')})"
    return ""


def distribution_groups(req: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for ``Could not find a version that satisfies the requirement REQ`` / ``No matching
    distribution found for REQ``, from the versions pip lists."""
    versions = None
    for line in context:
        f = _FROM_VERSIONS.search(line)
        if f:
            versions = [v.strip() for v in f.group("v").split(",") if v.strip() and v.strip() != "none"]
    name = re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0]
    if versions is None:
        listed = ""
    elif not versions:
        listed = (f" pip listed no version at all ('from versions: none'): the index it used has no file of {name} "
                  f"that installs here, for this Python version and platform, or does not carry {name} (a mirror "
                  f"or proxy that lacks it, or no network).")
    else:
        listed = (f" The index has {name} {versions[0]} to {versions[-1]} for this interpreter, but none that "
                  f"satisfies {req}: the version asked for is not built for this Python or platform, or not on "
                  f"this index.")
    build = _build_kind(req)
    extra = _extra_indexes(context)
    if build and extra:
        listed += (f" {req} asks for {build}, a build published on its project's own index, and the paste shows pip "
                   f"already looking there ({', '.join(extra)}): that index has no file of it for this interpreter "
                   f"(its Python version, its platform, a 32-bit or 64-bit build), or the version is not there.")
        build = ""
    elif build:
        listed += (f" {req} asks for {build}: such builds are most often published only on the project's own index or "
                   f"download server, not on PyPI (or the mirrors that copy it), so pip finds it only with that index "
                   f"configured (`--extra-index-url`, as the project's install guide gives) and reachable from "
                   f"this network (a proxy or an offline network that cannot reach it gives the same error).")
    return {
        "_title": f"pip found no installable {name} for {req} on this index",
        "_cause": (f"pip looks for a file of {name} on the index (or mirror) it is configured with that fits this "
                   f"interpreter's Python version and platform." + listed),
        "_fix": (f"`{{python}} -m pip index versions {name}` lists what this index has for this interpreter; "
                 f"`{{python}} -m pip config list` shows the index or mirror in use. Use a Python version and platform "
                 f"the release is built for, another index (the project's own, e.g. https://www.mindspore.cn/install "
                 f"for MindSpore), or a version the list holds."
                 + (f" For {build}: add the index the project's install guide names, and check that this network "
                    f"reaches it: `{{python}} -m pip download --no-deps \"{req}\" --extra-index-url <that index> -d "
                    f"/tmp/probe`." if build else "")
                 + " Unverified: msdoctor did not query the index."),
        "rule": "no-distribution",
    }



# -- pip: a package's Requires-Python --------------------------------------------------------------------------------
#: the operators that set a lowest Python (the interpreter is older than it) or a highest (newer than it)
_LOWER_OPS = frozenset({">=", ">", "~="})
_UPPER_OPS = frozenset({"<", "<="})


def requires_python_groups(pkg: str, have: str, spec: str) -> dict[str, str]:
    """Cause and fix for pip's ``Package 'P' requires a different Python: V not in 'SPEC'`` (its legacy resolver,
    src/pip/_internal/resolution/legacy/resolver.py, reading the distribution's Requires-Python metadata): the Python
    running pip, V, is outside SPEC, too old or too new. Empty (no claim) when SPEC or V do not parse, or V is in
    SPEC (the line is then not what pip prints)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        specs, version = SpecifierSet(spec), Version(have)
    except (InvalidSpecifier, InvalidVersion):
        return {}
    if specs.contains(version, prereleases=True):
        return {}
    failed = [s for s in specs if not s.contains(version, prereleases=True)]
    if failed and all(s.operator in _LOWER_OPS for s in failed):
        side = (f"Python {have} is older than the oldest Python {pkg} supports ({', '.join(map(str, failed))})")
    elif failed and all(s.operator in _UPPER_OPS for s in failed):
        side = (f"Python {have} is newer than the newest Python {pkg} supports ({', '.join(map(str, failed))})")
    else:
        side = f"Python {have} is outside that range"
    return {
        "_title": f"{pkg} requires Python {spec}; the pip that ran is Python {have}'s",
        "_cause": (f"{pkg}'s package metadata (Requires-Python) says {spec}, and pip checks it against the Python "
                   f"it runs with: {side}. Either that release of {pkg} does not support this Python, or the pip "
                   f"that ran belongs to another Python than the one meant (a second Python on PATH: `pip` of one, "
                   f"`python` of another)."),
        "_fix": (f"`{{python}} -m pip --version` shows which Python a pip belongs to; install with an interpreter "
                 f"inside {spec} (`<that python> -m pip install ...`, or a venv made from it), or pick a release of "
                 f"{pkg} whose Requires-Python admits Python {have} (`{{python}} -m pip index versions {pkg}` lists "
                 f"those this interpreter can install). Unverified: msdoctor did not read {pkg}'s other releases."),
        "rule": "requires-python",
    }

# -- pip: the resolver's conflict lines ---------------------------------------------------------------------------
#: the lines pip prints under "The conflict is caused by:" (pip's resolver, src/pip/_internal/resolution/resolvelib/
#: factory.py: "The user requested X" and "P V depends on X"); a log prefix (timestamp) may precede them
_USER_REQ = re.compile(r"The user request(?:ed)? (?P<req>\S.*?)\s*$")  # "request": as pasted by a user
_DEPENDS = re.compile(r"(?P<who>[A-Za-z0-9][\w.-]*(?:\[[^\]\s]*\])? [^\s]+) depends on (?P<req>\S.*?)\s*$")
#: a pin to a local version (PEP 440 `+label`: torch==2.1.0+cpu): only the index that publishes it has the file
_LOCAL_PIN = re.compile(r"(?P<name>[A-Za-z0-9][\w.-]*)==(?P<ver>[\w.]+\+(?P<label>\w+))")
_CONFLICT_END = re.compile(r"To fix this you could try|ResolutionImpossible|Additionally, some packages")


def conflict_groups(after: Sequence[str]) -> dict[str, str]:
    """Cause and fix for pip's ``The conflict is caused by:`` from the requirement lines after it; empty when no
    two requirements are listed."""
    reqs: list[str] = []
    for line in after:
        if _CONFLICT_END.search(line):
            break
        u, d = _USER_REQ.search(line), _DEPENDS.search(line)
        if u:
            reqs.append(f"you asked for {u.group('req')}")
        elif d:
            reqs.append(f"{d.group('who')} needs {d.group('req')}")
    if len(reqs) < 2:
        return {}
    both = "; ".join(reqs)
    local = next((m for r in reqs for m in [_LOCAL_PIN.search(r)] if m), None)
    index = ""
    if local is not None:
        index = (f" One of them pins {local.group('name')} {local.group('ver')}, a local version (+{local.group('label')}): "
                 f"PyPI does not carry local versions, only the index that builds them does (for torch, "
                 f"https://download.pytorch.org/whl/{local.group('label')}), so pip cannot find it unless that index "
                 f"is given (`--extra-index-url`).")
    return {
        "_title": f"pip cannot satisfy these requirements together: {both}",
        "_cause": (f"pip's resolver found no set of versions that meets every requirement at once. The requirements "
                   f"that conflict, as pip listed them: {both}. No release satisfies all of them, so one of them has "
                   f"to change." + index),
        "_fix": ("Change one side: relax or change your own pin so that it falls inside the range the other "
                 "package needs, or pick another release of the package that needs it (one whose requirement fits "
                 "your pin: `{python} -m pip index versions <package>`, and its requirements on PyPI). Then "
                 "rerun the install with `{python} -m pip install ...`. Unverified: msdoctor did not resolve the "
                 "new set; `{python} -m pip install --dry-run ...` does."),
        "rule": "pip-conflict",
    }


# -- a port already bound -----------------------------------------------------------------------------------------
#: where the paste names the port: host:port, [::]:port, ('0.0.0.0', port), "port N"
_PORT = re.compile(r"(?:[\w.\]]:|\(['\"][\d.:]*['\"], |\bport[= ]?)(?P<port>\d{2,5})\b", re.I)


def port_groups(context: Sequence[str], after: Sequence[str] = ()) -> dict[str, str]:
    """Cause and fix for ``Address already in use`` from the port the paste names (none named: the general text): the
    last one named up to the matched line (the last of ``context``). The lines after it tell only whose bind failed
    (MindSpore's scheduler logs its own lines after the socket's)."""
    port = None
    for line in context:
        for m in _PORT.finditer(line):
            if 0 < int(m.group("port")) < 65536:
                port = m.group("port")
    which = f"port {port}" if port else "the port it listens on"
    if any(_MS_SCHEDULER.search(line) for line in (*context, *after)):
        return _scheduler_port_groups(which, port)
    return {
        "_title": f"a process could not listen on {which}: another process holds it",
        "_cause": (f"Binding {which} failed because another process on this host already listens on it: a previous "
                   f"run whose workers have not exited yet (or were left behind by a crash), a second job started "
                   f"with the same master port (msrun's --master_port, 8118 by default; torchrun's 29500), or "
                   f"another service."),
        "_fix": ((f"`ss -ltnp | grep ':{port} '` (or `lsof -iTCP:{port} -sTCP:LISTEN`) shows the process that holds "
                  f"it: stop it if it is a leftover run, or start this job on a free port (msrun --master_port "
                  f"<free port>, torchrun --master_port <free port>).") if port else
                 ("`ss -ltnp` (or `lsof -iTCP -sTCP:LISTEN`) lists the listening processes: stop a leftover run, or "
                  "start this job on a free port (msrun --master_port <free port>, torchrun --master_port <free "
                  "port>).")) + " Unverified: msdoctor did not look at this host's sockets.",
        "rule": "port-bound",
    }


#: MindSpore's cluster scheduler (the meta server node of its dynamic cluster) and its TCP server, as its log names
#: them (mindspore/ccsrc/distributed/cluster/topology/meta_server_node.cc, distributed/rpc/tcp/tcp_comm.cc)
_MS_SCHEDULER = re.compile(r"meta_server_node\.cc|MetaServerNode|\bInitTCPServer\b|DISTRIBUTED\(.*tcp_comm\.cc")
#: the variables that make a MindSpore process a member of a dynamic cluster
#: (https://www.mindspore.cn/tutorials/en/r2.7.0/parallel/dynamic_cluster.html)
MS_CLUSTER_VARS = ("MS_ROLE", "MS_SCHED_HOST", "MS_SCHED_PORT", "MS_WORKER_NUM", "MS_NODE_ID")


def _scheduler_port_groups(which: str, port: Optional[str]) -> dict[str, str]:
    """The bind that failed is MindSpore's own scheduler (the meta server node that every worker registers with, on
    MS_SCHED_HOST:MS_SCHED_PORT): a second scheduler was started on a port one already holds."""
    names = " ".join(MS_CLUSTER_VARS)
    return {
        "_title": f"MindSpore's cluster scheduler could not listen on {which}: another scheduler holds it",
        "_cause": (f"The bind that failed is MindSpore's scheduler (the meta server of its dynamic cluster, which every "
                   f"worker registers with on MS_SCHED_HOST:MS_SCHED_PORT), so a second scheduler was started on "
                   f"{which}. Either the environment already carries MindSpore's cluster variables ({names}), set "
                   f"by a launcher (a Kubernetes MindSpore job, a cluster scheduler's template) that starts its own "
                   f"scheduler, while the script or msrun starts another on the same port; or a scheduler of an "
                   f"earlier run is still alive; or two jobs share one MS_SCHED_PORT / msrun --master_port."),
        "_fix": (f"`env | grep '^MS_'` in the job shows injected cluster variables: for a single-node job started with "
                 f"msrun, `unset {names}` before msrun (or at the top of the script, before MindSpore is imported); "
                 + (f"`ss -ltnp | grep ':{port} '` shows the process that holds the port (a leftover run: stop it); "
                    if port else "`ss -ltnp` shows the process that holds the port (a leftover run: stop it); ")
                 + "or start the job on a free port (msrun --master_port <free port>). Unverified: msdoctor did not "
                 "look at this job's environment or this host's sockets."),
        "rule": "scheduler-port",
    }


# -- NPU device nodes the process cannot open -------------------------------------------------------------------
#: `grep Cap /proc/N/status`: the effective capability set (all zero: even root has no CAP_DAC_OVERRIDE)
_CAP_EFF = re.compile(r"\bCapEff:\s*(?P<mask>[0-9a-fA-F]{8,16})\b")
#: `ls -l /dev/davinci*`: a character device's mode, owner and group, and its name
_DEV_NODE = re.compile(r"(?<![\w-])c(?P<mode>[rwx-]{9})\S*\s+\d+\s+(?P<user>\S+)\s+(?P<group>\S+)\s.*?"
                       r"(?P<node>/dev/(?:davinci\w*|devmm_svm|hisi_hdc))\b")
#: `id`: the process's uid
_ID = re.compile(r"\buid=(?P<uid>\d+)(?:\((?P<name>[^)]*)\))?")
_CAP_DAC_OVERRIDE = 1 << 1  # capability number 1 (linux/capability.h)


def device_access_groups(before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for a DCMI / device open failure when the lines before it show why the process cannot open the
    device nodes: nodes not readable by others, owned by another uid, and a process without CAP_DAC_OVERRIDE (all
    capabilities dropped, as container runtimes and Kubernetes securityContext can do). Empty when the paste does not
    show that evidence (the catalogue's general text stands)."""
    caps = None
    uid = None
    nodes: list[tuple[str, str, str, str]] = []
    for line in before:
        c = _CAP_EFF.search(line)
        if c:
            caps = int(c.group("mask"), 16)
        i = _ID.search(line)
        if i:
            uid = i.group("uid")
        d = _DEV_NODE.search(line)
        if d:
            nodes.append((d.group("node"), d.group("mode"), d.group("user"), d.group("group")))
    closed = [n for n in nodes if n[1][6:8] != "rw"]  # others may not read and write
    if not closed or caps is None or caps & _CAP_DAC_OVERRIDE:
        return {}
    owner = {f"{n[2]}:{n[3]}" for n in closed}
    names = ", ".join(n[0] for n in closed[:4]) + (", ..." if len(closed) > 4 else "")
    who = f"uid {uid}" if uid is not None else "the process"
    return {
        "_title": "the process cannot open the NPU device nodes: a permission failure, not a busy device",
        "_cause": (f"The paste shows the device nodes {names} with mode {closed[0][1]} owned by "
                   f"{', '.join(sorted(owner))}, and the process's effective capabilities are {caps:#x}: without "
                   f"CAP_DAC_OVERRIDE even root cannot open a file it does not own, so {who} cannot open the devices "
                   f"and DCMI (npu-smi, the runtime) reports that it could not initialise. The devices were passed "
                   f"in; the process is not allowed to use them."),
        "_fix": (f"Run the process as the devices' owner or group (`docker run --user {next(iter(owner))}` or "
                 "`--group-add` that group; Kubernetes securityContext runAsUser/runAsGroup/supplementalGroups), or "
                 "give back only CAP_DAC_OVERRIDE (`docker run --cap-add DAC_OVERRIDE`; securityContext.capabilities."
                 "add: [\"DAC_OVERRIDE\"]). Check in the container: `ls -l /dev/davinci*` and `grep CapEff "
                 "/proc/self/status`. Unverified: msdoctor read only the lines pasted."),
        "rule": "device-permission",
    }


# -- a keyword a library's function does not take, passed by another package ----------------------------------------
def keyword_groups(func: str, keyword: str, before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for a keyword argument the called library rejects (``For 'context.set_context', the keyword
    argument jit_config is not recognized``), from the frames: the raising frame's package M and the last frame before
    it that another package L owns. L passes a keyword that the installed M does not know: L and M are releases that
    do not pair. Empty (no claim) when either owner is unknown (the caller is the user's own code: no claim either)."""
    paths = [p for p in frames(before) if not _MACHINERY.search(p)]
    if not paths:
        return {}
    callee = frame_owner(paths[-1])
    if callee is None:
        return {}
    for caller_path in reversed(paths[:-1]):  # out of the library's own frames, to the frame that called it
        caller = frame_owner(caller_path)
        if caller is None:
            return {}  # the user's own frame called the library: whose release the code expects is not known
        if caller.name.lower() != callee.name.lower():
            break
    else:
        return {}
    lib, top = caller.name, callee.name
    return {
        "_title": f"{lib} and {top} are releases that do not pair ({lib} passes {keyword} to {top}'s {func})",
        "_cause": (f"{caller_path} ({lib}: {caller.why}) calls {func} with the keyword {keyword}, and the installed "
                   f"{top} ({paths[-1]}) does not know it: {lib} was written for another release of {top} (one that "
                   f"has, or still has, {keyword}). {lib} and {top} are releases that do not pair."),
        "_fix": (f"Install the {top} release {lib} was written for, or the {lib} release (a branch or tag) made for the "
                 f"installed {top}; {lib}'s README or installation page names the pairing (`{{python}} -m pip show "
                 f"{top}` gives the installed version). Unverified: msdoctor did not compare the two releases; "
                 f"`msdoctor check --only version-matrix` names the pairings its compat data has."),
        "rule": "release-pairing", "frame": caller_path,
    }


# -- a runtime library too old: whose copy was loaded -------------------------------------------------------------
#: the system's own library directories (the dynamic loader's defaults and the Debian multiarch ones)
_SYSTEM_LIB = re.compile(r"^/(?:usr/)?lib(?:64|32)?/(?:[\w-]+-linux-gnu\w*/)?[^/]+$")
#: an environment's prefix and its lib directory: a conda env (`.../envs/NAME/lib/`, a base install's `lib/`), a venv
_ENV_LIB = re.compile(r"^(?P<prefix>.*?(?:[/\\]envs[/\\][^/\\]+|[/\\](?:ana|mini)conda\d*|[/\\]mini(?:forge|mamba)\d*|"
                      r"[/\\]mambaforge))[/\\]lib[/\\][^/\\]+$")


def runtime_groups(lib: str, what: str, version: str) -> dict[str, str]:
    """Cause and fix for ``LIB: version `GLIBCXX_3.4.29' not found`` when LIB, the copy the loader took, is not the
    system's: an environment's own (older) libstdc++ / libgcc found first (conda's interpreter finds its env's lib/
    before the system's), or one bundled inside a package. Empty when LIB is the system's or not named (the general
    text, the system's library is too old, stands)."""
    if lib and "\\" not in lib:
        import posixpath

        lib = posixpath.normpath(lib)  # `.../anaconda3/bin/../lib/libstdc++.so.6` is the base env's lib/
    if not lib or not re.search(r"[/\\]", lib):  # no copy named, or only its file name: which one, not shown
        return _unnamed_runtime_groups(what, version)
    if _SYSTEM_LIB.match(lib):
        return {}
    site = file_owner(lib)
    env = _ENV_LIB.match(lib)
    if site is not None and site.name not in ("CANN", "NNAL", "the Ascend driver"):
        whose, why = f"a copy bundled inside the {site.name} package ({site.why})", (
            f"{site.name} ships its own {lib.rsplit('/', 1)[-1]}, which the loader takes before the system's")
        fix = (f"Install a build of {site.name} that does not bundle an older {lib.rsplit('/', 1)[-1]} (another "
               f"release, or its manylinux wheel), or one made for this system")
    elif env is not None:
        prefix = env.group("prefix")
        whose, why = f"the environment's own copy (under {prefix})", (
            f"the environment at {prefix} has its own {lib.rsplit('/', 1)[-1]} in {prefix}/lib, which its "
            f"interpreter loads before the system's (the system one may well have {what}_{version})")
        fix = (f"Put a new enough one in the environment: `conda install -n <env> -c conda-forge libstdcxx-ng "
               f"libgcc-ng` (or `conda update libstdcxx-ng`), or, if the system's has {what}_{version} (`strings "
               f"/usr/lib/x86_64-linux-gnu/libstdc++.so.6 | grep {what}_{version}`), point {lib} at it (keep a copy "
               f"of the old file)")
    else:
        return {}
    return {
        "_title": f"the {lib.rsplit('/', 1)[-1]} that was loaded, {whose}, lacks {what}_{version}",
        "_cause": (f"A compiled library needs {what}_{version}, and the copy of {lib.rsplit('/', 1)[-1]} the loader "
                   f"took is {lib}: {why}. That copy is older than the one the library was built against; the "
                   f"system's own copy is not the one in question."),
        "_fix": (fix + f". Check: `strings {lib} | grep {what}_` lists the versions that copy has. Unverified: msdoctor "
                 f"did not read the files."),
        "rule": "runtime-copy",
    }


def _unnamed_runtime_groups(what: str, version: str) -> dict[str, str]:
    """``version `GLIBCXX_3.4.30' not found`` with no library named before it: the C++ runtime the loader took lacks
    the version, but which copy it took the paste does not show. A conda environment ships its own libstdc++ in its
    lib/, which its interpreter loads before the system's and which can be the older of the two, so "the system's is
    too old" is not known here; say what is known and how to tell the copies apart. glibc itself (GLIBC_*) is always the
    system's: the general text stands."""
    if what not in ("GLIBCXX", "CXXABI"):
        return {}
    need = f"{what}_{version}"
    return {
        "_title": f"the libstdc++.so.6 that was loaded lacks {need} (the paste does not show which copy)",
        "_cause": (f"A compiled library needs {need} from the C++ runtime (libstdc++), and the copy of libstdc++.so.6 "
                   f"the loader took does not have it. The paste does not name that copy: it is either the system's "
                   f"(too old for a library built on a newer Linux or with a newer gcc) or, in a conda environment, the "
                   f"environment's own lib/libstdc++.so.6, which its interpreter loads before the system's and which "
                   f"can be older than the system's."),
        "_fix": (f"The full error line names the copy (`PATH/libstdc++.so.6: version `{need}' not found`). Compare "
                 f"the candidates: `strings $CONDA_PREFIX/lib/libstdc++.so.6 | grep {need}` and `strings "
                 f"/usr/lib/x86_64-linux-gnu/libstdc++.so.6 | grep {need}` (/usr/lib64 on RHEL-like systems). Then "
                 f"put a new enough one first: in a conda env `conda install -c conda-forge libstdcxx-ng`, or point "
                 f"the env's lib/libstdc++.so.6 at the system's if that one has {need} (keep a copy); if neither has "
                 f"it, install a build of the library made for this system. Unverified: msdoctor did not read the "
                 f"files."),
        "rule": "runtime-unnamed",
    }


# -- NumPy's C API could not be loaded --------------------------------------------------------------------------
#: what says NumPy 2 is the one installed: its own banner about modules built for 1.x, its 2.x-only symbol, a 2.x
#: version printed
_NUMPY2 = re.compile(r"compiled using NumPy 1\.x|NumPy 2\.\d|_ARRAY_API not found|numpy[ =_-]*2\.\d+\.\d+", re.I)
_MULTIARRAY = re.compile(r"numpy\.core\.multiarray failed to import", re.I)


def numpy_groups(line: str, context: Sequence[str]) -> dict[str, str]:
    """``numpy.core.multiarray failed to import`` is what a compiled module says when it cannot load NumPy's C API.
    With NumPy 2 it is the ABI break (its banner, ``_ARRAY_API not found`` or a 2.x version say so: the general text
    stands); without any sign of NumPy 2 in the paste the C API is missing for another reason (NumPy not installed in
    this environment, a broken or partial install, or a NumPy older than the module was built for), and the general
    "NumPy 2 is installed" is not known: say what is."""
    if not _MULTIARRAY.search(line) or any(_NUMPY2.search(x) for x in (line, *context)):
        return {}
    return {
        "_title": "a compiled module could not load NumPy's C API (numpy.core.multiarray)",
        "_cause": ("A compiled extension imports NumPy's C API when it loads, and that import failed. The paste shows "
                   "no NumPy 2 (whose ABI break gives the same line with its own banner): NumPy is not installed in "
                   "the environment that runs the code, its install is broken or partial, or it is another release "
                   "than the one the module was built against."),
        "_fix": ("`{python} -m pip show numpy` shows whether and which NumPy is installed in this environment: install "
                 "it if missing (`{python} -m pip install numpy`; for MindSpore <= 2.9 and CANN's TBE stack "
                 "`\"numpy<2\"`), or reinstall it (`{python} -m pip install --force-reinstall numpy==<version>`) "
                 "when `{python} -c \"import numpy\"` fails too. Unverified: msdoctor did not read the environment."),
        "rule": "numpy-missing",
    }


# -- pip: a package built from source because no wheel fits -------------------------------------------------------
#: the package whose build pip reports (when the matched line names only the compiler)
_BUILDING = re.compile(r"(?:Building|build) wheels? for (?P<pkg>[A-Za-z0-9][\w.-]*)\b", re.I)
#: setuptools' build directory names the platform and the interpreter: build/lib.macosx-12-arm64-cpython-39,
#: build/temp.linux-aarch64-cpython-312, build/lib.win-amd64-3.8 (older setuptools)
_BUILD_DIR = re.compile(r"build[/\\](?:lib|temp)\.(?P<plat>[\w.-]+?)-(?:cpython-(?P<cp>\d)(?P<cpm>\d+)|(?P<v>\d\.\d+))\b")
#: what the build lacked, as compilers and build back-ends say it
_TOOLCHAIN = (
    (re.compile(r"Microsoft Visual C\+\+ [\d.]+ or greater is required", re.I),
     "the Microsoft C++ Build Tools (a C/C++ compiler for Windows)"),
    (re.compile(r"can't find Rust compiler|\bcargo\b.*not found|setuptools[-_]rust|\bmaturin\b", re.I),
     "a Rust toolchain (rustup, https://rustup.rs)"),
    (re.compile(r"Python\.h: No such file", re.I), "the Python headers (the python3-dev / python3-devel package)"),
    (re.compile(r"(?:gcc|cc|g\+\+|c\+\+)['\"]? (?:failed|: command not found)|command '(?:gcc|cc|g\+\+)' failed|"
                r"unable to execute '(?:gcc|cc)'", re.I), "a C/C++ compiler (gcc/g++)"),
)


def build_groups(pkg: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for pip's failed build of a package from its source distribution. pip builds from source only
    when no wheel of the chosen release on the index fits this interpreter's tags (its Python version, platform and
    machine), so the failure says first that the release has no wheel here; what the build lacked comes from its own
    lines when the paste shows them. Empty when no package is named."""
    for line in context:
        b = _BUILDING.search(line)
        if b and not pkg:
            pkg = b.group("pkg")
    if not pkg:
        return {}
    where = ""
    for line in context:
        d = _BUILD_DIR.search(line)
        if d:
            py = f"CPython {d.group('cp')}.{d.group('cpm')}" if d.group("cp") else f"Python {d.group('v')}"
            where = f"{py} on {d.group('plat')}"
            break
    if not where:
        for line in context:
            s = _STATED_PY.search(line)
            if s:
                where = f"Python {s.group('v') or s.group('p')}"
    lacks = next((what for line in context for rx, what in _TOOLCHAIN if rx.search(line)), "")
    here = f"this interpreter ({where})" if where else "this interpreter's Python version and platform"
    return {
        "_title": f"pip is building {pkg} from source, and the build failed: no {pkg} wheel fits {here}",
        "_cause": (f"pip builds a package from source only when the index offers no wheel of the release it chose "
                   f"that fits the interpreter's tags (or the install asked for the source: a git URL, a local path, "
                   f"--no-binary); so the {pkg} release being installed has no wheel for {here} (a Python too new or "
                   f"too old for that release, a platform it is not built for, such as macOS arm64 or Linux aarch64, "
                   f"or a pip too old to know the tags of the wheel that exists), and pip fell back to its source "
                   f"distribution, whose build needs tools this machine lacks." + (f" The build output shows it lacks {lacks}." if lacks else
                                                    " The build's own output, further down, names what it lacked.")),
        "_fix": (f"Prefer a wheel: `{{python}} -m pip download {pkg} --only-binary :all: --no-deps -d /tmp/w` shows "
                 f"whether any release has one for this interpreter; use a Python version that release publishes "
                 f"wheels for (a separate environment), or a newer {pkg} release that has one ("
                 f"`{{python}} -m pip install --only-binary {pkg} {pkg}`)"
                 + (f"; or install {lacks} and rerun the install" if lacks else
                    "; or install the build's toolchain and rerun the install")
                 + ". Unverified: msdoctor did not query the index."),
        "rule": "sdist-build",
    }


# -- an installed package's requirement that the installed version does not meet ------------------------------------
#: transformers' own hint names the package that checks: "Try: `pip install transformers -U`"
_TRY_UPGRADE = re.compile(r"pip install (?P<pkg>[A-Za-z0-9][\w.-]*) -U\b")


def requirement_groups(req: str, dist: str, found: str, who: str, context: Sequence[str]) -> dict[str, str]:
    """Cause and fix for a requirement the installed version does not meet: transformers' import-time check
    (``REQ is required for a normal functioning of this module, but found D==V``) or pip's (``P V requires REQ, but
    you have D V``). The requirer is the package pip names, else the owner of the raising frame, else the package
    the message's own hint says to upgrade; the version found is compared with the specifier (above it: D is too new
    for the requirer; below: too old). Empty when the requirement does not parse."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        spec = Requirement(req.replace(" ", "")).specifier
        version = Version(found)
    except (InvalidRequirement, InvalidVersion):
        return {}
    if version in spec:
        return {}
    if not who:
        paths = [p for p in frames(context) if not _MACHINERY.search(p)]
        owner = next((o for o in map(frame_owner, reversed(paths)) if o is not None), None)
        if owner is not None:
            who = owner.name
        else:
            hint = next((m.group("pkg") for line in context for m in [_TRY_UPGRADE.search(line)] if m), "")
            who = hint
    requirer = who or "the package that checks it"
    name = who.split(" ")[0] if who else "<that package>"
    bounds = [s for s in spec if s.operator in ("<", "<=", "==", "~=", "===")]
    above = any(not s.contains(version) for s in bounds) and all(
        s.contains(version) for s in spec if s.operator in (">", ">="))
    side = (f"{dist} {found} is newer than {requirer} accepts ({req}): {dist} was upgraded past the range this "
            f"{requirer} release was made for (or {requirer} is an older build than {dist})") if above else (
            f"{dist} {found} is older than {requirer} needs ({req}): {requirer} was upgraded, or {dist} downgraded, "
            f"without the other")
    change = (f"install the {name} release made for {dist} {found} (a newer one: `{{python}} -m pip install -U "
              f"{name}`), or put {dist} back in range: `{{python}} -m pip install \"{dist}{spec}\"`") if above else (
              f"upgrade {dist} into the range: `{{python}} -m pip install \"{dist}{spec}\"`, or install the {name} "
              f"release made for {dist} {found}")
    return {
        "_title": f"{requirer} and {dist} {found} are releases that do not pair ({requirer} requires {req})",
        "_cause": (f"{requirer} declares that it needs {req}, and the installed {dist} is {found}, outside that range. "
                   + side + ". The two are releases that do not pair."),
        "_fix": (change[0].upper() + change[1:] + "; `{python} -m pip check` lists every requirement of the "
                 "installed packages that is not met. Unverified: msdoctor did not resolve the new set "
                 "(`{python} -m pip install --dry-run ...` does)."),
        "rule": "requirement-range",
    }


# -- a module used while it is still being imported ---------------------------------------------------------------
def _stem(path: str) -> str:
    return re.split(r"[/\\]", path)[-1].rsplit(".", 1)[0]


def circular_groups(name: str, module: str, before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for ``cannot import name N from partially initialized module M`` / ``partially initialized
    module M has no attribute N``: M was asked for N while M's own code was still running. From the frames:

    - a frame's file is ``M.py`` outside site-packages: the user's file of that name is imported as M (a script named
      like the package it imports: its directory comes first on sys.path), and it imports itself;
    - M's frames lie in a source checkout named as M (``vllm-main/vllm``) outside site-packages: that tree is imported
      instead of an install (the current directory, or PYTHONPATH), or it is being developed with a real cycle;
    - no frame at all: a released M does not import itself while loading, so the M imported is most likely not the
      installed one; said with the command that shows which one it is.

    Frames only in site-packages (a cycle inside installed packages, or one the frames do not show): no claim."""
    top = _top(module)
    if not top:
        return {}
    paths = [p for p in frames(before) if not _MACHINERY.search(p)]
    where = (f"`{{python}} -c \"import importlib.util as u; print(u.find_spec('{top}').origin)\"`, run from the same "
             f"directory, shows which {top} Python imports")
    own = next((p for p in paths if _stem(p) == top and not _SITE.search(p)), None)
    if own is not None:
        return {
            "_title": f"your file {own} is imported as {top}, instead of the {top} package",
            "_cause": (f"{own} is a file named {top}.py outside site-packages: Python imports it as the module {top} (the "
                       f"directory of the script being run comes first on sys.path), so `import {top}` in it imports "
                       f"itself, and asking it for {name} while it is still running fails. The installed {top} is "
                       f"never reached."),
            "_fix": (f"Rename {own} (and delete the __pycache__/{top}*.pyc next to it); {where}. Unverified: msdoctor "
                     f"read only the frames pasted."),
            "rule": "file-shadows-module",
        }
    # a checkout named as the package (vllm-main/vllm): a directory merely named M (pytorch/torch, a developer's own
    # build with a real cycle) tells nothing
    tree = next((p for p in paths for o in [checkout_owner(p)] if o is not None and o.name == top), None)
    if tree is not None:
        return {
            "_title": f"{top} was imported from {tree.rsplit(top, 1)[0]}{top}, a directory outside site-packages, and "
                      f"it imports itself while loading",
            "_cause": (f"The frames show {top}'s files in {tree}, outside site-packages: that directory is what Python "
                       f"imports as {top}. If it is a source checkout of an installed package (the current directory, "
                       f"or one on PYTHONPATH), it shadows the install and lacks what the build adds (its compiled "
                       f"parts, generated files), so {name} is not there yet when asked for; if it is your own "
                       f"package, two of its modules import each other at load time."),
            "_fix": (f"Start Python from another directory than the checkout and remove it from PYTHONPATH (or build "
                     f"and install it: `{{python}} -m pip install -e <checkout>`); {where}. For your own package, move "
                     f"the import of {name} into the function that uses it. Unverified: `msdoctor check --only "
                     f"duplicate-installs` finds a shadowing copy."),
            "rule": "shadowed-install",
        }
    if paths:
        return {}
    return {
        "_title": f"{top} was asked for {name} while still being imported: most likely not the installed {top}",
        "_cause": (f"Python was still running {top}'s own import when {name} was asked of it. A released {top} does "
                   f"not import itself while loading, so the {top} imported is most likely not the installed package: "
                   f"a source checkout of {top} in the current directory (or on PYTHONPATH), which lacks the parts a "
                   f"build adds, or a file named {top}.py next to the script. The paste shows no frames to tell "
                   f"which."),
        "_fix": (f"{where[0].upper()}{where[1:]}: if it is not site-packages, start Python from another directory "
                 f"(or rename the file, or remove the directory from PYTHONPATH). Unverified: `msdoctor check --only "
                 f"duplicate-installs` finds a shadowing copy."),
        "rule": "not-the-install",
    }


# -- two interpreters in one paste --------------------------------------------------------------------------------
#: an interpreter's path as sys.executable, `which python` or a kernel's argv print it (a repr doubles backslashes)
_INTERPRETER = re.compile(r"(?P<path>(?:[A-Za-z]:[/\\]|/)[^\s'\"]*?[/\\]python(?:\d+(?:\.\d+)?)?(?:\.exe)?)(?=['\"\s,]|$)",
                          re.I)
#: what marks the interpreter a notebook runs
_KERNEL_WORDS = re.compile(r"jupyter|notebook|ipykernel|kernel|ipython|vs ?code", re.I)


def interpreters_groups(module: str, context: Sequence[str]) -> dict[str, str]:
    """``No module named M`` with two different interpreter paths in the paste (``sys.executable`` printed from a
    shell and from a notebook, say): M is installed for one and the process that failed runs the other. The one named
    on (or just after) a line about Jupyter, a kernel or VS Code is the notebook's. Empty with fewer than two."""
    seen: list[tuple[str, bool]] = []
    label = False
    for line in context:
        text = line.replace("\\\\", "\\")
        marked = bool(_KERNEL_WORDS.search(text))
        for m in _INTERPRETER.finditer(text):
            path = m.group("path")
            if all(path != p for p, _ in seen):
                seen.append((path, marked or label))
        label = marked and not _INTERPRETER.search(text)  # "sys.executable for jupyter:" then the path
    if len(seen) < 2:
        return {}
    kernel = next((p for p, k in seen if k), None)
    other = next((p for p, k in seen if p != kernel and not k), None)
    top = _top(module)
    if kernel is not None and other is not None:
        return {
            "_title": f"the notebook's kernel runs {kernel}, not {other}: {top} is not installed for the kernel's "
                      f"interpreter",
            "_cause": (f"The paste shows two interpreters: {kernel} (the one Jupyter / the kernel runs) and {other}. "
                       f"A kernel runs the interpreter its kernel.json names, not the one the shell that started "
                       f"Jupyter activated; {top} is installed for {other}, and the kernel's interpreter has none."),
            "_fix": (f"Register a kernel for the environment that has {top} and select it in the notebook: `msdoctor "
                     f"fix-kernel --python {other}` (it writes the kernel.json with a backup; --dry-run shows the "
                     f"plan); or install {top} for the kernel's interpreter: `{kernel} -m pip install {top}`. "
                     f"Unverified: msdoctor read only the paths pasted; `msdoctor check --only kernel-mismatch` "
                     f"compares the kernels with the target interpreter."),
            "rule": "two-interpreters",
        }
    names = ", ".join(p for p, _ in seen[:3])
    return {
        "_title": f"{top} is missing for the interpreter that ran, one of the several the paste shows",
        "_cause": (f"The paste shows more than one interpreter ({names}): {top} is installed for one of them, and the "
                   f"process that failed runs another."),
        "_fix": (f"Run with the interpreter that has {top} (`<that python> -c \"import {top}\"` tells), or install {top} "
                 f"for the one that failed: `<that python> -m pip install {top}`. Unverified: msdoctor read only the "
                 f"paths pasted."),
        "rule": "two-interpreters",
    }


# -- the module imported is not the distribution pip lists -----------------------------------------------------------
#: `pip freeze` / `pip list` lines and pip's own `name==version` spellings
_PIP_LINE = re.compile(r"(?<![\w.-])(?P<dist>[A-Za-z0-9][\w.-]*?)(?:==|\s+)(?P<ver>\d[\w.+!-]*)\s*$")
#: a printed version string on the line after `M.__version__` (the REPL's repr, or print's plain text)
_PRINTED_VERSION = re.compile(r"^['\"]?(?P<v>\d+(?:\.\d+)+[\w.+-]*)['\"]?$")


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


def version_shadow_groups(module: str, context: Sequence[str]) -> dict[str, str]:
    """``M.__version__`` printed as V1 while the paste's pip list shows a distribution that installs M at V2: the M
    Python imports is another copy than the one pip installed (a directory on PYTHONPATH, a toolkit's own bindings
    put on the path by its setup script, a user-site copy). Empty unless both versions are in the paste and differ."""
    top = _top(module)
    imported = None
    for i, line in enumerate(context):
        if f"{top}.__version__" in line:
            for nxt in context[i + 1:i + 4]:
                v = _PRINTED_VERSION.match(_unprefixed(nxt))
                if v:
                    imported = v.group("v")
                    break
            if imported:
                break
    if imported is None:
        return {}
    listed = _pip_versions(context)
    dists = [(d, listed[_normal_dist(d)]) for d in distributions_of(top) if _normal_dist(d) in listed]
    if not dists or any(_same_version(v, imported) for _, v in dists):
        return {}
    shown = ", ".join(f"{d} {v}" for d, v in dists)
    return {
        "_title": f"the {top} Python imports ({imported}) is not the one pip installed ({shown})",
        "_cause": (f"{top}.__version__ says {imported}, while pip lists {shown}: the module Python imports is another "
                   f"copy than the installed distribution, found earlier on sys.path: a directory on PYTHONPATH (a "
                   f"toolkit's setup script that prepends its own Python bindings, such as a vendor SDK's copy of "
                   f"{top}), a per-user copy, or a build in the current directory. Whatever pip installs or upgrades "
                   f"stays hidden behind it."),
        "_fix": (f"`{{python}} -c \"import {top}; print({top}.__file__)\"` shows the copy that is imported; remove its "
                 f"directory from PYTHONPATH (`echo $PYTHONPATH`; a setup script sourced in ~/.bashrc is a usual "
                 f"source), or source that script only where its own {top} is wanted (after activating the "
                 f"environment, so the environment's copy is not overridden by accident). Unverified: `msdoctor check "
                 f"--only duplicate-installs` finds a shadowing copy."),
        "rule": "version-shadow",
    }


def variants_groups(module: str, context: Sequence[str]) -> dict[str, str]:
    """An error about module M and a paste that names two distributions that both install M (opencv-python and
    opencv-contrib-python): they write the same files, and the one installed last replaced part of the other. Empty
    when fewer than two are named."""
    top = _top(module)
    dists = distributions_of(top)
    if len(dists) < 2:
        return {}
    text = "\n".join(context).lower()
    named = [d for d in dists if re.search(rf"(?<![\w-]){re.escape(d.lower())}(?![\w-])", text)]
    if len(named) < 2:
        return {}
    both = " and ".join(named)
    return {
        "_title": f"{both} are installed together: they install the same {top} module",
        "_cause": (f"{both} are variants of one project that all install the module {top} into the same files; with "
                   f"more than one installed, the one installed last overwrote the other's files, so {module} is a "
                   f"mix (a module the other variant has, like the contrib ones, is missing, or parts of two "
                   f"releases are loaded). Only one of them may be installed."),
        "_fix": (f"Uninstall all of them and install the one you need: `{{python}} -m pip uninstall -y "
                 f"{' '.join(dists)}` then `{{python}} -m pip install <the one variant>` (the contrib variant has "
                 f"the main modules too). Unverified: `msdoctor check --only duplicate-installs` lists distributions "
                 f"that own the same files."),
        "rule": "module-variants",
    }


# -- a call that does not fit the callee's signature, made by another package ----------------------------------------
_ARG_NAMES = re.compile(r"'\w+'(?:,? (?:and )?'\w+')*")


def wrapped_arguments(after: Sequence[str]) -> str:
    """The argument names of ``missing N required arguments:`` when the message wrapped them onto the next line."""
    for line in after:
        m = _ARG_NAMES.match(_unprefixed(line).lstrip("`"))
        if m:
            return m.group(0)
    return ""

#: a call that passes on its own ``*args`` / ``**kwargs`` unchanged (a wrapper's body): ``f(self, *args, **kwargs)``
_FORWARDS = re.compile(r"\((?:[^()]*,\s*)?\*{1,2}[A-Za-z_]\w*\s*(?:,\s*\*\*[A-Za-z_]\w*\s*)?\)\s*$")


def _caller_path(before: Sequence[str]) -> Optional[str]:
    """The file of the frame that made the call the exception is about: the raising frame, or, past frames whose
    source line only forwards ``*args`` / ``**kwargs`` (a wrapper passing the call on), the frame before them."""
    found: list[tuple[str, str]] = []  # (path, the source line printed under the frame)
    for i, line in enumerate(before):
        m = _FRAME.search(line)
        if m is None or _MACHINERY.search(m.group("path")):
            continue
        code = before[i + 1] if i + 1 < len(before) and not _FRAME.search(before[i + 1]) else ""
        found.append((m.group("path"), _unprefixed(code).strip()))
    if not found:
        return _raising_path(before)
    while len(found) > 1 and _FORWARDS.search(found[-1][1]):
        found.pop()
    return found[-1][0]


def signature_groups(func: str, what: str, before: Sequence[str]) -> dict[str, str]:
    """Cause and fix for Python's ``F() got an unexpected keyword argument 'k'`` / ``F() missing N required ...
    arguments`` / ``F() takes N positional arguments but M were given``. Python raises it at the call, so the last
    frame is the caller's: when a package L owns it, L calls F as another release of F's library defined it (F gained
    required arguments, or lost or renamed one): L and that library are releases that do not pair. Empty (no claim)
    when the caller is the user's own file or not shown. A frame whose line only forwards its arguments
    (``init_func(self, *args, **kwargs)``: a decorator's or wrapper's) is not the caller: the frame before it is."""
    path = _caller_path(before)
    if path is None:
        return {}
    caller = frame_owner(path)
    if caller is None:
        return {}
    lib = caller.name
    if func.endswith(".__init__"):
        func = func[:-len(".__init__")]  # a class's constructor: the class is what the other release changed
    return {
        "_title": f"{lib} calls {func}() in a way the installed release does not take ({what})",
        "_cause": (f"{path} ({lib}: {caller.why}) calls {func}(), and the installed {func} does not accept that call "
                   f"({what}). Python checks a call against the function's signature in the release that is "
                   f"installed: {lib} was written for another release of the library that defines {func} (one whose "
                   f"{func} took these arguments), so {lib} and that library are releases that do not pair (unless "
                   f"{func} is {lib}'s own, a bug in that {lib} release)."),
        "_fix": (f"`{{python}} -m pip show {lib}` names its requirements: install the release of {func}'s library "
                 f"that {lib} pins or documents (its README / requirements), or the {lib} release made for the "
                 f"installed one (`{{python}} -m pip install -U {lib}`). Unverified: msdoctor did not read either "
                 f"release's code; `{{python}} -m pip check` shows a declared requirement that is not met."),
        "rule": "release-pairing", "frame": path,
    }


# -- a CUDA library of another CUDA release than the system's -----------------------------------------------------
#: CUDA toolkit libraries whose soname carries the CUDA release they belong to (libcudart.so.10.1, libcublas.so.11);
#: cuDNN's and the driver's sonames carry their own versions, not CUDA's
_CUDA_SONAME = re.compile(r"^(?P<name>libcudart|libcublas(?:Lt)?|libcusolver|libcusparse|libcufft|libcurand|libnvrtc)"
                          r"\.so\.(?P<major>\d+)(?:\.(?P<minor>\d+))?")
#: the CUDA release the paste states for the system: `cuda12.1`, `CUDA 12.1`, `CUDA Version: 12.2` (nvidia-smi),
#: `/usr/local/cuda-12.1`
_STATED_CUDA = re.compile(r"\bcuda(?:[ _-]?version)?[ :=_-]*(?P<major>\d{2})\.(?P<minor>\d)\b", re.I)


def cuda_build_groups(lib: str, context: Sequence[str]) -> dict[str, str]:
    """A CUDA library that cannot be found (libcudart.so.10.1) while the paste states another CUDA release for the
    system (cuda12.1): what loads it was built for the library's CUDA, not for the one installed, so the answer is a
    build of that package for the installed CUDA (or that CUDA added), not "CUDA is missing". Empty when the paste
    states no CUDA release, several, or the same major as the library's."""
    m = _CUDA_SONAME.match(lib)
    if m is None:
        return {}
    stated = {(s.group("major"), s.group("minor")) for line in context
              for s in _STATED_CUDA.finditer(line.replace(lib, ""))}
    if len({major for major, _ in stated}) != 1:
        return {}
    major, minor = next(iter(stated))
    if major == m.group("major"):
        return {}
    belongs = m.group("major") + (f".{m.group('minor')}" if m.group("minor") else ".x")
    system = f"{major}.{minor}"
    return {
        "cause": (f"The paste shows CUDA {system} on this system, while {lib} belongs to CUDA {belongs}: the package "
                  f"that loads it (a wheel or compiled extension) was built for CUDA {belongs}, not for the CUDA "
                  f"installed, so the library it asks for is not there."),
        "fix": (f"Install that package's build for CUDA {system} (its CUDA variant: a +cu{major}{minor} / -cu{major}x "
                f"wheel, or the extension rebuilt against this CUDA; the traceback's last frames name the package), "
                f"or install CUDA {belongs} as well and put its lib64 on LD_LIBRARY_PATH. Unverified: `nvcc --version` "
                f"and `nvidia-smi` show the installed CUDA."),
    }


# -- who loads a missing Ascend library ---------------------------------------------------------------------------
#: torch_npu (PTA, the PyTorch Ascend adapter: https://github.com/Ascend/pytorch) names itself in its error codes
#: (`ERR00008 PTA resource not found`) and its paths
_TORCH_NPU = re.compile(r"\bERR\d{5} PTA\b|\btorch_npu\b|\btorch-npu\b", re.I)


def ascend_loader_groups(lib: str, context: Sequence[str]) -> dict[str, str]:
    """When the paste shows that torch_npu is the one loading a CANN library that is missing: say so, and that on a
    host with no Ascend NPU (no CANN) torch_npu cannot load at all, so code that runs there imports plain torch.
    Empty when the paste does not name torch_npu."""
    if not any(_TORCH_NPU.search(line) for line in context):
        return {}
    return {
        "cause": (f"The paste shows torch_npu (PTA, PyTorch's Ascend adapter) loading {lib}: torch_npu links against "
                  f"CANN's runtime, so it loads only on an Ascend host with CANN installed and its set_env.sh sourced; "
                  f"on a machine with no Ascend NPU it cannot be imported at all."),
        "fix": ("On a host without Ascend NPUs, do not import torch_npu: use plain torch (code that only optionally "
                "uses an NPU imports torch_npu inside a guard). On an Ascend host:"),
        "loader": "torch_npu",
    }


# -- a CANN operator's parameter check failing on a framework's call ------------------------------------------------
#: MindSpore's own log lines name the source file that drives CANN's operator compiler
_MS_OP_COMPILE = re.compile(r"mindspore/ccsrc/plugin/device/ascend/kernel/(?:tbe|aclnn|opapi)", re.I)


def opcheck_groups(op: str, param: str, code: str, before: Sequence[str]) -> dict[str, str]:
    """CANN's operator check (``{'errCode': 'E8xxxx', 'op_name': OP, 'param_name': P, ...}``) raised while MindSpore
    drives the operator (its frames in site-packages/mindspore, or its ascend kernel log lines): MindSpore built the
    call for another CANN release's operator interface. Empty when the caller is not shown to be MindSpore."""
    paths = [p for p in frames(before) if not _MACHINERY.search(p)]
    owners = {o.name.lower() for o in map(file_owner, paths) if o is not None}
    if "mindspore" not in owners and not any(_MS_OP_COMPILE.search(line) for line in before):
        return {}
    what = f"parameter {param} of operator {op}" if param else f"a parameter of operator {op}"
    return {
        "_title": f"CANN's {op} operator rejected the {param or 'parameter'} MindSpore passed ({code}): MindSpore and "
                  f"CANN are releases that do not pair",
        "_cause": (f"CANN's operator check ({code}) refused {what} in a call MindSpore made while compiling the graph: "
                   f"each MindSpore release calls CANN's operators with the interface of the CANN releases it was "
                   f"built for, so a parameter of the wrong type or one the operator does not know means the "
                   f"installed CANN is another release than this MindSpore expects (`mindspore.run_check()` can still "
                   f"pass: it compiles few operators)."),
        "_fix": ("Install the CANN release that the installed MindSpore is made for, or the MindSpore release made for "
                 "your CANN (https://www.mindspore.cn/install lists the pairs); `msdoctor check --only version-matrix` "
                 "reads both versions and names the pairing. Unverified: msdoctor read only the lines pasted; `{python} "
                 "-c \"import mindspore; print(mindspore.__version__)\"` and `cat /usr/local/Ascend/ascend-toolkit/"
                 "latest/*/ascend_toolkit_install.info` give the two versions."),
        "rule": "op-interface",
    }


# -- the rules that claim or say nothing, by the catalogue's lookup name --------------------------------------------
def _signature(g: dict[str, str], before: Sequence[str], after: Sequence[str]) -> dict[str, str]:
    if g.get("kw"):
        what = f"no keyword argument {g['kw']}"
    elif g.get("n"):
        args = g.get("args") or wrapped_arguments(after[:1])
        what = f"{g['n']} required {g.get('kind', '')} argument(s) not passed" + (f": {args}" if args else "")
    else:
        what = f"{g.get('given', '?')} positional arguments given, {g.get('takes', '?')} taken"
    return signature_groups(g.get("func") or g.get("func2") or g.get("func3") or "", what, before)


def _requirement(g: dict[str, str], context: Sequence[str]) -> dict[str, str]:
    return requirement_groups(g.get("req") or g.get("req2", ""), g.get("dist") or g.get("dist2", ""),
                              g.get("found") or g.get("found2", ""),
                              " ".join(x for x in (g.get("who"), g.get("whover")) if x), context)


def _env_claims() -> dict[str, Callable[[dict[str, str], Sequence[str], str, Sequence[str]], dict[str, str]]]:
    from msdoctor.explain.rules_env import CLAIMS as env

    return env


#: lookup -> the rule, given the matched groups, the lines before, the matched line and the lines after
_CLAIMS: dict[str, Callable[[dict[str, str], Sequence[str], str, Sequence[str]], dict[str, str]]] = {
    "import": lambda g, b, line, a: import_groups(g.get("mod", ""), b, a),
    "pairing": lambda g, b, line, a: pairing_groups(g.get("name") or g.get("attribute", ""),
                                                    g.get("module") or g.get("owner", ""), b, line, a),
    "keyword": lambda g, b, line, a: keyword_groups(g.get("func", ""), g.get("kw", ""), b),
    "conflict": lambda g, b, line, a: conflict_groups(a),
    "opcheck": lambda g, b, line, a: opcheck_groups(g.get("op", ""), g.get("param", ""), g.get("code", ""), b),
    "signature": lambda g, b, line, a: _signature(g, b, a),
    "version": lambda g, b, line, a: version_shadow_groups(g.get("mod", ""), (*b, line, *a)),
    "circular": lambda g, b, line, a: circular_groups(g.get("name") or g.get("attribute", ""),
                                                      g.get("module") or g.get("owner", ""), b),
    "requirement": lambda g, b, line, a: _requirement(g, (*b, line, *a)),
    "build": lambda g, b, line, a: build_groups(g.get("pkg") or g.get("pkg2") or g.get("pkg3") or "", (*b, line, *a)),
    "wheel": lambda g, b, line, a: wheel_groups(g.get("wheel", ""), (*b, line, *a)),
    "distribution": lambda g, b, line, a: distribution_groups(g.get("req") or g.get("req2", ""), (*b, line, *a)),
    "requires-python": lambda g, b, line, a: requires_python_groups(g.get("pkg", ""), g.get("have", ""),
                                                                   g.get("spec", "")),
    "removed": lambda g, b, line, a: numpy_removed_groups(g, b, a),
    "aclcode": lambda g, b, line, a: acl_code_groups(g.get("acl", ""), g.get("call", ""), line, (*b, *a)),
}
_CLAIMS.update(_env_claims())
CLAIMS = frozenset(_CLAIMS)


def claim(lookup: str, groups: dict[str, str], before: Sequence[str], line: str,
          after: Sequence[str]) -> dict[str, str]:
    """The answer of the rule a catalogue entry's lookup names: cause, fix and check, or empty (no claim)."""
    return _CLAIMS[lookup](groups, before, line, after)


# -- a name (or module) that a release of its distribution removed (compat_matrix/modules.toml) ----------------------
#: the Python version the paste shows: `lib/python3.12/`, `Python312\Lib`, `Python 3.12.5`, `python3.12 -m venv`
_PASTED_PY = re.compile(r"[/\\]python(?P<p>3\.\d{1,2})[/\\]|[/\\]Python3(?P<w>\d{1,2})[/\\]|"
                        r"\bPython (?P<v>3\.\d{1,2})(?:\.\d+)?\b|\bpython(?P<x>3\.\d{1,2}) -m\b", re.I)
#: a frame of the standard library itself (`.../lib/python3.12/ctypes/__init__.py`, `...\Lib\pkgutil.py`), not of a
#: package in its site-packages
_STDLIB_FRAME = re.compile(r"[/\\]lib[/\\]python\d\.\d+[/\\](?!(?:site|dist)-packages)|[/\\]Lib[/\\](?!site-packages)"
                           r"[\w.]+\.py$")


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
    pat = re.compile(rf"(?<![\w.-])(?:(?:{'|'.join(names)})(?:-|==)|(?:{'|'.join(names)}) version: )"
                     rf"(?P<v>\d+(?:\.\d+)+)", re.I)
    found = {m.group("v") for line in context for m in pat.finditer(_unprefixed(line))}
    listed = re.compile(rf"^{re.escape(dist)}\s+(?P<v>\d+(?:\.\d+)+)\S*\s*$", re.I)  # `pip list`'s line
    found.update(m.group("v") for line in context if (m := listed.match(_unprefixed(line).strip())))
    return found.pop() if len(found) == 1 else ""


def _user_of(before: Sequence[str], dist: str, module: str) -> Optional[str]:
    """The frame that used the removed name: the last one that is neither the import machinery, the standard library,
    nor the removing distribution's own code (NumPy's ``__getattr__`` raises on behalf of its caller)."""
    top = _top(module)
    for path in reversed(frames(before)):
        if _MACHINERY.search(path):
            continue
        owner = file_owner(path)
        if owner is not None and owner.name.lower() in (top.lower(), dist.lower()):
            continue
        if owner is None and _STDLIB_FRAME.search(path) and dist == "Python":
            continue
        return path
    return None


_PACKAGING_TOOLS = ("setuptools", "pkg_resources", "pip", "_distutils_hack")


def removed_groups(name: str, module: str, before: Sequence[str], after: Sequence[str] = (),
                   release: str = "", said: bool = False) -> dict[str, str]:
    """``module M has no attribute N`` / ``cannot import name N from M`` / ``No module named M`` (no ``name``) where
    compat_matrix/modules.toml says a release R of M's distribution removed it: the code that uses it, or the package
    whose frame raised, was written for a release before R. No claim when the data does not say so, or when the paste
    shows a version older than R (then the name was not removed: another cause). ``said``: the error message itself
    names the release that removed it (NumPy 2's), so the release that runs is R or newer."""
    from msdoctor.explain.owners import removal_of

    r = removal_of(module, name)
    if r is None:
        return {}
    release = release or r.release
    context = (*before, *after)
    shown = _python_shown(context) if r.dist == "Python" else _dist_shown(r.dist, context)
    if shown and _vtuple(shown) < _vtuple(release):
        return {}  # the installed release still has it: not this
    label = "Python" if r.dist == "Python" else r.dist
    what = f"{module}.{name}" if name else module
    installed = f"{label} {shown}" if shown else f"{label} {release} or newer"
    path = _user_of(before, r.dist, module)
    owner = frame_owner(path) if path else None
    if owner is not None and owner.name.lower() in _PACKAGING_TOOLS:
        lib = "setuptools" if owner.name.lower() in ("pkg_resources", "_distutils_hack") else owner.name
        build_env = "pip-build-env" in path  # type: ignore[operator]
        user = (f"{lib} (its frame {path}{', in the build environment pip made for a package being built' if build_env else ''})")
        fix = (("This pip cannot run on this Python, so it cannot upgrade itself: reinstall it with the pip this "
                "Python bundles, `{python} -m ensurepip --upgrade` (or get-pip.py, https://pip.pypa.io/en/stable/"
                "installation/), then `{python} -m pip install -U setuptools`" if lib == "pip" else
                "Upgrade the packaging tools in this environment: `{python} -m pip install -U pip setuptools`")
               + (f"; the build environment installs the setuptools the package's own build requirements name "
                  f"(pyproject.toml [build-system]): install a release of that package made for {label} {release}, or "
                  f"build it with `--no-build-isolation` once a current setuptools is installed" if build_env else "")
               + f", or run it with a {label} older than {release}.")
    elif owner is not None:
        user = f"{owner.name} (its frame {path}: {owner.why})"
        fix = (f"Install the {owner.name} release made for {installed} (`{{python}} -m pip install -U {owner.name}`)"
               + (f", or run it with a Python older than {release} (a venv made from it)." if r.dist == "Python" else
                  f", or a {label} older than {release} for it: `{{python}} -m pip install \"{r.dist}<{release}\"`."))
    else:
        user = f"your code ({path})" if path else "the code that uses it (its frame is not in the paste)"
        fix = (f"Change the code to {r.instead}"
               + (f", or run it with a Python older than {release}." if r.dist == "Python" else
                  f", or install a {label} older than {release}: `{{python}} -m pip install \"{r.dist}<{release}\"`."))
    check = ("`{python} --version`" if r.dist == "Python" else
             f"`{{python}} -m pip show {r.dist}` (its Version)")
    return {
        "_title": f"{what} was removed in {label} {release}: {user.split(' (')[0]} was written for an older {label}",
        "_cause": (f"{label} {release} removed {what} ({r.source}), and {user} still uses it"
                   + (f"; the interpreter runs {installed}." if shown else
                      f"; the interpreter runs {installed} (the message itself says so)." if said else
                      f": that is the error if the interpreter runs {installed} (the paste does not show which "
                      f"release runs).") + f" Replaced by: {r.instead}."),
        "_fix": fix + f" Unverified: {check} shows the release that runs.",
        "rule": "name-removed", "removed_in": f"{label} {release}",
        **({"frame": path} if path else {}),
    }


def module_shipper_groups(module: str) -> dict[str, str]:
    """``No module named M`` for a module that pip does not install (CPython's optional extensions): who ships it and
    what provides it (compat_matrix/modules.toml); empty when the data does not name M."""
    from msdoctor.explain.owners import module_shipper

    s = module_shipper(_top(module))
    if s is None:
        return {}
    return {
        "_title": f"this Python has no {s.module}: it is part of {s.owner.split(' (')[0]}, not a pip package",
        "_cause": f"{s.module} is shipped by {s.owner}. {s.cause}",
        "_fix": s.fix.replace("{module}", s.module) + f" Unverified: `{s.check}` confirms it ({s.source}).",
        "rule": "module-shipper",
    }


#: NumPy 2's own message names the name and the release (numpy/__init__.py, __expired_attributes__)
def numpy_removed_groups(g: dict[str, str], before: Sequence[str], after: Sequence[str]) -> dict[str, str]:
    return removed_groups(g.get("name", ""), "numpy", before, after, g.get("rel", ""), said=bool(g.get("rel")))



# -- a return code of CANN's runtime (compat_matrix/acl_codes.toml): its category, and what to collect ---------------
#: a CANN error code (EZ9999, EE1001, E39007): its own lines are the better lead, and its entry answers
_CANN_CODE = re.compile(r"(?<![\w.=])E[A-Z0-9]\d{4}(?:[:)\]]|\s+Inner Error)")


#: a sign that the paste is about CANN's runtime: an AscendCL or runtime call, an NPU, CANN, HCCL, torch_npu, MindSpore
_ASCEND_WORDS = re.compile(r"\bacl[A-Za-z]*\b|\brt[A-Z]\w+|\bnpu|\bascend|\bcann\b|\bhccl|torch_npu|mindspore", re.I)


def acl_code_groups(code: str, call: str, line: str, context: Sequence[str] = ()) -> dict[str, str]:
    """``NPU function error: CALL, error code is 507035`` (torch_npu) and the like: what CANN's runtime defines the code
    as, what that category rules in, and what to collect; it is not a diagnosis, and says so. Empty for a code the
    data does not list."""
    from msdoctor.explain.owners import acl_codes

    c = acl_codes().get(int(code)) if code.isdigit() else None
    if c is None or any(_CANN_CODE.search(x.replace("\\n", "\n")) for x in (line, *context)):
        return {}  # not a listed code; or CANN printed its own error code, whose entry and inner lines say more
    if not call and not any(_ASCEND_WORDS.search(x) for x in (line, *context)):
        return {}  # nothing in the paste is Ascend's: a code of that value from someone else
    by = f"{call} returned it" if call else "a call into CANN returned it"
    # CANN's Python components are built for NumPy 1.x (CANN 8.2's need numpy<2 when torch_npu sets compile options:
    # https://github.com/vllm-project/vllm-ascend/issues/2210); a NumPy 2 the paste shows installed is the first suspect
    numpy = _dist_shown("numpy", (line, *context))
    numpy2 = bool(numpy) and _vtuple(numpy) >= (2,)
    framework = "torch_npu" if "c10_npu" in line or "torch_npu" in line else "the framework"
    return {
        "_title": f"CANN runtime error {c.code}: {c.meaning} (a category, not a diagnosis)",
        "_cause": (f"{by}: CANN's runtime defines {c.code} as {c.meaning}. That is {c.what}. Only the category is "
                   f"known from the code; {framework}'s message does not say which operator, rank or release is at "
                   f"fault."
                   + (f" The paste also shows numpy {numpy} installed, and CANN's Python components (te/tbe) are built "
                      f"for NumPy 1.x: the likely cause when a call that compiles operators or sets compile options "
                      f"fails." if numpy2 else "")),
        "_fix": ((f"First, since the paste shows numpy {numpy}: CANN's Python components (te/tbe, which compile "
                  f"operators and set compile options) are built for NumPy 1.x, so install `{{python}} -m pip install "
                  f"\"numpy<2\"` and retry. " if numpy2 else "")
                 + f"Collect before concluding: {c.collect}. Unverified: msdoctor read only the code ({c.source})."),
        "rule": "acl-code", "acl_kind": c.kind,
    }


# -- a package's build that imports a module its isolated build environment does not have -----------------------------
#: frames of pip's isolated build (PEP 517): the temporary environment pip creates and the hook runner it starts there
_BUILD_ENV = re.compile(r"pip-build-env-|[/\\]pyproject_hooks[/\\]_in_process|[/\\]pep517[/\\]_in_process")
#: the package pip is building: `Collecting P`, `Building wheel for P`, pip's `cwd: .../pip-install-xxx/P_<hash>`
_BUILT = re.compile(r"\bCollecting (?P<c>[A-Za-z0-9][\w.-]*)|\bBuilding wheels? for (?P<b>[A-Za-z0-9][\w.-]*)|"
                    r"pip-install-[^/\\\s]+[/\\](?P<d>[A-Za-z0-9][\w.-]*?)_[0-9a-f]{16,}")


def build_isolation_groups(module: str, before: Sequence[str], after: Sequence[str] = ()) -> dict[str, str]:
    """``No module named M`` raised while pip runs a package's build in its isolated build environment (its frames
    under ``pip-build-env-*`` or pip's hook runner): the package's setup imports M at build time, and the isolated
    environment holds only the build requirements the package declares, not what the target environment has
    installed. Empty when the frames are not a build's."""
    if not any(_BUILD_ENV.search(x) for x in before):
        return {}
    top = _top(module)
    built = ""
    for x in (*before, *after):
        if (m := _BUILT.search(x)) is not None:
            built = m.group("c") or m.group("b") or m.group("d") or ""
            break
    pkg = built or "the package pip is building"
    return {
        "_title": f"the build of {pkg} imports {top}, which pip's isolated build environment does not have",
        "_cause": (f"{module} was imported by the setup code of {pkg} while pip built it from source: pip runs a build "
                   f"in a temporary, isolated environment (the pip-build-env frames) that holds only the build "
                   f"requirements the package declares (pyproject.toml [build-system] requires), not the packages "
                   f"installed where it is going; {pkg} imports {top} at build time without declaring it, so an "
                   f"installed {top} does not help (https://pip.pypa.io/en/stable/reference/build-system/"
                   f"pyproject-toml/#build-isolation)."),
        "_fix": (f"Install {top} into the environment first, then build without isolation so the build sees it: "
                 f"`{{python}} -m pip install --no-build-isolation {built or '<the package>'}` (its other build "
                 f"requirements, such as setuptools, wheel, ninja, packaging, must then be installed too); or install "
                 f"a prebuilt wheel of {pkg} for this Python and platform if one exists. Unverified: `{{python}} -c "
                 f"\"import {top}\"` confirms {top} is in the environment."),
        "rule": "build-isolation",
    }


# -- pip found no MindSpore wheel: what the compat matrix knows of that release ------------------------------------
def mindspore_wheel_groups(version: str, context: Sequence[str]) -> dict[str, str]:
    """``{ms_facts}`` for ``No matching distribution found for mindspore==V``: the Python versions compat_matrix/
    mindspore.toml lists for V (against the one the paste shows) and whether V is on PyPI. Empty text when the matrix
    has no row for V."""
    from msdoctor.matrix import load

    row = load().mindspore(version) if version else None
    if row is None:
        return {"ms_facts": ""}
    facts = f" compat_matrix lists MindSpore {row.version}'s wheels for Python {', '.join(row.python)}"
    stated = {m.group("v") or m.group("p") for line in context for m in _STATED_PY.finditer(line)} | (
        {shown} if (shown := _python_shown(context)) else set())
    if len(stated) == 1:
        py = stated.pop()
        facts += (f"; the paste shows Python {py}, which is not one of them: use a Python it supports" if py not in
                  row.python else f"; the paste shows Python {py}, one of them")
    if not row.on_pypi:
        facts += (f"; MindSpore {row.version} is not on PyPI, so pip finds it only from the wheel URL or index "
                  f"https://www.mindspore.cn/install gives for it")
    return {"ms_facts": facts + f" ({row.source.split(';')[0]})."}
