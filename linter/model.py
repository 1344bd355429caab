"""Model shapes (from a local config.json or a shipped card) and the accelerator table."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import NamedTuple

from .schema import SCHEMA_DIR

MODELS_DIR = SCHEMA_DIR / "models"


class ModelShape(NamedTuple):
    """What the topology rules need to know of an architecture, in Megatron's terms."""

    name: str
    source: str  # where the numbers came from, for messages
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_query_groups: int
    kv_channels: int  # head_dim; differs from hidden/heads for several Qwen3 models
    ffn_hidden_size: int
    vocab_size: int
    tied_embeddings: bool
    num_experts: int | None = None
    moe_ffn_hidden_size: int | None = None
    moe_router_topk: int | None = None
    first_k_dense: int = 0  # leading dense layers of a MoE model (DeepSeek-V3: 3)
    max_position_embeddings: int | None = None

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts)


def shape_from_hf_config(config: dict, name: str, source: str) -> ModelShape:
    """Map Hugging Face config.json fields to Megatron's names (as verl's mbridge config converter does)."""
    heads = int(config["num_attention_heads"])
    experts = config.get("num_experts") or config.get("n_routed_experts") or config.get("num_local_experts")
    return ModelShape(
        name=name,
        source=source,
        num_layers=int(config["num_hidden_layers"]),
        hidden_size=int(config["hidden_size"]),
        num_attention_heads=heads,
        num_query_groups=int(config.get("num_key_value_heads") or heads),
        kv_channels=int(config.get("head_dim") or config.get("v_head_dim") or config["hidden_size"] // heads),
        ffn_hidden_size=int(config["intermediate_size"]),
        vocab_size=int(config["vocab_size"]),
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
        num_experts=int(experts) if experts else None,
        moe_ffn_hidden_size=int(config["moe_intermediate_size"]) if experts and config.get("moe_intermediate_size") else None,
        moe_router_topk=int(config["num_experts_per_tok"]) if experts and config.get("num_experts_per_tok") else None,
        first_k_dense=int(config.get("first_k_dense_replace") or 0),
        max_position_embeddings=config.get("max_position_embeddings"),
    )


class ModelNotFound(LookupError):
    pass


@cache
def _cards() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(MODELS_DIR.glob("*.json"))}


def card_names() -> list[str]:
    return sorted(_cards())


def find_model(path: str | None, card: str | None, base_dir: Path) -> ModelShape:
    """The model's shape: an explicit card, else a local directory's config.json, else a card matching the
    Hugging Face id (case-insensitive). Raises ModelNotFound with what was tried."""
    cards = _cards()
    if card:
        if card not in cards:
            raise ModelNotFound(f"no model card `{card}`; shipped cards: {', '.join(cards)}")
        return shape_from_hf_config(cards[card]["config"], card, f"card {card}")
    if not path:
        raise ModelNotFound("the recipe names no model (`model.path`, `model.card` or `actor_rollout_ref.model.path`)")
    local = (base_dir / Path(path).expanduser()) if not Path(path).expanduser().is_absolute() else Path(path).expanduser()
    config_file = local / "config.json"
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
            return shape_from_hf_config(config, local.name, str(config_file))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelNotFound(f"cannot read the architecture from {config_file}: {exc}") from None
    wanted = path.strip().rstrip("/").lower()
    for name, data in cards.items():
        if wanted in (i.lower() for i in data["hf_ids"]):
            return shape_from_hf_config(data["config"], name, f"card {name}")
    raise ModelNotFound(f"`{path}` is neither a local directory with config.json nor a shipped card's Hugging Face id")


class Accelerator(NamedTuple):
    name: str
    device: str  # npu | gpu
    hbm_gib: float
    devices_per_node: int


@cache
def accelerators() -> dict[str, Accelerator]:
    data = json.loads((SCHEMA_DIR / "devices.json").read_text(encoding="utf-8"))["devices"]
    return {name: Accelerator(name, d["device"], d["hbm_gib"], d["devices_per_node"]) for name, d in data.items()}
