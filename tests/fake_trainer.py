"""A stand-in for verl's trainer in end-to-end launcher tests (`python -m tests.fake_trainer --config-name X ...`).

It prints verl's console metric lines (verl/utils/logger/aggregate_logger.py format), writes verl's `file` logger
JSONL to $VERL_FILE_LOGGER_PATH, and behaves as the environment says: FAKE_STEPS steps, FAKE_SLEEP seconds after
each, then exit with FAKE_EXIT_CODE. Throughput is 100 + step, except 50 at step FAKE_DIP_STEP; FAKE_FILE_LOGGER=0
writes no JSONL (verl's `file` logger off, or on another node). It prints its argv so tests can see what the
launcher passed. With FAKE_SAVE=1 (verl saves nothing by default: trainer.save_freq -1) it saves to
trainer.default_local_dir as verl's resume_mode=auto reads it: the last step in DIR/latest_checkpointed_iteration.txt
after each step, and it starts after the step found there (`resumed from step N`; `checkpoint dir DIR` first,
absolute as it resolves).
"""

import json
import os
import sys
import time
from pathlib import Path

CHECKPOINT_KEY = "trainer.default_local_dir="
LATEST = "latest_checkpointed_iteration.txt"  # verl's tracker file (verl/utils/checkpoint/checkpoint_manager.py)


def main() -> int:
    print("argv:", json.dumps(sys.argv[1:]), flush=True)
    steps, pause = int(os.environ.get("FAKE_STEPS", "3")), float(os.environ.get("FAKE_SLEEP", "0"))
    dip = int(os.environ.get("FAKE_DIP_STEP", "0"))
    checkpoints = next((Path(a[len(CHECKPOINT_KEY) :]) for a in sys.argv[1:] if a.startswith(CHECKPOINT_KEY)), None)
    if os.environ.get("FAKE_SAVE") != "1":
        checkpoints = None
    first = 1
    if checkpoints is not None:
        print(f"checkpoint dir {checkpoints.resolve()}", flush=True)
        if (checkpoints / LATEST).exists():
            first = int((checkpoints / LATEST).read_text()) + 1
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
                checkpoints.mkdir(parents=True, exist_ok=True)
                (checkpoints / LATEST).write_text(str(step))
            time.sleep(pause)
    return int(os.environ.get("FAKE_EXIT_CODE", "0"))


if __name__ == "__main__":
    sys.exit(main())
