"""A stand-in for verl's trainer in end-to-end launcher tests (`python -m tests.fake_trainer --config-name X ...`).

It prints verl's console metric lines (verl/utils/logger/aggregate_logger.py format), writes verl's `file` logger
JSONL to $VERL_FILE_LOGGER_PATH, and behaves as the environment says: FAKE_STEPS steps, FAKE_SLEEP seconds after
each, then exit with FAKE_EXIT_CODE. Throughput is 100 + step, except 50 at step FAKE_DIP_STEP; FAKE_FILE_LOGGER=0
writes no JSONL (verl's `file` logger off, or on another node). It prints its argv so tests can see what the
launcher passed.
"""

import json
import os
import sys
import time


def main() -> int:
    print("argv:", json.dumps(sys.argv[1:]), flush=True)
    steps, pause = int(os.environ.get("FAKE_STEPS", "3")), float(os.environ.get("FAKE_SLEEP", "0"))
    dip = int(os.environ.get("FAKE_DIP_STEP", "0"))
    path = os.environ["VERL_FILE_LOGGER_PATH"] if os.environ.get("FAKE_FILE_LOGGER", "1") == "1" else os.devnull
    with open(path, "w", encoding="utf-8") as metrics:
        for step in range(1, steps + 1):
            data = {"perf/throughput": 50.0 if step == dip else 100.0 + step, "critic/rewards/mean": 0.1 * step}
            print(
                f"step:{step} - perf/throughput:{data['perf/throughput']} - "
                f"critic/rewards/mean:np.float64({data['critic/rewards/mean']})",
                flush=True,
            )
            metrics.write(json.dumps({"step": step, "data": data}) + "\n")
            metrics.flush()
            time.sleep(pause)
    return int(os.environ.get("FAKE_EXIT_CODE", "0"))


if __name__ == "__main__":
    sys.exit(main())
