"""Reading a run script: one evaluation per variant, each trainer call assembled into a `Command`.

Every variable that a `case` or an `if` comparison switches on is enumerated over the literal values the
branches name plus the script's own default; one the script computes (`DEVICE=${DEVICE:-$(probe)}`) is enumerated
over the values named for it only. Within each combination, a condition that cannot be decided statically but
guards an assignment or the trainer call is taken both ways (`cond@LINE:COL=true|false` in the variant's label).
Ways that `exit` before the trainer call are dropped, after a way that exits on a variable found empty
(`[ -z "$DATA" ] && exit 1`) has been evaluated again with the caller giving it; when every way exits, that is
SH006. At most `core.variants.MAX_VARIANTS` variants are evaluated.
What cannot be evaluated is carried through as a marker: on an override's value it is kept on the override
(`LocatedOverride.unresolved`) for SH001's rule to judge against the schema; in a key it is SH001 here; and every
value the trainer's arguments take from the environment is listed once per file (SH004).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ...catalog import ModelNaming, ModelNotFound, find_model, find_model_named, model_naming, model_path_key
from ...core.budget import charge
from ...core.command import Command, LocatedOverride, locate_override, merge_overrides, site_limits
from ...core.diagnostics import COMMAND_LINE, Location
from ...core.overrides import OverrideSyntaxError, ParsedOverride, parse_override
from ...core.problems import (
    BashSyntaxError,
    BrokenContinuation,
    EnvironmentInputs,
    ExitsBeforeTrainer,
    NotAnOverride,
    Passthrough,
    ReadProblem,
    UndecidedConditions,
    Unevaluated,
    UnknownEntryModule,
    UnknownModel,
    UnresolvedEntryModule,
    UnresolvedKey,
    VariantsSampled,
)
from ...core.variants import MAX_VARIANTS, collapse_variants, expand
from ...core.written import LONGEST_FIXABLE_LINE, written_word
from ...engine import reaches_model_rules
from ...schema import entrypoints, main_modules
from ...stack import Declared, ResolvedStack, resolve_stack
from ...verl_source import foreign_verl, in_repository, installed_roots, repository_dirs, shown_path
from ..entry_module import resolve_entry, search_roots, start_directories
from ..files import TextFile
from ..hardware import accelerator_levels, choose
from ..options import DEFAULT_CONFIG_NAME, ReadOptions
from .conditions import GLOB_CHAR, device_regions, switch_variable
from .device_signals import script_signals
from .interpreter import Interpreter
from .markers import ARGUMENTS, Marks, construct_text, environment_name, markers, readable
from .megatron_pin import megatron_pin
from .parse import byte_column, node_location, parse
from .syntax import syntax_problem
from .trainer_call import TrainerCall, TrainerCallFinder

# The value an override gets when part of it cannot be evaluated: an interpolation, so that type and range
# rules leave it alone while key rules still apply.
UNRESOLVED_VALUE = "${oc.env:SAPO_LINT_UNRESOLVED}"
# `var=${SRC:-default}`, `var=${SRC-default}`, `var="$SRC"`: the value is the caller's SRC (or the default).
_ALIAS = re.compile(r'"?\$(?:\{(?P<braced>[A-Za-z_]\w*)(?::?-[^}]*)?\}|(?P<plain>[A-Za-z_]\w*))"?')


@dataclass(slots=True)
class ScriptRead:
    """A run script read: a command per trainer call per variant, and what was reported while reading it."""

    commands: list[Command]
    problems: list[ReadProblem]  # turned into findings by the SH and RF rules (`rules/sh_script.py`, `rf_recipe.py`)
    verl_version: str | None = None
    switches: dict[str, list[str | None]] = field(default_factory=dict)  # variable -> values enumerated
    defaults: dict[str, str | None] = field(default_factory=dict)  # variable -> the value it has when none is given
    stack: ResolvedStack | None = None  # what its trainer calls are checked against; None: it makes none


_TEST_EXPRESSIONS = ("binary_expression", "parenthesized_expression", "unary_expression")


def _collect_switches(ev: Interpreter, root) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]:
    """Every variable a `case` or an `if`/`[[ ]]` comparison switches on, with the literal values named (in order
    of appearance); every variable's literal defaults in `${V:-x}`/`${V-x}` forms; and the variables assigned once
    from another variable the caller may set (`rollout_backend=${ROLLOUT_BACKEND:-sglang}` -> ROLLOUT_BACKEND):
    a switch on such a copy is enumerated through the caller's variable, since assigning the copy itself before
    the script runs would be overwritten."""
    # variable -> its values as the keys of a dict: in order, each once, in linear time (a `case` of 50,000 items)
    out: dict[str, dict[str, None]] = {}
    defaults: dict[str, dict[str, None]] = {}
    sources: dict[str, str | None] = {}  # assigned variable -> the variable it copies; None: not a plain copy

    def add(into: dict[str, dict[str, None]], var: str, value: str) -> None:
        into.setdefault(var, {})[value] = None

    def literal(text: str) -> bool:
        return not GLOB_CHAR.search(text) and not markers(text, ev.marks)

    stack = [(root, False)]  # (node, whether it is inside a test's expression: `[[ $A == x || ... ]]`)
    while stack:
        n, in_test = stack.pop()
        if n.type == "case_statement":
            var = switch_variable(ev, n.child_by_field_name("value"))
            if var is not None:
                out.setdefault(var, {})
                for item in (c for c in n.named_children if c.type == "case_item"):
                    for i, p in enumerate(item.children):
                        if item.field_name_for_child(i) == "value":
                            text = (
                                "".join(f for f, _ in ev.word(p, split=False))
                                if p.type != "extglob_pattern"
                                else ev.text(p)
                            )
                            if text and literal(text):
                                add(out, var, text)
        elif n.type == "binary_expression" and in_test:
            op = n.child_by_field_name("operator")
            if op is not None and ev.text(op) in ("==", "=", "!=", "-eq", "-ne"):
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                for a, c in ((left, right), (right, left)):
                    var = switch_variable(ev, a)
                    if var is not None and c is not None and switch_variable(ev, c) is None:
                        text = "".join(f for f, _ in ev.word(c, split=False))
                        if literal(text):
                            add(out, var, text)
        elif n.type == "command" and ev.text(n.child_by_field_name("name") or n) in ("test", "["):
            args = [c for c in n.named_children if c != n.child_by_field_name("name")]
            if len(args) >= 3 and ev.text(args[1]) in ("=", "==", "!=", "-eq", "-ne"):
                for a, c in ((args[0], args[2]), (args[2], args[0])):
                    var = switch_variable(ev, a)
                    if var is not None and switch_variable(ev, c) is None:
                        text = "".join(f for f, _ in ev.word(c, split=False))
                        if text and literal(text):
                            add(out, var, text)
        elif n.type == "variable_assignment":
            name, value = n.child_by_field_name("name"), n.child_by_field_name("value")
            if name is not None and name.type == "variable_name":
                m = _ALIAS.fullmatch(ev.text(value)) if value is not None else None
                var = ev.text(name)
                sources[var] = None if var in sources or m is None else (m["braced"] or m["plain"])
        elif n.type == "expansion":
            kids = [c for c in n.children if c.type not in ("${", "}")]
            if (
                len(kids) == 3
                and kids[0].type == "variable_name"
                and kids[1].type in (":-", "-")
                and kids[2].type in ("word", "raw_string", "string")
            ):
                text = "".join(f for f, _ in ev.word(kids[2], split=False))
                if text and literal(text):
                    add(defaults, ev.text(kids[0]), text)
        # Whether each child is in a test's expression follows from its parent: asking tree-sitter for a node's
        # parent walks down from the root, so climbing from every node would cost depth squared per node.
        below = n.type == "test_command" or (in_test and n.type in _TEST_EXPRESSIONS)
        stack.extend((c, below) for c in reversed(n.children))
    aliases = {var: src for var, src in sources.items() if src is not None and src != var}
    return {var: list(v) for var, v in out.items()}, {var: list(v) for var, v in defaults.items()}, aliases


# How run scripts install a Megatron-LM that is not a release, in commands or in set-up comments (verl's examples
# and CI scripts): `git clone https://github.com/NVIDIA/Megatron-LM -b dev && (cd Megatron-LM; git checkout
# 23e092f...)`, the same over several lines (`cd Megatron-LM` then `git checkout <sha>`), `git clone -b lite
# https://github.com/verl-project/Megatron-LM mlite`, `pip install git+https://...Megatron-LM.git@<ref>`, and a
# commit named in a requirements comment: `# - Megatron-LM: https://github.com/NVIDIA/Megatron-LM/commit/<sha>`,
# `Megatron-LM==<sha>`. A release tag (`@core_v0.12.1`, `@v0.12.1`, `@23.05`) is a release, not a pin; a release
# branch (`core_r0.13.0`) takes fixes after the release, so it is one. GitHub names are case-insensitive.
# Each pattern is tried at most once per line from a place found with str.find, and none can backtrack over the
# rest of the line: a line of 20,000 `Megatron-LM` words is read in linear time.
def _through_aliases(named: dict[str, list[str]], aliases: dict[str, str]) -> dict[str, list[str]]:
    """`named` with each switch variable that aliases a caller's variable replaced by that variable."""
    out: dict[str, dict[str, None]] = {}  # the values as a dict's keys: in order, each once, in linear time
    for var, values in named.items():
        src = aliases.get(var, var)
        if src != var and src in named:
            src = var  # the caller's variable is switched on too: keep both as they are
        out.setdefault(src, {}).update(dict.fromkeys(values))
    return {var: list(values) for var, values in out.items()}


def _syntax_errors(path: str, text: str, lines: list[bytes]) -> list[BashSyntaxError]:
    """The syntax error bash stops at (`syntax`: what bash rejects, not what tree-sitter cannot read), if any."""
    problem = syntax_problem(text)
    if problem is None:
        return []
    # the character offset as a line and column; the end of the text is the end of its last line
    before = text[: problem.offset]
    row = before.count("\n")
    last = len(lines) - 1 - (len(lines) > 1 and lines[-1] == b"")
    if row > last:
        row, before = last, text[: len(text) - 1]
    column = len(before) - (before.rfind("\n") + 1)
    location = Location(path, row + 1, column + 1)
    return [BashSyntaxError(location=location, missing=problem.missing, unexpected=problem.unexpected)]


def _located_override(
    text: str,
    loc: Location,
    marks: dict[str, str],
    problems: list[ReadProblem],
    branches: tuple[int, ...],
    known: dict[tuple[str, Location], LocatedOverride],
    lines: list[bytes],
) -> LocatedOverride | None:
    """One argument of the trainer call. An unresolved key is SH001 here (nothing about it can be checked); an
    unresolved value is carried on the override (`unresolved`) for SH001's rule to judge against the schema.
    `known`: the overrides already parsed for this script, by argument and place; `lines`: the script's, where the
    argument's word is written (`LocatedOverride.written`)."""
    used = tuple(marks[ch] for ch in dict.fromkeys(markers(text, marks)))
    key_text = text.split("=", 1)[0]
    shown = readable(text, marks)
    if markers(key_text, marks):
        problems.append(UnresolvedKey(location=loc, key=readable(key_text, marks), constructs=used))
        return None
    if used:
        try:
            head = parse_override(key_text if key_text.startswith("~") and "=" not in text else key_text + "=0")
        except OverrideSyntaxError as exc:
            return LocatedOverride(loc, key_text, None, f"`{shown}`: {exc.message}", used, branches)
        return LocatedOverride(
            loc, key_text, ParsedOverride(head.op, head.key, head.package, UNRESOLVED_VALUE), None, used, branches
        )
    if (text, loc) not in known:  # the same argument in every variant: parsed once
        raw = lines[loc.line - 1] if loc.line <= len(lines) else b""
        written = written_word(raw.decode("utf-8"), loc.column, text) if len(raw) <= LONGEST_FIXABLE_LINE else None
        known[text, loc] = locate_override(text, loc, key_text)._replace(branches=branches, written=written)
    return known[text, loc]


def _environment_inputs(path: str, used: dict[str, Location]) -> EnvironmentInputs | None:
    """SH004: what the trainer's arguments take from outside the script, once per file."""
    if not used:
        return None
    names = sorted({n for n in map(environment_name, used) if n is not None})
    arguments = [construct_text(u) for u in used if u.endswith(f"({ARGUMENTS})")]
    computed = [construct_text(u) for u in used if environment_name(u) is None and construct_text(u) not in arguments]
    first = min(used.values(), key=lambda loc: (loc.line, loc.column))
    return EnvironmentInputs(location=first, names=tuple(names), arguments=tuple(arguments), computed=tuple(computed))


@dataclass(slots=True)
class _Parsed:
    src: bytes
    lines: list[bytes]
    root: object  # the tree-sitter root node
    errors: list[BashSyntaxError]  # the one bash stops at, if any


def _parse(source: TextFile) -> _Parsed:
    src = source.text.encode("utf-8")
    lines = src.split(b"\n")
    root = parse(src).root_node
    return _Parsed(src, lines, root, _syntax_errors(source.path, source.text, lines))


# A command name bash cannot run, since it is a Hydra override: a dotted key set (`+a.b=1`) or deleted (`~a.b`).
_OVERRIDE_AS_COMMAND = re.compile(
    r"^(?:(?:\+\+|\+)?[A-Za-z_][\w-]*(?:\.[\w-]+)+(?:@[\w.]+)?=|~[A-Za-z_][\w-]*(?:\.[\w-]+)+$)"
)
# What follows a command's last word on its line: a `\` that continues it onto the next line (the line's last
# character), or one that escapes a blank instead, which ends the command there or at a `# comment` after it.
_COMMENT_AFTER_BACKSLASH = re.compile(rb"\s*\\[ \t]+#")
_BLANK_AFTER_BACKSLASH = re.compile(rb"\s*\\[ \t]+$")
_CONTINUED = re.compile(rb"\s*\\$")


def _cause(parsed: _Parsed, before, n) -> str:
    """What ended the command `before` so that `n` starts a command of its own (`BrokenContinuation.cause`)."""
    end = before.end_point[0]  # its last line, from 0
    if n.start_point[0] == end:  # both on one line: what separates them (`;`, `&`)
        return f"`{parsed.src[before.end_byte : n.start_byte].decode('utf-8', 'replace').strip()}`"
    tail = parsed.lines[end][before.end_point[1] :]  # after its last word (tree-sitter leaves a `\ ` word out)
    if _COMMENT_AFTER_BACKSLASH.match(tail):  # first: a comment may end in `\` too
        return "a comment"
    if _BLANK_AFTER_BACKSLASH.match(tail):
        return "a blank"
    if _CONTINUED.match(tail):  # continued onto the next line, which ended it
        return "a comment line" if parsed.lines[end + 1].lstrip().startswith(b"#") else "a blank line"
    return "no backslash"


def _broken_continuations(parsed: _Parsed, path: str) -> list[BrokenContinuation]:
    """SH005: commands whose name is a Hydra override, each with the trainer command a line break cut it from; and
    commands whose name is an option (`--`) and whose text holds a trainer call, with the command before them."""
    out = []
    # each node with the named sibling before it that is no comment: found in one pass over its parent's children
    # (tree-sitter finds a previous sibling from the parent's first child: walking back over 20,000 comments one
    # sibling at a time took quadratic time)
    stack = [(parsed.root, None)]
    while stack:
        n, before = stack.pop()
        children, previous = [], None
        for c in n.named_children:
            children.append((c, previous))
            previous = previous if c.type == "comment" else c
        stack.extend(reversed(children))
        name = n.child_by_field_name("name") if n.type == "command" else None
        written = parsed.src[name.start_byte : name.end_byte].decode("utf-8", "replace") if name is not None else ""
        if _OVERRIDE_AS_COMMAND.match(written):
            # cut from a trainer command only
            cut_from = before if before is not None and TrainerCallFinder.watches(_text(parsed, before)) else None
            never_runs = False
        elif written.startswith("-") and TrainerCallFinder.watches(_text(parsed, n)):
            cut_from, never_runs = before, True  # cut from its launcher, whatever that is (`ray job submit`)
        else:
            continue
        words = sum(1 for c in n.named_children if c.type not in ("variable_assignment", "file_redirect", "comment"))
        where = node_location(path, parsed.lines, n)
        cause = _cause(parsed, cut_from, n) if cut_from is not None else ""
        if never_runs and cause == "no backslash":
            cut_from = None  # a command before it with no `\` to cut: which command it belongs to is not known
        if cut_from is None:
            out.append(BrokenContinuation(location=where, command=written, trainer_never_runs=never_runs))
            continue
        out.append(
            BrokenContinuation(
                location=where,
                command=written,
                ended_at=cut_from.end_point[0] + 1,
                cause=cause,
                overrides=words,
                trainer_never_runs=never_runs,
            )
        )
    return out


def _text(parsed: _Parsed, n) -> bytes:
    return parsed.src[n.start_byte : n.end_byte]


class _BranchFinder:
    """The conditional regions around a place in the script, outermost first, each named by its start byte: a
    `case` item, the `then` part of an `if`, an `elif` or `else` clause, the right-hand side of `&&`/`||`."""

    def __init__(self, parsed: _Parsed):
        self.parsed = parsed
        self.line_starts = [0]
        for line in parsed.lines:
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)
        self.found: dict[tuple[int, int], tuple[int, ...]] = {}
        # node id -> the regions around it: places share their ancestors, and tree-sitter finds a node's parent
        # from the root, so climbing from each of 20,000 overrides nested 100 deep took seconds
        self.regions: dict[int, tuple[int, ...]] = {parsed.root.id: ()}

    def __call__(self, loc: Location) -> tuple[int, ...]:
        key = (loc.line, loc.column)
        if key not in self.found:
            self.found[key] = self._branches(loc)
        return self.found[key]

    def _branches(self, loc: Location) -> tuple[int, ...]:
        row = loc.line - 1
        if not 0 <= row < len(self.parsed.lines):
            return ()
        byte = self.line_starts[row] + byte_column(self.parsed.lines[row], max(loc.column - 1, 0))
        node = self.parsed.root.descendant_for_byte_range(byte, byte)
        climbed = []  # (node, its parent), up to the first node whose regions are known
        while node is not None and node.id not in self.regions:
            parent = node.parent
            climbed.append((node, parent))
            node = parent
        regions = self.regions[node.id] if node is not None else ()
        for child, parent in reversed(climbed):
            if parent is not None:
                region = _region(parent, child)
                regions = regions if region is None else (*regions, region)
            self.regions[child.id] = regions
        return regions


def _region(parent, node) -> int | None:
    """The conditional region that `node` is in directly below `parent`, if any, named by its start byte."""
    if parent.type in ("case_item", "elif_clause", "else_clause"):
        return parent.start_byte
    if parent.type == "if_statement" and node.type not in ("elif_clause", "else_clause"):
        then = next((c for c in parent.children if c.type == "then"), None)
        return parent.start_byte if then is not None and node.start_byte >= then.end_byte else None
    if parent.type == "list" and node.start_byte > parent.children[0].start_byte:
        return node.start_byte
    return None


@dataclass(slots=True)
class Evaluation:
    """A script evaluated once per variant: what `read_script` assembles commands from, and what the argv property
    test compares with bash."""

    parsed: _Parsed
    marks: Marks  # marker character -> the construct it stands for, in every variant
    axes: list[tuple[str, list[str | None]]]  # each enumerated variable and its values
    defaults: list[int]  # per axis, the index of the value the script runs with when nothing is set
    runs: list[tuple[str | None, TrainerCallFinder]]  # (variant label, its evaluation)
    problems: list[ReadProblem]  # what was found on the way (broken continuations, variants left out)


def evaluate(source: TextFile) -> Evaluation:
    """Evaluate the script in each variant (switch values, then ways through undecidable conditions)."""
    parsed = _parse(source)
    marks = Marks()
    locations: dict = {}
    free: set[str] = set()

    def run(env: dict[str, str], decisions: dict[int, bool]) -> TrainerCallFinder:
        """One way through the script. A way that exits before the trainer call after finding a variable empty
        (`[ -z "$DATA" ] && exit 1`) is evaluated again with the variable given by the caller (the way on which it
        is set), until a way reaches the trainer or no variable is left to give; the conditions that way cannot
        decide then fork as any others do (`if [ -n "$DATA" ]; then ...; else exit 1; fi`). A variable the script
        switches on over named values is no such parameter: its unset variant stops there by design."""
        required: frozenset[str] = frozenset()
        while True:
            ev = TrainerCallFinder(
                source.path, parsed.src, parsed.lines, env, marks, switches, frozenset(free), decisions, locations,
                required=required,
            )  # fmt: skip
            ev.run(parsed.root)
            more = ev.tested_empty.keys() - required - enumerated
            if ev.exited is None or ev.trainers or not more:
                return ev
            required |= more

    probe = Interpreter(source.path, parsed.src, parsed.lines, {}, marks, locations=locations)
    named, literal_defaults, aliases = _collect_switches(probe, parsed.root)
    named = _through_aliases(named, aliases)
    switches = frozenset(named)
    enumerated = {var for var, values in named.items() if any(values)}
    default = run({}, {})
    axes: list[tuple[str, list[str | None]]] = []
    defaults: list[int] = []  # per axis, the index of the value the script runs with when nothing is set
    for var, values in named.items():
        vals: list[str | None] = list(values)
        current = default.vars.get(var)
        d = default.observed.get(var, current if isinstance(current, str) else None)
        if var in default.unresolved_switches or (d is not None and markers(d, marks)):
            # The script computes it (`DEVICE=${DEVICE:-$(probe)}`): a free variable, enumerated over the values
            # the script names for it; the first `${V:-x}` default is the one it runs with.
            vals = list(dict.fromkeys([*vals, *literal_defaults.get(var, [])]))
            if not vals:
                continue
            free.add(var)
            preferred = next((v for v in literal_defaults.get(var, []) if v in vals), vals[0])
            defaults.append(vals.index(preferred))
        elif d in vals:
            defaults.append(vals.index(d))
        elif d is None and literal_defaults.get(var):
            # a caller's variable read as `${VAR:-x}` (through a copy the script switches on): unset runs as x,
            # which is no variant of its own
            if literal_defaults[var][0] not in vals:
                vals.append(literal_defaults[var][0])
            defaults.append(vals.index(literal_defaults[var][0]))
        else:
            vals.append(d if d else None)
            defaults.append(len(vals) - 1)
        axes.append((var, vals))
    default_env = {var: vals[i] for (var, vals), i in zip(axes, defaults, strict=True) if var in free}
    if free:
        default = run(default_env, {})
    problems: list[ReadProblem] = [*parsed.errors, *_broken_continuations(parsed, source.path)]
    chosen, total = expand(
        [[(f"{var}={v if v is not None else 'unset'}", (var, v)) for v in vals] for var, vals in axes], defaults
    )
    runs, cut = _variants(chosen, default, default_env, run, free)
    if total > len(chosen):
        problems.append(
            VariantsSampled(
                location=Location(source.path), total=total, axes=tuple(v for v, _ in axes), linted=len(chosen)
            )
        )
    if cut:
        problems.append(UndecidedConditions(location=Location(source.path), limit=MAX_VARIANTS, cut=cut))
    if not runs:
        trainer = _first_trainer_command(parsed)
        if default.exited is not None and trainer is not None and not cut and total == len(chosen):
            problems.append(ExitsBeforeTrainer(location=default.exited, trainer_line=trainer.start_point[0] + 1))
        runs = [(None, default)]
    return Evaluation(parsed, marks, axes, defaults, runs, problems)


def _first_trainer_command(parsed: _Parsed):
    """The first command of the script that may be a trainer call, as written; None when there is none."""
    first = None
    stack = [parsed.root]
    while stack:
        n = stack.pop()
        if not TrainerCallFinder.watches(parsed.src[n.start_byte : n.end_byte]):
            continue
        if n.type == "command" and (first is None or n.start_byte < first.start_byte):
            first = n
        stack.extend(n.named_children)
    return first


def read_script(source: TextFile, options: ReadOptions) -> ScriptRead:
    """The commands the script runs, one per trainer call in each variant, and what was reported on the way. The
    verl they are checked against is found from where the first trainer call runs (`verl_source.choose`)."""
    evaluation = evaluate(source)
    parsed, marks, axes, runs = evaluation.parsed, evaluation.marks, evaluation.axes, evaluation.runs
    first = next((tr for _, ev in runs for tr in ev.trainers), None)
    file_stack = None  # a script that starts no trainer runs no verl: none is looked for
    if first is not None:
        roots = tuple(_call_directories(first, source.path, marks)[1])
        declared = Declared(megatron_pin=megatron_pin(source.text), roots=roots, text=source.text)
        file_stack = resolve_stack(source.path, declared, options)
    verl_version = file_stack.snapshot if file_stack is not None else options.cli_verl or options.default_verl
    problems = [*evaluation.problems, *([file_stack.verl.unbuilt] if file_stack and file_stack.verl.unbuilt else [])]
    levels, unknown_accelerators = accelerator_levels(source.path, options)
    problems.extend(unknown_accelerators)
    entry = entrypoints(verl_version)
    branches = _BranchFinder(parsed)
    regions = tuple(device_regions(runs[0][1], parsed.root).items())
    commands: list[Command] = []
    per_variant: list[list[ReadProblem]] = []
    models: dict[tuple[str, str | None], tuple[object, UnknownModel | None]] = {}
    naming = model_naming(source.text, options.model, Path(options.model_dir), options.fetch_model_config)
    inputs: dict[str, Location] = {}  # unresolved construct -> where it first reaches the trainer
    known: dict[tuple[str, Location], LocatedOverride] = {}
    configs: dict[tuple, tuple[tuple[str, str, str | None] | None, ReadProblem | None]] = {}
    for label, ev in runs:
        charge(f"assembling the trainer call of {label or 'the script'}")
        found: list[ReadProblem] = [Unevaluated(location=u.location, message=u.message) for u in ev.unevaluated]
        for tr in ev.trainers:
            key = (tr.module, tr.is_file, tr.cwd, tr.env.get("PYTHONPATH"), tr.config_name, tr.config_path)
            if key not in configs:  # resolved once; reported in every variant that runs it
                configs[key] = _entry_config(tr, entry, verl_version, source.path, marks)
            resolved, problem = configs[key]
            if problem is not None:
                found.append(problem)
            if resolved is None:  # a module whose config cannot be found, or none of verl's: nothing to check
                continue
            module, config_name, config_path = resolved
            overrides = []
            for text, loc in tr.args:
                for ch in markers(text, marks):
                    inputs.setdefault(marks[ch], loc)
                if text.startswith("-"):
                    found.append(NotAnOverride(location=loc, argument=readable(text, marks)))
                    continue
                lo = _located_override(text, loc, marks, found, branches(loc), known, parsed.lines)
                if lo is not None:
                    overrides.append(lo)
            if tr.passthrough is not None:
                found.append(Passthrough(location=tr.passthrough))
            model_key = model_path_key(module, config_name)
            path_lo = next(  # the last setting wins, as in Hydra: `--override` after the script's own
                (
                    lo
                    for lo in reversed((*overrides, *options.cli_overrides))
                    if lo.parsed and lo.parsed.key == model_key and isinstance(lo.parsed.value, str)
                ),
                None,
            )
            mpath = _model_path(path_lo, tr.args)
            if (model_key, mpath) not in models:  # looked up once; reported in every variant that names it
                models[model_key, mpath] = _model(
                    path_lo, mpath, model_key, tr.node_loc, Path(source.path).parent, marks, naming
                )
            model, not_found = models[model_key, mpath]
            if not_found is not None and reaches_model_rules(module):  # SFT, eval: no rule needs it (no RF005)
                found.append(not_found)
            command = Command(
                config_name,
                merge_overrides(overrides, options.cli_overrides),
                file_stack.libraries,
                label,
                tr.node_loc,
                model,
                None,
                tuple(tr.env.values()),
                site_limits({**dict(options.resources), **dict(options.cli_resources)}),
                module,
                device_signals=script_signals(ev.ascend_command, overrides, source.path),
                device_regions=regions,
                config_path=config_path and readable(config_path, marks),
                launch=tuple(readable(word, marks) for word in tr.launch),
                loop=tuple((name, readable(value, marks)) for name, value in tr.loop),
            )
            accelerator, mismatch = choose(command, levels)  # per variant: each device variant gets its own
            commands.append(command._replace(accelerator=accelerator))
            if mismatch is not None:
                found.append(mismatch)
        per_variant.append(list(dict.fromkeys(found)))
    problems.extend(collapse_variants(per_variant, [label for label, _ in runs]))
    environment = _environment_inputs(source.path, inputs)
    if environment is not None:
        problems.append(environment)
    return ScriptRead(
        commands,
        problems,
        verl_version,
        {var: vals for var, vals in axes},
        {var: vals[i] for (var, vals), i in zip(axes, evaluation.defaults, strict=True)},
        file_stack,
    )


def _call_directories(tr: TrainerCall, script: str, marks: Marks) -> tuple[list[Path], list[Path]]:
    """(the directories a trainer call may run in, where its `python -m` imports from: each of them, then its
    `PYTHONPATH`), from the script's `cd` and `PYTHONPATH` (`sources.entry_module`). A `cd` or `PYTHONPATH`
    directory that is not on this machine, as written or for a part that cannot be evaluated, is the repository's
    directory its last components name where there is one (`verl_source.in_repository`); an unknown `cd` that
    names none is as if there were none."""
    script_path = Path(script)
    unknown_cwd = tr.cwd is not None and bool(markers(tr.cwd, marks))
    starts = start_directories(script_path, None if unknown_cwd else tr.cwd)
    if tr.cwd is not None and (unknown_cwd or not any(start.is_dir() for start in starts)):
        found = in_repository(script_path, _known_end(tr.cwd, marks))
        starts = [found, *starts] if found is not None else starts
    pythonpath = tr.env["PYTHONPATH"].value.split(":") if "PYTHONPATH" in tr.env else []
    entries = []
    for entry in (p for p in pythonpath if p and "$" not in p and "`" not in p):
        if markers(entry, marks) or not any((start / entry).is_dir() for start in starts):
            found = in_repository(script_path, _known_end(entry, marks))
            entry = str(found) if found is not None else entry
        entries.append(entry)
    return starts, search_roots(starts, entries)


def _known_end(written: str, marks: Marks) -> str:
    """A path as far as it is known: all of it, or the whole components after its last part that cannot be
    evaluated (`_literal_end`)."""
    return _literal_end(written, marks) if markers(written, marks) else written


def _entry_config(
    tr: TrainerCall, entry: dict[str, str], verl_version: str, script: str, marks: Marks
) -> tuple[tuple[str, str, str | None] | None, ReadProblem | None]:
    """(the entry module the rules see, the config name, the config directory: None for verl's own) of a trainer
    call, or None when its config cannot be found or it is not verl's trainer; and what to report about it. verl's
    own entry module composes its `@hydra.main` default (`schemas/verl/<version>.json`'s `entrypoints`) unless the
    call names one; a module of the script's own is read for its `@hydra.main` (`sources.entry_module`) unless the
    call names both the config and its directory."""
    if tr.module.startswith("verl."):
        name = tr.config_name or entry.get(tr.module)
        if name is not None:
            return (tr.module, name, tr.config_path), None
        if not verl_version:  # the verl it runs cannot be snapshotted (RF004): its entry modules are not known
            return (tr.module, DEFAULT_CONFIG_NAME, tr.config_path), None
        if tr.module in main_modules(verl_version):  # a program of verl's that is no Hydra trainer (model_merger)
            return None, None
        roots = _call_directories(tr, script, marks)[1]
        foreign = foreign_verl([*roots, *installed_roots(repository_dirs(Path(script).absolute().parent))])
        if foreign is not None:
            reason = (
                f"`verl` here is the package at {shown_path(str(foreign))}, which has no `trainer/config/`: another "
                "program named "
                "verl, with entry points and configs of its own"
            )
            return None, UnresolvedEntryModule(location=tr.node_loc, module=tr.module, reason=reason)
        unknown = UnknownEntryModule(
            location=tr.node_loc, module=tr.module, verl_version=verl_version, assumed=DEFAULT_CONFIG_NAME
        )
        return (tr.module, DEFAULT_CONFIG_NAME, tr.config_path), unknown
    if tr.config_name is not None and tr.config_path is not None:  # Hydra's options name it: the module need not
        return (tr.module, tr.config_name, tr.config_path), None
    starts, roots = _call_directories(tr, script, marks)
    found = resolve_entry(tr.module, tr.is_file, starts, roots, entry)
    if found is None:  # a program of its own that takes Hydra overrides: not verl's trainer
        return None, None
    if isinstance(found, str):
        return None, UnresolvedEntryModule(location=tr.node_loc, module=tr.module, reason=found)
    return (found.entry_module, tr.config_name or found.config_name, tr.config_path or found.config_path), None


def _model_path(path_lo: LocatedOverride | None, args) -> str | None:
    """The model path as the trainer call writes it: its value, or, where part of it cannot be evaluated, the
    argument's value with a marker for each such part (`<$HOME>/models/Qwen3-8B`)."""
    if path_lo is None:
        return None
    if not path_lo.unresolved:
        return path_lo.parsed.value
    # one place can hold several arguments (an unquoted `$ARGS` split into words): the one that sets this key
    written = next(text for text, loc in args if loc == path_lo.location and text.startswith(path_lo.key_text + "="))
    return written.partition("=")[2]


def _model(
    path_lo: LocatedOverride | None,
    written: str | None,
    key: str,
    call: Location,
    base_dir: Path,
    marks: Marks,
    naming: ModelNaming,
):
    """(the model the trainer call runs, None) or (None, RF005 saying why it is unknown), from the first of: an
    `--override` of the model key; the file's `# sapo-lint: model=` comment; the trainer call's own path (`key`); else,
    where that path is unknown until run time, `[tool.sapo-lint] model`. A path partly unknown statically
    (`$HOME/models/Qwen3-8B`, `${MODEL_PATH:-$ROOT/DeepSeek-V3}`) is looked up by the components written after its
    last unknown part."""
    if naming.directive is not None and (path_lo is None or path_lo.location.path != COMMAND_LINE):
        where = Location(call.path, naming.directive_line, 1)
        return _named(naming.directive, base_dir, naming, key, where, "the `# sapo-lint: model=` comment")
    if path_lo is not None and not path_lo.unresolved:
        try:
            return find_model(written, None, base_dir, naming.fetch), None
        except ModelNotFound as exc:
            return None, UnknownModel(location=path_lo.location, reason=str(exc), remedy=naming.remedy(key, written))
    if path_lo is None:
        not_found = UnknownModel(
            location=call, reason=f"the trainer command sets no `{key}`", remedy=naming.remedy(key)
        )
    else:
        constructs = ", ".join(f"`{construct_text(u)}`" for u in path_lo.unresolved)
        unknown = f"the model path `{readable(written, marks)}` is not known statically (it uses {constructs})"
        end = _literal_end(written, marks)
        try:
            return find_model_named(end, unknown, naming.fetch), None
        except ModelNotFound as exc:
            not_found = UnknownModel(location=path_lo.location, reason=str(exc), remedy=naming.remedy(key, end))
    if naming.setting is not None:  # known only at run time: the model the project names
        return _named(naming.setting, naming.setting_dir, naming, key, call, "[tool.sapo-lint] model")
    return None, not_found


def _named(model: str, base_dir: Path, naming: ModelNaming, key: str, where: Location, by: str):
    """(the model a directive or setting names, None) or (None, RF005 at `where` saying `by` names none found)."""
    try:
        return find_model(model, None, base_dir, naming.fetch), None
    except ModelNotFound as exc:
        reason = f"{by}: {exc}"
        return None, UnknownModel(location=where, reason=reason, remedy=naming.remedy(key, model))


def _literal_end(written: str, marks: Marks) -> str:
    """The whole path components written after the last part that cannot be evaluated (`/models/Qwen3-8B` of
    `<$HOME>/models/Qwen3-8B`; nothing of `<$ROOT>-Instruct`, whose last component is only partly known)."""
    last = max(written.rfind(ch) for ch in markers(written, marks))
    end = written[last + 1 :]
    return end if end.startswith("/") else end.partition("/")[2]


def _variants(
    chosen, default: TrainerCallFinder, default_env: dict[str, str], run, free: set[str]
) -> tuple[list[tuple[str | None, TrainerCallFinder]], int]:
    """Evaluate each chosen combination of switch values, and within it each way through the conditions that
    cannot be decided statically (free booleans), within `MAX_VARIANTS` evaluations in all. A way that reaches
    `exit` before any trainer call is no variant (the script stops there: `*) echo unsupported; exit 1`).

    A variant's label names the inputs it was evaluated with: each switch variable the script read before setting
    it, with the value its first switch saw (`${A:-1}` unset is `A=1`), plus the free variables; then the ways
    taken through undecidable conditions. Combinations that give the same label are one variant (a variable the
    script sets before reading it is no input). Returns the variants (label, evaluation) and how many ways
    through undecidable conditions were left out."""
    budget = max(1, MAX_VARIANTS // max(len(chosen), 1))
    runs: list[tuple[str | None, TrainerCallFinder]] = []
    seen: set[str | None] = set()
    # Per combination evaluated (its first way), the values it gave the inputs that evaluation read: a combination
    # with the same values for them is the same evaluation, so the same label, and is not evaluated again. Only
    # an evaluation that needed no variable `required` of the caller: the attempts before it may have read others.
    inputs_given: list[frozenset[tuple[str, str | None]]] = []
    cut = 0
    for _, combo in chosen:
        if any(given <= set(combo) for given in inputs_given):
            continue
        env = {var: v for var, v in combo if v is not None}
        # The ways still to evaluate, each made when it is (`_way`), and only as many as the budget reaches: a
        # script with 40,000 undecidable conditions asked for 40,000 copies of 40,000 decisions per evaluation.
        pending: deque[Callable[[], dict[int, bool]]] = deque([dict])
        evaluated = 0
        while pending:
            if evaluated >= budget:
                cut += len(pending)
                break
            decisions = pending.popleft()()
            ev = default if env == default_env and not decisions else run(env, decisions)
            evaluated += 1
            if not decisions and not ev.required:
                inputs_given.append(frozenset((var, v) for var, v in combo if var in ev.inputs_read or var in free))
            label = _label(ev, combo, free)
            if label in seen:
                if not decisions:
                    break  # the same inputs as a combination already evaluated, forks included
                continue
            seen.add(label)
            room = max(budget - evaluated - len(pending), 0)
            pending.extend(partial(_way, decisions, ev.undecided, i) for i in range(min(len(ev.undecided), room)))
            cut += max(len(ev.undecided) - room, 0)  # never evaluated: the budget runs out before them
            if ev.exited is not None and not ev.trainers:
                continue
            runs.append((label, ev))
    return runs, cut


def _way(before: dict[int, bool], met: list[int], other: int) -> dict[int, bool]:
    """A way through undecidable conditions: the decisions `before`, then each condition `met` without one taken
    the same way as then (false) up to `met[other]`, which is taken the other way."""
    way = {**before, **dict.fromkeys(met[:other], False)}
    way[met[other]] = True
    return way


def _label(ev: TrainerCallFinder, combo, free: set[str]) -> str | None:
    tokens = []
    for var, v in combo:
        if var not in ev.inputs_read and var not in free:
            continue
        value = ev.observed.get(var, "" if v is None else v)
        tokens.append(f"{var}={value if value else 'unset'}")
    tokens += [
        f"cond@{d.location.line}:{d.location.column}={'true' if d.value else 'false'}" for d in ev.taken.values()
    ]
    return ",".join(tokens) or None
