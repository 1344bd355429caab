from ..catalog import accelerators
from ..core.diagnostics import Severity
from ..core.model import Accelerator
from ..core.paths import ACTOR, OVERRIDE_OPTIM, ROLLOUT
from ..engine import LintContext
from ..estimate.activations import Recompute, train_activations
from ..estimate.from_context import runnable_estimate
from ..estimate.inputs import GIB, WARN_FRACTION
from ..estimate.plan import Estimate, Moment, estimate
from ..rulekit.registry import Finding, rule

TRANSFORMER = f"{ACTOR}.megatron.override_transformer_config"
SIZES = tuple(
    f"{ACTOR}.megatron.{n}"
    for n in (
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "expert_model_parallel_size",
        "expert_tensor_parallel_size",
        "context_parallel_size",
    )
)

# Where to point a finding about each term: the knobs that change it.
BLAME = {
    "rollout": (f"{ROLLOUT}.gpu_memory_utilization", f"{ROLLOUT}.free_cache_engine"),
    "optimizer": (
        f"{OVERRIDE_OPTIM}.optimizer_offload_fraction",
        f"{OVERRIDE_OPTIM}.optimizer_cpu_offload",
        f"{ACTOR}.megatron.optimizer_offload",
        f"{ACTOR}.megatron.use_distributed_optimizer",
        *SIZES,
    ),
    "activations": (
        f"{TRANSFORMER}.recompute_granularity",
        f"{ACTOR}.ppo_max_token_len_per_gpu",
        f"{ACTOR}.ppo_micro_batch_size_per_gpu",
        f"{ROLLOUT}.log_prob_max_token_len_per_gpu",
    ),
    "logits": (
        f"{ACTOR}.ppo_max_token_len_per_gpu",
        f"{ACTOR}.ppo_micro_batch_size_per_gpu",
        f"{ROLLOUT}.log_prob_max_token_len_per_gpu",
        f"{ACTOR}.entropy_coeff",
        *SIZES,
    ),
    "backward_working": (
        f"{ACTOR}.ppo_max_token_len_per_gpu",
        f"{ACTOR}.ppo_micro_batch_size_per_gpu",
        f"{TRANSFORMER}.recompute_num_layers",
        *SIZES,
    ),
    "moe_dispatch": (f"{ACTOR}.ppo_max_token_len_per_gpu", f"{ACTOR}.ppo_micro_batch_size_per_gpu", *SIZES),
    "weights": (f"{ACTOR}.megatron.param_offload", *SIZES),
    "grads": (f"{ACTOR}.megatron.param_offload", *SIZES),
}
FALLBACK = ("trainer.nnodes", "trainer.n_gpus_per_node")


def fixes(est: Estimate, moment: Moment) -> list[tuple[float, str]]:
    """(bytes it saves at `moment`, the change) for each knob that shrinks a term there."""
    p = est.inputs
    actor = p.actor
    phase, terms = moment.phase, moment.terms
    total, hbm = moment.total, est.hbm_bytes
    out: list[tuple[float, str]] = []
    opt = actor.optimizer
    if terms["optimizer"] and opt is not None and not (opt.cpu_offload and opt.fraction >= 1.0 and opt.precision_aware):
        out.append(
            (
                terms["optimizer"],
                (
                    f"Megatron's optimizer CPU offload (`+{OVERRIDE_OPTIM}.optimizer_cpu_offload: true`, "
                    f"`+{OVERRIDE_OPTIM}.optimizer_offload_fraction: 1.0`, "
                    f"`+{OVERRIDE_OPTIM}.use_precision_aware_optimizer: true`)"
                ),
            )
        )
    if phase == "rollout":
        if terms["rollout"]:
            fits = (WARN_FRACTION * hbm - (total - terms["rollout"])) / hbm
            if fits > 0.05:
                out.append(
                    (total - WARN_FRACTION * hbm, f"`{ROLLOUT}.gpu_memory_utilization: {int(fits * 100) / 100:.2f}`")
                )
        if terms["weights"] + terms["grads"] and not actor.param_offload:
            out.append(
                (
                    terms["weights"] + terms["grads"],
                    f"`{ACTOR}.megatron.param_offload: true` (weights and grads to host while rolling out)",
                )
            )
        if terms["optimizer"] and not actor.optimizer_offload:
            out.append(
                (
                    terms["optimizer"],
                    f"`{ACTOR}.megatron.optimizer_offload: true` (optimizer state to host while rolling out)",
                )
            )
    elif terms["rollout"]:
        out.append(
            (terms["rollout"], f"`{ROLLOUT}.free_cache_engine: true` (the rollout engine sleeps while training)")
        )
    if phase == "train" and terms["activations"] and actor.recompute.granularity != "full":
        recomputed = train_activations(
            p.model, actor.layout, actor.sp, actor.train_tokens, Recompute("full", "uniform", 1), entropy=actor.entropy
        )
        out.append(
            (
                terms["activations"] + terms["backward_working"] - recomputed.layers - recomputed.working,
                (
                    f"full recompute (`{TRANSFORMER}.recompute_granularity: full`, `recompute_method: uniform`, "
                    "`recompute_num_layers: 1`)"
                ),
            )
        )
    per_token = terms["activations"] + terms["backward_working"] + terms["moe_dispatch"] + terms["logits"]
    if phase in ("train", "logprob") and per_token:
        out.append((per_token / 2, f"half the tokens per micro-batch (now {actor.token_source})"))
    layout = actor.layout
    if p.model.is_moe and est.actor.params.expert and terms["weights"]:
        ep = layout.ep * 2
        if p.model.num_experts % ep == 0 and layout.world % (ep * layout.expert_tp * layout.pp) == 0:
            share = est.actor.params.expert / est.actor.params.total
            out.append(
                (
                    (terms["weights"] + terms["grads"]) * share / 2,
                    f"`{ACTOR}.megatron.expert_model_parallel_size: {ep}` (expert weights and grads split further)",
                )
            )
    if terms["ref_weights"]:
        out.append((terms["ref_weights"], "`actor_rollout_ref.ref.megatron.param_offload: true`"))
    if terms["critic_weights"] and phase == "rollout":
        out.append((terms["critic_weights"] + terms["critic_grads"], "`critic.megatron.param_offload: true`"))
    if terms["comm_buffers"]:
        out.append((terms["comm_buffers"] / 2, "half HCCL_BUFFSIZE (2 x HCCL_BUFFSIZE of HBM per communicator)"))
    return [(saving, text) for saving, text in out if saving > 0]


def advice(est: Estimate, moment: Moment) -> str:
    """The changes that alone bring `moment` under the warning line, biggest saving first; else the biggest ones."""
    need = moment.total - WARN_FRACTION * est.hbm_bytes
    ranked = sorted(fixes(est, moment), key=lambda f: -f[0])
    enough = [text for saving, text in ranked if saving >= need]
    if enough:
        return "any of " + "; ".join(enough[:4]) if len(enough) > 1 else enough[0]
    if not ranked:
        return "more devices"
    return "no single change is enough; combine " + "; ".join(
        f"{text} (-{saving / GIB:.1f} GiB)" for saving, text in ranked[:3]
    )


@rule(
    "MEM001",
    "device-memory-exceeds-hbm",
    Severity.ERROR,
    needs_model=True,
    summary="estimated peak device memory exceeds the accelerator's HBM (error) or 90% of it (warning)",
    bad="""
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 1
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
      actor_rollout_ref.rollout.gpu_memory_utilization: 0.7
    """,
    good="""
    hardware: {accelerator: nvidia-h100}
    overrides:
      algorithm.adv_estimator: grpo
      trainer.nnodes: 1
      trainer.n_gpus_per_node: 8
      actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 2
      actor_rollout_ref.actor.megatron.param_offload: true
      actor_rollout_ref.rollout.gpu_memory_utilization: 0.5
    """,
)
def check(ctx: LintContext):
    """Estimates the memory of one device in each phase of a colocated verl step (`sapo-lint explain` shows the
    table), follows them in the order a run reaches them, and reports the first point where the estimate exceeds
    the HBM the runtime reports for the accelerator (`schemas/devices.json` `usable_hbm_gib`, e.g. 60.96 GiB of a
    64 GiB Ascend 910B3) -- or, if none does, the first point over 90% of it.

    `rollout`: the rollout engine takes `gpu_memory_utilization` x that HBM while the trainer keeps its weights and
    fp32 main grads (unless `megatron.param_offload`) and its optimizer state (unless `megatron.optimizer_offload`).
    `train`: the actor update, optimizer step included -- verl loads everything it offloaded back, so only
    Megatron's own `optimizer_cpu_offload` / `optimizer_offload_fraction` take Adam's state off the device.
    Adam's moments are created at the first `optimizer.step()`: step 1's rollout and forward/backward hold only the
    fp32 master part, so a plan that runs out at the first optimizer step gets through a complete rollout first
    (incident 3: the 30B MoE on 8 devices). The optimizer state is sharded over DP x CP (dense) and expert-DP
    (experts) by the distributed optimizer; activations follow the recompute mode and the micro-batch or dynamic-bsz
    token budget, with the backward working set, the MoE dispatcher buffers and the logits' fp32 working set;
    Ascend adds 2 x HCCL_BUFFSIZE per communicator. The message names the phase and the point in the run, its
    biggest term and the knobs that shrink it. The accelerator is the one named (--accelerator, the recipe's
    `hardware.accelerator`, `[tool.sapo-lint] accelerator`, each a name or one per device kind), else the one assumed
    for the variant's device kind (ascend-910b3 for NPU, nvidia-h100 for GPU), which the message then says: on an
    assumed accelerator the finding is an error only when no accelerator of that kind in `schemas/devices.json` has
    enough memory (the verdict holds whichever it is), else a warning. Not counted: allocator fragmentation -- hence
    the warning above 90%.
    To compare with a run: verl's `perf/max_memory_allocated_gb` is the peak since the process started (verl never
    resets the peak counter), init and weight-export transients included."""
    est = runnable_estimate(ctx)
    if est is None or not est.inputs.hbm_gib:  # no accelerator: the name given is unknown (RF006 says so)
        return
    hbm = est.hbm_bytes
    moment = est.first_over(hbm) or est.first_over(WARN_FRACTION * hbm)
    if moment is None:
        return
    over = moment.total > hbm
    term, size = max(moment.terms.items(), key=lambda kv: kv[1])
    p = est.inputs
    layout = p.actor.layout
    shape = (
        f"TP{layout.tp} PP{layout.pp} CP{layout.cp}"
        + (f" EP{layout.ep} ETP{layout.expert_tp}" if p.model.is_moe else "")
        + f", dp {est.dp}"
        + (f", edp {est.edp}" if p.model.is_moe else "")
    )
    verdict = "exceeds" if over else f"is over {WARN_FRACTION:.0%} of"
    nominal = f" ({p.nominal_hbm_gib:g} GiB nominal)" if p.nominal_hbm_gib and p.nominal_hbm_gib != p.hbm_gib else ""
    assumed, severity = "", None if over else Severity.WARNING
    if p.accelerator_assumed:
        largest = _largest_of_kind(p.accelerator)
        if over and estimate(p._replace(hbm_gib=largest.usable_hbm_gib)).first_over(largest.usable_hbm_gib * GIB):
            assumed = (
                f" {p.accelerator} is assumed (none is named), but no device of its kind in schemas/devices.json "
                f"has enough ({largest.name}: {largest.usable_hbm_gib:g} GiB)."
            )
        else:
            severity = Severity.WARNING
            # Not why it was assumed (that differs between variants that share the finding; `explain` says it).
            assumed = (
                f" {p.accelerator} is assumed (none is named), hence a warning: name yours with --accelerator, "
                "`hardware.accelerator` or `[tool.sapo-lint] accelerator`."
            )
    yield Finding(
        ctx.blame(*BLAME.get(term, ()), *FALLBACK),
        f"{moment.label}: estimated {moment.total / GIB:.1f} GiB per device {verdict} the {p.hbm_gib:g} GiB the "
        f"runtime reports for {p.accelerator}{nominal} ({p.model.name} on {est.world} devices, {shape}); biggest "
        f"term: {term} {size / GIB:.1f} GiB. Fix: {advice(est, moment)}.{assumed} "
        "See `sapo-lint explain` for every term",
        severity=severity,
    )


def _largest_of_kind(name: str) -> Accelerator:
    """The accelerator with the most memory of the same kind (NPU/GPU) as `name`."""
    table = accelerators()
    return max((a for a in table.values() if a.device == table[name].device), key=lambda a: a.usable_hbm_gib)
