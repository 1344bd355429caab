import os
import zipfile
from pathlib import Path

import pytest

from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.settings import Settings

from .helpers import fetch_wheel, recipe

# A CI service (and pre-commit, which runs the hook tests) sets these; the text report then leaves infos out. The
# tests see every finding, as a person at a terminal does, wherever they run; tests/test_cli.py sets them itself.
for _unattended in ("CI", "PRE_COMMIT"):
    os.environ.pop(_unattended, None)


@pytest.fixture(scope="session")
def verl_config_dir(tmp_path_factory) -> Path:
    """verl 0.9.1's real config directory, extracted from the real wheel."""
    wheel = fetch_wheel("verl==0.9.1")
    out = tmp_path_factory.mktemp("verl-0.9.1")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(out, [n for n in zf.namelist() if n.startswith("verl/trainer/config/")])
    return out / "verl" / "trainer" / "config"


@pytest.fixture(scope="session")
def ray_address():
    """One real local Ray head (with the Jobs API) for every test that submits to a cluster."""
    pytest.importorskip("ray.job_submission", reason="ray is not installed: pip install 'sapo-toolkit[ray]'")
    from . import ray_cluster

    head = ray_cluster.start()
    try:
        yield head.address
    finally:
        left = ray_cluster.stop(head)
        assert not left, f"Ray processes left behind: {left}"


@pytest.fixture
def lint_text(tmp_path):
    """Lint one recipe text; returns its diagnostics."""

    def run(body: str, settings: Settings | None = None, overrides=(), name="recipe.yaml"):
        path = tmp_path / name
        path.write_text(recipe(body), encoding="utf-8")
        return lint_paths([path], settings or Settings(), list(overrides)).diagnostics

    return run
