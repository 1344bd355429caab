"""The shipped model cards and accelerator table (`sapo_toolkit.schemas` data), and finding a model's shape from a
card or a local config.json."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from .core.model import Accelerator, ModelShape, shape_from_hf_config
from .schema import SCHEMA_DIR

MODELS_DIR = SCHEMA_DIR / "models"


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
    try:
        local = Path(path).expanduser()
    except (RuntimeError, ValueError):  # `~user/...` for a user this machine does not know, or with a NUL byte
        local = Path(path)
    config_file = (local if local.is_absolute() else base_dir / local) / "config.json"
    if _is_file(config_file):
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
            return shape_from_hf_config(config, config_file.parent.name, str(config_file))
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep
            raise ModelNotFound(f"cannot read the architecture from {config_file}: {exc}") from None
    wanted = path.strip().rstrip("/").lower()
    for name, data in cards.items():
        if wanted in (i.lower() for i in data["hf_ids"]):
            return shape_from_hf_config(data["config"], name, f"card {name}")
    raise ModelNotFound(f"`{path}` is neither a local directory with config.json nor a shipped card's Hugging Face id")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system: not a local model
        return False


@cache
def accelerators() -> dict[str, Accelerator]:
    data = json.loads((SCHEMA_DIR / "devices.json").read_text(encoding="utf-8"))["devices"]
    return {name: Accelerator(name, d["device"], d["hbm_gib"], d["devices_per_node"],
                              d.get("usable_hbm_gib", d["hbm_gib"]), d.get("usable_source", ""))
            for name, d in data.items()}
