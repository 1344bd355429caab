"""Every exit code that the help and the docs of `sapo-launch` and `sapo-lint` promise, as a shell sees it from the
installed console scripts: a command that handed its code to click instead of exiting with it (`report
--fail-on-gates` exited 0) passed every `CliRunner` test. The stand-in trainer (tests/fake_trainer.py) runs once per
code; the Ray commands run against the session's head (`ray_address`) or an address where nothing listens.

Checked through the console script elsewhere, and not repeated here:
- `sapo-launch RECIPE`: 0 and the trainer's own code, 128 + SIGTERM, 1 refused by lint, `--dry-run` 0 and 1, 2 for a
  run script; `rerun`: the trainer's code, 2 for a redacted secret it lacks (test_launch_local.py); a failed gate
  without `--fail-on-gates`: 0 (test_live.py); SIGHUP 128 + 1 (test_hardening_process.py).
- Ray: a job 0, 2 for an unreachable address, `status` 0 and 2 without the address (test_hardening_launch.py);
  `logs --follow` the job's code and 130 on Ctrl-C (test_launch_ray.py).
- `status` 2 for a lost run, `report` 0 (test_hardening_process.py); `report`'s usage errors 2 (test_report.py);
  `doctor --format xml` 2 (test_cli_edge.py).
- `sapo-lint`: 0 / 1 / 2, `--warnings-as-errors`, `rule` 0 / 2, `rules` (test_cli.py); `--diff`, `--exit-zero`, 130
  on Ctrl-C, 141 for a closed pipe (test_cli_controls.py).
- Every command line of the README's runnable blocks, with the code it shows (test_docs.py).
- Without matplotlib, scipy or ray: `report`, the gates, `explain --plot`, a Ray launch (test_optional_packages.py).
"""

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from sapo_toolkit.launcher.gates import EXIT_GATES_FAILED

from .helpers import ON_RAY, REPO, SCRIPTS, sapo_launch, stand_in

FLOOR_GATE = "gates:\n  - {metric: perf/throughput, min: 100}\n"  # the stand-in's FAKE_DIP_STEP breaks it
NOBODY = "http://127.0.0.1:9"  # the discard port: nothing listens


def console(tool: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPTS / tool), *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def code_of(proc: subprocess.CompletedProcess) -> int:
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode


def new_run_dir(runs: Path, before: set) -> Path:
    (run_dir,) = set(runs.iterdir()) - before
    return run_dir


# -- sapo-launch on this machine -------------------------------------------------------------------------------------


def test_the_documented_stand_in_launch_runs_end_to_end(tmp_path):
    """README's launch example without verl or an accelerator, docs/stand-in-recipe.yaml from the repository root:
    besides the run's exit code (test_docs.py runs the README's commands), its dry run, what the README shows of the
    run, and the report the README says it makes."""
    recipe, runs = REPO / "docs" / "stand-in-recipe.yaml", tmp_path / "runs"
    dry = sapo_launch(recipe, "--runs-dir", runs, "--dry-run")
    assert code_of(dry) == 0 and "lint     0 errors, 0 warnings: would launch" in dry.stdout, dry.stdout
    assert not runs.exists()
    ran = sapo_launch(recipe, "--runs-dir", runs)
    assert code_of(ran) == 0 and "step:3 - perf/throughput:103.0" in ran.stdout, ran.stderr
    assert "sapo-launch: gate passed: perf/throughput >= 100 (every, after 0)" in ran.stderr
    (run_dir,) = runs.iterdir()
    assert code_of(sapo_launch("report", run_dir)) == 0 and (run_dir / "report.md").is_file()


def test_fail_on_gates_exits_with_the_gate_code_from_run_status_report_and_rerun(tmp_path):
    recipe = stand_in(tmp_path, {"FAKE_DIP_STEP": 2}, gates=FLOOR_GATE)
    runs = tmp_path / "runs"
    assert code_of(sapo_launch(recipe, "--runs-dir", runs, "--fail-on-gates")) == EXIT_GATES_FAILED
    (run_dir,) = runs.iterdir()
    assert code_of(sapo_launch("status", run_dir)) == EXIT_GATES_FAILED  # the code the run exited with
    assert code_of(sapo_launch("report", run_dir, "--format", "json")) == 0
    assert code_of(sapo_launch("report", run_dir, "--fail-on-gates")) == EXIT_GATES_FAILED
    assert code_of(sapo_launch("rerun", run_dir, "--fail-on-gates")) == EXIT_GATES_FAILED


def test_the_trainers_own_failure_wins_over_a_failed_gate(tmp_path):
    recipe = stand_in(tmp_path, {"FAKE_DIP_STEP": 2, "FAKE_EXIT_CODE": 5}, gates=FLOOR_GATE)
    runs = tmp_path / "runs"
    assert code_of(sapo_launch(recipe, "--runs-dir", runs, "--fail-on-gates")) == 5
    (run_dir,) = runs.iterdir()
    assert code_of(sapo_launch("status", run_dir)) == 5


def test_ctrl_c_exits_130(tmp_path):
    recipe = stand_in(tmp_path, {"FAKE_STEPS": 100, "FAKE_SLEEP": 0.5})
    runs = tmp_path / "runs"
    with subprocess.Popen(
        [str(SCRIPTS / "sapo-launch"), str(recipe), "--runs-dir", str(runs)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as launcher:
        try:
            for line in launcher.stdout:  # the trainer's output, teed: it is running
                if line.startswith("step:1 "):
                    break
            launcher.send_signal(signal.SIGINT)
            _, err = launcher.communicate(timeout=60)
        finally:
            launcher.kill()
    assert launcher.returncode == 128 + signal.SIGINT == 130, err
    (run_dir,) = runs.iterdir()
    assert code_of(sapo_launch("status", run_dir)) == 130


def test_a_refused_run_stays_refused(tmp_path):
    recipe = stand_in(tmp_path, {}, overrides="  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n")
    runs = tmp_path / "runs"
    assert code_of(sapo_launch(recipe, "--runs-dir", runs)) == 1
    (run_dir,) = runs.iterdir()
    assert code_of(sapo_launch("status", run_dir)) == 1


USAGE_ERRORS = {
    "run: an option's bad value": ["{recipe}", "--device", "xpu"],
    "run: no such recipe": ["{tmp}/missing.yaml"],
    "run: no such option": ["{recipe}", "--no-such-option"],
    "run: not a recipe": ["{not_a_recipe}", "--dry-run", "--device", "gpu"],
    "run --dry-run: a bad --format": ["{recipe}", "--dry-run", "--format", "xml"],
    "doctor: no such recipe": ["doctor", "{tmp}/missing.yaml"],
    "doctor: not a recipe": ["doctor", "{not_a_recipe}"],
    "rerun: no such directory": ["rerun", "{tmp}/missing"],
    "rerun: not a run directory": ["rerun", "{tmp}"],
    "logs: no job": ["logs", "{tmp}"],
    "logs --follow: no job": ["logs", "--follow", "{tmp}"],
    "stop: no job": ["stop", "{tmp}"],
    "status: no run": ["status", "{tmp}"],
    "logs --follow: cluster unreachable": ["logs", "--follow", "{job_dir}"],
    "stop: cluster unreachable": ["stop", "{job_dir}"],
    "status: cluster unreachable": ["status", "{job_dir}"],
    "report: no such directory": ["report", "{tmp}/missing"],
    "no such command": ["no-such-command"],
}


@pytest.mark.parametrize("case", USAGE_ERRORS)
def test_a_usage_or_launcher_error_exits_2_in_one_line(tmp_path, case):
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.json").write_text(json.dumps({"address": NOBODY, "submission_id": "raysubmit_gone"}))
    not_a_recipe = tmp_path / "config.yaml"
    not_a_recipe.write_text("a: 1\n")
    where = {"tmp": tmp_path / "x", "recipe": stand_in(tmp_path, {}), "not_a_recipe": not_a_recipe, "job_dir": job_dir}
    (tmp_path / "x").mkdir()
    proc = sapo_launch(*(arg.format(**where) for arg in USAGE_ERRORS[case]))
    assert code_of(proc) == 2, proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith("sapo-launch")]
    assert len(said) == 1, proc.stderr


def test_a_usage_error_leaves_no_run_directory(tmp_path):
    runs = tmp_path / "runs"
    assert code_of(sapo_launch(stand_in(tmp_path, {}), "--runs-dir", runs, "--detach")) == 2
    assert not runs.exists() or not list(runs.iterdir())


def test_doctor_exits_1_when_something_blocks_else_0(tmp_path):
    """Without a recipe, this machine's own verdict decides; a recipe that needs devices where none is visible
    always blocks."""
    proc = sapo_launch("doctor", "--format", "json")
    assert code_of(proc) == (1 if json.loads(proc.stdout)["summary"]["blocking"] else 0)
    hidden = {"CUDA_VISIBLE_DEVICES": "-1", "ASCEND_RT_VISIBLE_DEVICES": "", "DEVICE": "gpu"}
    env_recipe = stand_in(tmp_path, {}, overrides="  trainer.n_gpus_per_node: 8\n")
    blocked = subprocess.run(
        [str(SCRIPTS / "sapo-launch"), "doctor", str(env_recipe), "--device", "gpu"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **hidden},
    )
    assert code_of(blocked) == 1 and "BLOCKING" in blocked.stdout, blocked.stdout


def test_the_help_states_the_gate_code():
    for command in ("run", "rerun", "report"):
        shown = " ".join(sapo_launch(command, "--help").stdout.split())
        assert re.search(rf"--fail-on-gates Exit {EXIT_GATES_FAILED} when", shown), (command, shown)


# -- sapo-launch on a Ray cluster ------------------------------------------------------------------------------------


def test_ray_commands_exit_with_the_jobs_codes(tmp_path, ray_address):
    """A detached job: `run --detach`, `status` while it runs, `logs` and `stop` exit 0; once stopped, `status` exits
    130. An attached job exits with the trainer's own code, also when a gate failed too."""
    runs = tmp_path / "runs"
    ray = ("--runs-dir", runs, "--address", ray_address, "--working-dir", REPO, "--shared-runs-dir")
    long_job = stand_in(tmp_path / "long", {"FAKE_STEPS": 200, "FAKE_SLEEP": 0.2}, overrides=ON_RAY)
    assert code_of(sapo_launch(long_job, *ray, "--detach")) == 0
    (run_dir,) = runs.iterdir()
    running = sapo_launch("status", run_dir)
    assert code_of(running) == 0 and running.stdout.split()[1] in ("PENDING", "RUNNING"), running.stdout
    assert code_of(sapo_launch("logs", run_dir)) == 0
    assert code_of(sapo_launch("stop", run_dir)) == 0
    assert code_of(sapo_launch("status", run_dir)) == 130
    failing = stand_in(tmp_path / "failing", {"FAKE_EXIT_CODE": 5, "FAKE_DIP_STEP": 2}, ON_RAY, FLOOR_GATE)
    before = set(runs.iterdir())
    assert code_of(sapo_launch(failing, *ray, "--fail-on-gates")) == 5
    assert code_of(sapo_launch("status", new_run_dir(runs, before))) == 5


def test_a_job_the_cluster_cannot_hold_is_refused_with_1(tmp_path, ray_address):
    recipe = stand_in(tmp_path, {}, overrides="  trainer.n_gpus_per_node: 8\n")
    proc = sapo_launch(recipe, "--runs-dir", tmp_path / "runs", "--address", ray_address)
    assert code_of(proc) == 1 and "refused: the cluster has 0 GPU" in proc.stderr


# -- sapo-lint's other commands --------------------------------------------------------------------------------------

SCRIPT = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.actor.tau_pos=1.0 trainer.nnodes=1\n"
SAPO_LINT = {
    "--version": (0, ["--version"]),
    "explain": (0, ["explain", "{smoke}"]),
    "explain: no variant matches": (2, ["explain", "{smoke}", "--variant", "DEVICE=tpu"]),
    "explain: nothing to estimate": (2, ["explain", "{stand_in}"]),
    "explain: no such file": (2, ["explain", "{tmp}/missing.yaml"]),
    "convert": (0, ["convert", "{script}"]),
    "convert -o": (0, ["convert", "{script}", "-o", "{tmp}/recipe.yaml"]),
    "convert: no trainer command": (2, ["convert", "{no_trainer}"]),
    "convert: cannot write": (2, ["convert", "{script}", "-o", "{tmp}/missing/recipe.yaml"]),
    "schema build: not a wheel": (2, ["schema", "build", "--wheel", "{not_a_wheel}", "--out", "{tmp}/schemas"]),
    "schema: no such command": (2, ["schema", "no-such-command"]),
}


@pytest.mark.parametrize("case", SAPO_LINT)
def test_sapo_lint_commands(tmp_path, case):
    expected, args = SAPO_LINT[case]
    (tmp_path / "run_x.sh").write_text(SCRIPT)
    (tmp_path / "other.sh").write_text("#!/bin/bash\necho hello\n")
    (tmp_path / "verl.whl").write_text("not a zip\n")
    where = {
        "tmp": tmp_path,
        "smoke": REPO / "recipes" / "smoke-qwen3-0.6b-sapo.yaml",
        "stand_in": REPO / "docs" / "stand-in-recipe.yaml",
        "script": tmp_path / "run_x.sh",
        "no_trainer": tmp_path / "other.sh",
        "not_a_wheel": tmp_path / "verl.whl",
    }
    proc = console("sapo-lint", *(arg.format(**where) for arg in args))
    assert code_of(proc) == expected, proc.stderr
    assert expected == 0 or (proc.stderr + proc.stdout).strip(), "an error says why"
