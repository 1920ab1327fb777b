"""Owners: who ships a file or defines a symbol that an error names.

- A C symbol named Py*/_Py* belongs to the CPython C API.
- A C++ symbol's owner is read from its Itanium mangling (https://itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling):
  ``_ZN`` (then ``K``/``V`` qualifiers) and the first namespace as ``<length><name>``; ``_ZN5torch...`` is in
  namespace ``torch``. The namespaces are those of the libraries' own headers: torch/c10/at (PyTorch), c10_npu /
  at_npu (torch_npu, https://github.com/Ascend/pytorch), mindspore (MindSpore), atb / Mki / AsdOps (NNAL's
  Ascend Transformer Boost), ge (CANN's graph engine). Plain C names: ``acl*`` and ``Msprof*`` are the CANN
  runtime's API (CANN AscendCL reference, https://www.hiascend.com/document).
- A file's owner is read from its path: ``site-packages/<package>/...``; CANN's layout
  (``ascend-toolkit/<version>/...``, ``nnal/atb/...``, ``driver/...``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Optional

_NAMESPACE = re.compile(r"^_ZN[KVr]*(?:St)?(\d+)")
#: ``std::`` names: ``_ZNSt...``, ``_ZNKSt...``, ``_ZSt...`` (St is the mangling's abbreviation for ::std::), defined
#: by the C++ runtime (libstdc++); the ``__cxx11`` ABI names start ``_ZNSt7__cxx11``
_STD = re.compile(r"^_Z(?:N[KVr]*)?St")
_NAMESPACE_OWNERS = {
    "torch": "torch",
    "c10": "torch",
    "at": "torch",
    "caffe2": "torch",
    "c10_npu": "torch_npu",
    "at_npu": "torch_npu",
    "torch_npu": "torch_npu",
    "mindspore": "MindSpore",
    "atb": "NNAL",
    "Mki": "NNAL",
    "AsdOps": "NNAL",
    "ge": "CANN",
}
#: the CPython C API (https://docs.python.org/3/c-api/intro.html#include-files: every public name starts with Py or
#: _Py); an extension that needs one the interpreter lacks was built for another Python
_PYTHON_API = re.compile(r"^_?Py[A-Z_]")
_C_PREFIXES = (("aclrt", "CANN"), ("aclnn", "CANN"), ("acl", "CANN"), ("Msprof", "CANN"))
_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<pkg>[A-Za-z0-9_.-]+?)(?:[/\\]|\.cpython|\.abi3|\.so|-\d)")
_TOOLKIT = re.compile(r"ascend-toolkit[/\\](?P<ver>[^/\\]+)[/\\]")


@dataclass(frozen=True)
class Owner:
    name: str  # the package or product: torch, torch_npu, MindSpore, NNAL, CANN
    why: str  # how it was decided (the namespace, the path)


def symbol_owner(symbol: str) -> Optional[Owner]:
    """Who defines a (mangled) symbol, from its first namespace or its C prefix; None when not known."""
    if _STD.match(symbol):
        return Owner("libstdc++", "namespace std is the C++ runtime's")
    m = _NAMESPACE.match(symbol)
    if m:
        n, at = int(m.group(1)), m.end()
        ns = symbol[at : at + n]
        owner = _NAMESPACE_OWNERS.get(ns)
        return Owner(owner, f"its C++ namespace is {ns}") if owner and len(ns) == n else None
    if symbol.startswith("_Z"):
        return None
    if _PYTHON_API.match(symbol):
        return Owner("Python", "Py*/_Py* names are the CPython C API")
    for prefix, owner in _C_PREFIXES:
        if symbol.startswith(prefix):
            return Owner(owner, f"{prefix}* is its C API")
    return None


def file_owner(path: str) -> Optional[Owner]:
    """Who ships a file, from where it lies; None when the path does not tell."""
    m = _SITE.search(path)
    if m:
        pkg = m.group("pkg")
        return Owner(pkg.split(".")[0].split("-")[0], "it lies in site-packages/" + pkg)
    low = path.replace("\\", "/")
    if "/nnal/" in low:
        return Owner("NNAL", "it lies under nnal/")
    t = _TOOLKIT.search(path)
    if t:
        return Owner("CANN", f"it lies under ascend-toolkit/{t.group('ver')}")
    if "/driver/" in low and "Ascend" in path:
        return Owner("the Ascend driver", "it lies under the driver directory")
    return None


#: a GitHub archive or release directory's suffix: mindyolo-master, vllm-ascend-0.7.1, mindformers-r1.3.0
_CHECKOUT_SUFFIX = re.compile(r"-(?:master|main|dev|develop|r?v?\d[\w.]*)$", re.I)


def _normal(name: str) -> str:
    """A project name compared as pip compares distribution names (https://peps.python.org/pep-0503/#normalized-names)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def checkout_owner(path: str) -> Optional[Owner]:
    """The package of a file in a source checkout: ``.../<project>/<package>/...`` outside site-packages, where the
    package directory is named as the project (``vllm-ascend/vllm_ascend``, ``mindyolo-master/mindyolo``); None
    otherwise (a user's own file tells nothing)."""
    if _SITE.search(path):
        return None
    parts = [p for p in re.split(r"[/\\]", path) if p]
    for project, package in zip(parts[:-2], parts[1:-1]):
        if package.isidentifier() and _normal(_CHECKOUT_SUFFIX.sub("", project)) == _normal(package):
            return Owner(package, f"it lies in a source checkout ({project}/{package}), not in site-packages")
    return None


def frame_owner(path: str) -> Optional[Owner]:
    """Who owns a traceback frame's file: an installed package or CANN (its path), else a source checkout."""
    return file_owner(path) or checkout_owner(path)


#: what brings two owners back in step (the check is the command that shows both releases)
_PAIRING = {
    "torch": (
        "{python} -m pip show torch {lib_pkg}",
        "install the {lib_pkg} release built for the installed torch (torch_npu pairs with the torch of the "
        "same version; a compiled extension: rebuild or reinstall it for this torch), or the torch it was "
        "built for",
    ),
    "torch_npu": (
        "{python} -m pip show torch_npu {lib_pkg}",
        "install the {lib_pkg} release built for the installed torch_npu, or the torch_npu it was built for",
    ),
    "MindSpore": (
        "{python} -m pip show mindspore {lib_pkg}",
        "install the {lib_pkg} release made for the installed MindSpore, or the MindSpore it was built for",
    ),
    "NNAL": (
        "ls -l /usr/local/Ascend/nnal/atb; echo $ATB_HOME_PATH",
        "install the NNAL release of the same CANN version that {lib_pkg} was built for, and "
        "`source /usr/local/Ascend/nnal/atb/set_env.sh` after CANN's set_env.sh",
    ),
    "Python": (
        '{python} -c "import sys; print(sys.version)"',
        "rebuild or reinstall {lib_pkg} with the interpreter that runs it ({python} -m pip install "
        "--force-reinstall --no-cache-dir, or its build run by that interpreter): it was built for another "
        "Python version (a Python 2 extension cannot load in Python 3)",
    ),
    "libstdc++": (
        "ldd {lib} | grep libstdc++; gcc --version",
        "rebuild {lib_pkg} with the compiler whose libstdc++ is loaded at run time (`CC`/`CXX` set to that "
        "gcc/g++), or put the newer libstdc++ first (a conda env: `conda install -c conda-forge "
        "libstdcxx-ng`); it was built with another GCC than the C++ runtime this process loaded",
    ),
    "CANN": (
        "cat /usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info",
        "use one CANN release for every Ascend library: the one {lib_pkg} was built for "
        "(`source` that release's set_env.sh, and nothing of another release on LD_LIBRARY_PATH)",
    ),
}


def undefined_symbol_groups(lib: str, sym: str) -> dict[str, str]:
    """The cause, fix and check for ``LIB: undefined symbol: SYM`` when the symbol's owner is known and is not the
    library's own package; empty when the owners do not tell (the catalogue's general text then stands)."""
    so, lo = symbol_owner(sym), file_owner(lib)
    if so is None:
        return {}
    lib_pkg = lo.name if lo else (re.split(r"[/\\]", lib)[-1] or "the library that needs it")
    if not lib:
        lib = "the library that needs it"
    if lo is not None and lo.name.lower() == so.name.lower():
        return {}  # the package's own symbol: a broken or mixed install of one package, not a pairing
    check, fix = _PAIRING[so.name]
    whose = "" if lib == lib_pkg else f" ({lib_pkg}: {lo.why})" if lo else f" ({lib_pkg})"
    return {
        "_cause": (
            f"{sym} is defined by {so.name} ({so.why}); {lib}{whose} was built against another release of "
            f"{so.name} than the one this process loaded. {lib_pkg} and {so.name} are releases that do not pair."
        ),
        "_fix": fix.replace("{lib_pkg}", lib_pkg)
        + ". Unverified: compare the two releases first: `"
        + check.replace("{lib}", lib).replace("{lib_pkg}", lib_pkg if lo else "")
        + "`.",
        "sym_owner": so.name,
    }


#: the package a paste says it was importing: `import mindie_turbo`, `torch-npu==2.7.1 ...`, `from vllm import`
_IMPORTER = re.compile(
    r"\b(?:import|from)\s+(?P<mod>[A-Za-z_][A-Za-z0-9_.]*)|(?<![A-Za-z0-9_.-])"
    r"(?P<dist>[A-Za-z][A-Za-z0-9_.-]*?)==\d"
)


def importer_of(line: str) -> str:
    """The module or distribution a line names as the one being imported or installed; "" when none."""
    m = _IMPORTER.search(line)
    if m is None:
        return ""
    return (m.group("mod") or m.group("dist")).split(".")[0].replace("-", "_")


_ENV_OF_PATH = re.compile(r"(?P<prefix>[/~][^\s:'\"]*?)/lib/python(?P<ver>\d\.\d+)/(?:site|dist)-packages/")


def interpreter_of_paths(texts: "list[str]") -> Optional[str]:
    """The interpreter that the pasted paths point to: ``PREFIX/lib/pythonX.Y/site-packages/...`` is the
    environment whose interpreter is ``PREFIX/bin/pythonX.Y`` (a venv, conda env or system prefix; POSIX layout).
    None when no path tells, or when the paths name more than one environment."""
    # ~/.local/lib/pythonX.Y/site-packages is the per-user site (https://docs.python.org/3/library/site.html): it
    # belongs to every interpreter of that version, and ~/.local/bin/pythonX.Y is none of them
    found = {
        f"{m.group('prefix')}/bin/python{m.group('ver')}"
        for t in texts
        for m in _ENV_OF_PATH.finditer(t)
        if not m.group("prefix").endswith("/.local")
    }
    return found.pop() if len(found) == 1 else None


#: distributions whose import name is not their project name (each project's PyPI page): every distribution that
#: installs the module, so two of them in one environment write the same files. opencv-python's four variants all
#: install cv2, and only one of them may be installed (https://github.com/opencv/opencv-python#installation-and-usage)
IMPORT_NAMES: dict[str, tuple[str, ...]] = {
    "cv2": ("opencv-python", "opencv-contrib-python", "opencv-python-headless", "opencv-contrib-python-headless"),
    "PIL": ("Pillow",),
    "yaml": ("PyYAML",),
    "attr": ("attrs",),
    "sklearn": ("scikit-learn",),
    "pkg_resources": ("setuptools",),
}


def distributions_of(module: str) -> tuple[str, ...]:
    """The distributions that install a top-level module: the table above, else the project named as the module."""
    top = module.split(".")[0]
    return IMPORT_NAMES.get(top, (top,))


def import_name_hint() -> str:
    """How the distribution's name differs from the module's, for a fix that installs a missing module."""
    return ", ".join(f"{m} is {d[0]}" for m, d in IMPORT_NAMES.items())


# -- modules: what a release removed, and who ships a module pip does not install (compat_matrix/modules.toml) ------
MODULES = "modules.toml"


@dataclass(frozen=True)
class Removal:
    """Names (or a whole module, ``names`` empty) that release ``release`` of ``dist`` removed from ``module``."""

    module: str
    names: tuple[str, ...]
    dist: str  # a distribution, or "Python" (the standard library)
    release: str
    instead: str
    source: str


@dataclass(frozen=True)
class ModuleShipper:
    """Who ships a module that pip does not install under its own name, why it is missing, and what provides it."""

    module: str
    owner: str
    cause: str
    fix: str
    check: str
    source: str


@dataclass(frozen=True)
class ModuleFacts:
    removed: tuple[Removal, ...]
    shipped: dict[str, ModuleShipper]
    packages: dict[str, str] = field(default_factory=dict)  # top-level module -> its distribution on PyPI


class ModuleFactsError(ValueError):
    """compat_matrix/modules.toml does not follow its schema (a row without its source, a field of the wrong type)."""


def parse_module_facts(text: str, origin: str = MODULES) -> ModuleFacts:
    """The rows of a modules.toml text, validated; :class:`ModuleFactsError` names the row that is wrong."""
    from msdoctor.tomlcompat import tomllib

    data = tomllib.loads(text)
    if data.get("kind") != "module-facts":
        raise ModuleFactsError(f"{origin}: kind must be 'module-facts'")

    def strings(row: dict, where: str, keys: tuple[str, ...]) -> None:
        for k in keys:
            if not isinstance(row.get(k), str) or not row[k].strip():
                raise ModuleFactsError(f"{where}: '{k}' must be a non-empty string")
        if "https://" not in row["source"]:
            raise ModuleFactsError(f"{where}: 'source' must name its public source (a URL)")

    removed = []
    for i, row in enumerate(data.get("removed", []), 1):
        where = f"{origin}: [[removed]] #{i} ({row.get('module', '?')})"
        strings(row, where, ("module", "dist", "release", "instead", "source"))
        names = row.get("names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise ModuleFactsError(f"{where}: 'names' must be a list of identifiers")
        if not re.fullmatch(r"\d+(?:\.\d+)*", row["release"]):
            raise ModuleFactsError(f"{where}: 'release' must be a version (2.0, 3.12)")
        removed.append(Removal(row["module"], tuple(names), row["dist"], row["release"], row["instead"], row["source"]))
    shipped = {}
    for i, row in enumerate(data.get("module", []), 1):
        where = f"{origin}: [[module]] #{i} ({row.get('module', '?')})"
        strings(row, where, ("module", "owner", "cause", "fix", "check", "source"))
        shipped[row["module"]] = ModuleShipper(
            row["module"], row["owner"], row["cause"], row["fix"], row["check"], row["source"]
        )
    packages = {}
    for i, row in enumerate(data.get("package", []), 1):
        where = f"{origin}: [[package]] #{i} ({row.get('module', '?')})"
        strings(row, where, ("module", "dist", "source"))
        packages[row["module"]] = row["dist"]
    return ModuleFacts(tuple(removed), shipped, packages)


@functools.lru_cache(maxsize=1)
def module_facts() -> ModuleFacts:
    """The bundled compat_matrix/modules.toml (parsed once per process)."""
    from importlib import resources

    text = resources.files("msdoctor.compat_matrix").joinpath(MODULES).read_text(encoding="utf-8")
    return parse_module_facts(text)


def removal_of(module: str, name: str = "") -> Optional[Removal]:
    """The release that removed ``module.name`` (or, with no name, the module ``module`` or the package it is in);
    None when the data does not say so."""
    for r in module_facts().removed:
        if name and r.module == module and name in r.names:
            return r
        if not r.names and (module == r.module or module.startswith(r.module + ".")):
            return r
    return None


def known_package(module: str) -> Optional[str]:
    """The PyPI distribution of a well-known top-level module (transformers, torch, numpy, ...); None otherwise."""
    return module_facts().packages.get(module.split(".")[0])


def module_shipper(module: str) -> Optional[ModuleShipper]:
    """Who ships a top-level module that pip does not install (CPython's optional extensions); None otherwise."""
    return module_facts().shipped.get(module)


# -- the return codes of CANN's runtime (compat_matrix/acl_codes.toml) ---------------------------------------------
ACL_CODES = "acl_codes.toml"


@dataclass(frozen=True)
class AclCode:
    code: int
    meaning: str
    kind: str  # task-exception, timeout, internal, memory, setup
    what: str  # what the kind means
    collect: str  # what to collect for it
    source: str


def parse_acl_codes(text: str, origin: str = ACL_CODES) -> dict[int, AclCode]:
    """The codes of an acl_codes.toml text, each with its kind's text; :class:`ModuleFactsError` names a bad row."""
    from msdoctor.tomlcompat import tomllib

    data = tomllib.loads(text)
    if data.get("kind") != "acl-error-codes" or "https://" not in str(data.get("source", "")):
        raise ModuleFactsError(f"{origin}: kind must be 'acl-error-codes' and source a URL")
    kinds = {k.get("id"): k for k in data.get("kinds", [])}
    for k in kinds.values():
        if not all(isinstance(k.get(f), str) and k[f].strip() for f in ("id", "what", "collect")):
            raise ModuleFactsError(f"{origin}: [[kinds]] {k.get('id', '?')}: needs id, what and collect")
    codes = {}
    for i, row in enumerate(data.get("code", []), 1):
        k = kinds.get(row.get("kind", ""))
        if not isinstance(row.get("code"), int) or k is None or not str(row.get("meaning", "")).strip():
            raise ModuleFactsError(
                f"{origin}: [[code]] #{i} ({row.get('code', '?')}): needs an integer code, a "
                f"meaning and a kind defined in [[kinds]]"
            )
        codes[row["code"]] = AclCode(row["code"], row["meaning"], row["kind"], k["what"], k["collect"], data["source"])
    return codes


@functools.lru_cache(maxsize=1)
def acl_codes() -> dict[int, AclCode]:
    """The bundled compat_matrix/acl_codes.toml (parsed once per process)."""
    from importlib import resources

    return parse_acl_codes(resources.files("msdoctor.compat_matrix").joinpath(ACL_CODES).read_text(encoding="utf-8"))
