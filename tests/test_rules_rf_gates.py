"""RF013: a gate the run can never judge (too few steps or validations for it, a warm-up past the last step, a metric
the chosen config never logs) is reported at the gate, per variant; what the linter cannot know is not."""

import json
import subprocess

import pytest

from sapo_toolkit.launcher.gates import Gate, evaluate
from sapo_toolkit.launcher.metrics import MetricTable
from sapo_toolkit.linter.core.gates import MIN_TREND_READINGS

from .helpers import only, recipe

BASE = """overrides:
  algorithm.adv_estimator: {estimator}
  trainer.total_training_steps: {steps}
  trainer.test_freq: {test_freq}
gates:
  - {gate}
"""


def rf013(lint_text, gate, steps=20, estimator="grpo", test_freq=-1, extra=""):
    body = BASE.format(gate=gate, steps=steps, estimator=estimator, test_freq=test_freq) + extra
    return [d.message for d in only(lint_text(body), "RF013")]


@pytest.mark.parametrize(
    "gate, steps, reason",
    [
        ("{metric: critic/rewards/mean, trend: rising}", 7, "needs 8 readings after step 0, but the run has at most 7"),
        ("{metric: critic/rewards/mean, trend: rising, after_step: 12}", 19, "so at most 7 readings"),
        ("{metric: critic/rewards/mean, trend: falling, window: 6}", 11, "needs 12 readings"),
        ("{metric: perf/throughput, min: 1, over: last 10}", 9, "needs 10 readings"),
        ("{metric: perf/throughput, min: 1, after_step: 20}", 20, "after_step 20 is at or past the last step"),
        ("{metric: val-core/openai/gsm8k/acc/mean@1, min: 0.1}", 20, "at most 0 validations (trainer.test_freq=-1)"),
    ],
)
def test_a_gate_the_run_is_too_short_for(lint_text, gate, steps, reason):
    (message,) = rf013(lint_text, gate, steps)
    assert reason in message


@pytest.mark.parametrize(
    "gate, steps",
    [
        ("{metric: critic/rewards/mean, trend: rising}", 8),
        ("{metric: critic/rewards/mean, trend: rising, after_step: 12}", 20),
        ("{metric: critic/rewards/mean, trend: falling, window: 6}", 12),
        ("{metric: perf/throughput, min: 1, over: last 10}", 10),
        ("{metric: perf/throughput, min: 1, after_step: 19}", 20),
    ],
)
def test_a_gate_the_run_is_long_enough_for(lint_text, gate, steps):
    assert rf013(lint_text, gate, steps) == []


def test_the_minimum_is_the_one_the_launcher_judges_with():
    """Just enough readings for RF013 are enough for the launcher's verdict, one fewer is `no data`."""
    gate = Gate("m", trend="rising")
    for n, status in ((MIN_TREND_READINGS, "passed"), (MIN_TREND_READINGS - 1, "no data")):
        table = MetricTable()
        for step in range(1, n + 1):
            table.add(table.jsonl, (step, {"m": float(step)}))
        assert evaluate([gate], table)[0].status == status


def test_validation_metrics_count_the_steps_that_validate(lint_text):
    gate = "{metric: val-core/openai/gsm8k/acc/mean@1, trend: rising}"
    (message,) = rf013(lint_text, gate, steps=20, test_freq=5)  # steps 5, 10, 15, 20
    assert "at most 4 validations (trainer.test_freq=5)" in message
    (message,) = rf013(lint_text, gate, steps=20, test_freq=3)  # 3, 6, ..., 18 and the last, 20
    assert "at most 7 validations" in message
    assert rf013(lint_text, gate, steps=22, test_freq=3) == []  # and 21, 22
    assert rf013(lint_text, "{metric: val-core/openai/gsm8k/acc/mean@1, min: 0.1}", test_freq=5) == []


def test_critic_metrics_need_a_critic(lint_text):
    for metric in ("critic/values/mean", "critic/vf_loss", "timing_s/update_critic", "perf/mfu/critic"):
        (message,) = rf013(lint_text, f"{{metric: {metric}, max: 10}}")
        assert "logged only when a critic runs" in message and "algorithm.adv_estimator grpo" in message
        assert rf013(lint_text, f"{{metric: {metric}, max: 10}}", estimator="gae") == []
        assert rf013(lint_text, f"{{metric: {metric}, max: 10}}", extra="  critic.enable: true\n") == []
    for metric in ("critic/rewards/mean", "critic/score/mean", "critic/advantages/max", "my_reward/custom"):
        assert rf013(lint_text, f"{{metric: {metric}, max: 10}}") == []


def test_what_the_linter_cannot_know_is_not_reported(lint_text):
    epochs_only = "overrides:\n  trainer.total_epochs: 1\ngates:\n  - {metric: critic/rewards/mean, trend: rising}\n"
    assert only(lint_text(epochs_only), "RF013") == []  # the steps depend on the dataset's size
    unresolved = (
        "overrides:\n  algorithm.adv_estimator: ${oc.env:ESTIMATOR}\ngates:\n  - {metric: critic/vf_loss, max: 1}\n"
    )
    assert only(lint_text(unresolved), "RF013") == []


def test_reported_per_variant_and_through_the_console_script(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(
        recipe(
            "overrides:\n  trainer.total_training_steps: 100\n"
            "variants:\n  length:\n    long: {}\n    quick: {overrides: {trainer.total_training_steps: 4}}\n"
            "gates:\n  - {metric: critic/rewards/mean, trend: rising}\n"
        )
    )
    run = ["sapo-lint", "--select", "RF013", "--format", "json", str(path)]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=120, check=False)
    (found,) = json.loads(proc.stdout)["diagnostics"]
    assert proc.returncode == 0 and found["variant"] == "LENGTH=quick" and found["line"] == 12
    strict = subprocess.run([*run, "--warnings-as-errors"], capture_output=True, text=True, timeout=120, check=False)
    assert strict.returncode == 1
