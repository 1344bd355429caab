"""The shipped model cards and accelerator table (`sapo_toolkit.schemas` data), and finding a model's shape from a
card or a local config.json."""

from __future__ import annotations

import json
import re
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
    return {
        name: Accelerator(
            name,
            d["device"],
            d["hbm_gib"],
            d["devices_per_node"],
            d.get("usable_hbm_gib", d["hbm_gib"]),
            d.get("usable_source", ""),
        )
        for name, d in data.items()
    }


# The accelerator assumed for a device kind when nobody names one. Both are the 64/80 GB class that most training
# nodes of their kind have, so a memory verdict on the assumption holds for the common parts: the Ascend 910B1,
# B2 and B3 share the 64 GB die (60.96 GiB reported by torch_npu; the 910B3 is the Atlas 800T A2 part the field
# incidents ran on), and the A100-80GB, H100 and H800 all have 80 GB (79.1-79.3 GiB reported by PyTorch).
ASSUMED_ACCELERATORS = {"npu": "ascend-910b3", "gpu": "nvidia-h100"}
DEVICE_KINDS = tuple(ASSUMED_ACCELERATORS)
# Vendor and product-line words that people put in front of a part name (`Ascend910B3`, `NVIDIA H100`).
_VENDOR_WORDS = ("ascend", "nvidia", "huawei", "atlas", "tesla")


class UnknownAccelerator(LookupError):
    """A name that is not in schemas/devices.json; the message lists the known names."""


def _normal(name: str) -> str:
    """Lower case, letters and digits only, vendor words and a trailing `gb`/`g` dropped: `Ascend910B3` -> `910b3`,
    `A100-80G` -> `a10080`."""
    text = "".join(ch for ch in name.lower() if ch.isalnum())
    for word in _VENDOR_WORDS:
        text = text.removeprefix(word)
    return re.sub(r"(?<=[0-9])gb?$", "", text)


@cache
def _aliases() -> dict[str, str]:
    """Normalised alias -> accelerator name: each name's own form, with and without its nominal capacity
    (`h100`, `h10080`; `a10080`). An alias two accelerators would share (`a100`) is left out: it names neither."""
    claimed: dict[str, set[str]] = {}
    for name, acc in accelerators().items():
        core = _normal(name)
        size = f"{acc.hbm_gib:g}"
        for alias in {core, core + size, core.removesuffix(size)}:
            claimed.setdefault(alias, set()).add(name)
    return {alias: next(iter(names)) for alias, names in claimed.items() if len(names) == 1 and alias}


def find_accelerator(name: str) -> Accelerator:
    """The accelerator a name means, matched case-insensitively with aliases (`910B3`, `Ascend910B3`, `H100`,
    `h100-80gb`, `A100-80G`). Raises UnknownAccelerator naming the known ones."""
    known = accelerators()
    if name in known:
        return known[name]
    found = _aliases().get(_normal(name))
    if found is not None:
        return known[found]
    import difflib

    near = [n for n in known if _normal(n).startswith(_normal(name)) and _normal(name)]
    near = near or difflib.get_close_matches(name.lower(), list(known), n=2, cutoff=0.6)
    hint = f" Did you mean {' or '.join(f'`{n}`' for n in near)}?" if near else ""
    raise UnknownAccelerator(f"unknown accelerator `{name}`; known: {', '.join(known)}.{hint}")


def assumed_accelerator(kind: str, why: str) -> Accelerator:
    """The accelerator assumed for a device kind, marked with why (`Accelerator.assumed`)."""
    return accelerators()[ASSUMED_ACCELERATORS[kind]]._replace(assumed=why)
