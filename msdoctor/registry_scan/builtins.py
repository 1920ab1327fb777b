"""The names an installed transformers / MindNLP / MindFormers already owns, read from its files with ast.

Sources (the installed code is the reference; read, never imported):

* transformers ``models/auto/configuration_auto.py``: ``CONFIG_MAPPING_NAMES`` (model_type -> config
  class). ``_LazyConfigMapping.register`` raises ``ValueError: '<name>' is already used by a
  Transformers config, pick another name.`` when the name is a key of it and ``exist_ok`` is false;
  names registered by other code (``_extra_content``) never raise, the later one silently wins
  (transformers 4.57.1, observed in the installed file).
* transformers ``models/auto/*_auto.py``: ``X_MAPPING = _LazyAutoMapping(CONFIG_MAPPING_NAMES,
  X_MAPPING_NAMES)`` and ``class AutoY: _model_mapping = X_MAPPING`` (or ``X_MAPPING.register`` inside
  ``AutoY.register``). ``_LazyAutoMapping.register`` raises ``'<cls>' is already used by a Transformers
  model.`` when the config class's ``__name__`` is a built-in config class name whose model_type is a
  key of that mapping (``auto_factory.py``).
* MindNLP 0.4.x: the same layout under ``mindnlp/transformers/models/auto/``, its own registry. 0.5.x
  reuses transformers' (no such directory).
* MindFormers (1.3.2 read): ``mindformers/models/auto/configuration_auto.py`` (same register logic, message
  "already used by a Mindformers config") and ``@MindFormerRegister.register(MindFormerModuleType.X,
  alias=...)`` decorators / ``register_cls`` calls, whose ``register`` silently replaces an existing
  entry (``mindformers/tools/register/register.py``).
* MindFormers 1.6+ / 2.x (2.1.0 read): ``register(module_type, alias=None, legacy=True, search_names=None)``.
  ``_add_class_name_prefix`` keys a MODELS or CONFIG class registered with ``legacy=False`` as
  ``"mcore_" + name``; ``search_names`` (and the name itself) go, prefixed the same way, into
  ``search_names_map[(module_type, key)] -> registry key``, which ``get_cls`` consults first, after
  prefixing the looked-up name by the run's ``use_legacy`` setting. So ``Qwen3ForCausalLM`` registered
  with the default ``legacy=True`` does not touch MindFormers' own ``mcore_Qwen3ForCausalLM``.
"""

from __future__ import annotations

import ast
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from msdoctor.registry_scan.parse import CACHE, Call, ModuleFacts, ParseCache, ParseError, dotted

LIBRARIES = ("transformers", "mindnlp", "mindformers")

#: where each library keeps its auto registries, relative to its package directory
AUTO_DIRS = {
    "transformers": ("models", "auto"),
    "mindnlp": ("transformers", "models", "auto"),
    "mindformers": ("models", "auto"),
}

#: MindFormerRegister.register's default module type (mindformers/tools/register/register.py)
MF_DEFAULT_TYPE = "TOOLS"
#: MindFormerRegister._add_class_name_prefix (mindformers 2.1.0 tools/register/register.py): NEW_CLASS_PREFIX,
#: applied when legacy=False and the module type is MODELS or CONFIG
MF_NEW_PREFIX = "mcore_"
MF_PREFIXED_TYPES = ("MODELS", "CONFIG")


def mf_key(module_type: str, name: str, legacy: Optional[bool] = True) -> str:
    """The registry key MindFormers files ``name`` under (``mcore_<name>`` for new-style MODELS / CONFIG)."""
    if legacy is False and module_type in MF_PREFIXED_TYPES:
        return MF_NEW_PREFIX + name
    return name


def mf_keys(module_type: str, name: str, legacy: Optional[bool]) -> tuple[str, ...]:
    """Every key a registration may land under: both when ``legacy`` is an expression (None)."""
    if legacy is None:
        return tuple(dict.fromkeys((mf_key(module_type, name, True), mf_key(module_type, name, False))))
    return (mf_key(module_type, name, legacy),)


@dataclass(frozen=True)
class MFCall:
    """One ``MindFormerRegister.register`` decorator or ``register_cls`` call, as far as it reads statically.

    legacy: the literal given (default True); None when it is an expression.
    search_names: the literal names given (a str, or a list / tuple / set of str).
    """

    module_type: str
    alias: Optional[str]
    cls_text: Optional[str]
    legacy: Optional[bool] = True
    search_names: tuple[str, ...] = ()
    search_names_text: Optional[str] = None
    legacy_text: Optional[str] = None

    @property
    def name(self) -> Optional[str]:
        if self.alias:
            return self.alias
        return self.cls_text.rsplit(".", 1)[-1] if self.cls_text else None

    def keys(self) -> tuple[str, ...]:
        return mf_keys(self.module_type, self.name, self.legacy) if self.name else ()

    def search_keys(self) -> tuple[str, ...]:
        """The ``search_names_map`` keys this registration sets (its own name included)."""
        if not self.name:
            return ()
        out: list[str] = []
        for n in (*self.search_names, self.name):
            out.extend(mf_keys(self.module_type, n, self.legacy))
        return tuple(dict.fromkeys(out))


def _literal_names(text: Optional[str]) -> tuple[str, ...]:
    """``'qwen3'`` / ``['a', 'b']`` as written -> names; anything not a literal -> ()."""
    if not text:
        return ()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(sorted(v for v in value if isinstance(v, str)))
    return ()


def _legacy_of(literal: object, given: bool) -> Optional[bool]:
    if not given:
        return True
    return literal if isinstance(literal, bool) else None


@dataclass(frozen=True)
class Owner:
    """Who owns a built-in name: distribution, version, the class, and where the table row is."""

    dist: str
    version: Optional[str]
    cls: Optional[str]
    path: str
    line: int

    @property
    def label(self) -> str:
        """ "transformers 4.57.1: Aimv2Config"."""
        head = f"{self.dist} {self.version}" if self.version else self.dist
        return f"{head}: {self.cls}" if self.cls else head


_AUTO_LOCK = threading.Lock()


@dataclass
class LibraryRegistry:
    """The built-in registries of one installed library.

    Attributes:
        library: its import name (transformers, mindnlp, mindformers).
        configs: model_type -> owner, the AutoConfig / CONFIG_MAPPING registry.
        config_types: config class name -> model_type (the library's reverse map: last row wins).
        auto: auto class ("AutoModelForCausalLM") or mapping variable ("MODEL_FOR_CAUSAL_LM_MAPPING")
            -> model_type -> owner (the model / tokenizer class of that row).
        decorated: MindFormers module type ("CONFIG") -> registry key -> owner (the key as MindFormers files
            it: ``mcore_<name>`` for a new-style class, see :func:`mf_key`).
        search_names: (module type, search key) -> registry key, MindFormers' ``search_names_map``.
        files_read: files parsed to build this.
        unreadable: files that should have been read and could not be (path, reason).
    """

    library: str
    dist: str
    version: Optional[str]
    root: str
    configs: dict[str, Owner] = field(default_factory=dict)
    config_types: dict[str, str] = field(default_factory=dict)
    _auto: dict[str, dict[str, Owner]] = field(default_factory=dict, repr=False)
    decorated: dict[str, dict[str, Owner]] = field(default_factory=dict)
    search_names: dict[tuple[str, str], str] = field(default_factory=dict)
    files_read: int = 0
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    #: reads the auto tables on first use of ``auto`` (most runs have no auto registration to compare)
    _auto_reader: Optional[Callable[["LibraryRegistry"], None]] = field(default=None, repr=False, compare=False)

    @property
    def auto(self) -> dict[str, dict[str, Owner]]:
        with _AUTO_LOCK:
            reader, self._auto_reader = self._auto_reader, None
            if reader is not None:
                reader(self)
        return self._auto

    @property
    def label(self) -> str:
        return f"{self.dist} {self.version}" if self.version else self.dist

    @property
    def has_registry(self) -> bool:
        return bool(self.configs or self.decorated)


@dataclass
class Builtins:
    """The built-in registries of the target environment, by library; notes say what was not read."""

    libraries: dict[str, LibraryRegistry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def get(self, library: Optional[str]) -> Optional[LibraryRegistry]:
        return self.libraries.get(library) if library else None

    def registry_for(self, library: Optional[str]) -> Optional[LibraryRegistry]:
        """The registry a registration made through ``library`` lands in (MindNLP 0.5 -> transformers')."""
        reg = self.get(library)
        if reg is not None and reg.has_registry:
            return reg
        if library in (None, "mindnlp"):
            return self.get("transformers")
        return None


def _module_name(root: str, path: str, package: str) -> str:
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    if rel.endswith("__init__"):
        rel = rel[: -len("__init__")].rstrip(".")
    return f"{package}.{rel}" if rel else package


def _parse(
    path: str, module: str, reg: LibraryRegistry, cache: ParseCache, tables: bool = True, data: Optional[bytes] = None
) -> Optional[ModuleFacts]:
    try:
        facts = cache.get(path, module, tables=tables, data=data, is_package=path.endswith("__init__.py"))
    except (OSError, ParseError) as exc:
        reason = exc.reason if isinstance(exc, ParseError) else f"{type(exc).__name__}: {exc}"
        reg.unreadable.append((path, reason))
        return None
    reg.files_read += 1
    return facts


def read_auto_dir(reg: LibraryRegistry, cache: ParseCache = CACHE) -> None:
    """Fill reg.configs / config_types / auto from ``<package>/<AUTO_DIRS>/*.py``."""
    auto_dir = os.path.join(reg.root, *AUTO_DIRS[reg.library])
    conf_path = os.path.join(auto_dir, "configuration_auto.py")
    if not os.path.isfile(conf_path):
        return
    conf = _parse(conf_path, _module_name(reg.root, conf_path, reg.library), reg, cache)
    if conf is None or "CONFIG_MAPPING_NAMES" not in conf.tables:
        return
    for name, (cls, line) in conf.tables["CONFIG_MAPPING_NAMES"].items():
        reg.configs[name] = Owner(reg.dist, reg.version, cls, conf_path, line)
        if cls:
            reg.config_types[cls] = name
    # the model / tokenizer / processor tables (8 more files, about 2/3 of the parse time) are read when a
    # registration is compared with them: LibraryRegistry.auto
    reg._auto_reader = lambda r: _read_auto_tables(r, auto_dir, cache)


def _read_auto_tables(reg: LibraryRegistry, auto_dir: str, cache: ParseCache) -> None:
    """Fill reg.auto from ``<auto_dir>/*_auto.py`` other than configuration_auto.py."""
    try:
        names = sorted(os.listdir(auto_dir))
    except OSError:
        return
    for fname in names:
        if not fname.endswith("_auto.py") or fname == "configuration_auto.py":
            continue
        path = os.path.join(auto_dir, fname)
        facts = _parse(path, _module_name(reg.root, path, reg.library), reg, cache)
        if facts is not None:
            _auto_tables(reg, facts)


def _auto_tables(reg: LibraryRegistry, facts: ModuleFacts) -> None:
    def owners(table_var: str) -> dict[str, Owner]:
        table = facts.tables.get(table_var, {})
        return {k: Owner(reg.dist, reg.version, v, facts.path, line) for k, (v, line) in table.items()}

    for mapping_var, table_var in facts.lazy_mappings.items():
        reg._auto[mapping_var] = owners(table_var)
    for cls, mapping_var in facts.class_mappings.items():
        if mapping_var in facts.lazy_mappings:
            reg._auto[cls] = owners(facts.lazy_mappings[mapping_var])


def _mf_module_type(expr_text: Optional[str], literal: object) -> str:
    """MindFormerModuleType.CONFIG -> "CONFIG"; the string 'config' -> "CONFIG"."""
    if isinstance(literal, str):
        return literal.upper()
    if expr_text:
        return expr_text.rsplit(".", 1)[-1]
    return MF_DEFAULT_TYPE


def mindformers_name(call: Call) -> Optional[MFCall]:
    """What a MindFormerRegister call registers, else None.

    Signatures (mindformers 2.1.0): ``register(module_type, alias, legacy, search_names)`` and
    ``register_cls(register_class, module_type, alias, legacy, search_names)``; 1.3.2 has the first three
    of each.
    """
    if call.receiver.rsplit(".", 1)[-1] != "MindFormerRegister":
        return None
    cls_text: Optional[str]
    if call.method == "register" and call.decorated:
        first = 0
        cls_text = call.decorated
    elif call.method == "register_cls":
        cls_expr = call.arg(0, "register_class")
        first = 1
        cls_text = cls_expr.ref if cls_expr is not None else None
    else:
        return None
    mt, alias = call.arg(first, "module_type"), call.arg(first + 1, "alias")
    legacy, names = call.arg(first + 2, "legacy"), call.arg(first + 3, "search_names")
    module_type = _mf_module_type(mt.text if mt else None, mt.literal if mt else None) if mt else MF_DEFAULT_TYPE
    alias_name = alias.literal if alias is not None and isinstance(alias.literal, str) else None
    return MFCall(
        module_type,
        alias_name,
        cls_text,
        legacy=_legacy_of(legacy.literal if legacy is not None else None, legacy is not None),
        search_names=_literal_names(names.text if names is not None else None),
        search_names_text=names.text if names is not None else None,
        legacy_text=legacy.text if legacy is not None else None,
    )


#: ``@MindFormerRegister.register(<args without parentheses>)`` [more decorators] ``class Name``: the form every
#: registration in MindFormers 1.3.2 has (read: 229 decorators); anything else falls back to a full ast parse
_MF_DECORATOR = re.compile(
    rb"^[ \t]*@(?:[\w.]*\.)?MindFormerRegister\.register\((?P<args>[^()]*)\)[ \t]*\r?\n"
    rb"(?:[ \t]*@[^\n]*\n)*[ \t]*class[ \t]+(?P<cls>\w+)",
    re.M,
)


def _fast_decorators(data: bytes) -> Optional[list[tuple[MFCall, int]]]:
    """(registration, line) of every decorator, or None when some registration has another form."""
    found = []
    for m in _MF_DECORATOR.finditer(data):
        try:
            call = ast.parse(b"f(" + m.group("args") + b")", mode="eval").body
        except (SyntaxError, ValueError):
            return None
        if not isinstance(call, ast.Call):
            return None
        args = {i: a for i, a in enumerate(call.args)}
        kw = {k.arg: k.value for k in call.keywords}
        mt = args.get(0, kw.get("module_type"))
        alias = args.get(1, kw.get("alias"))
        legacy = args.get(2, kw.get("legacy"))
        names = args.get(3, kw.get("search_names"))
        mt_name = MF_DEFAULT_TYPE
        if isinstance(mt, ast.Constant) and isinstance(mt.value, str):
            mt_name = mt.value.upper()
        elif mt is not None:
            mt_name = (dotted(mt) or MF_DEFAULT_TYPE).rsplit(".", 1)[-1]
        alias_name = alias.value if isinstance(alias, ast.Constant) and isinstance(alias.value, str) else None
        line = data.count(b"\n", 0, m.start()) + 1
        legacy_value = _legacy_of(legacy.value if isinstance(legacy, ast.Constant) else None, legacy is not None)
        names_text = ast.unparse(names) if names is not None else None
        found.append(
            (
                MFCall(
                    mt_name,
                    alias_name,
                    m.group("cls").decode(),
                    legacy=legacy_value,
                    search_names=_literal_names(names_text),
                    search_names_text=names_text,
                    legacy_text=ast.unparse(legacy) if legacy is not None else None,
                ),
                line,
            )
        )
    if len(found) != data.count(b"MindFormerRegister.register"):
        return None  # register_cls calls or unusual decorators: let the full parse read them
    return found


def read_mindformers_decorated(reg: LibraryRegistry, cache: ParseCache = CACHE) -> None:
    """Fill reg.decorated from every ``MindFormerRegister.register`` / ``register_cls`` in the package."""
    for path in iter_py_files(reg.root):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            reg.unreadable.append((path, f"{type(exc).__name__}: {exc}"))
            continue
        if b"MindFormerRegister" not in data:  # text prefilter: parse only files that can register
            continue
        fast = _fast_decorators(data)
        if fast is not None:
            reg.files_read += 1
            for mf, line in fast:
                _add_builtin(reg, mf, mf.cls_text or "", path, line)
            continue
        facts = _parse(path, _module_name(reg.root, path, reg.library), reg, cache, tables=False, data=data)
        if facts is None:
            continue
        for call in facts.calls:
            found = mindformers_name(call)
            if found is not None and found.name:
                _add_builtin(reg, found, (found.cls_text or found.name).rsplit(".", 1)[-1], path, call.line)


def _add_builtin(reg: LibraryRegistry, mf: MFCall, cls: str, path: str, line: int) -> None:
    """File one built-in registration as MindFormers does: its registry key(s) and its search names."""
    owner = Owner(reg.dist, reg.version, cls, path, line)
    keys = mf.keys()
    for key in keys:
        reg.decorated.setdefault(mf.module_type, {})[key] = owner
    if keys:
        for skey in mf.search_keys():
            reg.search_names[(mf.module_type, skey)] = keys[0]


def iter_py_files(root: str) -> Iterable[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for fname in sorted(filenames):
            if fname.endswith(".py"):
                yield os.path.join(dirpath, fname)


def read_library(
    library: str, package_dir: str, dist: str, version: Optional[str], cache: ParseCache = CACHE
) -> LibraryRegistry:
    """The built-in registries of one installed library whose package directory is ``package_dir``."""
    reg = LibraryRegistry(library, dist, version, package_dir)
    read_auto_dir(reg, cache)
    if library == "mindformers":
        read_mindformers_decorated(reg, cache)
    return reg
