from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..estimate.from_context import runnable_estimate
from ..estimate.inputs import GIB
from ..rulekit.registry import Finding, rule
from ..topology import trained_keys


@rule(
    "CK002",
    "checkpoint-disk-peak",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    needs_model=True,
    summary="peak checkpoint disk use (two checkpoints while the new one completes) exceeds the disk budget",
    bad="""
    model: {path: Qwen/Qwen3-235B-A22B}
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 4
      trainer.n_gpus_per_node: 8
      trainer.save_freq: 50
      trainer.max_actor_ckpt_to_keep: 1
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 8
      actor_rollout_ref.actor.checkpoint.save_contents: [model, optimizer, extra]
    """,
    good="""
    model: {path: Qwen/Qwen3-235B-A22B}
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 4
      trainer.n_gpus_per_node: 8
      trainer.save_freq: 50
      trainer.max_actor_ckpt_to_keep: 1
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 8
      actor_rollout_ref.actor.checkpoint.save_contents: [model]
    """,
)
def check(ctx: LintContext):
    """`trainer.max_actor_ckpt_to_keep: 1` does not bound peak disk: verl removes the previous checkpoint only
    after the new one is complete (`register_checkpoint` / `ensure_checkpoint_capacity`), so while a save runs two
    checkpoints sit on disk (incident 7). A full checkpoint holds the bf16 weights and the fp32 master copy
    with both Adam moments (~14 B per parameter; weight-only `save_contents: [model]` is 2 B), plus the critic's
    when a critic trains. The budget is a site fact verl's config has no place for: until it is stated the check
    uses a documented default (`linter/estimate/inputs.py` DEFAULT_DISK_BUDGET_GIB) and reports a warning. Only checked
    when `trainer.save_freq` > 0. An SFT trainer on the Megatron engine keeps checkpoints the same way (its
    CheckpointHandler hands `trainer.max_ckpt_to_keep` to the same checkpoint manager); its contents are
    `checkpoint.save_contents`."""
    est = runnable_estimate(ctx)
    if est is None or not est.checkpoint.saves:
        return
    ck, limits = est.checkpoint, est.inputs.limits
    if ck.disk_peak_bytes <= limits.disk_budget_gib * GIB:
        return
    assumed = limits.assumed("disk_budget_gib")
    budget = f"{limits.disk_budget_gib:g} GiB" + (" (assumed: the default; state your budget)" if assumed else "")
    contents = list(est.inputs.checkpoint.contents)
    keys = trained_keys(ctx)
    fix = (
        f"save weights only (`{keys.checkpoint}.save_contents: [model]`) or a larger volume"
        if "optimizer" in contents
        else "a larger checkpoint volume"
    )
    yield Finding(
        ctx.blame(f"{keys.checkpoint}.save_contents", keys.keep, "trainer.save_freq"),
        f"peak checkpoint disk use ~{ck.disk_peak_bytes / GIB:.0f} GiB ({ck.disk_peak_bytes / 1e9:.0f} GB; two "
        f"checkpoints of {ck.saved_bytes / GIB:.0f} GiB ({ck.saved_bytes / 1e9:.0f} GB), "
        f"contents {contents}, while the new one completes; `{keys.keep.rsplit('.', 1)[1]}` cannot lower this) "
        f"exceeds the disk budget of {budget}. Fix: {fix}",
        severity=Severity.WARNING if assumed else None,
    )
