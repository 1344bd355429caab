"""The pre-commit hook, installed the way a user installs it, blocks a bad recipe and lets a good one through."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO, recipe
from .test_cli import write

pytestmark = pytest.mark.network  # pre-commit pip-installs the hook's environment from the registry


def git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def snapshot_of_this_repo(dest: Path) -> str:
    """A git repo holding this working tree as one commit (pre-commit installs hooks from a commit): the files git
    would commit, tracked or not, so that no build artefact or virtualenv comes along and no package folder that
    happens to share such a name (`schemas/build`) is left out."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO)
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():  # a file deleted from the working tree is still in the index
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "snapshot", cwd=dest)
    return git("rev-parse", "HEAD", cwd=dest)


def test_hook_fails_on_bad_recipe_and_passes_on_good(tmp_path):
    """With --warnings-as-errors, as a strict project runs it: pre-commit names every staged YAML file, and the ones
    that are not recipes (the hook's own config, a CI workflow) must not block the commit."""
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    hook_repo = tmp_path / "hook-repo"
    rev = snapshot_of_this_repo(hook_repo)
    work = tmp_path / "work"
    work.mkdir()
    git("init", "-q", cwd=work)
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: sapo-lint\n"
        "        args: [--warnings-as-errors]\n"
    )
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    pre_commit = [sys.executable, "-m", "pre_commit"]
    subprocess.run([*pre_commit, "install"], cwd=work, env=env, check=True, capture_output=True)

    (work / "recipe.yaml").write_text(recipe("overrides:\n  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n"))
    git("add", "-A", cwd=work)
    bad = subprocess.run(["git", "commit", "-qm", "bad"], cwd=work, env=env, capture_output=True, text=True)
    output = bad.stdout + bad.stderr
    if bad.returncode != 0 and "SP001" not in output and ("pip" in output or "Could not" in output):
        pytest.skip(f"pre-commit could not build the hook environment (registry unreachable?): {output[-400:]}")
    assert bad.returncode != 0, output
    assert "recipe.yaml:6:3: SP001" in output, output

    write(
        work / "recipe.yaml",
        "overrides:\n  actor_rollout_ref.actor.tau_pos: 1.2\n"
        "  actor_rollout_ref.actor.tau_neg: 1.3\n"
        "  actor_rollout_ref.actor.policy_loss.loss_mode: sapo\n",
    )
    (work / ".github" / "workflows").mkdir(parents=True)
    (work / ".github" / "workflows" / "ci.yml").write_text("name: ci\non: [push]\njobs: {}\n")
    git("add", "-A", cwd=work)
    good = subprocess.run(["git", "commit", "-qm", "good"], cwd=work, env=env, capture_output=True, text=True)
    assert good.returncode == 0, good.stdout + good.stderr
