"""Shared test helpers (imported by test modules; conftest.py holds only fixtures)."""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from sapo_toolkit.linter.core.command import Stack, site_limits
from sapo_toolkit.linter.core.diagnostics import Diagnostic
from sapo_toolkit.linter.engine import resolve
from sapo_toolkit.linter.rules import findings
from sapo_toolkit.linter.schema import DEFAULT_MBRIDGE, DEFAULT_MEGATRON_CORE, load_snapshot
from sapo_toolkit.linter.sources.bash import read_script
from sapo_toolkit.linter.sources.files import read_text
from sapo_toolkit.linter.sources.recipe import ReadOptions, read_recipe
from sapo_toolkit.linter.sources.shellcheck import shellcheck_problems

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = Path(sysconfig.get_path("scripts"))  # console scripts installed with the interpreter running the tests
ON_RAY = "  trainer.n_gpus_per_node: 0  # sapo-lint: noqa: TP014\n"  # the session's Ray head has no GPU

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
        capture_output=True,
        text=True,
    )
    found = sorted(cache.glob(f"{stem}-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        pytest.skip(f"cannot download {requirement} from the package registry: {proc.stderr.strip()[-300:]}")
    return found[0]


def recipe(body: str) -> str:
    """A minimal recipe around `body` (which may set its own header keys)."""
    lines = [line for line in HEADER.splitlines() if not re.search(rf"^{line.split(':')[0]}\s*:", body, re.M)]
    return "\n".join(lines) + "\n" + body.strip("\n") + "\n"


def each_rule_finding(diagnostics) -> list:
    """Every rule's finding, whether reported on its own or inside the finding of its cause (`Diagnostic.also`):
    what a rule's own tests look at."""
    return [x for d in diagnostics for x in (d, *d.also)]


def codes(diagnostics) -> list[str]:
    return [d.code for d in each_rule_finding(diagnostics)]


def only(diagnostics, code):
    return [d for d in each_rule_finding(diagnostics) if d.code == code]


def body(base, *lines):
    """A recipe body: `base` plus one override line per argument."""
    return base + "".join(f"  {line}\n" for line in lines)


# A static-bsz base that satisfies the micro-batch keys (no BS003 noise) and runs no critic.
STATIC = """overrides:
  algorithm.adv_estimator: grpo
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 1
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 1
"""
DYNAMIC = """overrides:
  algorithm.adv_estimator: grpo
  actor_rollout_ref.actor.use_dynamic_bsz: true
"""
# Prompt + response longer than the actor's dynamic-bsz token budget (BS010).
LONG = (
    "data.max_prompt_length: 2048",
    "data.max_response_length: 8192",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu: 8192",
)


def contexts(path: Path, resources: dict | None = None):
    """{variant: LintContext} of a recipe file; `resources`: site limits, as `[tool.sapo-lint]` or the command line
    give them."""
    options = ReadOptions(
        "0.9.1", Stack(DEFAULT_MEGATRON_CORE, DEFAULT_MBRIDGE), resources=site_limits(resources or {})
    )
    read = read_recipe(read_text(path), options)
    assert read.recipe is not None, read.problems
    snapshot = load_snapshot(read.recipe.verl_version, read.recipe.config_name)
    return {c.variant: resolve(c, snapshot) for c in read.recipe.commands}


def composed(config_dir, config_name, overrides, hydra_config: bool = False):
    """The config real Hydra composes from verl's config directory with these command-line overrides; with
    `hydra_config`, Hydra's own node too (`hydra.runtime.choices`: the option selected for each group)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name, overrides=overrides, return_hydra_config=hydra_config)


def read_script_findings(source, options) -> SimpleNamespace:
    """`read_script`'s result, with `diagnostics`: the problems it returns as the rules' findings, as
    `api.load_text` reports them."""
    read = read_script(source, options)
    return SimpleNamespace(
        commands=read.commands,
        verl_version=read.verl_version,
        switches=read.switches,
        diagnostics=findings(read.problems),
    )


def shellcheck_findings(paths, **options) -> dict[str, list[Diagnostic]]:
    """`sources.shellcheck.shellcheck_problems` as sapo-lint reports them (`linter/rules/sh_shellcheck.py`), per
    path in order."""
    return {
        path: sorted(findings(found), key=Diagnostic.sort_key)
        for path, found in shellcheck_problems(paths, **options).items()
    }


def launcher() -> list[str]:
    """`sapo-launch` as a shell runs it: the console script installed with this interpreter, else its module."""
    exe = SCRIPTS / "sapo-launch"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "sapo_toolkit.launcher"]


def sapo_launch(*args, cwd: Path = REPO, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`sapo-launch ARGS` in its own process, its output captured; `env`: variables set on top of this environment."""
    return subprocess.run(
        [*launcher(), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else {**os.environ, **env},
    )


def launch(tmp_path: Path, recipe: Path, *args) -> subprocess.CompletedProcess:
    """`sapo-launch RECIPE ARGS` with its run directories under `tmp_path/runs`."""
    return sapo_launch(recipe, "--runs-dir", tmp_path / "runs", *args)


def stand_in(folder: Path, env: dict, overrides: str = "", gates: str = "", name: str = "stand-in") -> Path:
    """A recipe, `folder/NAME.yaml`, that runs the stand-in trainer (tests/fake_trainer.py) with `env`, then
    `overrides` and `gates` (YAML text)."""
    folder.mkdir(parents=True, exist_ok=True)
    recipe = folder / f"{name}.yaml"
    recipe.write_text(
        f"recipe: sapo-recipe/v1\nname: {name}\nentrypoint: tests.fake_trainer\nconfig_name: ppo_trainer\n"
        "overrides:\n  actor_rollout_ref.actor.policy_loss.loss_mode: sapo\n"
        "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: 2\n"
        "  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 4\n"
        + overrides
        + "env:\n"
        + "".join(f"  {k}: {json.dumps(str(v))}\n" for k, v in env.items())
        + gates
    )
    return recipe


def sapo_lint_json(*args: str, cwd: Path) -> dict:
    """`sapo-lint --format json` on verl 0.9.1's snapshot, without shellcheck, with a cache directory of the
    test's own; the parsed report (exit 0 or 1 expected)."""
    exe = shutil.which("sapo-lint")
    cmd = [exe] if exe else [sys.executable, "-m", "sapo_toolkit.linter"]
    proc = subprocess.run(
        [*cmd, "--format", "json", "--no-shellcheck", "--verl-version", "0.9.1", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1", "SAPO_LINT_CACHE_DIR": str(cwd / ".cache")},
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def tiny_verl(root: Path, version: str = "0.0.1", entry: bool = True) -> Path:
    """A verl package the builder accepts in a second: one config, the entry module naming it."""
    package = root / "verl"
    (package / "trainer" / "config").mkdir(parents=True)
    (package / "version").mkdir()
    (package / "version" / "version").write_text(version)
    (package / "__init__.py").write_text("")
    (package / "trainer" / "__init__.py").write_text("")
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text("trainer:\n  nnodes: 1\n  tiny_knob: 2\n")
    if entry:
        (package / "trainer" / "main_ppo.py").write_text(
            "import hydra\n\n\n@hydra.main(config_path='config', config_name='ppo_trainer', version_base=None)\n"
            "def main(config):\n    pass\n\n\nif __name__ == '__main__':\n    main()\n"
        )
    return package


def children_cpu_s() -> float:
    """CPU seconds used so far by this process's waited-for children: a bound on a child's work that a busy
    machine does not stretch, as it stretches wall time."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


VERL_CHOICE_KEYS = ("version", "source", "path", "snapshot")


def verl_choice(report: dict, path: str) -> dict:
    """The JSON report's verl of one file, less the libraries and `why` the stack adds."""
    return {k: v for k, v in report["verl"][path].items() if k in VERL_CHOICE_KEYS}


# verl main's example-naming hook (.pre-commit-config.yaml @ 1dda039), as verl writes it: a repository holding it runs
# verl's naming check, so the NM rules apply there (linter/rules/nm_naming.py)
VERL_NAMING_HOOK = """repos:
  - repo: local
    hooks:
      - id: check-example-naming
        name: Check example script naming convention
        entry: python3 tests/special_sanity/check_example_naming.py --root examples
        language: python
        pass_filenames: false
"""
