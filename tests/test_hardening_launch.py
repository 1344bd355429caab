"""Hardening of `sapo-launch` (issue 24): a repository's git config runs nothing (launcher/git.py), a Ray working
directory never ships what a link outside it points to (launcher/workdir.py), and credentials in a Ray address
never reach a file or the terminal (plan.redact_urls)."""

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sapo_toolkit.launcher import git, rundir, workdir
from sapo_toolkit.launcher.executors import ray_client, ray_submit
from sapo_toolkit.launcher.plan import redact_urls

from .helpers import ON_RAY, REPO, launch, launcher
from .test_launch_local import fake_recipe, only_run_dir

pytestmark = pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")

# -- the repository's git config runs nothing ----------------------------------------------------------------------

# Each key set to a program that creates a marker file; `{d}` is a driver name that .gitattributes gives a file.
PROGRAM_KEYS = (
    "core.fsmonitor",
    "filter.{d}.clean",
    "filter.{d}.smudge",
    "filter.{d}.process",
    "diff.external",
    "diff.{d}.textconv",
    "diff.{d}.command",
    "merge.{d}.driver",
    "core.pager",
    "pager.status",
    "core.editor",
    "core.sshCommand",
    "core.gitProxy",
    "core.askPass",
    "credential.helper",
    "gpg.program",
    "core.alternateRefsCommand",
)
# Set to what pulls programs in: a hooks directory, a config file that sets a filter.
INDIRECT_KEYS = ("core.hooksPath", "include.path", "includeIf.gitdir:{repo}/.git.path")
HOOKS = ("post-index-change", "pre-commit", "post-checkout", "reference-transaction", "pre-auto-gc")
DEFAULT_HOOKS = ".git/hooks"  # no key: hooks in the repository's own hooks directory


def plain_git(repo: Path, *args: str) -> str:
    """Plain git, for setting up a repository before it is poisoned."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


def hooks_dir(directory: Path, marker: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        (directory / name).write_text(f"#!/bin/sh\ntouch '{marker}'\n")
        (directory / name).chmod(0o755)
    return directory


def hostile_repo(repo: Path, markers: Path, cases) -> str:
    """A git repository holding a file per case, whose config (or hooks directory) makes git run a program that
    creates `markers/<case>` as soon as git runs it; its tracked files are modified, so that a `status` compares
    their content. Returns the revision."""
    markers.mkdir(exist_ok=True)
    repo.mkdir(parents=True, exist_ok=True)
    slugs = {case: re.sub(r"[^A-Za-z0-9]+", "-", case).strip("-") for case in cases}
    for slug in slugs.values():
        (repo / f"{slug}.txt").write_text("tracked\n")
    (repo / ".gitattributes").write_text("".join(f"{s}.txt filter={s} diff={s} merge={s}\n" for s in slugs.values()))
    plain_git(repo, "init", "-q")
    plain_git(repo, "add", ".")
    plain_git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    revision = plain_git(repo, "rev-parse", "HEAD")
    for case, slug in slugs.items():
        marker = markers / slug
        touch = f"touch '{marker}'"
        key = case.format(d=slug, repo=repo)
        if case == DEFAULT_HOOKS:
            hooks_dir(repo / ".git" / "hooks", marker)
            continue
        if case == "core.hooksPath":
            value = str(hooks_dir(repo.parent / f"hooks-{slug}", marker))
        elif case.startswith("include"):  # another config file, which sets a filter for this case's file
            value = str(repo.parent / f"{slug}.gitconfig")
            Path(value).write_text(f'[filter "{slug}"]\n\tclean = {touch}; cat\n')
        else:
            value = f"{touch}; false" if case == "core.fsmonitor" else f"{touch}; cat"
        # `git config --file` only writes the file: nothing it sets runs
        subprocess.run(["git", "config", "--file", str(repo / ".git" / "config"), key, value], check=True, timeout=30)
    for slug in slugs.values():
        (repo / f"{slug}.txt").write_text("changed\n")
    return revision


ALL_CASES = (*PROGRAM_KEYS, *INDIRECT_KEYS, DEFAULT_HOOKS)


@pytest.mark.parametrize("case", ALL_CASES)
def test_git_runs_nothing_the_repository_names(tmp_path, case):
    """The run directory's git state and the working directory's file list, each through git in a repository
    whose config (or hooks directory) names a program."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    revision = hostile_repo(repo, markers, [case])
    assert rundir.git_state(repo) == {"revision": revision, "dirty": True}
    assert ".gitattributes" in workdir.shipped_files(repo, [])
    assert not list(markers.iterdir())


@pytest.mark.parametrize("lint", ["passes", "refuses"])
def test_a_launch_runs_nothing_the_recipe_repository_names(tmp_path, lint):
    """`sapo-launch` with the recipe in a repository that names a program under every key at once: whether lint
    lets the trainer start or refuses the recipe, git's programs never run, and the revision is still recorded."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    refuse = "  +actor_rollout_ref.rollout.sampling_temperature: 0.7\n" if lint == "refuses" else ""
    repo.mkdir()
    recipe = fake_recipe(repo, {}, overrides=refuse)  # committed with the repository
    revision = hostile_repo(repo, markers, ALL_CASES)
    proc = launch(tmp_path, recipe)
    assert proc.returncode == (1 if lint == "refuses" else 0), proc.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    environment = json.loads((only_run_dir(tmp_path) / "environment.json").read_text())
    assert environment["git"]["revision"] == revision


def test_a_git_too_old_to_harden_is_never_run(tmp_path, monkeypatch):
    """git before 2.32 ignores GIT_CONFIG_GLOBAL (before 2.31 also GIT_CONFIG_COUNT): asked only its version."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    revision = hostile_repo(repo, markers, ["core.fsmonitor"])
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(
        f'#!/bin/sh\ncase " $* " in *" version "*) echo "git version 2.31.8"; exit 0;; esac\n'
        f"touch '{markers}/ran'\nexec {shutil.which('git')} \"$@\"\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(git, "hardenable", functools.cache(git.hardenable.__wrapped__))  # asks this PATH's git
    assert rundir.git_state(repo) is None
    assert workdir.shipped_files(repo, []) == sorted(p.name for p in repo.iterdir() if p.is_file())  # every file
    assert not list(markers.iterdir())
    monkeypatch.undo()
    assert rundir.git_state(repo)["revision"] == revision


# -- a working directory never ships what a link outside it points to --------------------------------------------


def linked_tree(tmp_path: Path) -> Path:
    """A working directory with links that stay inside (fine) and links that lead out (refused)."""
    outside = tmp_path / "elsewhere"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret").write_text("the target's content\n")
    root = tmp_path / "work"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("x = 1\n")
    (root / "pkg" / "inner.py").symlink_to("../train.py")  # stays inside
    (root / "leak.txt").symlink_to(outside / "secret")  # absolute target
    (root / "pkg" / "up.txt").symlink_to("../../elsewhere/secret")  # `..` escape
    (root / "hop").symlink_to("leak.txt")  # a chain through a link inside
    (root / "data").symlink_to(outside / "dir")  # a linked directory
    return root


@pytest.mark.parametrize("listing", ["git", "walk"])
def test_a_link_out_of_the_working_dir_refuses_it(tmp_path, listing):
    root = linked_tree(tmp_path)
    (root / "swapped").mkdir()
    (root / "swapped" / "secret").write_text("tracked\n")
    if listing == "git":
        plain_git(root, "init", "-q")
        plain_git(root, "add", ".")
    (root / "swapped" / "secret").unlink()  # a tracked directory that has become a link: git still lists its files
    (root / "swapped").rmdir()
    (root / "swapped").symlink_to(tmp_path / "elsewhere")
    (root / "zz").symlink_to(tmp_path / "elsewhere" / "secret")
    with pytest.raises(ray_client.RayJobError) as refused:
        ray_submit.stage_working_dir(root, [], tmp_path / "stage")
    message = refused.value.message
    assert "\n" not in message and message.startswith(f"working directory {root} has links that lead out of it: ")
    named = re.findall(r"([\w/.]+) -> ", message)
    # what ships is what Ray's own rules take, with or without git: git is not asked
    escaping = ["data", "hop", "leak.txt", "pkg/up.txt", "swapped", "zz"]
    assert named == escaping[:5] and "and 1 more" in message  # five named, the rest counted
    # excluded, they do not ship; the link inside does, and so does a directory reached through a link
    (tmp_path / "via").symlink_to(root)
    ray_submit.stage_working_dir(
        tmp_path / "via", ["data", "hop", "leak.txt", "up.txt", "swapped", "zz"], tmp_path / "stage2"
    )
    assert (tmp_path / "stage2" / "pkg" / "inner.py").read_text() == "x = 1\n"
    assert "the target's content" not in "".join(p.read_text() for p in (tmp_path / "stage2").rglob("*") if p.is_file())


def test_a_link_out_of_the_working_dir_is_refused_before_submitting(tmp_path, ray_address):
    from ray.job_submission import JobSubmissionClient

    root = linked_tree(tmp_path)
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    jobs = len(JobSubmissionClient(ray_address).list_jobs())
    proc = launch(tmp_path, recipe, "--address", ray_address, "--working-dir", str(root), "--shared-runs-dir")
    assert proc.returncode == 2, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if "links that lead out" in line]
    assert "leak.txt -> " in line and "inner.py" not in line and "Traceback" not in proc.stderr
    assert len(JobSubmissionClient(ray_address).list_jobs()) == jobs
    assert json.loads((only_run_dir(tmp_path) / "summary.json").read_text())["status"] == "failed"


# -- credentials in a Ray address ----------------------------------------------------------------------------------

PASSWORD = "pa55-never-written"


@pytest.mark.parametrize(
    "url,shown",
    [
        ("http://me:pw@head:8265", "http://me:<redacted>@head:8265"),
        (
            "https://tok@head/x?a=1&api_key=k&X-Amz-Security-Token=t#f",
            "https://<redacted>@head/x?a=1&api_key=<redacted>&X-Amz-Security-Token=<redacted>#f",
        ),
        (
            "at http://me:p@ss@head:8265. and 'ray://u:p@h:10001'",
            "at http://me:<redacted>@head:8265. and 'ray://u:<redacted>@h:10001'",
        ),
        ("http://head:8265/?page=2", "http://head:8265/?page=2"),
    ],
)
def test_redact_urls(url, shown):
    assert redact_urls(url) == shown
    assert redact_urls(shown) == shown


def assert_no_password(run_dir: Path, *texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text
    for f in run_dir.iterdir():
        assert PASSWORD not in f.read_text(errors="replace"), f.name


@pytest.mark.parametrize("address", [f"http://me:{PASSWORD}@127.0.0.1:9", f"me:{PASSWORD}@127.0.0.1:9"])
def test_an_address_password_is_never_written_when_the_cluster_is_unreachable(tmp_path, address):
    pytest.importorskip("ray.job_submission", reason="ray is not installed: pip install 'sapo-toolkit[ray]'")
    recipe = fake_recipe(tmp_path, {})
    proc = launch(tmp_path, recipe, "--address", address)
    assert proc.returncode == 2 and "cannot reach the Ray Jobs API at http://me:<redacted>@127.0.0.1:9" in proc.stderr
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["address"] == "http://me:<redacted>@127.0.0.1:9"
    assert_no_password(run_dir, proc.stdout, proc.stderr)


def test_an_address_password_is_never_written_for_a_job(tmp_path, ray_address):  # noqa: F811
    """A job submitted and followed with credentials in the address: they reach Ray, never the run directory or
    the terminal; `status` then needs the address again."""
    address = ray_address.replace("http://", f"http://me:{PASSWORD}@")
    recipe = fake_recipe(tmp_path, {}, overrides=ON_RAY)
    proc = launch(tmp_path, recipe, "--address", address, "--working-dir", str(REPO), "--shared-runs-dir")
    assert proc.returncode == 0, proc.stderr
    assert "to http://me:<redacted>@127.0.0.1:" in proc.stderr
    run_dir = only_run_dir(tmp_path)
    assert json.loads((run_dir / "job.json").read_text())["address"] == redact_urls(address) != address
    status = subprocess.run([*launcher(), "status", str(run_dir)], capture_output=True, text=True, timeout=60)
    assert status.returncode == 2 and "pass --address" in status.stderr
    status = subprocess.run(
        [*launcher(), "status", str(run_dir), "--address", address], capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0 and "SUCCEEDED" in status.stdout
    assert_no_password(run_dir, proc.stdout, proc.stderr, status.stdout, status.stderr)
