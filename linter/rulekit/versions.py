"""What other committed verl snapshots say about a key the snapshot in use does not know, or that the command's entry
module does not read (SL001, SL003)."""

from __future__ import annotations

from ..engine import LintContext
from ..schema import OtherVersion, other_versions


def _advice(ctx: LintContext, found: list[OtherVersion], what: str) -> str:
    current = ctx.snapshot.label
    newer = [v for v in found if v.newer]
    older = [v for v in found if not v.newer]
    parts = []
    if newer:
        first = newer[0]
        runs = "verl main" if "@" in first.label else f"verl {first.version}"
        parts.append(
            f" Added after {current}: {what} in verl {', '.join(v.label for v in newer)}; lint with "
            f"`--verl-version {first.version}` if you run {runs}."
        )
    if older:
        parts.append(f" Removed or renamed since verl {older[-1].label}: {what} there, not in {current}.")
    return "".join(parts)


def path_elsewhere(ctx: LintContext, path: str) -> str:
    """' Added after 0.9.1: present in verl 0.10.0.dev (main @ 1dda039); ...' when another committed snapshot of
    the same config and group selection has the key, else '' (also past the file's suggestions: each reads every
    other snapshot's tree)."""
    if not ctx.suggestions.allowed(path):
        return ""
    return _advice(ctx, other_versions(ctx.snapshot, ctx.selection, path=path), "present")


def read_elsewhere(ctx: LintContext, name: str) -> str:
    """The same, for a key name that another snapshot's verl reads."""
    if not ctx.suggestions.allowed(name):
        return ""
    return _advice(ctx, other_versions(ctx.snapshot, ctx.selection, read=name), f"`{name}` is read")


def entry_read_elsewhere(ctx: LintContext, node: str, entry_module: str) -> str:
    """The same, for a top-level node that the entry module reads in another snapshot's verl."""
    found = other_versions(ctx.snapshot, ctx.selection, entry_read=(node, entry_module))
    return _advice(ctx, found, f"`{entry_module}` reads `{node}`")
