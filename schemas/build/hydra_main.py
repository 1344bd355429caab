"""What a Python entry module tells Hydra, read with libcst (never imported or run): its ``@hydra.main(config_path=...,
config_name=...)`` functions, and the functions it calls, named through its imports. The schema builder reads verl's
entry modules with it (``verl.entrypoint_defaults``); the linter reads a run script's own entry module (a recipe's
``main_ppo.py`` that a script starts with ``python3 -m recipe.<name>.main_ppo``) to find the config it composes and
whether it hands the run to verl's trainer."""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from .source_index import dotted_name, string_value


class HydraMain(NamedTuple):
    """One top-level function decorated with ``@hydra.main``: its arguments as written."""

    function: str
    config_name: str | None  # None: not given, or not a string literal (`unread` says which)
    config_path: str | None  # relative to the module's directory, absolute, or ``pkg://``; None: not given or unread
    unread: tuple[str, ...] = ()  # the arguments written as something other than a string literal


def parse_module(source: bytes) -> cst.Module | None:
    """The module's syntax tree; None when libcst cannot parse it."""
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None


def hydra_mains(module: cst.Module) -> list[HydraMain]:
    """The module's top-level functions decorated with ``@hydra.main(...)`` (also ``main(...)`` imported from
    hydra), in order."""
    out = []
    for stmt in module.body:
        if not isinstance(stmt, cst.FunctionDef):
            continue
        for dec in stmt.decorators:
            call = dec.decorator
            if not isinstance(call, cst.Call) or dotted_name(call.func) not in ("hydra.main", "main"):
                continue
            written = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
            values = {k: string_value(v) for k, v in written.items()}
            unread = tuple(
                k for k in ("config_path", "config_name") if values.get(k, "") is None and not _is_none(written[k])
            )
            out.append(HydraMain(stmt.name.value, values.get("config_name"), values.get("config_path"), unread))
    return out


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def called_names(module: cst.Module) -> frozenset[str]:
    """Every function the module calls, anywhere in it, as a dotted name through its absolute imports
    (``from verl.trainer.main_ppo import run_ppo`` then ``run_ppo(cfg)``: ``verl.trainer.main_ppo.run_ppo``;
    ``from verl.trainer import main_ppo`` then ``main_ppo.main()``: ``verl.trainer.main_ppo.main``). An import
    anywhere binds its name everywhere: a call is resolved whatever scope imported the name."""
    visitor = _Calls()
    module.visit(visitor)
    out = set()
    for name in visitor.calls:
        head, _, rest = name.partition(".")
        bound = visitor.imports.get(head)
        if bound is not None:
            out.add(f"{bound}.{rest}" if rest else bound)
    return frozenset(out)


def imported_names(module: cst.Module) -> frozenset[str]:
    """What the module's absolute imports name, anywhere in it (`verl.trainer.main_ppo.run_ppo`, `ray`)."""
    visitor = _Calls()
    module.visit(visitor)
    return frozenset(visitor.imports.values())


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.imports: dict[str, str] = {}  # name bound -> what it names (a module, or a module's attribute)
        self.calls: list[str] = []

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.imports[alias.asname.name.value] = full
            else:  # `import a.b.c` binds `a`, and names a.b.c
                self.imports[full.split(".")[0]] = full.split(".")[0]
                self.imports.setdefault(full, full)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        base = dotted_name(node.module) if node.module is not None else None
        if node.relative or base is None or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            self.imports[bound] = f"{base}.{name}"

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func)
        if name is not None:
            self.calls.append(name)
