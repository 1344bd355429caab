"""`stack.resolve_stack`: which verl, megatron-core and mbridge a file is checked against, decided once, with why;
the layouts research repositories use (issue 29, section A), each shown with a small repository of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from sapo_toolkit.linter.core.command import Stack
from sapo_toolkit.linter.schema import DEFAULT_MBRIDGE, fact, version_key
from sapo_toolkit.linter.sources.recipe import ReadOptions
from sapo_toolkit.linter.stack import Declared, resolve_stack

from .helpers import tiny_verl, verl_choice
from .test_verl_source import TINY, codes, report

OPTIONS = ReadOptions("0.9.1", Stack(None, None))


def script_in(root: Path, text: str = TINY, name: str = "run.sh") -> Path:
    (root / ".git").mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)
    return root / name


def test_a_nested_checkout_is_the_verl_the_repository_runs(tmp_path):
    """`repo/verl/setup.py` with the package at `repo/verl/verl/` (cloned, then `pip install -e ./verl`)."""
    checkout = tmp_path / "verl"
    tiny_verl(checkout, version="0.4.0.dev")
    (checkout / "setup.py").write_text("from setuptools import setup\nsetup(name='verl')\n")
    script_in(tmp_path, TINY.replace("tiny_knob=3", "tiny_knbo=3"))
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert verl_choice(found, "run.sh") == {
        "version": "0.4.0.dev",
        "source": "source-tree",
        "path": "verl/verl",
        "snapshot": "built",
    }
    assert [c for c, _ in codes(found, "run.sh") if c == "SL001"] == ["SL001"]  # judged by the checkout's config


def test_a_fork_s_copy_of_verl_s_config_directory_beside_its_entry_module(tmp_path):
    """`verl/mix_src/config/` copies verl's `trainer/config/` (the same `evaluation.yaml`, an edited
    `ppo_trainer.yaml`) beside the fork's own `mix_ppo_trainer.yaml`: the tree is snapshotted, the fork's trainer is
    checked against its own config, and verl's `ppo_trainer` stays verl's (the module that composes the edited copy
    is not given verl's)."""
    from sapo_toolkit.schemas.build.verl import entrypoint_defaults

    package = tiny_verl(tmp_path, version="0.1")
    (package / "trainer" / "config" / "evaluation.yaml").write_text("data:\n  path: x\n")
    fork = package / "mix_src"
    (fork / "config").mkdir(parents=True)
    (fork / "config" / "evaluation.yaml").write_text("data:\n  path: x\n")
    (fork / "config" / "ppo_trainer.yaml").write_text("trainer:\n  nnodes: 1\n  tiny_knob: 2\n  fork_knob: 1\n")
    (fork / "config" / "mix_ppo_trainer.yaml").write_text("trainer:\n  nnodes: 1\n  mix_knob: 1\n")
    for module, config in (("main_mix_ppo", "mix_ppo_trainer"), ("main_copy", "ppo_trainer")):
        (fork / f"{module}.py").write_text(
            f"import hydra\n\n\n@hydra.main(config_path='config', config_name='{config}', version_base=None)\n"
            "def main(config):\n    pass\n\n\nif __name__ == '__main__':\n    main()\n"
        )
    assert entrypoint_defaults(package) == {
        "verl.mix_src.main_mix_ppo": "mix_ppo_trainer",
        "verl.trainer.main_ppo": "ppo_trainer",
    }
    script_in(tmp_path, "#!/bin/bash\npython3 -m verl.mix_src.main_mix_ppo trainer.mix_knob=2 trainer.mix_knb=2\n")
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert verl_choice(found, "run.sh")["snapshot"] == "built"
    assert [m.split("`")[1] for c, m in codes(found, "run.sh") if c.startswith(("SL", "RF004"))] == [
        "trainer.mix_knb"
    ], found["diagnostics"]


def test_a_directory_named_verl_without_a_checkout_is_not_one(tmp_path):
    """A `verl/` folder with no `setup.py`/`pyproject.toml` is no checkout: its `verl/verl` is not imported."""
    tiny_verl(tmp_path / "verl")
    script_in(tmp_path)
    assert verl_choice(report("run.sh", cwd=tmp_path, cache=tmp_path / "cache"), "run.sh")["source"] == "newest"


@pytest.mark.parametrize("cd", ["cd /data/someone/project", 'cd "$WORKDIR"', "cd ../../elsewhere"])
def test_a_cd_the_reader_cannot_follow_falls_back_to_the_repository_s_own_verl(tmp_path, cd):
    """A `cd` into a directory this machine does not have (or an unknown one) hides nothing: the repository's own
    verl, installed, is what runs."""
    tiny_verl(tmp_path, version="0.5.0.dev")
    script_in(tmp_path, f"#!/bin/bash\n{cd}\npython3 -m verl.trainer.main_ppo trainer.tiny_knob=3\n")
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert verl_choice(found, "run.sh")["source"] == "source-tree"
    assert verl_choice(found, "run.sh")["version"] == "0.5.0.dev"


@pytest.mark.parametrize(
    "reaches",
    [
        'export PYTHONPATH="<your_path_to_project>"/fork:$PYTHONPATH',  # a template's blank before it
        "ROOT=/mnt/someone/project/\ncd $ROOT/fork",  # the author's machine
        "ROOT= # your root path\ncd $ROOT/project/fork/",  # left empty: `/project/fork`
        'cd "$WORKDIR/fork"',  # a variable the script never sets
    ],
)
def test_a_directory_of_another_machine_is_the_repository_s_own_by_its_last_components(tmp_path, reaches):
    """A script that reaches its repository's verl (a fork not named `verl`, away from the script's path up to the
    root) through a `cd` or `PYTHONPATH` this machine does not have: the repository's directory the path's last
    components name is where Python imports verl from, so the fork's own keys are known."""
    tiny_verl(tmp_path / "project" / "fork", version="0.3.1.dev")
    (tmp_path / "project" / "scripts").mkdir(parents=True)
    script_in(
        tmp_path,
        f"#!/bin/bash\n{reaches}\npython3 -m verl.trainer.main_ppo trainer.tiny_knob=3\n",
        name="project/scripts/train.sh",
    )
    found = report("project/scripts/train.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert verl_choice(found, "project/scripts/train.sh")["path"] == "project/fork/verl"
    assert not [c for c, _ in codes(found, "project/scripts/train.sh") if c.startswith("SL")]


def test_a_config_path_of_another_machine_is_the_repository_s_own_by_its_last_components(tmp_path):
    """`--config-path=<your_path_to_project>/scripts/config` (a template's blank) and another machine's absolute
    path name the repository's `project/scripts/config`: its config is composed and checked, not left unchecked."""
    tiny_verl(tmp_path / "project", version="0.3.1.dev")
    config = tmp_path / "project" / "scripts" / "config"
    config.mkdir(parents=True)
    (config / "my_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"
        "my_algo:\n  beta: 0.1\n"
    )
    for name, written in (
        ("blank.sh", "<your_path_to_project>/scripts/config"),
        ("away.sh", "/mnt/x/project/scripts/config"),
    ):
        script_in(
            tmp_path,
            f'#!/bin/bash\ncd project\npython3 -m verl.trainer.main_ppo --config-path="{written}" '
            "--config-name=my_trainer my_algo.beta=0.2 my_algo.betta=0.3\n",
            name=f"project/scripts/{name}",
        )
        found = report(f"project/scripts/{name}", cwd=tmp_path, cache=tmp_path / "cache")
        assert [
            m.split("`")[1] for c, m in codes(found, f"project/scripts/{name}") if c.startswith(("SL", "RF004"))
        ] == ["my_algo.betta"], found["diagnostics"]


def test_the_verl_the_trainer_imports_comes_before_the_repository_s(tmp_path):
    tiny_verl(tmp_path, version="0.5.0.dev")
    tiny_verl(tmp_path / "other", version="0.6.0.dev")
    script_in(tmp_path, "#!/bin/bash\ncd other\npython3 -m verl.trainer.main_ppo trainer.tiny_knob=3\n")
    assert verl_choice(report("run.sh", cwd=tmp_path, cache=tmp_path / "cache"), "run.sh")["version"] == "0.6.0.dev"


def test_a_repository_verl_that_cannot_be_built_is_never_judged_by_another_verl(tmp_path):
    """One warning names the tree; no SL finding from another verl's config; the file is reported not checked."""
    package = tiny_verl(tmp_path)
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        "defaults:\n  - missing_group: gone\n  - _self_\ntrainer:\n  nnodes: 1\n"
    )
    script_in(tmp_path, "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.not_in_any_verl=1 trainer.nnodes=2\n")
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert not [c for c, _ in codes(found, "run.sh") if c.startswith("SL")]
    (warning,) = [d for d in found["diagnostics"] if d["code"] == "RF004"]
    assert warning["severity"] == "warning" and "not checked against another verl" in warning["message"]
    assert verl_choice(found, "run.sh") == {"version": "0.0.1", "source": "source-tree", "path": "verl",
                                             "snapshot": "unbuilt"}  # fmt: skip
    assert [r["reason"] for r in found["summary"]["not_checked_reasons"]] == ["snapshot-not-built"]


def test_megatron_core_is_paired_with_the_verl_from_data(tmp_path):
    recipe = tmp_path / "r.yaml"
    for verl, core in [("0.5.0", "0.12.1"), ("0.6.1", "0.13.1"), ("0.9.1", "0.16.1"), ("0.10.0.dev", "0.18.0")]:
        stack = resolve_stack(str(recipe), Declared(verl=verl), OPTIONS)
        assert stack.libraries.megatron_core == core == fact("verl", "megatron-core", verl)
        assert stack.why[1] == f"megatron-core {core} (the release verl {verl} runs with, schemas/facts.json)"
    # a development tree is its release line's: 0.6.0.dev runs what 0.6.1 does
    assert fact("verl", "megatron-core", "0.6.0.dev") == "0.13.1"


def test_what_the_file_says_wins_over_the_settings_and_the_pairing(tmp_path):
    recipe = str(tmp_path / "r.yaml")
    named = resolve_stack(recipe, Declared(verl="0.5.0", megatron_core="0.15.3", mbridge="git-main"), OPTIONS)
    assert named.libraries == Stack("0.15.3", "git-main")
    assert named.why[1:] == ("megatron-core 0.15.3 (the recipe's `stack.megatron_core`)",
                             "mbridge git-main (the recipe's `stack.mbridge`)")  # fmt: skip
    setting = resolve_stack(recipe, Declared(verl="0.5.0"), OPTIONS._replace(stack=Stack("0.16.1", None)))
    assert setting.libraries == Stack("0.16.1", DEFAULT_MBRIDGE)
    assert setting.verl.source == "recipe" and setting.snapshot == "0.5.0"
    cli = resolve_stack(recipe, Declared(verl="0.5.0"), OPTIONS._replace(cli_verl="0.8.0"))
    assert cli.verl.source == "command-line" and cli.libraries.megatron_core == "0.16.1"


def test_versions_compare_in_pep_440_order():
    assert version_key("0.10.0.dev") < version_key("0.10.0") < version_key("0.10.1")
    assert version_key("0.16.0rc1") < version_key("0.16") and version_key("0.9.1") < version_key("0.10.0.dev")
    assert version_key("git-main") < version_key("0.1")  # a name that is no version sorts first


def test_an_entry_module_this_verl_lacks_is_one_finding_without_a_cascade(tmp_path):
    """`verl.trainer.main_generation` (gone after 0.5): RF015 alone, not a hundred SL001 from `ppo_trainer`, a
    config the run never composes."""
    script_in(
        tmp_path,
        "#!/bin/bash\npython3 -m verl.trainer.main_generation data.path=a.parquet data.n_samples=4 "
        "model.path=/models/x rollout.temperature=1.0\n",
    )
    found = report("--verl-version", "0.9.1", "run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    errors = [d["code"] for d in found["diagnostics"] if d["severity"] == "error"]
    assert errors == ["RF015"]
    on_050 = report("--verl-version", "0.5.0", "run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert "RF015" not in [d["code"] for d in on_050["diagnostics"]]  # 0.5.0 has it: its own config judges it


def test_a_verl_program_that_is_no_hydra_trainer_is_not_checked_as_one(tmp_path):
    """`python3 -m verl.model_merger merge --backend fsdp ...` runs argparse, not Hydra: nothing to check."""
    script_in(tmp_path, "#!/bin/bash\npython3 -m verl.model_merger merge --backend fsdp --local_dir ckpt\n")
    found = report("--verl-version", "0.9.1", "run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert not [d for d in found["diagnostics"] if d["severity"] == "error"]
    assert found["summary"]["not_checked_reasons"][0]["reason"] == "no-trainer-command"


def test_a_loss_mode_the_repository_registers_outside_verl_is_a_valid_choice(tmp_path):
    """A recipe's own `@register_policy_loss("mine")` (imported by the repository's verl) adds to verl's choices."""
    package = tiny_verl(tmp_path)
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        "trainer:\n  nnodes: 1\nactor_rollout_ref:\n  actor:\n    policy_loss:\n      loss_mode: vanilla\n"
    )
    (package / "trainer" / "ppo").mkdir()
    (package / "trainer" / "ppo" / "core_algos.py").write_text(
        "def register_policy_loss(name):\n    return lambda f: f\n\n\n"
        '@register_policy_loss("vanilla")\ndef vanilla():\n    pass\n'
    )
    (tmp_path / "recipe" / "mine").mkdir(parents=True)
    (tmp_path / "recipe" / "mine" / "core_algos.py").write_text(
        "from verl.trainer.ppo.core_algos import register_policy_loss\n\n\n"
        "@register_policy_loss('mine')\ndef mine():\n    pass\n"
    )
    key = "actor_rollout_ref.actor.policy_loss.loss_mode"
    script_in(tmp_path, f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {key}=mine\n")
    script_in(tmp_path, f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {key}=minee\n", name="typo.sh")
    found = report("run.sh", "typo.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert not [c for c, _ in codes(found, "run.sh") if c == "SL005"]
    (typo,) = [m for c, m in codes(found, "typo.sh") if c == "SL005"]
    assert "vanilla, mine" in typo
    assert any(line.startswith("the code of the repository at") for line in found["verl"]["run.sh"]["why"])


def test_a_key_the_repository_s_own_code_reads_is_not_called_unread(tmp_path):
    """A trainer subclass of the repository reading `self.config.trainer.my_knob` makes `+trainer.my_knob` a real
    setting; a name read off another node (`other_cfg.lost_knob`) says nothing of `trainer.lost_knob`."""
    tiny_verl(tmp_path)
    (tmp_path / "recipe" / "mine").mkdir(parents=True)
    (tmp_path / "recipe" / "mine" / "my_trainer.py").write_text(
        "class MyTrainer:\n    def fit(self):\n        k = self.config.trainer.my_knob\n"
        "        n = self.config.trainer.get('my_count')\n        return other_cfg.lost_knob\n"
    )
    script_in(
        tmp_path,
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo +trainer.my_knob=2 +trainer.my_count=3 +trainer.lost_knob=4\n",
    )
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    unread = [m.split("`")[1] for c, m in codes(found, "run.sh") if c == "SL003"]
    assert unread == ["trainer.lost_knob"]
    outside = tmp_path.with_name(tmp_path.name + "-elsewhere")  # the same script in no repository
    outside.mkdir()
    (outside / "run.sh").write_text((tmp_path / "run.sh").read_text())
    alone = report("--verl-version", "0.9.1", "run.sh", cwd=outside, cache=tmp_path / "cache")
    assert "or in this repository" not in " ".join(m for c, m in codes(alone, "run.sh") if c == "SL003")


def test_the_code_above_a_repository_unpacked_without_git_is_no_part_of_it(tmp_path):
    """A repository unpacked from an archive (no `.git`) with its verl tree: its code is the directory holding the
    tree, never the directories above it (up to `/`): a trainer there reading `trainer.my_knob` makes nothing of
    `+trainer.my_knob`, and what the repository's own code reads still counts."""
    project = tmp_path / "project"
    tiny_verl(project)
    (tmp_path / "elsewhere.py").write_text("def fit(self):\n    return self.config.trainer.my_knob\n")
    (project / "my_trainer.py").write_text("def fit(self):\n    return self.config.trainer.my_count\n")
    (project / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo +trainer.my_knob=2 +trainer.my_count=3\n"
    )
    found = report("run.sh", cwd=project, cache=tmp_path / "cache")
    assert [m.split("`")[1] for c, m in codes(found, "run.sh") if c == "SL003"] == ["trainer.my_knob"]


@pytest.mark.parametrize(
    "read",
    [
        'OmegaConf.select(self.config.trainer, "my_knob", default=1)',
        "getattr(self.config.trainer, 'my_knob', None)",
        'OmegaConf.select(self.config, "trainer.my_knob")',
        "hasattr(cfg.trainer, 'my_knob')",
    ],
)
def test_a_key_the_repository_s_code_reads_by_name_is_not_called_unread(tmp_path, read):
    """A recipe's trainer reading a key by its name off the node it passes (`OmegaConf.select(self.config.trainer,
    "log_freq", default=1)`, `getattr`), as verl's own reads are counted: `+trainer.my_knob` is a real setting; the
    name read off `trainer` says nothing of `data.my_knob`."""
    package = tiny_verl(tmp_path)
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text("trainer:\n  nnodes: 1\ndata:\n  seed: 1\n")
    (tmp_path / "recipe" / "mine").mkdir(parents=True)
    (tmp_path / "recipe" / "mine" / "my_trainer.py").write_text(
        f"from omegaconf import OmegaConf\n\n\nclass MyTrainer:\n    def fit(self, cfg):\n        return {read}\n"
    )
    script_in(tmp_path, "#!/bin/bash\npython3 -m verl.trainer.main_ppo +trainer.my_knob=2 +data.my_knob=2\n")
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert [m.split("`")[1] for c, m in codes(found, "run.sh") if c == "SL003"] == ["data.my_knob"]


def test_schema_facts_lists_what_changed_between_two_versions(tmp_path):
    import subprocess

    exe = [str(Path(__import__("sys").executable).parent / "sapo-lint")]
    changed = subprocess.run([*exe, "schema", "facts", "0.7.1", "0.8.0"], capture_output=True, text=True, timeout=60)
    lines = changed.stdout.splitlines()
    assert changed.returncode == 0 and "default-engine-workers: False in 0.7.1, True in 0.8.0" in lines
    assert not [line for line in lines if line.startswith("megatron-core:")]  # 0.16.1 for both: unchanged
    one = subprocess.run([*exe, "schema", "facts", "--package", "megatron-core", "0.12.1"], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert "tp-replicates-kv-heads: False" in one.stdout.splitlines()


def test_a_package_named_verl_that_is_not_verl_is_another_program(tmp_path):
    """A fork with its own entry points and config system (no `verl/trainer/config/`, no `@hydra.main`): said once,
    not checked against verl's config (no SL001 for its keys, no RF015 for its module)."""
    (tmp_path / "verl" / "trainer").mkdir(parents=True)
    for init in ("verl/__init__.py", "verl/trainer/__init__.py"):
        (tmp_path / init).write_text("")
    (tmp_path / "verl" / "trainer" / "main.py").write_text("import sys\nprint(sys.argv)\n")
    script_in(
        tmp_path,
        "#!/bin/bash\npython3 -m verl.trainer.main config=examples/config.yaml worker.actor.optim.lr=1e-6\n",
    )
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert [d["code"] for d in found["diagnostics"]] == ["SH007"]
    assert "another program named verl" in found["diagnostics"][0]["message"]
    assert found["summary"]["not_checked_reasons"][0]["reason"] == "unresolved-entry-module"


def test_a_project_in_the_src_layout_runs_its_src_verl(tmp_path):
    """`setup.py` with `package_dir={'': 'src'}` (PyPA's src layout), installed with `pip install -e .`: the
    verl at `src/verl` is what `python3 -m verl.trainer.main_ppo` imports from anywhere."""
    tiny_verl(tmp_path / "src", version="0.2.0.dev")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(package_dir={'': 'src'})\n")
    (tmp_path / "scripts").mkdir()
    script_in(tmp_path, TINY, name="scripts/train.sh")
    found = report("scripts/train.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert verl_choice(found, "scripts/train.sh") == {
        "version": "0.2.0.dev",
        "source": "source-tree",
        "path": "src/verl",
        "snapshot": "built",
    }


@pytest.mark.parametrize("checks", [False, True])
def test_a_source_tree_s_own_code_decides_a_code_fact(tmp_path, checks):
    """BS004 (train batch below the mini-batch) only where the tree's verl checks it: verl 0.1 and its forks do not
    (`schemas/facts.json` `train-batch-covers-mini-batch`, `code`), whatever the version file says."""
    package = tiny_verl(tmp_path, version="0.5.0.dev")
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        "trainer:\n  nnodes: 1\ndata:\n  train_batch_size: 8\nactor_rollout_ref:\n  actor:\n"
        "    ppo_mini_batch_size: 256\n    use_dynamic_bsz: false\n"
    )
    if checks:
        (package / "trainer" / "checks.py").write_text(
            "def validate(config):\n    assert config.data.train_batch_size >= config.actor.ppo_mini_batch_size\n"
        )
    script_in(tmp_path, "#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=16\n")
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert ("BS004" in [c for c, _ in codes(found, "run.sh")]) == checks


def test_the_entry_modules_of_a_verl_that_cannot_be_built_are_not_judged_by_another_verl(tmp_path):
    """A fork's own entry module (`verl.mix_src.main_mix_ppo`) in a tree that cannot be snapshotted: what its
    entry modules are is not known, so no 'has no `@hydra.main`' from the newest verl's entry modules."""
    package = tiny_verl(tmp_path)
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        "defaults:\n  - missing_group: gone\n  - _self_\ntrainer:\n  nnodes: 1\n"
    )
    (package / "mix_src").mkdir()
    (package / "mix_src" / "main_mix_ppo.py").write_text(
        "import hydra\n\n\n@hydra.main(config_path='config', config_name='mix_ppo_trainer', version_base=None)\n"
        "def main(config):\n    pass\n\n\nif __name__ == '__main__':\n    main()\n"
    )
    script_in(tmp_path, "#!/bin/bash\npython3 -m verl.mix_src.main_mix_ppo trainer.nnodes=2\n")
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert [d["code"] for d in found["diagnostics"] if d["severity"] != "info"] == ["RF004"], found["diagnostics"]


@pytest.mark.parametrize(
    ("checks", "val_only", "said"),
    [
        (True, "False", "validate_config fails"),
        (True, "True", "validate_config fails"),
        (False, "False", "DataProto.chunk"),
        (False, "True", None),
    ],
)
def test_a_batch_the_workers_cannot_split_fails_where_the_tree_s_code_says(tmp_path, checks, val_only, said):
    """BS001 (train batch x n not a multiple of the world size): a verl that checks it at start-up fails there,
    validation-only runs too (`schemas/facts.json` `train-batch-divisible-by-minimal-batch`, `code`); verl 0.1 and
    its forks check nothing at start-up, and fail at the first training step's split, which a validation-only run
    (`+trainer.val_only=true`) never reaches."""
    package = tiny_verl(tmp_path, version="0.2.0.dev")
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        "trainer:\n  nnodes: 1\n  n_gpus_per_node: 8\ndata:\n  train_batch_size: 8\nactor_rollout_ref:\n"
        "  actor:\n    strategy: fsdp\n    use_dynamic_bsz: false\n  rollout:\n    n: 1\n"
    )
    (package / "trainer" / "ray_trainer.py").write_text(
        "def fit(config, n_gpus):\n    if config.trainer.get('val_only', False):\n        return\n"
    )
    if checks:
        (package / "trainer" / "checks.py").write_text(
            "def validate(config, n_gpus):\n    real_train_batch_size = config.data.train_batch_size\n"
            "    assert real_train_batch_size % n_gpus == 0\n"
        )
    script_in(
        tmp_path,
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=16 trainer.n_gpus_per_node=5 "
        f"+trainer.val_only={val_only}\n",
    )
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    messages = [d["message"] for d in found["diagnostics"] if d["code"] == "BS001"]
    assert [said in m for m in messages] == ([True] if said else []), messages


def test_a_verl_submodule_not_checked_out_is_never_judged_by_another_verl(tmp_path):
    """`.gitmodules` declares `verl` (a pinned verl checkout), absent here: the repository's verl is known but not on
    this machine, so its keys are not judged against the newest release (one warning says how to get it)."""
    (tmp_path / ".gitmodules").write_text('[submodule "verl"]\n\tpath = verl\n\turl = https://github.com/x/verl.git\n')
    (tmp_path / "verl").mkdir()  # git leaves the submodule's directory empty
    script_in(tmp_path, "#!/bin/bash\npython3 -m verl.trainer.main_ppo reward_model.strategy=fsdp\n")
    found = report("run.sh", cwd=tmp_path, cache=tmp_path / "cache")
    assert not [d for d in found["diagnostics"] if d["code"].startswith("SL")]
    (warning,) = [d for d in found["diagnostics"] if d["code"] == "RF004"]
    assert "git submodule `verl`, not checked out here" in warning["message"]
    assert verl_choice(found, "run.sh")["snapshot"] == "unbuilt"
