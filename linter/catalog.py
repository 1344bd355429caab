"""The shipped model cards and accelerator table (`sapo_toolkit.schemas` data), and finding a model's shape: from a
card, a local config.json, the Hugging Face cache, or the card a model path's name matches."""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

from .core.device import device_kind
from .core.model import Accelerator, ModelShape, shape_from_hf_config
from .hub_config import FetchFailed, fetch_config, hub_id
from .schema import SCHEMA_DIR

MODELS_DIR = SCHEMA_DIR / "models"
# Words a release adds to a model's name without changing its architecture: the instruction-tuned, chat, base and
# reasoning releases of one model share its config.json shape (Qwen2.5-7B-Instruct, gemma-2-9b-it,
# Llama-2-7b-chat-hf, GLM-4.1V-9B-Thinking), and so do dated re-releases (Qwen3-4B-Instruct-2507, DeepSeek-V3-0324).
_VARIANT_WORDS = frozenset({"instruct", "chat", "base", "it", "hf", "thinking"})
_RELEASE_DATE = re.compile(r"[0-9]{4}")
_HUB_REPO = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)")  # a repository in the Hugging Face cache


class ModelNotFound(LookupError):
    pass


ACTOR_MODEL_PATH = "actor_rollout_ref.model.path"
# The key that names the model, where it is not the actor's: verl's SFT trainers and its offline generation read
# their own `model` node (verl/trainer/fsdp_sft_trainer.py: `model.partial_pretrain`, verl <= 0.7;
# verl/trainer/sft_trainer.py and sft_trainer_ray.py: `model.path` of sft_trainer_engine's hf_model;
# verl/trainer/main_generation.py: `model.path`, verl <= 0.6). By entry module, else by the config it composes (a
# wrapper module of a repository's own that composes one of these configs).
_MODEL_PATH_BY_ENTRY = {
    "verl.trainer.fsdp_sft_trainer": "model.partial_pretrain",
    "verl.trainer.sft_trainer": "model.path",
    "verl.trainer.sft_trainer_ray": "model.path",
    "verl.trainer.main_generation": "model.path",
}
_MODEL_PATH_BY_CONFIG = {
    "sft_trainer": "model.partial_pretrain",
    "sft_trainer_engine": "model.path",
    "generation": "model.path",
}
# `# sapo-lint: model=Qwen/Qwen3-8B`: a comment naming the model of a file whose path is known only at run time.
MODEL_DIRECTIVE = re.compile(r"#\s*sapo-lint:\s*model\s*=\s*(?P<model>[^\s#]+)", re.IGNORECASE)


def model_path_key(entry_module: str | None, config_name: str | None) -> str:
    """The override key that names the model of a trainer call running `entry_module` with `config_name`."""
    return _MODEL_PATH_BY_ENTRY.get(entry_module or "") or _MODEL_PATH_BY_CONFIG.get(
        config_name or "", ACTOR_MODEL_PATH
    )


class ModelNaming(NamedTuple):
    """What names a file's model besides its trainer call's path, and whether an unknown one may be fetched."""

    directive: str | None = None  # `# sapo-lint: model=...` in the file: wins over the file's own path
    directive_line: int = 0
    setting: str | None = None  # `[tool.sapo-lint] model`: for a file whose model path is unknown until run time
    setting_dir: Path = Path()  # the pyproject.toml's directory: a relative `model` is a directory there
    fetch: bool = False  # `--fetch-model-config`: an id no local source has is fetched from the Hub

    def remedy(self, key: str, path: str | None = None) -> str:
        """How to name the model: the three ways, and fetching where the path names a Hub id and fetching is off."""
        fetch = (
            f"; --fetch-model-config downloads `{hub_id(path)}`'s config.json from the Hugging Face Hub"
            if path and not self.fetch and hub_id(path)
            else ""
        )
        return (
            f'Name the model with --override {key}=ID, with `model = "ID"` under [tool.sapo-lint], or with a '
            f"`# sapo-lint: model=ID` comment in the file (ID: a Hugging Face id such as Qwen/Qwen3-8B, or a "
            f"directory holding config.json){fetch}"
        )


def model_naming(text: str, setting: str | None = None, setting_dir: Path = Path(), fetch: bool = False) -> ModelNaming:
    """The `ModelNaming` of a file's text (its first `# sapo-lint: model=` comment) and the run's settings."""
    found = MODEL_DIRECTIVE.search(text)
    line = text.count("\n", 0, found.start()) + 1 if found else 0
    return ModelNaming(found["model"] if found else None, line, setting, setting_dir, fetch)


@cache
def _cards() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(MODELS_DIR.glob("*.json"))}


def card_names() -> list[str]:
    return sorted(_cards())


def name_key(name: str) -> str:
    """A model name as it is compared: lower case, letters and digits only, without the release words at its end
    (`Qwen2.5-7B-Instruct`, `qwen2_5_7b` and `QWEN2.5-7B` are all `qwen257b`)."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    while len(words) > 1 and (words[-1] in _VARIANT_WORDS or _RELEASE_DATE.fullmatch(words[-1])):
        words.pop()
    return "".join(words)


def _repo_keys(org: str, name: str) -> tuple[str, str]:
    """The two keys a repository `org/name` is found by: with its organisation, and by its name alone."""
    return f"{re.sub(r'[^a-z0-9]', '', org.lower())}/{name_key(name)}", name_key(name)


@cache
def card_index() -> dict[str, str]:
    """Key (`_repo_keys` of every Hugging Face id a card lists: the repositories its numbers come from, and the
    `derived` ones, fine-tunes of one of them) -> card name."""
    index: dict[str, str] = {}
    for card, data in _cards().items():
        for hf_id in [*data["hf_ids"], *(d["hf_id"] for d in data.get("derived", ()))]:
            org, _, name = hf_id.partition("/")
            for key in _repo_keys(org, name):
                index.setdefault(key, card)
    return index


def _path_names(path: str) -> list[tuple[str, str]]:
    """What a model path's end can be looked up by, most specific first, each as (key, the text it came from): a
    Hugging Face cache directory it lies in (`models--Qwen--Qwen3-8B/snapshots/<rev>`), else its last two
    components (`Qwen/Qwen3-8B`) and its last one (`Qwen3-8B`)."""
    parts = [p for p in re.split(r"[\\/]+", path.strip()) if p not in ("", ".", "~")]
    for part in reversed(parts):
        hub = _HUB_REPO.fullmatch(part)
        if hub:
            return list(zip(_repo_keys(hub["org"], hub["name"]), (part, part), strict=True))
    found = []
    if len(parts) >= 2:
        found.append((_repo_keys(parts[-2], parts[-1])[0], f"{parts[-2]}/{parts[-1]}"))
    if parts:
        found.append((name_key(parts[-1]), parts[-1]))
    return found


def find_model(path: str | None, card: str | None, base_dir: Path, fetch: bool = False) -> ModelShape:
    """The model's shape, from the first of: an explicit card; a local directory's config.json (`path`, relative
    to `base_dir`); the config.json of a model in the Hugging Face cache that the path names (`hub_config`); the
    card that the path's last component or two name (`card_named`); with `fetch`, the config.json of the Hub
    repository they name (`hub_config.fetch_config`). Raises ModelNotFound with what was tried."""
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
        return _read_config(config_file, config_file.parent.name, str(config_file))
    return find_model_named(path, f"`{path}` is not a local directory with config.json", fetch)


def find_model_named(path: str, missing: str, fetch: bool = False) -> ModelShape:
    """The model a path's end names (the rest may be unknown: `$HOME/models/Qwen3-8B`), from the Hugging Face cache
    or a card, else with `fetch` from the Hub. `missing`: what was tried before, for the message of the ModelNotFound
    raised when none has it."""
    names = _path_names(path)
    hub = hub_cache()
    for key, _ in names:
        repo = _hub_repos(str(hub)).get(key)
        config_file = _snapshot_config(repo) if repo is not None else None
        if config_file is not None:
            return _read_config(
                config_file,
                repo.name.removeprefix("models--").replace("--", "/"),
                f"{config_file} (the Hugging Face cache)",
            )
    index = card_index()
    for key, written in names:
        if key in index:
            card = index[key]
            return shape_from_hf_config(
                _cards()[card]["config"], card, f"card {card}, matched by `{written}` in the path"
            )
    if not names:
        raise ModelNotFound(
            f"{missing}, and it ends in no whole name to look up in the Hugging Face cache or the cards"
        )
    tried = " or ".join(f"`{written}`" for _, written in names)
    not_local = f"{missing}, and neither the Hugging Face cache ({hub}) nor a shipped card has a model named {tried}"
    repo_id = hub_id(path) if fetch else None
    if repo_id is None:
        raise ModelNotFound(not_local)
    try:
        config_file = fetch_config(repo_id)
    except FetchFailed as exc:
        raise ModelNotFound(f"{not_local}; {exc}") from None
    _hub_repos.cache_clear()  # the cache now holds it: a later path naming it by name alone finds it there
    return _read_config(config_file, repo_id, f"{config_file} (fetched from the Hugging Face Hub)")


def hub_cache() -> Path:
    """Where the Hugging Face hub caches models, as huggingface_hub finds it: `$HF_HUB_CACHE`, else `$HF_HOME/hub`,
    else `$XDG_CACHE_HOME/huggingface/hub` (`~/.cache/huggingface/hub`)."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache") / "huggingface"
    return Path(home).expanduser() / "hub"


@cache
def _hub_repos(hub: str) -> dict[str, Path]:
    """Key (`_repo_keys`) -> the cache's directory of each model repository (`models--Org--Name`); empty without a
    readable cache."""
    try:
        entries = sorted(e.name for e in os.scandir(hub) if e.is_dir())
    except OSError:
        return {}
    repos: dict[str, Path] = {}
    for entry in entries:
        found = _HUB_REPO.fullmatch(entry)
        if found:
            for key in _repo_keys(found["org"], found["name"]):
                repos.setdefault(key, Path(hub) / entry)
    return repos


def _snapshot_config(repo: Path) -> Path | None:
    """The config.json of the revision `refs/main` points at, else of the newest snapshot that has one."""
    try:
        main = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        main = ""
    if main and _is_file(repo / "snapshots" / main / "config.json"):
        return repo / "snapshots" / main / "config.json"
    try:
        snapshots = [s for s in (repo / "snapshots").iterdir() if _is_file(s / "config.json")]
    except OSError:
        return None
    return max(snapshots, key=lambda s: (s.stat().st_mtime, s.name)) / "config.json" if snapshots else None


def _read_config(config_file: Path, name: str, source: str) -> ModelShape:
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
        return shape_from_hf_config(config, name, source)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep
        raise ModelNotFound(f"cannot read the architecture from {config_file}: {exc}") from None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte: not a local model
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


# The accelerator assumed for a device kind when nobody names one is the kind's `assumed_accelerator`
# (schemas/devices.json `kinds`, `core.device.DeviceKind`). Both are the 64/80 GB class that most training nodes of
# their kind have, so a memory verdict on the assumption holds for the common parts: the Ascend 910B1, B2 and B3
# share the 64 GB die (60.96 GiB reported by torch_npu; the 910B3 is the Atlas 800T A2 part the field incidents ran
# on), and the A100-80GB, H100 and H800 all have 80 GB (79.1-79.3 GiB reported by PyTorch).
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
    return accelerators()[device_kind(kind).assumed_accelerator]._replace(assumed=why)
