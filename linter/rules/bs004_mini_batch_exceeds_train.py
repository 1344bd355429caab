from ..core.diagnostics import Severity
from ..core.paths import ROLE_NODE
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import active_roles


@rule(
    "BS004",
    "mini-batch-exceeds-train-batch",
    Severity.ERROR,
    part=Part.TRAIN_BATCH,
    summary="ppo_mini_batch_size larger than data.train_batch_size (static batch size)",
    bad="""
    overrides:
      data.train_batch_size: 128
      actor_rollout_ref.actor.ppo_mini_batch_size: 256
    """,
    good="""
    overrides:
      data.train_batch_size: 128
      actor_rollout_ref.actor.ppo_mini_batch_size: 64
    """,
)
def check(ctx: LintContext):
    """`validate_config` calls `ActorConfig.validate` (verl 0.9.1 `verl/workers/config/actor.py:222-229`) and,
    when a critic runs, `CriticConfig.validate` (`verl/workers/config/critic.py:117-128`); with a static batch size
    both raise `train_batch_size (...) must be >= actor.ppo_mini_batch_size (...)` (`critic.` for the critic).
    Both sizes count prompts (before `rollout.n`). With `use_dynamic_bsz=True` verl skips the check. verl 0.1 and
    forks of it have no such check (the split just yields a smaller mini-batch): for a source tree its own code
    decides (`schemas/facts.json`: `train-batch-covers-mini-batch`)."""
    if not ctx.fact("verl:train-batch-covers-mini-batch"):
        return
    train = ctx.number("data.train_batch_size")
    if not isinstance(train, int):
        return
    roles = [("actor", ROLE_NODE["actor"])]
    if "critic" in active_roles(ctx):
        roles.append(("critic", ROLE_NODE["critic"]))
    for name, base in roles:
        if ctx.config.value(f"{base}.use_dynamic_bsz") is not False:
            continue
        mini = ctx.number(f"{base}.ppo_mini_batch_size")
        if isinstance(mini, int) and train < mini:
            yield Finding(
                ctx.blame("data.train_batch_size", f"{base}.ppo_mini_batch_size"),
                f"verl's validate_config raises: train_batch_size ({train}) must be >= "
                f"{name}.ppo_mini_batch_size ({mini}). Lower {base}.ppo_mini_batch_size to at most {train} "
                f"(or raise data.train_batch_size)",
            )
