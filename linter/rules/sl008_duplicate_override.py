from ..core.diagnostics import Severity
from ..core.redaction import shown_value
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule


@rule(
    "SL008",
    "duplicate-override",
    Severity.WARNING,
    part=Part.CONFIG,
    summary="the same key set twice in one command",
    bad="""
    overrides:
      actor_rollout_ref.rollout.n: 8
      +actor_rollout_ref.rollout.n: 16
    """,
    good="""
    overrides:
      actor_rollout_ref.rollout.n: 16
    """,
)
def check(ctx: LintContext):
    """Hydra applies overrides in order and the last one silently wins, so a key set twice in one command
    (often a long script where a later block repeats an earlier one) hides which value the run uses.
    A variant that sets a key of the base recipe is not a duplicate: the variant's value replaces it. Nor is a
    run script's setting written in a conditional branch that the earlier setting is not in (`ARGS=(...
    trainer.n_gpus_per_node=8 ...)`, then `npu) ARGS+=(trainer.n_gpus_per_node=16)`): the branch deliberately
    replaces an unconditional default. Two settings in the same region (two lines of one array), or a later
    unconditional one over a branch's, are reported."""
    earlier: dict[tuple, list] = {}
    for ro in ctx.overrides:
        key = (ro.path, ro.parsed.package)
        regions = set(ro.override.branches)
        first = next((e for e in earlier.get(key, ()) if regions <= set(e.override.branches)), None)
        earlier.setdefault(key, []).append(ro)
        if first is not None:
            yield Finding(
                ro,
                f"`{ro.path}` is also set at line {first.location.line}; the last one wins "
                f"(here: {shown_value(ro.path, ro.parsed.value)})",
            )
