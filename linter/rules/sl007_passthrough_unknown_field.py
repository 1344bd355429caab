from ..core.device import device_kind, device_of
from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.common import nearest
from ..rulekit.registry import Finding, rule
from ..schema import DEFAULT_MINDSPEED, consumer_versions, load_consumer, version_key

TRANSFORMER_CONFIG = "megatron-core:TransformerConfig"
# Megatron-LM's argparse flags, a class of the megatron-core snapshots built from its source (megatron_arguments.py).
ARGUMENTS = "arguments"
# What happens to an unknown key, per consumer of a pass-through dict.
_CONSEQUENCE = {
    TRANSFORMER_CONFIG: "verl hands `{dict}` to the model config as keyword arguments/attributes, "
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
    other unknown key is stored but never read. Whether an override runs on NPU is `core.device`'s one decision,
    and the message names the signal that decided it: the device branch of the script it is written in (`if [
    "$DEVICE" == npu ]`, `case $DEVICE in npu)`), else the command's `trainer.device`, `VERL_ENGINE_DEVICE`, device
    variant (`DEVICE=npu`) or device branch, the accelerator named, the recipe's `stack.mindspeed`, Ascend-only
    environment variables (`HCCL_*`, `ASCEND_*`, ...), and in a run script the Ascend software it sources or
    installs, the MindSpeed-only fields it sets, its file name (`npu`, `ascend`); otherwise GPU, where a MindSpeed
    field stays an error.

    Megatron-LM's own argparse flags are read there too: `repatch` sets every key on Megatron's parsed arguments
    (`get_args()`; github momo609/mindspeed, a mirror of Ascend/MindSpeed, mindspeed/megatron_adaptor.py `repatch`
    and mindspeed/args_utils.py `get_full_args`), where MindSpeed's features read `swiglu`,
    `use_distributed_optimizer`, ... So on NPU a key is also accepted when it is the destination of a flag of
    megatron/training/arguments.py (`classes.arguments` of a megatron-core snapshot built from Megatron-LM's source;
    a wheel does not ship megatron/training, so for a release snapshot without that list the nearest snapshot that has
    one is used, and named). A typo is still an error there, with a did-you-mean over all three lists; a flag written
    as its option (`no_masked_softmax_fusion` for `--no-masked-softmax-fusion`) is named with the attribute Megatron
    stores it in (`masked_softmax_fusion`). On GPU a Megatron-LM flag that is no `TransformerConfig` field stays an
    error, and says so.

    Which megatron-core: the recipe's `stack.megatron_core` or `[tool.sapo-lint] megatron-core-version`, else the one
    the verl version runs with (`schemas/facts.json`, `verl` fact `megatron-core`: verl main pins core_v0.18.0), as
    `stack.resolve_stack` decides. A run script that installs or names a Megatron-LM commit or branch (`git clone ...
    Megatron-LM && git checkout <sha>`, over one line or several, `git clone -b lite ...Megatron-LM`, `pip install
    git+...Megatron-LM@<ref>`, `# - Megatron-LM: https://github.com/NVIDIA/Megatron-LM/commit/<sha>`, in a command or
    its set-up comments; a release tag such as `@core_v0.12.1` is a release) may pass a field no release has yet: a
    megatron-core name found in no committed release snapshot is then a warning naming the pin, to be checked against
    that source, rather than an error."""
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
        if entry["consumer"] != TRANSFORMER_CONFIG:
            if pinned := _pinned_commit(ctx, consumer, elsewhere):
                yield _pinned_finding(ro, name, consumer, pinned, consequence, nearest(ctx, name, accepted))
            else:
                yield Finding(
                    ro, f"`{name}` is not accepted by {what}: {consequence}.{elsewhere}{nearest(ctx, name, accepted)}"
                )
            continue
        mindspeed = load_consumer("mindspeed", ctx.stack.mindspeed or DEFAULT_MINDSPEED)
        added = mindspeed.classes["TransformerConfig"]["fields"]
        megatron = _megatron_arguments(consumer)
        flags = megatron.classes[ARGUMENTS]["fields"] if megatron else {}
        device, why, _ = device_of(ctx.command, ctx.accelerator, ro.override)
        on_mindspeed = device_kind(device).mindspeed  # verl's MindSpeed engine runs there and reads these fields
        if on_mindspeed and (name in added or name in flags):
            continue
        spelled = _flag_spelling(name, flags)
        if name not in added and name not in flags and (pinned := _pinned_commit(ctx, consumer, elsewhere)):
            yield _pinned_finding(ro, name, consumer, pinned, consequence, spelled or nearest(ctx, name, accepted))
        elif on_mindspeed:
            parser = f", nor by {_parser(megatron, consumer)}" if megatron else ""
            hint = spelled or nearest(ctx, name, accepted | set(added) | set(flags))
            yield Finding(
                ro,
                f"`{name}` is accepted neither by {what}{parser}, nor by MindSpeed {mindspeed.version} (this "
                f"variant runs on NPU: {why}): MindSpeed turns unknown keywords into config attributes that nothing "
                f"reads, so the setting never takes effect.{elsewhere}{hint}",
            )
        elif name in added:
            yield Finding(
                ro,
                f"`{name}` is a {added[name]['library']} (Ascend) field that {what} on GPU does not "
                f"accept: {consequence}. This variant is checked as GPU ({why}); only on NPU does "
                "MindSpeed patch `TransformerConfig` to take it.",
            )
        elif name in flags:
            yield Finding(
                ro,
                f"`{name}` is a flag of {_parser(megatron, consumer)}, not a field of {what}: on GPU "
                f"{consequence}. This variant is checked as GPU ({why}); only on NPU does MindSpeed set the keys of "
                f"`{dict_path}` on Megatron's parsed arguments, where it is read.",
            )
        else:
            hint = spelled or nearest(ctx, name, accepted)
            yield Finding(ro, f"`{name}` is not accepted by {what}: {consequence}.{elsewhere}{hint}")


def _pinned_commit(ctx: LintContext, consumer, elsewhere: str) -> str | None:
    """The Megatron-LM commit or branch the run script installs or names, when the name is in no megatron-core
    release we have: the pinned source may be newer than every release (a field on its way into the next one)."""
    if consumer.package != "megatron-core" or elsewhere or not ctx.stack.megatron_pin:
        return None
    return ctx.stack.megatron_pin


def _pinned_finding(ro, name: str, consumer, pinned: str, consequence: str, hint: str) -> Finding:
    return Finding(
        ro,
        f"`{name}` is in no committed {consumer.package} release snapshot "
        f"({', '.join(consumer_versions(consumer.package))}); this script installs Megatron-LM "
        f"{pinned}, which may have it: check that it does, or the run fails ({consequence}).{hint}",
        severity=Severity.WARNING,
    )


def _megatron_arguments(consumer):
    """The megatron-core snapshot whose Megatron-LM argument list goes with `consumer`: its own, else the oldest
    committed one not older than it, else the newest (a release wheel ships no megatron/training)."""
    if ARGUMENTS in consumer.classes:
        return consumer
    having = [v for v in consumer_versions(consumer.package) if ARGUMENTS in load_consumer(consumer.package, v).classes]
    later = [v for v in having if version_key(v) >= version_key(consumer.version)]
    chosen = (later or having[-1:] or [None])[0]
    return load_consumer(consumer.package, chosen) if chosen else None


def _parser(megatron, consumer) -> str:
    """How messages name the argument list: 'Megatron-LM 0.18.0's argument parser' (and whose list it stands for)."""
    nearest_to = "" if megatron is consumer else f", the nearest to {consumer.version} with one"
    return f"Megatron-LM {megatron.version}'s argument parser (megatron/training/arguments.py{nearest_to})"


def _flag_spelling(name: str, flags: dict) -> str:
    """' ... stores `--no-masked-softmax-fusion` in `masked_softmax_fusion` ...' when `name` is a flag's option
    written with underscores rather than the attribute argparse stores it in; else ''."""
    for dest, entry in flags.items():
        flag = entry.get("flag")
        if flag and flag[2:].replace("-", "_") == name:
            value = "" if entry["type"] != "bool" else f"={entry.get('default') != 'True'}"
            return (
                f" Megatron stores the flag `{flag}` in `{dest}`, and keys are set by that name: write `{dest}{value}`."
            )
    return ""


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
