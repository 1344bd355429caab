"""Composing verl's trainer configs with hydra-core, once per ``model_engine`` option."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from . import SchemaBuildError

CONFIG_NAMES = ("ppo_trainer", "ppo_megatron_trainer")
GROUP = "model_engine"


def _defaults_list(config_dir: Path, name: str) -> list:
    path = config_dir / f"{name}.yaml"
    if not path.is_file():
        return []
    cfg = OmegaConf.load(path)
    d = cfg.get("defaults") if hasattr(cfg, "get") else None
    return OmegaConf.to_container(d, resolve=False) if d is not None else []


def group_default(config_dir: Path, name: str, group: str, _depth: int = 0) -> str | None:
    """The option a primary config selects for ``group`` in its defaults list (following included primaries)."""
    found = None
    for item in _defaults_list(config_dir, name):
        if isinstance(item, dict):
            for k, v in item.items():
                if k.strip() in (group, f"override {group}"):
                    found = v
        elif isinstance(item, str) and item != "_self_" and _depth < 5 and (config_dir / f"{item}.yaml").is_file():
            sub = group_default(config_dir, item, group, _depth + 1)
            if sub is not None and found is None:
                found = sub
    return found


def compose_trees(config_dir: Path, options: list[str]) -> dict[str, dict]:
    """``{option: container}``, the same for every trainer config.

    The snapshot stores one tree per option for all of ``CONFIG_NAMES``: verl's ``ppo_megatron_trainer.yaml`` is
    ``ppo_trainer`` plus ``override model_engine: megatron`` (verl 0.8.0, 0.9.1).  This fails loudly when a verl
    breaks that, rather than writing a snapshot that is wrong for one of the configs.
    """
    composed: dict[str, dict[str, dict]] = {n: {} for n in CONFIG_NAMES}
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None, job_name="sapo_lint_schema"):
            for cname in CONFIG_NAMES:
                for opt in options:
                    cfg = compose(config_name=cname, overrides=[f"{GROUP}={opt}"])
                    composed[cname][opt] = OmegaConf.to_container(cfg, resolve=False)
            shim = OmegaConf.to_container(compose(config_name="ppo_megatron_trainer"), resolve=False)
    except Exception as e:  # noqa: BLE001 - hydra and omegaconf errors alike become one CLI line
        msg = " ".join(str(e).split())
        raise SchemaBuildError(f"hydra compose of {config_dir} failed: {type(e).__name__}: {msg[:300]}") from None
    finally:
        GlobalHydra.instance().clear()
    if "megatron" not in options or shim != composed["ppo_trainer"]["megatron"]:
        raise SchemaBuildError(
            "compose('ppo_megatron_trainer') != compose('ppo_trainer', ['model_engine=megatron']): "
            "ppo_megatron_trainer.yaml is no longer ppo_trainer with model_engine=megatron; "
            "the snapshot format needs revisiting")
    for opt in options:
        if composed["ppo_megatron_trainer"][opt] != composed["ppo_trainer"][opt]:
            raise SchemaBuildError(
                f"compose('ppo_megatron_trainer', ['{GROUP}={opt}']) != compose('ppo_trainer', ['{GROUP}={opt}'])")
    return composed["ppo_trainer"]
