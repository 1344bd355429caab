"""A made-up 100-step verl run with known truths, in verl's two forms: the console log (metric lines as verl's
console logger prints them, among Ray worker prefixes, ANSI colours, tqdm bars and other output) and the `file`
logger's JSONL of the same numbers.

Known truths: `critic/rewards/mean` rises (0.2 -> 0.7 over the run, plus noise); `perf/throughput` stays near 1500
except at step 40 (`DIP_STEP`), where it falls to 60, under the 30B recipe's floor of 100; there is a validation-only
record at step 0, a NaN at step 7 and checkpoints (with `timing_s/save_checkpoint`) every 25 steps.

`python -m tests.synthetic_log` regenerates docs/report-example.md and its plots from this run.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

STEPS = 100
DIP_STEP = 40
DIP_THROUGHPUT = 60.0
SEED = 20250101
ANSI_PREFIX = "\x1b[36m(TaskRunner pid=48213)\x1b[0m "


def step_metrics(step: int, rng: random.Random) -> dict:
    """One training step's metrics, keyed as verl 0.9.1 logs them."""
    timings = {
        "timing_s/gen": rng.gauss(62, 4),
        "timing_s/reward": rng.gauss(2.5, 0.3),
        "timing_s/old_log_prob": rng.gauss(8.5, 0.5),
        "timing_s/ref": rng.gauss(7.2, 0.5),
        "timing_s/adv": rng.gauss(0.4, 0.05),
        "timing_s/update_actor": rng.gauss(24, 1.5),
        "timing_s/update_weights": rng.gauss(3.1, 0.2),
    }
    if step % 25 == 0:
        timings["timing_s/save_checkpoint"] = rng.gauss(41, 2)
    if step == DIP_STEP:
        timings["timing_s/gen"] *= 12  # a straggler rollout: the step that breaks the throughput floor
    timings["timing_s/step"] = sum(timings.values()) + rng.gauss(1.0, 0.1)
    tokens = 2_200_000 + int(rng.gauss(0, 50_000)) + 3000 * step
    return {
        "training/global_step": step,
        "training/epoch": 0,
        "actor/pg_loss": rng.gauss(-0.01, 0.01),
        "actor/entropy": 0.9 - 0.003 * step + rng.gauss(0, 0.01),
        "actor/grad_norm": abs(rng.gauss(0.3, 0.05)),
        "actor/lr": 1e-06,
        "actor/pg_clipfrac": math.nan if step == 7 else abs(rng.gauss(0.002, 0.001)),
        "critic/rewards/mean": 0.2 + 0.5 * step / STEPS + rng.gauss(0, 0.05),
        "critic/score/mean": 0.2 + 0.5 * step / STEPS + rng.gauss(0, 0.05),
        "response_length/mean": 780 + 4.0 * step + rng.gauss(0, 25),
        "response_length/max": 4096,
        "response_length/clip_ratio": abs(rng.gauss(0.02, 0.01)),
        "perf/throughput": DIP_THROUGHPUT if step == DIP_STEP else rng.gauss(1500, 60),
        "perf/total_num_tokens": tokens,
        "perf/time_per_step": timings["timing_s/step"],
        "perf/max_memory_allocated_gb": 51.5 + 0.02 * step + rng.gauss(0, 0.2),
        "perf/max_memory_reserved_gb": 58.0 + 0.02 * step + rng.gauss(0, 0.1),
        **timings,
    }


def records(seed: int = SEED) -> list[tuple[int, dict]]:
    """(step, metrics) in logging order: validation at step 0, then the training steps."""
    rng = random.Random(seed)
    return [(0, {"val-core/openai/gsm8k/reward/mean@1": 0.18})] + [
        (s, step_metrics(s, rng)) for s in range(1, STEPS + 1)
    ]


def console_value(key: str, value) -> str:
    """As `pprint.pformat` prints what verl logs: numpy scalars from the reward and length reductions."""
    if key.startswith(("critic/", "response_length/")) and isinstance(value, float):
        return f"np.float64({value!r})"
    if isinstance(value, int) and key.startswith("perf/total"):
        return f"np.int64({value})"
    return repr(value)


def console_line(step: int, metrics: dict) -> str:
    return " - ".join([f"step:{step}", *(f"{k}:{console_value(k, v)}" for k, v in metrics.items())])


def console_log(seed: int = SEED) -> str:
    """The trainer's stdout and stderr as sapo-launch's train.log holds them."""
    lines = [
        "2025-01-01 00:00:00,000 INFO worker.py:1810 -- Started a local Ray instance.",
        ANSI_PREFIX + "Creating file logger at /runs/synthetic/metrics.jsonl",
        "(WorkerDict pid=48390) [rank0]: WARNING: overlap_param_gather is off",
    ]
    for step, metrics in records(seed):
        bar = f"Training Progress: {step:3d}%|{'#' * (step // 10):<10}| {step}/{STEPS} [00:{step:02d}<01:40, 1.0s/it]"
        prefix = ANSI_PREFIX if step % 3 == 0 else ("(TaskRunner pid=48213) " if step % 3 == 1 else "")
        lines.append(f"{bar}\r{prefix}{console_line(step, metrics)}")
        if step % 10 == 0:
            lines.append(f"(WorkerDict pid=48391) INFO: step {step} saved rollouts [repeated 3x across cluster]")
    return "\n".join(lines) + "\n"


def jsonl_log(seed: int = SEED) -> str:
    """verl's file logger output (orjson writes NaN as null)."""

    def value(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    return "".join(
        json.dumps({"step": s, "data": {k: value(v) for k, v in m.items()}}) + "\n" for s, m in records(seed)
    )


def write_run_dir(
    run_dir: Path, gates: list, *, console: bool = True, jsonl: bool = True, status: str = "succeeded"
) -> Path:
    """A run directory as sapo-launch leaves it (plan.json with the gates, summary.json, train.log, metrics.jsonl)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.json").write_text(json.dumps({"name": "synthetic", "total_steps": STEPS, "gates": gates}))
    (run_dir / "summary.json").write_text(
        json.dumps({"status": status, "exit_code": 0 if status == "succeeded" else 1})
    )
    (run_dir / "train.log").write_text(console_log() if console else "")
    if jsonl:
        (run_dir / "metrics.jsonl").write_text(jsonl_log())
    return run_dir


def regenerate_docs(repo: Path) -> int:
    """docs/report-example.md and its plots: this run, reported against the 30B recipe's gates."""
    import tempfile

    from click.testing import CliRunner

    from sapo_toolkit.launcher.cli.report import report

    doc = repo / "docs" / "report-example.md"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        log.write_text(console_log())
        result = CliRunner().invoke(
            report,
            [
                "--log",
                str(log),
                "--recipe",
                str(repo / "recipes" / "qwen3-30b-a3b-sapo.yaml"),
                "--output",
                str(doc),
                "--title",
                "synthetic 100-step run",
            ],
        )
    sys.stdout.write(result.output)
    if result.exit_code == 0:
        doc.write_text(DOC_NOTE + doc.read_text())
    return result.exit_code


DOC_NOTE = """\
<!-- Generated: `python -m tests.synthetic_log` rewrites this file and its plots. -->
An example of what `sapo-launch report` writes: the console log of a made-up 100-step verl run
(`tests/synthetic_log.py`: the reward rises, the throughput falls to 60 at step 40) judged against the gates of
`recipes/qwen3-30b-a3b-sapo.yaml`, as
`sapo-launch report --log train.log --recipe recipes/qwen3-30b-a3b-sapo.yaml -o docs/report-example.md`.
For a run directory it is `sapo-launch report runs/<run>` (`report.md` and its plots go into the run directory).
Regenerate this page with `python -m tests.synthetic_log`.

"""


if __name__ == "__main__":
    sys.exit(regenerate_docs(Path(__file__).resolve().parent.parent))
