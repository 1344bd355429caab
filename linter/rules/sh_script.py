"""Bash run-script rules (SH): reported by the script source (`linter/sources/bash/`) while it evaluates a
verl-style run script statically, before any override is checked."""

from ..core.diagnostics import Severity
from ..core.problems import (
    BashSyntaxError,
    BrokenContinuation,
    EnvironmentInputs,
    ExitsBeforeTrainer,
    NotAnOverride,
    Passthrough,
    UndecidedConditions,
    Unevaluated,
    UnknownEntryModule,
    UnresolvedEntryModule,
    UnresolvedKey,
    VariantsSampled,
)
from ..core.words import counted
from ..engine import LintContext
from ..rulekit.registry import RULES, Finding, reads, rule, source_rule


@rule(
    "SH001",
    "unresolved-construct",
    Severity.WARNING,
    summary="a shell construct that cannot be evaluated without running the script reaches what a rule checks",
    bad="""
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$(nvidia-smi -L | wc -l)
    """,
    good="""
    N_GPUS=${N_GPUS:-8}
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=${N_GPUS}
    """,
)
def check_unresolved(ctx: LintContext):
    """Run scripts are read without being executed: assignments, `${VAR:-default}` (and `:=`, `-`, `+`), arrays
    and `+=`, `"${ARR[@]}"`, quoting, `$(( ))` on known integers, `case`/`if` with compound conditions, `exit`
    are evaluated. A variable the script computes but switches on (`DEVICE=${DEVICE:-$(probe)}` then
    `case "$DEVICE"`) is enumerated over the values the script names for it, and a condition that cannot be
    decided (`[ -f "$CKPT" ]`) is taken both ways, each a variant.

    What remains unresolved (a command substitution `$(...)`, a variable the script never sets, an unsupported
    parameter expansion) is reported as follows. In an override's key: always, since the override cannot be
    checked at all. In an override's value: only where a rule would check that value, decided from the key's
    schema entry: a typed key (int, float, bool, list, dict) or a key with a closed set of choices. Its value counts
    as an interpolation, so the key is still checked. An unresolved model path is RF005's (the rules that need
    the model's shape are skipped, and it says how to give the path), not reported twice. A free-form value (a file
    path, an experiment name) is not a warning: the script's environment inputs are listed once per file instead
    (SH004). Also reported: the rounds of a loop around the trainer call that are not followed (a `for` runs its
    body once per item, within a limit of rounds for the whole script; a `while` loop once), a `case` on a
    computed word that guards an assignment, `source`, and a number of variants past the limit."""
    for ro in ctx.overrides:
        if not ro.override.unresolved:
            continue
        checked = _checked_as(ro.path, ro.entry)
        if checked is None:
            continue
        constructs = ", ".join(f"`{u.split(' (', 1)[0]}`" for u in ro.override.unresolved)
        yield Finding(
            ro,
            f"`{ro.path}` is set from {constructs}, which cannot be evaluated statically; its value "
            f"({checked}) is not checked",
        )


def _checked_as(path: str, entry: dict | None) -> str | None:
    """What a rule would check the key's value as; None for a free-form value."""
    if entry is None:
        return None
    if entry.get("choices"):
        return "one of " + ", ".join(map(str, entry["choices"]))
    if entry.get("type") in ("int", "float", "bool", "list", "dict"):
        return f"an {entry['type']}" if entry["type"] == "int" else f"a {entry['type']}"
    return None


UNRESOLVED = RULES["SH001"]

SYNTAX = source_rule(
    "SH002",
    "bash-syntax-error",
    Severity.ERROR,
    summary="the run script is not valid bash",
    explanation="""Bash rejects the script: at the given line and column it meets a token it did not expect, or
    the script ends while a construct (`if`, a quote, `$(`) is still open. Bash runs the commands before that
    point and stops there, so the trainer call after it never runs. Reported only for what bash itself rejects
    (the reader's grammar is held to `bash -n`), never for what merely defeats the tree-sitter parser; the rest of
    the script is still read and checked.""",
    bad="""
    ACTOR=(actor_rollout_ref.actor.ppo_mini_batch_size=64
    python3 -m verl.trainer.main_ppo "${ACTOR[@]}"
    """,
    good="""
    ACTOR=(actor_rollout_ref.actor.ppo_mini_batch_size=64)
    python3 -m verl.trainer.main_ppo "${ACTOR[@]}"
    """,
    module=__name__,
)

BROKEN_CONTINUATION = source_rule(
    "SH005",
    "broken-continuation",
    Severity.ERROR,
    summary="a Hydra override, or a launcher's `--` before the trainer call, on a line of its own: a line break "
    "ended the command before it",
    explanation="""A blank line, or a comment line, after a trailing `\\` ends the command there, and so does a
    line that does not end in `\\`: one whose `\\` is followed by a blank (which it escapes) or by a `# comment`
    (which ends the command). Bash runs the trainer with the overrides written so far, and the lines after the break
    become a command of their own whose name is an override (`actor_rollout_ref.rollout.n=8`). Those overrides never
    reach verl, which trains with its defaults instead; bash then fails with `command not found` (shellcheck's
    SC2276, which this finding replaces on that line). Reported at the first override after the break, with the
    line where the trainer command ended and what ended it. Where the break comes before a launcher's `--`
    (`ray job submit --address=... \\`, a blank line, then `-- python3 -m verl.trainer.main_ppo ...`), bash runs
    `--` as a command and the trainer call never runs at all; its overrides are still checked, as if it ran. Delete
    the blank line, move the comment above the command, or end the line with `\\`.""",
    bad="""
    python3 -m verl.trainer.main_ppo \\
        trainer.nnodes=1 \\

        trainer.n_gpus_per_node=8
    """,
    good="""
    python3 -m verl.trainer.main_ppo \\
        trainer.nnodes=1 \\
        trainer.n_gpus_per_node=8
    """,
    module=__name__,
)

PASSTHROUGH = source_rule(
    "SH003",
    "argument-passthrough",
    Severity.INFO,
    summary='the trainer command ends in "$@": overrides given at run time are not checked',
    explanation="""A trailing `"$@"` (or `$*`) passes the script's own arguments to the trainer. They are
    unknown when the script is linted; pass them to `sapo-lint --override` to check them as well.""",
    bad="""
    python3 -m verl.trainer.main_ppo trainer.nnodes=1 "$@"
    """,
    good="""
    python3 -m verl.trainer.main_ppo trainer.nnodes=1
    """,
    module=__name__,
)

ENVIRONMENT_INPUTS = source_rule(
    "SH004",
    "environment-inputs",
    Severity.INFO,
    summary="the trainer's arguments take values from the environment the script runs in",
    explanation="""A value built from a variable the script never sets (`$HOME`, `$DATA_DIR`, a caller's
    variable) or from what it computes when it runs (`$(date +%s)`) is unknown when the script is linted. Where
    a rule would check that value, SH001 warns at the override; everywhere else (file paths, experiment names)
    this one note per file lists the variables and constructs, so that a run script's environment is known at a
    glance. The overrides using them are checked by key; pass real values with `--override` to check them.""",
    bad="""
    python3 -m verl.trainer.main_ppo data.train_files=$HOME/data/gsm8k/train.parquet
    """,
    good="""
    DATA_DIR=${DATA_DIR:-/data}
    python3 -m verl.trainer.main_ppo data.train_files=$DATA_DIR/gsm8k/train.parquet
    """,
    module=__name__,
)


EXITS_BEFORE_TRAINER = source_rule(
    "SH006",
    "exits-before-trainer",
    Severity.WARNING,
    summary="every way through the run script exits before its trainer command: nothing is checked",
    explanation="""The script reaches `exit` before the trainer command on every way through it: whatever the
    variables it switches on hold, whichever way each condition goes. The trainer never runs, and nothing the
    command sets is checked. A guard on a parameter the caller gives (`[ -z "$DATA" ] && { echo usage; exit 1; }`,
    `if [ ! -f "$DATA" ]; then exit 1; fi`, `${DATA:?}`) is not such an exit: the way on which the parameter is
    set is checked, with its value unknown. Reported at the `exit` that ends the script when it runs with its
    defaults; delete it, or the trainer command if the script is kept only as a stub.""",
    bad="""
    echo "moved to run_qwen3_8b.sh"
    exit 1
    python3 -m verl.trainer.main_ppo trainer.nnodes=1
    """,
    good="""
    [ -z "$DATA" ] && { echo "usage: DATA=... $0"; exit 1; }
    python3 -m verl.trainer.main_ppo data.train_files="$DATA" trainer.nnodes=1
    """,
    module=__name__,
)

UNRESOLVED_ENTRY_MODULE = source_rule(
    "SH007",
    "unresolved-entry-module",
    Severity.INFO,
    summary="the trainer command starts a module of the repository's own whose config cannot be found: its "
    "overrides are not checked",
    explanation="""A run script that starts its own entry module with Hydra overrides (`python3 -m
    recipe.dapo.main_dapo data.train_files=...`, `python3 train.py trainer.nnodes=1`) is checked against the config
    that module's `@hydra.main(config_path=..., config_name=...)` names: the module is found in the script's
    repository (from the directory the script `cd`s into, or its own and each one above it up to the repository
    root, and on the `PYTHONPATH` it sets) and read without being imported. A config directory of verl's
    (`verl/trainer/config`) is checked as verl's trainer with that config; one that calls verl's `main` without a
    `@hydra.main` of its own runs verl's. When the module's source is not found, has no `@hydra.main`, or computes
    its config name, this note says why and the command's overrides are not checked. Name the config on the
    command (`--config-path` and `--config-name`), or lint from the repository the script belongs to.""",
    bad="""
    python3 -m recipe.missing.main_ppo trainer.nnodes=1
    """,
    good="""
    python3 -m verl.trainer.main_ppo trainer.nnodes=1
    """,
    module=__name__,
)


@reads(Unevaluated)
def _unevaluated(p: Unevaluated):
    return UNRESOLVED.diagnostic(p.location, p.message)


@reads(NotAnOverride)
def _not_an_override(p: NotAnOverride):
    return UNRESOLVED.diagnostic(p.location, f"`{p.argument}` is not a Hydra override; ignored")


@reads(UnresolvedKey)
def _unresolved_key(p: UnresolvedKey):
    return UNRESOLVED.diagnostic(
        p.location,
        f"override key `{p.key}` uses {', '.join(f'`{u}`' for u in p.constructs)}, "
        "which cannot be evaluated statically; the override is not checked",
    )


@reads(VariantsSampled)
def _variants_sampled(p: VariantsSampled):
    return UNRESOLVED.diagnostic(
        p.location,
        f"{p.total:,} variant combinations of {', '.join(p.axes)}; linted "
        f"{p.linted}: the script's defaults, each single change from them, then the rest in "
        "order",
    )


@reads(UndecidedConditions)
def _undecided_conditions(p: UndecidedConditions):
    return UNRESOLVED.diagnostic(
        p.location,
        f"conditions that cannot be decided statically give more than {p.limit} "
        f"variants; {p.cut:,} ways through them are not linted",
    )


@reads(UnknownEntryModule)
def _unknown_entry_module(p: UnknownEntryModule):
    return UNRESOLVED.diagnostic(
        p.location, f"entry module `{p.module}` has no `@hydra.main` in verl {p.verl_version}; assumed `{p.assumed}`"
    )


@reads(BashSyntaxError)
def _syntax_error(p: BashSyntaxError):
    if p.missing is not None:
        what = f"missing `{p.missing}`"
    else:
        what = f"unexpected `{p.unexpected}`" if p.unexpected is not None else "unexpected end of file"
    return SYNTAX.diagnostic(
        p.location, f"bash syntax error: {what} at line {p.location.line}, column {p.location.column}"
    )


@reads(BrokenContinuation)
def _broken_continuation(p: BrokenContinuation):
    if p.ended_at is None and p.trainer_never_runs:
        message = (
            f"`{p.command}` is run as a command (`command not found`): a line break ended the command it belongs "
            "to, so the trainer call it holds never runs (it is checked here as if it ran)"
        )
        return BROKEN_CONTINUATION.diagnostic(p.location, message)
    if p.ended_at is None:
        message = (
            f"`{p.command}` is run as a command, not passed to a trainer: a line break ended the command it "
            "belongs to, so it never reaches verl; bash fails with `command not found`"
        )
        return BROKEN_CONTINUATION.diagnostic(p.location, message)
    ended, fix = _where_it_ended(p.cause, p.ended_at)
    if p.trainer_never_runs:
        message = (
            f"`{p.command}` starts a command of its own: the command before it {ended}, so bash runs "
            f"`{p.command}` as a command (`command not found`) and the trainer call it holds never runs (it is "
            f"checked here as if it ran). {fix}"
        )
    else:
        message = (
            f"`{p.command}` starts a command of its own: the trainer command {ended}, so the "
            f"{counted(p.overrides, 'override')} from line {p.location.line} on never reach verl, which trains "
            "without them; bash then "
            f"fails with `command not found`. {fix}"
        )
    return BROKEN_CONTINUATION.diagnostic(p.location, message)


def _where_it_ended(cause: str, line: int) -> tuple[str, str]:
    """Where and how a command ended (`BrokenContinuation.cause`), and how to join the cut-off command to it."""
    if cause in ("a comment line", "a blank line"):
        fix = "Move the comment line above the command" if cause == "a comment line" else "Delete the blank line"
        return f"ended at line {line}, where {cause} after its trailing `\\` ended it", fix
    if cause == "a comment":
        return (
            f"ended at line {line}, where a comment after its trailing `\\` ended it (the `\\` escapes the blank "
            "after it, not the line break)",
            "Move the comment above the command and end the line with the `\\`",
        )
    if cause == "a blank":
        return (
            f"ended at line {line}, where a blank after its trailing `\\` ended it (the `\\` escapes the blank, "
            "not the line break)",
            "Delete the blank after the `\\`",
        )
    if cause == "no backslash":
        return f"ended at line {line}, which does not end in `\\`", f"End line {line} with `\\`"
    return f"ended at {cause} on line {line}", f"Delete the {cause}"


@reads(Passthrough)
def _passthrough(p: Passthrough):
    return PASSTHROUGH.diagnostic(
        p.location,
        'the trainer command passes the script\'s arguments through (`"$@"`); '
        "overrides given at run time are not checked (pass them with --override)",
    )


@reads(EnvironmentInputs)
def _environment_inputs(p: EnvironmentInputs):
    parts = []
    if p.names:
        parts.append(f"the environment it runs in ({', '.join(f'${n}' for n in p.names)})")
    if p.arguments:
        parts.append(f"its own arguments ({', '.join(f'`{a}`' for a in p.arguments)})")
    if p.computed:
        parts.append(f"what it computes when it runs ({', '.join(f'`{c}`' for c in p.computed)})")
    return ENVIRONMENT_INPUTS.diagnostic(
        p.location,
        f"the trainer's arguments take values from {', '.join(parts)}; "
        "they are checked by key only (pass real values with --override to check "
        "them)",
    )


@reads(ExitsBeforeTrainer)
def _exits_before_trainer(p: ExitsBeforeTrainer):
    return EXITS_BEFORE_TRAINER.diagnostic(
        p.location,
        f"every way through the script exits before the trainer command (line {p.trainer_line}): the `exit` "
        f"at line {p.location.line} ends it when it runs with its defaults, and nothing the command sets is checked",
    )


@reads(UnresolvedEntryModule)
def _unresolved_entry_module(p: UnresolvedEntryModule):
    return UNRESOLVED_ENTRY_MODULE.diagnostic(
        p.location,
        f"the overrides of entry module `{p.module}` are not checked: its config cannot be found: {p.reason}",
    )
