"""Time and peak memory of one `sapo-lint` run over the generated hostile directory (tests/hostile_corpus.py), with
shellcheck on and its cache empty (run by hand; the figures go into notes).

    python bench/hostile.py [--keep DIR]

Target: under 30 s and 1 GB on a 2-core machine. Peak memory is the largest resident set of the linter and of
every process it waited for (shellcheck included), from getrusage(RUSAGE_CHILDREN).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.hostile_corpus import DEEP, SECRET, TOKEN_VARIABLE, generate, remove_chain  # noqa: E402 (the repository on sys.path first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="generate into this (new) directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch) / "hostile"
        root.mkdir(parents=True)
        inputs = generate(root)
        env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(Path(scratch) / "cache"), TOKEN_VARIABLE: SECRET}
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "sapo_toolkit.linter", "--format", "json", "."],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        remove_chain(root, DEEP)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{len(inputs)} hostile inputs: exit {proc.returncode}, {wall:.1f} s wall, peak RSS {peak_mib:.0f} MiB")
    if not proc.stdout.startswith("{"):
        print(proc.stderr[-3000:])
        return 1
    codes = collections.defaultdict(collections.Counter)
    for d in json.loads(proc.stdout)["diagnostics"]:
        codes[d["path"].removeprefix("./")[:50]][d["code"]] += 1
    for path, counted in sorted(codes.items()):
        print(f"  {path!r}: {dict(counted.most_common())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
