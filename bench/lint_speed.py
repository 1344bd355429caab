"""Cold-start speed of `sapo-lint` on generated recipes (run by hand; figures go into notes, not tests).

    python bench/lint_speed.py [--files 300] [--runs 7] [--scripts 120] [--corpus DIR]

Generates realistic recipes (the shipped ones, re-parameterised, a few with typical mistakes) in a
temporary directory, then times fresh `sapo-lint` processes: over ~100 files, over all files, and on one file.
Then the same for verl-style run scripts (the test fixtures, re-parameterised): without shellcheck, with
shellcheck and an empty cache, and with the cache warm.
Then the real run scripts of `--corpus` (default: `../shared/corpus` beside the checkout, when it exists), which
are slower and noisier than copies of the fixtures.
Targets: <= 1 s for ~100 files, <= 150 ms for one file, on a 2-core machine.
`bench/run_all.py` (which reuses the generator and the timer here) writes the recorded figures, bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import yaml

REPO = Path(__file__).resolve().parent.parent
MALFORMED = re.compile(r"trainer\.logger=\[console\b(?!.*\])|project_name=sapo tests")
MISTAKES = [
    ("+actor_rollout_ref.actor.policy_loss.tau_pos", 1.2),
    ("actor_rollout_ref.actor.megatron.tensor_parallel_size", 4),
    ("+actor_rollout_ref.actor.optim.override_optimizer_config.decoupled_weight_decay", True),
    ("trainer.nnodez", 2),
]


def generate(out: Path, count: int, seed: int = 0, recipes: Path = REPO / "recipes") -> list[Path]:
    """`count` recipes re-parameterised from the ones in `recipes`, a fifth of them with one typical mistake."""
    rng = random.Random(seed)
    bases = [yaml.safe_load(p.read_text()) for p in sorted(recipes.glob("*.yaml"))]
    paths = []
    for i in range(count):
        doc = dict(rng.choice(bases))
        overrides = dict(doc.get("overrides") or {})
        overrides["trainer.experiment_name"] = f"run-{i}"
        overrides["data.train_batch_size"] = rng.choice([32, 64, 128, 256])
        overrides["actor_rollout_ref.rollout.n"] = rng.choice([4, 8, 16])
        overrides["actor_rollout_ref.actor.tau_neg"] = rng.choice([1.05, 1.1, 1.2])
        if rng.random() < 0.2:
            key, value = rng.choice(MISTAKES)
            overrides[key] = value
        doc["overrides"] = overrides
        doc["name"] = f"bench-{i}"
        path = out / f"recipe_{i:04d}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(path)
    return paths


def generate_scripts(out: Path, count: int, seed: int = 0, with_syntax_errors: bool = True) -> list[Path]:
    """Copies of the test fixtures. Some fixtures hold a deliberately malformed override: reporting it exactly
    takes hydra's own parser, whose first use costs ~0.3 s per process, so both kinds of run are timed."""
    rng = random.Random(seed)
    fixtures = sorted((REPO / "tests" / "fixtures" / "scripts").glob("run_*.sh"))
    if not with_syntax_errors:
        fixtures = [f for f in fixtures if not MALFORMED.search(f.read_text())]
    paths = []
    for i in range(count):
        base = rng.choice(fixtures)
        text = base.read_text().replace("trainer.experiment_name=", f"trainer.experiment_name=run{i}-", 1)
        path = out / f"run_b{i:04d}_{base.stem[len('run_') :]}.sh"  # keeps the run_<model>_<backend> shape
        path.write_text(text)
        paths.append(path)
    return paths


class Timing(NamedTuple):
    """Seconds of wall time over fresh processes; the best is the least disturbed by a noisy machine."""

    median: float
    best: float


def timed(
    cmd: list[str], runs: int, env: dict | None = None, fresh_cache: bool = False, cwd: Path | None = None
) -> Timing:
    """`cmd` run `runs` times, each a fresh process; `fresh_cache`: each with an empty sapo-lint cache."""
    samples = []
    for _ in range(runs):
        run_env = dict(env or os.environ)
        with tempfile.TemporaryDirectory(prefix="sapo-lint-cache-") as empty_cache:
            if fresh_cache:
                run_env["SAPO_LINT_CACHE_DIR"] = empty_cache
            start = time.perf_counter()
            subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=run_env, cwd=cwd)
            samples.append(time.perf_counter() - start)
    return Timing(statistics.median(samples), min(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scripts", type=int, default=120)
    parser.add_argument(
        "--corpus",
        type=Path,
        default=REPO.parent / "shared" / "corpus",
        help="a directory of real run scripts (skipped when it does not exist)",
    )
    args = parser.parse_args()
    exe = shutil.which("sapo-lint")
    base = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        hundred, rest = root / "hundred", root / "all"
        hundred.mkdir()
        rest.mkdir()
        paths = generate(rest, args.files)
        for p in paths[:100]:
            shutil.copy(p, hundred / p.name)
        results = {
            "python -c pass (floor)": timed([sys.executable, "-c", "pass"], args.runs),
            "1 file": timed([*base, str(paths[0])], args.runs),
            "100 files": timed([*base, str(hundred)], args.runs),
            f"{args.files} files": timed([*base, str(rest)], args.runs),
        }
        clean = root / "clean-scripts"
        clean.mkdir()
        generate_scripts(clean, args.scripts, with_syntax_errors=False)
        results[f"{args.scripts} scripts, no malformed override, --no-shellcheck"] = timed(
            [*base, "--no-shellcheck", str(clean)], args.runs
        )
        scripts = root / "scripts"
        scripts.mkdir()
        generate_scripts(scripts, args.scripts)
        warm_env = {**os.environ, "SAPO_LINT_CACHE_DIR": tempfile.mkdtemp(prefix="sapo-lint-cache-")}
        subprocess.run([*base, str(scripts)], check=False, stdout=subprocess.DEVNULL, env=warm_env)  # fill the cache
        results.update(
            {
                f"{args.scripts} scripts, --no-shellcheck": timed([*base, "--no-shellcheck", str(scripts)], args.runs),
                f"{args.scripts} scripts, shellcheck cold": timed([*base, str(scripts)], args.runs, fresh_cache=True),
                f"{args.scripts} scripts, shellcheck warm": timed([*base, str(scripts)], args.runs, env=warm_env),
            }
        )
    if args.corpus.is_dir():
        count = sum(1 for _ in args.corpus.rglob("*.sh"))
        results[f"{count} real scripts ({args.corpus.name}), --no-shellcheck"] = timed(
            [*base, "--no-shellcheck", str(args.corpus)], args.runs
        )
    print(f"sapo-lint cold runs over {args.runs} runs ({' '.join(base)}):")
    print(f"  {'':<56} {'median':>10} {'best':>10}")
    for name, (median, best) in results.items():
        print(f"  {name:<56} {median * 1000:7.1f} ms {best * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
