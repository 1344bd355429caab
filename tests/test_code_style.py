"""The project's own code passes `ruff check` and `ruff format --check` with the settings in pyproject.toml
([tool.ruff]: pycodestyle, pyflakes, isort, bugbear; 120 columns; the generated validator excluded)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUFF = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))


@pytest.mark.parametrize("command", [["check", "--output-format", "concise"], ["format", "--check", "--diff"]])
def test_ruff_finds_nothing(command):
    proc = subprocess.run([RUFF, *command, "."], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, f"ruff {' '.join(command)} .\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"
