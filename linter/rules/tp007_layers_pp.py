from ..core.diagnostics import Severity
from ..engine import MEGATRON_ONLY, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import megatron_roles, model_path, own_setting

UNEVEN = ("num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage", "pipeline_model_parallel_layout")
# Each one set counts as one more layer in the even split (megatron-core core_v0.18.0,
# transformer/transformer_block.py get_num_layers_to_build: `num_layers += 1` for each, then the assert)
ACCOUNTED = ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")


@rule(
    "TP007",
    "layers-not-divisible-by-pp",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    engines=MEGATRON_ONLY,
    needs_model=True,
    summary="layers not divisible by PP (without an uneven layout)",
    bad="""
    model: {path: Qwen/Qwen2.5-7B}
    overrides:
      actor_rollout_ref.actor.megatron.pipeline_model_parallel_size: 8
    """,
    good="""
    model: {path: Qwen/Qwen2.5-7B}
    overrides:
      actor_rollout_ref.actor.megatron.pipeline_model_parallel_size: 4
    """,
)
def check(ctx: LintContext):
    """With an even split Megatron's transformer block asserts `num_layers=N should be divisible by
    config.pipeline_model_parallel_size=PP`. Models with awkward layer counts (Qwen3-235B: 94 = 2 x 47; DeepSeek-V3:
    61, prime) need an uneven layout: `num_layers_in_first_pipeline_stage`/`num_layers_in_last_pipeline_stage`
    or `pipeline_model_parallel_layout` under `override_transformer_config`; then the remaining layers must split
    evenly over the middle stages. Reported at the PP size, with the uneven-stage settings and the model path as
    related locations."""
    model = ctx.model
    if model is None:
        return
    for role, par in megatron_roles(ctx):
        if par.pp <= 1 or not own_setting(ctx, par, "pipeline_model_parallel_size"):
            continue
        first, last = (ctx.number(par.transformer(n)) for n in UNEVEN[:2])
        if ctx.config.value(par.transformer(UNEVEN[2])) is not None:
            continue  # an explicit layout: Megatron checks it against the layer count itself
        layers, stages = model.num_layers, par.pp
        if first or last:
            layers -= int(first or 0) + int(last or 0)
            stages -= bool(first) + bool(last)
            if stages > 0 and layers % stages:
                uneven = [par.transformer(n) for n in UNEVEN[:2]]
                yield Finding(
                    ctx.blame(par.path("pipeline_model_parallel_size"), otherwise=uneven),
                    f'{role}: Megatron: "With uneven pipelineing the left over layers must be divisible by left '
                    f'over stages": {layers} middle layers over {stages} middle stages',
                    related=ctx.set_at(*uneven, model_path(ctx)),
                )
            continue
        layers += sum(ctx.config.value(par.transformer(n)) is True for n in ACCOUNTED)
        if layers % stages:
            valid = [d for d in range(1, layers + 1) if layers % d == 0 and d <= 64]
            yield Finding(
                ctx.blame(par.path("pipeline_model_parallel_size")),
                f'{role}: Megatron: "num_layers={layers} should be divisible by '
                f'config.pipeline_model_parallel_size={stages}" ({model.name}); even PP: '
                f"{', '.join(map(str, valid))}, or set num_layers_in_first/last_pipeline_stage",
                related=ctx.set_at(model_path(ctx)),
            )
