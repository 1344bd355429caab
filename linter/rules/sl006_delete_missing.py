from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.common import did_you_mean, where
from ..rulekit.registry import Finding, rule


@rule(
    "SL006",
    "delete-missing",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="`~key` of a key that does not exist",
    bad="""
    overrides:
      ~actor_rollout_ref.actor.megatron.grad_offload: null
    """,
    good="""
    overrides:
      ~actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules: null
    """,
)
def check(ctx: LintContext):
    """`~key` deletes a key; Hydra fails at compose when the key is not there
    (`Could not delete from config. 'key' does not exist`). Keys differ between verl versions
    (`megatron.grad_offload` exists in 0.8 and not in 0.9.1), so a deletion copied from an older script
    breaks on upgrade."""
    for ro in ctx.overrides:
        if ro.parsed.op == "delete" and not ro.existed and ro.group is None and ro.outside is None:
            hint, _ = did_you_mean(ctx, ro.path)
            yield Finding(ro, f"cannot delete `{ro.path}`: not in {where(ctx)}.{hint}")
