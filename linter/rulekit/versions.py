"""Which versions go together: what other committed verl snapshots say about a key the snapshot in use does not know
(SL001, SL003), and which megatron-core snapshot a verl version is checked with when nothing names one."""

from __future__ import annotations

from ..engine import LintContext
from ..schema import DEFAULT_MEGATRON_CORE, OtherVersion, other_versions, snapshot_version

# The megatron-core a verl version runs with, where verl names one. verl main runs from a checkout, which `uv sync`
# installs with megatron-core built from a git tag: pyproject.toml `[tool.uv.sources] megatron-core = { git =
# "https://github.com/NVIDIA/Megatron-LM.git", tag = "core_v0.18.0" }` ("The wheelhouse megatron-bridge 0.5.2 ...
# pairs with megatron-core core_v0.18.0", verl main @ 1dda039). verl 0.9.1's sdist says the same, but its wheel
# (what `pip install verl` gives, and what the 0.9.1 snapshot is built from) requires `megatron-core` unpinned, which
# pip resolves from the package index, where the newest is 0.16.1; verl 0.8.0 names none: both use the default.
# verl 0.4-0.7 name none in their wheels or sdists either; their release line's docker images and install docs do
# (docs/start/install.rst: "image with tag verl0.4 is built for verl release v0.4.x"):
# - 0.4.1: docker/verl0.4-cu124-torch2.6-fa2.7.4/README.md `megatron.core==core_v0.12.1`;
# - 0.5.0: docker/verl0.5-cu126-torch2.7-fa2.7.4/README.md `megatron.core==core_v0.12.2`, install.rst "we support
#   Megatron-LM v0.12.2", scripts/install_vllm_sglang_mcore.sh `Megatron-LM.git@core_v0.12.2`; 0.12.2's four classes
#   have 0.12.1's fields, so 0.12.1's snapshot serves;
# - 0.6.1: install.rst "we support Megatron-LM v0.13.1", install_vllm_sglang_mcore.sh `core_v0.13.1` (the verl0.6
#   images: `app-verl0.6-...-mcore0.13.0-te2.2`);
# - 0.7.1: docker/Dockerfile.stable.vllm, the image that installs verl v0.7.1's dependencies, builds
#   `Megatron-LM.git@core_v0.16.0`: the default, 0.16.1, is that line's patch.
PAIRED_MEGATRON_CORE = {"0.4.1": "0.12.1", "0.5.0": "0.12.1", "0.6.1": "0.13.1", "0.10.0.dev": "0.18.0"}


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
