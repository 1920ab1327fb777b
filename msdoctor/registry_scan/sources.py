"""Registrations in a set of source files (the user's project, or one installed distribution), names resolved statically.

A :class:`SourceSet` knows every module of the set by dotted name; files whose text can hold a
registration (a cheap byte search) are parsed up front, any other module only when a name has
to be followed into it (``from .configs import MyConfig``; ``MODEL_TYPE = "aimv2"``).
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Optional, Sequence
from urllib.parse import unquote, urlparse

from msdoctor.inputs import read_bounded
from msdoctor.registry_scan.builtins import LIBRARIES, MFCall, mindformers_name
from msdoctor.registry_scan.parse import CACHE, Call, Expr, ModuleFacts, ParseCache, ParseError

#: directories never part of a project: VCS, caches, build output, dependencies
SKIP_DIRS = frozenset(
    {
        "__pycache__",
        "node_modules",
        "site-packages",
        "dist-packages",
        "build",
        "dist",
        "htmlcov",
    }
)
#: a directory holding one of these is an environment (venv / conda), not project code
ENV_MARKERS = ("pyvenv.cfg", "conda-meta")
#: stop walking a "project" that is really a home directory
MAX_PROJECT_FILES = 20_000
#: libraries that are never project modules, even when a project file shares the last name part
NEVER_LOCAL = frozenset(LIBRARIES) | {"torch", "mindspore", "mindtorch"}
CONFIG_BASES = ("PretrainedConfig", "PreTrainedConfig")

#: names a registry receiver is written with: AutoConfig / AutoModel* / CONFIG_MAPPING / *_MAPPING /
#: MindFormerRegister (an alias still names the class in its import line)
_RECEIVER_BYTES = (b"Auto", b"MAPPING", b"MindFormerRegister")


def may_register(data: bytes) -> bool:
    """Text prefilter: can this file hold a registry registration? (cheap byte searches, no parse)."""
    return b"register" in data and any(n in data for n in _RECEIVER_BYTES)


def project_prefilter(data: bytes) -> bool:
    """Project files: registrations, or config classes setting a model_type."""
    return b"model_type" in data or may_register(data)


@dataclass(frozen=True)
class Loc:
    path: str
    line: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True)
class Registration:
    """One registration call or decorator, as far as it could be resolved.

    Attributes:
        kind: "config" (AutoConfig / CONFIG_MAPPING), "auto" (AutoModel* / AutoTokenizer / *_MAPPING,
            keyed by the config class), "mindformers" (MindFormerRegister).
        library: the library the registry belongs to (from the imports), None when not visible.
        api: the call as written ("AutoConfig.register").
        target: "AutoConfig", "CONFIG_MAPPING", the auto class ("AutoModelForCausalLM"), or the
            MindFormers module type ("CONFIG").
        name: the name registered: model_type, the config class's ``__name__``, or the MindFormers
            alias / class name; None when it could not be resolved statically.
        name_text: the name argument as written.
        name_at: where the name's string is written (a ``model_type = "..."`` line), when known.
        key_id: what the registry is keyed by, for telling two registrations apart (the name, or the
            config class's identity for auto registrations).
        cls / cls_id: the registered class as written, and its identity ("file::Class" for a class of
            the set, "module:Class" for one imported from outside it).
        cls_model_type / cls_model_type_at: the registered config class's own model_type, if known.
        exist_ok: the literal value given; None when it is an expression.
        at: the call's file and line. origin: "project" or "<distribution> <version>".
        mf: for a MindFormers registration, the call as read (legacy=, search_names=); its registry
            key is ``key_id`` (``mcore_<name>`` for a new-style MODELS / CONFIG class).
    """

    kind: str
    library: Optional[str]
    api: str
    target: str
    name: Optional[str]
    name_text: str
    at: Loc
    origin: str
    name_at: Optional[Loc] = None
    key_id: Optional[str] = None
    cls: Optional[str] = None
    cls_id: Optional[str] = None
    cls_model_type: Optional[str] = None
    cls_model_type_at: Optional[Loc] = None
    exist_ok: Optional[bool] = False
    mf: Optional[MFCall] = None


@dataclass(frozen=True)
class ConfigClass:
    """A config class of the project that sets its own model_type (registered or not)."""

    name: str
    cls_id: str
    model_type: str
    library: Optional[str]
    base: str  # the library class it derives from ("PretrainedConfig", "LlamaConfig")
    at: Loc  # the model_type line


@dataclass
class ScanResult:
    """What one source set holds: registrations, config classes, and what could not be read."""

    origin: str
    root: str
    registrations: list[Registration] = field(default_factory=list)
    config_classes: list[ConfigClass] = field(default_factory=list)
    files_seen: int = 0
    files_parsed: int = 0
    unparsable: list[tuple[str, Optional[int], str]] = field(default_factory=list)
    truncated: bool = False


@dataclass(frozen=True)
class Sym:
    """Where a name leads: a class / constant / module of the set, or something outside it."""

    module: str
    name: Optional[str]
    kind: str  # "class" | "const" | "module" | "external" | "unknown"


@dataclass(frozen=True)
class SourceFile:
    path: str
    module: str
    is_package: bool = False


def module_name(rel: str) -> tuple[str, bool]:
    """("pkg.sub", is_package) for a path relative to a source root ("pkg/sub.py", "pkg/__init__.py")."""
    stem = rel[:-3] if rel.endswith(".py") else rel
    parts = [p for p in stem.replace(os.sep, "/").split("/") if p]
    if parts and parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


class SourceSet:
    """The modules of one project or distribution, parsed lazily through a shared cache."""

    def __init__(
        self,
        origin: str,
        root: str,
        files: Sequence[SourceFile],
        *,
        cache: ParseCache = CACHE,
        script_style: bool = True,
    ) -> None:
        self.origin = origin
        self.root = root
        self.cache = cache
        self.script_style = script_style  # scripts import siblings (`from config import X`)
        self.files: dict[str, SourceFile] = {}
        self.by_last: dict[str, list[str]] = {}
        for f in files:
            self._add(f.module, f)
            if f.module.startswith("src."):  # src layout: the package is importable without "src."
                self._add(f.module[4:], f)
        self._facts: dict[str, Optional[ModuleFacts]] = {}
        self.result = ScanResult(origin, root)

    def _add(self, module: str, f: SourceFile) -> None:
        if module and module not in self.files:
            self.files[module] = f
            self.by_last.setdefault(module.rsplit(".", 1)[-1], []).append(module)

    # -- parsing ------------------------------------------------------------------
    def scan(self, prefilter: Callable[[bytes], bool] = may_register) -> ScanResult:
        """Parse every file whose bytes pass ``prefilter``; collect registrations and config classes."""
        seen: set[str] = set()
        for module, f in self.files.items():
            if f.path in seen:
                continue
            seen.add(f.path)
            self.result.files_seen += 1
            try:
                data = read_bounded(f.path)  # a FIFO, a /dev/zero link or a 77 MB module is skipped, said so
            except OSError as exc:
                self.result.unparsable.append((f.path, None, f"{type(exc).__name__}: {exc.strerror or exc}"))
                continue
            if not prefilter(data):
                continue
            self._load(module, data)
        collected: set[str] = set()
        for module, facts in list(self._facts.items()):
            path = self.files[module].path
            if facts is not None and path in seen and path not in collected:  # src/ aliases: one file, once
                collected.add(path)
                self._collect(facts)
        return self.result

    def _load(self, module: str, data: Optional[bytes] = None) -> Optional[ModuleFacts]:
        if module in self._facts:
            return self._facts[module]
        f = self.files[module]
        try:
            facts = self.cache.get(f.path, module, is_package=f.is_package, data=data)
            self.result.files_parsed += 1
        except ParseError as exc:
            self.result.unparsable.append((f.path, exc.line, exc.reason))
            facts = None
        except OSError as exc:
            self.result.unparsable.append((f.path, None, f"{type(exc).__name__}: {exc.strerror or exc}"))
            facts = None
        self._facts[module] = facts
        return facts

    def facts(self, module: str) -> Optional[ModuleFacts]:
        return self._load(module) if module in self.files else None

    # -- name resolution --------------------------------------------------------------
    def find_module(self, name: str, near: Optional[str] = None) -> Optional[str]:
        """The module of this set that ``import name`` written in module ``near`` reaches, if any."""
        if name in self.files:
            return name
        top = name.split(".", 1)[0]
        if top in NEVER_LOCAL:
            return None
        if self.script_style and near:
            f = self.files.get(near)
            pkg = near if f is not None and f.is_package else near.rpartition(".")[0]
            if pkg and f"{pkg}.{name}" in self.files:
                return f"{pkg}.{name}"
        if self.script_style:
            last = name.rsplit(".", 1)[-1]
            cands = [m for m in self.by_last.get(last, ()) if m.endswith("." + name)]
            if len(cands) == 1:
                return cands[0]
        return None

    def resolve_symbol(self, module: str, name: str, depth: int = 0) -> Sym:
        m = self.facts(module)
        if m is None:
            sub = self.find_module(f"{module}.{name}")
            return Sym(sub, None, "module") if sub else Sym(module, name, "external")
        if name in m.classes:
            return Sym(module, name, "class")
        if name in m.constants:
            return Sym(module, name, "const")
        imp = m.imports.get(name)
        if imp is not None:
            mod, attr = imp
            target = self.find_module(mod, near=module) or mod
            if attr is None:
                return Sym(target, None, "module")
            sub = self.find_module(f"{mod}.{attr}", near=module)
            if sub:
                return Sym(sub, None, "module")
            if depth > 8:
                return Sym(target, attr, "unknown")
            return self.resolve_symbol(target, attr, depth + 1)
        for star in m.star_imports:
            star_module = self.find_module(star, near=module)
            if star_module is None:
                return Sym(star, name, "external")  # best guess: the name comes from that library
            if depth <= 8:
                found = self.resolve_symbol(star_module, name, depth + 1)
                if found.kind != "unknown":
                    return found
        return Sym(module, name, "unknown")

    def resolve_dotted(self, module: str, ref: str) -> tuple[Sym, tuple[str, ...]]:
        """Follow ``a.b.C`` from module: the symbol reached and the attribute parts left over."""
        parts = ref.split(".")
        sym = self.resolve_symbol(module, parts[0])
        i = 1
        while sym.kind == "module" and i < len(parts):
            sym = self.resolve_symbol(sym.module, parts[i])
            i += 1
        return sym, tuple(parts[i:])

    def qualified(self, module: str, ref: str) -> tuple[str, Sym]:
        sym, rest = self.resolve_dotted(module, ref)
        head = [sym.module] if sym.name is None else [sym.module, sym.name]
        return ".".join(head + list(rest)), sym

    def class_id(self, module: str, name: str) -> str:
        """Identity of a class: "file::Class" inside the set (one file may have two module names), else "module:Class"."""
        f = self.files.get(module)
        return f"{f.path}::{name}" if f is not None else f"{module}:{name}"

    def path_of(self, module: str) -> str:
        f = self.files.get(module)
        return f.path if f is not None else module

    def resolve_str(self, module: str, expr: Optional[Expr], depth: int = 0) -> Optional[tuple[str, Loc]]:
        """The string an expression stands for (literal, constant, ``Cls.model_type``), and where it is written."""
        if expr is None:
            return None
        if isinstance(expr.literal, str):
            return expr.literal, Loc(self.path_of(module), expr.line)
        if not expr.ref or depth > 8:
            return None
        parts = expr.ref.split(".")
        if len(parts) >= 2 and parts[-1] == "model_type":
            sym, rest = self.resolve_dotted(module, ".".join(parts[:-1]))
            if not rest and sym.kind == "class" and sym.name:
                return self.class_model_type(sym.module, sym.name, depth + 1)
            return None
        sym, rest = self.resolve_dotted(module, expr.ref)
        if not rest and sym.kind == "const" and sym.name:
            value, line = self.facts(sym.module).constants[sym.name]  # type: ignore[union-attr]
            return value, Loc(self.path_of(sym.module), line)
        return None

    def class_model_type(self, module: str, name: str, depth: int = 0) -> Optional[tuple[str, Loc]]:
        """The model_type a class of the set has (its own, or inherited from a base in the set)."""
        m = self.facts(module)
        cls = m.classes.get(name) if m else None
        if cls is None or depth > 10:
            return None
        if cls.model_type is not None:
            return self.resolve_str(module, cls.model_type, depth + 1)
        for base in cls.bases:
            sym, rest = self.resolve_dotted(module, base)
            if not rest and sym.kind == "class" and sym.name and (sym.module, sym.name) != (module, name):
                found = self.class_model_type(sym.module, sym.name, depth + 1)
                if found:
                    return found
        return None

    def config_base(self, module: str, name: str, depth: int = 0) -> Optional[tuple[Optional[str], str]]:
        """(library, library class) when the class derives from a library config class, else None."""
        m = self.facts(module)
        cls = m.classes.get(name) if m else None
        if cls is None or depth > 10:
            return None
        for base in cls.bases:
            sym, rest = self.resolve_dotted(module, base)
            if rest or not sym.name:
                continue
            if sym.kind == "class" and (sym.module, sym.name) != (module, name):
                found = self.config_base(sym.module, sym.name, depth + 1)
                if found:
                    return found
            elif sym.kind in ("external", "unknown"):
                top = sym.module.split(".", 1)[0]
                lib = top if top in LIBRARIES else None
                if sym.name in CONFIG_BASES or (lib and sym.name.endswith("Config")):
                    return lib, sym.name
        return None

    # -- what a module registers ------------------------------------------------------------
    def _collect(self, m: ModuleFacts) -> None:
        for call in m.calls:
            reg = self._registration(m, call)
            if reg is not None:
                self.result.registrations.append(reg)
        for cls in m.classes.values():
            if cls.model_type is None:
                continue
            base = self.config_base(m.module, cls.name)
            value = self.resolve_str(m.module, cls.model_type)
            if base is None or value is None:
                continue
            self.result.config_classes.append(
                ConfigClass(cls.name, self.class_id(m.module, cls.name), value[0], base[0], base[1], value[1])
            )

    def _class_ref(self, module: str, expr: Optional[Expr]) -> tuple[Optional[str], Optional[str], Optional[Sym]]:
        """(class name as Python will see it, "module:Class", symbol) for a class argument."""
        if expr is None or not expr.ref:
            return (expr.text if expr else None), None, None
        sym, rest = self.resolve_dotted(module, expr.ref)
        if rest or not sym.name:
            return expr.ref.rsplit(".", 1)[-1], None, None
        return sym.name, self.class_id(sym.module, sym.name), sym

    def _registration(self, m: ModuleFacts, call: Call) -> Optional[Registration]:
        full, sym = self.qualified(m.module, call.receiver)
        symbol = full.rsplit(".", 1)[-1]
        top = full.split(".", 1)[0]
        if sym.kind in ("class", "const") or (sym.kind == "module" and top not in LIBRARIES):
            return None  # a registry the project defines itself
        library = top if top in LIBRARIES else None
        at = Loc(m.path, call.line)
        api = f"{call.receiver}.{call.method}"
        if symbol == "MindFormerRegister":
            found = mindformers_name(call)
            if found is None:
                return None
            cls_text = found.cls_text
            cls_name, cls_id, _ = self._class_ref(m.module, Expr(cls_text or "", call.line, ref=cls_text))
            if call.decorated:
                cls_name, cls_id = call.decorated, self.class_id(m.module, call.decorated)
            if not found.alias and cls_name:  # MindFormers keys by register_class.__name__
                found = replace(found, cls_text=cls_name)
            name = found.alias or cls_name
            keys = found.keys() if name else ()
            # MindFormerRegister.register has no exist_ok: it always replaces (exist_ok stays False)
            return Registration(
                "mindformers",
                "mindformers",
                api,
                found.module_type,
                name,
                repr(found.alias) if found.alias else str(cls_name),
                at,
                self.origin,
                key_id=keys[0] if keys else name,
                cls=cls_name,
                cls_id=cls_id,
                mf=found,
            )
        if call.method != "register":
            return None
        exist_index = 3 if symbol == "AutoTokenizer" else 2
        exist = call.arg(exist_index, "exist_ok")
        exist_ok: Optional[bool] = False
        if exist is not None:
            exist_ok = exist.literal if isinstance(exist.literal, bool) else None
        if symbol in ("AutoConfig", "CONFIG_MAPPING"):
            name_expr = call.arg(0, "model_type") or call.arg(0, "key")
            cls_expr = call.arg(1, "config") or call.arg(1, "value")
            resolved = self.resolve_str(m.module, name_expr)
            cls_name, cls_id, cls_sym = self._class_ref(m.module, cls_expr)
            own = None
            if cls_sym is not None and cls_sym.kind == "class" and cls_sym.name:
                own = self.class_model_type(cls_sym.module, cls_sym.name)
            name_at = (
                resolved[1] if resolved and resolved[1] != Loc(m.path, name_expr.line if name_expr else None) else None
            )
            return Registration(
                "config",
                library,
                api,
                symbol,
                resolved[0] if resolved else None,
                name_expr.text if name_expr else "?",
                at,
                self.origin,
                name_at=name_at,
                key_id=resolved[0] if resolved else None,
                cls=cls_name,
                cls_id=cls_id,
                cls_model_type=own[0] if own else None,
                cls_model_type_at=own[1] if own else None,
                exist_ok=exist_ok,
            )
        if symbol.startswith(("Auto", "TFAuto", "FlaxAuto")) or symbol.endswith("_MAPPING"):
            key_expr = call.arg(0, "config_class") or call.arg(0, "key")
            value_expr = call.arg(1, "model_class") or call.arg(1, "slow_tokenizer_class") or call.arg(1, "value")
            cfg_name, cfg_id, _ = self._class_ref(m.module, key_expr)
            cls_name, cls_id, _ = self._class_ref(m.module, value_expr)
            return Registration(
                "auto",
                library,
                api,
                symbol,
                cfg_name,
                key_expr.text if key_expr else "?",
                at,
                self.origin,
                key_id=cfg_id or cfg_name,
                cls=cls_name,
                cls_id=cls_id,
                exist_ok=exist_ok,
            )
        return None


# -- which files make up a project / a distribution ------------------------------------------------
def _is_env_dir(path: str) -> bool:
    return any(os.path.exists(os.path.join(path, marker)) for marker in ENV_MARKERS)


def project_files(
    root: str, *, max_files: int = MAX_PROJECT_FILES, skip_under: Sequence[str] = ()
) -> tuple[list[SourceFile], bool]:
    """The .py files of a project, without VCS / cache / build / environment directories.

    Returns (files, truncated): truncated when the walk stopped at max_files.
    """
    out: list[SourceFile] = []
    skip = {os.path.realpath(p) for p in skip_under}
    for dirpath, dirnames, filenames in os.walk(root):
        keep = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in SKIP_DIRS or d.endswith(".egg-info"):
                continue
            full = os.path.join(dirpath, d)
            if _is_env_dir(full) or (skip and os.path.realpath(full) in skip):
                continue
            keep.append(d)
        dirnames[:] = keep
        for fname in sorted(filenames):
            if not fname.endswith(".py"):
                continue
            path = os.path.join(dirpath, fname)
            mod, is_pkg = module_name(os.path.relpath(path, root))
            out.append(SourceFile(path, mod, is_pkg))
            if len(out) >= max_files:
                return out, True
    return out, False


def config_dir_files(config_path: Optional[str], project_root: str) -> list[SourceFile]:
    """The .py files next to a training config (remote-code models keep them there), when outside the project."""
    if not config_path:
        return []
    folder = os.path.dirname(os.path.abspath(config_path))
    root = os.path.realpath(project_root)
    real = os.path.realpath(folder)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [SourceFile(os.path.join(folder, n), n[:-3]) for n in names if n.endswith(".py")]


def record_files(dist_path: str, location: str) -> Optional[list[SourceFile]]:
    """The .py files a distribution installed, from its RECORD (dist-info) or installed-files.txt (egg-info)."""
    record = os.path.join(dist_path, "RECORD")
    rows: list[str] = []
    base = location
    try:
        with open(record, encoding="utf-8", errors="replace") as f:
            rows = [r[0] for r in csv.reader(io.StringIO(f.read())) if r]
    except OSError:
        try:
            with open(os.path.join(dist_path, "installed-files.txt"), encoding="utf-8", errors="replace") as f:
                rows = [line.strip() for line in f if line.strip()]
            base = dist_path
        except OSError:
            return None
    out = []
    for rel in rows:
        if not rel.endswith(".py"):
            continue
        path = os.path.normpath(os.path.join(base, rel))
        rel_loc = os.path.relpath(path, location)
        if rel_loc.startswith(".."):
            continue  # scripts in bin/, files outside the sys.path entry: not importable modules
        mod, is_pkg = module_name(rel_loc)
        out.append(SourceFile(path, mod, is_pkg))
    return out


def editable_source(direct_url: Optional[str]) -> Optional[str]:
    """The source directory of an editable install (``file://`` URL of direct_url.json)."""
    if not direct_url or not direct_url.startswith("file:"):
        return None
    path = unquote(urlparse(direct_url).path)
    return path if os.path.isdir(path) else None


def requires_any(requires: Iterable[str], names: Iterable[str]) -> bool:
    """True when a Requires-Dist list names one of ``names`` (any extra, any marker)."""
    from packaging.utils import canonicalize_name

    wanted = {canonicalize_name(n) for n in names}
    for req in requires:
        head = req.split(";", 1)[0].strip()
        name = ""
        for ch in head:
            if ch.isalnum() or ch in "._-":
                name += ch
            else:
                break
        if name and canonicalize_name(name) in wanted:
            return True
    return False
