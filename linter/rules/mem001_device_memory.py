import math
from typing import NamedTuple

from ..catalog import accelerators
from ..core.diagnostics import Location, Severity
from ..core.model import Accelerator
from ..core.paths import ACTOR, ACTOR_KEYS, ROLLOUT, SFT, SFT_KEYS, TrainedKeys
from ..engine import LintContext, Part
from ..estimate.activations import Recompute, train_activations
from ..estimate.from_context import layout_error, runnable_estimate
from ..estimate.inputs import GIB, WARN_FRACTION, gib_text
from ..estimate.plan import STEP_TRANSIENT_TERMS, Estimate, Moment, divides, estimate
from ..estimate.rollout_engine import engine_weights_bytes, minimum_engine_bytes
from ..rulekit.registry import Finding, rule
from ..topology import trained_keys, world_keys


def _sizes(keys: TrainedKeys) -> tuple[str, ...]:
    return tuple(
        f"{keys.megatron}.{n}"
        for n in (
            "tensor_model_parallel_size",
            "pipeline_model_parallel_size",
            "expert_model_parallel_size",
            "expert_tensor_parallel_size",
            "context_parallel_size",
        )
    )


def blame_keys(keys: TrainedKeys) -> dict[str, tuple[str, ...]]:
    """Where to point a finding about each term: the knobs that change it, for the trained model's keys (the
    actor's, or an SFT trainer's engine: `core.paths.TrainedKeys`)."""
    sizes, budget, micro = _sizes(keys), keys.token_budget, keys.micro_batch
    logprob = () if keys.role == SFT else (f"{ROLLOUT}.log_prob_max_token_len_per_gpu",)
    entropy = () if keys.role == SFT else (f"{ACTOR}.entropy_coeff",)
    return {
        "rollout": (f"{ROLLOUT}.gpu_memory_utilization", f"{ROLLOUT}.free_cache_engine"),
        "optimizer": (
            f"{keys.override_optim}.optimizer_offload_fraction",
            f"{keys.override_optim}.optimizer_cpu_offload",
            f"{keys.megatron}.optimizer_offload",
            f"{keys.megatron}.use_distributed_optimizer",
            *sizes,
        ),
        "activations": (f"{keys.transformer}.recompute_granularity", budget, micro, *logprob),
        "logits": (budget, micro, *logprob, *entropy, *sizes),
        "backward_working": (budget, micro, f"{keys.transformer}.recompute_num_layers", *sizes),
        "moe_dispatch": (budget, micro, *sizes),
        "weights": (f"{keys.megatron}.param_offload", *sizes),
        "grads": (f"{keys.megatron}.param_offload", *sizes),
    }


def _keys(est: Estimate) -> TrainedKeys:
    """The keys of the model an estimate trains (the fixes name them)."""
    return SFT_KEYS if est.inputs.sft else ACTOR_KEYS


# How realistic a fix is, most first: the message offers the realistic ones before the ones that cost more.
CHEAP = 0  # costs little speed: offload outside the phase, sleep the engine, a mild reservation cut
SLOWER = 1  # costs step time or changes the layout: CPU optimizer, recompute, smaller micro-batches, TP/PP/EP
LAST_RESORT = 2  # a reservation cut leaving the engine under half of today's KV cache: generation slows most

#: What is known of the estimate's accuracy, said in every message (docs/estimates.md, "Accuracy").
ACCURACY = (
    "The estimate is formulas, not yet compared with measured peaks beyond incident 3, whose out-of-memory at the "
    "first optimizer step it reproduces (docs/estimates.md#accuracy)"
)


class Fix(NamedTuple):
    """One change that shrinks the device memory of a phase."""

    text: str
    savings: tuple[float, ...]  # bytes it saves at each moment of the phase, in timeline order
    terms: frozenset[str]  # the terms it shrinks: two fixes of one term do not add up
    realism: int  # CHEAP, SLOWER or LAST_RESORT


class Reservation(NamedTuple):
    """What a lower `gpu_memory_utilization` can give back in a phase. Never below `floor`, the least that starts
    the engine: its weights and the KV cache of one `rollout.sequence_tokens` sequence (`rollout_engine.py`). A cut
    that keeps at least half of today's KV cache is cheap; a deeper one is the last resort, since the engine then
    holds fewer sequences at once and generation slows most."""

    current: float
    floor: float
    engine_weights: float  # bytes
    hbm: float  # bytes
    sequence_tokens: int
    holds: tuple[bool, ...]  # which moments of the phase hold the engine's reservation

    def cut_for(self, needs: tuple[float, ...]) -> float | None:
        """The highest utilization (two decimals) that takes `needs` off the phase's moments; None when a moment
        over budget does not hold the engine, or the value would be below the floor."""
        if any(need > 0 and not holds for need, holds in zip(needs, self.holds, strict=True)):
            return None
        need = max((n for n, holds in zip(needs, self.holds, strict=True) if holds), default=0.0)
        target = math.floor((self.current * self.hbm - need) / self.hbm * 100) / 100
        return target if self.floor <= target < self.current else None

    def kv_cache(self, utilization: float) -> float:
        return utilization * self.hbm - self.engine_weights

    def fix(self, target: float) -> Fix:
        text = f"`{ROLLOUT}.gpu_memory_utilization: {target:.2f}`"
        mild = self.kv_cache(target) >= self.kv_cache(self.current) / 2
        if not mild:
            text += (
                f" (leaves the engine {gib_text(self.kv_cache(target))} of KV cache, "
                f"{gib_text(self.kv_cache(self.current))} today; below {self.floor:.2f} it cannot hold its weights "
                f"and one {self.sequence_tokens}-token sequence)"
            )
        saving = (self.current - target) * self.hbm
        savings = tuple(saving if holds else 0.0 for holds in self.holds)
        return Fix(text, savings, frozenset({"rollout"}), CHEAP if mild else LAST_RESORT)


class Overrun(NamedTuple):
    """A phase over budget: its moments (timeline order), the one the message names -- the first over the HBM, else
    the first over 90% of it, where the run would stop or come close -- and the fixes, most realistic first."""

    phase: str
    moments: tuple[Moment, ...]
    named: Moment
    needs: tuple[float, ...]  # bytes each moment must lose to get under 90% of the HBM (<= 0: none)
    fixes: tuple[Fix, ...]  # the reservation cut among them only where it is enough alone
    reservation: Reservation | None  # None: the phase holds no rollout engine
    over_hbm: bool

    def enough(self, fix: Fix) -> bool:
        return all(saving >= need for saving, need in zip(fix.savings, self.needs, strict=True) if need > 0)

    @property
    def first_choice(self) -> str | None:
        """The most realistic fix that alone brings every moment of the phase under 90%; None when none does."""
        return next((f.text for f in self.fixes if self.enough(f)), None)


def overruns(est: Estimate) -> list[Overrun]:
    """Every phase whose device memory goes over 90% of the HBM at some moment, in the order a run reaches them."""
    hbm, line = est.hbm_bytes, WARN_FRACTION * est.hbm_bytes
    out = []
    for phase in dict.fromkeys(m.phase for m in est.timeline):
        indexed = [(i, m) for i, m in enumerate(est.timeline) if m.phase == phase]
        moments = tuple(m for _, m in indexed)
        over = [m for m in moments if m.total > line]
        if not over:
            continue
        named = next((m for m in over if m.total > hbm), over[0])
        needs = tuple(m.total - line for m in moments)
        reservation = _reservation(est, moments)
        fixes = phase_fixes(est, phase, indexed)
        cut = reservation.cut_for(needs) if reservation else None
        if reservation is not None and cut is not None:
            fixes = tuple(sorted((*fixes, reservation.fix(cut)), key=_realism))
        out.append(Overrun(phase, moments, named, needs, fixes, reservation, named.total > hbm))
    return out


def _realism(fix: Fix) -> tuple[int, float]:
    return fix.realism, -max(fix.savings)


def _reservation(est: Estimate, moments: tuple[Moment, ...]) -> Reservation | None:
    holds = tuple(bool(m.terms["rollout"]) for m in moments)
    if not any(holds):
        return None
    p, total = est.inputs, est.params.total
    floor = math.ceil(minimum_engine_bytes(p, total) / est.hbm_bytes * 100) / 100
    return Reservation(
        p.rollout.gpu_memory_utilization,
        floor,
        engine_weights_bytes(p, total),
        est.hbm_bytes,
        p.rollout.sequence_tokens,
        holds,
    )


def phase_fixes(est: Estimate, phase: str, indexed: list[tuple[int, Moment]]) -> tuple[Fix, ...]:
    """The changes that shrink `phase` at its moments (`indexed`: (timeline index, moment)), most realistic first,
    then by saving. Only the settings verl and Megatron take; the rollout reservation is never cut below what
    starts the engine (`rollout_engine.minimum_engine_bytes`)."""
    p = est.inputs
    actor, keys = p.actor, _keys(est)
    found: list[Fix] = []

    def add(text: str, realism: int, terms: tuple[str, ...], saving) -> None:
        savings = tuple(float(saving(i, m)) for i, m in indexed)
        if any(s > 0 for s in savings):
            found.append(Fix(text, savings, frozenset(terms), realism))

    opt = actor.optimizer
    if opt is not None and not (opt.cpu_offload and opt.fraction >= 1.0 and opt.precision_aware):
        add(
            (
                f"Megatron's optimizer CPU offload (`+{keys.override_optim}.optimizer_cpu_offload: true`, "
                f"`+{keys.override_optim}.optimizer_offload_fraction: 1.0`, "
                f"`+{keys.override_optim}.use_precision_aware_optimizer: true`)"
            ),
            SLOWER,
            ("optimizer",),
            lambda i, m: m.terms["optimizer"],
        )
    if phase == "rollout":
        if not actor.param_offload:
            add(
                f"`{ACTOR}.megatron.param_offload: true` (weights and grads to host while rolling out)",
                CHEAP,
                ("weights", "grads"),
                lambda i, m: m.terms["weights"] + m.terms["grads"],
            )
        if not actor.optimizer_offload:
            add(
                f"`{ACTOR}.megatron.optimizer_offload: true` (optimizer state to host while rolling out)",
                CHEAP,
                ("optimizer",),
                lambda i, m: m.terms["optimizer"],
            )
        add("`critic.megatron.param_offload: true`", CHEAP, ("critic_weights",), _critic_resident)
    else:
        add(
            f"`{ROLLOUT}.free_cache_engine: true` (the rollout engine sleeps while training)",
            CHEAP,
            ("rollout",),
            lambda i, m: m.terms["rollout"],
        )
    if phase == "train" and actor.recompute.granularity != "full":
        recomputed = train_activations(
            p.model, actor.layout, actor.sp, actor.train_tokens, Recompute("full", "uniform", 1), entropy=actor.entropy
        )
        add(
            (
                f"full recompute (`{keys.transformer}.recompute_granularity: full`, `recompute_method: uniform`, "
                "`recompute_num_layers: 1`)"
            ),
            SLOWER,
            ("activations", "backward_working"),
            lambda i, m: m.terms["activations"] + m.terms["backward_working"] - recomputed.layers - recomputed.working,
        )
    if phase in ("train", "logprob"):
        add(
            f"half the tokens per micro-batch (now {actor.token_source})",
            SLOWER,
            STEP_TRANSIENT_TERMS,
            lambda i, m: sum(m.terms[t] for t in STEP_TRANSIENT_TERMS) / 2,
        )
    for text, relaid in _layouts(est):
        add(
            text,
            SLOWER,
            ("layout", "weights", "grads", "optimizer"),
            lambda i, m, relaid=relaid: m.total - relaid.timeline[i].total,
        )
    add("`actor_rollout_ref.ref.megatron.param_offload: true`", CHEAP, ("ref_weights",), _ref_resident)
    add(
        "half HCCL_BUFFSIZE (2 x HCCL_BUFFSIZE of HBM per communicator)",
        SLOWER,
        ("comm_buffers",),
        lambda i, m: m.terms["comm_buffers"] / 2,
    )
    return tuple(sorted(found, key=_realism))


def _critic_resident(index: int, moment: Moment) -> float:
    return moment.terms["critic_weights"] + moment.terms["critic_grads"]


def _ref_resident(index: int, moment: Moment) -> float:
    return moment.terms["ref_weights"]


def _layouts(est: Estimate) -> list[tuple[str, Estimate]]:
    """The actor with twice the TP, EP or PP on the same devices, where Megatron takes it (TP within a node, the
    heads, query groups and FFN split evenly, the world still divides the layout, the layers split over the
    stages): each with its estimate, whose timeline gives the saving at every moment (DP shrinks, so the
    distributed optimizer's shard grows: the whole estimate, not a share of one term)."""
    p = est.inputs
    m, layout = p.model, p.actor.layout
    candidates = []
    tp = layout.tp * 2
    if (
        tp <= p.devices_per_node
        and m.num_attention_heads % tp == 0
        and (m.is_mla or m.num_query_groups % tp == 0)
        and m.ffn_hidden_size % tp == 0
    ):
        candidates.append(("tensor_model_parallel_size", layout._replace(tp=tp)))
    if m.is_moe and m.num_experts % (layout.ep * 2) == 0:
        candidates.append(("expert_model_parallel_size", layout._replace(ep=layout.ep * 2)))
    pp = layout.pp * 2
    if m.num_layers % (pp * (layout.vpp or 1)) == 0:
        candidates.append(("pipeline_model_parallel_size", layout._replace(pp=pp)))
    out = []
    for name, relaid in candidates:
        if not divides(relaid, m.is_moe):
            continue
        new = estimate(p._replace(actor=p.actor._replace(layout=relaid)))
        size = getattr(relaid, {"tensor_model_parallel_size": "tp", "expert_model_parallel_size": "ep"}.get(name, "pp"))
        out.append((f"`{_keys(est).megatron}.{name}: {size}` (dp {relaid.dp})", new))
    return out


def advice(overrun: Overrun) -> str:
    """The fixes that alone bring every moment of the phase under 90% of the HBM, most realistic first (three at
    most). Else a combination: fixes in order of realism (two on one term counted once) until the rest is a cheap
    reservation cut or nothing, the cut sized to what the others leave; else the biggest ones and more devices."""
    enough = [f.text for f in overrun.fixes if overrun.enough(f)]
    if enough:
        return enough[0] if len(enough) == 1 else "most practical first, any one of " + "; ".join(enough[:3])
    res = overrun.reservation
    worst = max(range(len(overrun.needs)), key=lambda i: overrun.needs[i])
    remaining = overrun.needs
    chosen: list[Fix] = []
    shrunk: set[str] = set()

    def closing_cut(needs: tuple[float, ...]) -> Fix | None:
        target = res.cut_for(needs) if res is not None else None
        return res.fix(target) if res is not None and target is not None else None

    for fix in overrun.fixes:
        cut = closing_cut(remaining)
        if all(n <= 0 for n in remaining) or (cut is not None and cut.realism == CHEAP):
            break
        if fix.terms & shrunk:
            continue
        chosen.append(fix)
        shrunk |= fix.terms
        remaining = tuple(n - s for n, s in zip(remaining, fix.savings, strict=True))
    cut = closing_cut(remaining) if any(n > 0 for n in remaining) else None
    parts = "; ".join(f"{f.text} (-{gib_text(f.savings[worst])})" for f in (*chosen, *([cut] if cut else [])))
    if all(n <= 0 for n in remaining) or cut is not None:
        return f"no single change is enough; together: {parts}"
    if not chosen:
        return "more devices"
    return f"more devices; the changes the linter knows are not enough even together: {parts}"


@rule(
    "MEM001",
    "device-memory-exceeds-hbm",
    Severity.ERROR,
    part=(Part.WORKERS, Part.SFT),
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
    table), follows them in the order a run reaches them, and reports every phase that goes over the HBM the
    runtime reports for the accelerator (`schemas/devices.json` `usable_hbm_gib`, e.g. 60.96 GiB of a 64 GiB Ascend
    910B3) -- an error -- or over 90% of it -- a warning -- all in one run, each at the first point of the run where
    it happens, so that fixing one phase does not reveal the next in another lint round.

    `rollout`: the rollout engine takes `gpu_memory_utilization` x that HBM while the trainer keeps its weights and
    fp32 main grads (unless `megatron.param_offload`) and its optimizer state (unless `megatron.optimizer_offload`).
    `logprob`: the old- and ref-log-prob forward passes. `train`: the actor update, optimizer step included -- verl
    loads everything it offloaded back, so only Megatron's own `optimizer_cpu_offload` /
    `optimizer_offload_fraction` take Adam's state off the device. Adam's moments are created at the first
    `optimizer.step()`: step 1's rollout and forward/backward hold only the fp32 master part, so a plan that runs
    out at the first optimizer step gets through a complete rollout first (incident 3: the 30B MoE on 8 devices).
    The optimizer state is sharded over DP x CP (dense) and expert-DP (experts) by the distributed optimizer;
    activations follow the recompute mode and the micro-batch or dynamic-bsz token budget, with the backward
    working set, the MoE dispatcher buffers and the logits' fp32 working set; Ascend adds 2 x HCCL_BUFFSIZE per
    communicator.

    One cause, one finding: phases whose most realistic sufficient fix is the same change are one finding (at the
    first phase's knob, the others' as related locations); phases that need different changes are a finding each.
    Each names the phase and the point in the run, its biggest term, and the changes that alone bring every moment
    of the phase under 90%, most realistic first: settings that cost little speed (verl's offload outside the
    phase, `free_cache_engine`, a reservation cut that keeps at least half of the engine's KV cache), then those
    that cost step time or change the layout (Megatron's CPU optimizer, full recompute, smaller micro-batches,
    twice the TP -- within a node --, EP or PP where Megatron takes it), and last a reservation cut deeper than
    that. `gpu_memory_utilization` is never proposed below the least that starts the engine: its bf16 weights over
    the rollout TP plus the KV cache of one sequence of `rollout.max_model_len` (else prompt + response) tokens, the
    minimum vLLM accepts. When no single change is enough, the most realistic combination is named, changes of one
    term counted once.

    The accelerator is the one named (--accelerator, the recipe's `hardware.accelerator`, `[tool.sapo-lint]
    accelerator`, each a name or one per device kind), else the one assumed for the variant's device kind
    (ascend-910b3 for NPU, nvidia-h100 for GPU), which the message then says: on an assumed accelerator a phase is
    an error only when no accelerator of that kind in `schemas/devices.json` has enough memory for it (the verdict
    holds whichever it is), else a warning. Not counted: allocator fragmentation -- hence the warning above 90%.
    The message states what is known of the estimate's accuracy: it has not been compared with measured peaks
    beyond incident 3 (docs/estimates.md, "Accuracy").

    An SFT trainer on the Megatron engine (`verl.trainer.sft_trainer`, `sft_trainer_ray`) trains one model with no
    rollout engine, reference model or critic: its one phase is the update, read from sft_trainer_engine's own keys
    (`engine.*` sizes, offload and `override_transformer_config`, `optim.override_optimizer_config`, the
    `data.use_dynamic_bsz` / `data.max_token_len_per_gpu` / `data.micro_batch_size_per_gpu` micro-batching over
    `data.max_length`-token samples), with the same terms and moments (step 1's forward/backward, the first
    optimizer step, the steady state); the fixes name those keys. Its devices are torchrun's
    (`--nproc_per_node` x `--nnodes`; sft_trainer_ray's `trainer.nnodes` x `trainer.n_gpus_per_node`).

    When the parallel layout cannot start (the world size does not divide it, more pipeline chunks than layers, a
    size below 1: TP001, TP002, TP007, TP008, TP014 report it) there is no run to estimate; an info then says that
    device and host memory and the checkpoint were not checked, once, so that a clean MEM/CK result is never read
    as a pass. To compare with a run: verl's `perf/max_memory_allocated_gb` is the peak since the process started
    (verl never resets the peak counter), init and weight-export transients included."""
    est = runnable_estimate(ctx)
    if est is None:
        reason = layout_error(ctx)
        if reason is not None:
            yield Finding(
                ctx.blame(*_sizes(trained_keys(ctx)), *world_keys(ctx)),
                f"memory not checked: {reason}, so there is no run to estimate; MEM001, MEM002, CK001 and CK002 "
                "check it once the layout is fixed",
                severity=Severity.INFO,
            )
        return
    if not est.inputs.hbm_gib:  # no accelerator: the name given is unknown (RF006 says so)
        return
    found = overruns(est)
    if not found:
        return
    p = est.inputs
    layout, blame = p.actor.layout, blame_keys(trained_keys(ctx))
    shape = (
        f"TP{layout.tp} PP{layout.pp} CP{layout.cp}"
        + (f" EP{layout.ep} ETP{layout.expert_tp}" if p.model.is_moe else "")
        + f", dp {est.dp}"
        + (f", edp {est.edp}" if p.model.is_moe else "")
    )
    nominal = f" ({p.nominal_hbm_gib:g} GiB nominal)" if p.nominal_hbm_gib and p.nominal_hbm_gib != p.hbm_gib else ""
    largest = _largest_of_kind(p.accelerator) if p.accelerator_assumed else None
    on_largest = estimate(p._replace(hbm_gib=largest.usable_hbm_gib)) if largest else None
    groups: dict[str, list[Overrun]] = {}
    for index, overrun in enumerate(found):
        groups.setdefault(overrun.first_choice or f"#{index}", []).append(overrun)
    for members in groups.values():
        group = sorted(members, key=lambda o: not o.over_hbm)  # stable: timeline order within each verdict
        first = group[0]
        term, size = max(first.named.terms.items(), key=lambda kv: kv[1])
        severity = None if any(o.over_hbm for o in group) else Severity.WARNING
        assumed = ""
        if largest is not None and on_largest is not None:
            still_over = [o for o in group if o.over_hbm and _over_on(on_largest, o.phase, largest.usable_hbm_gib)]
            if still_over:
                assumed = (
                    f" {p.accelerator} is assumed (none is named), but no accelerator of its kind that sapo-lint knows "
                    f"has enough ({largest.name}: {largest.usable_hbm_gib:g} GiB)."
                )
            else:
                severity = Severity.WARNING
                # Not why it was assumed (that differs between variants that share the finding; `explain` says it).
                assumed = (
                    f" {p.accelerator} is assumed (none is named), hence a warning: name yours with --accelerator, "
                    "`hardware.accelerator` or `[tool.sapo-lint] accelerator`."
                )
        also = ""
        if len(group) > 1:
            also = (
                " Also "
                + "; ".join(
                    f"{o.named.label}: {gib_text(o.named.total)} ({'over' if o.over_hbm else 'over 90% of'} the HBM)"
                    for o in group[1:]
                )
                + f". One change fixes {'both' if len(group) == 2 else 'all of them'}."
            )
        yield Finding(
            ctx.blame(*blame.get(term, ()), *world_keys(ctx)),
            f"{first.named.label}: estimated {gib_text(first.named.total)} per device {_verdict(first)} the "
            f"{p.hbm_gib:g} GiB the runtime reports for {p.accelerator}{nominal} ({p.model.name} on {est.world} "
            f"devices, {shape}); biggest term: {term} {gib_text(size)}.{also} Fix: {advice(first)}.{assumed} "
            f"{ACCURACY}; `sapo-lint explain` shows every term",
            severity=severity,
            related=tuple(_location(ctx.blame(*blame.get(_biggest(o.named), ()), *world_keys(ctx))) for o in group[1:]),
        )


def _verdict(overrun: Overrun) -> str:
    return "exceeds" if overrun.over_hbm else f"is over {WARN_FRACTION:.0%} of"


def _location(at) -> Location:
    """The location of what `LintContext.blame` returns (an override, or a location already)."""
    return getattr(at, "location", at)


def _biggest(moment: Moment) -> str:
    return max(moment.terms.items(), key=lambda kv: kv[1])[0]


def _over_on(est: Estimate, phase: str, hbm_gib: float) -> bool:
    """Whether `phase` goes over `hbm_gib` at some moment of `est`."""
    return any(m.total > hbm_gib * GIB for m in est.timeline if m.phase == phase)


def _largest_of_kind(name: str) -> Accelerator:
    """The accelerator with the most memory of the same kind (NPU/GPU) as `name`."""
    table = accelerators()
    return max((a for a in table.values() if a.device == table[name].device), key=lambda a: a.usable_hbm_gib)
