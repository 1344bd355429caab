from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule


@rule(
    "SL012",
    "config-group-override",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="a config-group override that Hydra cannot apply to the config's defaults list",
    bad="""
    overrides:
      critic@critic: megatron_critic
    """,
    good="""
    overrides:
      critic: megatron_critic
    """,
)
def check(ctx: LintContext):
    """`group@package=option` replaces the option of a group where the config's defaults list places it, and Hydra
    names that place by its override key: `actor@actor_rollout_ref.actor` (verl's `ppo_trainer.yaml` has
    `actor@actor_rollout_ref.actor: ${model_engine}_actor`), but just `critic` for `critic@critic: ...`, whose
    package is the group's own. Any other key fails at compose (`Could not override 'critic@critic'. Did you mean to
    override critic?`); so does `~group@package` that matches no entry (`Could not delete`), an option that is not
    a name (`critic@critic: null`: `Config group override must be a string or a list`), `++` on a group, a
    `group@package` whose group does not exist, and a deletion the rest of the defaults list needs
    (`~model_engine`: `Error resolving interpolation '${model_engine}_critic'`). Hydra applies these to the
    defaults list before any other override, so they fail wherever they are written. To add an option at another
    package, append it with `+group@package=option`. An option the group does not have is SL005; a second
    selection at a placement that has one (`+critic=dp_critic`) is SL002."""
    for ro in ctx.overrides:
        if ro.refused is not None:
            yield Finding(ro, f"`{ro.override.key_text}`: Hydra refuses it at compose: {ro.refused}")
