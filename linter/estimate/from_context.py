"""From a resolved command (`LintContext`) to the estimator's `PlanInputs`, and the estimate of a context,
computed once for the MEM/CK rules and `sapo-lint explain`.

Config values are read the way verl 0.9.1 reads them; per-role Megatron sizes come from `linter/topology.py`, the
model and the accelerator from the command, the environment and the site limits from `Command.env` and
`Command.resources`.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.device import device_kind, device_of
from ..core.paths import ACTOR, ROLE_NODE, ROLE_PREFIX, ROLLOUT, SFT, TrainedKeys
from ..engine import MEGATRON, LintContext
from ..topology import (
    Parallelism,
    active_roles,
    parallelism,
    runs_sft,
    separated_rollout,
    sft_devices,
    sft_timeout,
    trained_keys,
    world_keys,
    world_size,
)
from .activations import Recompute
from .inputs import (
    DEFAULT_HCCL_BUFFSIZE_MB,
    DEFAULT_HCCL_EXEC_TIMEOUT_S,
    DEFAULT_NCCL_TIMEOUT_S,
    CheckpointSetup,
    Limits,
    PlanInputs,
    RoleSetup,
    RolloutSetup,
)
from .optimizer import Optimizer
from .params import Layout
from .plan import Estimate, divides, estimate

#: The Megatron sizes that must be at least 1 (TP001 reports TP, PP and CP below it; TP014 the rest).
MEGATRON_SIZES = (
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
    "virtual_pipeline_model_parallel_size",
)


def estimate_for(ctx: LintContext) -> Estimate | None:
    """`estimate(plan_inputs(ctx))`, computed once per context (kept in `ctx.derived`, read only here) so that the
    MEM/CK rules and `explain` share one computation."""
    if "estimate" not in ctx.derived:
        inputs = plan_inputs(ctx)
        ctx.derived["estimate"] = estimate(inputs) if inputs is not None else None
    return ctx.derived["estimate"]


def runnable_estimate(ctx: LintContext) -> Estimate | None:
    """The estimate the MEM/CK rules judge: None also where the world size does not divide the actor's layout, so
    verl stops at start-up (TP001/TP002 say why) and figures with dp rounded describe no run."""
    est = estimate_for(ctx)
    return est if est is not None and est.describes_a_run else None


def layout_error(ctx: LintContext) -> str | None:
    """Why the estimate was not made because the parallel layout cannot start, naming the rules that report it; None
    when it was made, or was not for another reason (no model, a world size not known statically, not the Megatron
    engine: `explain` says which). MEM001 turns it into a note, so that a run with a topology error is never
    silently left unchecked for memory."""
    command = ctx.command
    if command is None or command.model is None or ctx.model_engine != MEGATRON:
        return None
    devices = world_keys(ctx)  # none where torchrun's options count an SFT trainer's devices
    nodes, per_node = (ctx.number(devices[0]), ctx.number(devices[1])) if devices else (None, None)
    if nodes is not None and per_node is not None and min(nodes, per_node) < 1:
        return f"the trainer has {nodes} x {per_node} devices (TP014)"
    world = world_size(ctx)
    for role in active_roles(ctx):
        prefix = ROLE_PREFIX[role]
        for name in MEGATRON_SIZES:
            value = ctx.number(f"{prefix}.{name}")
            if value is not None and value < 1:
                return f"the {role}'s `{name}` is {value} (TP001/TP014)"
        par = parallelism(ctx, role)
        if par is not None and not _fits(par, command.model.num_layers):
            return (
                f"the {role}'s {par.pp * (par.vpp or 1)} pipeline chunks (PP x VPP) outnumber the model's "
                f"{command.model.num_layers} layers (TP007/TP008)"
            )
    trained = trained_keys(ctx).role
    actor = parallelism(ctx, trained)
    if world and actor is not None:
        layout = Layout(world, actor.tp, actor.pp, actor.vpp, actor.cp, actor.ep, actor.etp)
        if not divides(layout, command.model.is_moe):
            return f"the world size {world} does not divide the {trained}'s parallel layout (TP001/TP002)"
    return None


def plan_inputs(ctx: LintContext) -> PlanInputs | None:
    """Everything the estimate needs, read from a resolved command; None when the model, the world size or the
    trained model's Megatron sizes are unknown, or a running role has more pipeline chunks than layers (other rules
    report those). Without an accelerator (a name that is not in the table: RF006) the device memory is unknown
    (`hbm_gib` 0, which MEM001 skips); the host-RAM and checkpoint figures do not depend on it. An SFT trainer's
    one model is read from its own keys (`core.paths.SFT_KEYS`), with no rollout, reference model or critic."""
    command = ctx.command
    if command is None or command.model is None:
        return None
    keys = trained_keys(ctx)
    world = world_size(ctx)
    actor_par = parallelism(ctx, keys.role)
    if not world or actor_par is None:
        return None
    roles = active_roles(ctx)
    if not all(_fits(p, command.model.num_layers) for p in (parallelism(ctx, r) for r in roles) if p is not None):
        return None
    sft = runs_sft(ctx)
    env = {var.name: var.value for var in command.env}
    if sft:  # sft_trainer_engine's `data.max_length` (1024): the longest sample, prompt and response together
        seq = _int(ctx.config.value("data.max_length"), 1024)
    else:
        seq = _int(ctx.config.value("data.max_prompt_length"), 512) + _int(
            ctx.config.value("data.max_response_length"), 512
        )
    actor = _sft_role(ctx, keys, actor_par, world, seq) if sft else _role(ctx, "actor", actor_par, world, seq)
    ref = critic = None
    if "ref" in roles and (p := parallelism(ctx, "ref")) is not None:
        ref = _role(ctx, "ref", p, world, seq)
    if "critic" in roles and (p := parallelism(ctx, "critic")) is not None:
        critic = _role(ctx, "critic", p, world, seq)
    accelerator = command.accelerator
    device = device_of(command, accelerator).kind
    kind = device_kind(device)
    rollout = RolloutSetup(
        gpu_memory_utilization=_num(ctx.config.value(f"{ROLLOUT}.gpu_memory_utilization"), 0.5),
        free_cache_engine=ctx.config.value(f"{ROLLOUT}.free_cache_engine") is not False,
        tp=_int(ctx.config.value(f"{ROLLOUT}.tensor_model_parallel_size"), 1),
        sleep_keeps_weights_on_host=kind.sleep_keeps_weights_on_host,
        separate=separated_rollout(ctx),
        sequence_tokens=_int(ctx.config.value(f"{ROLLOUT}.max_model_len"), seq),
    )
    contents = ctx.config.value(f"{keys.checkpoint}.save_contents")
    mbridge_cfg = f"{keys.checkpoint}.mbridge_config"
    vanilla = bool(ctx.config.value(f"{keys.megatron}.vanilla_mbridge"))
    hf_distributed = (
        vanilla
        and bool(ctx.config.value(f"{mbridge_cfg}.distributed_filesystem"))
        and bool(ctx.config.value(f"{mbridge_cfg}.memory_efficient"))
        and not ctx.stack.mbridge[:1].isdigit()  # released mbridge (<= 0.15.1) has no distributed_filesystem
    )
    if keys.timeout is not None:
        timeout, source = _num(ctx.config.value(keys.timeout), DEFAULT_NCCL_TIMEOUT_S), keys.timeout
    else:
        timeout, source = sft_timeout(ctx)
    if kind.collective_timeout_env is not None:
        exec_timeout = _num(_float_or_none(env.get(kind.collective_timeout_env)), DEFAULT_HCCL_EXEC_TIMEOUT_S)
        if 0 < exec_timeout < timeout:
            timeout, source = exec_timeout, kind.collective_timeout_env
    save_freq = ctx.config.value("trainer.save_freq")
    checkpoint = CheckpointSetup(
        # the SFT trainers also save "after_each_epoch" (SL004 reads the same)
        saves=_num(save_freq, -1) > 0 or (sft and save_freq == "after_each_epoch"),
        contents=tuple(str(c) for c in contents) if isinstance(contents, list) else ("model", "optimizer", "extra"),
        use_dist_checkpointing=bool(ctx.config.value(f"{keys.megatron}.use_dist_checkpointing")),
        hf_distributed=hf_distributed,
        vanilla_mbridge=vanilla,
        async_save=bool(ctx.config.value(f"{keys.checkpoint}.async_save")),
        timeout_s=timeout,
        timeout_source=source,
    )
    per_node = sft_devices(ctx)[0] if sft else _int(ctx.config.value("trainer.n_gpus_per_node"), 0)
    if not per_node:
        per_node = accelerator.devices_per_node if accelerator else 8
    return PlanInputs(
        model=command.model,
        world=world,
        devices_per_node=per_node,
        hbm_gib=float(accelerator.usable_hbm_gib) if accelerator else 0.0,
        device=device,
        actor=actor,
        ref=ref,
        critic=critic,
        rollout=rollout,
        checkpoint=checkpoint,
        limits=Limits.from_mapping(dict(command.resources)),
        hccl_buffsize_mb=_num(_float_or_none(env.get("HCCL_BUFFSIZE")), DEFAULT_HCCL_BUFFSIZE_MB),
        mla_down_replicated=ctx.fact("megatron-core:mla-down-projection-replicated"),
        accelerator=accelerator.name if accelerator else "",
        nominal_hbm_gib=float(accelerator.hbm_gib) if accelerator else 0.0,
        accelerator_assumed=accelerator.assumed if accelerator else "",
        sft=sft,
    )


def _fits(par: Parallelism, layers: int) -> bool:
    """Whether the role has no more pipeline chunks than layers (TP007 and TP008 report the rest): the estimate
    builds a table per stage, and a PP of 10^20 would not fit in memory."""
    return par.pp * (par.vpp or 1) <= layers


def _role(ctx: LintContext, role: str, par: Parallelism, world: int, seq: int) -> RoleSetup:
    layout = Layout(world, par.tp, par.pp, par.vpp, par.cp, par.ep, par.etp)
    prefix, megatron = ROLE_NODE[role], par.prefix
    param_bytes = float(dtype_bytes(ctx.config.value(f"{megatron}.dtype"), 2))
    common = {
        "role": role,
        "layout": layout,
        "sp": par.sp and par.tp > 1,
        "param_bytes": param_bytes,
        "param_offload": bool(ctx.config.value(f"{megatron}.param_offload")),
    }
    if role == "ref":
        tokens, _ = _tokens(
            ctx,
            f"{prefix}.log_prob_use_dynamic_bsz",
            f"{prefix}.log_prob_max_token_len_per_gpu",
            f"{prefix}.log_prob_micro_batch_size_per_gpu",
            seq,
            par.cp,
            16384,
        )
        return RoleSetup(**common, logprob_tokens=tokens)
    opt, grad = _optimizer(ctx, f"{prefix}.optim", megatron, param_bytes)
    budget_default = 32768 if role == "critic" else 16384
    train, source = _tokens(
        ctx,
        f"{prefix}.use_dynamic_bsz",
        f"{prefix}.ppo_max_token_len_per_gpu",
        f"{prefix}.ppo_micro_batch_size_per_gpu",
        seq,
        par.cp,
        budget_default,
    )
    if role == "actor":
        logprob, _ = _tokens(
            ctx,
            f"{ROLLOUT}.log_prob_use_dynamic_bsz",
            f"{ROLLOUT}.log_prob_max_token_len_per_gpu",
            f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu",
            seq,
            par.cp,
            16384,
        )
    else:
        logprob, _ = _tokens(
            ctx,
            f"{prefix}.use_dynamic_bsz",
            f"{prefix}.forward_max_token_len_per_gpu",
            f"{prefix}.forward_micro_batch_size_per_gpu",
            seq,
            par.cp,
            budget_default,
        )
    return RoleSetup(
        **common,
        grad_bytes=grad,
        optimizer=opt,
        optimizer_offload=bool(ctx.config.value(f"{megatron}.optimizer_offload")),
        recompute=_recompute(ctx, megatron),
        train_tokens=train,
        logprob_tokens=logprob,
        value_head=role == "critic",
        token_source=source,
        entropy=_entropy(ctx, prefix),
    )


def _sft_role(ctx: LintContext, keys: TrainedKeys, par: Parallelism, world: int, seq: int) -> RoleSetup:
    """An SFT trainer's model: its engine's sizes, dtype and offload, its `optim`, its `data.*` micro-batching (the
    engine multiplies the token budget by CP, as for PPO: verl/workers/engine/utils.py `prepare_micro_batches`), no
    entropy (sft_loss asks for none) and no log-prob pass."""
    layout = Layout(world, par.tp, par.pp, par.vpp, par.cp, par.ep, par.etp)
    param_bytes = float(dtype_bytes(ctx.config.value(f"{keys.megatron}.dtype"), 2))
    opt, grad = _optimizer(ctx, keys.optim, keys.megatron, param_bytes)
    train, source = _tokens(ctx, keys.dynamic_bsz, keys.token_budget, keys.micro_batch, seq, par.cp, 8192)
    return RoleSetup(
        role=SFT,
        layout=layout,
        sp=par.sp and par.tp > 1,
        param_bytes=param_bytes,
        param_offload=bool(ctx.config.value(f"{keys.megatron}.param_offload")),
        grad_bytes=grad,
        optimizer=opt,
        optimizer_offload=bool(ctx.config.value(f"{keys.megatron}.optimizer_offload")),
        recompute=_recompute(ctx, keys.megatron),
        train_tokens=train,
        token_source=source,
    )


def _entropy(ctx: LintContext, prefix: str) -> bool:
    """Whether the update computes entropy: verl 0.9.1 `trainer/ppo/ray_trainer.py` sets `calculate_entropy` from
    `actor.calculate_entropy or actor.entropy_coeff != 0` (the critic never does)."""
    if prefix != ACTOR:
        return False
    return (
        bool(ctx.config.value(f"{prefix}.calculate_entropy"))
        or _num(ctx.config.value(f"{prefix}.entropy_coeff"), 0.0) != 0
    )


def _tokens(
    ctx: LintContext, dynamic_path: str, budget_path: str, micro_path: str, seq: int, cp: int, budget_default: int
) -> tuple[float, str]:
    """Tokens of one micro-batch on one rank: the dynamic-bsz budget (a sequence longer than it is still one
    micro-batch), or micro-batch size x (prompt + response); divided over CP (verl multiplies the budget by CP)."""
    if ctx.config.value(dynamic_path):
        budget = _int(ctx.config.value(budget_path), budget_default)
        return float(max(budget, math.ceil(seq / cp))), f"dynamic bsz, {budget_path.rsplit('.', 1)[-1]}={budget}"
    micro = _int(ctx.config.value(micro_path), 1)
    return micro * seq / cp, f"{micro_path.rsplit('.', 1)[-1]}={micro} x {seq} tokens"


def _recompute(ctx: LintContext, megatron: str) -> Recompute:
    def get(name):
        return ctx.config.value(f"{megatron}.override_transformer_config.{name}")

    modules = get("recompute_modules")
    return Recompute(
        granularity=get("recompute_granularity") if get("recompute_granularity") in ("full", "selective") else None,
        method=get("recompute_method") if get("recompute_method") in ("uniform", "block") else None,
        num_layers=_int(get("recompute_num_layers"), 0) or None,
        modules=tuple(str(m) for m in modules) if isinstance(modules, list) else ("core_attn",),
    )


def _optimizer(ctx: LintContext, optim: str, megatron: str, param_bytes: float) -> tuple[Optimizer, float]:
    """(Optimizer, main-grad bytes) from the `optim` node and its `override_optimizer_config` the way verl 0.9.1's
    `init_megatron_optim_config` builds Megatron's OptimizerConfig (overrides win), and the DDP grad buffer dtype
    the way its engine sets `grad_reduce_in_fp32`."""

    def ov(name, default=None):
        path = f"{optim}.override_optimizer_config.{name}"
        return ctx.config.value(path) if ctx.config.exists(path) else default

    verl_pa = bool(ctx.config.value(f"{optim}.use_precision_aware_optimizer"))
    pa = bool(ov("use_precision_aware_optimizer", verl_pa))

    def dtype(name):
        default = ctx.config.value(f"{optim}.{name}") if verl_pa else "fp32"
        return dtype_bytes(ov(name, default))

    distributed = bool(ov("use_distributed_optimizer", ctx.config.value(f"{megatron}.use_distributed_optimizer")))
    main_params = dtype_bytes(ov("main_params_dtype", "fp32"))
    remainders = bool(ov("store_param_remainders", True))
    if pa and (main_params < 4 or (remainders and param_bytes == 2)):
        master = 2.0
    else:
        master = 4.0
    kind = "sgd" if str(ctx.config.value(f"{optim}.optimizer") or "adam").lower() == "sgd" else "adam"
    opt = Optimizer(
        distributed=distributed,
        precision_aware=pa,
        master_bytes=master,
        exp_avg_bytes=dtype("exp_avg_dtype") if pa else 4,
        exp_avg_sq_bytes=dtype("exp_avg_sq_dtype") if pa else 4,
        cpu_offload=bool(ov("optimizer_cpu_offload", False)),
        offload_fraction=_num(ov("optimizer_offload_fraction", 0.0), 0.0),
        kind=kind,
    )
    ddp = f"{megatron}.override_ddp_config.grad_reduce_in_fp32"
    if ctx.config.exists(ddp):
        grad = 4.0 if ctx.config.value(ddp) else param_bytes
    elif verl_pa and dtype_bytes(ctx.config.value(f"{optim}.main_grads_dtype")) < 4:
        grad = 2.0
    else:
        grad = 4.0
    return opt, grad


def dtype_bytes(name: Any, default: int = 4) -> int:
    """Bytes per element of a dtype as verl/Megatron configs spell it (`fp32`, `bf16`, `torch.bfloat16`, ...)."""
    if name is None:
        return default
    text = str(name).lower().removeprefix("torch.")
    if text in ("fp32", "float32", "float", "32"):
        return 4
    if text in ("bf16", "bfloat16", "fp16", "float16", "half", "16"):
        return 2
    if text in ("fp8", "uint8", "int8", "float8_e4m3fn", "float8_e5m2"):
        return 1
    return default


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _num(value: Any, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
