"""Bash run-script rules (SH): reported by the script source (`linter/sources/bash/`) while it evaluates a
verl-style run script statically, before any override is checked."""

from ..core.diagnostics import Severity
from ..rulekit.registry import source_rule

UNRESOLVED = source_rule(
    "SH001", "unresolved-construct", Severity.WARNING,
    summary="a shell construct that cannot be evaluated without running the script reaches an override",
    explanation="""Run scripts are read without being executed: assignments, `${VAR:-default}` (and `:=`, `-`,
    `+`), arrays and `+=`, `"${ARR[@]}"`, quoting, `$(( ))` on known integers and `case`/`if` on variables are
    evaluated. Anything else that reaches the trainer command (a command substitution `$(...)` in a value, a
    variable the script never sets, an unsupported parameter expansion, an `if` whose condition is not a plain
    comparison) is named here. An override whose value is unresolved is still checked by key (its value counts
    as an interpolation); one whose key is unresolved cannot be checked at all.""",
    bad="""
    python3 -m verl.trainer.main_ppo trainer.experiment_name=$(date +%s)
    """,
    good="""
    EXP_NAME=${EXP_NAME:-qwen3-8b-sapo}
    python3 -m verl.trainer.main_ppo trainer.experiment_name=${EXP_NAME}
    """,
    module=__name__,
)

SYNTAX = source_rule(
    "SH002", "bash-syntax-error", Severity.ERROR,
    summary="the run script is not valid bash",
    explanation="""The script does not parse as bash (tree-sitter-bash reports an ERROR or MISSING node at the
    given line and column), so none of its overrides are read.""",
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

PASSTHROUGH = source_rule(
    "SH003", "argument-passthrough", Severity.INFO,
    summary="the trainer command ends in \"$@\": overrides given at run time are not checked",
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
