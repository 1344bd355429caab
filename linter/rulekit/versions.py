"""Which versions go together: what other committed verl snapshots say about a key the snapshot in use does not know
(SL001, SL003), and which megatron-core snapshot a verl version is checked with when nothing names one."""

from __future__ import annotations

from ..engine import LintContext
from ..schema import DEFAULT_MEGATRON_CORE, OtherVersion, other_versions, snapshot_version

# The megatron-core a verl version runs with, where verl pins one. verl main runs from a checkout, which `uv sync`
# installs with megatron-core built from a git tag: pyproject.toml `[tool.uv.sources] megatron-core = { git =
# "https://github.com/NVIDIA/Megatron-LM.git", tag = "core_v0.18.0" }` ("The wheelhouse megatron-bridge 0.5.2 ...
# pairs with megatron-core core_v0.18.0", verl main @ 1dda039). verl 0.9.1's sdist says the same, but its wheel
# (what `pip install verl` gives, and what the 0.9.1 snapshot is built from) requires `megatron-core` unpinned, which
# pip resolves from the package index, where the newest is 0.16.1; verl 0.8.0 names none: both use the default.
PAIRED_MEGATRON_CORE = {"0.10.0.dev": "0.18.0"}


def megatron_core_for(verl_version: str) -> str:
    """The megatron-core snapshot to check `verl_version`'s pass-through dicts against when neither the recipe's
    `stack`, `[tool.sapo-lint] megatron-core-version` nor the command line names one (`verl_version`: a snapshot
    reference; a built snapshot's verl version is its own)."""
    return PAIRED_MEGATRON_CORE.get(snapshot_version(verl_version), DEFAULT_MEGATRON_CORE)


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
