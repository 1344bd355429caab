"""Naming the model of a file whose model path is known only at run time (issue 33, item 4): a `# sapo-lint:
model=` comment in the script or recipe, `[tool.sapo-lint] model`, and `--override` of the model key, each through
the console script; RF005 names all three, once per file. And SFT commands (item 3): the model is read from the
SFT trainer's own key (`model.partial_pretrain`, `model.path`), never reported as a missing actor path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sapo_toolkit.linter import api
from sapo_toolkit.linter.settings import Settings

from .helpers import SCRIPTS

TP3 = (
    "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
    "    actor_rollout_ref.model.path={path} \\\n"
    "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=3 \\\n"
    "    trainer.n_gpus_per_node=3 trainer.nnodes=1\n"
)
RUN_TIME = TP3.format(path='"$MODEL_PATH"')  # no default: known only when the script runs
THREE_WAYS = (
    "--override actor_rollout_ref.model.path=ID",
    '`model = "ID"` under [tool.sapo-lint]',
    "`# sapo-lint: model=ID` comment",
)


def lint(folder: Path, name: str, text: str, *args: str) -> list[dict]:
    path = folder / name
    path.write_text(text)
    env = {**os.environ, "NO_COLOR": "1", "HF_HOME": str(folder / "hf")}
    env.pop("HF_HUB_CACHE", None)
    result = subprocess.run(
        [str(SCRIPTS / "sapo-lint"), "--no-shellcheck", "--format", "json", *args, str(path)],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return json.loads(result.stdout)["diagnostics"]


def heads_of(found: list[dict]) -> str | None:
    """The model TP003 names (`qwen3-8b has 32 attention heads`), None without TP003."""
    tp003 = [d["message"] for d in found if d["code"] == "TP003"]
    return tp003[0].split(": ", 1)[1].split(" has ")[0] if tp003 else None


def rf005(found: list[dict]) -> list[dict]:
    return [d for d in found if d["code"] == "RF005"]


def test_a_path_known_only_at_run_time_names_the_three_ways_once(tmp_path):
    # two device variants: still one note for the file
    script = 'case "$DEVICE" in npu) X=1 ;; *) X=2 ;; esac\n' + RUN_TIME
    (note,) = rf005(lint(tmp_path, "run_a.sh", script))
    for way in THREE_WAYS:
        assert way in note["message"]
    assert note["line"] == 3


@pytest.mark.parametrize(
    ("written", "args", "pyproject"),
    [
        ("# sapo-lint: model=Qwen/Qwen3-8B\n", (), None),
        ("", ("--override", "actor_rollout_ref.model.path=Qwen/Qwen3-8B"), None),
        ("", (), '[tool.sapo-lint]\nmodel = "Qwen/Qwen3-8B"\n'),
    ],
    ids=["comment", "override", "setting"],
)
def test_each_way_names_the_model(tmp_path, written, args, pyproject):
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    found = lint(tmp_path, "run_a.sh", written + RUN_TIME, *args)
    assert not rf005(found) and heads_of(found) == "qwen3-8b"


def test_the_comment_wins_over_the_scripts_path_and_the_override_over_the_comment(tmp_path):
    script = "# sapo-lint: model=Qwen/Qwen3-8B\n" + TP3.format(path="Qwen/Qwen2.5-7B")
    assert heads_of(lint(tmp_path, "run_a.sh", script)) == "qwen3-8b"
    overridden = lint(tmp_path, "run_a.sh", script, "--override", "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B")
    assert heads_of(overridden) == "qwen2.5-7b"


def test_the_setting_does_not_replace_a_path_the_script_names(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nmodel = "Qwen/Qwen3-8B"\n')
    assert heads_of(lint(tmp_path, "run_a.sh", TP3.format(path="Qwen/Qwen2.5-7B"))) == "qwen2.5-7b"
    # a path whose known end names a model is the script's own too
    assert heads_of(lint(tmp_path, "run_a.sh", TP3.format(path="$HOME/models/Qwen2.5-7B"))) == "qwen2.5-7b"


def test_a_relative_setting_is_a_directory_beside_the_pyproject(tmp_path):
    from sapo_toolkit.linter.catalog import _cards

    (tmp_path / "models" / "mine").mkdir(parents=True)
    (tmp_path / "models" / "mine" / "config.json").write_text(json.dumps(_cards()["qwen3-8b"]["config"]))
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nmodel = "models/mine"\n')
    (tmp_path / "scripts").mkdir()
    found = lint(tmp_path / "scripts", "run_a.sh", RUN_TIME)
    assert not rf005(found) and heads_of(found) == "mine"


def test_a_comment_naming_no_known_model_is_the_note_at_the_comment(tmp_path):
    (note,) = rf005(lint(tmp_path, "run_a.sh", "#!/bin/bash\n# sapo-lint: model=acme/private-7b\n" + RUN_TIME))
    assert note["line"] == 2
    assert note["message"].startswith("the `# sapo-lint: model=` comment: `acme/private-7b` is not a local directory")


def test_a_recipe_takes_the_comment_the_setting_and_the_override(tmp_path):
    recipe = (
        "recipe: sapo-recipe/v1\nname: demo\nconfig_name: ppo_megatron_trainer\noverrides:\n"
        "  actor_rollout_ref.actor.megatron.tensor_model_parallel_size: 3\n"
        "  trainer.n_gpus_per_node: 3\n  trainer.nnodes: 1\n"
    )
    (note,) = rf005(lint(tmp_path, "r.yaml", recipe))
    assert all(way in note["message"] for way in THREE_WAYS)
    assert heads_of(lint(tmp_path, "r.yaml", "# sapo-lint: model=Qwen/Qwen3-8B\n" + recipe)) == "qwen3-8b"
    overridden = lint(tmp_path, "r.yaml", recipe, "--override", "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B")
    assert heads_of(overridden) == "qwen2.5-7b"
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nmodel = "Qwen/Qwen3-8B"\n')
    assert heads_of(lint(tmp_path, "r.yaml", recipe)) == "qwen3-8b"


# -- SFT ---------------------------------------------------------------------------------------------------------------

FSDP_SFT = (
    "torchrun --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer \\\n"
    "    model.partial_pretrain={path} trainer.total_epochs=1\n"
)
ENGINE_SFT = (
    "torchrun --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer \\\n"
    "    model.path={path} trainer.n_gpus_per_node=8\n"
)


def loaded_models(folder: Path, text: str, verl: str) -> list:
    path = folder / "run_sft.sh"
    path.write_text(text)
    loaded = api.load(path, api.read_options(Settings(), (), verl))
    return [c.model.name if c.model else None for c in loaded.commands], list(loaded.problems)


@pytest.mark.parametrize(
    ("script", "verl"), [(FSDP_SFT, "0.5.0"), (ENGINE_SFT, "0.7.1"), (ENGINE_SFT, "0.9.1")], ids=["fsdp", "0.7", "0.9"]
)
def test_an_sft_command_has_its_model_from_its_own_key(tmp_path, script, verl):
    models, problems = loaded_models(tmp_path, script.format(path="Qwen/Qwen3-8B"), verl)
    assert models == ["qwen3-8b"] and not [p for p in problems if type(p).__name__ == "UnknownModel"]


@pytest.mark.parametrize(("script", "verl"), [(FSDP_SFT, "0.5.0"), (ENGINE_SFT, "0.7.1")], ids=["fsdp", "engine"])
def test_an_sft_command_never_claims_a_missing_actor_path(tmp_path, script, verl):
    # an SFT trainer's topology, memory and checkpoint rules need the shape: an unknown model is one note, which
    # names the SFT trainer's own key, never the actor's
    found = lint(tmp_path, "run_sft.sh", script.format(path='"$MODEL_PATH"'), "--verl-version", verl)
    (note,) = rf005(found)
    key = "model.partial_pretrain" if "fsdp_sft" in script else "model.path"
    assert f"--override {key}=ID" in note["message"] and "actor_rollout_ref.model.path" not in json.dumps(found)


def test_offline_generation_names_its_own_model_key(tmp_path):
    script = "python3 -m verl.trainer.main_generation model.path=$MODEL_PATH trainer.n_gpus_per_node=8\n"
    (note,) = rf005(lint(tmp_path, "gen.sh", script, "--verl-version", "0.5.0"))
    assert "--override model.path=ID" in note["message"] and "actor_rollout_ref" not in note["message"]
