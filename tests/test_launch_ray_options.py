"""What `sapo-launch RECIPE --address URL` gives Ray besides the plan (launcher/executors/ray_submit.py,
launcher/plan.py, launcher/workdir.py): addresses, bounded requests, Ctrl-C. Through the console script where a user
relies on it (exit codes as a shell sees them), against the session's real Ray head (`ray_address`) or a local socket
that accepts connections and never answers."""

import json
import os
import platform
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from sapo_toolkit.launcher.executors import ray_client, ray_probe, ray_submit
from sapo_toolkit.launcher.plan import RayOptions, ray_options

from .helpers import ON_RAY, REPO, launcher, sapo_launch
from .test_launch_local import fake_recipe, only_run_dir
from .test_launch_ray import make_plan


def error_line(stderr: str) -> str:
    """The launcher's error: its last line, one line, no traceback."""
    assert "Traceback" not in stderr, stderr
    last = stderr.splitlines()[-1]
    assert last.startswith("sapo-launch: "), stderr
    return last


# -- addresses -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address,why",
    [
        ("auto", "`auto` finds a running cluster for ray.init"),
        ("ray://head:10001", "ray:// is a Ray Client address"),
        ("head:6379", "port 6379 is the GCS port, ray.init's"),
        ("http://head:10001", "port 10001 is the Ray Client server port"),
        ("head:8265", None),
        ("https://me:pw@head/ray", None),
    ],
)
def test_what_is_not_a_jobs_api_address(address, why):
    assert ray_client.not_jobs_api(address) == why


def test_an_address_without_a_scheme_gets_http():
    assert ray_client.jobs_address("127.0.0.1:8265") == "http://127.0.0.1:8265"


def test_an_address_for_ray_init_is_refused_with_a_hint(tmp_path):
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    proc = sapo_launch(recipe, "--address", "me:pw@head:6379", "--runs-dir", tmp_path / "runs")
    assert proc.returncode == 2
    assert error_line(proc.stderr) == (
        "sapo-launch: Invalid value for '--address': me:<redacted>@head:6379 is not a Jobs API address (port 6379 is "
        "the GCS port, ray.init's): pass the dashboard's URL, http://HEAD:8265"
    )
    assert not (tmp_path / "runs").exists()


def test_a_ray_address_set_for_ray_init_leaves_the_launch_here(tmp_path):
    """verl users set RAY_ADDRESS for `ray.init`: the launch stays local (the trainer inherits it), and says so."""
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    dry = sapo_launch(recipe, "--dry-run", env={"RAY_ADDRESS": "auto"})
    assert dry.returncode == 0, dry.stderr
    assert "note     RAY_ADDRESS=auto ignored: not a Jobs API address" in dry.stdout
    proc = sapo_launch(recipe, "--runs-dir", tmp_path / "runs", env={"RAY_ADDRESS": "127.0.0.1:6379"})
    assert proc.returncode == 0, proc.stderr
    assert "sapo-launch: RAY_ADDRESS=127.0.0.1:6379 ignored: not a Jobs API address" in proc.stderr
    assert not (only_run_dir(tmp_path) / "job.json").exists()


def test_a_bad_request_timeout_is_error_line():
    with pytest.raises(
        ray_client.RayJobError, match=r"^SAPO_LAUNCH_RAY_TIMEOUT=soon: not a number of seconds above 0$"
    ):
        ray_client.request_timeout({"SAPO_LAUNCH_RAY_TIMEOUT": "soon"})
    assert ray_client.request_timeout({}) == 30


# -- a dashboard that accepts and never answers --------------------------------------------------------------------


class SilentDashboard:
    """A local socket that accepts connections and never answers; `accepted` is set once one came in."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"  # no scheme: http:// is added
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:  # closed
                return
            self.held.append(connection)
            self.accepted.set()

    def close(self):
        self.server.close()
        for connection in self.held:
            connection.close()


@pytest.fixture
def silent():
    dashboard = SilentDashboard()
    yield dashboard
    dashboard.close()


def silent_run_dir(tmp_path: Path, address: str) -> Path:
    run_dir = tmp_path / "submitted"
    run_dir.mkdir()
    (run_dir / "job.json").write_text(f'{{"address": "http://{address}", "submission_id": "raysubmit_x"}}')
    return run_dir


def commands(tmp_path: Path, address: str) -> dict[str, list[str]]:
    """Every command that calls the cluster, at `address`."""
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    run_dir = silent_run_dir(tmp_path, address)
    return {
        "submit": [str(recipe), "--address", address, "--runs-dir", str(tmp_path / "runs")],
        "status": ["status", str(run_dir)],
        "logs": ["logs", str(run_dir)],
        "logs -f": ["logs", "--follow", str(run_dir)],
        "stop": ["stop", str(run_dir)],
    }


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [*launcher(), *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_a_dashboard_that_never_answers_is_one_line_within_the_timeout(tmp_path, silent):
    """Each launcher gives up after the 1 s it is given, far under the default (a launcher waiting out the default
    would hit communicate's guard), whatever the machine's load: no wall-clock race of its own."""
    env = {**os.environ, "SAPO_LAUNCH_RAY_TIMEOUT": "1"}
    children = {name: start(args, env) for name, args in commands(tmp_path, silent.address).items()}
    for name, child in children.items():
        _, err = child.communicate(timeout=30)
        assert child.returncode == 2, (name, err)
        assert error_line(err).endswith(
            f"cannot reach the Ray Jobs API at http://{silent.address}: no answer to GET /api/version within 1 s "
            "(SAPO_LAUNCH_RAY_TIMEOUT)"
        ), name


@pytest.mark.parametrize("name", ["submit", "status", "logs", "logs -f", "stop"])
def test_ctrl_c_while_the_dashboard_does_not_answer_exits_130(tmp_path, silent, name):
    child = start(commands(tmp_path, silent.address)[name], dict(os.environ))
    assert silent.accepted.wait(timeout=60), child.communicate(timeout=5)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "Traceback" not in err and "cannot reach" not in err


# -- what the job is given: runtime_env, metadata, submission id, entrypoint resources --------------------------------


def test_the_recipe_ray_block_goes_under_the_command_line():
    block = {
        "runtime_env": {"working_dir": "repo", "excludes": ["*.bin"], "pip": ["requests"], "py_modules": ["lib"]},
        "metadata": {"team": "rl", "attempt": 3},
        "entrypoint_num_cpus": 1,
        "entrypoint_resources": {"NPU": 1},
    }
    given = RayOptions(
        {"excludes": ["/.git/"], "env_vars": {"A": "file"}, "py_modules": ["s3://bucket/m.zip", "/abs/m"]},
        {"team": "infra"},
        "run-7",
        None,
        0.5,
    )
    options = ray_options(block, given, "/work")
    assert options.runtime_env == {
        "working_dir": "/work/repo",  # where `ray job submit` would read it
        "excludes": ["/.git/"],
        "pip": ["requests"],
        "py_modules": ["s3://bucket/m.zip", "/abs/m"],
        "env_vars": {"A": "file"},
    }
    assert options.metadata == {"team": "infra", "attempt": "3"}
    assert (options.submission_id, options.entrypoint_num_cpus, options.entrypoint_num_gpus) == ("run-7", 1, 0.5)
    assert options.entrypoint_resources == {"NPU": 1}


def test_the_recipe_env_wins_over_the_runtime_env_vars_and_the_launcher_keys_are_its_own(tmp_path):
    launch, _ = make_plan(tmp_path, {"A": "recipe"})
    launch.ray = RayOptions({"env_vars": {"A": "file", "B": 2}, "excludes": ["*.log"]}, {"owner": "me"})
    request = ray_submit.job_request(launch, working_dir=Path("/wd"), excludes=["*.tmp"])
    assert request["runtime_env"]["env_vars"]["A"] == "recipe" and request["runtime_env"]["env_vars"]["B"] == "2"
    assert request["runtime_env"]["working_dir"] == "/wd" and request["runtime_env"]["excludes"] == ["*.log", "*.tmp"]
    assert request["metadata"]["owner"] == "me" and request["metadata"]["recipe_hash"] == launch.recipe_hash
    assert "submission_id" not in request and "entrypoint_resources" not in request  # Ray's defaults
    launch.ray.metadata = {"recipe_hash": "mine"}
    with pytest.raises(ray_client.RayJobError, match=r"^metadata recipe_hash: sapo-launch sets it itself"):
        ray_submit.job_request(launch)


def runtime_env_file(folder: Path, text: str) -> Path:
    path = folder / "runtime_env.yaml"
    path.write_text(text)
    return path


# verl's own verl/trainer/runtime_env.yaml, and a variable with a secret name, a pip requirement with a token
VERL_RUNTIME_ENV = (
    'working_dir: ./\nexcludes: ["/.git/"]\nenv_vars:\n  TORCH_NCCL_AVOID_RECORD_STREAMS: "1"\n'
    '  CUDA_DEVICE_MAX_CONNECTIONS: "1"\n  HF_TOKEN: hf-secret\npip: ["git+https://me:gh-token@github.com/x/y.git"]\n'
)


def test_the_dry_run_shows_what_is_sent_secrets_redacted(tmp_path):
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    recipe.write_text(recipe.read_text() + "ray:\n  metadata: {team: rl}\n  entrypoint_num_cpus: 1\n")
    args = [recipe, "--address", "head:8265", "--runtime-env", runtime_env_file(tmp_path, VERL_RUNTIME_ENV)]
    args += ["--submission-id", "run-7", "--metadata", "owner=me", "--entrypoint-resources", '{"NPU": 1}', "--dry-run"]
    args += ["--shared-runs-dir"]
    proc = sapo_launch(*args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    ray = json.loads(proc.stdout)["ray"]
    assert ray["address"] == "http://head:8265" and ray["submission_id"] == "run-7"
    assert ray["runtime_env"]["working_dir"] == str(REPO) and ray["runtime_env"]["excludes"] == ["/.git/"]
    assert ray["runtime_env"]["pip"] == ["git+https://me:<redacted>@github.com/x/y.git"]
    env_vars = ray["runtime_env"]["env_vars"]
    assert (
        env_vars["HF_TOKEN"] == env_vars["WANDB_API_KEY"] == "<redacted>"
        and env_vars["TORCH_NCCL_AVOID_RECORD_STREAMS"] == "1"
    )
    assert ray["metadata"]["team"] == "rl" and ray["metadata"]["owner"] == "me" and ray["metadata"]["recipe"] == "fake"
    assert (ray["entrypoint_num_cpus"], ray["entrypoint_resources"]) == (1, {"NPU": 1})
    assert ray["entrypoint"].startswith(
        'python -c "$SAPO_LAUNCH_VERSION_PROBE" 2>/dev/null; exec python -m tests.fake_trainer --config-name '
    )
    text = sapo_launch(*args)
    assert text.returncode == 0, text.stderr
    assert "ray      http://head:8265: what the Jobs API is sent" in text.stdout
    assert '  runtime_env.pip  ["git+https://me:<redacted>@github.com/x/y.git"]' in text.stdout
    assert "  submission_id  run-7" in text.stdout
    assert "hf-secret" not in text.stdout + proc.stdout and "gh-token" not in text.stdout + proc.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--runtime-env", "{folder}/runtime_env.yaml"],
            "--runtime-env {folder}/runtime_env.yaml: excludes: not a list of strings",
        ),
        (["--entrypoint-resources", "NPU=1"], "--entrypoint-resources expects a JSON object of amounts, got `NPU=1`"),
        (["--metadata", "owner"], "--metadata expects KEY=VALUE, got `owner`"),
    ],
)
def test_bad_ray_options_are_one_line(tmp_path, args, message):
    runtime_env_file(tmp_path, "excludes: .git\n")
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    proc = sapo_launch(recipe, "--address", "head:8265", "--dry-run", *(a.format(folder=tmp_path) for a in args))
    assert proc.returncode == 2
    assert error_line(proc.stderr) == f"sapo-launch: {message.format(folder=tmp_path)}"


def test_ray_options_without_an_address_leave_no_run_directory(tmp_path):
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    proc = sapo_launch(recipe, "--runs-dir", tmp_path / "runs", "--submission-id", "x", "--metadata", "a=b")
    assert proc.returncode == 2
    assert error_line(proc.stderr) == "sapo-launch: --submission-id, --metadata need --address (a Ray cluster)"
    assert not (tmp_path / "runs").exists()


# -- what a working directory ships: Ray's own rules -----------------------------------------------------------------


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def shipped(stage: Path) -> list[str]:
    return sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())


WORKING_DIR = {
    "train.py": "x = 1\n",
    ".gitignore": "*.log\n!keep/*.log\n/data/*.parquet\noutputs/\n",
    ".rayignore": "notes.txt\n",
    "notes.txt": "",
    "run.log": "",
    "keep/k.log": "",
    "data/big.parquet": "",
    "data/small.csv": "",
    "outputs/ckpt.bin": b"\0" * 1_000_000,  # ignored: it neither ships nor counts toward the upload limit
    "cache/.gitignore": "*\n",  # ignores its own directory, as Ray reads it
    "cache/blob": "",
    "pkg/mod.py": "",
    "pkg/__pycache__/mod.pyc": "",
    "pkg/scratch.tmp": "",
}
SHIPS = [".gitignore", ".rayignore", "data/small.csv", "keep/k.log", "pkg/mod.py", "train.py"]


@pytest.mark.parametrize("in_git", [False, True])
def test_the_working_dir_ships_what_ray_would_inside_git_or_not(tmp_path, monkeypatch, in_git):
    """Ray reads .gitignore and .rayignore files itself (git is not asked: a tracked file they match does not ship)
    and leaves out its default excludes and the runtime_env's; what it leaves out does not count toward the limit."""
    root = tree(tmp_path / "work", WORKING_DIR)
    if in_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
        subprocess.run(["git", "-C", str(root), "add", "-f", "run.log"], check=True, timeout=30)
    monkeypatch.setattr(ray_submit, "UPLOAD_LIMIT", 64 * 1024)
    ray_submit.stage_working_dir(root, ["*.tmp"], tmp_path / "stage")
    assert shipped(tmp_path / "stage") == SHIPS


def test_a_link_that_loops_refuses_the_working_dir(tmp_path):
    root = tree(tmp_path / "work", {"a/x.py": ""})
    (root / "a" / "again").symlink_to("..")
    with pytest.raises(
        ray_client.RayJobError, match=r"has a link that loops: a/again -> .*work, a directory holding it"
    ):
        ray_submit.stage_working_dir(root, [], tmp_path / "stage")


# -- on the real head ------------------------------------------------------------------------------------------------

# A trainer shipped as a py_modules directory: it prints what the job's working directory holds and its environment
STAND_IN_MODULE = """import json, os
files = sorted(os.path.relpath(os.path.join(d, f)) for d, _, names in os.walk(".") for f in names)
print("shipped:", json.dumps(files), flush=True)
print("env:", json.dumps({k: os.environ.get(k) for k in ("FROM_FILE", "A")}), flush=True)
print("step:1 - perf/throughput:101.0", flush=True)
"""


def test_the_options_reach_ray(tmp_path, ray_address):
    """Everything the command line and the recipe give reaches the job as Ray reports it; a RAY_ADDRESS set for
    ray.init (a GCS address where nothing listens) is not asked, and the address needs no scheme. The versions the
    job sees go into environment.json, and the line that reports them is not shown as the trainer's output."""
    import ray
    from ray.job_submission import JobSubmissionClient
    from ray.util.state import list_actors

    work = tree(tmp_path / "work", {**WORKING_DIR, "drop.skip": ""})
    module = tree(tmp_path / "lib", {"stand_in_ray/__main__.py": STAND_IN_MODULE, "stand_in_ray/x.skip": ""})
    options = runtime_env_file(
        tmp_path,
        f'working_dir: {work}\nexcludes: ["*.skip", "*.tmp"]\npy_modules: ["{module / "stand_in_ray"}"]\n'
        'env_vars: {FROM_FILE: "file", A: "file"}\n',
    )
    recipe = fake_recipe(tmp_path, {"A": "recipe"}, overrides=ON_RAY)
    recipe.write_text(
        recipe.read_text().replace("tests.fake_trainer", "stand_in_ray") + "ray:\n  metadata: {team: rl}\n"
    )
    submission_id = f"sapo-options-{os.getpid()}-{time.monotonic_ns()}"
    proc = sapo_launch(
        recipe,
        *("--address", ray_address.removeprefix("http://"), "--runs-dir", tmp_path / "runs", "--shared-runs-dir"),
        *("--runtime-env", options, "--submission-id", submission_id, "--metadata", "owner=me"),
        *("--entrypoint-num-cpus", "0.5", "--entrypoint-resources", '{"node:__internal_head__": 0.001}'),
        env={"RAY_ADDRESS": "127.0.0.1:6399"},
    )
    assert proc.returncode == 0, proc.stderr
    log = (only_run_dir(tmp_path) / "train.log").read_text()
    assert f"shipped: {json.dumps(SHIPS)}" in log  # Ray's rules applied to the working directory
    assert 'env: {"FROM_FILE": "file", "A": "recipe"}' in log
    info = JobSubmissionClient(ray_address).get_job_info(submission_id)
    assert str(info.status) == "SUCCEEDED"
    assert info.runtime_env["working_dir"].startswith("gcs://") and info.runtime_env["py_modules"][0].startswith(
        "gcs://"
    )
    assert info.runtime_env["excludes"] == ["*.skip", "*.tmp"]
    assert info.runtime_env["env_vars"]["FROM_FILE"] == "file" and info.runtime_env["env_vars"]["A"] == "recipe"
    assert info.metadata["team"] == "rl" and info.metadata["owner"] == "me" and info.metadata["recipe"] == "fake"
    (supervisor,) = list_actors(
        address=ray_address, filters=[("name", "=", f"_ray_internal_job_actor_{submission_id}")], detail=True
    )
    assert supervisor.required_resources == {"CPU": 0.5, "node:__internal_head__": 0.001}
    environment = json.loads((only_run_dir(tmp_path) / "environment.json").read_text())
    assert (
        environment["cluster"]["versions"]["ray"] == ray.__version__
        and environment["cluster"]["versions"]["verl"] is None
    )
    assert environment["cluster"]["python"] == platform.python_version() and "ray" in environment["versions"]
    printed = sapo_launch("logs", only_run_dir(tmp_path))
    assert printed.returncode == 0 and "shipped:" in printed.stdout
    for shown in (log, proc.stdout, proc.stderr, printed.stdout):  # the probe's line is not the trainer's output
        assert ray_probe.PROBE_MARKER not in shown
    job = json.loads((only_run_dir(tmp_path) / "job.json").read_text())
    assert (
        job["submission_id"] == submission_id
        and job["request"]["runtime_env"]["env_vars"]["WANDB_API_KEY"] == "<redacted>"
    )


def test_the_version_probe_line_is_taken_out_of_the_log_as_it_streams(tmp_path):
    (tmp_path / "environment.json").write_text('{"versions": {"verl": "0.9.1"}}')
    probe = ray_probe.ProbeLine(tmp_path)
    line = ray_probe.PROBE_MARKER + '{"python": "3.10.12", "versions": {"verl": "0.9.0"}}\n'
    out = [probe.feed(chunk) for chunk in (line[:5], line[5:30], line[30:] + "step:1 - a:1\nstep", ":2 - a:2\n")]
    assert out == ["", "", "step:1 - a:1\nstep", ":2 - a:2\n"]  # held only while it may be the probe's
    assert json.loads((tmp_path / "environment.json").read_text()) == {
        "versions": {"verl": "0.9.1"},  # the launching machine's
        "cluster": {"python": "3.10.12", "versions": {"verl": "0.9.0"}},
    }
    assert ray_probe.ProbeLine(None).feed(f"a\n{line}b", end=True) == "a\nb"
