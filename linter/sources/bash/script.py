"""Reading a run script: one evaluation per variant, each trainer call assembled into a `Command`.

Every variable that a `case` or an `if` comparison switches on is enumerated over the literal values the
branches name plus the script's own default; each combination is one variant (at most `core.variants.MAX_VARIANTS`, sampled beyond it).
What cannot be evaluated is carried through as a marker and reported (SH001) where it reaches an override.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ...core.command import Command, LocatedOverride, locate_override, merge_overrides, site_limits
from ...core.diagnostics import Diagnostic, Location
from ...core.overrides import OverrideSyntaxError, ParsedOverride, parse_override
from ...core.variants import collapse_variants, expand
from ...rules.sh_script import PASSTHROUGH, SYNTAX, UNRESOLVED
from ...schema import entrypoints
from ..files import TextFile
from ..recipe import DEFAULT_CONFIG_NAME, ReadOptions
from .interpreter import GLOB_CHAR, Interpreter, node_location, parse, readable, switch_variable
from .trainer_call import TrainerCallFinder

# The value an override gets when part of it cannot be evaluated: an interpolation, so that type and range
# rules leave it alone while key rules still apply.
UNRESOLVED_VALUE = "${oc.env:SAPO_LINT_UNRESOLVED}"


@dataclass(slots=True)
class ScriptRead:
    """A run script read: a command per trainer call per variant, and what was reported while reading it."""

    commands: list[Command]
    diagnostics: list[Diagnostic]
    verl_version: str | None = None
    switches: dict[str, list[str | None]] = field(default_factory=dict)  # variable -> values enumerated


def _collect_switches(ev: Interpreter, root) -> dict[str, list[str]]:
    """Every variable a `case` or an `if`/`[[ ]]` comparison switches on, with the literal values named."""
    out: dict[str, list[str]] = {}

    def add(var: str, value: str) -> None:
        vals = out.setdefault(var, [])
        if value not in vals:
            vals.append(value)

    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "case_statement":
            var = switch_variable(ev, n.child_by_field_name("value"))
            if var is not None:
                out.setdefault(var, [])
                for item in (c for c in n.named_children if c.type == "case_item"):
                    for i in range(item.child_count):
                        if item.field_name_for_child(i) == "value":
                            p = item.children[i]
                            text = "".join(f for f, _ in ev.word(p, split=False)) if p.type != "extglob_pattern" else ev.text(p)
                            if text and not GLOB_CHAR.search(text) and not any(ch in ev.marks for ch in text):
                                add(var, text)
        elif n.type == "binary_expression" and n.parent is not None and _in_test(n):
            op = n.child_by_field_name("operator")
            if op is not None and ev.text(op) in ("==", "=", "!=", "-eq", "-ne"):
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                for a, c in ((left, right), (right, left)):
                    var = switch_variable(ev, a)
                    if var is not None and c is not None and switch_variable(ev, c) is None:
                        text = "".join(f for f, _ in ev.word(c, split=False))
                        if not GLOB_CHAR.search(text) and not any(ch in ev.marks for ch in text):
                            add(var, text)
        stack.extend(reversed(n.children))
    # preserve first-appearance order
    return out


def _in_test(n) -> bool:
    p = n.parent
    while p is not None:
        if p.type == "test_command":
            return True
        if p.type not in ("binary_expression", "parenthesized_expression", "unary_expression"):
            return False
        p = p.parent
    return False


def _syntax_errors(path: str, root, lines: list[bytes]) -> list[Diagnostic]:
    out = []
    stack = [root]
    while stack and len(out) < 10:
        n = stack.pop()
        if n.is_missing or n.type == "ERROR":
            loc = node_location(path, lines, n)
            what = f"missing `{n.type}`" if n.is_missing else "unexpected text"
            out.append(SYNTAX.diagnostic(loc, f"bash syntax error: {what} at line {loc.line}, column {loc.column}"))
            continue
        if n.has_error:
            stack.extend(reversed(n.children))
    return out


def _located_override(text: str, loc: Location, marks: dict[str, str], diagnostics: list[Diagnostic]
                      ) -> LocatedOverride | None:
    used = [marks[ch] for ch in dict.fromkeys(ch for ch in text if ch in marks)]
    key_text = text.split("=", 1)[0]
    shown = readable(text, marks)
    if any(ch in marks for ch in key_text):
        diagnostics.append(UNRESOLVED.diagnostic(
            loc, f"override key `{readable(key_text, marks)}` uses {', '.join(f'`{u}`' for u in used)}, "
                 "which cannot be evaluated statically; the override is not checked"))
        return None
    if used:
        diagnostics.append(UNRESOLVED.diagnostic(
            loc, f"`{shown}`: {', '.join(f'`{u}`' for u in used)} cannot be evaluated statically; the value is "
                 "not checked"))
        try:
            head = parse_override(key_text if key_text.startswith("~") and "=" not in text else key_text + "=0")
        except OverrideSyntaxError as exc:
            return LocatedOverride(loc, key_text, None, f"`{shown}`: {exc.message}")
        return LocatedOverride(loc, key_text, ParsedOverride(head.op, head.key, head.package, UNRESOLVED_VALUE))
    return locate_override(text, loc, key_text)


@dataclass(slots=True)
class _Parsed:
    src: bytes
    lines: list[bytes]
    root: object  # the tree-sitter root node
    errors: list[Diagnostic]  # SH002, at most 10


def _parse(source: TextFile) -> _Parsed:
    src = source.text.encode("utf-8")
    lines = src.split(b"\n")
    root = parse(src).root_node
    return _Parsed(src, lines, root, _syntax_errors(source.path, root, lines))


def read_script(source: TextFile, options: ReadOptions) -> ScriptRead:
    """The commands the script runs, one per trainer call in each variant, and what was reported on the way."""
    from ...catalog import ModelNotFound, accelerators, find_model
    from ...rules.rf_recipe import UNKNOWN_ACCELERATOR, UNKNOWN_MODEL

    parsed = _parse(source)
    verl_version = options.cli_verl or options.default_verl
    if parsed.errors:
        return ScriptRead([], parsed.errors, verl_version)
    marks: dict[str, str] = {}

    def run(env: dict[str, str]) -> TrainerCallFinder:
        ev = TrainerCallFinder(source.path, parsed.src, parsed.lines, env, marks, frozenset(named))
        ev.run(parsed.root)
        return ev

    named: dict[str, list[str]] = {}
    probe = Interpreter(source.path, parsed.src, parsed.lines, {}, marks)
    named.update(_collect_switches(probe, parsed.root))
    default = run({})
    axes: list[tuple[str, list[str | None]]] = []
    defaults: list[int] = []  # per axis, the index of the value the script runs with when nothing is set
    for var, values in named.items():
        vals: list[str | None] = list(values)
        d = default.observed.get(var, default.vars.get(var) if isinstance(default.vars.get(var), str) else None)
        if d in vals:
            defaults.append(vals.index(d))
        else:
            vals.append(d if d else None)
            defaults.append(len(vals) - 1)
        axes.append((var, vals))
    diagnostics: list[Diagnostic] = []
    chosen, total = expand([[(f"{var}={v if v is not None else 'unset'}", (var, v)) for v in vals] for var, vals in axes],
                           defaults)
    if total > len(chosen):
        diagnostics.append(UNRESOLVED.diagnostic(Location(source.path), f"{total:,} variant combinations of "
                                                 f"{', '.join(v for v, _ in axes)}; linted {len(chosen)}: the script's "
                                                 "defaults, each single change from them, then the rest in order"))
    runs: list[tuple[str | None, TrainerCallFinder]] = []
    for _, combo in chosen:
        env = {var: v for var, v in combo if v is not None}
        ev = default if not env else run(env)
        reachable = all(ev.observed.get(var, "" if v is None else v) == ("" if v is None else v) for var, v in combo)
        if not reachable:
            continue
        label = ",".join(f"{var}={v if v is not None else 'unset'}" for var, v in combo) or None
        runs.append((label, ev))
    if not runs:
        runs = [(None, default)]

    accelerator = None
    if options.cli_accelerator:
        accelerator = accelerators().get(options.cli_accelerator)
        if accelerator is None:
            diagnostics.append(UNKNOWN_ACCELERATOR.diagnostic(Location(source.path), f"unknown accelerator "
                                                              f"`{options.cli_accelerator}`; known: {', '.join(accelerators())}"))
    entry = entrypoints(verl_version)
    commands: list[Command] = []
    per_variant: list[list[Diagnostic]] = []
    models: dict[str | None, object] = {}
    for label, ev in runs:
        found = [UNRESOLVED.diagnostic(u.location, u.message) for u in ev.unevaluated]
        for tr in ev.trainers:
            overrides = []
            for text, loc in tr.args:
                if text.startswith("-"):
                    found.append(UNRESOLVED.diagnostic(loc, f"`{text}` is not a Hydra override; ignored"))
                    continue
                lo = _located_override(text, loc, marks, found)
                if lo is not None:
                    overrides.append(lo)
            if tr.passthrough is not None:
                found.append(PASSTHROUGH.diagnostic(tr.passthrough, "the trainer command passes the script's "
                                                    "arguments through (`\"$@\"`); overrides given at run time are "
                                                    "not checked (pass them with --override)"))
            config_name = tr.config_name
            if config_name is None:
                config_name = entry.get(tr.module)
                if config_name is None:
                    found.append(UNRESOLVED.diagnostic(tr.node_loc, f"entry module `{tr.module}` has no "
                                                       f"`@hydra.main` in verl {verl_version}; assumed `{DEFAULT_CONFIG_NAME}`"))
                    config_name = DEFAULT_CONFIG_NAME
            path_lo = next((lo for lo in overrides if lo.parsed and lo.parsed.key == "actor_rollout_ref.model.path"
                            and isinstance(lo.parsed.value, str)), None)
            mpath = path_lo.parsed.value if path_lo else None
            if mpath not in models:
                try:
                    models[mpath] = find_model(mpath, None, Path(source.path).parent)
                except ModelNotFound as exc:
                    models[mpath] = None
                    found.append(UNKNOWN_MODEL.diagnostic(
                        path_lo.location if path_lo else tr.node_loc,
                        f"{exc}; skipped the topology rules that need the model's shape (TP003 and up). Point "
                        "actor_rollout_ref.model.path at a directory holding config.json"))
            commands.append(Command(config_name, merge_overrides(overrides, options.cli_overrides), options.stack, label,
                                    tr.node_loc, models[mpath], accelerator, tuple(tr.env.values()),
                                    site_limits({**dict(options.resources), **dict(options.cli_resources)}), tr.module))
        per_variant.append(list(dict.fromkeys(found)))
    diagnostics.extend(collapse_variants(per_variant, [label for label, _ in runs]))
    return ScriptRead(commands, diagnostics, verl_version, {var: vals for var, vals in axes})
