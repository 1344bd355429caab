"""Reading Python sources: classes (dataclass fields, enum members, method signatures) and imports with libcst, one
module at a time as they are looked up; the key names every module reads with ``ast``.  Sources are parsed, never
imported."""

from __future__ import annotations

import ast
import logging
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

log = logging.getLogger(__name__)

ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OC_SELECT = re.compile(r"\$\{oc\.select:\s*([^,}\s]+)")


@dataclass(slots=True)
class FieldRecord:
    name: str
    ann: str | None  # annotation source
    default: str | None  # default expression source (None: no default)
    module: str  # module of the declaring class (scope for names in `ann`)


@dataclass(slots=True)
class ClassRecord:
    name: str
    module: str
    bases: list[str]
    is_dataclass: bool
    fields: list[FieldRecord] = field(default_factory=list)
    enum_members: dict[str, Any] = field(default_factory=dict)  # name -> literal value (or None)
    methods: dict[str, list[dict]] = field(default_factory=dict)  # name -> parameters (for mbridge)


@dataclass(slots=True)
class ModuleRecord:
    name: str
    classes: dict[str, ClassRecord] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local -> (module, attr|None)
    star: list[str] = field(default_factory=list)


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def dotted_name(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = dotted_name(node.value)
        return f"{left}.{node.attr.value}" if left else None
    return None


def string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        try:
            v = node.evaluated_value
        except Exception:  # noqa: BLE001 # pragma: no cover - odd literals
            return None
        return v if isinstance(v, str) else None
    return None


def literal_value(node: cst.CSTNode) -> Any:
    """Python value of a literal expression node, or raise ValueError."""
    return ast.literal_eval(code_of(node))


def _positional(call: cst.Call, i: int) -> cst.BaseExpression | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[i].value if len(args) > i else None


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def constant_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _ast_dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        left = _ast_dotted(node.value)
        return f"{left}.{node.attr}" if left else None
    return None


def read_names(source: bytes) -> set[str]:
    """The key names one module reads (FORMAT.md, ``read_set``): attribute names (those of dotted module names in
    imports too), ``.get("x")``/``.pop("x")``, ``getattr(o, "x")``/``hasattr``, ``o["x"]``, ``OmegaConf.select``
    paths and ``${oc.select:...}`` paths in strings. Read with ``ast``, every module of verl: libcst took 9 of every
    10 seconds of a build on it."""
    with warnings.catch_warnings():  # invalid escape sequences in verl's strings: Python's to say, not a build's
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    names: set[str] = set()

    def add(s: str | None) -> None:
        if s and _IDENT.match(s):
            names.add(s)

    def add_path(s: str | None) -> None:
        for seg in (s or "").split("."):
            add(seg)

    fstring_text = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            dotted = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            names.update(seg for d in dotted for seg in d.split(".")[1:])
        elif isinstance(node, ast.Call):
            f = node.func
            args = [a for a in node.args if not isinstance(a, ast.Starred)]
            if isinstance(f, ast.Attribute) and f.attr in ("get", "pop"):
                add(constant_str(args[0]) if args else None)
            elif isinstance(f, ast.Attribute) and f.attr == "select":
                if (_ast_dotted(f.value) or "").split(".")[-1] == "OmegaConf":
                    key = args[1] if len(args) > 1 else next((k.value for k in node.keywords if k.arg == "key"), None)
                    add_path(constant_str(key))
            elif isinstance(f, ast.Name) and f.id in ("getattr", "hasattr"):
                add(constant_str(args[1]) if len(args) > 1 else None)
        elif isinstance(node, ast.Subscript):
            add(constant_str(node.slice))
        elif id(node) not in fstring_text and "oc.select:" in (constant_str(node) or ""):
            for m in _OC_SELECT.finditer(node.value):
                add_path(m.group(1))
    return names


def package_reads(package_dir: Path) -> list[str]:
    """The sorted read-set of every module under ``package_dir``."""
    reads: set[str] = set()
    for path in sorted(p for p in package_dir.rglob("*.py") if p.is_file()):
        try:
            reads |= read_names(path.read_bytes())
        except (SyntaxError, ValueError) as e:  # a file Python cannot parse: keep going, but say so
            log.warning("schema build: cannot parse %s: %s", path, e)
    return sorted(reads)


def _is_dataclass_decorator(dec: cst.Decorator) -> bool:
    d = dec.decorator
    if isinstance(d, cst.Call):
        d = d.func
    return (dotted_name(d) or "").split(".")[-1] == "dataclass"


def _field_default(value: cst.BaseExpression | None) -> tuple[str | None, bool]:
    """(default source, init) for a dataclass field's right-hand side."""
    if value is None:
        return None, True
    if isinstance(value, cst.Call) and (dotted_name(value.func) or "").split(".")[-1] == "field":
        init = True
        default = None
        for a in value.args:
            if a.keyword is None:
                continue
            k = a.keyword.value
            if k == "init":
                init = code_of(a.value) != "False"
            elif k == "default":
                default = code_of(a.value)
            elif k == "default_factory":
                fv = a.value
                default = code_of(fv.body) if isinstance(fv, cst.Lambda) else f"{code_of(fv)}()"
        return default, init
    return code_of(value), True


def signature_params(fn: cst.FunctionDef) -> list[dict]:
    """The parameters of a function definition: name, annotation and default source (``*args``/``**kw`` marked)."""
    out = []
    p = fn.params
    for param in list(p.posonly_params) + list(p.params) + list(p.kwonly_params):
        out.append(
            {
                "name": param.name.value,
                "ann": code_of(param.annotation.annotation) if param.annotation else None,
                "default": code_of(param.default) if param.default is not None else None,
            }
        )
    if isinstance(p.star_arg, cst.Param):
        out.append({"name": "*" + p.star_arg.name.value, "ann": None, "default": None, "var": "positional"})
    if p.star_kwarg is not None:
        out.append({"name": "**" + p.star_kwarg.name.value, "ann": None, "default": None, "var": "keyword"})
    return out


def _class_record(node: cst.ClassDef, module: str) -> ClassRecord:
    bases = [code_of(a.value) for a in node.bases if a.keyword is None]
    rec = ClassRecord(
        name=node.name.value,
        module=module,
        bases=bases,
        is_dataclass=any(_is_dataclass_decorator(d) for d in node.decorators),
    )
    is_enum = any(b.split(".")[-1] in ENUM_BASES for b in bases)
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    ann = code_of(small.annotation.annotation)
                    head = ann.split("[")[0].split(".")[-1]
                    if head in ("ClassVar", "InitVar", "KW_ONLY"):
                        continue
                    default, init = _field_default(small.value)
                    if not init:
                        continue  # field(init=False) is not a constructor keyword
                    rec.fields.append(FieldRecord(small.target.value, ann, default, module))
                elif is_enum and isinstance(small, cst.Assign) and len(small.targets) == 1:
                    t = small.targets[0].target
                    if isinstance(t, cst.Name) and not t.value.startswith("_"):
                        try:
                            rec.enum_members[t.value] = literal_value(small.value)
                        except (ValueError, SyntaxError):
                            rec.enum_members[t.value] = None
        elif isinstance(stmt, cst.FunctionDef):
            rec.methods[stmt.name.value] = signature_params(stmt)
    return rec


def _resolve_relative(module: str, is_pkg: bool, level: int, target: str | None) -> str:
    base = module if is_pkg else module.rpartition(".")[0]
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    if target:
        return f"{base}.{target}" if base else target
    return base


def scan_source(source: bytes, module: str, is_pkg: bool) -> ModuleRecord:
    """Parse one file: top-level classes (incl. under if/try) and imports."""
    tree = cst.parse_module(source)
    mod = ModuleRecord(name=module)

    def walk_block(stmts) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.ClassDef):
                mod.classes.setdefault(stmt.name.value, _class_record(stmt, module))
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.ImportFrom):
                        level = len(small.relative)
                        target = dotted_name(small.module) if small.module is not None else None
                        src = _resolve_relative(module, is_pkg, level, target) if level else (target or "")
                        if isinstance(small.names, cst.ImportStar):
                            mod.star.append(src)
                        else:
                            for alias in small.names:
                                name = dotted_name(alias.name) or ""
                                local = alias.asname.name.value if alias.asname else name
                                mod.imports.setdefault(local, (src, name))
                    elif isinstance(small, cst.Import):
                        for alias in small.names:
                            name = dotted_name(alias.name) or ""
                            if alias.asname:
                                mod.imports.setdefault(alias.asname.name.value, (name, None))
                            else:
                                top = name.split(".")[0]
                                mod.imports.setdefault(top, (top, None))
            elif isinstance(stmt, cst.If):
                walk_block(stmt.body.body)
                orelse = stmt.orelse
                while orelse is not None:
                    walk_block(orelse.body.body)
                    orelse = getattr(orelse, "orelse", None)
            elif isinstance(stmt, cst.Try):
                walk_block(stmt.body.body)
                for h in stmt.handlers:
                    walk_block(h.body.body)
                if stmt.orelse is not None:
                    walk_block(stmt.orelse.body.body)

    walk_block(tree.body)
    return mod


def _scan_file(path: Path, module: str, is_pkg: bool) -> ModuleRecord:
    try:
        return scan_source(path.read_bytes(), module, is_pkg)
    except Exception as e:  # noqa: BLE001 - a file libcst cannot parse: keep going, but say so
        log.warning("schema build: cannot parse %s: %s", path, str(e).splitlines()[0] if str(e) else e)
        return ModuleRecord(name=module)


def module_name(root: Path, path: Path) -> tuple[str, bool]:
    """(dotted module name, is a package ``__init__``) of ``path`` under the import root ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


class Index:
    """Modules of one package tree, by dotted name; parsed on demand unless preloaded."""

    def __init__(self, root: Path, packages: Iterable[str] | None = None) -> None:
        self.root = root  # directory holding the top-level package(s)
        self.packages = tuple(packages) if packages is not None else None  # lazy loading limited to these
        self.modules: dict[str, ModuleRecord | None] = {}

    def module(self, name: str) -> ModuleRecord | None:
        if name in self.modules:
            return self.modules[name]
        mod = None
        if not name or (self.packages is not None and name.split(".")[0] not in self.packages):
            self.modules[name] = None
            return None
        rel = Path(*name.split("."))
        for cand, is_pkg in ((self.root / rel.with_suffix(".py"), False), (self.root / rel / "__init__.py", True)):
            if cand.is_file():
                mod = _scan_file(cand, name, is_pkg)
                break
        self.modules[name] = mod
        return mod

    def lookup(self, module: str, name: str, _seen: set | None = None) -> ClassRecord | None:
        """The class that ``name`` denotes in ``module``'s namespace (following imports and re-exports)."""
        seen = _seen if _seen is not None else set()
        if (module, name) in seen:
            return None
        seen.add((module, name))
        if "." in name:  # attribute access: mod_alias.Class
            head, _, rest = name.partition(".")
            mod = self.module(module)
            if mod and head in mod.imports:
                src, attr = mod.imports[head]
                sub = f"{src}.{attr}" if attr else src
                if self.module(sub) is not None:
                    return self.lookup(sub, rest, seen)
            return None
        mod = self.module(module)
        if mod is None:
            return None
        if name in mod.classes:
            return mod.classes[name]
        if name in mod.imports:
            src, attr = mod.imports[name]
            if attr:
                found = self.lookup(src, attr, seen)
                if found is None and self.module(f"{src}.{attr}") is not None:
                    return None  # a module, not a class
                return found
            return None
        for src in mod.star:
            found = self.lookup(src, name, seen)
            if found is not None:
                return found
        return None

    def resolve_target(self, target: str) -> ClassRecord | None:
        """The class a ``_target_`` dotted path names."""
        parts = target.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            if self.module(module) is not None:
                return self.lookup(module, ".".join(parts[i:]))
        return None

    def fields_of(self, cls: ClassRecord, _depth: int = 0) -> dict[str, FieldRecord]:
        """Dataclass fields, inherited first (dataclass order), for the constructor."""
        out: dict[str, FieldRecord] = {}
        if _depth > 20:
            return out
        for base in cls.bases:
            b = self.lookup(cls.module, base)
            if b is not None:
                out.update(self.fields_of(b, _depth + 1))
        if cls.is_dataclass:
            for f in cls.fields:
                out[f.name] = f
        return out

    def is_enum(self, cls: ClassRecord, _depth: int = 0) -> bool:
        for base in cls.bases:
            if base.split(".")[-1] in ENUM_BASES:
                return True
            b = self.lookup(cls.module, base)
            if b is not None and _depth < 10 and self.is_enum(b, _depth + 1):
                return True
        return False
