"""How a run's model is found (issue 20, item 8): a local config.json, the Hugging Face cache, then the shipped card
that the path's end names, also when the rest of the path is unknown statically; and the catalogue itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from sapo_toolkit.linter.catalog import (
    ModelNotFound,
    _cards,
    _repo_keys,
    find_model,
    find_model_named,
    name_key,
)
from sapo_toolkit.linter.core.model import shape_from_hf_config

MEGATRON_TP8 = (
    "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
    '    actor_rollout_ref.model.path="$MODEL_PATH" \\\n'
    "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8 \\\n"
    "    trainer.n_gpus_per_node=8 trainer.nnodes=1\n"
)


def sapo_lint(*args, hf_home, cwd=None):
    exe = shutil.which("sapo-lint") or [sys.executable, "-m", "sapo_toolkit.linter"]
    cmd = [exe, *args] if isinstance(exe, str) else [*exe, *args]
    env = {**os.environ, "NO_COLOR": "1", "HF_HOME": str(hf_home)}
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        env.pop(name, None)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def findings(tmp_path, script: str, hf_home=None) -> list[dict]:
    path = tmp_path / "run_x_megatron.sh"
    path.write_text(script)
    result = sapo_lint("check", "--no-shellcheck", "--format", "json", str(path), hf_home=hf_home or tmp_path / "hf")
    return json.loads(result.stdout)["diagnostics"]


def explained(tmp_path, script: str, hf_home=None) -> dict:
    """`sapo-lint explain --format json` of the script's one variant."""
    path = tmp_path / "run_x_megatron.sh"
    path.write_text(script)
    result = sapo_lint("explain", "--format", "json", str(path), hf_home=hf_home or tmp_path / "hf")
    assert result.returncode == 0, result.stdout + result.stderr
    (plan,) = json.loads(result.stdout)
    return plan


@pytest.mark.parametrize(
    "assignment",
    [
        "MODEL_PATH=${MODEL_PATH:-$HDFS_ROOT/model/Qwen2.5-7B-Instruct}",
        "MODEL_PATH=$HOME/models/Qwen/Qwen2.5-7B-Instruct",
        "MODEL_PATH=${RAY_DATA_HOME}/models/qwen2_5_7b",
    ],
)
def test_a_path_known_only_at_its_end_is_resolved_by_that_end(tmp_path, assignment):
    # the variable's value is unknown statically; the whole components written after it name the model
    found = findings(tmp_path, f"{assignment}\n{MEGATRON_TP8}")
    assert not [d for d in found if d["code"] == "RF005"], found
    (tp003,) = [d for d in found if d["code"] == "TP003"]
    assert "qwen2.5-7b has 28 attention heads" in tp003["message"]


def test_a_partly_known_last_component_names_nothing(tmp_path):
    found = findings(tmp_path, f"MODEL_PATH=$ROOT-Instruct\n{MEGATRON_TP8}")
    (rf005,) = [d for d in found if d["code"] == "RF005"]
    assert "not known statically (it uses `$ROOT`)" in rf005["message"]
    assert "ends in no whole name to look up" in rf005["message"]
    assert not [d for d in found if d["code"] == "TP003"]


def test_an_unknown_name_says_what_was_tried(tmp_path):
    found = findings(tmp_path, f"MODEL_PATH=$HOME/models/acme/private-7b\n{MEGATRON_TP8}")
    (rf005,) = [d for d in found if d["code"] == "RF005"]
    assert "nor a shipped card has a model named `acme/private-7b` or `private-7b`" in rf005["message"]
    assert str(tmp_path / "hf" / "hub") in rf005["message"]


def _cache_model(hub, repo: str, config: dict, revision="0123abcd") -> None:
    """A model as huggingface_hub lays it out in its cache (refs/main -> snapshots/<revision>/config.json)."""
    folder = hub / f"models--{repo.replace('/', '--')}"
    (folder / "snapshots" / revision).mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(revision)
    (folder / "snapshots" / revision / "config.json").write_text(json.dumps(config))


# a made-up Llama-style model: 30 heads, which TP8 does not divide
ACME = {
    "model_type": "llama",
    "num_hidden_layers": 4,
    "hidden_size": 1920,
    "num_attention_heads": 30,
    "num_key_value_heads": 6,
    "intermediate_size": 5120,
    "vocab_size": 32000,
}


@pytest.mark.parametrize("path", ["acme/tiny-30h", "$HOME/models/tiny-30h", "$HOME/models/acme/tiny-30h"])
def test_the_hugging_face_cache_is_read_by_id_or_by_name(tmp_path, path):
    hf_home = tmp_path / "hf"
    _cache_model(hf_home / "hub", "acme/tiny-30h", ACME)
    found = findings(tmp_path, f"MODEL_PATH={path}\n{MEGATRON_TP8}", hf_home)
    assert not [d for d in found if d["code"] == "RF005"], found
    (tp003,) = [d for d in found if d["code"] == "TP003"]
    assert "acme/tiny-30h has 30 attention heads" in tp003["message"]


def test_the_cache_comes_before_a_card_and_explain_says_where_the_model_came_from(tmp_path):
    hf_home = tmp_path / "hf"
    # the cache's config.json says what this machine's copy of the model is, not the card
    _cache_model(hf_home / "hub", "Qwen/Qwen2.5-7B-Instruct", ACME)
    plan = explained(tmp_path, f"MODEL_PATH=Qwen/Qwen2.5-7B-Instruct\n{MEGATRON_TP8}", hf_home)
    config = hf_home / "hub" / "models--Qwen--Qwen2.5-7B-Instruct" / "snapshots" / "0123abcd" / "config.json"
    assert (plan["model"], plan["model_source"]) == ("Qwen/Qwen2.5-7B-Instruct", f"{config} (the Hugging Face cache)")
    # without it, the card: explain names the card and what in the path matched it
    plan = explained(tmp_path, f"MODEL_PATH=$HOME/models/Qwen2.5-7B-Instruct\n{MEGATRON_TP8}", tmp_path / "empty")
    assert plan["model"] == "qwen2.5-7b"
    assert plan["model_source"] == "card qwen2.5-7b, matched by `Qwen2.5-7B-Instruct` in the path"


def test_a_local_directory_comes_first(tmp_path):
    local = tmp_path / "Qwen2.5-7B-Instruct"
    local.mkdir()
    (local / "config.json").write_text(json.dumps(ACME))
    plan = explained(tmp_path, f"MODEL_PATH={local}\n{MEGATRON_TP8}")
    assert plan["model_source"] == str(local / "config.json")


def test_a_vision_language_config_is_read_as_its_language_model(tmp_path):
    # Qwen3-VL, GLM-4.1V, Gemma 3 and Qwen3.5 nest the language model under text_config
    local = tmp_path / "my-vl"
    local.mkdir()
    vl = {"model_type": "acme_vl", "tie_word_embeddings": True, "text_config": ACME, "vision_config": {"depth": 2}}
    (local / "config.json").write_text(json.dumps(vl))
    found = findings(tmp_path, f"MODEL_PATH={local}\n{MEGATRON_TP8}")
    (tp003,) = [d for d in found if d["code"] == "TP003"]
    assert "my-vl has 30 attention heads" in tp003["message"]
    shape = shape_from_hf_config(vl, "my-vl", "test")
    assert shape.tied_embeddings and shape.num_layers == 4  # the top level's field, the text model's sizes


@pytest.mark.parametrize(
    ("written", "card"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("qwen2_5_7b_instruct", "qwen2.5-7b"),
        ("QWEN2.5-7B", "qwen2.5-7b"),
        ("/data/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"),
        ("models/gemma-2-9b-it", "gemma-2-9b"),
        ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
        ("~/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/abc", "qwen3-8b"),
        ("$HOME/verl/models/Qwen2.5-Math-7B", "qwen2.5-7b"),  # a fine-tune, by its card's base_model
    ],
)
def test_names_match_without_case_separators_or_release_words(tmp_path, monkeypatch, written, card):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert find_model_named(written, "not local").name == card
    assert find_model(written, None, tmp_path).name == card


def test_a_name_no_card_has_is_not_guessed(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    for written in ("Qwen3-30B-MoE-merge", "checkpoints/global_step_100", "Qwen2.5-8B"):
        with pytest.raises(ModelNotFound):
            find_model_named(written, "not local")


# ------------------------------------------------------------------------------------------------ the catalogue


def test_every_card_reads_and_names_the_config_json_its_numbers_come_from():
    for name, card in _cards().items():
        assert card["name"] == name
        shape = shape_from_hf_config(card["config"], name, "card")
        assert shape.num_layers and shape.hidden_size and shape.vocab_size
        # a repository at a commit, or a wheel at a version
        assert re.search(r"@ [0-9a-f]{40}|wheel from PyPI", card["source"]), (name, card["source"])
        assert card["hf_ids"] and all(i.count("/") == 1 for i in card["hf_ids"])
        for derived in card.get("derived", ()):
            assert derived["why"], (name, derived)


def test_no_two_cards_answer_to_one_name():
    claimed: dict[str, set[str]] = {}
    for name, card in _cards().items():
        for hf_id in [*card["hf_ids"], *(d["hf_id"] for d in card.get("derived", ()))]:
            for key in _repo_keys(*hf_id.split("/")):
                claimed.setdefault(key, set()).add(name)
    assert not {k: v for k, v in claimed.items() if len(v) > 1}


@pytest.mark.parametrize(
    "family",
    ["qwen2.5-", "qwen3-", "qwen3-vl-", "qwen3.5-", "llama-", "deepseek-", "gemma-", "gpt-oss-", "mistral-", "mixtral-"]
    + ["glm-", "mimo-", "kimi-", "phi-"],
)
def test_the_catalogue_holds_the_families_verl_trains(family):
    assert [n for n in _cards() if n.startswith(family)], family


def test_a_name_is_compared_by_its_letters_and_digits_without_release_words():
    assert name_key("Qwen2.5-7B-Instruct") == name_key("qwen2_5_7b") == name_key("QWEN2.5-7B-Instruct-2507")
    assert name_key("gemma-2-9b-it") == name_key("gemma-2-9b") != name_key("gemma-2-27b")
    assert name_key("Instruct") == "instruct"  # a name is never stripped to nothing


# ------------------------------------------------------------------ what the model-aware rules now see on real scripts

PP8_ON_94_LAYERS = (
    "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
    "    actor_rollout_ref.model.path=$HOME/models/Qwen3-235B-A22B \\\n"
    "    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=8 \\\n"
    "    trainer.n_gpus_per_node=8 trainer.nnodes=8{flags}\n"
)
ACCOUNT = " \\\n    +actor_rollout_ref.actor.megatron.override_transformer_config.account_for_{}_in_pipeline_split=True"


@pytest.mark.parametrize(("accounted", "layers"), [((), 94), (("loss",), 95), (("embedding", "loss"), None)])
def test_the_embedding_and_loss_count_as_layers_in_megatrons_even_split(tmp_path, accounted, layers):
    # verl's Qwen3-VL-235B example: 94 layers, PP 8, both flags set: Megatron splits 96 "layers" evenly
    flags = "".join(ACCOUNT.format(part) for part in accounted)
    found = [d for d in findings(tmp_path, PP8_ON_94_LAYERS.format(flags=flags)) if d["code"] == "TP007"]
    if layers is None:
        assert not found, found
    else:
        (tp007,) = found
        assert f"num_layers={layers} should be divisible by config.pipeline_model_parallel_size=8" in tp007["message"]
