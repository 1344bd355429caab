from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..estimate.from_context import runnable_estimate
from ..estimate.inputs import GIB
from ..rulekit.registry import Finding, rule
from ..topology import trained_keys


@rule(
    "CK001",
    "checkpoint-save-exceeds-timeout",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
    needs_model=True,
    summary="estimated per-rank checkpoint save time exceeds the collective timeout that bounds the save barrier",
    bad="""
    model: {path: Qwen/Qwen3-235B-A22B}
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 4
      trainer.n_gpus_per_node: 8
      trainer.save_freq: 50
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 8
      actor_rollout_ref.actor.checkpoint.save_contents: [model]
    """,
    good="""
    model: {path: Qwen/Qwen3-235B-A22B}
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 4
      trainer.n_gpus_per_node: 8
      trainer.save_freq: 50
      actor_rollout_ref.nccl_timeout: 3600
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 4
      actor_rollout_ref.actor.megatron.expert_model_parallel_size: 8
      actor_rollout_ref.actor.checkpoint.save_contents: [model]
    """,
)
def check(ctx: LintContext):
    """Every rank waits at world-group barriers while the checkpoint is written: Megatron's dist-checkpoint
    finalize, verl's `torch.distributed.barrier()` after a synchronous save, and after the HF weights that rank 0
    alone gathers and writes through the bridge. The world group's timeout is verl's
    `actor_rollout_ref.nccl_timeout` (600 s by default; verl does not pass Megatron's 30-minute
    `distributed_timeout_minutes` to it), and on Ascend also HCCL_EXEC_TIMEOUT (1836 s by default), whichever is
    shorter. A save longer than that kills every rank at the first checkpoint, hours into the run (incident 4).

    Estimate: each rank's shard of the dist checkpoint (its fp32 master and Adam moments, 12 B per sharded element,
    and with `use_dist_checkpointing` its share of the bf16 weights) and the HF weights (2 B per parameter), which
    rank 0 writes alone: verl 0.9.1 and main call Megatron-Bridge's `save_hf_weights` (the default since
    `vanilla_mbridge=False`) without `distributed_save`, and Megatron-Bridge then lets only rank 0 write the
    safetensors files while the other ranks feed the gather (`models/hf_pretrained/state.py` `save_generator`);
    vanilla mbridge writes from rank 0 too unless `mbridge_config.distributed_filesystem` splits the files over
    every rank. The message says which applies. Sizes are given in GiB (2^30) and GB (10^9),
    at an assumed write bandwidth per writing process (`linter/estimate/inputs.py` DEFAULT_WRITE_GIB_PER_S until the
    recipe or `[tool.sapo-lint]` can state it; the message says which was used). Weight-only checkpoints
    (`checkpoint.save_contents: [model]`) or a longer `nccl_timeout` are the usual fixes. Only checked when
    `trainer.save_freq` > 0.

    An SFT trainer on the Megatron engine saves through the same checkpoint manager (`checkpoint.save_contents`),
    but no key sets its world group's timeout: verl's `sft_trainer` (torchrun) sets 36000 s
    (`initialize_global_process_group`), `sft_trainer_ray` none, so torch's 30-minute default holds; on Ascend
    HCCL_EXEC_TIMEOUT bounds it too. The fix then names the save contents, HCCL_EXEC_TIMEOUT where it is the
    bound, and faster storage. Its `trainer.save_freq` may also be "after_each_epoch"."""
    est = runnable_estimate(ctx)
    if est is None or not est.checkpoint.saves:
        return
    ck = est.checkpoint
    wait = ck.longest_wait_seconds
    if wait <= ck.timeout_s:
        return
    limits = est.inputs.limits
    bw = f"{ck.write_gib_per_s:g} GiB/s per writing rank" + (" (assumed)" if limits.assumed("write_gib_per_s") else "")
    hf_slower = ck.hf_seconds >= (0.0 if ck.async_save else ck.dist_seconds)
    what = (
        f"{_size(ck.rank0_hf_bytes)} of HF weights per writing rank: {ck.hf_writer}"
        if hf_slower
        else f"each rank writing its {_size(ck.rank_dist_bytes)} dist-checkpoint shard"
    )
    contents = est.inputs.checkpoint.contents
    keys = trained_keys(ctx)
    fixes = [f"save weights only (`{keys.checkpoint}.save_contents: [model]`)"] if "optimizer" in contents else []
    hccl = ck.timeout_source == "HCCL_EXEC_TIMEOUT"
    if keys.timeout is not None:
        fixes.append(f"raise `{keys.timeout}` above {wait:.0f}" + (" and HCCL_EXEC_TIMEOUT" if hccl else ""))
    elif hccl:  # an SFT trainer: no key sets its world group's timeout
        fixes.append(f"raise HCCL_EXEC_TIMEOUT above {wait:.0f}")
    yield Finding(
        ctx.blame(f"{keys.checkpoint}.save_contents", *filter(None, [keys.timeout]), "trainer.save_freq"),
        f"checkpoint save: ~{wait:.0f} s of {what} at {bw} exceeds the {ck.timeout_s:.0f} s {ck.timeout_source} "
        f"that bounds the world barrier around the save (total save ~{ck.save_seconds:.0f} s, "
        f"contents {list(contents)}). Fix: {', '.join([*fixes, ''])}{'or ' if fixes else ''}write to faster storage",
    )


def _size(nbytes: float) -> str:
    return f"{nbytes / GIB:.1f} GiB ({nbytes / 1e9:.1f} GB)"
