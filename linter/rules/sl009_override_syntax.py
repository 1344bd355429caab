from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule


@rule(
    "SL009",
    "override-syntax",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="not valid Hydra override syntax",
    bad="""
    sapo-lint --override 'trainer.total_epochs=[1,2'
    """,
    good="""
    sapo-lint --override 'trainer.total_epochs=2'
    """,
)
def check(ctx: LintContext):
    """Every override must parse with Hydra's override grammar (hydra-core's parser is the reference). Sweeps
    (`a=1,2`, `choice(...)`, `range(...)`) are only meaningful with `--multirun`, which verl's `main_ppo`
    does not use: a single compose rejects them."""
    for lo in ctx.unparsed:
        yield Finding(lo, lo.syntax_error or "not a valid Hydra override")
    for ro in ctx.overrides:
        if ro.parsed.is_sweep:
            yield Finding(
                ro,
                f"`{ro.override.key_text}` is a sweep; verl's trainer composes one config and rejects "
                "sweeps: give a single value",
            )
