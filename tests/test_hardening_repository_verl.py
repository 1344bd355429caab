"""A repository's own verl tree and configs are untrusted input (docs/security.md): building their snapshot never
runs the repository's code or an installed module a config names, never resolves an environment variable, never
waits on a FIFO, and stays within its bounds, each bad tree one finding. Every input is generated here; every run
goes through the console script, as pre-commit runs it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import tiny_verl

SECRET = "hunter2-canary-value"
SCRIPT = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.tiny_knob=3 trainer.tiny_typo=1\n"
FORMATS = ("text", "json", "github", "sarif")


def canary_module(directory: Path, name: str, canary: Path) -> None:
    """A package that, if ever imported, creates `canary` and prints to standard output."""
    (directory / name).mkdir(parents=True, exist_ok=True)
    (directory / name / "__init__.py").write_text(f"open({str(canary)!r}, 'w').close()\nprint('CANARY-OUTPUT')\n")


def repository(root: Path, config: str) -> Path:
    """A repository vendoring a tiny verl whose ppo_trainer.yaml is `config`, and a run script."""
    (root / ".git").mkdir(parents=True)
    package = tiny_verl(root)
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(config)
    (root / "run.sh").write_text(SCRIPT)
    return package


def lint(root: Path, *args: str, env: dict | None = None, module: bool = False) -> subprocess.CompletedProcess:
    """sapo-lint (or `python -m sapo_toolkit.linter`, `module`) on `args`, `run.sh` when they name no file."""
    exe = shutil.which("sapo-lint")
    cmd = [sys.executable, "-m", "sapo_toolkit.linter"] if module or not exe else [exe]
    files = [] if any(a.endswith(".sh") for a in args) else ["run.sh"]
    return subprocess.run(
        [*cmd, "--no-shellcheck", *args, *files],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1", "SAPO_LINT_CACHE_DIR": str(root / ".cache"), **(env or {})},
    )


def report(root: Path, **kwargs) -> dict:
    proc = lint(root, "--format", "json", **kwargs)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def rf004(found: dict) -> str:
    (message,) = [d["message"] for d in found["diagnostics"] if d["code"] == "RF004"]
    return message


@pytest.mark.parametrize("entry", ["pkg://canarypkg", "structured://canarypkg", "pkg://canarypkg.sub"])
def test_a_search_path_entry_never_imports_the_module_it_names(tmp_path, entry):
    """`hydra.searchpath: [pkg://x]` in a vendored config: Hydra would import x (from the environment, or from the
    repository when it is on sys.path) while composing; the build gives Hydra its own search path instead."""
    root = tmp_path / "repo"
    repository(root, f"hydra:\n  searchpath:\n    - {entry}\ntrainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    canary = tmp_path / "imported"
    canary_module(tmp_path / "site", "canarypkg", canary)
    canary_module(root, "canarypkg", canary)
    proc = lint(root, "--format", "json", env={"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{root}"}, module=True)
    found = json.loads(proc.stdout)  # still JSON: nothing printed into it
    assert proc.returncode == 1 and "CANARY-OUTPUT" not in proc.stdout + proc.stderr
    assert found["verl"]["run.sh"]["source"] == "source-tree"
    assert [d["message"].split("`")[1] for d in found["diagnostics"] if d["code"] == "SL001"] == ["trainer.tiny_typo"]
    assert not canary.exists()


def test_hydra_plugins_of_the_repository_are_never_imported(tmp_path):
    """Hydra's plugin scan imports every `hydra_plugins.*` package on sys.path: the repository's, when the linter
    runs with `-m` from its root or with the repository on PYTHONPATH. The build runs where the repository is not
    on sys.path."""
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    canary = tmp_path / "imported"
    canary_module(root / "hydra_plugins", "evil_plugin", canary)
    found = report(root, env={"PYTHONPATH": str(root)}, module=True)
    assert found["verl"]["run.sh"]["snapshot"] == "built"
    assert not canary.exists()


@pytest.mark.parametrize(
    "config",
    [
        "defaults:\n  - g: ${oc.env:SAPO_CANARY_TOKEN}\n  - _self_\ntrainer:\n  tiny_knob: 2\n",
        "hydra:\n  searchpath:\n    - file://${oc.env:SAPO_CANARY_TOKEN}\ntrainer:\n  tiny_knob: 2\n",
        "defaults:\n  - g: ${oc.decode:${oc.env:SAPO_CANARY_TOKEN}}\n  - _self_\ntrainer:\n  tiny_knob: 2\n",
    ],
)
def test_an_environment_variable_a_config_names_is_never_resolved_or_printed(tmp_path, config):
    root = tmp_path / "repo"
    package = repository(root, config)
    (package / "trainer" / "config" / "g").mkdir()
    (package / "trainer" / "config" / "g" / "a.yaml").write_text("x: 1\n")
    outputs = []
    for fmt in FORMATS:
        proc = lint(root, "--format", fmt, env={"SAPO_CANARY_TOKEN": SECRET})
        assert "Traceback" not in proc.stderr
        outputs.append(proc.stdout + proc.stderr)
    assert not any(SECRET in out for out in outputs)
    cached = [p.read_bytes() for p in (root / ".cache").rglob("*") if p.is_file()]
    assert cached and not any(SECRET.encode() in data for data in cached)
    found = report(root, env={"SAPO_CANARY_TOKEN": SECRET})
    if "defaults" in config:  # the tree cannot be composed without the value: one warning naming the resolver
        assert "uses the resolver `oc." in rf004(found) and found["verl"]["run.sh"]["snapshot"] == "unbuilt"
    else:  # the search path the build gives Hydra replaces the config's own, which is never read
        assert found["verl"]["run.sh"]["source"] == "source-tree"


def fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


@pytest.mark.parametrize("where", ["verl/trainer/stuck.py", "verl/trainer/config/stuck.yaml", "verl/version/version"])
def test_a_fifo_in_the_verl_tree_is_one_warning_never_waited_on(tmp_path, where):
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    target = root / where
    if target.exists():
        target.unlink()
    fifo(target)
    found = report(root)
    assert "not a regular file" in rf004(found) and found["verl"]["run.sh"]["snapshot"] == "unbuilt"


@pytest.mark.parametrize("pin_file", ["requirements.txt", "pyproject.toml"])
def test_a_fifo_where_a_pin_would_be_is_passed_over(tmp_path, pin_file):
    (tmp_path / ".git").mkdir()
    (tmp_path / "run.sh").write_text(SCRIPT)
    fifo(tmp_path / pin_file)
    found = report(tmp_path)
    assert found["verl"]["run.sh"]["source"] == "newest"


def test_a_fifo_in_a_custom_config_directory_is_one_finding(tmp_path):
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    (root / "configs").mkdir()
    (root / "configs" / "c.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\n")
    fifo(root / "configs" / "stuck.yaml")
    (root / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=../../configs --config-name=c"
        " trainer.tiny_knob=3\n"
    )
    message = rf004(report(root))
    assert "stuck.yaml" in message and "not a regular file" in message


@pytest.mark.parametrize(
    "config, bound",
    [
        # a billion-laughs alias bomb: 10 levels of 10 aliases
        (
            "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
            + "trainer:\n  tiny_knob: 2\n",
            "nodes (the build's bound)",
        ),
        # 2^10 selections of ten two-option groups
        (
            "defaults:\n" + "".join(f"  - g{i}: a\n" for i in range(10)) + "  - _self_\ntrainer:\n  tiny_knob: 2\n",
            "Hydra compositions (the build's bound)",
        ),
    ],
    ids=["alias-bomb", "selections"],
)
def test_a_tree_over_the_builds_bounds_is_one_warning_naming_the_bound(tmp_path, config, bound):
    root = tmp_path / "repo"
    package = repository(root, config)
    for i in range(10):
        for option in "ab":
            (package / "trainer" / "config" / f"g{i}").mkdir(exist_ok=True)
            (package / "trainer" / "config" / f"g{i}" / f"{option}.yaml").write_text(f"v{i}: {option}\n")
    found = report(root)
    assert bound in rf004(found) and found["verl"]["run.sh"]["snapshot"] == "unbuilt"


def test_a_module_that_crashes_the_parser_is_one_warning_and_the_lint_goes_on(tmp_path):
    """libcst's native parser crashes the process on deeply nested brackets: the build's process, never the
    linter's."""
    root = tmp_path / "repo"
    package = repository(root, "trainer:\n  _target_: verl.trainer.cfg.TrainerConfig\n  tiny_knob: 2\n")
    (package / "trainer" / "cfg.py").write_text("x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    found = report(root)
    assert "crashed" in rf004(found) or "failed" in rf004(found)
    assert found["verl"]["run.sh"]["snapshot"] == "unbuilt" and found["summary"]["files"] == 1


def test_a_wrapper_module_the_parser_refuses_is_one_finding(tmp_path):
    """A wrapper module (`python -m pkg.main`) is read in the linter's process, with `ast`: nested brackets, bad
    bytes, an unknown coding cookie and a NUL byte are each "not valid Python", never a crash or RF012."""
    (tmp_path / ".git").mkdir()
    bodies = {
        "nested": ("x = " + "(" * 3000 + "1" + ")" * 3000 + "\n").encode(),
        "latin": b"# comment \xff\xfe\nimport hydra\n",
        "cookie": b"# -*- coding: no-such-codec -*-\nimport hydra\n",
        "nul": b"import hydra\x00\n",
        "chain": ("import verl\nx = verl" + ".a" * 20000 + "()\n").encode(),
    }
    for name, body in bodies.items():
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / f"{name}.py").write_bytes(body)
        (tmp_path / f"{name}.sh").write_text(f"#!/bin/bash\npython3 -m pkg.{name} trainer.nnodes=1\n")
    proc = lint(tmp_path, "--format", "json", *(f"{n}.sh" for n in bodies))
    found = json.loads(proc.stdout)
    assert proc.returncode != 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert not [d for d in found["diagnostics"] if d["code"] == "RF012"]
    refused = {d["path"] for d in found["diagnostics"] if "is not valid Python" in d["message"]}
    assert {"nested.sh", "cookie.sh", "nul.sh"} <= refused  # the others parse, or are refused: never RF012


def built_once(root: Path) -> Path:
    """Lint once, so that the cache holds the tree's snapshot; the cache's `verl/` directory."""
    assert report(root)["verl"]["run.sh"]["snapshot"] == "built"
    return root / ".cache" / "verl"


def typos(found: dict) -> list[str]:
    return [d["message"].split("`")[1] for d in found["diagnostics"] if d["code"] == "SL001"]


def test_a_cache_others_can_write_is_not_used(tmp_path):
    """A snapshot planted under the tree's key (keys are content hashes anyone can compute) would hide the typo; in a
    directory others can write, nothing is read or written."""
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    cache = built_once(root)
    (snapshot,) = cache.glob("*.json")
    planted = json.loads(snapshot.read_text())
    assert typos(report(root)) == ["trainer.tiny_typo"]
    text = json.dumps(planted).replace("trainer.tiny_knob", "trainer.tiny_typo")
    snapshot.write_text(text)
    assert typos(report(root)) == ["trainer.tiny_knob"]  # the user's own cache is trusted: what it holds is used
    cache.chmod(0o777)
    found = report(root)
    assert typos(found) == ["trainer.tiny_typo"] and found["verl"]["run.sh"]["snapshot"] == "built"
    assert snapshot.read_text() == text  # nothing written into it either


def test_planted_links_and_fifos_in_the_cache_are_never_followed_or_waited_on(tmp_path):
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    cache = built_once(root)
    (snapshot,) = cache.glob("*.json")
    key = snapshot.stem
    private = tmp_path / "private.txt"
    private.write_text(SECRET)
    snapshot.unlink()
    (cache / f"{key}.failed").symlink_to(private)  # would print the file's content as the reason
    elsewhere = tmp_path / "written-through"
    snapshot.symlink_to(elsewhere)  # dangling: a build writing through it would create `elsewhere`
    (cache / f"{key}.lock").unlink(missing_ok=True)
    os.mkfifo(cache / f"{key}.lock")
    proc = lint(root, "--format", "json")
    found = json.loads(proc.stdout)
    assert SECRET not in proc.stdout + proc.stderr and not elsewhere.exists()
    assert typos(found) == ["trainer.tiny_typo"] and found["verl"]["run.sh"]["source"] == "source-tree"
    assert not snapshot.is_symlink() and json.loads(snapshot.read_text())  # the link replaced by the snapshot


def test_a_relative_cache_directory_works_from_where_sapo_lint_starts(tmp_path):
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    states = [report(root, env={"SAPO_LINT_CACHE_DIR": "rel-cache"})["verl"]["run.sh"] for _ in range(2)]
    assert [s["snapshot"] for s in states] == ["built", "cached"] and states[0]["source"] == "source-tree"
    assert list((root / "rel-cache" / "verl").glob("*.json"))


def test_an_edit_of_a_repository_dataclass_a_custom_config_names_is_seen_on_the_next_run(tmp_path):
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    (root / "configs").mkdir()
    (root / "configs" / "c.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\nextra:\n  _target_: mypkg.cfg.ExtraConfig\n  alpha: 1\n"
    )
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__init__.py").write_text("")
    dataclass = "from dataclasses import dataclass\n\n\n@dataclass\nclass ExtraConfig:\n    alpha: int = 1\n"
    (root / "mypkg" / "cfg.py").write_text(dataclass)
    (root / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=../../configs --config-name=c extra.alpha=x\n"
    )
    before = [d["code"] for d in report(root)["diagnostics"] if d["code"].startswith("SL")]
    (root / "mypkg" / "cfg.py").write_text(dataclass.replace("alpha: int = 1", "alpha: str = 'a'"))
    after = [d["code"] for d in report(root)["diagnostics"] if d["code"].startswith("SL")]
    assert before == ["SL004"] and after == []


def test_schema_build_never_writes_outside_its_output_directory(tmp_path):
    """A tree's version file names the snapshot file: `../../elsewhere/owned` is refused before anything is built."""
    tiny_verl(tmp_path / "checkout", version="../../elsewhere/owned")
    exe = shutil.which("sapo-lint")
    cmd = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]
    out = tmp_path / "out" / "schemas"
    proc = subprocess.run(
        [*cmd, "schema", "build", "--verl-root", str(tmp_path / "checkout"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2 and "not a plain version string" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("owned*"))


def test_without_git_the_tree_search_stops_at_the_home_directory(tmp_path):
    tiny_verl(tmp_path)  # above the home directory: not the script's
    project = tmp_path / "home" / "project"
    project.mkdir(parents=True)
    (project / "run.sh").write_text(SCRIPT)
    found = report(project, env={"HOME": str(tmp_path / "home")})
    assert found["verl"]["run.sh"]["source"] == "newest"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a tree away")
def test_a_tree_another_user_owns_is_never_used(tmp_path):
    (tmp_path / ".git").mkdir()
    package = tiny_verl(tmp_path)
    (tmp_path / "run.sh").write_text(SCRIPT)
    for path in [package, *package.rglob("*")]:
        os.chown(path, 65534, 65534)  # nobody
    assert report(tmp_path)["verl"]["run.sh"]["source"] == "newest"


def test_secret_named_ray_metadata_and_conda_variables_are_redacted_in_the_dry_run_and_plan(tmp_path):
    from tests.helpers import ON_RAY
    from tests.test_launch_ray_options import fake_recipe, runtime_env_file, sapo_launch

    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    recipe.write_text(recipe.read_text() + "ray:\n  metadata: {team: rl, WANDB_API_KEY: meta-secret}\n")
    runtime_env = runtime_env_file(
        tmp_path, "conda:\n  dependencies: [pip]\n  variables: {HF_TOKEN: conda-secret, MODE: fast}\n"
    )
    args = [recipe, "--address", "head:8265", "--runtime-env", runtime_env, "--metadata", "HF_TOKEN=cli-secret"]
    for fmt in ("text", "json"):
        proc = sapo_launch(*args, "--dry-run", "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert not any(s in proc.stdout + proc.stderr for s in ("meta-secret", "conda-secret", "cli-secret"))
    ray = json.loads(sapo_launch(*args, "--dry-run", "--format", "json").stdout)["ray"]
    assert ray["runtime_env"]["conda"]["variables"] == {"HF_TOKEN": "<redacted>", "MODE": "fast"}
    assert ray["metadata"]["team"] == "rl" and ray["metadata"]["WANDB_API_KEY"] == "<redacted>"


def test_a_runtime_env_alias_bomb_or_fifo_is_one_line(tmp_path):
    from tests.helpers import ON_RAY
    from tests.test_launch_ray_options import fake_recipe, sapo_launch

    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
    )
    fifo(tmp_path / "fifo.yaml")
    for path, why in ((bomb, "expand to more than"), (tmp_path / "fifo.yaml", "not a regular file")):
        proc = sapo_launch(recipe, "--address", "head:8265", "--runtime-env", path, "--dry-run")
        assert proc.returncode == 2 and why in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_convert_names_no_committed_verl_for_a_script_of_a_repository_with_its_own(tmp_path):
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    exe = shutil.which("sapo-lint")
    cmd = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]
    env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(root / ".cache")}
    proc = subprocess.run([*cmd, "convert", "run.sh"], cwd=root, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "\nverl:" not in proc.stdout and "linted, as the script is, against verl 0.0.1 from" in proc.stdout


def test_a_recipe_with_a_300_character_name_launches(tmp_path):
    from tests.test_launch_ray_options import fake_recipe, sapo_launch

    recipe = fake_recipe(tmp_path, {})
    recipe.write_text(recipe.read_text().replace("name: fake", "name: " + "n" * 300, 1))
    assert "n" * 300 in recipe.read_text()
    proc = sapo_launch(recipe, "--runs-dir", tmp_path / "runs")
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert len(run_dir.name) < 255 and (run_dir / "summary.json").is_file()


def test_a_working_directory_1100_levels_deep_is_walked_without_recursion(tmp_path):
    from sapo_toolkit.launcher.workdir import shipped_files
    from tests.hostile_corpus import remove_chain

    root = tmp_path / "wd"
    deep = root
    root.mkdir()
    for _ in range(1100):  # os.makedirs itself recurses per level
        deep = deep / "d"
        deep.mkdir()
    (deep / "leaf.py").write_text("x = 1\n")
    (root / "top.py").write_text("x = 1\n")
    try:
        files = shipped_files(root, [], environ={})
    finally:
        remove_chain(root, "d")  # pytest's own clean-up recurses per level
    assert files == sorted(["top.py", os.path.join(*["d"] * 1100, "leaf.py")])


def recorded_run(tmp_path: Path) -> Path:
    from tests.helpers import launch, stand_in

    recipe = stand_in(tmp_path, {"WANDB_API_KEY": SECRET, "FAKE_EXIT_CODE": 0}, name="fake")
    assert launch(tmp_path, recipe).returncode == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    return run_dir


def test_rerun_shows_what_it_runs_and_dry_run_starts_nothing(tmp_path):
    from tests.helpers import sapo_launch

    run_dir = recorded_run(tmp_path)
    proc = sapo_launch("rerun", run_dir, "--dry-run", env={"WANDB_API_KEY": SECRET})
    assert proc.returncode == 0, proc.stderr
    assert "rerun    on this machine" in proc.stderr and "-m tests.fake_trainer" in proc.stderr
    assert "WANDB_API_KEY (from this environment)" in proc.stderr and SECRET not in proc.stderr
    assert len(list((tmp_path / "runs").iterdir())) == 1


@pytest.mark.parametrize("tamper", ["group-writable plan", "foreign plan", "linked plan", "writable directory"])
def test_rerun_refuses_a_run_directory_someone_else_could_have_changed(tmp_path, tamper):
    from tests.helpers import sapo_launch

    if tamper == "foreign plan" and os.geteuid() != 0:
        pytest.skip("needs root to give a file away")
    run_dir = recorded_run(tmp_path)
    plan = run_dir / "plan.json"
    if tamper == "group-writable plan":
        plan.chmod(0o666)
    elif tamper == "foreign plan":
        os.chown(plan, 65534, 65534)
    elif tamper == "linked plan":
        moved = tmp_path / "elsewhere.json"
        plan.rename(moved)
        plan.symlink_to(moved)
    else:
        run_dir.chmod(0o777)
    proc = sapo_launch("rerun", run_dir, env={"WANDB_API_KEY": SECRET})
    assert proc.returncode == 2 and len(list((tmp_path / "runs").iterdir())) == 1, proc.stderr
    assert any(w in proc.stderr for w in ("owned by another user", "writable by others", "symbolic link"))


def test_rerun_fills_from_the_environment_only_names_the_plan_recorded_as_secret(tmp_path):
    from tests.helpers import sapo_launch

    run_dir = recorded_run(tmp_path)
    plan = json.loads((run_dir / "plan.json").read_text())
    plan["env"]["AWS_PROFILE_DATA"] = "<redacted>"  # no secret name: a rewritten plan asking for a variable
    (run_dir / "plan.json").write_text(json.dumps(plan))
    proc = sapo_launch("rerun", run_dir, env={"WANDB_API_KEY": SECRET, "AWS_PROFILE_DATA": "private"})
    assert proc.returncode == 2 and "AWS_PROFILE_DATA as redacted, which is no secret name" in proc.stderr


def test_rerun_sends_secrets_to_the_recorded_cluster_only_when_its_address_is_confirmed(tmp_path):
    from tests.helpers import sapo_launch

    run_dir = recorded_run(tmp_path)
    job = {"address": "http://127.0.0.1:1", "entrypoint": "python -m tests.fake_trainer", "submission_id": "x"}
    (run_dir / "job.json").write_text(json.dumps(job))
    (run_dir / "job.json").chmod(0o644)
    proc = sapo_launch("rerun", run_dir, env={"WANDB_API_KEY": SECRET})
    assert proc.returncode == 2 and "send WANDB_API_KEY from this environment to http://127.0.0.1:1?" in proc.stderr
    assert "Not confirmed: pass --address http://127.0.0.1:1" in proc.stderr
    assert len(list((tmp_path / "runs").iterdir())) == 1
