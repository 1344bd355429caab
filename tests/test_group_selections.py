"""Config-group selections checked as Hydra composes them (issue 21): a run script that swaps a group's option,
deletes or appends one, linted through the console script; and the snapshot data that makes it possible (every
option of every group, each single override rebuilt exactly)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sapo_toolkit.linter.schema import SCHEMA_DIR, available_verl_versions, load_snapshot, subtree_entries

from .helpers import SCRIPTS

SWAPPED_ACTOR_KEEPS_MEGATRON_KEYS = """#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    model_engine=megatron \\
    actor@actor_rollout_ref.actor=dp_actor \\
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\
    actor_rollout_ref.actor.fsdp_config.param_offload=True \\
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2
"""


def lint(tmp_path: Path, script: str, *args: str) -> tuple[int, list[dict]]:
    """The console script on one run script; (exit code, JSON diagnostics)."""
    path = tmp_path / "run_train.sh"
    path.write_text(script, encoding="utf-8")
    proc = subprocess.run(
        [
            str(SCRIPTS / "sapo-lint"),
            "--no-shellcheck",
            "--format",
            "json",
            "--verl-version",
            "0.9.1",
            *args,
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def call(*overrides: str) -> str:
    return "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n" + " \\\n".join(f"    {o}" for o in overrides) + "\n"


def schema(found: list[dict]) -> list[dict]:
    return [d for d in found if d["code"] in ("SL001", "SL002", "SL005", "SL006", "SL011", "SL012")]


def test_a_swap_to_another_engine_reports_each_key_only_the_replaced_option_has(tmp_path):
    rc, found = lint(tmp_path, SWAPPED_ACTOR_KEEPS_MEGATRON_KEYS)
    assert rc == 1
    unknown = [d for d in schema(found) if d["code"] == "SL001"]
    assert [d["line"] for d in unknown] == [5, 6]  # the ref stays megatron_ref; fsdp_config is dp_actor's
    for d in unknown:
        assert "exists in `actor/megatron_actor`, not in `actor/dp_actor`" in d["message"], d["message"]
    # the reverse: swapping to Megatron under the default engine makes those keys real, and FSDP's unknown
    rc, found = lint(
        tmp_path,
        call(
            "actor@actor_rollout_ref.actor=megatron_actor",
            "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
            "actor_rollout_ref.actor.fsdp_config.param_offload=True",
        ),
    )
    assert [(d["code"], d["line"]) for d in schema(found)] == [("SL001", 5)]
    assert "exists in `actor/dp_actor`, not in `actor/megatron_actor`" in schema(found)[0]["message"]


def test_a_misspelt_option_is_one_error_naming_the_closest(tmp_path):
    rc, found = lint(tmp_path, call("critic=megatron_critc", "critic.ppo_epochs=2"))
    assert rc == 1
    assert [d["code"] for d in schema(found)] == ["SL005"]
    message = schema(found)[0]["message"]
    assert "Could not find 'critic/megatron_critc'" in message and "Did you mean `megatron_critic`?" in message


def test_a_placement_hydra_does_not_have_is_refused_with_hydras_words(tmp_path):
    rc, found = lint(
        tmp_path,
        call(
            "critic@critic=megatron_critic",
            "model=hf_model",
            "~critic=megatron_critic",
            "reward@reward=null",
            "foo@x=1",
        ),
    )
    assert rc == 1
    assert [(d["code"], d["line"]) for d in schema(found)] == [("SL012", n) for n in (3, 4, 5, 6, 7)]
    messages = [d["message"] for d in schema(found)]
    assert "Could not override 'critic@critic'. Did you mean to override critic?" in messages[0]
    assert "Did you mean to override one of model@actor_rollout_ref.model, model@critic.model?" in messages[1]
    assert "Could not delete 'critic=megatron_critic'" in messages[2]  # model_engine=dp selects dp_critic
    assert "must be a string or a list. Got NoneType" in messages[3]
    assert "config group 'foo' does not exist" in messages[4]


def test_an_appended_option_adds_its_keys_and_a_deletion_removes_them(tmp_path):
    rc, found = lint(
        tmp_path,
        call(
            "+profiler@actor_rollout_ref.prof=profiler",
            "actor_rollout_ref.prof.tool=nsys",
            "actor_rollout_ref.prof.toolx=nsys",
            "~model@critic.model",
            "critic.model.path=x",
            "+critic=dp_critic",
        ),
    )
    assert [(d["code"], d["line"]) for d in schema(found)] == [("SL001", 5), ("SL001", 7), ("SL002", 8)]
    assert "which `~model@critic.model` removes" in schema(found)[1]["message"]


def test_an_option_from_a_directory_outside_verl_is_an_info_never_an_error(tmp_path):
    rc, found = lint(
        tmp_path,
        call(
            "hydra.searchpath=[pkg://verl_mlite.config]",
            "actor@actor_rollout_ref.actor=mlite_actor",
            "actor_rollout_ref.actor.engine.tp=2",
            "mlite@actor_rollout_ref.mlite=default",
        ),
    )
    assert [(d["code"], d["severity"]) for d in schema(found)] == [("SL011", "info")] * 2
    # verl's own directory on the search path adds no option: a misspelt one stays an error
    rc, found = lint(tmp_path, call("hydra.searchpath=[pkg://verl.trainer.config]", "critic=dp_critc"))
    assert [d["code"] for d in schema(found)] == ["SL005"]


def test_model_engine_still_selects_the_tree(tmp_path):
    rc, found = lint(tmp_path, call("model_engine=dp", "actor_rollout_ref.actor.fsdp_config.param_offload=True"))
    assert not schema(found)
    rc, found = lint(tmp_path, call("model_engine=fsdp9"))
    assert [d["code"] for d in schema(found)] == ["SL005"]
    rc, found = lint(tmp_path, call("~model_engine"))
    assert [d["code"] for d in schema(found)] == ["SL012"] and "${model_engine}_critic" in schema(found)[0]["message"]


# --- the snapshots ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", available_verl_versions())
def test_every_option_of_every_group_has_a_subtree(version):
    data = json.loads((SCHEMA_DIR / "verl" / f"{version}.json").read_text(encoding="utf-8"))
    assert data["format"] == 4
    for name, config in data["configs"].items():
        snap = load_snapshot(version, name)
        for key, placement in config["defaults"].items():
            assert placement["group"] in config["options"], (name, key)
        for group, options in config["options"].items():
            for option in options:
                subtree = (
                    subtree_entries(data, f"{group}/{option}") if f"{group}/{option}" in data["subtrees"] else None
                )
                assert subtree is None or subtree[""]["kind"] in ("node", "dict"), (group, option)
        assert snap.placements == config["defaults"]


def test_a_swap_is_rebuilt_as_the_options_subtree_where_it_lands():
    snap = load_snapshot("0.9.1", "ppo_megatron_trainer")
    selection = snap.default_selection()
    from sapo_toolkit.linter.schema import GroupChange

    swap = GroupChange("actor@actor_rollout_ref.actor", "actor", "actor_rollout_ref.actor", "dp_actor")
    swapped = snap.tree(selection, (swap,))
    dp = snap.tree({"model_engine": "dp"})
    actor = [p for p in dp.entries if p.startswith("actor_rollout_ref.actor.")]
    assert [p for p in swapped.entries if p.startswith("actor_rollout_ref.actor.")] == actor
    assert swapped.get("actor_rollout_ref.ref.megatron") is not None  # the ref stays Megatron's
    deleted = snap.tree(selection, (GroupChange("critic", "critic", "critic", None),))
    assert sorted(p for p in deleted.entries if p.startswith("critic")) == [
        "critic",
        *sorted(p for p in dp.entries if p.startswith("critic.model")),
    ]


def test_linting_never_loads_hydra():
    """The loader rebuilds group overrides with the snapshot's own layout functions (schemas/build/layout.py):
    a lint starts without hydra or omegaconf."""
    code = "import sys, sapo_toolkit.linter.lint; print([m for m in ('hydra', 'omegaconf') if m in sys.modules])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert proc.stdout.strip() == "[]"
