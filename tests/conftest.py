import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.settings import Settings

REPO = Path(__file__).resolve().parent.parent
# Overrides that verl's own start-up checks need on top of its defaults (a micro-batch size for each static
# batch); appended after a test's own overrides so their line numbers stay put.
RUNNABLE = (
    "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2\n"
    "  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 4\n"
    "  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu: 4\n"
)
HEADER = "recipe: sapo-recipe/v1\nname: example\nconfig_name: ppo_megatron_trainer\nmodel: {path: Qwen/Qwen3-8B}\n"


def wheel_cache() -> Path:
    return Path(os.environ.get("SAPO_LINT_WHEEL_CACHE", Path.home() / ".cache" / "sapo-lint" / "wheels"))


def fetch_wheel(requirement: str) -> Path:
    """A real wheel from the package registry, cached across runs; skips the test if the registry is unreachable."""
    name, version = requirement.split("==")
    cache = wheel_cache()
    stem = name.replace("-", "_")
    found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", requirement, "-d", str(cache)],
        capture_output=True, text=True,
    )
    found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        pytest.skip(f"cannot download {requirement} from the package registry: {proc.stderr.strip()[-300:]}")
    return found[0]


@pytest.fixture(scope="session")
def verl_config_dir(tmp_path_factory) -> Path:
    """verl 0.9.1's real config directory, extracted from the real wheel."""
    wheel = fetch_wheel("verl==0.9.1")
    out = tmp_path_factory.mktemp("verl-0.9.1")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(out, [n for n in zf.namelist() if n.startswith("verl/trainer/config/")])
    return out / "verl" / "trainer" / "config"


def recipe(body: str) -> str:
    """A minimal recipe around `body` (which may set its own header keys)."""
    lines = [line for line in HEADER.splitlines() if not re.search(rf"^{line.split(':')[0]}\s*:", body, re.M)]
    return "\n".join(lines) + "\n" + body.strip("\n") + "\n"


@pytest.fixture
def lint_text(tmp_path):
    """Lint one recipe text; returns its diagnostics."""

    def run(body: str, settings: Settings | None = None, overrides=(), name="recipe.yaml"):
        path = tmp_path / name
        path.write_text(recipe(body), encoding="utf-8")
        return lint_paths([path], settings or Settings(), list(overrides)).diagnostics

    return run


def codes(diagnostics) -> list[str]:
    return [d.code for d in diagnostics]
