from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext
from ..rulekit.recompute import GRANULARITY, MODULES, finding, mcore, recompute_roles
from ..rulekit.registry import rule


def _set(names) -> str:
    return "{" + ", ".join(repr(n) for n in sorted(names, key=str)) + "}"


@rule(
    "RC006",
    "recompute-modules-invalid",
    Severity.ERROR,
    engines=MEGATRON_ONLY,
    summary="selective recompute names a module this megatron-core version does not know",
    bad="""
    stack: {megatron_core: "0.12.1"}
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules: [core_attn, shared_experts]
    """,
    good="""
    stack: {megatron_core: "0.15.3"}
    overrides:
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity: selective
      actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules: [core_attn, shared_experts]
    """,
)
def check(ctx: LintContext):
    """With `recompute_granularity: selective`, megatron-core's `TransformerConfig.__post_init__` asserts that
    every name in `recompute_modules` is one it knows: `AssertionError: Invalid choices for recompute_modules:
    {...}. Allowed modules are: {...}` at model init. The set depends on the version: 0.12.x/0.13.x allow
    core_attn, moe_act, layernorm, mla_up_proj, mlp, moe; 0.15/0.16 add shared_experts (0.19 adds gdn_norm_out).
    verl's own comment lists the 0.12 set. An empty list is not checked; the list is not looked at unless the
    granularity is selective. The recipe's `stack: {megatron_core: ...}` picks the version.
    Reported at `recompute_modules`, with the granularity line as a related location."""
    found = ctx.fact("megatron-core:recompute-modules")  # the allowed names, by version
    if found is None:  # before `recompute_modules` existed
        return
    allowed, unsure = frozenset(found["allowed"]), frozenset(found["unverified"])
    for par, v in recompute_roles(ctx, GRANULARITY, MODULES):
        modules = v[MODULES]
        if v[GRANULARITY] != "selective" or not isinstance(modules, list) or not modules:
            continue
        invalid = {m for m in modules if isinstance(m, str) and "${" not in m} - allowed - unsure
        invalid |= {m for m in modules if isinstance(m, (int, float, bool)) or m is None}
        if not invalid:
            continue
        quoted = f"Invalid choices for recompute_modules: {_set(invalid)}. Allowed modules are: {_set(allowed)}"
        yield finding(
            ctx,
            par,
            f"{par.role}: recompute_modules={modules!r} with recompute_granularity=selective: "
            f"{mcore(ctx)} fails an assertion at model init (`TransformerConfig.__post_init__`): "
            f'"{quoted}"',
            MODULES,
            GRANULARITY,
        )
