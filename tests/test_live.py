"""The live view and live gates: with the stand-in trainer through `sapo-launch` (not a TTY: plain lines on stderr,
the trainer's stdout unchanged), the run sequence with `fail_on_gates=True`, metrics.jsonl completed from the
console, the plain view's pacing, and the rich view on a TTY."""

import io
import json
import re
import sys
from pathlib import Path

import pytest

from sapo_toolkit.launcher.execution import run
from sapo_toolkit.launcher.executors.local import LocalExecutor
from sapo_toolkit.launcher.gates import EXIT_GATES_FAILED, parse_gates
from sapo_toolkit.launcher.live import PLAIN_INTERVAL_S, LiveMonitor
from sapo_toolkit.launcher.plan import FILE_LOGGER_ENV, LintReport, Plan

from .helpers import REPO, launch
from .test_launch_local import fake_recipe, only_run_dir

FLOOR = "perf/throughput >= 100 (every, after 0)"
RISING = "critic/rewards/mean rising (after 0)"
GATES = "gates:\n  - {metric: perf/throughput, min: 100}\n  - {metric: critic/rewards/mean, trend: rising}\n"


def test_live_gate_and_plain_progress_through_sapo_launch(tmp_path):
    recipe = fake_recipe(
        tmp_path, {"FAKE_STEPS": 4, "FAKE_DIP_STEP": 2}, overrides="  trainer.total_training_steps: 4\n"
    )
    recipe.write_text(recipe.read_text() + GATES)
    proc = launch(tmp_path, recipe)
    assert proc.returncode == 0, proc.stderr  # gates report; only --fail-on-gates turns them into an exit code
    assert proc.stderr.count("gate failed at step 2") == 1
    assert f"sapo-launch: gate failed at step 2: {FLOOR}: perf/throughput = 50\n" in proc.stderr
    # The first step seen (the file logger's JSONL may be ahead of the console), then the last one at the end.
    progress = re.findall(
        r"^sapo-launch: step (\d)/4 \(\d+%\).*, perf/throughput \d+, critic/rewards/mean [\d.]+$", proc.stderr, re.M
    )
    assert 1 <= len(progress) <= 2 and progress[-1] == "4"
    assert f"sapo-launch: gate failed: {FLOOR}: 1 of 4 readings break" in proc.stderr
    assert proc.stderr.index("gate failed at step 2") < proc.stderr.index("gate failed: ")  # live, then at the end
    assert f"sapo-launch: gate no data: {RISING}: 4 finite readings" in proc.stderr
    run_dir = only_run_dir(tmp_path)
    assert proc.stdout == (run_dir / "train.log").read_text()  # the trainer's output, untouched
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["gates"][FLOOR]["violating_steps"] == [2] and summary["gates"][FLOOR]["passed"] is False
    assert summary["gates"][RISING]["status"] == "no data"


def fake_plan(tmp_path: Path, gates: list, env: dict) -> tuple[Plan, Path]:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {**{k: str(v) for k, v in env.items()}, FILE_LOGGER_ENV: str(run_dir / "metrics.jsonl")}
    plan = Plan(
        "fake.yaml",
        "fake",
        None,
        None,
        (sys.executable, "-m", "tests.fake_trainer"),
        tuple(env.items()),
        str(REPO),
        str(run_dir),
        LintReport(()),
        {},
        "0" * 64,
        (),
        total_steps=int(env["FAKE_STEPS"]),
        gates=tuple(gates),
    )
    return plan, run_dir


@pytest.mark.parametrize(
    "trainer_code,fail_on_gates,dip,expected",
    [(0, True, 2, EXIT_GATES_FAILED), (0, False, 2, 0), (0, True, 0, 0), (4, True, 2, 4)],
)
def test_fail_on_gates_exit_code(tmp_path, capsys, trainer_code, fail_on_gates, dip, expected):
    plan, run_dir = fake_plan(
        tmp_path,
        [{"metric": "perf/throughput", "min": 100}],
        {"FAKE_STEPS": 3, "FAKE_DIP_STEP": dip, "FAKE_EXIT_CODE": trainer_code},
    )
    assert run(LocalExecutor(), plan, run_dir, terminal=io.BytesIO(), fail_on_gates=fail_on_gates) == expected
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["exit_code"] == expected
    assert summary["status"] == ("succeeded" if trainer_code == 0 else "failed")
    assert summary["gates"][FLOOR]["passed"] is (dip == 0)


def test_metrics_file_from_the_console_when_verl_writes_none(tmp_path, capsys):
    plan, run_dir = fake_plan(tmp_path, [], {"FAKE_STEPS": 3, "FAKE_FILE_LOGGER": 0})
    assert run(LocalExecutor(), plan, run_dir, terminal=io.BytesIO()) == 0
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["source"], r["data"]["perf/throughput"]) for r in records] == [
        (1, "console", 101.0),
        (2, "console", 102.0),
        (3, "console", 103.0),
    ]


def test_bad_gates_in_a_plan_start_nothing(tmp_path, capsys):
    plan, run_dir = fake_plan(tmp_path, [{"metric": "x", "min": 1, "over": "avg"}], {"FAKE_STEPS": 1})
    assert run(LocalExecutor(), plan, run_dir, terminal=io.BytesIO()) == 2
    assert "gates.0.over" in capsys.readouterr().err
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "refused"
    assert not (run_dir / "metrics.jsonl").exists()


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plain_view_paces_its_lines(tmp_path):
    clock, messages, terminal = Clock(), io.StringIO(), io.BytesIO()
    monitor = LiveMonitor(tmp_path / "metrics.jsonl", 10, (), terminal, messages, clock)
    for step in range(1, 11):
        clock.now = step * 10.0
        monitor.output(f"step:{step} - perf/throughput:{step}.5\n".encode())
    monitor.finish()
    shown = [line.split(",")[0] for line in messages.getvalue().splitlines()]
    # The first step, then at most every PLAIN_INTERVAL_S (steps are 10 s apart), then the last.
    assert PLAIN_INTERVAL_S == 30.0 and shown == [
        "sapo-launch: step 1/10 (10%)",
        "sapo-launch: step 4/10 (40%)",
        "sapo-launch: step 7/10 (70%)",
        "sapo-launch: step 10/10 (100%)",
    ]
    assert "step 4/10 (40%), ETA 1m, perf/throughput 4.5" in messages.getvalue()
    assert terminal.getvalue().decode().splitlines()[0] == "step:1 - perf/throughput:1.5"


class FakeTTY(io.BytesIO):
    def isatty(self):
        return True


def test_rich_view_on_a_tty(tmp_path):
    terminal = FakeTTY()
    gates = parse_gates([{"metric": "perf/throughput", "min": 100}])
    monitor = LiveMonitor(tmp_path / "metrics.jsonl", 3, gates, terminal, io.StringIO())
    for line in [
        b"\x1b[36m(TaskRunner pid=1)\x1b[0m hello\n",
        b"step:1 - perf/throughput:150\n",
        b"step:2 - perf/throughput:50\n",
        b"step:3 - perf/throughput:150\n",
    ]:
        monitor.output(line)
    (verdict,) = monitor.finish()
    assert not verdict.passed
    text = terminal.getvalue().decode()
    assert "(TaskRunner pid=1)" in text and "hello" in text  # the trainer's lines, above the bar
    assert "gate failed at step 2" in text and "3/3" in text and "perf/throughput 150" in text
    assert not terminal.closed  # rich's text layer was detached, not closed
