"""The generated recipe validator is fresh and agrees with jsonschema (the reference) on every document."""

import hashlib
import json
import re

import jsonschema
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sapo_toolkit.linter.core.command import Stack
from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.schema import DEFAULT_MBRIDGE, DEFAULT_MEGATRON_CORE
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.files import read_text
from sapo_toolkit.linter.sources.recipe import ReadOptions, read_recipe
from sapo_toolkit.schemas.recipe_validator import JsonSchemaValueException
from sapo_toolkit.schemas.recipe_validator import validate as fast_validate

from .helpers import REPO, recipe

SCHEMA_TEXT = (REPO / "schemas" / "recipe.schema.json").read_text(encoding="utf-8")
REFERENCE = jsonschema.Draft202012Validator(json.loads(SCHEMA_TEXT))
READ_OPTIONS = ReadOptions("0.9.1", Stack(DEFAULT_MEGATRON_CORE, DEFAULT_MBRIDGE))
SHIPPED = [yaml.safe_load(p.read_text()) for p in sorted((REPO / "recipes").glob("*.yaml"))]


def test_generated_validator_matches_the_schema_file():
    header = (REPO / "schemas" / "recipe_validator.py").read_text(encoding="utf-8").splitlines()[0]
    recorded = re.search(r"sha256 ([0-9a-f]{64})", header).group(1)
    assert recorded == hashlib.sha256(SCHEMA_TEXT.encode()).hexdigest(), "run `sapo-lint schema build` to regenerate"


def fast_accepts(doc) -> bool:
    try:
        fast_validate(doc)
        return True
    except JsonSchemaValueException:
        return False


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
names = st.sampled_from(
    [
        "recipe",
        "name",
        "verl",
        "stack",
        "entrypoint",
        "config_name",
        "model",
        "hardware",
        "overrides",
        "variants",
        "env",
        "gates",
        "metric",
        "min",
        "trend",
        "after_step",
        "overides",
        "device",
        "npu",
        "megatron_core",
        "path",
        "+a.b",
        "a b",
        "~x",
        "HCCL_X",
        "1bad",
    ]
) | st.text(max_size=6)


@st.composite
def mutated_recipes(draw):
    doc = json.loads(json.dumps(draw(st.sampled_from(SHIPPED))))
    for _ in range(draw(st.integers(1, 3))):
        node = doc
        while isinstance(node, dict) and node and draw(st.booleans()):
            child = node[draw(st.sampled_from(sorted(node)))]
            if not isinstance(child, (dict, list)):
                break
            node = child if isinstance(child, dict) else (child[0] if child and isinstance(child[0], dict) else node)
            if node is child and not isinstance(child, dict):
                break
        if not isinstance(node, dict):
            continue
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if action == "delete" and node:
            del node[draw(st.sampled_from(sorted(node)))]
        elif action == "set" and node:
            node[draw(st.sampled_from(sorted(node)))] = draw(json_values)
        else:
            node[draw(names)] = draw(json_values)
    return doc


def test_shipped_recipes_are_valid_for_both():
    for doc in SHIPPED:
        assert fast_accepts(doc) and REFERENCE.is_valid(doc)


@settings(max_examples=400, deadline=None)
@given(mutated_recipes())
def test_fast_validator_agrees_with_jsonschema(doc):
    assert fast_accepts(doc) == REFERENCE.is_valid(doc)


def test_hardware_accelerator_is_a_name_or_one_per_device_kind():
    base = {"recipe": "sapo-recipe/v1", "name": "x", "overrides": {}}
    for accelerator, valid in [
        ("ascend-910b3", True),
        ({"npu": "ascend-910b3", "gpu": "nvidia-h100"}, True),
        ({"gpu": "H100"}, True),
        ({}, False),
        ({"tpu": "v5"}, False),
        ({"npu": 3}, False),
        ("", False),
        (["ascend-910b3"], False),
    ]:
        doc = {**base, "hardware": {"accelerator": accelerator}}
        assert fast_accepts(doc) is valid and REFERENCE.is_valid(doc) is valid, accelerator
    # every shipped recipe with device variants names one accelerator per device kind (issue 14)
    for doc in SHIPPED:
        if "device" in doc.get("variants", {}):
            assert set(doc["hardware"]["accelerator"]) == set(doc["variants"]["device"]), doc["name"]


# --- rules wait for a valid recipe; nested overrides are checked like dotted ones (issue 14) ---------------------


def test_no_config_rule_runs_on_a_recipe_that_violates_its_schema(tmp_path):
    path = tmp_path / "only.yaml"
    path.write_text("recipe: sapo-recipe/v1\n", encoding="utf-8")
    found = lint_paths([path], Settings(), []).diagnostics
    assert found and {d.code for d in found} <= {"RF001", "RF005"}, [(d.code, d.message) for d in found]
    # the same overrides in a valid recipe do get the config rules (BS003: no micro-batch size)
    path.write_text("recipe: sapo-recipe/v1\nname: x\noverrides: {}\n", encoding="utf-8")
    assert "BS003" in {d.code for d in lint_paths([path], Settings(), []).diagnostics}


NESTED = """overrides:
  algorithm.adv_estimator: grpo
  actor_rollout_ref:
    actor:
      policy_loss:
        tau_pos: 1
        tua_neg: 1.05
      ppo_micro_batch_size_per_gpu: 1
    rollout: {log_prob_micro_batch_size_per_gpu: 1}
"""


def test_nested_overrides_are_checked_leaf_by_leaf_at_their_own_lines(lint_text):
    found = lint_text(NESTED)
    header = len(recipe(NESTED).splitlines()) - len(NESTED.splitlines())
    typo = [d for d in found if d.code == "SL001" and "tua_neg" in d.message]
    assert typo and (typo[0].location.line, typo[0].location.column) == (header + 7, 9)


def test_a_mapping_value_is_one_hydra_dict_value(tmp_path, lint_text):
    # Hydra sets a dict on a null node: FSDP's `optim.override_optimizer_config` is null, so `key={...}` composes
    # (and the dotted `key.optimizer_cpu_offload=true` does not: not in struct). Not a finding, and launched as is.
    text = (
        "config_name: ppo_trainer\noverrides:\n  algorithm.adv_estimator: grpo\n"
        "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 1\n"
        "  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 1\n"
        "  actor_rollout_ref.actor.optim.override_optimizer_config: {optimizer_cpu_offload: true}\n"
    )
    assert "SL001" not in {d.code for d in lint_text(text)}
    source = tmp_path / "r.yaml"
    source.write_text(recipe(text), encoding="utf-8")
    argv = read_recipe(read_text(source), READ_OPTIONS).recipe.commands[0].hydra_overrides()
    assert "actor_rollout_ref.actor.optim.override_optimizer_config={optimizer_cpu_offload:true}" in argv


MERGED = """config_name: ppo_megatron_trainer
overrides:
  algorithm.adv_estimator: grpo
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 2
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu: 2
  actor_rollout_ref.actor.megatron: &parallel
    tensor_model_parallel_size: 2
    sequence_paralel: true
  actor_rollout_ref.ref.megatron:
    <<: *parallel
    pipeline_model_parallel_size: 1
"""


def test_keys_a_mapping_merges_are_checked_where_yaml_wrote_them(lint_text):
    # The anchor's typo reaches both roles: each is reported at the line the key was written, the anchor's.
    found = [d for d in lint_text(MERGED) if d.code == "SL001"]
    header = len(recipe(MERGED).splitlines()) - len(MERGED.splitlines())
    assert sorted((d.location.line, d.location.column, d.message.split("`")[1]) for d in found) == [
        (header + 9, 5, "actor_rollout_ref.actor.megatron.sequence_paralel"),
        (header + 9, 5, "actor_rollout_ref.ref.megatron.sequence_paralel"),
    ]


def test_a_merged_mapping_keeps_the_node_s_other_keys_as_hydra_composes_it(tmp_path, verl_config_dir):
    from omegaconf import OmegaConf

    from .helpers import composed, contexts

    text = MERGED.replace("    sequence_paralel: true\n", "")
    path = tmp_path / "r.yaml"
    path.write_text(recipe(text), encoding="utf-8")
    ctx = contexts(path)[None]
    argv = read_recipe(read_text(path), READ_OPTIONS).recipe.commands[0].hydra_overrides()
    real = composed(verl_config_dir, "ppo_megatron_trainer", argv)
    for role in ("actor", "ref"):
        for key in (
            "tensor_model_parallel_size",
            "pipeline_model_parallel_size",
            "context_parallel_size",
            "sequence_parallel",
            "param_offload",
        ):
            path_ = f"actor_rollout_ref.{role}.megatron.{key}"
            assert ctx.config.value(path_) == OmegaConf.select(real, path_), path_
    assert ctx.config.value("actor_rollout_ref.ref.megatron.tensor_model_parallel_size") == 2


def test_a_key_inside_a_mapping_gets_its_fix_as_a_hint_only(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "r.yaml"
    path.write_text(recipe(NESTED), encoding="utf-8")
    before = path.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", str(path), "--fix", "--unsafe-fixes", "--no-shellcheck"],
        capture_output=True,
        text=True,
    )
    assert path.read_bytes() == before, "a dotted key written into a nested mapping breaks the file"
    assert "SP001" in proc.stdout and "  = hint: actor_rollout_ref.actor.tau_pos\n" in proc.stdout, proc.stdout
    stats = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", str(path), "--statistics", "--format", "json", "--no-shellcheck"],
        capture_output=True,
        text=True,
    ).stdout
    by_code = {row["code"]: row for row in json.loads(stats)["statistics"]}
    assert by_code["SP001"]["fixable"] == 0 and by_code["SL001"]["fixable"] == 0, by_code
    assert by_code["SP001"]["fixes"]["display-only"] >= 1, by_code
