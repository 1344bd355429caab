"""Runs as a set (issue 35 item 13), through the installed console script: `--name` and `--tag` on launches, `ls`,
`compare` and `report --overlay`, on runs of the stand-in trainer (tests/fake_trainer.py) here and on a real local
Ray head (tests/ray_cluster.py). Each command reads run records only; a bad RUN_DIR or ROOT is one line, exit 2.
Waits are on events (a step in the log), never on wall time."""

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from sapo_toolkit.linter.core.extras import install_command

from .helpers import ON_RAY, REPO, launch, launcher, sapo_launch, stand_in
from .test_launch_ray_results import wait_until
from .test_optional_packages import without

FLOOR = "gates:\n  - {metric: perf/throughput, min: 100}\n"
FLOOR_GATE = "perf/throughput >= 100 (every, after 0)"
LR = "actor_rollout_ref.actor.optim.lr"


def the_run(root: Path, stdout_stderr: str) -> Path:
    """The run directory a launch's closing line names."""
    line = next(line for line in stdout_stderr.splitlines() if "; run directory " in line)
    path = Path(line.rpartition("; run directory ")[2])
    assert path.parent.parent == root or path.parent == root, path
    return path


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> SimpleNamespace:
    """Three ended runs under one root: two points of a sweep (named, tagged, each its learning rate) that pass
    their gate, and a run of another recipe, in a sweep directory of its own one level down, that fails."""
    folder = tmp_path_factory.mktemp("sweep")
    root = folder / "runs"
    recipe = stand_in(folder, {"FAKE_STEPS": 3}, gates=FLOOR)
    other = stand_in(folder, {"FAKE_STEPS": 2, "FAKE_EXIT_CODE": 3}, name="other")
    runs = {}
    for name, tags, lr in (("lr-1e-6", ("sweep", "lr"), "1e-6"), ("lr-2e-6", ("sweep",), "2e-6")):
        tagged = [a for tag in tags for a in ("--tag", tag)]
        proc = launch(folder, recipe, "--name", name, *tagged, f"{LR}={lr}")
        assert proc.returncode == 0, proc.stderr
        runs[name] = the_run(root, proc.stderr)
    failed = sapo_launch(other, "--runs-dir", root / "other-sweep")
    assert failed.returncode == 3, failed.stderr
    return SimpleNamespace(
        root=root, recipe=recipe, a=runs["lr-1e-6"], b=runs["lr-2e-6"], c=the_run(root, failed.stderr)
    )


def columns(line: str) -> list[str]:
    """A table line's cells (two spaces or more between cells; empty ones collapse)."""
    return re.split(r" {2,}", line.strip())


def ls_json(*args) -> list[dict]:
    proc = sapo_launch("ls", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- --name and --tag ------------------------------------------------------------------------------------------------


def test_a_named_run_says_what_it_is(sweep):
    assert sweep.a.name.startswith("stand-in-lr-1e-6-") and sweep.c.name.startswith("other-")
    plan = json.loads((sweep.a / "plan.json").read_text())
    assert (plan["run_name"], plan["tags"]) == ("lr-1e-6", ["sweep", "lr"])
    assert json.loads((sweep.c / "plan.json").read_text())["run_name"] is None
    # the run's own checkpoint directory, in the argv and in the resolved recipe it records
    own = f"trainer.default_local_dir={sweep.a}/checkpoints"
    assert own in plan["argv"] and f"- {own}\n" in (sweep.a / "recipe.resolved.yaml").read_text()


@pytest.mark.parametrize(
    "args,message",
    [
        (("--name", " "), "Invalid value for '--name': empty"),
        (("--tag", "a,b"), "Invalid value for '--tag': `a,b`: a tag is a non-empty word without commas"),
    ],
)
def test_an_empty_name_or_a_tag_with_commas_is_a_usage_error(tmp_path, args, message):
    proc = launch(tmp_path, stand_in(tmp_path, {}), *args)
    assert proc.returncode == 2 and proc.stderr.startswith(f"sapo-launch: {message}"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "runs").exists()


# -- ls ----------------------------------------------------------------------------------------------------------------


def test_ls_shows_one_line_per_run_oldest_first(sweep):
    proc = sapo_launch("ls", sweep.root)
    assert proc.returncode == 0, proc.stderr
    header, *lines = proc.stdout.splitlines()
    assert header.split() == ["RUN", "NAME", "TAGS", "STATUS", "STEPS", "GATES", "WHERE", "WHEN"]
    assert [columns(line)[:7] for line in lines] == [
        [sweep.a.name, "lr-1e-6", "sweep,lr", "succeeded", "3", "passed 1/1", "local"],
        [sweep.b.name, "lr-2e-6", "sweep", "succeeded", "3", "passed 1/1", "local"],
        [f"other-sweep/{sweep.c.name}", "failed", "2", "-", "local"] + columns(lines[2])[5:7],
    ]


def test_ls_json_gives_every_field(sweep):
    a, b, c = ls_json(sweep.root)
    assert a["run_dir"] == str(sweep.a) and (a["name"], a["tags"], a["recipe"]) == (
        "lr-1e-6",
        ["sweep", "lr"],
        "stand-in",
    )
    assert (a["status"], a["exit_code"], a["steps"], a["verdict"]) == ("succeeded", 0, 3, "passed 1/1")
    assert a["gates"] == {FLOOR_GATE: "passed"} and (a["executor"], a["address"]) == ("local", None)
    assert (c["status"], c["exit_code"], c["steps"], c["gates"], c["verdict"]) == ("failed", 3, 2, {}, "-")
    assert a["started"] < b["started"] < c["started"]


@pytest.mark.parametrize(
    "filters,expected",
    [
        (("--status", "failed"), "c"),
        (("--status", "failed", "--status", "succeeded"), "abc"),
        (("--name", "lr-*"), "ab"),
        (("--name", "lr-2e-6"), "b"),
        (("--tag", "sweep"), "ab"),
        (("--tag", "sweep", "--tag", "lr"), "a"),
        (("--recipe", "other"), "c"),
        (("--recipe", "RECIPE"), "ab"),  # the recipe's file
        (("--tag", "lr", "--status", "failed"), ""),
    ],
)
def test_ls_filters(sweep, filters, expected):
    filters = [str(sweep.recipe) if f == "RECIPE" else f for f in filters]
    assert [run["run_dir"] for run in ls_json(sweep.root, *filters)] == [str(getattr(sweep, x)) for x in expected]


def test_ls_says_when_no_run_matches(sweep):
    proc = sapo_launch("ls", sweep.root, "--name", "nothing-*")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == f"sapo-launch: no runs in {sweep.root} match\n"


def test_ls_defaults_to_the_runs_directory_launches_make(sweep, tmp_path):
    shutil.copytree(sweep.a, tmp_path / "runs" / sweep.a.name)
    proc = sapo_launch("ls", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["RUN", sweep.a.name]


def test_ls_of_a_run_directory_lists_it_alone(sweep):
    assert [run["run_dir"] for run in ls_json(sweep.c)] == [str(sweep.c)]
    proc = sapo_launch("ls", sweep.c)
    assert [columns(line)[0] for line in proc.stdout.splitlines()] == ["RUN", sweep.c.name]


def test_ls_reads_only_the_end_of_a_long_metrics_file(sweep, tmp_path):
    copy = shutil.copytree(sweep.a, tmp_path / "runs" / sweep.a.name)
    padding = {"perf/throughput": 100.0, **{f"x/{i}": 0.5 for i in range(40)}}
    with open(copy / "metrics.jsonl", "a", encoding="utf-8") as metrics:
        for step in range(4, 2001):  # over 1 MiB: its first line is cut off where ls starts reading
            metrics.write(json.dumps({"step": step, "data": padding}) + "\n")
    assert (copy / "metrics.jsonl").stat().st_size > 2**20
    assert ls_json(tmp_path / "runs")[0]["steps"] == 2000


def test_ls_shows_a_run_that_is_still_going_as_recorded(tmp_path):
    recipe = stand_in(tmp_path, {"FAKE_STEPS": 1000, "FAKE_SLEEP": 0.2})
    going = subprocess.Popen(
        [*launcher(), str(recipe), "--runs-dir", str(tmp_path / "runs"), "--name", "long"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        logs = tmp_path / "runs"
        wait_until(lambda: any("step:2 " in log.read_text() for log in logs.glob("*/train.log")), "step 2")
        (run,) = ls_json(tmp_path / "runs")
        assert (run["name"], run["status"], run["exit_code"], run["verdict"]) == ("long", "running", None, "-")
        assert run["steps"] >= 2
    finally:
        going.send_signal(signal.SIGTERM)
        assert going.wait(timeout=60) == 128 + signal.SIGTERM


def test_a_run_on_a_ray_cluster_shows_its_address(tmp_path, ray_address):
    recipe = stand_in(tmp_path, {"FAKE_STEPS": 2}, overrides=ON_RAY)
    proc = sapo_launch(
        recipe,
        "--address",
        ray_address,
        "--working-dir",
        REPO,
        "--shared-runs-dir",
        "--runs-dir",
        tmp_path / "runs",
        "--name",
        "on-ray",
        "--detach",
    )
    assert proc.returncode == 0, proc.stderr
    (run,) = ls_json(tmp_path / "runs")
    # detached, and nobody asked the cluster since: as recorded
    assert (run["name"], run["status"], run["executor"], run["address"]) == ("on-ray", "submitted", "ray", ray_address)
    listed = sapo_launch("ls", tmp_path / "runs")
    assert listed.returncode == 0, listed.stderr
    line = columns(listed.stdout.splitlines()[1])  # its steps: what the job's file logger has written so far
    assert line[1:3] == ["on-ray", "submitted"] and line[-2] == ray_address, line


# -- compare ---------------------------------------------------------------------------------------------------------


def test_compare_shows_the_overrides_that_differ_metrics_and_gates(sweep):
    proc = sapo_launch("compare", sweep.a, sweep.b)
    assert proc.returncode == 0, proc.stderr
    header, *lines = proc.stdout.splitlines()
    assert columns(header) == [sweep.a.name, sweep.b.name]
    rows = {columns(line)[0]: columns(line)[1:] for line in lines if line.strip()}
    assert rows[LR] == ["1e-06", "2e-06"] and rows["name"] == ["lr-1e-6", "lr-2e-6"]
    assert rows["perf/throughput"] == ["103", "103"] and rows["critic/rewards/mean"] == ["0.3", "0.3"]
    assert rows[FLOOR_GATE] == ["passed", "passed"] and rows["status"] == ["succeeded", "succeeded"]
    assert "trainer.default_local_dir" not in rows  # each run's own directory: the same place in each


def test_compare_json(sweep):
    proc = sapo_launch("compare", sweep.a, sweep.c, "--format", "json", "--metric", "nothing/logged")
    assert proc.returncode == 0, proc.stderr
    compared = json.loads(proc.stdout)
    assert [run["run_dir"] for run in compared["runs"]] == [str(sweep.a), str(sweep.c)]
    differences = compared["differences"]
    assert differences["fields"] == {"name": ["stand-in", "other"]}
    assert differences["overrides"] == {LR: ["1e-06", None]}
    assert differences["env"] == {"FAKE_STEPS": ["3", "2"], "FAKE_EXIT_CODE": [None, "3"]}
    assert compared["metrics"]["perf/throughput"] == [{"step": 3, "value": 103.0}, {"step": 2, "value": 102.0}]
    assert "nothing/logged" not in compared["metrics"]
    assert compared["gates"] == {FLOOR_GATE: ["passed", None]}


# -- report --overlay ------------------------------------------------------------------------------------------------


def test_overlay_draws_one_plot_per_metric_with_a_line_per_run(sweep, tmp_path):
    output = tmp_path / "reports" / "sweep.md"
    proc = sapo_launch("report", "--overlay", sweep.a, sweep.b, sweep.c, "-o", output, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert (shown["report"], shown["plots"]) == (str(output), 2)
    assert [run["name"] for run in shown["runs"]] == ["lr-1e-6", "lr-2e-6", None]
    assert sorted(p.name for p in output.parent.glob("*.png")) == [
        "sweep-critic-rewards-mean.png",
        "sweep-perf-throughput.png",
    ]
    text = output.read_text()
    assert f"| lr-1e-6 | `{sweep.a}` | succeeded | 1-3 | passed 1/1 |" in text
    assert f"| {sweep.c.name} | `{sweep.c}` | failed | 1-2 | - |" in text
    assert "![perf/throughput](sweep-perf-throughput.png)" in text
    default = sapo_launch("report", "--overlay", sweep.a, sweep.b)
    assert default.stdout == f"report: {sweep.root / 'overlay.md'} (2 runs overlaid, 2 plots)\n", default.stderr


def test_a_resumed_run_is_overlaid_as_its_whole_curve(tmp_path):
    recipe = stand_in(tmp_path, {"FAKE_STEPS": 6, "FAKE_CRASH_STEP": 3, "FAKE_SAVE": 1}, gates=FLOOR, name="curve")
    crashed = launch(tmp_path, recipe, "--name", "crashed")
    assert crashed.returncode == 1, crashed.stderr
    parent = the_run(tmp_path / "runs", crashed.stderr)
    resumed = sapo_launch("resume", parent)
    assert resumed.returncode == 0, resumed.stderr
    (child,) = [path for path in (tmp_path / "runs").iterdir() if path != parent]
    output = tmp_path / "overlay.md"
    assert sapo_launch("report", "--overlay", parent, child, "-o", output).returncode == 0
    text = output.read_text()
    # the resumed run keeps the name: each is shown by its directory's
    assert f"| {parent.name} | `{parent}` | failed | 1-3 |" in text
    assert f"| {child.name} | `{child}` | succeeded | 1-6 |" in text
    # the crash cut the parent's gate short: undecided there, not failed; decided over the whole curve
    by_dir = {Path(run["run_dir"]): run for run in ls_json(tmp_path / "runs")}
    assert (by_dir[parent]["verdict"], by_dir[child]["verdict"]) == ("not judged", "passed 1/1")
    compared = json.loads(sapo_launch("compare", parent, child, "--format", "json").stdout)
    assert compared["metrics"]["perf/throughput"] == [{"step": 3, "value": 103.0}, {"step": 6, "value": 106.0}]


def test_overlay_without_matplotlib_writes_the_table_and_the_json(sweep, tmp_path):
    output = tmp_path / "overlay.md"
    proc = subprocess.run(
        [*launcher(), "report", "--overlay", str(sweep.a), str(sweep.b), "-o", str(output), "--format", "json"],
        cwd=REPO,
        env=without(tmp_path, "matplotlib"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    skipped = f"plots skipped: they need matplotlib ({install_command('report')})"
    assert proc.stderr == f"sapo-launch: {skipped}\n"
    assert json.loads(proc.stdout)["plots"] == 0
    assert skipped in output.read_text() and "| lr-2e-6 |" in output.read_text()
    assert not list(tmp_path.glob("*.png"))


# -- bad input: one line, exit 2 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command,problem",
    [
        (("ls", "MISSING"), "Invalid value for '[ROOT]': Directory 'MISSING' does not exist."),
        (("ls", "--status", "done", "ROOT"), "Invalid value for '--status': 'done' is not one of"),
        (("compare", "A", "MISSING"), "Invalid value for 'RUN_DIRS...': Directory 'MISSING' does not exist."),
        (("compare", "A", "PLAIN"), "PLAIN: not a run directory (no plan.json)"),
        (("compare", "A"), "compare takes two or more run directories"),
        (("report", "--overlay", "A", "MISSING"), "Directory 'MISSING' does not exist."),
        (("report", "--overlay", "A", "PLAIN"), "PLAIN: not a run directory (no plan.json)"),
        (("report", "--overlay", "--fail-on-gates", "A"), "--overlay reads run directories as recorded: not with"),
        (("report", "A", "A"), "give one RUN_DIR (several with --overlay)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(sweep, tmp_path, command, problem):
    (tmp_path / "plain").mkdir()
    named = {"A": sweep.a, "ROOT": sweep.root, "MISSING": tmp_path / "missing", "PLAIN": tmp_path / "plain"}
    proc = sapo_launch(*(named.get(word, word) for word in command))
    problem = problem.replace("MISSING", str(named["MISSING"])).replace("PLAIN", str(named["PLAIN"]))
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith("sapo-launch: ") and problem in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1
