from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.common import nearest
from ..rulekit.registry import Finding, rule

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
}


@rule(
    "SL007", "passthrough-unknown-field", Severity.ERROR,
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
    `distributed_filesystem`). The recipe's `stack` names the versions; the message names the snapshot used."""
    for ro in ctx.overrides:
        if not ro.assigns or ro.group is not None:
            continue
        found = ctx.consumer_dict(ro.path)
        if found is None:
            continue
        dict_path, entry = found
        name = ro.path[len(dict_path) + 1 :].split(".")[0]
        consumer, cls = ctx.consumer(entry["consumer"])
        accepted = consumer.accepts(cls)
        if cls == "TransformerConfig":  # MLA models (DeepSeek-V3) are built from MLATransformerConfig
            accepted |= consumer.accepts("MLATransformerConfig")
        if name in accepted:
            continue
        hint = nearest(name, sorted(accepted))
        what = f"{consumer.package} {consumer.version} `{cls}`"
        yield Finding(ro, f"`{name}` is not accepted by {what}: "
                          f"{_CONSEQUENCE[entry['consumer']].format(dict=dict_path)}.{hint}")
