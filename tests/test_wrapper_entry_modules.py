"""Issue 23, item 3: a run script that starts its repository's own entry module with Hydra overrides
(`python3 -m recipe.<name>.main_ppo ...`, `python3 train.py ...`) is checked against the config that module's
`@hydra.main` composes, found by reading the module (never importing it); one whose config cannot be found is one
SH007 note saying why, never "All checks passed" with nothing checked. The repository is written by the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from sapo_toolkit.linter.api import load, read_options
from sapo_toolkit.linter.settings import Settings

from .helpers import sapo_lint_json

OVERRIDES = (
    "actor_rollout_ref.model.path=Qwen/Qwen3-8B actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 "
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 trainer.total_epochs=2"
)
TYPO = "trainer.totl_epochs=3"

# Module source -> what each wrapper is.
MODULES = {
    # its own trainer, on verl's config (an installed verl's, named by package)
    "recipe/verl_config/main.py": (
        "import hydra\n\n"
        '@hydra.main(config_path="pkg://verl.trainer.config", config_name="ppo_trainer", version_base=None)\n'
        "def main(config):\n    from recipe.verl_config.trainer import MyTrainer\n    MyTrainer(config).fit()\n"
    ),
    # verl's config by its path in a verl checkout beside the recipe (a submodule)
    "recipe/submodule/main.py": (
        "import hydra\nfrom verl.trainer.main_ppo import run_ppo\n\n"
        '@hydra.main(config_path="../../third_party/verl/verl/trainer/config", config_name="ppo_trainer")\n'
        "def main(config):\n    run_ppo(config)\n"
    ),
    # no @hydra.main: runs verl's own decorated main
    "recipe/delegate/main.py": (
        "from verl.trainer import main_ppo\n\nif __name__ == '__main__':\n    main_ppo.main()\n"
    ),
    # hands its config to run_ppo; its config directory is not in the repository: verl's config of that name
    "recipe/run_ppo/main.py": (
        "import hydra\nfrom verl.trainer.main_ppo import run_ppo\n\n"
        '@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None)\n'
        "def main(config):\n    run_ppo(config)\n"
    ),
    # a config directory of its own
    "recipe/custom/main_ppo.py": (
        "import hydra\nfrom verl.trainer.main_ppo import run_ppo\n\n"
        '@hydra.main(config_path="config", config_name="my_trainer", version_base=None)\n'
        "def main(config):\n    run_ppo(config)\n"
    ),
    "recipe/custom/config/my_trainer.yaml": (
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"
        "my_algo:\n  beta: 0.1\n"
    ),
    # builds its config itself: nothing to check against
    "recipe/no_hydra/main.py": (
        "import sys\nfrom omegaconf import OmegaConf\nfrom verl.trainer.main_ppo import run_ppo\n\n"
        "run_ppo(OmegaConf.from_cli(sys.argv[1:]))\n"
    ),
    # computes its config name
    "recipe/computed/main.py": (
        "import os\nimport hydra\nfrom verl.trainer.main_ppo import run_ppo\n\n"
        '@hydra.main(config_path="config", config_name=os.environ["CFG"], version_base=None)\n'
        "def main(config):\n    run_ppo(config)\n"
    ),
    # another trainer, on a Hydra config of its own: no verl in it
    "other/trainer/ppo.py": (
        'import hydra\nfrom other.workers import Actor\n\n@hydra.main(config_path="config", config_name="ppo")\n'
        "def main(config):\n    Actor(config).fit()\n"
    ),
    "other/trainer/config/ppo.yaml": "actor:\n  lr: 1.0e-6\n",
    # a file run from the directory the script `cd`s into, and a module on the PYTHONPATH it sets
    "tools/train.py": (
        'import hydra\n\n@hydra.main(config_path="pkg://verl.trainer.config", config_name="ppo_trainer")\n'
        "def main(config):\n    pass\n"
    ),
    "lib/mypkg/entry.py": (
        'import hydra\n\n@hydra.main(config_path="pkg://verl.trainer.config", config_name="ppo_trainer")\n'
        "def main(config):\n    pass\n"
    ),
}

# Script name -> its trainer command (each is run with and without a typo).
CHECKED = {
    "verl_config": "python3 -m recipe.verl_config.main",
    "submodule": "python3 -m recipe.submodule.main",
    "delegate": "python3 -m recipe.delegate.main",
    "run_ppo": "python3 -m recipe.run_ppo.main",
    "file": "cd tools\npython3 train.py",
    "pythonpath": "export PYTHONPATH=lib:$PYTHONPATH\npython3 -m mypkg.entry",
}
UNRESOLVED = {
    "missing": ("python3 -m recipe.missing.main", "`recipe/missing/main.py` is not in the directory"),
    "no_hydra": ("python3 -m recipe.no_hydra.main", "has no `@hydra.main`"),
    "computed": ("python3 -m recipe.computed.main", "computes its `config_name`"),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    (root / ".git").mkdir()
    for path, text in MODULES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    scripts = root / "scripts"
    scripts.mkdir()
    for name, call in CHECKED.items():
        (scripts / f"{name}.sh").write_text(f"#!/bin/bash\n{call} {OVERRIDES}\n", encoding="utf-8")
        (scripts / f"{name}_typo.sh").write_text(f"#!/bin/bash\n{call} {OVERRIDES} {TYPO}\n", encoding="utf-8")
    for name, (call, _) in UNRESOLVED.items():
        (scripts / f"{name}.sh").write_text(f"#!/bin/bash\n{call} {OVERRIDES} {TYPO}\n", encoding="utf-8")
    (scripts / "custom.sh").write_text(f"#!/bin/bash\npython3 -m recipe.custom.main_ppo {OVERRIDES}\n")
    (scripts / "not_a_trainer.sh").write_text(
        "#!/bin/bash\npython3 -m recipe.prep --out data.parquet\npython3 tools/prep.py --local_dir=x\n"
        "torchrun --nproc_per_node=4 -m other.trainer.ppo actor.lr=1e-6 trainer.total_steps=2\n"
    )
    return root


@pytest.fixture(scope="module")
def linted(repo) -> dict:
    return sapo_lint_json("scripts", cwd=repo)


@pytest.fixture(scope="module")
def findings(repo, linted) -> dict[str, list[dict]]:
    """Script name -> its findings, from one run over the scripts."""
    found: dict[str, list[dict]] = {p.stem: [] for p in (repo / "scripts").glob("*.sh")}
    for d in linted["diagnostics"]:
        found[Path(d["path"]).stem].append(d)
    return found


@pytest.mark.parametrize("name", CHECKED)
def test_a_wrapper_on_verls_config_is_checked_as_verls_trainer(name, findings):
    assert findings[name] == []
    typo = [d for d in findings[f"{name}_typo"] if d["code"] == "SL001"]
    assert len(typo) == 1 and "trainer.totl_epochs" in typo[0]["message"], findings[f"{name}_typo"]
    assert typo[0]["line"] == 2 + CHECKED[name].count("\n")


@pytest.mark.parametrize("name", UNRESOLVED)
def test_a_wrapper_whose_config_cannot_be_found_is_one_note_saying_why(name, findings):
    found = findings[name]
    assert [d["code"] for d in found] == ["SH007"], found  # the overrides (and the typo) are not checked
    assert found[0]["severity"] == "info"
    assert UNRESOLVED[name][1] in found[0]["message"]


def test_a_module_without_hydra_overrides_or_verl_is_no_trainer_call(findings):
    assert findings["not_a_trainer"] == []


def test_a_custom_config_directory_is_the_commands_config_path(repo):
    loaded = load(repo / "scripts" / "custom.sh", read_options(Settings(verl_version="0.9.1")))
    (command,) = loaded.commands
    assert (command.config_name, command.config_path) == ("my_trainer", str(repo / "recipe" / "custom" / "config"))
    assert command.entry_module == "verl.trainer.main_ppo"  # it hands the run to verl's trainer


def test_a_custom_config_is_never_passed_unchecked_in_silence(findings, linted):
    """Composing the custom config needs verl's own config files: where none is found, the file is not checked,
    and a note and the summary say so."""
    unchecked = {Path(f["path"]).stem: f for f in linted["summary"].get("not_checked_files", [])}
    if "custom" in unchecked:
        assert "my_trainer" in unchecked["custom"]["message"]
        assert [d["severity"] for d in findings["custom"]] == ["info"]
        assert "my_trainer" in findings["custom"][0]["message"]
    else:
        assert findings["custom"] == []


@pytest.mark.parametrize(
    "path", ["/path/to/your/project/examples/config", "/home/YOUR_NAME/project/config", "/your/project/config"]
)
def test_a_placeholder_config_path_is_a_warning_that_says_so(tmp_path, path):
    """A template's `--config-path /path/to/your/project/...` left unfilled: not a silent info."""
    (tmp_path / "run.sh").write_text(
        f"#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path={path} --config-name=mine trainer.nnodes=1\n"
    )
    found = sapo_lint_json("run.sh", cwd=tmp_path)
    (rf004,) = [d for d in found["diagnostics"] if d["code"] == "RF004"]
    assert rf004["severity"] == "warning" and "is a placeholder to fill in before a run" in rf004["message"]


def test_a_config_path_that_does_not_exist_here_stays_an_info(tmp_path):
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=/data/team/config --config-name=mine\n"
    )
    (rf004,) = [d for d in sapo_lint_json("run.sh", cwd=tmp_path)["diagnostics"] if d["code"] == "RF004"]
    assert rf004["severity"] == "info" and "placeholder" not in rf004["message"]
