"""Config-group selections in a recipe's `overrides:` (issue 21, item 3): `actor@actor_rollout_ref.actor:
megatron_actor` is read into the same override as a run script's `actor@actor_rollout_ref.actor=megatron_actor` and
linted the same; `sapo-launch` passes it to Hydra as written (the plan's argv composes with real Hydra against verl
0.9.1's config, with the same selections); `sapo-lint convert` keeps a script's selections."""

import json
import subprocess

import pytest
import yaml

from sapo_toolkit.linter.core.command import Stack
from sapo_toolkit.linter.schema import DEFAULT_MBRIDGE, DEFAULT_MEGATRON_CORE
from sapo_toolkit.linter.sources.bash import read_script
from sapo_toolkit.linter.sources.files import read_text
from sapo_toolkit.linter.sources.recipe import ReadOptions, read_recipe

from .helpers import composed, sapo_launch

BASE = (
    "actor_rollout_ref.model.path=Qwen/Qwen3-8B",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
)
# Each Hydra form of a selection, valid or not, as a script passes it to verl's trainer.
CASES = {
    "swap": ["actor@actor_rollout_ref.actor=megatron_actor"],
    "engine": ["model_engine=megatron"],
    "default-package": ["critic=megatron_critic"],
    "misspelt": ["critic=criitc"],
    "wrong-package": ["critic@critic=dp_critic"],  # Hydra: "Could not override 'critic@critic'"
    "new-selection": ["+critic@critic2=dp_critic"],
    "force-add": ["++critic@critic2=dp_critic"],  # Hydra: "force-add of config groups is not supported"
    "delete": ["~ref@actor_rollout_ref.ref"],
    "delete-option": ["~ref@actor_rollout_ref.ref=dp_ref"],
    "null-option": ["rollout@actor_rollout_ref.rollout=null"],
    "old-option-keys": [
        "model_engine=megatron",
        "actor@actor_rollout_ref.actor=dp_actor",
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
    ],
}


def recipe_line(override: str) -> str:
    """An override in a recipe's YAML form: the Hydra key is the YAML key; `~key` alone is `~key: null`."""
    key, equal, value = override.partition("=")
    return f"  {key}: {value if equal else 'null'}\n"


def recipe_text(name: str, overrides, variants: str = "") -> str:
    lines = "".join(recipe_line(o) for o in (*BASE, *overrides))
    return (
        f'recipe: sapo-recipe/v1\nname: {name}\nverl: "0.9.1"\nconfig_name: ppo_trainer\noverrides:\n{lines}{variants}'
    )


def script_text(overrides, before: str = "") -> str:
    words = "".join(f' \\\n  "{o}"' for o in (*BASE, *overrides))
    return f"#!/bin/bash\n{before}python3 -m verl.trainer.main_ppo --config-name ppo_trainer{words}\n"


def lint(*paths) -> dict[str, set]:
    """`sapo-lint --format json` on the paths in one run: per file, its findings without their locations."""
    proc = subprocess.run(
        ["sapo-lint", "--format", "json", "--verl-version", "0.9.1", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    found: dict[str, set] = {str(p): set() for p in paths}
    for d in json.loads(proc.stdout)["diagnostics"]:
        found[d["path"]].add((d["code"], d["severity"], d["message"], d["variant"]))
    return found


def dry_run(recipe_path, *args) -> subprocess.CompletedProcess:
    proc = sapo_launch(recipe_path, "--dry-run", *args, cwd=recipe_path.parent)
    assert proc.returncode in (0, 1), proc.stderr  # 1: the lint gate refuses; the plan is shown either way
    return proc


def hydra_reads(argv) -> dict[str, tuple]:
    """Hydra's own parser on the plan's overrides: `key@package` -> (type, value) as Hydra reads them."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    read = OverridesParser.create().parse_overrides(list(argv))
    return {o.get_key_element().lstrip("~+"): (o.type.name, o.value()) for o in read}


def test_a_recipes_selections_are_read_as_the_scripts(tmp_path):
    options = ReadOptions("0.9.1", Stack(DEFAULT_MEGATRON_CORE, DEFAULT_MBRIDGE))
    for name, overrides in CASES.items():
        (tmp_path / f"{name}.yaml").write_text(recipe_text(name, overrides))
        (tmp_path / f"{name}.sh").write_text(script_text(overrides))
        (from_recipe,) = read_recipe(read_text(tmp_path / f"{name}.yaml"), options).recipe.commands
        (from_script,) = read_script(read_text(tmp_path / f"{name}.sh"), options).commands
        assert [(lo.key_text, lo.parsed) for lo in from_recipe.overrides] == [
            (lo.key_text, lo.parsed) for lo in from_script.overrides
        ], name
        assert from_recipe.hydra_overrides() == [*BASE, *overrides], name


def test_a_recipe_with_selections_lints_as_the_equivalent_script(tmp_path):
    for name, overrides in CASES.items():
        (tmp_path / f"{name}.yaml").write_text(recipe_text(name, overrides))
        (tmp_path / f"run_{name}.sh").write_text(script_text(overrides))
    found = lint(*sorted(tmp_path.iterdir()))
    for name in CASES:
        assert found[str(tmp_path / f"{name}.yaml")] == found[str(tmp_path / f"run_{name}.sh")], name


SELECTED = [
    "actor@actor_rollout_ref.actor=megatron_actor",
    "model_engine=megatron",
    "critic=megatron_critic",
    "~model@critic.model",
]
# One selection per device variant: a new one on gpu, a swap of the rollout's on npu.
VARIANTS = """variants:
  device:
    gpu:
      overrides: {+critic@critic2: dp_critic}
    npu:
      overrides:
        rollout@actor_rollout_ref.rollout: rollout
        algorithm@algorithm.rollout_correction: rollout_correction
"""


@pytest.mark.parametrize(
    ("device", "variant_selections", "choices"),
    [
        ("gpu", ["+critic@critic2=dp_critic"], {"critic@critic2": "dp_critic"}),
        (
            "npu",
            ["rollout@actor_rollout_ref.rollout=rollout", "algorithm@algorithm.rollout_correction=rollout_correction"],
            {
                "rollout@actor_rollout_ref.rollout": "rollout",
                "algorithm@algorithm.rollout_correction": "rollout_correction",
            },
        ),
    ],
)
def test_the_plan_passes_selections_to_hydra_as_written_and_they_compose(
    tmp_path, verl_config_dir, device, variant_selections, choices
):
    path = tmp_path / "groups.yaml"
    path.write_text(recipe_text("groups", SELECTED, VARIANTS))
    plan = json.loads(dry_run(path, "--device", device, "--format", "json").stdout)
    overrides = plan["argv"][5:]
    assert overrides[: len(BASE) + len(SELECTED) + len(variant_selections)] == [
        *BASE,
        *SELECTED,
        *variant_selections,
    ]
    # Hydra's parser reads each back as the selection the recipe wrote
    reads = hydra_reads(overrides)
    assert reads["actor@actor_rollout_ref.actor"] == ("CHANGE", "megatron_actor")
    assert reads["critic"] == ("CHANGE", "megatron_critic")
    assert reads["model@critic.model"] == ("DEL", None)
    for text in variant_selections:
        key, _, value = text.partition("=")
        assert reads[key.lstrip("+")] == ("ADD" if key.startswith("+") else "CHANGE", value)
    # and real Hydra composes verl 0.9.1's config with exactly these choices
    cfg = composed(verl_config_dir, plan["argv"][4], overrides, hydra_config=True)
    made = cfg.hydra.runtime.choices
    expected = {
        "actor@actor_rollout_ref.actor": "megatron_actor",
        "model_engine": "megatron",
        "critic": "megatron_critic",
    }
    assert {k: made[k] for k in [*expected, *choices]} == {**expected, **choices}
    assert "model@critic.model" not in made and "model" not in cfg.critic
    assert ("critic2" in cfg) == (device == "gpu")
    assert cfg.actor_rollout_ref.actor._target_ == "verl.workers.config.McoreActorConfig"

    text = dry_run(path, "--device", device).stdout  # the dry run shows each as Hydra gets it
    assert all(f"\n    {o}\n" in text for o in [*SELECTED, *variant_selections]), text


def test_a_selection_left_to_be_set_names_its_package_and_the_command_line_replaces_it(tmp_path):
    path = tmp_path / "open.yaml"
    path.write_text(recipe_text("open", ["actor@actor_rollout_ref.actor=???", "model_engine=???"]))
    refused = json.loads(dry_run(path, "--device", "gpu", "--format", "json").stdout)
    messages = sorted(d["message"] for d in refused["lint"]["diagnostics"] if d["code"] == "RF014")
    assert messages == [
        "`actor@actor_rollout_ref.actor` is `???`: it must be set before a launch; set it in the recipe, or on the "
        "command line: `sapo-launch RECIPE actor@actor_rollout_ref.actor=VALUE`",
        "`model_engine` is `???`: it must be set before a launch; set it in the recipe, or on the command line: "
        "`sapo-launch RECIPE model_engine=VALUE`",
    ]
    given = ("actor@actor_rollout_ref.actor=megatron_actor", "model_engine=megatron")
    argv = json.loads(dry_run(path, "--device", "gpu", "--format", "json", *given).stdout)["argv"]
    assert [a for a in argv if a.startswith(("actor@", "model_engine"))] == list(given)


CONVERTED = """DEVICE=${DEVICE:-gpu}
case $DEVICE in
  npu) rollout=rollout ;;
  gpu) rollout=null ;;
esac
"""


def test_convert_keeps_the_scripts_selections_and_its_recipe_lints_the_same(tmp_path):
    selections = [*CASES["old-option-keys"], "+critic@critic2=dp_critic", "~ref@actor_rollout_ref.ref"]
    script = tmp_path / "run_groups.sh"
    script.write_text(script_text([*selections, "rollout@actor_rollout_ref.rollout=$rollout"], CONVERTED))
    out = tmp_path / "groups.yaml"
    proc = subprocess.run(
        ["sapo-lint", "convert", str(script), "-o", str(out), "--verl-version", "0.9.1"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    recipe = yaml.safe_load(out.read_text())
    assert {k: v for k, v in recipe["overrides"].items() if k not in {o.split("=")[0] for o in BASE}} == {
        "model_engine": "megatron",
        "actor@actor_rollout_ref.actor": "dp_actor",
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 2,
        "+critic@critic2": "dp_critic",
        "~ref@actor_rollout_ref.ref": None,
    }
    assert recipe["variants"] == {
        "device": {
            "npu": {"overrides": {"rollout@actor_rollout_ref.rollout": "rollout"}},
            "gpu": {"overrides": {"rollout@actor_rollout_ref.rollout": None}},
        }
    }
    found = lint(script, out)
    assert found[str(out)] == found[str(script)]
