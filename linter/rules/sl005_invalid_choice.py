from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.common import is_interpolation, nearest, repository_code
from ..rulekit.registry import Finding, rule


@rule(
    "SL005",
    "invalid-choice",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="value outside the allowed set",
    bad="""
    overrides:
      actor_rollout_ref.actor.policy_loss.loss_mode: sapo_v2
    """,
    good="""
    overrides:
      actor_rollout_ref.actor.policy_loss.loss_mode: sapo
    """,
)
def check(ctx: LintContext):
    """Some keys take one of a closed set of values: `policy_loss.loss_mode` (the names registered with
    `@register_policy_loss`), `algorithm.adv_estimator` (`@register_adv_est`), `rollout.name`, `loss_agg_mode`,
    `Literal[...]` dataclass fields, and config-group selections such as `model_engine`. verl does not check
    `loss_mode` or `adv_estimator` at start-up: an unknown loss mode raises `Unsupported loss mode` in the
    first `update_actor`, after a complete rollout. A bad group option fails at compose
    (`Could not find 'model_engine/foo'`). The allowed values come from verl's own source for the version; for a
    repository's own verl, a loss mode or estimator its code registers anywhere in the repository counts too."""
    for ro in ctx.overrides:
        if not ro.assigns or ro.parsed.is_sweep or ro.outside is not None or ro.refused is not None:
            continue
        value = ro.parsed.value
        if ro.group is not None:
            options = ro.group["options"]
            if value not in options:
                yield Finding(
                    ro,
                    f"Could not find '{ro.path}/{value}' (Hydra, at compose): the options of `{ro.path}` in verl "
                    f"{ctx.snapshot.verl_version} are {', '.join(options)}.{nearest(ctx, value, options)}",
                )
            continue
        choices = (ro.entry or {}).get("choices")
        if choices and value not in choices:  # what the repository's own code registers (`@register_policy_loss`)
            code = repository_code(ctx)
            choices = [*choices, *(dict(code.registered).get(ro.path, ()) if code is not None else ())]
        if not choices or is_interpolation(value) or (value is None and ro.entry.get("nullable")):
            continue
        if value not in choices:
            yield Finding(
                ro, f"`{ro.path}`={value!r} is not one of {', '.join(map(str, choices))}.{nearest(ctx, value, choices)}"
            )
