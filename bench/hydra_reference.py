"""The reference `sapo-lint` is timed against: Hydra composing verl's real config, with the same override lists.

    python bench/hydra_reference.py overrides PLAN.json RECIPE...   # each variant's config name and Hydra overrides
    python bench/hydra_reference.py compose CONFIG_DIR PLAN.json     # import Hydra, compose every variant (timed)

`overrides` reads the recipes through `sapo_toolkit.linter.api`, so the lists are exactly what `sapo-lint` checks
and `sapo-launch` passes to the trainer. `compose` imports nothing but Hydra: its process is what a cold
`hydra.compose` over those variants costs (verl's `main_ppo` composes the same way, then does much more).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def write_overrides(plan: Path, recipes: list[Path]) -> None:
    # Imported here so that the timed `compose` process never loads the linter.
    from sapo_toolkit.linter import api
    from sapo_toolkit.linter.settings import Settings

    options = api.read_options(Settings())
    variants = []
    for recipe in recipes:
        for command in api.load(recipe, options).commands:
            variants.append(
                {
                    "recipe": recipe.name,
                    "variant": command.variant,
                    "config_name": command.config_name,
                    "overrides": command.hydra_overrides(),
                }
            )
    plan.write_text(json.dumps(variants, indent=1))


def compose(config_dir: Path, plan: Path) -> None:
    import hydra

    variants = json.loads(plan.read_text())
    with hydra.initialize_config_dir(config_dir=str(config_dir.resolve()), version_base=None):
        for v in variants:
            hydra.compose(config_name=v["config_name"], overrides=v["overrides"])
    print(f"composed {len(variants)} variants")


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[0] == "overrides":
        write_overrides(Path(argv[1]), [Path(a) for a in argv[2:]])
    elif len(argv) == 3 and argv[0] == "compose":
        compose(Path(argv[1]), Path(argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
