from ..core.device import device_of
from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.common import nearest
from ..rulekit.registry import Finding, rule
from ..schema import DEFAULT_MINDSPEED, consumer_versions, load_consumer

# What happens to an unknown key, per consumer of a pass-through dict.
_CONSEQUENCE = {
    "megatron-core:TransformerConfig": "verl hands `{dict}` to the model config as keyword arguments/attributes, "
    "so model construction fails (or the key is ignored) inside the worker",
    "megatron-core:OptimizerConfig": "verl builds `OptimizerConfig(**{dict})` in the worker: TypeError "
    "(unexpected keyword argument) when the optimizer is built",
    "megatron-core:DistributedDataParallelConfig": "verl builds `DistributedDataParallelConfig` from `{dict}` in the "
    "worker: TypeError when the model is wrapped",
    "mbridge:save_weights": "verl filters `{dict}` against the installed `save_weights` signature, so the key is "
    "silently dropped and the setting never takes effect",
    "ray:init": "verl's main_ppo calls `ray.init(**{dict})` (verl/trainer/main_ppo.py), and ray raises "
    "`RuntimeError: Unknown keyword argument(s)` before training starts",
}


@rule(
    "SL007",
    "passthrough-unknown-field",
    Severity.ERROR,
    part=Part.CONFIG,
    summary="key under a pass-through dict that the consuming library does not accept",
    bad="""
    stack: {megatron_core: "0.12.1"}
    overrides:
      +actor_rollout_ref.actor.optim.override_optimizer_config.decoupled_weight_decay: true
    """,
    good="""
    stack: {megatron_core: "0.12.1"}
    overrides:
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload: true
    """,
)
def check(ctx: LintContext):
    """Open dicts such as `megatron.override_transformer_config`, `optim.override_optimizer_config`,
    `megatron.override_ddp_config` and `checkpoint.mbridge_config` are not checked by verl: their keys go
    straight to megatron-core's `TransformerConfig` (MLA fields included), `OptimizerConfig`,
    `DistributedDataParallelConfig`, or mbridge's `save_weights`. Which names those accept depends on the
    library version (`decoupled_weight_decay` arrived in megatron-core 0.15; mbridge 0.15.1 from PyPI has no
    `distributed_filesystem`). The recipe's `stack` names the versions; the message names the snapshot used, and
    the other committed megatron-core snapshots that do have the name.

    On Ascend NPU verl's MindspeedEngine hands `override_transformer_config` to MindSpeed's `repatch`, and MindSpeed
    patches `TransformerConfig` to take extra keywords: there MindSpeed's arguments (`use_flash_attn`,
    `use_fused_rmsnorm`, `context_parallel_algo`, ...; schemas/consumers/mindspeed-*.json) are accepted too, and any
    other unknown key is stored but never read. A command runs on NPU when `trainer.device=npu`, its variant is
    `DEVICE=npu` (any `NAME=npu`), the accelerator or `VERL_ENGINE_DEVICE` says so, the recipe's stack names
    `mindspeed`, or it sets Ascend-only environment variables (`HCCL_*`, `ASCEND_*`, `VLLM_ASCEND_*`,
    `PYTORCH_NPU_*`); otherwise on GPU, where a MindSpeed field stays an error.

    A run script that installs Megatron-LM from a commit or a branch (`git clone ... Megatron-LM && git checkout
    <sha>`, `git clone -b lite ...Megatron-LM`, `pip install git+...Megatron-LM@<ref>`, in a command or its set-up
    comments) may pass a field no release has yet: a megatron-core name found in no committed release snapshot is
    then a warning naming the pin, to be checked against that source, rather than an error."""
    for ro in ctx.overrides:
        if not ro.assigns or ro.group is not None:
            continue
        found = ctx.consumer_dict(ro.path)
        if found is None:
            continue
        dict_path, entry = found
        name = ro.path[len(dict_path) + 1 :].split(".")[0]
        consumer, cls = ctx.consumer(entry["consumer"])
        accepted = _accepted(consumer, cls)
        if name in accepted:
            continue
        consequence = _CONSEQUENCE[entry["consumer"]].format(dict=dict_path)
        what = f"{consumer.package} {consumer.version} `{cls}`"
        elsewhere = _other_releases(consumer, cls, name)
        added: dict = {}
        if entry["consumer"] == "megatron-core:TransformerConfig":
            mindspeed = load_consumer("mindspeed", ctx.stack.mindspeed or DEFAULT_MINDSPEED)
            added = mindspeed.classes["TransformerConfig"]["fields"]
            device, why, _ = device_of(ctx.command, ctx.accelerator)
            if device == "npu" and name in added:
                continue
        if name not in added and (pinned := _pinned_commit(ctx, consumer, elsewhere)):
            yield Finding(
                ro,
                f"`{name}` is in no committed {consumer.package} release snapshot "
                f"({', '.join(consumer_versions(consumer.package))}); this script installs Megatron-LM "
                f"{pinned}, which may have it: check that it does, or the run fails ({consequence})."
                f"{nearest(ctx, name, accepted)}",
                severity=Severity.WARNING,
            )
        elif entry["consumer"] != "megatron-core:TransformerConfig":
            yield Finding(
                ro, f"`{name}` is not accepted by {what}: {consequence}.{elsewhere}{nearest(ctx, name, accepted)}"
            )
        elif device == "npu":
            yield Finding(
                ro,
                f"`{name}` is accepted neither by {what} nor by MindSpeed {mindspeed.version} (this "
                f"variant runs on NPU: {why}): MindSpeed turns unknown keywords into config "
                f"attributes that nothing reads, so the setting never takes effect.{elsewhere}"
                f"{nearest(ctx, name, accepted | set(added))}",
            )
        elif name in added:
            yield Finding(
                ro,
                f"`{name}` is a {added[name]['library']} (Ascend) field that {what} on GPU does not "
                f"accept: {consequence}. This variant is checked as GPU ({why}); only on NPU does "
                "MindSpeed patch `TransformerConfig` to take it.",
            )
        else:
            yield Finding(
                ro, f"`{name}` is not accepted by {what}: {consequence}.{elsewhere}{nearest(ctx, name, accepted)}"
            )


def _pinned_commit(ctx: LintContext, consumer, elsewhere: str) -> str | None:
    """The Megatron-LM commit or branch the run script installs, when the name is in no megatron-core release we
    have: the pinned source may be newer than every release (a field on its way into the next one)."""
    if consumer.package != "megatron-core" or elsewhere or not ctx.stack.megatron_pin:
        return None
    return ctx.stack.megatron_pin


def _accepted(consumer, cls: str) -> frozenset[str]:
    accepted = consumer.accepts(cls)
    if cls == "TransformerConfig":  # MLA models (DeepSeek-V3) are built from MLATransformerConfig
        accepted |= consumer.accepts("MLATransformerConfig")
    return accepted


def _other_releases(consumer, cls: str, name: str) -> str:
    """' megatron-core 0.15.3 has it ...' when another committed snapshot of the package accepts the name."""
    others = [
        v
        for v in consumer_versions(consumer.package)
        if v != consumer.version and name in _accepted(load_consumer(consumer.package, v), cls)
    ]
    if not others:
        return ""
    return (
        f" {consumer.package} {', '.join(others)} {'has' if len(others) == 1 else 'have'} it: if that is the "
        f"version installed, name it in the recipe's `stack` (or `[tool.sapo-lint]` for scripts)."
    )
