from __future__ import annotations

from ..core.diagnostics import Severity
from ..core.gates import GateNeeds
from ..engine import LintContext
from ..rulekit.registry import Finding, rule

STEPS, TEST_FREQ = "trainer.total_training_steps", "trainer.test_freq"
# compute_data_metrics logs these under `critic/` with or without a critic (verl/trainer/ppo/metric_utils.py)
DATA_METRICS = ("critic/score/", "critic/rewards/", "critic/advantages/", "critic/returns/")
# What only a critic's steps log: its values and update (`timing_s/values`, `timing_s/update_critic`, and their
# per-token times) and its MFU
CRITIC_TIMERS = ("values", "update_critic")
VALIDATION = ("val-core/", "val-aux/")


@rule(
    "RF013",
    "gate-cannot-be-judged",
    Severity.WARNING,
    summary="a gate the run can never judge: too few steps for it, a warm-up past the last step, or a metric this "
    "config never logs",
    bad="""
    overrides:
      algorithm.adv_estimator: grpo
      trainer.total_training_steps: 5
    gates:
      - {metric: critic/rewards/mean, trend: rising}
    """,
    good="""
    overrides:
      algorithm.adv_estimator: grpo
      trainer.total_training_steps: 5
    gates:
      - {metric: critic/rewards/mean, min: 0, max: 1}
    """,
)
def check(ctx: LintContext):
    """A gate is judged on the readings of its metric after `after_step`, one per training step, and verl runs at
    most `trainer.total_training_steps` steps, numbered from 1 (verl/trainer/ppo/v1/trainer_base.py: the loop stops
    at that step, or earlier when `total_epochs` run out of data). A trend (`rising`/`falling`/`flat`) needs at
    least 8 readings and two `window`s of them, a `last N` bound N, any other bound one; fewer is `no data`, which
    never passes, so with `--fail-on-gates` the run fails however it went. Reported when the run cannot give the
    gate its readings: more than `total_training_steps - after_step` needed, an `after_step` at or past the last
    step, or validation metrics (`val-core/...`, `val-aux/...`, logged only at the steps where `trainer.test_freq`
    validates, and at the last; validation before training is step 0, which no gate counts) on too few of them.
    When only `total_epochs` bounds the run its length depends on the dataset's size, which the linter does not
    read: nothing is reported then. And when the metric is one this config never logs: without a critic (verl's
    `need_critic`: `critic.enable`, or when unset `algorithm.adv_estimator: gae`), `critic/values/*`,
    `critic/vf_explained_var`, the critic update's `critic/...` metrics, `perf/mfu/critic` and the critic's timings
    never appear, while `critic/score`, `critic/rewards`, `critic/advantages` and `critic/returns` are logged for
    every estimator. Other metric names are not judged: a custom reward or trainer may log anything."""
    steps = ctx.number(STEPS)
    critic = _runs_critic(ctx)
    for gate in ctx.command.gates if ctx.command else ():
        if critic is False and _needs_critic(gate.metric):
            yield Finding(
                gate.location,
                f"`{gate.metric}` is logged only when a critic runs, and this config runs none (critic.enable "
                f"{ctx.config.value('critic.enable')}, algorithm.adv_estimator "
                f"{ctx.config.value('algorithm.adv_estimator')}): the gate gets no reading. Gate on a metric every "
                "run logs (critic/rewards/mean, critic/score/mean, perf/throughput)",
            )
        elif steps is not None:
            found = _too_few(ctx, gate, steps)
            if found:
                yield Finding(gate.location, found)


def _runs_critic(ctx: LintContext) -> bool | None:
    """verl's `need_critic`, where the config decides it (None: an interpolation or `???` leaves it open)."""
    enable = ctx.config.value("critic.enable")
    if isinstance(enable, bool):
        return enable
    estimator = ctx.config.value("algorithm.adv_estimator")
    if enable is not None or not isinstance(estimator, str) or "${" in estimator or estimator == "???":
        return None
    return estimator == "gae"


def _needs_critic(metric: str) -> bool:
    if metric.startswith("critic/"):
        return not metric.startswith(DATA_METRICS)
    head, _, timer = metric.partition("/")
    return metric == "perf/mfu/critic" or (head in ("timing_s", "timing_per_token_ms") and timer in CRITIC_TIMERS)


def _too_few(ctx: LintContext, gate: GateNeeds, steps: int) -> str | None:
    """Why a run of at most `steps` steps cannot give the gate its readings, or None."""
    what = f"`{gate.metric}`" + (f" {gate.trend}" if gate.trend else "")
    run = f"the run has at most {steps} steps ({STEPS}={steps})"
    if gate.after_step >= steps:
        return f"{what}: after_step {gate.after_step} is at or past the last step: {run}, so no reading counts"
    at = range(gate.after_step + 1, steps + 1)
    unit, advice = "readings", "run more steps" + (" or lower after_step" if gate.after_step else "")
    if gate.metric.startswith(VALIDATION):
        every = ctx.number(TEST_FREQ)
        if every is None:
            return None
        at = [s for s in at if every > 0 and (s % every == 0 or s == steps)]
        unit, advice = f"validations ({TEST_FREQ}={every})", f"validate more often ({TEST_FREQ})"
    if len(at) >= gate.readings:
        return None
    return (
        f"{what} needs {gate.readings} readings after step {gate.after_step}, but {run}, so at most {len(at)} "
        f"{unit}: the gate can never pass. {advice.capitalize()}, or gate on a bound (min/max)"
    )
