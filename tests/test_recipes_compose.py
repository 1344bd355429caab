"""Every shipped recipe, in every variant, composes with real Hydra against verl 0.9.1's config directory, and the
composed config holds exactly the values the recipe states."""

from pathlib import Path

import pytest

from sapo_toolkit.linter.core.command import Stack
from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.schema import DEFAULT_MBRIDGE, DEFAULT_MEGATRON_CORE
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.files import read_text
from sapo_toolkit.linter.sources.recipe import ReadOptions, read_recipe

from .helpers import REPO, composed

RECIPES = sorted((REPO / "recipes").glob("*.yaml"))


def commands(path: Path):
    read = read_recipe(read_text(path), ReadOptions("0.9.1", Stack(DEFAULT_MEGATRON_CORE, DEFAULT_MBRIDGE)))
    assert read.recipe is not None and not read.problems, read.problems
    return read.recipe.commands


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_every_variant_composes_with_the_stated_values(path, verl_config_dir):
    from omegaconf import OmegaConf

    assert len(RECIPES) >= 3
    for command in commands(path):
        cfg = composed(verl_config_dir, command.config_name, command.hydra_overrides())
        for lo in command.overrides:
            p = lo.parsed
            if p.key == "model_engine":
                assert cfg.model_engine == p.value
                continue
            actual = OmegaConf.select(cfg, p.key)
            actual = OmegaConf.to_container(actual) if OmegaConf.is_config(actual) else actual
            assert actual == p.value, (command.variant, p.key)
        assert cfg.actor_rollout_ref.actor.megatron is not None  # the Megatron engine is selected


def test_shipped_recipes_are_clean_of_bs_op_pf():
    found = lint_paths([REPO / "recipes"], Settings()).diagnostics
    assert not [d for d in found if d.code[:2] in ("BS", "OP", "PF")], found
