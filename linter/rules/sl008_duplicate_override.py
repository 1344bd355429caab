from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule


@rule(
    "SL008", "duplicate-override", Severity.WARNING,
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
    A variant that sets a key of the base recipe is not a duplicate: the variant's value replaces it."""
    first: dict[tuple, object] = {}
    for ro in ctx.overrides:
        key = (ro.path, ro.parsed.package)
        earlier = first.get(key)
        if earlier is None:
            first[key] = ro
            continue
        yield Finding(ro, f"`{ro.path}` is also set at line {earlier.location.line}; the last one wins "
                          f"(here: {ro.parsed.value!r})")
