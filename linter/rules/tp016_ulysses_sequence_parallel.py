from ..core.diagnostics import Severity
from ..engine import DATA_PARALLEL, LintContext, Part
from ..rulekit.registry import Finding, rule
from ..topology import divisors, model_path, world_keys, world_size

# Where an SFT trainer's Ulysses size is: sft_trainer_engine's FSDP engine (verl >= 0.6, sft_trainer.py and
# sft_trainer_ray.py), or the root of verl <= 0.6's sft_trainer config (fsdp_sft_trainer.py).
ENGINE_SP = "engine.ulysses_sequence_parallel_size"
LEGACY_SP = "ulysses_sequence_parallel_size"
REMOVE_PADDING = "model.use_remove_padding"


@rule(
    "TP016",
    "ulysses-sequence-parallel-layout",
    Severity.ERROR,
    part=Part.SFT,
    engines=frozenset({DATA_PARALLEL}),
    needs_model=True,
    summary="an FSDP SFT trainer's Ulysses sequence-parallel size does not divide the attention heads or the "
    "devices, or runs without padding removal",
    bad="""
    torchrun --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer \\
        model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=8
    """,
    good="""
    torchrun --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer \\
        model.path=Qwen/Qwen2.5-7B engine.ulysses_sequence_parallel_size=4
    """,
)
def check(ctx: LintContext):
    """An SFT trainer on FSDP has no tensor, pipeline or expert parallelism; its one split of the model's work is
    Ulysses sequence parallel (`engine.ulysses_sequence_parallel_size` of sft_trainer_engine; the root
    `ulysses_sequence_parallel_size` of verl <= 0.6's sft_trainer config), which all-to-alls the attention heads
    over the SP group. verl's monkey patch of the model (`verl/models/transformers/monkey_patch.py`
    `apply_monkey_patch`, verl 0.5.0 to main) asserts `num_attention_heads % ulysses_sp_size == 0` and
    `num_key_value_heads % ulysses_sp_size == 0 or ulysses_sp_size % num_key_value_heads == 0` (KV heads are
    repeated up to the SP size) when the model is built, after the model is loaded on every device. The device
    mesh is `(world // SP, SP)` (`init_device_mesh` in the FSDP engine's `_init_device_mesh` and in
    fsdp_sft_trainer's `run_sft`), which needs the world size -- torchrun's `--nproc_per_node` x `--nnodes`, or
    sft_trainer_ray's `trainer.nnodes` x `trainer.n_gpus_per_node` -- to be a multiple of SP. From verl 0.8.0 the
    FSDP engine also raises `When using sequence parallelism (ulysses_sequence_parallel_size > 1), you must enable
    use_remove_padding` when `model.use_remove_padding` is false (`schemas/facts.json`:
    `ulysses-needs-remove-padding`). An SP size below 1 divides the world size by zero. The message names the SP
    sizes that would work."""
    key = ENGINE_SP if ctx.config.exists(ENGINE_SP) else LEGACY_SP if ctx.config.exists(LEGACY_SP) else None
    sp = ctx.number(key) if key is not None else None
    if sp is None or sp == 1 or ctx.explicit(key) is None:
        return
    if sp < 1:
        yield Finding(
            ctx.blame(key),
            f"sft: `{key}` is {sp}; verl divides the world size by it (its data-parallel size is world // SP)",
        )
        return
    world, model = world_size(ctx), ctx.model
    if world and world % sp:
        yield Finding(
            ctx.blame(key),
            f"sft: world size {world} is not divisible by the Ulysses size {sp}: the device mesh is (world // SP, SP) "
            f"= ({world // sp}, {sp}), which does not cover the {world} devices (init_device_mesh fails); "
            f"SP {_fitting(world, model)} would",
            related=ctx.set_at(*world_keys(ctx)),
        )
    if model is not None:
        heads, kv = model.num_attention_heads, model.num_query_groups
        broken = ([f"its {heads} attention heads by {sp}"] if heads % sp else []) + (
            [f"its {kv} KV heads and {sp} into one another"] if kv % sp and sp % kv else []
        )
        if broken:
            yield Finding(
                ctx.blame(key),
                f"sft: Ulysses size {sp} cannot split {model.name}'s attention: verl's Ulysses patch "
                f"(`apply_monkey_patch`) asserts that SP divides the attention heads and that SP and the KV heads "
                f"divide one another, and cannot divide {' nor '.join(broken)}, so the model fails to build on "
                f"every device. SP {_fitting(world, model)} would work",
                related=ctx.set_at(model_path(ctx)),
            )
    if key == ENGINE_SP and ctx.fact("verl:ulysses-needs-remove-padding"):
        if ctx.config.value(REMOVE_PADDING) is False:
            yield Finding(
                ctx.blame(REMOVE_PADDING, key),
                f"sft: Ulysses size {sp} with `{REMOVE_PADDING}` false; verl {ctx.snapshot.verl_version}'s FSDP engine "
                'raises "When using sequence parallelism (ulysses_sequence_parallel_size > 1), you must enable '
                '`use_remove_padding`." Set it to true (its default)',
                related=ctx.set_at(key),
            )


def _fitting(world: int | None, model) -> str:
    """The Ulysses sizes above 1 that the heads, the KV heads and the world size (where known) all take."""
    limit = model.num_attention_heads if model is not None else world or 1
    fits = [
        d
        for d in divisors(limit)
        if d > 1
        and (world is None or world % d == 0)
        and (model is None or (model.num_query_groups % d == 0 or d % model.num_query_groups == 0))
    ]
    return " or ".join(map(str, fits[:4])) if fits else "1 (none above 1 fits)"
