"""A stand-in for verl's trainer in end-to-end launcher tests (`python -m tests.fake_trainer --config-name X ...`).

It prints verl's console metric lines (verl/utils/logger/aggregate_logger.py format), writes verl's `file` logger
JSONL to $VERL_FILE_LOGGER_PATH, and behaves as the environment says: FAKE_STEPS steps, FAKE_SLEEP seconds after
each, then exit with FAKE_EXIT_CODE; with FAKE_CRASH_STEP=N it ends after step N (logged and saved) as a crash does:
a Python exception (exit 1), or the signal FAKE_CRASH_SIGNAL names (KILL: as the out-of-memory killer ends it), so a
run resumed after step N goes on past it. Throughput is 100 + step, except 50 at step FAKE_DIP_STEP; FAKE_FILE_LOGGER=0
writes no JSONL (verl's `file` logger off, or on another node). It prints its argv so tests can see what the
launcher passed. With FAKE_SAVE=1 (verl saves nothing by default: trainer.save_freq -1) it saves to
trainer.default_local_dir as verl does: a DIR/global_step_N folder and the last step in
DIR/latest_checkpointed_iteration.txt after each step; and it resumes as verl's trainer.resume_mode says: `auto`
(verl's default) after the step the tracker names, `resume_path` after the step of trainer.resume_from_path's
`global_step_N` folder, `disable` from the start (`resumed from step N`; `checkpoint dir DIR` first, absolute as it
resolves).
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

CHECKPOINT_KEY = "trainer.default_local_dir"
LATEST = "latest_checkpointed_iteration.txt"  # verl's tracker file (verl/utils/checkpoint/checkpoint_manager.py)


def setting(key: str) -> str | None:
    """The value the last `key=value` argument gives."""
    return next((a.partition("=")[2] for a in reversed(sys.argv[1:]) if a.startswith(f"{key}=")), None)


def resumed_step(checkpoints: Path) -> int:
    """The step verl would resume after, by trainer.resume_mode (ray_trainer.py `_load_checkpoint`); 0: none."""
    mode = setting("trainer.resume_mode") or "auto"
    if mode == "resume_path":
        return int(setting("trainer.resume_from_path").split("global_step_")[-1])
    if mode == "auto" and (checkpoints / LATEST).exists():
        return int((checkpoints / LATEST).read_text())
    return 0


def crash(step: int) -> None:
    """End as a crash at `step` does (module docstring)."""
    name = os.environ.get("FAKE_CRASH_SIGNAL")
    if name:
        os.kill(os.getpid(), signal.Signals[f"SIG{name}"])
    raise RuntimeError(f"the stand-in trainer crashed at step {step}")


def main() -> int:
    print("argv:", json.dumps(sys.argv[1:]), flush=True)
    steps, pause = int(os.environ.get("FAKE_STEPS", "3")), float(os.environ.get("FAKE_SLEEP", "0"))
    dip = int(os.environ.get("FAKE_DIP_STEP", "0"))
    directory = setting(CHECKPOINT_KEY)
    checkpoints = Path(directory) if directory is not None and os.environ.get("FAKE_SAVE") == "1" else None
    first = 1
    if checkpoints is not None:
        print(f"checkpoint dir {checkpoints.resolve()}", flush=True)
        first = resumed_step(checkpoints) + 1
        if first > 1:
            print(f"resumed from step {first - 1}", flush=True)
    path = os.environ["VERL_FILE_LOGGER_PATH"] if os.environ.get("FAKE_FILE_LOGGER", "1") == "1" else os.devnull
    with open(path, "w", encoding="utf-8") as metrics:
        for step in range(first, steps + 1):
            data = {"perf/throughput": 50.0 if step == dip else 100.0 + step, "critic/rewards/mean": 0.1 * step}
            print(
                f"step:{step} - perf/throughput:{data['perf/throughput']} - "
                f"critic/rewards/mean:np.float64({data['critic/rewards/mean']})",
                flush=True,
            )
            metrics.write(json.dumps({"step": step, "data": data}) + "\n")
            metrics.flush()
            if checkpoints is not None:
                (checkpoints / f"global_step_{step}").mkdir(parents=True, exist_ok=True)
                (checkpoints / LATEST).write_text(str(step))
            if step == int(os.environ.get("FAKE_CRASH_STEP", "0")):
                crash(step)
            time.sleep(pause)
    return int(os.environ.get("FAKE_EXIT_CODE", "0"))


if __name__ == "__main__":
    sys.exit(main())
