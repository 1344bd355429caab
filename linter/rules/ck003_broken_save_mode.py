"""Checkpoint save modes known to break with particular verl / mbridge versions."""

from __future__ import annotations

from typing import NamedTuple

from ..core.diagnostics import Severity
from ..core.paths import ROLE_NODE, ROLE_PREFIX, SFT, SFT_CHECKPOINT
from ..engine import MEGATRON, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..schema import fact, version_key
from ..topology import active_roles


class Broken(NamedTuple):
    """A save mode that fails with the verl versions where `schemas/facts.json`'s `verl` fact `fact` holds (and
    with mbridge releases up to `mbridge_max`, when set)."""

    mode: str
    fact: str
    why: str
    fix: str
    mbridge_max: str | None = None


KNOWN_BROKEN = (
    Broken(
        "async_save",
        "async-save-never-finalized",
        "verl 0.8.0 hands the async save request to a throw-away `AsyncCallsQueue(persistent=False)` "
        "(`megatron_checkpoint_manager.py:916-926`) that nothing ever finalizes: Megatron's metadata finalize, "
        "`latest_checkpointed_iteration.txt` and the rotation of old checkpoints never run, so the checkpoint cannot "
        "be resumed from and old ones pile up (0.9.1 schedules it on Megatron's global `async_calls` queue)",
        "set `{checkpoint}.async_save: false` or use verl 0.9.1",
    ),
    Broken(
        "mbridge_save_weights",
        "mbridge-save-weights-unfiltered",
        "verl 0.7.0 calls `bridge.save_weights(model, path, distributed_filesystem=True, memory_efficient=True)` "
        "when `megatron.vanilla_mbridge` is on, but released mbridge (PyPI <= 0.15.1, what verl's Ascend images "
        "install) has only `save_weights(models, weights_path, memory_efficient=False)`: the first save that "
        "includes the model fails with `TypeError: save_weights() got an unexpected keyword argument "
        "'distributed_filesystem'` (verl 0.7.1 and later pass only the arguments the signature accepts)",
        "install mbridge from git (>= 5691f71, which has `distributed_filesystem`), set "
        "`{megatron}.vanilla_mbridge: false`, or use verl >= 0.7.1",
        mbridge_max="0.15.1",
    ),
)


def _released_at_most(version: str, highest: str) -> bool:
    """A released mbridge version (digits first) not newer than `highest`; `git-main` is newer than any."""
    return version[:1].isdigit() and version_key(version) <= version_key(highest)


def broken_modes(
    verl_version: str, mbridge_version: str, *, async_save: bool, saves_model: bool, vanilla_mbridge: bool
) -> list[Broken]:
    """The KNOWN_BROKEN entries that apply to one role's checkpoint settings."""
    out = []
    for b in KNOWN_BROKEN:
        if not fact("verl", b.fact, verl_version):
            continue
        if (
            b.mode == "async_save"
            and async_save
            or (
                b.mode == "mbridge_save_weights"
                and saves_model
                and vanilla_mbridge
                and _released_at_most(mbridge_version, b.mbridge_max or "0")
            )
        ):
            out.append(b)
    return out


@rule(
    "CK003",
    "broken-save-mode",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    summary="checkpoint save mode known to be broken with the declared verl / mbridge version",
    bad="""
    verl: "0.8.0"
    overrides:
      trainer.save_freq: 50
      actor_rollout_ref.actor.checkpoint.async_save: true
    """,
    good="""
    verl: "0.8.0"
    overrides:
      trainer.save_freq: 50
      actor_rollout_ref.actor.checkpoint.async_save: false
    """,
)
def check(ctx: LintContext):
    """Some save paths fail only at the first checkpoint, hours into a run, with particular versions of verl
    (the recipe's `verl:` snapshot) and mbridge (the recipe's `stack.mbridge`):

    * `checkpoint.async_save: true` on verl 0.8.0: the async request goes to a throw-away
      `AsyncCallsQueue(persistent=False)` that is never finalized, so the checkpoint is never completed (no
      metadata, no `latest_checkpointed_iteration.txt`, no rotation).
    * verl 0.7.0 (and its development line) with `megatron.vanilla_mbridge: true` saving the model: verl passes
      `distributed_filesystem=True, memory_efficient=True` to `bridge.save_weights`, which released mbridge
      (PyPI 0.15.1 and earlier) does not accept -- a `TypeError` at the first save. verl 0.7.1 and later filter the
      arguments against the installed signature instead (and then silently drop `mbridge_config` keys: SL007).

    Which verl versions have each bug is data (`schemas/facts.json`: `async-save-never-finalized`,
    `mbridge-save-weights-unfiltered`).

    Only checked when `trainer.save_freq` > 0 (otherwise nothing is saved). Both bugs are in verl's Megatron
    checkpoint manager, which an SFT trainer's Megatron engine saves through too (`checkpoint.async_save`,
    `engine.vanilla_mbridge`, `checkpoint.save_contents`; its `trainer.save_freq` may also be "after_each_epoch")."""
    save_freq = ctx.number("trainer.save_freq")
    roles = active_roles(ctx)
    sft = roles == [SFT]
    if not (save_freq and save_freq > 0) and not (sft and ctx.config.value("trainer.save_freq") == "after_each_epoch"):
        return
    verl = ctx.snapshot.verl_version
    for role in (SFT,) if sft else ("actor", "critic"):
        checkpoint = SFT_CHECKPOINT if sft else f"{ROLE_NODE[role]}.checkpoint"
        megatron = ROLE_PREFIX[role]
        if role not in roles or ctx.tree.get(checkpoint) is None or (sft and ctx.model_engine != MEGATRON):
            continue
        contents = ctx.config.value(f"{checkpoint}.save_contents")
        contents = contents if isinstance(contents, list) else ["model", "optimizer", "extra"]
        found = broken_modes(
            verl,
            ctx.stack.mbridge,
            async_save=ctx.config.value(f"{checkpoint}.async_save") is True,
            saves_model="model" in contents or "hf_model" in contents,
            vanilla_mbridge=ctx.config.value(f"{megatron}.vanilla_mbridge") is True,
        )
        for b in found:
            keys = (
                (f"{checkpoint}.async_save",)
                if b.mode == "async_save"
                else (f"{megatron}.vanilla_mbridge", f"{checkpoint}.save_contents")
            )
            yield Finding(
                ctx.blame(*keys, "trainer.save_freq"),
                f"{role}: {b.why} (verl {verl}, mbridge {ctx.stack.mbridge}). "
                f"Fix: {b.fix.format(checkpoint=checkpoint, megatron=megatron)}",
            )
