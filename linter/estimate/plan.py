"""The estimate of one plan: per-device memory by phase, host RAM by phase, checkpoint size and save time.

* Mixed-precision Adam: bf16 weights (2 B) and fp32 main gradients (4 B; verl passes `grad_reduce_in_fp32=True` to
  Megatron's DDP) are held on every rank; the optimizer state is in `optimizer.py`.
* verl's own offload (`actor.megatron.param_offload` / `optimizer_offload`, verl 0.9.1 `workers/engine/base.py`
  BaseEngineCtx): weights and gradients, resp. the optimizer state, live in host memory outside the engine's
  train/eval contexts and are loaded back for them -- so they free the rollout phase, never the optimizer step.
* The rollout engine (vLLM / SGLang) takes `gpu_memory_utilization` x HBM while it generates; with
  `free_cache_engine=True` (the default) it sleeps during training and releases that memory. On Ascend verl uses
  sleep level 1, which parks the rollout weights in host RAM. verl main's fully-async and one-step-off trainers run
  it on devices of its own (`rollout.nnodes x rollout.n_gpus_per_node`): the estimate is of the trainer's devices,
  which then hold no engine.
* Ascend HCCL reserves 2 x HCCL_BUFFSIZE of HBM per communicator.
* HBM is what the runtime reports per device (`schemas/devices.json` `usable_hbm_gib`: torch.cuda / torch_npu
  `mem_get_info` total, e.g. 60.96 GiB of a 64 GiB Ascend 910B), and vLLM / vLLM-Ascend take
  `gpu_memory_utilization` of that total.
* Adam's moments are created at the first `optimizer.step()` (`optimizer.py`): `timeline` lists the moments of a
  run in order -- step 1's rollout, log-prob and forward/backward without them, the first optimizer step, then the
  steady state from step 2 on -- so that MEM001 can name where memory runs out first.
* A dist checkpoint holds each parameter once in bf16 plus the fp32 master and both moments; the HF weights that
  verl writes through a bridge are gathered and written by rank 0 (`checkpoint_estimate`). Save barriers wait on
  the world group, whose timeout is verl's `nccl_timeout` (on Ascend also HCCL_EXEC_TIMEOUT).

Comparing with a measured peak: verl logs `perf/max_memory_allocated_gb` after each update
(`workers/engine_workers.py`) and never resets the peak counter (`utils/memory_utils.py` `reset_memory_stats` has no
caller in verl 0.9.1 or main), so the logged figure is the peak since the process started -- model init, checkpoint
loading and the weight export to the rollout engine of every step included -- not the peak of the train phase.
It also leaves out what the caching allocator reserves beyond it and what HCCL/NCCL and the runtime hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from ..core.device import device_kind
from ..core.model import ModelShape
from .activations import forward_activations, train_activations
from .inputs import GIB, MB, PlanInputs, RoleSetup
from .optimizer import Optimizer
from .params import Layout, ParamCounts, RankParams, count_params, params_per_rank

PHASES = ("rollout", "logprob", "train")  # plus "critic" when a critic trains; steady state (from step 2 on)
DEVICE_TERMS = (
    "weights",
    "grads",
    "optimizer",
    "activations",
    "backward_working",
    "moe_dispatch",
    "logits",
    "ref_weights",
    "critic_weights",
    "critic_grads",
    "critic_optimizer",
    "rollout",
    "comm_buffers",
    "runtime",
)
HOST_TERMS = ("optimizer_cpu_offload", "verl_offload", "rollout_sleep")
#: Terms that exist only while a micro-batch runs forward/backward; freed before the optimizer step.
STEP_TRANSIENT_TERMS = ("activations", "backward_working", "moe_dispatch", "logits")


class RoleState(NamedTuple):
    role: str
    params: RankParams
    weights: float
    grads: float
    optimizer_device: float
    optimizer_host: float  # Megatron CPU offload
    optimizer_master_device: float  # the part of optimizer_device that exists before the first step
    d_dense: int
    d_expert: int


class CheckpointEstimate(NamedTuple):
    weights_bytes: float  # whole model in bf16 (HF weights or the model part of a dist checkpoint)
    full_bytes: float  # weights + optimizer state (+ negligible extra state)
    saved_bytes: float  # what `save_contents` writes
    rank_dist_bytes: float  # the busiest rank's share of the dist checkpoint
    rank0_hf_bytes: float  # HF weights written through the bridge by rank 0 (or each rank's share)
    hf_writer: str  # who writes the HF weights, for messages (`checkpoint_estimate`)
    dist_seconds: float
    hf_seconds: float
    timeout_s: float
    timeout_source: str
    write_gib_per_s: float
    disk_peak_bytes: float  # computed whether or not `trainer.save_freq` makes verl save
    saves: bool
    async_save: bool

    @property
    def save_seconds(self) -> float:
        return self.dist_seconds + self.hf_seconds

    @property
    def longest_wait_seconds(self) -> float:
        """The longest stretch other ranks wait at one world barrier: the dist checkpoint (unless async) or rank 0
        alone writing the HF weights."""
        return max(0.0 if self.async_save else self.dist_seconds, self.hf_seconds)


class Moment(NamedTuple):
    """One point of a run's device-memory timeline: `phase` (a key of `Estimate.phases`), a label for messages and
    the terms (bytes per device) at that point."""

    phase: str
    label: str
    terms: Mapping[str, float]

    @property
    def total(self) -> float:
        return sum(self.terms.values())


class Estimate(NamedTuple):
    inputs: PlanInputs
    params: ParamCounts
    actor: RoleState
    ref: RoleState | None
    critic: RoleState | None
    phases: Mapping[str, Mapping[str, float]]  # phase -> term -> bytes per device (read-only)
    host: Mapping[str, Mapping[str, float]]  # phase -> term -> bytes per rank in host RAM (read-only)
    checkpoint: CheckpointEstimate
    communicators: tuple[str, ...]
    notes: tuple[str, ...]
    timeline: tuple[Moment, ...] = ()  # in the order a run reaches them (`timeline`)

    @property
    def world(self) -> int:
        return self.inputs.world

    @property
    def describes_a_run(self) -> bool:
        """False when the world size does not divide the actor's layout: verl stops at start-up (TP001/TP002), and
        the figures, with dp rounded, describe no run; the MEM/CK rules then say nothing."""
        return divides(self.inputs.actor.layout, self.inputs.model.is_moe)

    @property
    def dp(self) -> int:
        return self.inputs.actor.layout.dp

    @property
    def edp(self) -> int:
        return self.inputs.actor.layout.edp

    @property
    def hbm_bytes(self) -> float:
        return self.inputs.hbm_gib * GIB

    def total(self, phase: str) -> float:
        return sum(self.phases[phase].values())

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=lambda p: (self.total(p), -list(self.phases).index(p)))

    @property
    def peak_bytes(self) -> float:
        return self.total(self.peak_phase)

    def biggest_term(self, phase: str) -> tuple[str, float]:
        return max(self.phases[phase].items(), key=lambda kv: kv[1])

    def first_over(self, limit_bytes: float) -> Moment | None:
        """The first moment of the run whose device memory exceeds `limit_bytes`, or None."""
        return next((m for m in self.timeline if m.total > limit_bytes), None)

    def host_total(self, phase: str) -> float:
        return sum(self.host[phase].values())

    @property
    def host_peak_phase(self) -> str:
        return max(self.host, key=lambda p: (self.host_total(p), -list(self.host).index(p)))

    @property
    def host_peak_per_node(self) -> float:
        return self.host_total(self.host_peak_phase) * self.inputs.devices_per_node


def role_state(m: ModelShape, setup: RoleSetup, mla_down_replicated: bool = False) -> RoleState:
    """Weights, main gradients and optimizer state of one role on its most-loaded rank. With the distributed
    optimizer the state of dense parameters is sharded over DP x CP and that of routed experts over expert-DP."""
    layout = setup.layout
    rank = params_per_rank(m, layout, setup.value_head, mla_down_replicated)
    weights = rank.total * setup.param_bytes
    if setup.optimizer is None:
        return RoleState(setup.role, rank, weights, 0.0, 0.0, 0.0, 0.0, 1, 1)
    opt = setup.optimizer
    d_dense, d_expert = (layout.dp * layout.cp, layout.edp) if opt.distributed else (1, 1)
    elements = rank.dense / d_dense + rank.expert / d_expert
    return RoleState(
        setup.role,
        rank,
        weights,
        rank.total * setup.grad_bytes,
        elements * opt.device_bytes_per_element(),
        elements * opt.host_bytes_per_element(),
        elements * opt.device_master_bytes_per_element(),
        d_dense,
        d_expert,
    )


def communicators(layout: Layout, moe: bool) -> tuple[str, ...]:
    """Device communicators a trainer rank uses collectives on (size > 1): verl's world group; Megatron's TP, PP, CP,
    DP x CP (gradient reduce-scatter / parameter all-gather), DP when CP splits it, the model-parallel group
    (gradient-norm all-reduce), the embedding group (PP > 1) and, for MoE, EP, expert-TP and expert-DP. The rollout
    engine's own groups are inside its `gpu_memory_utilization` budget."""
    out = ["world"] if layout.world > 1 else []
    checks = [
        ("tp", layout.tp > 1),
        ("pp", layout.pp > 1),
        ("cp", layout.cp > 1),
        ("dp_cp", layout.dp * layout.cp > 1),
        ("dp", layout.cp > 1 and layout.dp > 1),
        ("mp", layout.tp * layout.pp > 1),
        ("embedding", layout.pp > 1),
        ("ep", moe and layout.ep > 1),
        ("etp", moe and layout.expert_tp > 1),
        ("edp", moe and layout.edp > 1),
    ]
    return tuple(out + [name for name, used in checks if used])


def checkpoint_estimate(inputs: PlanInputs, state: RoleState, counts: ParamCounts) -> CheckpointEstimate:
    """Checkpoint of the actor (and critic) as verl 0.9.1 writes it.

    * `model` / `hf_model` with `use_dist_checkpointing=False` (the default): HF safetensors through the bridge,
      bf16, gathered to and written by rank 0 alone. Megatron-Bridge (the default since `vanilla_mbridge=False`):
      verl 0.9.1 and main call `bridge.save_hf_weights(model, path, strict=...)`
      (`utils/checkpoint/megatron_checkpoint_manager.py` `_save_model_as_hf_via_bridge`) without
      `distributed_save`, so Megatron-Bridge's `SafeTensorsStateSource.save_generator`
      (`models/hf_pretrained/state.py`) has every other rank only drain the export generator (its gathers) while
      rank 0 writes every safetensors shard. Vanilla mbridge 0.15.1 `save_weights` likewise writes from rank 0, or
      splits the files over all ranks with `distributed_filesystem=True` (a mbridge newer than 0.15.1). With
      `use_dist_checkpointing=True` the model goes into the dist checkpoint, its bf16 shards spread over the
      data-parallel replicas.
    * `optimizer`: each rank writes its own shard (fp32 master and moments; `Optimizer.checkpoint_bytes_per_element`).
    * `extra` (RNG, scheduler): negligible.

    Time = bytes / `write_gib_per_s` per writing rank; the dist part and rank 0's HF part are sequential.
    Peak disk = two checkpoints: verl deletes the previous one only after the new one completes, whatever
    `max_actor_ckpt_to_keep` says (verl 0.9.1 `utils/checkpoint/checkpoint_manager.py`: `ensure_checkpoint_capacity`,
    `register_checkpoint`)."""
    setup, ck = inputs.actor, inputs.checkpoint
    opt = setup.optimizer or Optimizer()
    weights = counts.total * setup.param_bytes
    full = weights + counts.total * opt.checkpoint_bytes_per_element()
    contents = set(ck.contents)
    saves_model = "model" in contents or "hf_model" in contents
    saved = (weights if saves_model else 0.0) + (full - weights if "optimizer" in contents else 0.0)
    if ck.use_dist_checkpointing and "hf_model" in contents and "model" in contents:
        saved += weights  # both the dist model shards and the HF weights
    layout = setup.layout
    rank = state.params
    dist = 0.0
    if "optimizer" in contents:
        dist += (rank.dense / state.d_dense + rank.expert / state.d_expert) * opt.checkpoint_bytes_per_element()
    if "model" in contents and ck.use_dist_checkpointing:
        dist += (rank.dense / (layout.dp * layout.cp) + rank.expert / layout.edp) * setup.param_bytes
    hf_writes = ("model" in contents and not ck.use_dist_checkpointing) or "hf_model" in contents
    hf = (weights / layout.world if ck.hf_distributed else weights) if hf_writes else 0.0
    if ck.hf_distributed:
        writer = "every rank writes its share of the HF weights (vanilla mbridge, distributed_filesystem)"
    elif ck.vanilla_mbridge:
        writer = "rank 0 alone writes the HF weights (vanilla mbridge `save_weights`)"
    else:
        writer = (
            "rank 0 alone writes the HF weights (Megatron-Bridge `save_hf_weights`: "
            "the other ranks only feed the gather)"
        )
    bw = inputs.limits.write_gib_per_s * GIB
    disk_peak = 2 * saved
    if inputs.critic is not None and inputs.critic.optimizer is not None:
        critic_counts = count_params(inputs.model, value_head=True)
        critic = inputs.critic
        critic_saved = (critic_counts.total * critic.param_bytes if saves_model else 0.0) + (
            critic_counts.total * critic.optimizer.checkpoint_bytes_per_element() if "optimizer" in contents else 0.0
        )
        disk_peak += 2 * critic_saved
    return CheckpointEstimate(
        weights,
        full,
        saved,
        dist,
        hf,
        writer,
        dist / bw,
        hf / bw,
        ck.timeout_s,
        ck.timeout_source,
        inputs.limits.write_gib_per_s,
        disk_peak,
        ck.saves,
        ck.async_save,
    )


def estimate(inputs: PlanInputs) -> Estimate:
    """Per-device memory by phase, host RAM by phase, checkpoint size and save time.

    Phases (each a sum of terms, bytes per device):

    Phases, in the steady state (from step 2 on, when Adam's moments exist):

    * `rollout`: the rollout engine's `gpu_memory_utilization` x HBM, plus what the trainer keeps resident --
      weights and grads unless `param_offload`, the device part of the optimizer state unless
      `optimizer_offload`, the ref's weights unless offloaded.
    * `logprob`: old-log-prob / ref-log-prob forward passes (verl's eval mode loads weights only): one layer's
      intermediates, one MoE layer's dispatcher buffers and the logits for the log-prob token budget (the old
      log-prob computes entropy, the ref's does not).
    * `train`: the actor update, optimizer step included: weights, grads and optimizer state on the device
      (whatever verl's offload flags say), activations for the token budget and the recompute mode, the backward
      working set, the MoE dispatcher buffers, logits.
    * `critic` (when a critic trains): as `train`, for the critic.

    Every phase adds the communicator buffers (Ascend), the runtime constant, and the rollout engine's
    reservation when `free_cache_engine` is off.

    An SFT trainer (`PlanInputs.sft`) has only `train`, for its one model, with no rollout engine.

    The timeline (`Estimate.timeline`) puts the phases in the order a run reaches them: step 1's rollout, log-prob
    and forward/backward hold only the optimizer's master part; the first optimizer step holds the whole state
    with the forward/backward transients freed (`STEP_TRANSIENT_TERMS`); then the steady-state phases.
    """
    m, actor = inputs.model, inputs.actor
    counts = count_params(m)
    act = role_state(m, actor, inputs.mla_down_replicated)
    ref = role_state(m, inputs.ref, inputs.mla_down_replicated) if inputs.ref else None
    critic = role_state(m, inputs.critic, inputs.mla_down_replicated) if inputs.critic else None
    hbm = inputs.hbm_gib * GIB
    comms = communicators(actor.layout, m.is_moe)
    buffers = device_kind(inputs.device).collective_buffer_env is not None  # HCCL_BUFFSIZE per communicator
    comm_bytes = len(comms) * 2 * inputs.hccl_buffsize_mb * MB if buffers else 0.0
    rollout_bytes = 0.0 if inputs.rollout.separate or inputs.sft else inputs.rollout.gpu_memory_utilization * hbm
    notes: list[str] = []
    if inputs.rollout.separate:
        notes.append(
            "the rollout runs on devices of its own (rollout.nnodes x rollout.n_gpus_per_node): these are the "
            "trainer's devices, which hold no rollout engine"
        )

    def phase(name: str) -> dict[str, float]:
        terms = dict.fromkeys(DEVICE_TERMS, 0.0)
        training = name in ("train", "critic")
        # actor
        resident = training or (name == "logprob")
        terms["weights"] = act.weights if (resident or not actor.param_offload) else 0.0
        terms["grads"] = act.grads if (training or not actor.param_offload) else 0.0
        terms["optimizer"] = act.optimizer_device if (training or not actor.optimizer_offload) else 0.0
        if ref is not None:
            terms["ref_weights"] = ref.weights if (name == "logprob" or not inputs.ref.param_offload) else 0.0
        if critic is not None:
            c = inputs.critic
            terms["critic_weights"] = critic.weights if (training or name == "logprob" or not c.param_offload) else 0.0
            terms["critic_grads"] = critic.grads if (training or not c.param_offload) else 0.0
            terms["critic_optimizer"] = critic.optimizer_device if (training or not c.optimizer_offload) else 0.0
        t = None
        if name == "train":
            t = train_activations(m, actor.layout, actor.sp, actor.train_tokens, actor.recompute, entropy=actor.entropy)
        elif name == "critic":
            c = inputs.critic
            t = train_activations(m, c.layout, c.sp, c.train_tokens, c.recompute, value_head=True)
        elif name == "logprob":
            # the old log-prob computes entropy (12 B per logit), the ref's does not (6 B): the larger of the two
            old = forward_activations(m, actor.layout, actor.sp, actor.logprob_tokens, entropy=True)
            passes = [old] + (
                [forward_activations(m, actor.layout, actor.sp, inputs.ref.logprob_tokens)] if inputs.ref else []
            )
            t = max(passes, key=lambda a: a.total)
        if t is not None:
            terms["activations"], terms["backward_working"] = t.layers, t.working
            terms["moe_dispatch"], terms["logits"] = t.dispatch, t.logits
        terms["rollout"] = rollout_bytes if (name == "rollout" or not inputs.rollout.free_cache_engine) else 0.0
        terms["comm_buffers"] = comm_bytes
        terms["runtime"] = inputs.runtime_gib * GIB
        return terms

    names = ["train"] if inputs.sft else list(PHASES) + (["critic"] if critic is not None else [])
    phases = _read_only({n: phase(n) for n in names})

    def host(name: str) -> dict[str, float]:
        terms = dict.fromkeys(HOST_TERMS, 0.0)
        terms["optimizer_cpu_offload"] = act.optimizer_host + (critic.optimizer_host if critic else 0.0)
        off = 0.0
        for setup, state in ((actor, act), (inputs.critic, critic)):
            if setup is None or state is None:
                continue
            training = name in ("train", "critic")
            if setup.param_offload:
                off += (0.0 if training or name == "logprob" else state.weights) + (0.0 if training else state.grads)
            if setup.optimizer_offload and not training:
                off += state.optimizer_device
        if ref is not None and inputs.ref.param_offload and name != "logprob":
            off += ref.weights
        terms["verl_offload"] = off
        asleep = name != "rollout" and inputs.rollout.free_cache_engine
        if asleep and inputs.rollout.sleep_keeps_weights_on_host and not inputs.rollout.separate:
            terms["rollout_sleep"] = counts.total * 2.0 / max(1, inputs.rollout.tp)
        return terms

    hosts = _read_only({n: host(n) for n in names})
    timeline = _sft_timeline(phases, act) if inputs.sft else _timeline(phases, act, critic)
    ck = checkpoint_estimate(inputs, act, counts)
    if not divides(actor.layout, m.is_moe):
        notes.append("the world size does not divide the parallel layout (see TP001/TP002); dp/edp rounded up to 1")
    return Estimate(inputs, counts, act, ref, critic, phases, hosts, ck, comms, tuple(notes), timeline)


def divides(layout, moe: bool) -> bool:
    """Whether the world size divides the layout (TP x PP x CP; EP x ETP x PP for a MoE), as Megatron requires."""
    return not (
        layout.world % (layout.tp * layout.pp * layout.cp)
        or (moe and layout.world % (layout.ep * layout.expert_tp * layout.pp))
    )


def _timeline(
    phases: Mapping[str, Mapping[str, float]], act: RoleState, critic: RoleState | None
) -> tuple[Moment, ...]:
    """The moments of a run in order: step 1 before the first optimizer step (only the optimizer's master part on
    the device), the first optimizer step (the whole state, forward/backward transients freed -- the caching
    allocator keeps their blocks reserved, which the 90% warning line leaves room for), then the steady state."""

    def step1(terms: Mapping[str, float]) -> dict[str, float]:
        out = dict(terms)
        if out["optimizer"]:
            out["optimizer"] = act.optimizer_master_device
        if critic is not None and out["critic_optimizer"]:
            out["critic_optimizer"] = critic.optimizer_master_device
        return out

    first_step = dict(phases["train"], **dict.fromkeys(STEP_TRANSIENT_TERMS, 0.0))
    moments = [
        Moment(
            "rollout",
            "rollout phase of step 1 (before the first optimizer step: no Adam moments yet)",
            step1(phases["rollout"]),
        ),
        Moment("logprob", "log-prob phase of step 1", step1(phases["logprob"])),
        Moment("train", "train phase of step 1, forward/backward (no Adam moments yet)", step1(phases["train"])),
        Moment("train", "train phase, at the first optimizer step (Adam's moments are created)", first_step),
        Moment("rollout", "rollout phase from step 2 on (Adam's moments exist)", dict(phases["rollout"])),
        Moment("logprob", "log-prob phase from step 2 on", dict(phases["logprob"])),
        Moment("train", "train phase from step 2 on (forward/backward with Adam's moments)", dict(phases["train"])),
    ]
    if "critic" in phases:
        moments.append(Moment("critic", "critic update phase", dict(phases["critic"])))
    return tuple(Moment(m.phase, m.label, MappingProxyType(m.terms)) for m in moments)


def _sft_timeline(phases: Mapping[str, Mapping[str, float]], act: RoleState) -> tuple[Moment, ...]:
    """An SFT trainer's moments: step 1's forward/backward (only the optimizer's master part on the device), the
    first optimizer step (the whole state, forward/backward transients freed), then the steady state."""
    train = phases["train"]
    step1 = dict(train, optimizer=act.optimizer_master_device) if train["optimizer"] else dict(train)
    moments = (
        Moment("train", "SFT update of step 1, forward/backward (no Adam moments yet)", step1),
        Moment(
            "train",
            "SFT update, at the first optimizer step (Adam's moments are created)",
            dict(train, **dict.fromkeys(STEP_TRANSIENT_TERMS, 0.0)),
        ),
        Moment("train", "SFT update from step 2 on (forward/backward with Adam's moments)", dict(train)),
    )
    return tuple(Moment(m.phase, m.label, MappingProxyType(m.terms)) for m in moments)


def _read_only(by_phase: dict[str, dict[str, float]]) -> Mapping[str, Mapping[str, float]]:
    """Read-only views, so that an `Estimate` (an immutable record, shared by the rules of one command) stays as
    computed."""
    return MappingProxyType({name: MappingProxyType(terms) for name, terms in by_phase.items()})
