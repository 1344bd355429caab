"""What a Python entry module tells Hydra, read with the standard library's `ast` (never imported or run): its
``@hydra.main(config_path=..., config_name=...)`` functions, and the functions it calls, named through its imports. The
schema builder reads verl's entry modules with it (``verl.entrypoint_defaults``); the linter reads a run script's own
entry module (a recipe's ``main_ppo.py`` that a script starts with ``python3 -m recipe.<name>.main_ppo``) to find the
config it composes and whether it hands the run to verl's trainer.

A wrapper module is a file of the linted repository, read in the linter's own process: `ast` (CPython's parser) fails on
pathological input with an exception (nesting, size, encoding), where libcst's parser can take unbounded memory or crash
the process."""

from __future__ import annotations

import ast
from typing import NamedTuple


class HydraMain(NamedTuple):
    """One top-level function decorated with ``@hydra.main``: its arguments as written."""

    function: str
    config_name: str | None  # None: not given, or not a string literal (`unread` says which)
    config_path: str | None  # relative to the module's directory, absolute, or ``pkg://``; None: not given or unread
    unread: tuple[str, ...] = ()  # the arguments written as something other than a string literal


def parse_module(source: bytes) -> ast.Module | None:
    """The module's syntax tree; None when it cannot be parsed (a syntax error, an unknown or wrong encoding, NUL
    bytes, nesting or size beyond the parser's limits)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, LookupError):
        return None


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None (iterative: a chain of any length)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def hydra_mains(module: ast.Module) -> list[HydraMain]:
    """The module's top-level functions decorated with ``@hydra.main(...)`` (also ``main(...)`` imported from
    hydra), in order."""
    out = []
    for stmt in module.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for call in stmt.decorator_list:
            if not isinstance(call, ast.Call) or dotted_name(call.func) not in ("hydra.main", "main"):
                continue
            written = {k.arg: k.value for k in call.keywords if k.arg is not None}
            values = {k: _string(v) for k, v in written.items()}
            unread = tuple(
                k
                for k in ("config_path", "config_name")
                if k in written and values[k] is None and not _is_none(written[k])
            )
            out.append(HydraMain(stmt.name, values.get("config_name"), values.get("config_path"), unread))
    return out


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def called_names(module: ast.Module) -> frozenset[str]:
    """Every function the module calls, anywhere in it, as a dotted name through its absolute imports
    (``from verl.trainer.main_ppo import run_ppo`` then ``run_ppo(cfg)``: ``verl.trainer.main_ppo.run_ppo``;
    ``from verl.trainer import main_ppo`` then ``main_ppo.main()``: ``verl.trainer.main_ppo.main``). An import
    anywhere binds its name everywhere: a call is resolved whatever scope imported the name."""
    imports, calls = _imports_and_calls(module)
    out = set()
    for name in calls:
        head, _, rest = name.partition(".")
        bound = imports.get(head)
        if bound is not None:
            out.add(f"{bound}.{rest}" if rest else bound)
    return frozenset(out)


def imported_names(module: ast.Module) -> frozenset[str]:
    """What the module's absolute imports name, anywhere in it (`verl.trainer.main_ppo.run_ppo`, `ray`)."""
    return frozenset(_imports_and_calls(module)[0].values())


def _imports_and_calls(module: ast.Module) -> tuple[dict[str, str], list[str]]:
    """(name bound -> what it names: a module, or a module's attribute; the dotted names called), in source order
    (`ast.walk` is breadth-first and iterative: any depth)."""
    nodes = sorted(
        (n for n in ast.walk(module) if isinstance(n, (ast.Import, ast.ImportFrom, ast.Call))),
        key=lambda n: (n.lineno, n.col_offset),
    )
    imports: dict[str, str] = {}
    calls: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    imports[alias.asname] = alias.name
                else:  # `import a.b.c` binds `a`, and names a.b.c
                    imports[alias.name.split(".")[0]] = alias.name.split(".")[0]
                    imports.setdefault(alias.name, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module is None:
                continue
            for alias in node.names:
                if alias.name != "*":
                    imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        else:
            name = dotted_name(node.func)
            if name is not None:
                calls.append(name)
    return imports, calls
