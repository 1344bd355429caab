"""The Ray Jobs executor (launcher/executors/ray_jobs.py, ray_submit.py, ray_client.py) driven by the run sequence
(launcher/execution.py). The pure parts (resource pre-check, exit codes, entrypoint, metadata, working-directory
packaging) run anywhere; the rest runs against one real local Ray head per session (tests/ray_cluster.py: 2 CPUs, no
GPU), with the stand-in trainer (tests/fake_trainer.py) as the job. The job imports `tests.fake_trainer` from the
repository shipped as its working directory, and runs with this interpreter's `python` (the head is started with it
first on PATH). Skipped with a message without ray."""

import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from sapo_toolkit.launcher import execution, rundir
from sapo_toolkit.launcher.cli import cli
from sapo_toolkit.launcher.executors import ray_client, ray_jobs, ray_submit
from sapo_toolkit.launcher.gates import EXIT_GATES_FAILED
from sapo_toolkit.launcher.plan import Facts, LintReport, Plan, plan
from sapo_toolkit.linter.core.extras import install_command
from sapo_toolkit.linter.settings import Settings

from .helpers import REPO
from .test_launch_local import SECRET, assert_no_secret, fake_recipe

# Ray's own job client opens its log stream with an argument aiohttp deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")


def make_plan(
    tmp_path: Path, env: dict, *, gpus: int = 0, device: str | None = None, gates: str = ""
) -> tuple[Plan, Path]:
    """The stand-in trainer's recipe (with the `gates:` section `gates`), planned and given a run directory; `gpus`
    is trainer.n_gpus_per_node (the head has none, so a job that is to run asks for none)."""
    # verl itself needs a device per worker (TP014); the stand-in trainer runs on the CPU
    recipe = fake_recipe(tmp_path, env, overrides=f"  trainer.n_gpus_per_node: {gpus}  # sapo-lint: noqa: TP014\n")
    recipe.write_text(recipe.read_text() + gates)
    facts = Facts(device, sys.executable, str(REPO), 4, datetime.now(timezone.utc), str(tmp_path / "runs"))
    launch = plan(recipe, settings=Settings(), facts=facts, device=device)
    assert not launch.lint.refuses
    return launch, rundir.create(launch, {}, ())


def bare_plan(nnodes=1, per_node=8, device=None, argv=("/venv/bin/python3", "-m", "verl.trainer.main_ppo")) -> Plan:
    return Plan(
        "r.yaml",
        "r",
        None,
        device,
        argv,
        (),
        "/",
        "/runs/r-1",
        LintReport(()),
        {},
        "h",
        (),
        nnodes=nnodes,
        devices_per_node=per_node,
    )


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


# -- without a cluster ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "nodes,plan_args,expected",
    [
        (
            [{"CPU": 2.0}],
            {},
            "the cluster has 0 GPU, the recipe needs 8 (1 node x 8) (a cluster without GPU runs only a trainer that "
            "needs none: trainer.n_gpus_per_node: 0, with `# sapo-lint: noqa: TP014`)",
        ),
        ([{"GPU": 8.0}, {"GPU": 8.0}], {"nnodes": 2}, None),
        ([{"GPU": 16.0}], {"nnodes": 2}, None),  # two groups of 8 fit on one 16-device node
        (
            [{"GPU": 4.0}, {"GPU": 4.0}],
            {},
            (
                "the cluster has 8 GPU but not 8 on each of 1 node(s) (per node: 4, 4); "
                "the recipe needs 1 node x 8, each node's share on one node"
            ),
        ),
        ([{"NPU": 16.0}], {"nnodes": 2, "device": "npu"}, None),
        (
            [{"NPU": 16.0}],
            {},
            "the cluster has 0 GPU, the recipe needs 8 (1 node x 8) (it has 16 NPU: pass --device npu)",
        ),
        (
            [{"GPU": 8.0}],
            {"nnodes": 2, "device": "npu"},
            "the cluster has 0 NPU, the recipe needs 16 (2 nodes x 8) (it has 8 GPU: pass --device gpu)",
        ),
        ([], {"per_node": 0}, None),
    ],
)
def test_resource_shortfall(nodes, plan_args, expected):
    assert ray_submit.resource_shortfall(bare_plan(**plan_args), nodes) == expected


@pytest.mark.parametrize(
    "status,driver,signals,code",
    [
        ("SUCCEEDED", 0, (), 0),
        ("FAILED", 3, (), 3),
        ("FAILED", None, (), 1),
        ("FAILED", -9, (), 137),
        ("STOPPED", None, (), 130),
        ("STOPPED", None, (signal.SIGTERM,), 143),
        ("RUNNING", None, (), None),
        ("PENDING", None, (), None),
    ],
)
def test_exit_code(status, driver, signals, code):
    assert ray_jobs.exit_code(status, driver, signals) == code


def test_entrypoint_runs_the_cluster_python_and_quotes_once():
    launch = bare_plan(
        argv=(
            "/home/me/venv/bin/python3",
            "-m",
            "verl.trainer.main_ppo",
            "--config-name",
            "ppo_trainer",
            "trainer.project_name='a b'",
            "data.x=[1,2]",
        )
    )
    assert ray_submit.entrypoint(launch) == (
        "python -m verl.trainer.main_ppo --config-name ppo_trainer "
        "'trainer.project_name='\"'\"'a b'\"'\"'' 'data.x=[1,2]'"
    )
    assert ray_submit.entrypoint(launch, "/opt/conda/bin/python").startswith("/opt/conda/bin/python -m ")


def test_metadata_is_strings(tmp_path):
    launch, _ = make_plan(tmp_path, {})
    meta = ray_submit.metadata(launch)
    assert all(isinstance(v, str) for v in meta.values())
    assert meta["recipe"] == "fake" and meta["recipe_hash"] == launch.recipe_hash and meta["variant"] == ""
    assert meta["lint"] == "0 errors, 0 warnings, 1 info"


def staged(stage: Path) -> list[str]:
    return sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())


def test_the_working_dir_ships_what_ray_would_less_the_excludes(tmp_path):
    root = tmp_path / "repo"
    for rel in (
        "train.py",
        "pkg/mod.py",
        "pkg/__pycache__/mod.pyc",
        "outputs/ckpt.bin",
        "runs/r-1/train.log",
        "data/big.parquet",
        "notes.txt",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / ".gitignore").write_text("outputs/\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    ray_submit.stage_working_dir(root, ["runs", "data/*.parquet", "*.txt"], tmp_path / "stage")
    assert staged(tmp_path / "stage") == [".gitignore", "pkg/mod.py", "train.py"]
    (root / ".git").rename(tmp_path / "git")  # outside a repository: the same (Ray reads .gitignore itself)
    ray_submit.stage_working_dir(root, [], tmp_path / "stage2")
    assert "outputs/ckpt.bin" not in staged(tmp_path / "stage2")
    assert "pkg/__pycache__/mod.pyc" not in staged(tmp_path / "stage2")


def test_a_working_dir_whose_zip_exceeds_the_upload_limit_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "weights").mkdir(parents=True)
    (root / "weights" / "w.bin").write_bytes(os.urandom(4096))
    (root / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(ray_submit, "UPLOAD_LIMIT", 2048)
    with pytest.raises(
        ray_client.RayJobError,
        match=r"zips to 0\.0 MiB, over the 0\.0 MiB Ray's Jobs API accepts; "
        r"largest entries \(unzipped\): weights 0\.0 MiB, a\.py",
    ):
        ray_submit.stage_working_dir(root, [], tmp_path / "stage")


def test_without_ray_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.job_submission", None)
    with pytest.raises(ray_client.RayJobError) as caught:
        ray_client.connect("http://127.0.0.1:1")
    assert caught.value.message == f"running on a Ray cluster needs Ray's job client: {install_command('ray')}"


def test_without_an_address_the_message_says_where_to_give_one():
    with pytest.raises(ray_client.RayJobError, match="pass --address http://HEAD:8265 or set RAY_ADDRESS"):
        ray_client.connect(None)


def test_errors_relayed_from_the_cluster_are_one_line():
    relayed = RuntimeError(
        "Request failed with status code 500: Traceback (most recent call last):\n"
        '  File "job_head.py", line 342, in submit_job\n'
        "AttributeError: 'NoneType' object has no attribute 'submit_job_internal'\n"
    )
    assert ray_client.first_line(relayed) == (
        "Request failed with status code 500: AttributeError: 'NoneType' object has no attribute 'submit_job_internal'"
    )
    assert ray_client.first_line("Job failed with exit code 3, last logs:\nstep:1") == (
        "Job failed with exit code 3, last logs:"
    )
    assert ray_client.first_line(ConnectionError()) == "ConnectionError"


def test_a_run_directory_without_a_job_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["status", str(tmp_path)], standalone_mode=False)
    assert isinstance(result.exception, ray_client.RayJobError)
    assert "holds no Ray job (job.json" in result.exception.message


# -- against a real Ray head ---------------------------------------------------------------------------------------


@pytest.fixture
def client(ray_address):
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(ray_address)


def run(launch, run_dir, address, **kwargs):
    terminal = io.BytesIO()
    code = execution.run(ray_jobs.RayExecutor(address, working_dir=REPO), launch, run_dir, terminal=terminal, **kwargs)
    return code, terminal.getvalue().decode()


@pytest.mark.parametrize("code", [0, 3])
def test_the_job_runs_and_its_exit_code_propagates(tmp_path, ray_address, client, code):
    launch, run_dir = make_plan(tmp_path, {"FAKE_EXIT_CODE": code})
    exit_code, terminal = run(launch, run_dir, ray_address)
    assert exit_code == code
    result = summary(run_dir)
    assert result["status"] == ("succeeded" if code == 0 else "failed") and result["exit_code"] == code
    assert result["job_status"] == ("SUCCEEDED" if code == 0 else "FAILED")
    assert code == 0 or result["message"].startswith("Job entrypoint command failed with exit code 3")
    assert "\n" not in result["message"]
    assert result["last_lines"][-1].startswith("step:3 - perf/throughput:103.0")
    assert {"started", "ended", "duration_s", "pid", "signals"} <= set(result) and result["duration_s"] > 0
    job = json.loads((run_dir / "job.json").read_text())
    assert job["submission_id"] == result["submission_id"] and job["address"] == ray_address
    assert job["entrypoint"].startswith("python -m tests.fake_trainer --config-name ppo_trainer ")
    log = (run_dir / "train.log").read_text()
    assert "step:2 - perf/throughput:102.0" in log and "step:2 - perf/throughput:102.0" in terminal
    assert [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]
    info = client.get_job_info(job["submission_id"])
    assert info.metadata["recipe_hash"] == launch.recipe_hash and info.metadata["run_dir"] == str(run_dir)
    assert info.runtime_env["env_vars"]["WANDB_API_KEY"] == SECRET  # the job gets it; no file here holds it
    assert_no_secret(run_dir)


def in_child(call: str, *args) -> subprocess.Popen:
    """`call` (`run(RayExecutor(...), ...)` of the run sequence) in another process, so that it can be sent
    signals; its exit code is the call's."""
    source = (
        "import pickle, sys; from sapo_toolkit.launcher.execution import run; "
        "from sapo_toolkit.launcher.executors.ray_jobs import RayExecutor; "
        f"args = pickle.loads(bytes.fromhex(sys.argv[1])); sys.exit({call})"
    )
    return subprocess.Popen(
        [sys.executable, "-c", source, pickle.dumps(args).hex()],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_step(child: subprocess.Popen, log: Path, step: int) -> None:
    deadline = time.monotonic() + 60
    while f"step:{step} " not in _read(log):  # streamed while the job runs
        if time.monotonic() > deadline or child.poll() is not None:
            child.kill()
            pytest.fail(f"the job's log never reached step {step}: {child.communicate()[1]}")
        time.sleep(0.1)


def test_ctrl_c_stops_the_job_while_its_log_streams(tmp_path, ray_address, client):
    launch, run_dir = make_plan(tmp_path, {"FAKE_STEPS": 200, "FAKE_SLEEP": 0.2})
    child = in_child("run(RayExecutor(args[2], working_dir=args[3]), *args[:2])", launch, run_dir, ray_address, REPO)
    wait_for_step(child, run_dir / "train.log", 3)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    result = summary(run_dir)
    assert result["status"] == "interrupted" and result["job_status"] == "STOPPED"
    assert result["signals"] == ["SIGINT"] and result["exit_code"] == 130
    assert "stopping raysubmit_" in err and "step:3 " in out
    assert str(client.get_job_status(result["submission_id"])) == "STOPPED"


def test_a_second_ctrl_c_stops_waiting(tmp_path, ray_address, client):
    launch, run_dir = make_plan(tmp_path, {"FAKE_STEPS": 200, "FAKE_SLEEP": 0.2})
    child = in_child("run(RayExecutor(args[2], working_dir=args[3]), *args[:2])", launch, run_dir, ray_address, REPO)
    wait_for_step(child, run_dir / "train.log", 2)
    child.send_signal(signal.SIGTERM)
    # The second signal goes once the launcher has taken the first: were both pending, SIGINT would be delivered first.
    for said in child.stderr:
        if "stopping raysubmit_" in said:
            break
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 128 + signal.SIGTERM, err
    result = summary(run_dir)
    assert result["status"] == "interrupted" and result["signals"] == ["SIGTERM", "SIGINT"]
    while not client.get_job_status(result["submission_id"]).is_terminal():  # the stop requested first goes on
        time.sleep(0.2)
    assert execution.status(ray_jobs.RayExecutor(None), run_dir) == 128 + signal.SIGTERM  # `status` completes it
    assert summary(run_dir)["job_status"] == "STOPPED"


def test_detach_then_status_and_logs_follow(tmp_path, ray_address):
    """`logs --follow` goes through the run sequence as an attached run does: the live view's gate verdicts on
    stderr and in summary.json, the job's exit code."""
    launch, run_dir = make_plan(
        tmp_path,
        {"FAKE_STEPS": 6, "FAKE_SLEEP": 0.3, "FAKE_EXIT_CODE": 4, "FAKE_DIP_STEP": 2},
        gates="gates:\n  - {metric: perf/throughput, min: 100}\n",
    )
    assert run(launch, run_dir, ray_address, detach=True)[0] == 0
    assert summary(run_dir)["status"] == "submitted" and summary(run_dir)["exit_code"] == 0
    runner = CliRunner()
    running = runner.invoke(cli, ["status", str(run_dir)])
    assert running.exit_code == 0 and running.output.split()[1] in ("PENDING", "RUNNING"), running.output
    follow = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.launcher", "logs", "--follow", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert follow.returncode == 4, follow.stderr
    assert "step:6 - perf/throughput:106.0" in follow.stdout
    assert "step:6 - perf/throughput:106.0" in (run_dir / "train.log").read_text()
    floor = "perf/throughput >= 100 (every, after 0)"
    assert f"sapo-launch: gate failed: {floor}" in follow.stderr
    result = summary(run_dir)
    assert result["status"] == "failed" and result["exit_code"] == 4 and result["job_status"] == "FAILED"
    assert result["gates"][floor]["passed"] is False
    ended = runner.invoke(cli, ["status", str(run_dir)])
    assert ended.exit_code == 4 and ended.output.split()[1] == "FAILED"
    printed = io.BytesIO()
    assert execution.logs(ray_jobs.RayExecutor(None), run_dir, terminal=printed) == 0
    assert printed.getvalue().decode().count("step:6 ") == 1


def test_ctrl_c_stops_following_not_the_job_and_stop_ends_it(tmp_path, ray_address, client):
    launch, run_dir = make_plan(tmp_path, {"FAKE_STEPS": 200, "FAKE_SLEEP": 0.2})
    assert run(launch, run_dir, ray_address, detach=True)[0] == 0
    follower = subprocess.Popen(
        [sys.executable, "-m", "sapo_toolkit.launcher", "logs", "--follow", str(run_dir)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_step(follower, run_dir / "train.log", 2)
    follower.send_signal(signal.SIGINT)
    _, err = follower.communicate(timeout=30)
    assert follower.returncode == 130, err
    submission_id = summary(run_dir)["submission_id"]
    assert summary(run_dir)["status"] == "submitted" and str(client.get_job_status(submission_id)) == "RUNNING"
    result = CliRunner().invoke(cli, ["stop", str(run_dir)])
    assert result.exit_code == 0, result.output
    stopped = summary(run_dir)
    assert stopped["status"] == "interrupted" and stopped["exit_code"] == 130 and stopped["job_status"] == "STOPPED"
    assert CliRunner().invoke(cli, ["status", str(run_dir)]).exit_code == 130


@pytest.mark.parametrize("device,kind", [(None, "GPU"), ("npu", "NPU")])
def test_a_recipe_the_cluster_cannot_hold_is_refused_before_submitting(
    tmp_path, ray_address, client, device, kind, capsys
):
    launch, run_dir = make_plan(tmp_path, {}, gpus=8, device=device)
    before = len(client.list_jobs())
    assert run(launch, run_dir, ray_address)[0] == 1
    reason = (
        f"the cluster has 0 {kind}, the recipe needs 8 (1 node x 8) (a cluster without {kind} runs only a trainer "
        "that needs none: trainer.n_gpus_per_node: 0, with `# sapo-lint: noqa: TP014`)"
    )
    assert summary(run_dir) | {"started": None} == {
        "status": "refused",
        "exit_code": 1,
        "reason": reason,
        "pid": None,
        "submission_id": None,
        "address": ray_address,
        "started": None,
        "executor": "ray",
        "checkpoint_dir": str(Path(launch.run_dir, "checkpoints")),
    }
    assert f"refused: {reason}" in capsys.readouterr().err
    assert not (run_dir / "job.json").exists() and len(client.list_jobs()) == before


def test_a_working_directory_over_the_limit_is_not_submitted(tmp_path, ray_address, client, monkeypatch):
    launch, run_dir = make_plan(tmp_path, {})
    monkeypatch.setattr(ray_submit, "UPLOAD_LIMIT", 1024)
    before = len(client.list_jobs())
    with pytest.raises(ray_client.RayJobError, match="over the 0.0 MiB Ray's Jobs API accepts"):
        run(launch, run_dir, ray_address)
    result = summary(run_dir)
    assert result["status"] == "failed" and result["exit_code"] == 2 and "zips to" in result["last_lines"][0]
    assert len(client.list_jobs()) == before


def test_an_address_with_no_cluster_is_one_line(tmp_path):
    pytest.importorskip("ray.job_submission", reason="ray is not installed: pip install 'sapo-toolkit[ray]'")
    launch, run_dir = make_plan(tmp_path, {})
    with pytest.raises(ray_client.RayJobError, match=r"^cannot reach the Ray Jobs API at http://127\.0\.0\.1:9: "):
        run(launch, run_dir, "http://127.0.0.1:9")
    assert summary(run_dir)["status"] == "failed"


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def test_the_recipe_gates_are_judged_on_a_ray_run(tmp_path, ray_address):
    """The job's console lines feed the gates as in a local run: the stand-in's throughput 101, 102, 103 breaks a
    floor of 102, and --fail-on-gates turns the succeeded job's 0 into EXIT_GATES_FAILED."""
    launch, run_dir = make_plan(tmp_path, {"FAKE_EXIT_CODE": 0})
    launch.gates = ({"metric": "perf/throughput", "min": 102},)
    exit_code, _ = run(launch, run_dir, ray_address, fail_on_gates=True)
    assert exit_code == EXIT_GATES_FAILED
    result = summary(run_dir)
    assert result["status"] == "succeeded" and result["exit_code"] == EXIT_GATES_FAILED
    (verdict,) = result["gates"].values()
    assert verdict["passed"] is False
