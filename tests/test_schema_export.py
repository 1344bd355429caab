"""`sapo-lint schema export` (issue 34, item 2): the recipe format's JSON Schema with one verl's override keys, for
editors with a YAML language server; the shipped recipes point at the exported schema of their verl."""

import json
import re
import shutil
import subprocess

import jsonschema
import pytest
import yaml

from .helpers import REPO
from .test_cli import sapo_lint

RECIPES = sorted((REPO / "recipes").glob("*.yaml"))
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(recipe-verl-(?P<verl>[0-9.a-z]+)\.schema\.json)$")


def exported(tmp_path, *args):
    out = tmp_path / "schema.json"
    proc = sapo_lint("schema", "export", *args, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def test_each_shipped_recipe_names_the_schema_of_its_verl_and_the_schema_is_the_export(tmp_path):
    for path in RECIPES:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        m = MODELINE.match(first)
        assert m, f"{path.name}: {first}"
        assert m["verl"] == str(yaml.safe_load(path.read_text(encoding="utf-8"))["verl"])
        committed = json.loads((REPO / "recipes" / m[1]).read_text(encoding="utf-8"))
        assert committed == exported(tmp_path, "--verl-version", m["verl"]), "regenerate with sapo-lint schema export"


def test_the_shipped_recipes_validate_and_a_bad_one_is_refused_at_each_mistake(tmp_path):
    schema = exported(tmp_path, "--verl-version", "0.9.1")
    validator = jsonschema.Draft202012Validator(schema)
    for path in RECIPES:
        assert not list(validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))), path
    bad = yaml.safe_load((REPO / "recipes/smoke-qwen3-0.6b-sapo.yaml").read_text(encoding="utf-8"))
    bad["overrides"].update(
        {
            "actor_rollout_ref.actor.ppo_mini_batchsize": 32,  # a typo: no such key
            "actor_rollout_ref.actor.policy_loss.loss_mode": "sapo_v2",  # not one of verl's loss modes
            "trainer.nnodes": "two",  # an int
            "+trainer.my_note": "x",  # added with `+`: the linter's to judge (SL003)
            "actor@actor_rollout_ref.actor": "megatron_actor",  # a group selection
            "trainer.total_epochs": "${oc.env:EPOCHS}",  # an interpolation
        }
    )
    wrong = sorted(
        e.json_path.rpartition("[")[2].strip("']") if "[" in e.json_path else e.message.split("'")[1]
        for e in validator.iter_errors(bad)
    )
    assert wrong == [
        "actor_rollout_ref.actor.policy_loss.loss_mode",
        "actor_rollout_ref.actor.ppo_mini_batchsize",
        "trainer.nnodes",
    ], wrong


def test_keys_carry_their_type_choices_default_and_the_megatron_keys_too(tmp_path):
    keys = exported(tmp_path, "--verl-version", "0.10.0.dev")["$defs"]["overrides"]["properties"]
    tp = keys["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"]  # only under model_engine=megatron
    assert tp["default"] == 1 and "integer" in json.dumps(tp)
    assert tp["description"] == "tensor model parallel size\n\nverl 0.10.0.dev: int; default 1"  # verl's comment first
    loss = json.dumps(keys["actor_rollout_ref.actor.policy_loss.loss_mode"])
    assert '"sapo"' in loss and '"vanilla"' in loss
    assert "megatron" in json.dumps(keys["model_engine"]["enum"])


def test_descriptions_start_with_the_comment_verls_yaml_carries(tmp_path):
    keys = exported(tmp_path, "--verl-version", "0.9.1")["$defs"]["overrides"]["properties"]
    said = keys["actor_rollout_ref.actor.ppo_mini_batch_size"]["description"]  # actor/actor.yaml at the actor
    assert said == "Split each sample into sub-batches of this size for PPO\n\nverl 0.9.1: int; default 256"
    ckpt = keys["actor_rollout_ref.actor.checkpoint.save_contents"]["description"]  # a two-line comment
    assert ckpt.startswith("What to include in saved checkpoints\nwith 'hf_model' you can save whole model")
    assert keys["trainer.nnodes"]["description"].startswith("Number of nodes used in the training\n\n")
    # a key verl's YAML leaves uncommented (megatron.yaml's lr_decay_steps) says only what the snapshot knows
    assert keys["actor_rollout_ref.actor.optim.lr_decay_steps"]["description"].startswith("verl 0.9.1: ")
    commented = [k for k, v in keys.items() if "\n\nverl 0.9.1: " in v.get("description", "")]
    assert len(commented) > 1000, len(commented)
    print(f"\nschema export 0.9.1: {len(commented)} of {len(keys)} keys carry verl's comment")


@pytest.mark.skipif(shutil.which("check-jsonschema") is None, reason="check-jsonschema is not installed")
def test_check_jsonschema_accepts_the_shipped_recipes_against_their_schema(tmp_path):
    schema = REPO / "recipes" / "recipe-verl-0.9.1.schema.json"
    good = subprocess.run(
        ["check-jsonschema", "--schemafile", str(schema), *map(str, RECIPES)], capture_output=True, text=True
    )
    assert good.returncode == 0, good.stdout + good.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("recipe: sapo-recipe/v1\nname: bad\noverrides:\n  trainer.nodes: 2\n", encoding="utf-8")
    refused = subprocess.run(
        ["check-jsonschema", "--schemafile", str(schema), str(bad)], capture_output=True, text=True
    )
    assert refused.returncode == 1 and "trainer.nodes" in refused.stdout + refused.stderr


def test_an_unknown_verl_is_one_line_and_exit_2():
    proc = sapo_lint("schema", "export", "--verl-version", "9.9")
    assert proc.returncode != 0 and proc.returncode != 1 and "no schema snapshot for verl 9.9" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
