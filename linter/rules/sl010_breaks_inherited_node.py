from ..core.diagnostics import Severity
from ..core.dotted import ancestors
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule


@rule(
    "SL010",
    "breaks-inherited-node",
    Severity.WARNING,
    part=Part.CONFIG,
    summary="`+`/`++` on a child of a node that inherits another node by interpolation",
    bad="""
    overrides:
      +actor_rollout_ref.ref.megatron.override_transformer_config.apply_rope_fusion: true
    """,
    good="""
    overrides:
      +actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion: true
    """,
)
def check(ctx: LintContext):
    """Some nodes default to an interpolation of another node: the ref's
    `megatron.override_transformer_config` is
    `${oc.select:actor_rollout_ref.actor.megatron.override_transformer_config,{}}`, so the ref runs with the
    actor's transformer overrides (recompute, fusions, ...). Adding a child with `+`/`++` makes Hydra replace
    the interpolation with a new dict that holds only that child: the ref silently loses every inherited
    setting. Set the key on the node the default points to, or set the whole node."""
    for ro in ctx.overrides:
        if ro.parsed.op not in ("add", "force_add"):
            continue
        for ancestor in ancestors(ro.path):
            entry = ctx.tree.get(ancestor)
            if entry is None or not entry.get("interpolation") or entry["kind"] not in ("dict", "node"):
                continue
            if ctx.explicit(ancestor) is not None:  # already replaced explicitly
                break
            yield Finding(
                ro,
                f"`{ancestor}` defaults to `{entry['interpolation']}`; `+{ro.path[len(ancestor) + 1 :]}` "
                "replaces that link with a dict holding only this key, dropping every inherited value. "
                "Set it on the source node instead",
            )
            break
