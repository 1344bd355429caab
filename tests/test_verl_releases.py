"""The verl releases before 0.8 that third-party repositories still run (0.4.1, 0.5.0, 0.6.1, 0.7.1: the newest patch
of each minor whose config composes): their snapshots are what `schema build --wheel` makes of the wheels, a minor
release (`0.6`) names its newest snapshot wherever a version is given, and SL001 says in which releases an unknown
key exists, whatever groups each release's config has."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from sapo_toolkit.linter.schema import available_verl_versions, load_snapshot, resolve_verl_version
from sapo_toolkit.schemas import build

from .helpers import SCRIPTS, recipe
from .test_schema_build import MCORE_PLATFORM, SCHEMAS, _first_differences, _load, _wheel

OLD_RELEASES = ("0.4.1", "0.5.0", "0.6.1", "0.7.1")
# Rebuilt byte-identically by tests/test_schema_build.py, one test each.
NEWER = ("0.8.0", "0.9.1", "0.10.0.dev")


def test_every_committed_verl_snapshot_is_rebuilt_by_a_test():
    assert set(available_verl_versions()) == {*OLD_RELEASES, *NEWER}


@pytest.mark.slow
@pytest.mark.network
def test_old_release_snapshots_rebuild_byte_identical():
    """One test for the four releases: a build is ~5-10 s of CPU each (one per test would pay the fixture and
    process start-up four times)."""
    wheels = {version: _wheel(f"verl=={version}", f"verl-{version}-*.whl") for version in OLD_RELEASES}
    stale, seconds = [], {}
    for version, wheel in wheels.items():
        started = time.perf_counter()
        located = build.locate_verl(wheel=wheel)
        assert located.version == version and located.source == wheel.name
        text = build.snapshot_text(build.build_verl_snapshot(*located))
        seconds[version] = round(time.perf_counter() - started, 1)
        committed = build.verl_snapshot_path(SCHEMAS, version).read_text(encoding="utf-8")
        if text != committed:
            diffs = _first_differences(json.loads(text), json.loads(committed), limit=3)
            stale.append(
                f"{version}: regenerate with `sapo-lint schema build --wheel {wheel}`:\n  " + "\n  ".join(diffs)
            )
    assert not stale, "\n".join(stale)
    print(f"build seconds per release: {seconds}")


@pytest.mark.network
def test_megatron_core_0131_snapshot_matches_committed():
    wheel = _wheel("megatron-core==0.13.1", "megatron_core-0.13.1-*.whl", MCORE_PLATFORM)
    built = json.loads(build.snapshot_text(build.build_consumer_snapshot(wheel)))
    committed = _load(build.consumer_snapshot_path(SCHEMAS, "megatron-core", "0.13.1"))
    assert {k: v for k, v in built.items() if k != "source"} == {k: v for k, v in committed.items() if k != "source"}


def test_old_release_snapshots_hold_their_trainer_configs():
    for version in OLD_RELEASES:
        # verl <= 0.7's ppo_megatron_trainer.yaml is a config of its own (run with --config-name), not ppo_trainer
        # with another model_engine
        megatron = load_snapshot(version, "ppo_megatron_trainer")
        assert megatron.tree(megatron.default_selection()).get(
            "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
        )
        assert "model_engine" not in megatron.groups
    assert "model_engine" not in load_snapshot("0.6.1", "ppo_trainer").groups
    loss_modes = load_snapshot("0.4.1", "ppo_trainer").tree({}).get("actor_rollout_ref.actor.policy_loss.loss_mode")
    # verl 0.4's actors compute "vanilla" themselves and look only the other modes up in the registry
    assert loss_modes["choices"] == ["clip_cov", "kl_cov", "vanilla"]


# ---------------------------------------------------------------------------------------------------------------
# Linting against an old release, through the console script
# ---------------------------------------------------------------------------------------------------------------


def _lint(*args: str, cwd: Path) -> tuple[int, list[dict]]:
    proc = subprocess.run(
        [str(SCRIPTS / "sapo-lint"), "check", "--format", "json", "--no-shellcheck", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def _script(folder: Path, keys: list[str], config_name: str = "ppo_trainer") -> Path:
    lines = [f"    {key}=1 \\" for key in keys]
    path = folder / "run.sh"
    path.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-name " + config_name + " \\\n" + "\n".join(lines) + "\n"
    )
    return path


def _unknown(found: list[dict]) -> dict[str, str]:
    """key -> SL001 message, the key read from the line the finding is on."""
    return {d["message"].split("`")[1]: d["message"] for d in found if d["code"] == "SL001"}


def _tree(version: str, config_name: str = "ppo_trainer"):
    snapshot = load_snapshot(version, config_name)
    return snapshot.tree(snapshot.default_selection())


def _plain_keys(tree) -> set[str]:
    """Value keys an override sets plainly, under a node whose keys are checked."""
    return {
        path
        for path, entry in tree.entries.items()
        if entry.get("kind") == "value"
        and not entry.get("declared_only")
        and not path.rpartition(".")[2].startswith("_")
    }


def _settable(path: str, tree) -> bool:
    return (tree.get(path.rpartition(".")[0]) or {}).get("kind") == "node"


def test_a_key_each_old_release_dropped_names_that_release(tmp_path):
    """Linted against the default (0.9.1), a key that an old release had and no later one has is SL001 saying it
    was removed or renamed since that release: for every old release."""
    versions = available_verl_versions()
    newest = _tree("0.9.1")
    dropped = {}
    for version in OLD_RELEASES:
        later = [_tree(v) for v in versions[versions.index(version) + 1 :]]
        candidates = [
            p for p in _plain_keys(_tree(version)) if _settable(p, newest) and all(t.get(p) is None for t in later)
        ]
        dropped[min(candidates)] = version
    code, found = _lint(str(_script(tmp_path, list(dropped))), cwd=tmp_path)
    unknown = _unknown(found)
    assert code == 1 and set(unknown) == set(dropped)
    for key, version in dropped.items():
        assert "not in verl 0.9.1 `ppo_trainer`" in unknown[key]
        assert f"Removed or renamed since verl {version}: present there, not in 0.9.1." in unknown[key], unknown[key]


@pytest.mark.parametrize("version", OLD_RELEASES)
def test_a_script_pinned_to_a_minor_gets_that_release_and_is_told_what_came_later(tmp_path, version):
    """`--verl-version 0.6` lints against 0.6.1: a key 0.9.1 added is SL001 naming the releases that have it, and a
    key only the old release has is accepted."""
    minor = ".".join(version.split(".")[:2])
    old, newest = _tree(version), _tree("0.9.1")
    added = min(p for p in _plain_keys(newest) - _plain_keys(old) if _settable(p, old) and old.get(p) is None)
    kept = min(p for p in _plain_keys(old) if newest.get(p) is None and _settable(p, newest))
    code, found = _lint("--verl-version", minor, str(_script(tmp_path, [added, kept])), cwd=tmp_path)
    unknown = _unknown(found)
    assert set(unknown) == {added}
    assert f"not in verl {version} `ppo_trainer`" in unknown[added]
    assert f"Added after {version}: present in verl " in unknown[added] and "0.9.1" in unknown[added]


def test_megatron_trainer_of_an_old_release_is_compared_with_newer_megatron_trees(tmp_path):
    """verl 0.4's ppo_megatron_trainer has no config groups; 0.9.1's selects model_engine=megatron: a key of that
    tree is still named as added after 0.4.1."""
    old, newest = _tree("0.4.1", "ppo_megatron_trainer"), _tree("0.9.1", "ppo_megatron_trainer")
    added = min(p for p in _plain_keys(newest) if ".megatron." in p and old.get(p) is None and _settable(p, old))
    _, found = _lint("--verl-version", "0.4", str(_script(tmp_path, [added], "ppo_megatron_trainer")), cwd=tmp_path)
    message = _unknown(found)[added]
    assert "not in verl 0.4.1 `ppo_megatron_trainer`" in message and "Added after 0.4.1" in message
    assert "0.9.1" in message


def test_project_setting_and_recipe_name_a_minor(tmp_path):
    added = "actor_rollout_ref.actor.calculate_entropy"  # a field of ActorConfig since verl 0.7
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nverl-version = "0.6"\n')
    _, found = _lint(str(_script(tmp_path, [added])), cwd=tmp_path)
    assert "not in verl 0.6.1 `ppo_trainer`" in _unknown(found)[added]

    (tmp_path / "pyproject.toml").unlink()
    body = 'verl: "0.6"\nconfig_name: ppo_trainer\noverrides:\n  ' + added + ": true\n"
    path = tmp_path / "r.yaml"
    path.write_text(recipe(body))
    _, found = _lint(str(path), cwd=tmp_path)
    assert not [d for d in found if d["code"] == "RF001"], found  # the recipe schema takes a minor
    assert "not in verl 0.6.1 `ppo_trainer`" in _unknown(found)[added]


def test_a_minor_names_its_newest_snapshot_and_nothing_else_is_guessed():
    assert resolve_verl_version("0.6") == "0.6.1"
    assert resolve_verl_version("0.10") == "0.10.0.dev"  # the newest 0.10 snapshot is main's
    assert resolve_verl_version("0.9.1") == "0.9.1"
    assert resolve_verl_version("0.6.0") == "0.6.1"  # a release without a snapshot of its own: its minor's
    assert resolve_verl_version("main") == "0.10.0.dev"  # verl's development branch: the newest .dev snapshot
    for unknown in ("0.3", "0", "0.6.x"):  # reported with the snapshots there are
        assert resolve_verl_version(unknown) == unknown


def test_an_unknown_release_is_one_usage_error_listing_the_snapshots(tmp_path):
    proc = subprocess.run(
        [str(SCRIPTS / "sapo-lint"), "check", "--verl-version", "0.3", str(_script(tmp_path, ["trainer.nnodes"]))],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no snapshot of verl 0.3" in proc.stderr and ", ".join(available_verl_versions()) in proc.stderr


def test_a_release_without_a_snapshot_of_its_own_says_which_stands_in(tmp_path):
    proc = subprocess.run(
        [str(SCRIPTS / "sapo-lint"), "check", "--no-shellcheck", "--verl-version", "0.7.0",
         str(_script(tmp_path, ["trainer.nnodes"]))],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "Linted against verl 0.7.0 (--verl-version, the 0.7.1 snapshot standing in)" in proc.stdout
