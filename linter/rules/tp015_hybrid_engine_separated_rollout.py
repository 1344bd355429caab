from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule
from ..topology import separated_rollout

HYBRID = "actor_rollout_ref.hybrid_engine"


@rule(
    "TP015",
    "hybrid-engine-separated-rollout",
    Severity.ERROR,
    summary="a trainer with a separate rollout (fully-async, one-step-off) run with hybrid_engine on",
    bad="""
    entrypoint: verl.experimental.one_step_off_policy.main_ppo
    overrides:
      rollout.nnodes: 1
      rollout.n_gpus_per_node: 4
    """,
    good="""
    entrypoint: verl.experimental.one_step_off_policy.main_ppo
    overrides:
      actor_rollout_ref.hybrid_engine: false
      rollout.nnodes: 1
      rollout.n_gpus_per_node: 4
    """,
)
def check(ctx: LintContext):
    """verl main's fully-async trainer (`verl.experimental.fully_async_policy.fully_async_main`) and one-step-off
    trainer (`verl.experimental.one_step_off_policy.main_ppo`) place the rollout on devices of its own, so they
    refuse the colocated "hybrid" engine: `FullyAsyncTrainer` and `FullyAsyncRollouter`
    (verl/experimental/fully_async_policy/fully_async_trainer.py, fully_async_rollouter.py) and `OneStepOffRayTrainer`
    (verl/experimental/one_step_off_policy/ray_trainer.py) `assert not self.hybrid_engine`, a bare AssertionError
    after Ray has started. Their configs inherit `actor_rollout_ref.hybrid_engine: true` from `ppo_trainer`, so every
    script of theirs sets it to false (all 31 in verl main's experimental/*/shell do)."""
    if separated_rollout(ctx) and ctx.config.value(HYBRID) is not False:
        yield Finding(
            ctx.blame(HYBRID),
            f"`{ctx.command.entry_module}` runs the rollout on its own devices and "
            f"asserts `not hybrid_engine` when it starts; `{HYBRID}` is "
            f"{ctx.config.value(HYBRID)!r} (inherited from ppo_trainer unless set). Set "
            f"`{HYBRID}: false`",
        )
