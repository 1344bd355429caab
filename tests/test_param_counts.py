"""Parameter counts of every architecture the shape reader describes (issue 33 item 2): the fixtures in
tests/fixtures/model_configs/ (one published config.json per family, each citing its source) and the shipped cards,
against the published totals and, where torch and transformers are installed, against the model transformers builds
on the meta device."""

import json

import pytest

from sapo_toolkit.linter.catalog import _cards
from sapo_toolkit.linter.core.model import BadModelConfig, shape_from_hf_config
from sapo_toolkit.linter.estimate.params import count_params, count_parts

from .helpers import REPO

FIXTURES = {p.stem: json.loads(p.read_text()) for p in sorted((REPO / "tests/fixtures/model_configs").glob("*.json"))}
CONFIGS = {**{f"card {n}": c["config"] for n, c in _cards().items()}, **{n: f["config"] for n, f in FIXTURES.items()}}
# Kimi K2 ships its own modelling code; its layers are DeepSeek-V3's (`DeepseekV3ForCausalLM` in its config.json).
# The language models of Qwen2.5-VL and Qwen3-VL are Qwen2's, Qwen3's and Qwen3-MoE's decoders (multimodal RoPE
# has no weights); transformers builds them only inside the vision-language model.
_SAME_ARCHITECTURE = {
    "kimi_k2": "deepseek_v3",
    "qwen2_5_vl": "qwen2",
    "qwen3_vl_text": "qwen3",
    "qwen3_vl_moe_text": "qwen3_moe",
}


def shape(config):
    return shape_from_hf_config(config, "test", "test")


# Published totals in billions, and whether they count the MTP block (with its own embedding and output copies,
# as the Hub's safetensors do); rounded, and stated by different conventions, hence the 1.5% tolerance.
PUBLISHED = {
    "card deepseek-v3": (671, False),
    "deepseek-v3.2-exp": (685, True),
    "card kimi-k2": (1040, False),
    "qwen3-next-80b-a3b": (80, False),
    "card gpt-oss-20b": (21, False),
    "card gpt-oss-120b": (117, False),
    "llama-4-scout-17b-16e": (109, False),
    "llama-4-maverick-17b-128e": (400, False),
    "glm-4.5": (355, False),
    "glm-4.5-air": (106, False),
    "nemotron-h-8b": (8, False),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_totals_match_the_published_ones(name):
    published, with_mtp = PUBLISHED[name]
    m = shape(CONFIGS[name])
    total = count_params(m).total
    if with_mtp:
        total += count_parts(m).mtp + 2 * m.vocab_size * m.hidden_size
    assert total / 1e9 == pytest.approx(published, rel=0.015)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_fixtures_cite_a_published_config(name):
    assert FIXTURES[name]["source"].startswith("https://huggingface.co/") and FIXTURES[name]["hf_ids"]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parts_add_up_to_the_whole(name):
    m = shape(CONFIGS[name])
    parts, counts = count_parts(m), count_params(m)
    assert sum(parts) - parts.mtp == counts.total
    assert parts.routed_experts == counts.expert and parts.embedding == counts.embedding


def test_parts_of_the_hybrids():
    nemotron = count_parts(shape(FIXTURES["nemotron-h-8b"]["config"]))
    # 24 Mamba-2 blocks: in_proj 4096 x (8192 + 10240 + 128) = 76,021,760, out_proj 8192 x 4096 = 33,554,432,
    # conv 10240 x 4 + bias 10240 = 51,200, dt bias / A / D 3 x 128, gated norm 8192, block norm 4096 -> 109,640,064;
    # 4 attention blocks: q and o 2 x 4096 x 4096, k and v 2 x 4096 x 1024, norm 4096 -> 41,947,136
    assert nemotron.attention == 24 * 109_640_064 + 4 * 41_947_136
    # 24 squared-ReLU MLP blocks: up and down 2 x 4096 x 21504 + norm
    assert nemotron.dense_mlp == 24 * (2 * 4096 * 21504 + 4096)
    assert nemotron.routed_experts == nemotron.shared_experts == 0
    deepseek = count_parts(shape(FIXTURES["deepseek-v3.2-exp"]["config"]))
    assert deepseek.mtp > 0 and deepseek.vision == 0
    scout = count_parts(shape(FIXTURES["llama-4-scout-17b-16e"]["config"]))
    assert scout.vision > 0 and scout.shared_experts == 48 * 3 * 5120 * 8192


def test_missing_fields_are_all_named():
    config = dict(FIXTURES["qwen3-next-80b-a3b"]["config"])
    for key in ("hidden_size", "vocab_size"):
        config.pop(key)
    with pytest.raises(BadModelConfig, match=r"^`hidden_size` and `vocab_size` are missing$"):
        shape(config)
    config = dict(FIXTURES["qwen3-next-80b-a3b"]["config"])
    config.pop("linear_key_head_dim")
    with pytest.raises(BadModelConfig, match="^`linear_key_head_dim` is missing, for the gated DeltaNet layers$"):
        shape(config)
    config = {k: v for k, v in FIXTURES["nemotron-h-8b"]["config"].items() if k not in ("ssm_state_size", "n_groups")}
    with pytest.raises(BadModelConfig, match="^`ssm_state_size` and `n_groups` are missing, for the Mamba layers$"):
        shape(config)


def test_an_architecture_the_reader_cannot_count_says_why():
    v4 = dict(_cards()["deepseek-v3"]["config"], model_type="deepseek_v4", hc_mult=4, o_lora_rank=1024, o_groups=16)
    with pytest.raises(BadModelConfig, match=r"deepseek_v4 has layers the reader cannot count: `hc_mult`"):
        shape(v4)
    odd = dict(FIXTURES["qwen3-next-80b-a3b"]["config"], layer_types=["retention"] * 48)
    with pytest.raises(BadModelConfig, match="`layer_types` has layers the reader cannot count: retention"):
        shape(odd)


# Optional: the same architectures built by transformers on the meta device (no weights, no download).


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_counts_agree_with_transformers_on_meta_device(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = dict(CONFIGS[name])
    if "vision_config" not in config and isinstance(config.get("text_config"), dict):
        # a card without its vision tower describes the language model: compare with transformers' language model
        config = {
            **{k: v for k, v in config.items() if k not in ("text_config", "model_type")},
            **config["text_config"],
        }
    model_type = config.pop("model_type")
    model_type = _SAME_ARCHITECTURE.get(model_type, model_type)
    try:
        hf_config = transformers.AutoConfig.for_model(model_type, **config)
    except (ValueError, KeyError) as exc:  # an architecture this transformers does not have
        pytest.skip(f"transformers {transformers.__version__} cannot build {model_type}: {exc}")
    auto = transformers.AutoModelForImageTextToText if "vision_config" in config else transformers.AutoModelForCausalLM
    with torch.device("meta"):
        model = auto.from_config(hf_config)
    expected = sum(p.numel() for p in model.parameters())  # tied weights counted once
    assert count_params(shape(CONFIGS[name])).total == pytest.approx(expected, rel=0.005)
