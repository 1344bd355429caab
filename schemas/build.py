"""Generate the schema snapshots that ``sapo-lint`` checks against (format: ``schemas/FORMAT.md``).

Everything here reads *files* of the real packages: verl's Hydra YAML (composed with hydra-core) and the Python
sources of verl, megatron-core and mbridge (parsed with libcst).  verl, torch and megatron are never imported.

This module is imported lazily, only for ``sapo-lint schema build``; hydra and libcst are imported inside the
functions that need them.  Public API (called by the CLI):

* :func:`locate_verl` -> ``(package_dir, version, source_label)``
* :func:`build_verl_snapshots` -> ``{"ppo_trainer": snapshot, "ppo_megatron_trainer": snapshot}``
* :func:`build_consumer_snapshot` -> snapshot of a megatron-core or mbridge wheel (or extracted directory)
* :func:`write_snapshot` -> atomic, deterministic JSON writer
* :func:`build_all` -> regenerate every committed snapshot under ``schemas/``

Regenerate the committed files with::

    sapo-lint schema build --wheel verl-0.9.1-py3-none-any.whl --wheel verl-0.8.0-py3-none-any.whl \
        --consumer-wheel megatron_core-0.12.1-....whl ... --consumer-wheel mbridge-0.15.1-py3-none-any.whl
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
CONFIG_NAMES = ("ppo_trainer", "ppo_megatron_trainer")
GROUP = "model_engine"

# verl.md §1.6 ("Which `_target_` nodes are instantiated, and when"): these `_target_` subtrees exist in the YAML but
# are never instantiated on the main_ppo (v1) path -- `algorithm` (AlgoConfig, read with `.get`), `reward`
# (RewardConfig, read as DictConfig) and `global_profiler` (ProfilerConfig, read with OmegaConf.select).
NOT_INSTANTIATED_ROOTS = ("algorithm", "reward", "global_profiler")
# ... except, per the same table, `reward.reward_model.rollout` (RolloutConfig), which RolloutReplica converts with
# omega_conf_to_dataclass (verl/workers/rollout/replica.py:104) when a reward model is enabled.
INSTANTIATED_EXCEPTIONS = ("reward.reward_model.rollout",)

# Open dicts whose keys another library receives (verl.md §1.8, megatron.md §3.4/§5).  Matched on the path suffix, so
# they apply to actor, ref and critic alike -- but only where that role has a `megatron` engine node (see _post).
CONSUMERS = (
    ("megatron.override_transformer_config", "megatron-core:TransformerConfig"),
    ("megatron.override_ddp_config", "megatron-core:DistributedDataParallelConfig"),
    ("optim.override_optimizer_config", "megatron-core:OptimizerConfig"),
    ("checkpoint.mbridge_config", "mbridge:save_weights"),
)

# megatron-core classes recorded in a consumer snapshot: name -> module.
MCORE_CLASSES = {
    "TransformerConfig": "megatron.core.transformer.transformer_config",
    "MLATransformerConfig": "megatron.core.transformer.transformer_config",
    "OptimizerConfig": "megatron.core.optimizer.optimizer_config",
    "DistributedDataParallelConfig": "megatron.core.distributed.distributed_data_parallel_config",
}
MBRIDGE_METHOD = ("mbridge.core.bridge", "Bridge", "save_weights")

# mbridge git main is not on PyPI (pyproject there still says 0.15.1), so it cannot be rebuilt from a wheel.  Its
# signature is transcribed from megatron.md §5.2 (ISEEKYAN/mbridge main, mbridge/core/bridge.py:602-647) and parsed
# with the same code as a real wheel.
MBRIDGE_GIT_MAIN_VERSION = "git-main"
MBRIDGE_GIT_MAIN_SOURCE = "github ISEEKYAN/mbridge main, mbridge/core/bridge.py:602-647 (transcribed; not on PyPI)"
MBRIDGE_GIT_MAIN_SIGNATURE = '''
class Bridge:
    def save_weights(
        self,
        models: list,
        weights_path: str,
        memory_efficient: bool = False,
        distributed_filesystem: bool = False,
        strict: bool = True,
    ) -> None:
        ...
'''

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OC_SELECT = re.compile(r"\$\{oc\.select:\s*([^,}\s]+)")
# A default that is exactly one interpolation of another key: ${a.b}, ${.sibling}, ${oc.select:a.b,default}
_POINTER = re.compile(r"^\$\{(?:oc\.select:)?\s*(\.*[A-Za-z_][A-Za-z0-9_.]*)\s*(?:,[^{}]*)?\}$")

_SCALARS = {"int": "int", "float": "float", "bool": "bool", "str": "str"}
_LIST_NAMES = {"list", "List", "tuple", "Tuple", "Sequence", "MutableSequence", "set", "Set", "frozenset",
               "ListConfig"}
_DICT_NAMES = {"dict", "Dict", "Mapping", "MutableMapping", "DictConfig", "OrderedDict", "defaultdict"}
_ANY_NAMES = {"Any", "object"}
_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}


class SchemaBuildError(Exception):
    """A snapshot cannot be built; the message is one line for the CLI."""


# --------------------------------------------------------------------------------------------------------------------
# Locating verl
# --------------------------------------------------------------------------------------------------------------------

_TEMP_DIRS: list[str] = []


def _tempdir(prefix: str) -> Path:
    d = tempfile.mkdtemp(prefix=prefix)
    if not _TEMP_DIRS:
        atexit.register(lambda: [shutil.rmtree(p, ignore_errors=True) for p in _TEMP_DIRS])
    _TEMP_DIRS.append(d)
    return Path(d)


def _extract_wheel(wheel: Path, prefix: str) -> Path:
    if not wheel.is_file():
        raise SchemaBuildError(f"wheel not found: {wheel}")
    dest = _tempdir(prefix)
    try:
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if member.startswith("/") or ".." in Path(member).parts:
                    raise SchemaBuildError(f"{wheel.name}: unsafe path in wheel: {member}")
            zf.extractall(dest)
    except zipfile.BadZipFile as e:
        raise SchemaBuildError(f"{wheel.name} is not a valid wheel: {e}") from None
    return dest


def _is_verl_package(d: Path) -> bool:
    return (d / "trainer" / "config" / "ppo_trainer.yaml").is_file()


def _read_version_file(pkg: Path) -> str | None:
    vf = pkg / "version" / "version"
    if vf.is_file():
        v = vf.read_text(encoding="utf-8").strip()
        return v or None
    return None


def _dist_info_version(root: Path, name: str) -> str | None:
    for meta in sorted(root.glob("*.dist-info/METADATA")):
        fields = _parse_metadata(meta.read_text(encoding="utf-8", errors="replace"))
        if _norm_name(fields.get("Name", "")) == _norm_name(name):
            return fields.get("Version")
    return None


def locate_verl(wheel: Path | None = None, verl_root: Path | None = None) -> tuple[Path, str, str]:
    """Return ``(package_dir, version, source_label)``; ``package_dir`` holds verl's ``trainer/config/``.

    ``wheel``: a verl ``.whl`` (extracted to a temporary directory, removed at exit); ``verl_root``: a source checkout
    (its ``verl/`` directory; the version comes from ``verl/version/version``); neither: the installed verl, found
    through ``importlib.metadata.distribution('verl')`` (verl is never imported).
    """
    if wheel is not None and verl_root is not None:
        raise SchemaBuildError("give either a verl wheel or a verl source root, not both")
    if wheel is not None:
        wheel = Path(wheel)
        root = _extract_wheel(wheel, "sapo-lint-verl-")
        pkg = root / "verl"
        if not _is_verl_package(pkg):
            raise SchemaBuildError(f"{wheel.name}: no verl/trainer/config/ppo_trainer.yaml inside; not a verl wheel?")
        version = _read_version_file(pkg) or _dist_info_version(root, "verl")
        if not version:
            raise SchemaBuildError(f"{wheel.name}: cannot tell the verl version (no verl/version/version)")
        return pkg, version, wheel.name
    if verl_root is not None:
        verl_root = Path(verl_root).resolve()
        for pkg in (verl_root / "verl", verl_root):
            if _is_verl_package(pkg):
                break
        else:
            raise SchemaBuildError(f"{verl_root}: no verl/trainer/config/ppo_trainer.yaml; not a verl checkout?")
        version = _read_version_file(pkg)
        if not version:
            raise SchemaBuildError(f"{verl_root}: cannot tell the verl version (no verl/version/version)")
        return pkg, version, f"verl source checkout {pkg.parent}"
    # Installed distribution: never `import verl` (it pulls in torch).
    from importlib import metadata

    try:
        dist = metadata.distribution("verl")
    except metadata.PackageNotFoundError:
        raise SchemaBuildError("verl is not installed; pass a verl wheel or --verl-root") from None
    pkg = None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("verl/trainer/config/ppo_trainer.yaml"):
            cand = Path(dist.locate_file(f)).resolve().parents[2]
            if _is_verl_package(cand):
                pkg = cand
                break
    if pkg is None:  # editable installs list no package files; find_spec of a top-level name does not import it
        import importlib.util

        spec = importlib.util.find_spec("verl")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            if _is_verl_package(Path(loc)):
                pkg = Path(loc).resolve()
                break
    if pkg is None:
        raise SchemaBuildError(f"installed verl {dist.version} has no trainer/config/ppo_trainer.yaml")
    return pkg, dist.version, f"installed distribution verl=={dist.version}"


# --------------------------------------------------------------------------------------------------------------------
# Source scanning (libcst)
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class _Field:
    name: str
    ann: str | None  # annotation source
    default: str | None  # default expression source (None: no default)
    module: str  # module of the declaring class (scope for names in `ann`)


@dataclass
class _Class:
    name: str
    module: str
    bases: list[str]
    is_dataclass: bool
    fields: list[_Field] = field(default_factory=list)
    enum_members: dict[str, Any] = field(default_factory=dict)  # name -> literal value (or None)
    methods: dict[str, list[dict]] = field(default_factory=dict)  # name -> parameters (for mbridge)


@dataclass
class _Module:
    name: str
    classes: dict[str, _Class] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local -> (module, attr|None)
    star: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)


def _code(node) -> str:
    import libcst as cst

    return cst.Module(body=[]).code_for_node(node).strip()


def _dotted(node) -> str | None:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = _dotted(node.value)
        return f"{left}.{node.attr.value}" if left else None
    return None


def _str_value(node) -> str | None:
    import libcst as cst

    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        try:
            v = node.evaluated_value
        except Exception:  # pragma: no cover - odd literals
            return None
        return v if isinstance(v, str) else None
    return None


def _literal(node) -> Any:
    """Python value of a literal expression node, or raise ValueError."""
    import ast

    return ast.literal_eval(_code(node))


_READ_VISITOR = None


def _read_visitor_cls():
    """A libcst visitor that collects the key names a module reads (see FORMAT.md, ``read_set``)."""
    global _READ_VISITOR
    if _READ_VISITOR is not None:
        return _READ_VISITOR
    import libcst as cst

    def positional(call, i):
        args = [a for a in call.args if a.keyword is None and not a.star]
        return args[i].value if len(args) > i else None

    def keyword(call, name):
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return a.value
        return None

    class ReadVisitor(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names: set[str] = set()

        def _add(self, s: str | None) -> None:
            if s and _IDENT.match(s):
                self.names.add(s)

        def _add_path(self, s: str | None) -> None:
            if s:
                for seg in s.split("."):
                    self._add(seg)

        def visit_Attribute(self, node) -> None:
            self.names.add(node.attr.value)

        def visit_Call(self, node) -> None:
            f = node.func
            if isinstance(f, cst.Attribute):
                attr = f.attr.value
                if attr in ("get", "pop"):
                    self._add(_str_value(positional(node, 0)))
                elif attr == "select" and (_dotted(f.value) or "").split(".")[-1] == "OmegaConf":
                    self._add_path(_str_value(positional(node, 1) or keyword(node, "key")))
            elif isinstance(f, cst.Name) and f.value in ("getattr", "hasattr"):
                self._add(_str_value(positional(node, 1)))

        def visit_Subscript(self, node) -> None:
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                self._add(_str_value(node.slice[0].slice.value))

        def visit_SimpleString(self, node) -> None:
            if "oc.select:" in node.value:
                try:
                    v = node.evaluated_value
                except Exception:  # pragma: no cover
                    return
                if isinstance(v, str):
                    for m in _OC_SELECT.finditer(v):
                        self._add_path(m.group(1))

    _READ_VISITOR = ReadVisitor
    return ReadVisitor


def _is_dataclass_decorator(dec) -> bool:
    import libcst as cst

    d = dec.decorator
    if isinstance(d, cst.Call):
        d = d.func
    name = _dotted(d) or ""
    return name.split(".")[-1] == "dataclass"


def _field_default(value) -> tuple[str | None, bool]:
    """(default source, init) for a dataclass field's right-hand side."""
    import libcst as cst

    if value is None:
        return None, True
    if isinstance(value, cst.Call) and (_dotted(value.func) or "").split(".")[-1] == "field":
        init = True
        default = None
        for a in value.args:
            if a.keyword is None:
                continue
            k = a.keyword.value
            if k == "init":
                init = _code(a.value) != "False"
            elif k == "default":
                default = _code(a.value)
            elif k == "default_factory":
                fv = a.value
                default = _code(fv.body) if isinstance(fv, cst.Lambda) else f"{_code(fv)}()"
        return default, init
    return _code(value), True


def _params(fn) -> list[dict]:
    import libcst as cst

    out = []
    p = fn.params
    for param in list(p.posonly_params) + list(p.params) + list(p.kwonly_params):
        out.append({
            "name": param.name.value,
            "ann": _code(param.annotation.annotation) if param.annotation else None,
            "default": _code(param.default) if param.default is not None else None,
        })
    if isinstance(p.star_arg, cst.Param):
        out.append({"name": "*" + p.star_arg.name.value, "ann": None, "default": None, "var": "positional"})
    if p.star_kwarg is not None:
        out.append({"name": "**" + p.star_kwarg.name.value, "ann": None, "default": None, "var": "keyword"})
    return out


def _class_record(node, module: str) -> _Class:
    import libcst as cst

    bases = [_code(a.value) for a in node.bases if a.keyword is None]
    rec = _Class(name=node.name.value, module=module, bases=bases,
                 is_dataclass=any(_is_dataclass_decorator(d) for d in node.decorators))
    is_enum = any(b.split(".")[-1] in _ENUM_BASES for b in bases)
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    ann = _code(small.annotation.annotation)
                    head = ann.split("[")[0].split(".")[-1]
                    if head in ("ClassVar", "InitVar", "KW_ONLY"):
                        continue
                    default, init = _field_default(small.value)
                    if not init:
                        continue  # field(init=False) is not a constructor keyword
                    rec.fields.append(_Field(small.target.value, ann, default, module))
                elif is_enum and isinstance(small, cst.Assign) and len(small.targets) == 1:
                    t = small.targets[0].target
                    if isinstance(t, cst.Name) and not t.value.startswith("_"):
                        try:
                            rec.enum_members[t.value] = _literal(small.value)
                        except (ValueError, SyntaxError):
                            rec.enum_members[t.value] = None
        elif isinstance(stmt, cst.FunctionDef):
            rec.methods[stmt.name.value] = _params(stmt)
    return rec


def _resolve_relative(module: str, is_pkg: bool, level: int, target: str | None) -> str:
    base = module if is_pkg else module.rpartition(".")[0]
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    if target:
        return f"{base}.{target}" if base else target
    return base


def _scan_source(source: bytes, module: str, is_pkg: bool, want_reads: bool) -> _Module:
    """Parse one file: top-level classes (incl. under if/try), imports, and optionally the read-set."""
    import libcst as cst

    tree = cst.parse_module(source)
    mod = _Module(name=module)

    def walk_block(stmts) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.ClassDef):
                mod.classes.setdefault(stmt.name.value, _class_record(stmt, module))
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.ImportFrom):
                        level = len(small.relative)
                        target = _dotted(small.module) if small.module is not None else None
                        src = _resolve_relative(module, is_pkg, level, target) if level else (target or "")
                        if isinstance(small.names, cst.ImportStar):
                            mod.star.append(src)
                        else:
                            for alias in small.names:
                                name = _dotted(alias.name) or ""
                                local = alias.asname.name.value if alias.asname else name
                                mod.imports.setdefault(local, (src, name))
                    elif isinstance(small, cst.Import):
                        for alias in small.names:
                            name = _dotted(alias.name) or ""
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
    if want_reads:
        v = _read_visitor_cls()()
        tree.visit(v)
        mod.reads = sorted(v.names)
    return mod


def _scan_file(args: tuple[str, str, bool, bool]) -> _Module:
    path, module, is_pkg, want_reads = args
    try:
        return _scan_source(Path(path).read_bytes(), module, is_pkg, want_reads)
    except Exception as e:  # a file libcst cannot parse: keep going, but say so
        log.warning("schema build: cannot parse %s: %s", path, str(e).splitlines()[0] if str(e) else e)
        return _Module(name=module)


def _module_name(root: Path, path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


class _Index:
    """Modules of one package tree, by dotted name; parsed on demand unless preloaded."""

    def __init__(self, root: Path, packages: Iterable[str] | None = None) -> None:
        self.root = root  # directory holding the top-level package(s)
        self.packages = tuple(packages) if packages is not None else None  # lazy loading limited to these
        self.modules: dict[str, _Module | None] = {}

    def scan_package(self, package_dir: Path, want_reads: bool) -> None:
        files = sorted(p for p in package_dir.rglob("*.py") if p.is_file())
        jobs = []
        for p in files:
            name, is_pkg = _module_name(self.root, p)
            jobs.append((str(p), name, is_pkg, want_reads))
        for mod in _parallel_map(_scan_file, jobs):
            self.modules[mod.name] = mod

    def module(self, name: str) -> _Module | None:
        if name in self.modules:
            return self.modules[name]
        mod = None
        if not name or (self.packages is not None and name.split(".")[0] not in self.packages):
            self.modules[name] = None
            return None
        rel = Path(*name.split("."))
        for cand, is_pkg in ((self.root / rel.with_suffix(".py"), False), (self.root / rel / "__init__.py", True)):
            if name and cand.is_file():
                mod = _scan_file((str(cand), name, is_pkg, False))
                break
        self.modules[name] = mod
        return mod

    def lookup(self, module: str, name: str, _seen: set | None = None) -> _Class | None:
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

    def resolve_target(self, target: str) -> _Class | None:
        parts = target.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            if self.module(module) is not None:
                return self.lookup(module, ".".join(parts[i:]))
        return None

    def fields_of(self, cls: _Class, _depth: int = 0) -> dict[str, _Field]:
        """Dataclass fields, inherited first (dataclass order), for the constructor."""
        out: dict[str, _Field] = {}
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

    def is_enum(self, cls: _Class, _depth: int = 0) -> bool:
        for base in cls.bases:
            if base.split(".")[-1] in _ENUM_BASES:
                return True
            b = self.lookup(cls.module, base)
            if b is not None and _depth < 10 and self.is_enum(b, _depth + 1):
                return True
        return False


def _parallel_map(fn, jobs: list) -> list:
    """``map`` over a process pool when there is more than one CPU (fork only); results keep job order."""
    n = min(len(jobs), os.cpu_count() or 1, 8)
    if n > 1 and len(jobs) > 20:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        try:
            ctx = mp.get_context("fork")
        except ValueError:
            ctx = None
        if ctx is not None:
            try:
                with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
                    return list(pool.map(fn, jobs, chunksize=max(1, len(jobs) // (n * 8))))
            except Exception as e:  # pragma: no cover - fall back to serial
                log.warning("schema build: process pool failed (%s); scanning serially", e)
    return [fn(j) for j in jobs]


# --------------------------------------------------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------------------------------------------------


@dataclass
class _Ann:
    type: str = "any"
    nullable: bool = False
    choices: list | None = None
    dataclass: _Class | None = None  # annotation names a dataclass (typed sub-config)


def _analyze_ann(index: _Index, module: str, code: str | None) -> _Ann | None:
    if code is None:
        return None
    import libcst as cst

    try:
        expr = cst.parse_expression(code)
    except Exception:
        return _Ann()
    return _ann_expr(index, module, expr, 0)


def _union(parts: list[_Ann]) -> _Ann:
    nullable = any(p.nullable for p in parts)
    real = [p for p in parts if p.type != "none"]
    if not real:
        return _Ann("any", True)
    choices = None
    if all(p.choices is not None for p in real):
        choices = [c for p in real for c in p.choices]
    types = {p.type for p in real}
    if len(types) == 1:
        t = types.pop()
    elif types <= {"int", "float"}:
        t = "float"
    else:
        t = "any"
    dc = real[0].dataclass if len(real) == 1 else None
    return _Ann(t, nullable or any(p.type == "none" for p in parts), choices, dc)


def _ann_expr(index: _Index, module: str, expr, depth: int) -> _Ann:
    import libcst as cst

    if depth > 10:
        return _Ann()
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):  # forward reference
        s = _str_value(expr)
        if not s:
            return _Ann()
        try:
            return _ann_expr(index, module, cst.parse_expression(s), depth + 1)
        except Exception:
            return _Ann()
    if isinstance(expr, cst.Name) and expr.value == "None":
        return _Ann("none", True)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _union([_ann_expr(index, module, expr.left, depth + 1), _ann_expr(index, module, expr.right, depth + 1)])
    if isinstance(expr, cst.Subscript):
        head = (_dotted(expr.value) or "").split(".")[-1]
        elems = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
        if head == "Optional" and elems:
            a = _ann_expr(index, module, elems[0], depth + 1)
            a.nullable = True
            return a
        if head == "Union":
            return _union([_ann_expr(index, module, e, depth + 1) for e in elems])
        if head == "Literal":
            values = []
            for e in elems:
                try:
                    values.append(_literal(e))
                except (ValueError, SyntaxError):
                    return _Ann()
            nullable = None in values
            values = [v for v in values if v is not None]
            kinds = {type(v).__name__ for v in values}
            t = _SCALARS.get(kinds.pop(), "any") if len(kinds) == 1 else "any"
            return _Ann(t, nullable, values)
        if head in ("Annotated", "Final") and elems:
            return _ann_expr(index, module, elems[0], depth + 1)
        return _ann_expr(index, module, expr.value, depth + 1)
    name = _dotted(expr)
    if name is None:
        return _Ann()
    last = name.split(".")[-1]
    if last in _SCALARS:
        return _Ann(_SCALARS[last])
    if last in _LIST_NAMES:
        return _Ann("list")
    if last in _DICT_NAMES:
        return _Ann("dict")
    if last in _ANY_NAMES:
        return _Ann("any")
    cls = index.lookup(module, name)
    if cls is not None:
        if index.is_enum(cls):
            return _Ann("str", False, list(cls.enum_members))
        if cls.is_dataclass or index.fields_of(cls):
            return _Ann("dict", False, None, cls)
    return _Ann()


def _infer_type(value: Any) -> str:
    if value is None:
        return "any"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "any" if "${" in value else "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "any"


# --------------------------------------------------------------------------------------------------------------------
# verl: compose + walk
# --------------------------------------------------------------------------------------------------------------------


def _defaults_list(config_dir: Path, name: str) -> list:
    from omegaconf import OmegaConf

    path = config_dir / f"{name}.yaml"
    if not path.is_file():
        return []
    cfg = OmegaConf.load(path)
    d = cfg.get("defaults") if hasattr(cfg, "get") else None
    return OmegaConf.to_container(d, resolve=False) if d is not None else []


def _group_default(config_dir: Path, name: str, group: str, _depth: int = 0) -> str | None:
    """The option a primary config selects for ``group`` in its defaults list (following included primaries)."""
    found = None
    for item in _defaults_list(config_dir, name):
        if isinstance(item, dict):
            for k, v in item.items():
                if k.strip() in (group, f"override {group}"):
                    found = v
        elif isinstance(item, str) and item != "_self_" and _depth < 5 and (config_dir / f"{item}.yaml").is_file():
            sub = _group_default(config_dir, item, group, _depth + 1)
            if sub is not None and found is None:
                found = sub
    return found


def _compose_trees(config_dir: Path, options: list[str]) -> dict[str, dict[str, dict]]:
    """{config_name: {option: container}} for both trainer configs; fails loudly if the megatron shim differs."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    out: dict[str, dict[str, dict]] = {n: {} for n in CONFIG_NAMES}
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None, job_name="sapo_lint_schema"):
            for cname in CONFIG_NAMES:
                for opt in options:
                    cfg = compose(config_name=cname, overrides=[f"{GROUP}={opt}"])
                    out[cname][opt] = OmegaConf.to_container(cfg, resolve=False)
            shim = OmegaConf.to_container(compose(config_name="ppo_megatron_trainer"), resolve=False)
    except SchemaBuildError:
        raise
    except Exception as e:
        msg = " ".join(str(e).split())
        raise SchemaBuildError(f"hydra compose of {config_dir} failed: {type(e).__name__}: {msg[:300]}") from None
    finally:
        GlobalHydra.instance().clear()
    if "megatron" not in options or shim != out["ppo_trainer"]["megatron"]:
        raise SchemaBuildError(
            "compose('ppo_megatron_trainer') != compose('ppo_trainer', ['model_engine=megatron']); "
            "verl.md §1.2 no longer holds for this verl, the snapshot format needs revisiting")
    for opt in options:
        if out["ppo_megatron_trainer"][opt] != out["ppo_trainer"][opt]:
            raise SchemaBuildError(
                f"compose('ppo_megatron_trainer', ['{GROUP}={opt}']) != compose('ppo_trainer', ['{GROUP}={opt}'])")
    return out


def _pointer(path: str, value: str) -> str | None:
    """The absolute key an interpolation-only default points to, or None."""
    m = _POINTER.match(value.strip())
    if not m:
        return None
    ref = m.group(1)
    if not ref.startswith("."):
        return ref
    dots = len(ref) - len(ref.lstrip("."))
    base = path.split(".")[:-1]  # the node holding this key
    if dots - 1 > len(base):
        return None
    base = base[: len(base) - (dots - 1)]
    rest = ref[dots:]
    return ".".join(base + [rest]) if rest else ".".join(base) or None


@dataclass
class _Choices:
    loss_mode: list[str]
    adv_estimator: list[str]
    loss_agg_mode: list[str]
    rollout_name: list[str]
    rollout_mode: list[str]


class _TreeWalker:
    def __init__(self, index: _Index, choices: _Choices, options: list[str], problems: list[str]) -> None:
        self.index = index
        self.choices = choices
        self.options = options
        self.problems = problems
        self.entries: dict[str, dict] = {}
        self.rollout_nodes: set[str] = set()

    # -- walk ----------------------------------------------------------------------------------------------------
    def walk(self, tree: dict) -> dict[str, dict]:
        self._children(tree, "", None)
        self._post()
        return self.entries

    def _children(self, mapping: dict, path: str, cls: _Class | None) -> None:
        fields = self.index.fields_of(cls) if cls is not None else {}
        for key, value in mapping.items():
            key = str(key)
            p = f"{path}.{key}" if path else key
            f = fields.get(key)
            ann = _analyze_ann(self.index, f.module, f.ann) if f is not None else None
            if cls is not None and f is None and key != "_target_":
                self.problems.append(f"{p}: key in YAML but not a field of {cls.module}.{cls.name}")
            self._visit(value, p, ann)
        if cls is not None:
            for name, f in fields.items():
                if name in mapping:
                    continue
                p = f"{path}.{name}"
                ann = _analyze_ann(self.index, f.module, f.ann) or _Ann()
                e: dict[str, Any] = {"declared_only": True, "kind": self._kind_for_ann(ann, "value"),
                                     "type": ann.type if ann.type != "none" else "any"}
                if ann.nullable:
                    e["nullable"] = True
                if ann.choices:
                    e["choices"] = ann.choices
                self.entries[p] = e

    @staticmethod
    def _kind_for_ann(ann: _Ann | None, fallback: str) -> str:
        if ann is None:
            return fallback
        if ann.type == "dict":
            return "dict"
        if ann.type == "list":
            return "list"
        return fallback

    def _visit(self, value: Any, path: str, ann: _Ann | None) -> None:
        e: dict[str, Any] = {}
        if isinstance(value, dict):
            target = value.get("_target_")
            has_target = isinstance(target, str)
            if ann is not None and ann.type == "dict" and ann.dataclass is None and not has_target:
                kind = "dict"  # dict-typed field: open, whatever the YAML shows
            elif has_target or value:
                kind = "node"
            else:
                kind = "dict"
            e["kind"] = kind
            e["type"] = ann.type if ann is not None and ann.type != "none" else "dict"
            if ann is not None and ann.nullable:
                e["nullable"] = True
            cls = None
            if has_target:
                e["target"] = target
                e["instantiated"] = self._instantiated(path)
                cls = self.index.resolve_target(target)
                if cls is None:
                    self.problems.append(f"{path}: _target_ {target} not found in the verl sources")
                else:
                    e["fields"] = sorted(self.index.fields_of(cls))
                    if cls.name == "RolloutConfig":
                        self.rollout_nodes.add(path)
            self.entries[path] = e
            self._children(value, path, cls)
            return
        if isinstance(value, (list, tuple)):
            e["kind"] = "list"
            e["default"] = list(value)
            e["type"] = ann.type if ann is not None and ann.type not in ("none", "any") else "list"
        else:
            is_interp = isinstance(value, str) and "${" in value
            e["kind"] = self._kind_for_ann(ann, "value") if (value is None or is_interp) else "value"
            e["default"] = value
            if is_interp:
                e["interpolation"] = value
            if ann is not None and ann.type != "none":
                e["type"] = ann.type
            else:
                e["type"] = _infer_type(value)
                if e["type"] != "any":
                    e["inferred"] = True  # from the default: verl reads the key without a declared type
        if (ann is not None and ann.nullable) or value is None:
            e["nullable"] = True
        if ann is not None and ann.choices:
            e["choices"] = list(ann.choices)
        e["_annotated"] = ann is not None
        self.entries[path] = e

    def _instantiated(self, path: str) -> bool:
        def under(root: str) -> bool:
            return path == root or path.startswith(root + ".")

        if any(under(r) for r in INSTANTIATED_EXCEPTIONS):
            return True
        return not any(under(r) for r in NOT_INSTANTIATED_ROOTS)

    # -- post-processing -----------------------------------------------------------------------------------------
    def _post(self) -> None:
        E = self.entries
        for path, e in E.items():
            for suffix, consumer in CONSUMERS:
                if not path.endswith("." + suffix):
                    continue
                role = path[: -len(suffix) - 1]
                # Only where the role (actor/ref/critic) runs the Megatron engine: the dp/veomni optim nodes have an
                # `override_optimizer_config` too (torch optimizer kwargs) and verl 0.8.0's generic CheckpointConfig
                # carries `mbridge_config` for every engine.
                if E.get(f"{role}.megatron", {}).get("kind") not in ("node", "dict"):
                    continue
                e["consumer"] = consumer
                if e.get("kind") == "value":
                    e["kind"] = "dict"
        # Interpolations of another key: take that key's kind/consumer (and type, when unannotated).
        for _ in range(10):
            changed = False
            for path, e in E.items():
                interp = e.get("interpolation")
                if not interp:
                    continue
                ref = _pointer(path, interp)
                src = E.get(ref) if ref else None
                if src is None or src is e:
                    continue
                before = dict(e)
                if src.get("kind") in ("node", "dict"):
                    e["kind"] = src["kind"]
                    if "consumer" in src:
                        e["consumer"] = src["consumer"]
                if not e.get("_annotated") and e.get("type") == "any" and src.get("type"):
                    e["type"] = src["type"]
                changed |= e != before
            if not changed:
                break
        # Closed sets from verl's registries.
        for path, e in E.items():
            last = path.rsplit(".", 1)[-1]
            parent = path.rpartition(".")[0]
            if path.endswith(".policy_loss.loss_mode") and self.choices.loss_mode:
                e["choices"] = self.choices.loss_mode
            elif path == "algorithm.adv_estimator" and self.choices.adv_estimator:
                e["choices"] = self.choices.adv_estimator
            elif last == "loss_agg_mode" and self.choices.loss_agg_mode:
                e["choices"] = self.choices.loss_agg_mode
            elif parent in self.rollout_nodes and last == "name" and self.choices.rollout_name:
                e["choices"] = self.choices.rollout_name
            elif parent in self.rollout_nodes and last == "mode" and self.choices.rollout_mode:
                e["choices"] = self.choices.rollout_mode
            elif path == GROUP:
                e["choices"] = list(self.options)
        for e in E.values():
            e.pop("_annotated", None)
            if "choices" in e:
                e["choices"] = sorted(set(e["choices"]), key=lambda c: (str(type(c)), c))


def _registry_choices(package_dir: Path, index: _Index) -> _Choices:
    """Closed sets verl checks at run time, read from its source (verl.md §2.11)."""
    import libcst as cst

    pkg = package_dir.name
    core = package_dir / "trainer" / "ppo" / "core_algos.py"
    base = package_dir / "workers" / "rollout" / "base.py"
    loss_mode: list[str] = []
    adv: list[str] = []
    agg: list[str] = []
    names: list[str] = []
    modes: list[str] = []
    core_mod = f"{pkg}.trainer.ppo.core_algos"

    def enum_value(ref: str) -> str | None:
        cls_name, _, member = ref.rpartition(".")
        cls = index.lookup(core_mod, cls_name)
        v = cls.enum_members.get(member) if cls is not None else None
        return v if isinstance(v, str) else None

    if core.is_file():
        tree = cst.parse_module(core.read_bytes())

        class V(cst.CSTVisitor):
            def __init__(self) -> None:
                self.in_agg = 0

            def visit_Decorator(self, node) -> None:
                d = node.decorator
                if not isinstance(d, cst.Call) or not d.args:
                    return
                fname = (_dotted(d.func) or "").split(".")[-1]
                arg = d.args[0].value
                s = _str_value(arg)
                if fname == "register_policy_loss":
                    if s is not None:
                        loss_mode.append(s)
                elif fname == "register_adv_est":
                    if s is None and _dotted(arg):
                        s = enum_value(_dotted(arg))
                    if s is not None:
                        adv.append(s)

            def visit_FunctionDef(self, node) -> None:
                if node.name.value == "agg_loss":
                    self.in_agg += 1

            def leave_FunctionDef(self, node) -> None:
                if node.name.value == "agg_loss":
                    self.in_agg -= 1

            def visit_Comparison(self, node) -> None:
                if not self.in_agg:
                    return
                operands = [node.left] + [c.comparator for c in node.comparisons]
                if not any(isinstance(o, cst.Name) and o.value == "loss_agg_mode" for o in operands):
                    return
                for o in operands:
                    s = _str_value(o)
                    if s is not None:
                        agg.append(s)
                    elif isinstance(o, (cst.List, cst.Tuple, cst.Set)):
                        for el in o.elements:
                            s = _str_value(el.value)
                            if s is not None:
                                agg.append(s)

        tree.visit(V())
    if base.is_file():
        tree = cst.parse_module(base.read_bytes())
        for stmt in tree.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                targets = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign):
                    targets = [small.target]
                if not any(isinstance(t, cst.Name) and t.value == "_ROLLOUT_REGISTRY" for t in targets):
                    continue
                if not isinstance(small.value, cst.Dict):
                    continue
                for el in small.value.elements:
                    if not isinstance(el, cst.DictElement):
                        continue
                    k = el.key
                    if isinstance(k, cst.Tuple) and k.elements:
                        n = _str_value(k.elements[0].value)
                        if n is not None:
                            names.append(n)
                        if len(k.elements) > 1:
                            m = _str_value(k.elements[1].value)
                            if m is not None:
                                modes.append(m)
                    else:
                        n = _str_value(k)
                        if n is not None:
                            names.append(n)
    for label, vals in (("register_policy_loss", loss_mode), ("register_adv_est", adv), ("agg_loss", agg),
                        ("_ROLLOUT_REGISTRY", names)):
        if not vals:
            log.warning("schema build: found no %s values in %s", label, package_dir)
    return _Choices(loss_mode, adv, agg, names, modes)


_VERL_CACHE: dict[tuple[str, str], tuple[_Index, list[str]]] = {}


def _verl_index(package_dir: Path) -> tuple[_Index, list[str]]:
    key = (str(package_dir.resolve()), str(package_dir.stat().st_mtime_ns))
    if key not in _VERL_CACHE:
        index = _Index(package_dir.parent, packages=[package_dir.name])
        index.scan_package(package_dir, want_reads=True)
        reads: set[str] = set()
        for m in index.modules.values():
            if m is not None:
                reads.update(m.reads)
        _VERL_CACHE.clear()
        _VERL_CACHE[key] = (index, sorted(reads))
    return _VERL_CACHE[key]


def build_verl_snapshots(package_dir: Path, version: str, source: str) -> dict[str, dict]:
    """``{config_name: snapshot}`` for ``ppo_trainer`` and ``ppo_megatron_trainer`` (format: FORMAT.md)."""
    package_dir = Path(package_dir)
    config_dir = package_dir / "trainer" / "config"
    if not (config_dir / "ppo_trainer.yaml").is_file():
        raise SchemaBuildError(f"{package_dir}: no trainer/config/ppo_trainer.yaml")
    group_dir = config_dir / GROUP
    options = sorted(p.stem for p in group_dir.glob("*.yaml")) if group_dir.is_dir() else []
    if not options:
        raise SchemaBuildError(f"{config_dir}: no {GROUP}/*.yaml options")
    defaults = {c: _group_default(config_dir, c, GROUP) for c in CONFIG_NAMES}
    for c, d in defaults.items():
        if d not in options:
            raise SchemaBuildError(f"{c}.yaml: {GROUP} default {d!r} is not one of {options}")

    index, read_set = _verl_index(package_dir)
    choices = _registry_choices(package_dir, index)
    composed = _compose_trees(config_dir, options)

    problems: list[str] = []
    trees = {}
    for opt in options:
        trees[opt] = _TreeWalker(index, choices, options, problems).walk(composed["ppo_trainer"][opt])
    for p in sorted(set(problems)):
        log.info("schema build (verl %s): %s", version, p)

    out = {}
    for cname in CONFIG_NAMES:
        out[cname] = {
            "format": FORMAT_VERSION,
            "verl_version": version,
            "config_name": cname,
            "source": source,
            "groups": {GROUP: {"default": defaults[cname], "options": options}},
            "trees": trees,
            "read_set": read_set,
        }
    return out


# --------------------------------------------------------------------------------------------------------------------
# Consumers: megatron-core, mbridge
# --------------------------------------------------------------------------------------------------------------------


def _parse_metadata(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        k, sep, v = line.partition(":")
        if sep and not line[0].isspace() and k not in out:
            out[k.strip()] = v.strip()
    return out


def _norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _consumer_entry(index: _Index, module: str, ann: str | None, default: str | None) -> dict:
    a = _analyze_ann(index, module, ann)
    e: dict[str, Any] = {}
    if a is not None:
        e["type"] = a.type if a.type != "none" else "any"
        if a.nullable:
            e["nullable"] = True
        if a.choices:
            e["choices"] = sorted(set(a.choices), key=lambda c: (str(type(c)), c))
    else:
        t = "any"
        if default is not None:
            try:
                import ast

                t = _infer_type(ast.literal_eval(default))
            except (ValueError, SyntaxError):
                t = "any"
        e["type"] = t
    if default is not None:
        e["default"] = default
        if default == "None":
            e["nullable"] = True
    return e


def _method_fields(index: _Index, cls: _Class, method: str) -> dict[str, dict]:
    params = cls.methods.get(method)
    if params is None:
        raise SchemaBuildError(f"{cls.module}.{cls.name} has no method {method}")
    out = {}
    for p in params[1:]:  # drop self
        e = _consumer_entry(index, cls.module, p["ann"], p["default"])
        if p.get("var"):
            e = {"type": "list" if p["var"] == "positional" else "dict", "var": p["var"]}
        out[p["name"]] = e
    return out


def build_consumer_snapshot(wheel_or_dir: Path) -> dict:
    """Snapshot of a megatron-core or mbridge wheel (or its extracted directory), read with libcst."""
    wheel_or_dir = Path(wheel_or_dir)
    if wheel_or_dir.is_dir():
        root = wheel_or_dir
        source = wheel_or_dir.name
    elif wheel_or_dir.is_file():
        root = _extract_wheel(wheel_or_dir, "sapo-lint-consumer-")
        source = wheel_or_dir.name
    else:
        raise SchemaBuildError(f"not found: {wheel_or_dir}")
    metas = sorted(root.glob("*.dist-info/METADATA"))
    if not metas:
        raise SchemaBuildError(f"{wheel_or_dir}: no *.dist-info/METADATA; not a wheel?")
    meta = _parse_metadata(metas[0].read_text(encoding="utf-8", errors="replace"))
    package, version = _norm_name(meta.get("Name", "")), meta.get("Version", "")
    tops = sorted({m.split(".")[0] for m in MCORE_CLASSES.values()} | {MBRIDGE_METHOD[0].split(".")[0]})
    index = _Index(root, packages=tops)
    classes: dict[str, dict] = {}
    if package == "megatron-core":
        for cname, module in MCORE_CLASSES.items():
            cls = index.lookup(module, cname)
            if cls is None:
                raise SchemaBuildError(f"{source}: class {module}.{cname} not found")
            fields = index.fields_of(cls)
            classes[cname] = {"fields": {n: _consumer_entry(index, f.module, f.ann, f.default)
                                         for n, f in fields.items()}}
    elif package == "mbridge":
        module, cname, method = MBRIDGE_METHOD
        cls = index.lookup(module, cname)
        if cls is None:
            raise SchemaBuildError(f"{source}: class {module}.{cname} not found")
        classes[method] = {"fields": _method_fields(index, cls, method)}
    else:
        raise SchemaBuildError(f"{source}: package {package!r} is neither megatron-core nor mbridge")
    return {"format": FORMAT_VERSION, "package": package, "version": version, "source": source, "classes": classes}


def mbridge_git_main_snapshot() -> dict:
    """The mbridge git-main ``save_weights`` snapshot, from the transcribed signature (see the constant above)."""
    module, cname, method = MBRIDGE_METHOD
    index = _Index(Path(os.devnull), packages=())
    index.modules[module] = _scan_source(MBRIDGE_GIT_MAIN_SIGNATURE.encode(), module, False, False)
    cls = index.lookup(module, cname)
    return {"format": FORMAT_VERSION, "package": "mbridge", "version": MBRIDGE_GIT_MAIN_VERSION,
            "source": MBRIDGE_GIT_MAIN_SOURCE, "classes": {method: {"fields": _method_fields(index, cls, method)}}}


# --------------------------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------------------------


def _dumps(obj: Any, expand_depth: int, depth: int = 0) -> str:
    """Deterministic JSON: dicts above ``expand_depth`` get one key per line, everything deeper is compact."""
    if isinstance(obj, dict) and obj and depth < expand_depth:
        items = [f"{json.dumps(str(k))}:{_dumps(obj[k], expand_depth, depth + 1)}" for k in sorted(obj)]
        return "{\n" + ",\n".join(items) + "\n}"
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def snapshot_text(snapshot: dict) -> str:
    # verl: top / trees / option / one line per entry; consumers: top / classes / class / fields / one line per field
    expand = 3 if "trees" in snapshot else 4
    return _dumps(snapshot, expand) + "\n"


def write_snapshot(snapshot: dict, path: Path) -> None:
    """Write atomically, sorted keys, deterministic layout."""
    from sapo_toolkit.schemas.atomic import write_atomically

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, snapshot_text(snapshot))


def verl_snapshot_path(out_dir: Path, version: str, config_name: str) -> Path:
    return Path(out_dir) / "verl" / version / f"{config_name}.json"


def consumer_snapshot_path(out_dir: Path, package: str, version: str) -> Path:
    return Path(out_dir) / "consumers" / f"{package}-{version}.json"


def build_all(out_dir: Path, verl_packages: list[tuple[Path, str, str]], consumer_wheels: list[Path]) -> list[Path]:
    """Write the snapshots of each located verl (``locate_verl``'s result) and each consumer wheel, plus the
    transcribed mbridge git-main snapshot, under ``out_dir`` (normally ``schemas/``); returns the files written."""
    written: list[Path] = []
    for pkg, version, source in verl_packages:
        for cname, snap in build_verl_snapshots(pkg, version, source).items():
            p = verl_snapshot_path(out_dir, version, cname)
            write_snapshot(snap, p)
            written.append(p)
        written.append(write_entrypoints(out_dir, pkg, version))
    for wheel in consumer_wheels:
        snap = build_consumer_snapshot(Path(wheel))
        p = consumer_snapshot_path(out_dir, snap["package"], snap["version"])
        write_snapshot(snap, p)
        written.append(p)
    written.append(write_recipe_validator(out_dir))
    snap = mbridge_git_main_snapshot()
    p = consumer_snapshot_path(out_dir, snap["package"], snap["version"])
    write_snapshot(snap, p)
    written.append(p)
    return written


RECIPE_SCHEMA = "recipe.schema.json"
RECIPE_VALIDATOR = "recipe_validator.py"
_FASTJSONSCHEMA_IMPORT = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException\n"
# Stand-ins for fastjsonschema's exception classes, so the generated module imports nothing but the stdlib
# (importing fastjsonschema itself costs ~25 ms per lint process).
_STANDALONE_EXCEPTIONS = '''
class JsonSchemaValueException(ValueError):
    """The recipe violates the schema (the first violation found)."""

    def __init__(self, message, value=None, name=None, definition=None, rule=None):
        super().__init__(message)
        self.message, self.value, self.name, self.definition, self.rule = message, value, name, definition, rule


class JsonSchemaValuesException(JsonSchemaValueException):
    pass
'''


def recipe_validator_code(schema_text: str) -> str:
    """Python source that validates a recipe against the recipe JSON Schema, generated by fastjsonschema.

    The linter runs it on every recipe because importing jsonschema costs ~90 ms per process; it needs only
    the stdlib at run time. jsonschema
    (the reference) is used only when this rejects a recipe, to report every error with its location.
    The header records the schema's sha256 so a test can tell when the module is stale."""
    import hashlib

    import fastjsonschema

    schema = json.loads(schema_text)
    code = fastjsonschema.compile_to_code(schema)
    if _FASTJSONSCHEMA_IMPORT not in code:
        raise SchemaBuildError(f"fastjsonschema {fastjsonschema.VERSION} generated code of an unknown shape")
    code = code.replace(_FASTJSONSCHEMA_IMPORT, _STANDALONE_EXCEPTIONS)
    entry = "validate_" + re.sub(r"[^A-Za-z0-9_]", "_", schema["$id"])
    digest = hashlib.sha256(schema_text.encode("utf-8")).hexdigest()
    header = (f"# Generated by `sapo-lint schema build` from schemas/{RECIPE_SCHEMA} (sha256 {digest})\n"
              f"# with fastjsonschema {fastjsonschema.VERSION}. Do not edit.\n")
    return header + code + f"\n\nvalidate = {entry}\n"


def write_recipe_validator(out_dir: Path) -> Path:
    from sapo_toolkit.schemas.atomic import write_atomically

    schema_dir = Path(__file__).resolve().parent
    target = Path(out_dir) / RECIPE_VALIDATOR
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, recipe_validator_code((schema_dir / RECIPE_SCHEMA).read_text(encoding="utf-8")))
    return target


def entrypoint_defaults(package_dir: Path) -> dict[str, str]:
    """verl entry modules (``verl.trainer.main_ppo``, ...) -> the ``config_name`` of their ``@hydra.main``: every
    module under ``package_dir`` (the ``verl/`` package directory) with such a decorator, read with libcst."""
    import libcst as cst

    package_dir = Path(package_dir)
    out: dict[str, str] = {}
    for path in sorted(package_dir.rglob("*.py")):
        try:
            source = path.read_bytes()
        except OSError:  # pragma: no cover - unreadable file in a wheel
            continue
        if b"hydra" not in source or b"config_name" not in source:
            continue
        try:
            module = cst.parse_module(source)
        except cst.ParserSyntaxError:  # pragma: no cover - files libcst cannot parse
            continue
        rel = path.relative_to(package_dir.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        for stmt in module.body:
            if not isinstance(stmt, cst.FunctionDef):
                continue
            for dec in stmt.decorators:
                call = dec.decorator
                if not isinstance(call, cst.Call) or _dotted(call.func) not in ("hydra.main", "main"):
                    continue
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value == "config_name":
                        value = _str_value(arg.value)
                        if value:
                            out[name] = value.removesuffix(".yaml")
    return dict(sorted(out.items()))


def write_entrypoints(out_dir: Path, package_dir: Path, version: str) -> Path:
    """Write ``verl/<version>/entrypoints.json`` (entry module -> default config name)."""
    p = Path(out_dir) / "verl" / version / "entrypoints.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(entrypoint_defaults(package_dir), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return p
