"""A repository's own verl tree and configs are untrusted input (docs/security.md): building their snapshot never
runs the repository's code or an installed module a config names, never resolves an environment variable, never
waits on a FIFO, and stays within its bounds, each bad tree one finding. Every input is generated here; every run
goes through the console script, as pre-commit runs it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import tiny_verl

SECRET = "hunter2-canary-value"
SCRIPT = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.tiny_knob=3 trainer.tiny_typo=1\n"
FORMATS = ("text", "json", "github", "sarif")


def canary_module(directory: Path, name: str, canary: Path) -> None:
    """A package that, if ever imported, creates `canary` and prints to standard output."""
    (directory / name).mkdir(parents=True, exist_ok=True)
    (directory / name / "__init__.py").write_text(f"open({str(canary)!r}, 'w').close()\nprint('CANARY-OUTPUT')\n")


def repository(root: Path, config: str) -> Path:
    """A repository vendoring a tiny verl whose ppo_trainer.yaml is `config`, and a run script."""
    (root / ".git").mkdir(parents=True)
    package = tiny_verl(root)
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(config)
    (root / "run.sh").write_text(SCRIPT)
    return package


def lint(root: Path, *args: str, env: dict | None = None, module: bool = False) -> subprocess.CompletedProcess:
    exe = shutil.which("sapo-lint")
    cmd = [sys.executable, "-m", "sapo_toolkit.linter"] if module or not exe else [exe]
    return subprocess.run(
        [*cmd, "--no-shellcheck", *args, "run.sh"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1", "SAPO_LINT_CACHE_DIR": str(root / ".cache"), **(env or {})},
    )


def report(root: Path, **kwargs) -> dict:
    proc = lint(root, "--format", "json", **kwargs)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def rf004(found: dict) -> str:
    (message,) = [d["message"] for d in found["diagnostics"] if d["code"] == "RF004"]
    return message


@pytest.mark.parametrize("entry", ["pkg://canarypkg", "structured://canarypkg", "pkg://canarypkg.sub"])
def test_a_search_path_entry_never_imports_the_module_it_names(tmp_path, entry):
    """`hydra.searchpath: [pkg://x]` in a vendored config: Hydra would import x (from the environment, or from the
    repository when it is on sys.path) while composing; the build gives Hydra its own search path instead."""
    root = tmp_path / "repo"
    repository(root, f"hydra:\n  searchpath:\n    - {entry}\ntrainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    canary = tmp_path / "imported"
    canary_module(tmp_path / "site", "canarypkg", canary)
    canary_module(root, "canarypkg", canary)
    proc = lint(root, "--format", "json", env={"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{root}"}, module=True)
    found = json.loads(proc.stdout)  # still JSON: nothing printed into it
    assert proc.returncode == 1 and "CANARY-OUTPUT" not in proc.stdout + proc.stderr
    assert found["verl"]["run.sh"]["source"] == "source-tree"
    assert [d["message"].split("`")[1] for d in found["diagnostics"] if d["code"] == "SL001"] == ["trainer.tiny_typo"]
    assert not canary.exists()


def test_hydra_plugins_of_the_repository_are_never_imported(tmp_path):
    """Hydra's plugin scan imports every `hydra_plugins.*` package on sys.path: the repository's, when the linter
    runs with `-m` from its root or with the repository on PYTHONPATH. The build runs where the repository is not
    on sys.path."""
    root = tmp_path / "repo"
    repository(root, "trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    canary = tmp_path / "imported"
    canary_module(root / "hydra_plugins", "evil_plugin", canary)
    found = report(root, env={"PYTHONPATH": str(root)}, module=True)
    assert found["verl"]["run.sh"]["snapshot"] == "built"
    assert not canary.exists()


@pytest.mark.parametrize(
    "config",
    [
        "defaults:\n  - g: ${oc.env:SAPO_CANARY_TOKEN}\n  - _self_\ntrainer:\n  tiny_knob: 2\n",
        "hydra:\n  searchpath:\n    - file://${oc.env:SAPO_CANARY_TOKEN}\ntrainer:\n  tiny_knob: 2\n",
        "defaults:\n  - g: ${oc.decode:${oc.env:SAPO_CANARY_TOKEN}}\n  - _self_\ntrainer:\n  tiny_knob: 2\n",
    ],
)
def test_an_environment_variable_a_config_names_is_never_resolved_or_printed(tmp_path, config):
    root = tmp_path / "repo"
    package = repository(root, config)
    (package / "trainer" / "config" / "g").mkdir()
    (package / "trainer" / "config" / "g" / "a.yaml").write_text("x: 1\n")
    outputs = []
    for fmt in FORMATS:
        proc = lint(root, "--format", fmt, env={"SAPO_CANARY_TOKEN": SECRET})
        assert "Traceback" not in proc.stderr
        outputs.append(proc.stdout + proc.stderr)
    assert not any(SECRET in out for out in outputs)
    cached = [p.read_bytes() for p in (root / ".cache").rglob("*") if p.is_file()]
    assert cached and not any(SECRET.encode() in data for data in cached)
    found = report(root, env={"SAPO_CANARY_TOKEN": SECRET})
    if "defaults" in config:  # the tree cannot be composed without the value: one warning naming the resolver
        assert "uses the resolver `oc." in rf004(found) and found["verl"]["run.sh"]["source"] != "source-tree"
    else:  # the search path the build gives Hydra replaces the config's own, which is never read
        assert found["verl"]["run.sh"]["source"] == "source-tree"
