from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..estimate.from_context import runnable_estimate
from ..estimate.inputs import GIB, gib_text
from ..rulekit.registry import Finding, rule
from ..topology import trained_keys, world_keys


@rule(
    "MEM002",
    "host-memory-exceeds-ram",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    needs_model=True,
    summary="host RAM for offloaded state exceeds the node's RAM (error when stated, warning against the default)",
    bad="""
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 1
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.use_distributed_optimizer: false
      actor_rollout_ref.actor.megatron.param_offload: true
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload: true
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction: 1.0
    """,
    good="""
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 1
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.use_distributed_optimizer: true
      actor_rollout_ref.actor.megatron.param_offload: true
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload: true
      +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction: 1.0
    """,
)
def check(ctx: LintContext):
    """Adds up, per node, what the devices' ranks park in host RAM: Megatron's CPU-offloaded optimizer state
    (`optimizer_offload_fraction` x 16 B per sharded element: fp32 copy, two fp32 moments, fp32 gradient copy, in
    pinned memory), what verl's `param_offload` / `optimizer_offload` move out during the rollout, and the rollout
    engine's weights while it sleeps at level 1 (verl's choice on Ascend). Pinned memory cannot be swapped: past
    the node's RAM the job is killed by the OOM killer or fails to pin. Without the distributed optimizer every
    data-parallel rank keeps a full copy of the state. The node's RAM is a site fact verl's config has no place
    for: until it is stated the check uses a documented default (`linter/estimate/inputs.py` DEFAULT_HOST_RAM_GIB) and
    reports a warning. An SFT trainer on the Megatron engine is checked the same way, from its own keys (`engine.*`,
    `optim.override_optimizer_config`)."""
    est = runnable_estimate(ctx)
    if est is None:
        return
    limits = est.inputs.limits
    ram = limits.host_ram_gib * GIB
    need = est.host_peak_per_node
    if need <= ram:
        return
    phase = est.host_peak_phase
    terms = est.host[phase]
    term, size = max(terms.items(), key=lambda kv: kv[1])
    assumed = limits.assumed("host_ram_gib")
    ram_text = f"{limits.host_ram_gib:g} GiB" + (" (assumed: the default; state the node's RAM)" if assumed else "")
    keys = trained_keys(ctx)
    fix = {
        "optimizer_cpu_offload": (
            f"use the distributed optimizer, a lower `{keys.override_optim}.optimizer_offload_fraction`, or more nodes"
        ),
        "verl_offload": "offload less (`megatron.param_offload` / `optimizer_offload`) or use more nodes",
        "rollout_sleep": "more rollout TP, or more nodes",
    }[term]
    yield Finding(
        ctx.blame(
            f"{keys.override_optim}.optimizer_offload_fraction",
            f"{keys.override_optim}.optimizer_cpu_offload",
            f"{keys.megatron}.use_distributed_optimizer",
            f"{keys.megatron}.param_offload",
            f"{keys.megatron}.optimizer_offload",
            *world_keys(ctx)[1:],
        ),
        f"{phase} phase: estimated {gib_text(need)} of host RAM per node ({est.inputs.devices_per_node} ranks x "
        f"{gib_text(est.host_total(phase))}) exceeds the node's {ram_text}; biggest term: {term} "
        f"{gib_text(size)} per rank. Fix: {fix}",
        severity=Severity.WARNING if assumed else None,
    )
