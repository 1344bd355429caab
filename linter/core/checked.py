"""Whether a file was checked, and if not, why: the closed set of reasons the summary, JSON and SARIF name.

A file is checked when at least one of its trainer commands (a recipe's, or one variant of a run script's) was
checked against a verl schema snapshot. Otherwise it is not checked, for the first reason of `BECAUSE` whose problem
its reading or checking reported, else because it has no trainer command (`NO_TRAINER_COMMAND`).

Adding a reason: one line in `BECAUSE`, for the problem record (`core.problems`) its source reports when it leaves a
file's commands unchecked. The record's rule still reports it as a finding (the reason is the summary's word for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from .problems import (
    ExitsBeforeTrainer,
    FileUnreadable,
    InternalError,
    InvalidYaml,
    NoSnapshot,
    OverBudget,
    ReadProblem,
    SchemaViolation,
    SnapshotNotBuilt,
    UnresolvedEntryModule,
)


class NotChecked(NamedTuple):
    """Why no trainer command of a file was checked: `reason`, a stable identifier (JSON and SARIF carry it), and
    `message`, the words the summary uses (it may quote the file: a config name)."""

    reason: str
    message: str


# A run script that starts no trainer (a `setup.sh`): nothing to check, rather than something that could not be.
# Such files are counted, but listed only with --verbose and never fail --strict (docs/usage.md, "pre-commit").
NO_TRAINER_COMMAND = NotChecked("no-trainer-command", "no trainer command")


def _no_snapshot(p: NoSnapshot) -> NotChecked:
    if p.config_only:
        return NotChecked("unknown-config", f"unknown config `{p.config_name}`")
    return NotChecked("no-snapshot", f"no snapshot for verl {p.verl_version}")


# The problem that leaves a file's commands unchecked -> why, in the order looked for: the first found is the reason.
BECAUSE: dict[type[ReadProblem], Callable[[ReadProblem], NotChecked]] = {
    FileUnreadable: lambda p: NotChecked("unreadable", "unreadable"),
    InternalError: lambda p: NotChecked("internal-error", "sapo-lint failed on it"),
    OverBudget: lambda p: NotChecked("over-budget", "over its work budget"),
    InvalidYaml: lambda p: NotChecked("invalid-recipe", "invalid recipe"),
    SchemaViolation: lambda p: NotChecked("invalid-recipe", "invalid recipe"),
    ExitsBeforeTrainer: lambda p: NotChecked("exits-before-trainer", "every path exits before the trainer"),
    UnresolvedEntryModule: lambda p: NotChecked("unresolved-entry-module", f"unresolved entry module `{p.module}`"),
    NoSnapshot: _no_snapshot,
    SnapshotNotBuilt: lambda p: NotChecked("snapshot-not-built", "its verl cannot be snapshotted"),
}


def not_checked_because(problems: Iterable[ReadProblem]) -> NotChecked:
    """Why a file none of whose commands was checked was not: the first reason of `BECAUSE` among its problems."""
    by_type: dict[type, ReadProblem] = {}
    for p in problems:
        by_type.setdefault(type(p), p)
    return next((because(by_type[kind]) for kind, because in BECAUSE.items() if kind in by_type), NO_TRAINER_COMMAND)


def fails_strict(why: NotChecked) -> bool:
    """Whether `--strict` fails a run over a file not checked for this reason: one it could not check, not one with
    nothing to check."""
    return why != NO_TRAINER_COMMAND
