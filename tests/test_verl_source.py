"""Which verl a file is linted against (linter/verl_source.py): a vendored, modified verl in the script's repository is
snapshotted on the fly and cached, and its scripts lint against it; outside the repository the file falls back as
documented; a pin picks its release's snapshot; a custom `--config-path` in the repository is composed as Hydra would.
Every run goes through the console script, as a user (or pre-commit) runs it."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from sapo_toolkit.linter.schema import committed_for, newest_release
from tests.helpers import REPO, tiny_verl, verl_choice

ARCHIVE = REPO.parent / "shared" / "verl-src" / "verl-main-1dda039.tar.gz"
needs_verl_main = pytest.mark.skipif(not ARCHIVE.is_file(), reason=f"no {ARCHIVE}")

# What the snapshot builder reads to compose and type verl's trainer configs: the config tree, the entry module whose
# `@hydra.main` names it, and the dataclasses its `_target_`s name (the rest of verl's ~360 modules only add key
# names to the read-set; building from all of them takes a minute and a half).
PARTS = (
    "verl/__init__.py",
    "verl/base_config.py",
    "verl/version/",
    "verl/trainer/__init__.py",
    "verl/trainer/main_ppo.py",
    "verl/trainer/config/",
    "verl/workers/__init__.py",
    "verl/workers/config/",
    "verl/utils/__init__.py",
    "verl/utils/profiler/",
    "verl/utils/skip/",
)

# verl's own start-up checks need a micro-batch size for each static batch
MICRO_BATCHES = (
    "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n"
    "    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \\\n"
    "    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2\n"
)
# keys only the modified verl has: one in its YAML and dataclass, one in its YAML alone, one in its dataclass alone
OWN_KEYS = (
    "    actor_rollout_ref.actor.my_clip=0.3 \\\n    my_research.alpha=0.7 \\\n"
    "    +actor_rollout_ref.actor.my_declared=3 \\\n"
)


def call(body: str) -> str:
    return f"python3 -m verl.trainer.main_ppo \\\n{body}{MICRO_BATCHES}"


def script(body: str) -> str:
    return "#!/bin/bash\n" + call(body)


def sapo_lint(*args: str, cwd: Path, cache: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("sapo-lint")
    cmd = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]
    return subprocess.run(
        [*cmd, "--no-shellcheck", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1", "SAPO_LINT_CACHE_DIR": str(cache), **(env or {})},
    )


def report(*args: str, cwd: Path, cache: Path, env: dict | None = None) -> dict:
    proc = sapo_lint("--format", "json", *args, cwd=cwd, cache=cache, env=env)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def codes(found: dict, path: str) -> list[tuple[str, str]]:
    return [(d["code"], d["message"]) for d in found["diagnostics"] if d["path"] == path]


def modified_verl(repo: Path) -> None:
    """verl main's parts the builder reads, in `repo/verl`, with keys of the repository's own: a YAML key backed by a
    dataclass field, a YAML section of its own, a dataclass field the YAML does not set."""
    with tarfile.open(ARCHIVE) as tf:
        members = [m for m in tf.getmembers() if m.name.partition("/")[2].startswith(PARTS)]
        for m in members:
            m.name = m.name.partition("/")[2]
        tf.extractall(repo, members=members, filter="data")
    verl = repo / "verl"
    actor_yaml = verl / "trainer" / "config" / "actor" / "actor.yaml"
    actor_yaml.write_text(actor_yaml.read_text() + "\n# a research knob\nmy_clip: 0.2\n")
    actor = verl / "workers" / "config" / "actor.py"
    text = actor.read_text()
    assert "    clip_ratio: float = 0.2\n" in text
    actor.write_text(
        text.replace(
            "    clip_ratio: float = 0.2\n",
            "    clip_ratio: float = 0.2\n    my_clip: float = 0.2\n    my_declared: int = 1\n",
            1,
        )
    )
    trainer = verl / "trainer" / "config" / "ppo_trainer.yaml"
    trainer.write_text(trainer.read_text() + "\nmy_research:\n  alpha: 0.5\n  beta: true\n")


@pytest.fixture(scope="session")
def vendored(tmp_path_factory):
    """A repository vendoring a modified verl, with run scripts and a config directory of its own; linted once here
    (the run that builds the snapshot), its report kept for the tests."""
    if not ARCHIVE.is_file():
        pytest.skip(f"no {ARCHIVE}")
    base = tmp_path_factory.mktemp("vendored")
    repo, cache = base / "repo", base / "cache"
    (repo / ".git").mkdir(parents=True)
    modified_verl(repo)
    scripts = repo / "scripts"
    scripts.mkdir()
    (scripts / "clean.sh").write_text(script(OWN_KEYS))
    (scripts / "typo.sh").write_text(script("    actor_rollout_ref.actor.my_clpi=0.3 \\\n"))
    first = report("scripts/clean.sh", "scripts/typo.sh", cwd=repo, cache=cache)
    return SimpleNamespace(repo=repo, cache=cache, first=first)


@needs_verl_main
def test_a_modified_vendored_verl_lints_its_own_keys_and_a_typo_in_one_is_sl001(vendored):
    found = vendored.first
    assert not [c for c in codes(found, "scripts/clean.sh") if c[0].startswith(("SL", "RF004"))]
    (typo,) = [m for c, m in codes(found, "scripts/typo.sh") if c == "SL001"]
    assert "actor_rollout_ref.actor.my_clpi" in typo and "Did you mean `actor_rollout_ref.actor.my_clip`?" in typo
    tree = {"version": "0.10.0.dev", "source": "source-tree", "path": "verl", "snapshot": "built"}
    assert [verl_choice(found, p) for p in ("scripts/clean.sh", "scripts/typo.sh")] == [tree, tree]


@needs_verl_main
def test_a_second_run_reads_the_snapshot_from_the_cache(vendored):
    built = sorted((vendored.cache / "verl").glob("*.json"))
    assert len(built) == 1
    written = built[0].stat().st_mtime_ns
    again = report("scripts/clean.sh", cwd=vendored.repo, cache=vendored.cache)
    assert again["verl"]["scripts/clean.sh"]["snapshot"] == "cached"
    assert sorted((vendored.cache / "verl").glob("*.json")) == built and built[0].stat().st_mtime_ns == written
    text = sapo_lint("scripts/clean.sh", cwd=vendored.repo, cache=vendored.cache).stdout
    assert "Linted against verl 0.10.0.dev from ./verl (source tree, snapshot cached) and megatron-core 0.18.0." in text


@needs_verl_main
def test_the_same_script_outside_the_repository_falls_back_to_the_newest_release(vendored, tmp_path):
    shutil.copy(vendored.repo / "scripts" / "clean.sh", tmp_path / "clean.sh")
    found = report("clean.sh", cwd=tmp_path, cache=vendored.cache)
    assert verl_choice(found, "clean.sh") == {
        "version": newest_release(),
        "source": "newest",
        "path": None,
        "snapshot": "committed",
    }
    unknown = {m.split("`")[1] for c, m in codes(found, "clean.sh") if c in ("SL001", "SL003")}
    assert {"actor_rollout_ref.actor.my_clip", "my_research.alpha"} <= unknown


@needs_verl_main
def test_a_config_path_of_the_repository_is_composed_with_verls_configs(vendored):
    configs = vendored.repo / "configs"
    configs.mkdir(exist_ok=True)
    # verl's configs found through the config's own search path, and through the command line's
    (configs / "my_cfg.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\n\ndefaults:\n  - ppo_trainer\n  - _self_\n\n"
        "my_custom:\n  gamma: 1\n"
    )
    (configs / "here_cfg.yaml").write_text(
        "defaults:\n  - /ppo_trainer@_here_\n  - _self_\n\ntrainer:\n  project_name: x\n"
    )
    (vendored.repo / "scripts" / "custom.sh").write_text(
        '#!/bin/bash\nPROJECT_DIR="$(pwd)"\n'
        # Hydra takes a relative --config-path from the directory of the module declaring @hydra.main: verl/trainer/
        + call(
            "    --config-path=../../configs --config-name=my_cfg \\\n"
            "    my_custom.gamma=2 my_custom.gamam=3 actor_rollout_ref.actor.my_clip=0.1 \\\n"
        )
        + call(
            f'    --config-path {configs} --config-name here_cfg "hydra.searchpath=[pkg://verl.trainer.config]" \\\n'
            "    trainer.project_name=y trainer.nnodez=1 \\\n"
        )
        # from the directory the script is started in: the repository's root, or one below it
        + call(
            '    --config-path "$PROJECT_DIR/configs" --config-name my_cfg my_custom.gamma=5 my_custom.gammma=1 \\\n'
        )
        + call('    --config-path "$CONFIG_DIR" --config-name my_cfg my_custom.gamam=3 \\\n')
    )
    found = codes(report("scripts/custom.sh", cwd=vendored.repo, cache=vendored.cache), "scripts/custom.sh")
    unknown = sorted(m.split("`")[1] for c, m in found if c == "SL001")
    assert unknown == ["my_custom.gamam", "my_custom.gammma", "trainer.nnodez"], found
    assert any("Did you mean `my_custom.gamma`?" in m for c, m in found if c == "SL001")
    (unresolved,) = [m for c, m in found if c == "RF004"]
    assert "config `my_cfg`: --config-path `$CONFIG_DIR` is not known statically" in unresolved


TINY = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.tiny_knob=3\n"


def test_concurrent_runs_build_a_tree_once(tmp_path):
    (tmp_path / ".git").mkdir()
    tiny_verl(tmp_path)
    (tmp_path / "run.sh").write_text(TINY)
    exe = shutil.which("sapo-lint")
    cmd = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]
    env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(tmp_path / "cache")}
    runs = [
        subprocess.Popen(
            [*cmd, "--no-shellcheck", "--format", "json", "run.sh"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert all(run.returncode == 0 for run in runs), outputs
    states = sorted(json.loads(out)["verl"]["run.sh"]["snapshot"] for out, _ in outputs)
    assert states == ["built", "cached", "cached"]
    assert len(list((tmp_path / "cache" / "verl").glob("*.json"))) == 1


def test_a_tree_that_cannot_be_built_is_one_warning_and_no_other_verl_judges_the_script(tmp_path):
    (tmp_path / ".git").mkdir()
    tiny_verl(tmp_path, entry=False)  # no entry module names ppo_trainer: not a verl the builder can read
    (tmp_path / "run.sh").write_text(TINY)
    for _ in range(2):  # the second run remembers the failure
        proc = sapo_lint("--format", "json", "run.sh", cwd=tmp_path, cache=tmp_path / "cache")
        assert "Traceback" not in proc.stderr
        found = json.loads(proc.stdout)
        (warning,) = [d for d in found["diagnostics"] if d["code"] == "RF004"]
        assert (
            warning["severity"] == "warning" and "no entry module's @hydra.main names ppo_trainer" in warning["message"]
        )
        # the tree is what the script runs: no other verl judges its keys, and the file is not checked
        assert verl_choice(found, "run.sh")["snapshot"] == "unbuilt"
        assert [r["reason"] for r in found["summary"]["not_checked_reasons"]] == ["snapshot-not-built"]
    assert len(list((tmp_path / "cache" / "verl").glob("*.failed"))) == 1


@pytest.mark.parametrize(
    "where, pin",
    [
        ("requirements.txt", "torch==2.6.0\nverl[vllm]==0.8.0  # the release we train with\n"),
        ("pyproject.toml", '[project]\nname = "r"\ndependencies = ["verl==0.8.0"]\n'),
        ("run.sh", None),
    ],
)
def test_a_pin_picks_its_releases_snapshot(tmp_path, where, pin):
    body = "    actor_rollout_ref.rollout.skip.dump_dir=/tmp/skip \\\n"  # verl 0.8.0 has it, 0.9.1 does not
    text = script(body)
    if pin is None:
        text = text.replace("#!/bin/bash\n", "#!/bin/bash\n# set-up: pip install 'verl==0.8.0'\n")
    else:
        (tmp_path / where).write_text(pin)
    (tmp_path / "run.sh").write_text(text)
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    line = 2 if where != "pyproject.toml" else 3
    assert verl_choice(found, "run.sh") == {
        "version": "0.8.0",
        "source": "pin",
        "path": f"{where}:{line}",
        "snapshot": "committed",
    }
    assert not [c for c in codes(found, "run.sh") if c[0] == "SL001"]


def test_a_release_without_a_snapshot_of_its_own_takes_its_minors_newest():
    assert committed_for("0.8.0") == "0.8.0"
    assert committed_for("0.8.7") == "0.8.0" and committed_for("0.9") == "0.9.1"
    assert committed_for("0.3.0") is None and committed_for("main") is None


def test_an_installed_verl_is_found_without_importing_it(tmp_path):
    """A release from the package index with a committed snapshot uses it; an editable install (PEP 610
    `direct_url.json`) is snapshotted from its files. The package's `__init__` would fail if it were imported."""
    site = tmp_path / "site"
    package = tiny_verl(site, version="0.8.0")
    (package / "__init__.py").write_text("raise SystemExit('verl was imported')\n")
    info = site / "verl-0.8.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: verl\nVersion: 0.8.0\n")
    (tmp_path / "run.sh").write_text(TINY)
    env = {"PYTHONPATH": str(site)}
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache", env=env)
    assert verl_choice(found, "run.sh") == {
        "version": "0.8.0",
        "source": "installed",
        "path": "site/verl",
        "snapshot": "committed",
    }
    (info / "direct_url.json").write_text('{"url": "file:///src/verl", "dir_info": {"editable": true}}')
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache", env=env)
    assert found["verl"]["run.sh"]["snapshot"] == "built"
    assert not [c for c in codes(found, "run.sh") if c[0] == "SL001"]  # tiny_knob: the installed tree's own key


def test_composing_a_custom_config_never_imports_a_package_its_search_path_names(tmp_path):
    (tmp_path / ".git").mkdir()
    tiny_verl(tmp_path)
    site = tmp_path / "site"
    (site / "evilpkg").mkdir(parents=True)
    imported = tmp_path / "imported"
    (site / "evilpkg" / "__init__.py").write_text(f"open({str(imported)!r}, 'w').close()\n")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "c.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://evilpkg\n\ndefaults:\n  - ppo_trainer\n  - _self_\n\nextra:\n  k: 1\n"
    )  # verl's config directory is on the search path all the same
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=../../configs --config-name=c \\\n"
        "    extra.k=2 extra.kk=1 trainer.tiny_knob=3\n"
    )
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache", env={"PYTHONPATH": str(site)})
    assert [m.split("`")[1] for c, m in codes(found, "run.sh") if c == "SL001"] == ["extra.kk"]
    assert not imported.exists()
