"""The import contracts in pyproject.toml ([tool.importlinter]) hold: launcher -> linter -> schemas; the launcher
reads recipes only through the linter's api (and its core and settings); the linter's layers flow one way; the
bash reader's interpreter knows nothing of verl; the shared core imports nothing else of the project; only
the two CLI packages (and the command group they share) import click; the atomic writes (atomicio) import nothing
else of the project."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    proc = subprocess.run([exe, "--config", str(REPO / "pyproject.toml")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    contracts = (REPO / "pyproject.toml").read_text().count("\n[[tool.importlinter.contracts]]\n")
    assert f"Contracts: {contracts} kept, 0 broken." in proc.stdout, proc.stdout
