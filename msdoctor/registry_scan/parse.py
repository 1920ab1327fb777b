"""One Python source file -> the facts a registry scan needs (pure ast, no import, no execution)."""

from __future__ import annotations

import ast
import os
import threading
from dataclasses import dataclass, field
from typing import Optional, Union

#: methods whose calls are registrations: transformers/MindNLP/MindFormers ``register``, MindFormers ``register_cls``
REGISTER_METHODS = ("register", "register_cls")


@dataclass(frozen=True)
class Expr:
    """A call argument or a ``model_type`` value, as far as static reading goes.

    Exactly one of literal / ref is set when the value can be resolved further;
    ``text`` is the source text for messages either way.
    """

    text: str
    line: int
    literal: Optional[Union[str, bool]] = None  # a str or bool constant
    ref: Optional[str] = None  # a dotted name: Cls, Cls.model_type, mod.CONST


@dataclass(frozen=True)
class ClassDef:
    """A class statement: its bases (dotted names) and a ``model_type = ...`` in its body."""

    name: str
    line: int
    bases: tuple[str, ...]
    model_type: Optional[Expr] = None


@dataclass(frozen=True)
class Call:
    """A ``<receiver>.register(...)`` / ``register_cls(...)`` call, or a decorator of that shape.

    Attributes:
        receiver: dotted name the method is called on ("AutoConfig", "transformers.AutoConfig").
        decorated: for a class decorator, the name of the decorated class.
    """

    receiver: str
    method: str
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    line: int
    decorated: Optional[str] = None

    def kwarg(self, name: str) -> Optional[Expr]:
        for key, value in self.kwargs:
            if key == name:
                return value
        return None

    def arg(self, index: int, name: str) -> Optional[Expr]:
        """The argument given at position ``index`` or as keyword ``name``."""
        if index < len(self.args):
            return self.args[index]
        return self.kwarg(name)


@dataclass
class ModuleFacts:
    """What one module holds, for the registry scan.

    Attributes:
        imports: local name -> (module, attribute or None for ``import module``), relative
            imports resolved against ``module``.
        star_imports: modules imported with ``from m import *``.
        constants: module-level ``NAME = "str"`` assignments -> (value, line).
        classes: class name -> ClassDef (module-level classes win over nested ones).
        calls: every registration-shaped call and decorator, in source order.
        tables: module-level literal mappings (``X = OrderedDict([("a", "A"), ...])``) -> key ->
            (first string of the value or None, line); only read for library files (``tables=True``,
            which also reads only module level, class bodies and ``register`` methods).
        lazy_mappings: ``X_MAPPING = _LazyAutoMapping(CONFIG_MAPPING_NAMES, X_NAMES)`` -> "X_NAMES".
        class_mappings: auto class -> the mapping variable it registers into (``_model_mapping = X``
            in its body, or an ``X.register(...)`` call in one of its methods).
        class_bases: class name -> dotted bases, for auto classes inheriting a mapping.
    """

    path: str
    module: str
    is_package: bool = False
    imports: dict[str, tuple[str, Optional[str]]] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    constants: dict[str, tuple[str, int]] = field(default_factory=dict)
    classes: dict[str, ClassDef] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    tables: dict[str, dict[str, tuple[Optional[str], int]]] = field(default_factory=dict)
    lazy_mappings: dict[str, str] = field(default_factory=dict)
    class_mappings: dict[str, str] = field(default_factory=dict)


class ParseError(Exception):
    """A file could not be read or parsed; ``line`` is where, when known."""

    def __init__(self, reason: str, line: Optional[int] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a chain of Name/Attribute nodes, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse is best effort, for messages only
        return "<expression>"


def to_expr(node: ast.AST) -> Expr:
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool)):
        return Expr(_text(node), line, literal=node.value)
    ref = dotted(node)
    return Expr(_text(node), line, ref=ref)


def resolve_relative(module: str, is_package: bool, level: int, target: Optional[str]) -> str:
    """The absolute module of ``from <.level><target> import ...`` written in ``module``."""
    if level == 0:
        return target or ""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


def _first_str(node: ast.AST) -> Optional[str]:
    """The first string constant in a mapping value: "Aimv2Config", or the slow tokenizer of a tuple."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            return sub.value
    return None


def literal_table(node: ast.AST) -> Optional[dict[str, tuple[Optional[str], int]]]:
    """Keys of a literal mapping: ``{...}``, ``dict([...])``, ``OrderedDict([...])``, ``OrderedDict[str, str]([...])``."""
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                out[k.value] = (_first_str(v) if v is not None else None, k.lineno)
        return out
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return None
    func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
    name = dotted(func) or ""
    if name.rsplit(".", 1)[-1] not in ("OrderedDict", "dict"):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Dict):
        return literal_table(arg)
    if not isinstance(arg, (ast.List, ast.Tuple)):
        return None
    out = {}
    for elt in arg.elts:
        if isinstance(elt, ast.Tuple) and len(elt.elts) == 2:
            k, v = elt.elts
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                out[k.value] = (_first_str(v), k.lineno)
    return out


class _Visitor(ast.NodeVisitor):
    def __init__(self, facts: ModuleFacts, tables: bool) -> None:
        self.facts = facts
        self.want_tables = tables
        #: enclosing scopes, innermost last: ("class", name) or ("def", name)
        self.scopes: list[tuple[str, str]] = []
        self.decorators: set[int] = set()

    def _class_body(self) -> Optional[str]:
        """The class whose body we are directly in, if any."""
        if self.scopes and self.scopes[-1][0] == "class":
            return self.scopes[-1][1]
        return None

    def _method_owner(self) -> Optional[str]:
        """The class of the method we are in (directly a method of it), if any."""
        if len(self.scopes) >= 2 and self.scopes[-1][0] == "def" and self.scopes[-2][0] == "class":
            return self.scopes[-2][1]
        return None

    # imports ------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.facts.imports.setdefault(alias.asname, (alias.name, None))
            else:  # `import a.b` binds `a`
                top = alias.name.split(".", 1)[0]
                self.facts.imports.setdefault(top, (top, None))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = resolve_relative(self.facts.module, self.facts.is_package, node.level or 0, node.module)
        for alias in node.names:
            if alias.name == "*":
                self.facts.star_imports.append(base)
                continue
            self.facts.imports.setdefault(alias.asname or alias.name, (base, alias.name))

    # assignments ----------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        if not self._assign(node.targets, node.value):
            self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None or not self._assign([node.target], node.value):
            self.generic_visit(node)

    def _assign(self, targets: list[ast.expr], value: ast.expr) -> bool:
        """Record what the assignment defines; True when its value holds nothing more to visit."""
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            return False
        cls = self._class_body()
        if cls is not None:  # model_type / _model_mapping in a class body
            if "model_type" in names:
                self._set_model_type(cls, to_expr(value))
            if "_model_mapping" in names and isinstance(value, ast.Name):
                self.facts.class_mappings.setdefault(cls, value.id)
            return isinstance(value, (ast.Constant, ast.Name))
        if self.scopes:
            return False
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for n in names:
                self.facts.constants[n] = (value.value, value.lineno)
            return True
        if self.want_tables:
            table = literal_table(value)
            if table is not None:
                for n in names:
                    self.facts.tables[n] = table
                return True  # a literal table holds no registration: skip its (many) nodes
            if isinstance(value, ast.Call) and (dotted(value.func) or "").endswith("_LazyAutoMapping"):
                if len(value.args) >= 2 and isinstance(value.args[1], ast.Name):
                    for n in names:
                        self.facts.lazy_mappings[n] = value.args[1].id
                return True
        return False

    def _set_model_type(self, cls: str, expr: Expr) -> None:
        old = self.facts.classes.get(cls)
        if old is not None and old.model_type is None:
            self.facts.classes[cls] = ClassDef(old.name, old.line, old.bases, expr)

    # classes, functions, calls ---------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = tuple(d for d in (dotted(b) for b in node.bases) if d)
        if node.name not in self.facts.classes or not self.scopes:
            self.facts.classes[node.name] = ClassDef(node.name, node.lineno, bases)
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call):
                call = self._call(dec, decorated=node.name)
                if call is not None:
                    self.facts.calls.append(call)
                    self.decorators.add(id(dec))
        self.scopes.append(("class", node.name))
        self.generic_visit(node)
        self.scopes.pop()

    def _function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> None:
        self.scopes.append(("def", node.name))
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Call(self, node: ast.Call) -> None:
        if id(node) not in self.decorators:
            call = self._call(node)
            if call is not None:
                self.facts.calls.append(call)
                owner = self._method_owner()
                # `TOKENIZER_MAPPING.register(...)` inside AutoTokenizer.register: the mapping it uses
                if owner and call.method == "register" and call.receiver.isupper():
                    self.facts.class_mappings.setdefault(owner, call.receiver)
        self.generic_visit(node)

    def _call(self, node: ast.Call, decorated: Optional[str] = None) -> Optional[Call]:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in REGISTER_METHODS:
            return None
        receiver = dotted(func.value)
        if receiver is None:
            return None
        args = tuple(to_expr(a) for a in node.args if not isinstance(a, ast.Starred))
        kwargs = tuple((k.arg, to_expr(k.value)) for k in node.keywords if k.arg)
        return Call(receiver, func.attr, args, kwargs, node.lineno, decorated)


def _library_walk(body: list[ast.stmt], v: _Visitor) -> None:
    """A library's auto module: module-level tables and auto classes only (function bodies are skipped).

    Visiting every node of transformers' auto modules costs more than parsing them; what the
    registry needs is at module level, in class bodies, and in each class's ``register`` method.
    """
    for node in body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
            v.visit(node)
        elif isinstance(node, ast.If):
            _library_walk(node.body, v)
            _library_walk(node.orelse, v)
        elif isinstance(node, ast.ClassDef):
            bases = tuple(d for d in (dotted(b) for b in node.bases) if d)
            v.facts.classes.setdefault(node.name, ClassDef(node.name, node.lineno, bases))
            v.scopes.append(("class", node.name))
            for stmt in node.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    v.visit(stmt)
                elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "register":
                    v.visit(stmt)
            v.scopes.pop()


def parse_source(
    data: Union[bytes, str], path: str, module: str, *, is_package: bool = False, tables: bool = False
) -> ModuleFacts:
    """Parse one file's text into ModuleFacts.

    Raises:
        ParseError: the text is not Python this interpreter can parse (syntax error, null bytes,
            nesting too deep).
    """
    try:
        tree = ast.parse(data, filename=path)
    except SyntaxError as exc:
        raise ParseError(f"{type(exc).__name__}: {exc.msg}", exc.lineno) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(f"{type(exc).__name__}: {exc}") from None
    facts = ModuleFacts(path=path, module=module, is_package=is_package)
    try:
        visitor = _Visitor(facts, tables)
        if tables:
            _library_walk(tree.body, visitor)
        else:
            visitor.visit(tree)
    except RecursionError:
        raise ParseError("RecursionError: the file nests too deeply to analyse") from None
    return facts


class ParseCache:
    """Parsed files keyed by (path, mtime_ns, size): a file is parsed at most once while unchanged.

    Thread-safe; entries for a path are replaced when the file changes. Parse failures are cached too.
    """

    def __init__(self, max_entries: int = 50_000) -> None:
        self._lock = threading.Lock()
        self._data: dict[tuple[str, str, bool], tuple[tuple[int, int], Union[ModuleFacts, ParseError]]] = {}
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

    def get(
        self,
        path: str,
        module: str,
        *,
        is_package: bool = False,
        tables: bool = False,
        data: Optional[bytes] = None,
        stat: Optional[os.stat_result] = None,
    ) -> ModuleFacts:
        """The facts of ``path`` (read unless ``data`` is given). Raises ParseError (also cached) or OSError."""
        st = stat or os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
        key = (path, module, tables)
        with self._lock:
            hit = self._data.get(key)
        if hit is not None and hit[0] == stamp:
            self.hits += 1
            value = hit[1]
        else:
            self.misses += 1
            if data is None:
                from msdoctor.inputs import read_bounded

                data = read_bounded(path)
            try:
                value = parse_source(data, path, module, is_package=is_package, tables=tables)
            except ParseError as exc:
                value = exc
            with self._lock:
                if len(self._data) >= self.max_entries:
                    self._data.clear()
                self._data[key] = (stamp, value)
        if isinstance(value, ParseError):
            from msdoctor.context import fresh

            raise fresh(value)  # cached for every thread that asks: each raises its own copy
        return value


#: one cache per msdoctor process; entries are keyed by file identity, so runs never see stale data
CACHE = ParseCache()
