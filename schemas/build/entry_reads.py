"""Which of verl's entry modules read a key off a top-level config node: the read-set per entry point (FORMAT.md,
``entry_reads``), read with ``ast`` like the read-set, never imported.

verl's reads differ by entry point where a function only some entry modules call reads a node: verl main's
``migrate_legacy_reward_impl`` (verl/experimental/reward_loop/reward_loop.py) is the only reader of the legacy
``reward_model.*``, ``custom_reward_function.*`` and ``sandbox_fusion.*`` keys, and only ``fully_async_main`` calls
it (verl 0.7-0.8 called it from ``main_ppo.run_ppo``, so every PPO entry read them). A name-wide read-set cannot see
that (``reward_manager`` is read off ``config.reward``), and the versions and vendored trees where it holds are
exactly the ones whose source says so: so the builder derives it from each source rather than from a list of keys.

The source is cut into units: each module's top-level code, and each top-level function or class (a class with all
its methods). A unit reads a pair ``(node, key)`` where it reads ``key`` off an expression ending in ``node``
(``config.reward_model.reward_manager``, ``config.reward_model.get("reward_kwargs")``, ``cfg["node"]["key"]``,
``getattr(node, "key")``, ``OmegaConf.select(cfg, "node.key")``). A unit references another where it names it
(through the module's imports, a module attribute, or a dotted ``verl.`` string); an attribute of an object the
reader cannot resolve references every unit of that name. An entry module reaches its own units, every other
module's top-level code (importing a module runs it), every unit nothing references (a registry, a ``_target_``, a
Ray actor may reach it by a name the reader cannot follow), and whatever those reference, transitively. Each choice
errs towards reaching more: a pair counts as unread by an entry only where nothing it may run reads it."""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .hydra_main import hydra_mains
from .source_index import constant_str, module_name

log = logging.getLogger(__name__)

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What verl names a config it reads nodes off: `config`, `self.config`, `cfg`, `omega_conf`, `trainer_config`.
_CONFIG_NAME = re.compile(r"conf|cfg", re.IGNORECASE)
_DOTTED_VERL = re.compile(r"^verl(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _node_name(expr: ast.AST) -> str | None:
    """The config node an expression ends in: ``a.b`` -> b, ``a["b"]``/``a.get("b")`` -> b, ``node`` -> node."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Subscript):
        return constant_str(expr.slice)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("get", "pop"):
        return constant_str(expr.args[0]) if expr.args else None
    return None


def _pair_reads(unit: ast.AST) -> set[tuple[str, str]]:
    """The ``(node, key)`` pairs a unit reads (the module docstring says which forms)."""
    pairs: set[tuple[str, str]] = set()

    def add(node: str | None, key: str | None) -> None:
        if node and key and _IDENT.match(key):
            pairs.add((node, key))

    for expr in ast.walk(unit):
        if isinstance(expr, ast.Attribute):
            add(_node_name(expr.value), expr.attr)
        elif isinstance(expr, ast.Subscript):
            add(_node_name(expr.value), constant_str(expr.slice))
        elif isinstance(expr, ast.Call):
            func, args = expr.func, [a for a in expr.args if not isinstance(a, ast.Starred)]
            if isinstance(func, ast.Attribute) and func.attr in ("get", "pop") and args:
                add(_node_name(func.value), constant_str(args[0]))
            elif isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(args) > 1:
                add(_node_name(args[0]), constant_str(args[1]))
            elif isinstance(func, ast.Attribute) and func.attr == "select" and len(args) > 1:
                path = (constant_str(args[1]) or "").split(".")
                for node, key in zip([_node_name(args[0]), *path[:-1]], path, strict=True):
                    add(node, key)
    return pairs


class _Module:
    """One module's units and the names its imports bind (an import anywhere binds its name everywhere: a
    function-local import counts for the whole module)."""

    def __init__(self, name: str, is_pkg: bool, tree: ast.Module) -> None:
        self.name = name
        self.tree = tree
        self.units: dict[str, ast.AST] = {}  # top-level def name -> its node
        self.imports: dict[str, str] = {}  # local name -> dotted target (a module, or a module's attribute)
        self.mains = {m.function for m in hydra_mains(tree)}
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.units[stmt.name] = stmt
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.imports.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(name, is_pkg, node.level, node.module)
                for alias in node.names:
                    if alias.name != "*":
                        self.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name

    def top_level_code(self) -> ast.Module:
        """The module without its units' bodies (what importing it runs, decorators and class bases included)."""
        kept = [s for s in self.tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                kept.extend(ast.Expr(d) for d in stmt.decorator_list)
        # `__all__` names what a package re-exports, not what it runs.
        return ast.Module(body=[s for s in kept if not _assigns_all(s)], type_ignores=[])


def _assigns_all(stmt: ast.AST) -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _absolute(module: str, is_pkg: bool, level: int, target: str | None) -> str:
    if not level:
        return target or ""
    base = module if is_pkg else module.rpartition(".")[0]
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{target}" if target and base else (target or base)


class _Graph:
    """verl's units, what each reads and references."""

    def __init__(self, modules: dict[str, _Module]) -> None:
        self.modules = modules
        self.by_name: dict[str, list[str]] = {}  # def name -> units of that name (`module:name`)
        for m in modules.values():
            for n in m.units:
                self.by_name.setdefault(n, []).append(f"{m.name}:{n}")
        # An entry module's `@hydra.main` function runs only as that entry (or named through an import).
        self.mains = {f"{m.name}:{n}" for m in modules.values() for n in m.mains}
        self.reads: dict[str, set[tuple[str, str]]] = {}
        self.refs: dict[str, set[str]] = {}
        for m in modules.values():
            self._add(m, f"{m.name}:", m.top_level_code())
            for n, node in m.units.items():
                self._add(m, f"{m.name}:{n}", node)

    def _add(self, m: _Module, unit: str, node: ast.AST) -> None:
        self.reads[unit] = _pair_reads(node)
        self.refs[unit] = set(self._references(m, node)) - {unit}

    def _resolve(self, dotted: str, depth: int = 0) -> str | None:
        """The unit a dotted name denotes (`verl.a.b.func` -> `verl.a.b:func`), following re-exports."""
        module, _, attr = dotted.rpartition(".")
        if depth > 10 or not module:
            return None
        if module in self.modules:
            m = self.modules[module]
            if attr in m.units:
                return f"{module}:{attr}"
            if attr in m.imports and m.imports[attr] != dotted:
                return self._resolve(m.imports[attr], depth + 1)
        return None

    def _references(self, m: _Module, node: ast.AST) -> Iterable[str]:
        for expr in ast.walk(node):
            if isinstance(expr, ast.Name) and not isinstance(expr.ctx, ast.Store):
                if expr.id in m.units:
                    yield f"{m.name}:{expr.id}"
                elif expr.id in m.imports:
                    found = self._resolve(m.imports[expr.id])
                    if found:
                        yield found
            elif isinstance(expr, ast.Attribute):
                yield from self._attribute(m, expr)
            elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "getattr":
                name = constant_str(expr.args[1]) if len(expr.args) > 1 else None
                yield from (u for u in self.by_name.get(name or "", ()) if u not in self.mains)
            elif _DOTTED_VERL.match(constant_str(expr) or ""):
                found = self._resolve(expr.value)
                if found:
                    yield found

    def _attribute(self, m: _Module, expr: ast.Attribute) -> Iterable[str]:
        parts, base = [expr.attr], expr.value
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name) and (base.id in m.imports or base.id in self.modules):
            target = m.imports.get(base.id, base.id)
            found = self._resolve(".".join([target, *reversed(parts)]))
            if found or target.split(".")[0] != "verl" or target in self.modules:
                yield from [found] if found else []  # a module's attribute, or another package's: resolved
                return
        # An object's attribute: any unit of that name may be what it holds (not an entry's `@hydra.main`).
        yield from (u for u in self.by_name.get(expr.attr, ()) if u not in self.mains)

    def reached(self, starts: Iterable[str]) -> set[str]:
        seen, pending = set(), list(starts)
        while pending:
            unit = pending.pop()
            if unit not in seen:
                seen.add(unit)
                pending.extend(self.refs.get(unit, ()))
        return seen


def read_modules(package_dir: Path) -> dict[str, _Module]:
    """Every module of the verl package in ``package_dir``, parsed."""
    out: dict[str, _Module] = {}
    for path in sorted(p for p in Path(package_dir).rglob("*.py") if p.is_file()):
        name, is_pkg = module_name(Path(package_dir).parent, path)
        try:
            out[name] = _Module(name, is_pkg, ast.parse(path.read_bytes()))
        except (SyntaxError, ValueError) as e:  # a file Python cannot parse: keep going, but say so
            log.warning("schema build: cannot parse %s: %s", path, e)
    return out


def entry_reads(package_dir: Path, entry_nodes: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Top-level config node -> the entry modules that take it off their config, for each node that some entry
    module whose config has it never takes (FORMAT.md ``entry_reads``). ``entry_nodes``: entry module -> the
    top-level nodes of the config it composes. An entry takes ``node`` off its config where a unit it reaches reads
    ``node`` off a name like a config's (``config.reward_model``, ``self.config.get("reward_model")``, ``cfg``):
    verl names the composed config so, and reads every key below a node through it."""
    graph = _Graph(read_modules(package_dir))
    referenced = {r for refs in graph.refs.values() for r in refs}
    entries = [e for e in entry_nodes if e in graph.modules]
    unreferenced = {u for u in graph.refs if not u.endswith(":") and u not in referenced}
    every = {f"{m}:" for m in graph.modules if m not in entries} | unreferenced
    readers: dict[str, set[str]] = {}
    for entry in entries:
        own = {f"{entry}:"} | {f"{entry}:{n}" for n in graph.modules[entry].units}
        for unit in graph.reached(every | own):
            for owner, node in graph.reads[unit]:
                if _CONFIG_NAME.search(owner):
                    readers.setdefault(node, set()).add(entry)
    out: dict[str, list[str]] = {}
    for node in sorted({n for nodes in entry_nodes.values() for n in nodes}):
        having = {e for e in entries if node in entry_nodes[e]}
        found = readers.get(node, set()) & having
        if found and having - found:
            out[node] = sorted(found)
    return out
