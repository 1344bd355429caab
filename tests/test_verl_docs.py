"""The comments verl's config YAML carries for its keys (issue 34: hover and the recipe schema's descriptions):
read with ruamel.yaml (above a key, at the end of its line, over several lines), placed where Hydra composes each
file (a group file at its package), kept in `schemas/verl-docs/` beside the snapshots and never on the lint path."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sapo_toolkit.linter.schema import GroupChange, available_verl_versions
from sapo_toolkit.linter.verl_docs import DOCS_DIR, VerlDocs, load_docs, markdown_quote
from sapo_toolkit.schemas import build
from sapo_toolkit.schemas.build.compose import ConfigSource
from sapo_toolkit.schemas.build.docs import composed_comments, yaml_comments

ROOT = Path(__file__).resolve().parents[1]


def test_a_keys_comment_is_the_run_above_it_and_the_one_at_the_end_of_its_line():
    text = textwrap.dedent(
        """\
        # @package _global_
        # A header: a blank line parts it from the first key.

        defaults:
          # not a key's comment
          - _self_

        # Above a
        a: 1  # and at a's end
        # first line of b's
        #   second line, indented
        b:
          # above c, the first key of b
          c: "x # not a comment"

          # after a quoted scalar and a blank line
          d: |
            # inside a block scalar: text, not a comment
            more text
          e: 2
          # over a blank-only line ruamel leaves out of its token
        f: 3 # only at the end
        g: 4

        # parted from h by a blank line

        h: 5
        list:
          # a key inside a list is no override key
          - k: 1
        """
    ).replace("  # over", "  \n  # over", 1)
    said = yaml_comments(text)
    assert said == {
        "a": "Above a\nand at a's end",
        "b": "first line of b's\nsecond line, indented",
        "b.c": "above c, the first key of b",
        "b.d": "after a quoted scalar and a blank line",
        "f": "over a blank-only line ruamel leaves out of its token\nonly at the end",
    }, said


def test_a_file_without_comments_or_not_a_mapping_has_none():
    assert yaml_comments("a: 1\nb: {c: 2}\n") == {}
    assert yaml_comments("- 1\n- 2\n") == {}
    assert yaml_comments("") == {}


def _tree(root: Path) -> Path:
    """A small Hydra config tree: a primary config placing group `actor` at `roles.actor`, whose options have a
    defaults list of their own (a base option, and group `optim` nested at `optim` below the actor)."""
    files = {
        "main.yaml": """\
            # not about a key

            defaults:
              - actor@roles.actor: dp_actor
              - _self_

            # The roles of the run
            roles:
              # how many replicas
              replicas: 2  # at least one
            """,
        "actor/base.yaml": """\
            # Split each batch into mini-batches of this size
            mini_batch_size: 256

            # Learning-rate warm-up steps
            warmup: 0

            # a key both options keep
            shared: true
            """,
        "actor/dp_actor.yaml": """\
            defaults:
              - base
              - ../optim@optim: adam
              - _self_

            # dp's own strategy
            strategy: fsdp

            # dp's warm-up, over
            # two lines
            warmup: 10

            shared: false
            """,
        "actor/mega_actor.yaml": """\
            defaults:
              - base
              - _self_

            # tensor parallel size
            tp: 1
            """,
        "optim/adam.yaml": """\
            # peak learning rate
            lr: 0.001
            """,
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_a_group_files_comments_land_where_hydra_composes_it(tmp_path):
    conf = _tree(tmp_path / "conf")
    document = {"verl_version": "0", **composed_comments([ConfigSource("main", conf)], tmp_path)}
    assert document["configs"] == {
        "main": {
            "": [
                ["conf/actor/base.yaml", "roles.actor"],
                ["conf/optim/adam.yaml", "roles.actor.optim"],
                ["conf/actor/dp_actor.yaml", "roles.actor"],
                ["conf/main.yaml", ""],
            ]
        }
    }
    assert document["options"]["actor/mega_actor"] == [["conf/actor/base.yaml", ""], ["conf/actor/mega_actor.yaml", ""]]
    assert document["files"]["conf/actor/dp_actor.yaml"] == {
        "strategy": "dp's own strategy",
        "warmup": "dp's warm-up, over\ntwo lines",
    }
    docs = VerlDocs(document)

    def said(path, changes=()):
        found = docs.comment("main", {}, path, changes, ["roles.actor"])
        return found and tuple(found)

    assert said("roles.actor.mini_batch_size") == (
        "Split each batch into mini-batches of this size",
        "conf/actor/base.yaml",
    )
    assert said("roles.actor.warmup") == ("dp's warm-up, over\ntwo lines", "conf/actor/dp_actor.yaml")  # later file
    assert said("roles.actor.shared") == ("a key both options keep", "conf/actor/base.yaml")  # dp's has none
    assert said("roles.actor.optim.lr") == ("peak learning rate", "conf/optim/adam.yaml")  # nested group
    assert said("roles.replicas") == ("how many replicas\nat least one", "conf/main.yaml")
    assert said("roles") == ("The roles of the run", "conf/main.yaml")
    assert said("roles.actor.tp") is None and said("nothing.here") is None
    mega = GroupChange("actor@roles.actor", "actor", "roles.actor", "mega_actor")  # actor@roles.actor=mega_actor
    assert said("roles.actor.tp", [mega]) == ("tensor parallel size", "conf/actor/mega_actor.yaml")
    assert said("roles.actor.warmup", [mega]) == ("Learning-rate warm-up steps", "conf/actor/base.yaml")
    assert said("roles.actor.optim.lr", [mega]) is None  # mega_actor has no optim
    deleted = GroupChange("actor@roles.actor", "actor", "roles.actor", None)
    assert said("roles.actor.strategy", [deleted]) is None and said("roles.replicas", [deleted]) is not None
    assert docs.comment("main", {"model_engine": "dp"}, "roles") is None  # a selection it does not have


def test_every_committed_snapshot_has_its_comments_beside_it_in_the_writers_layout():
    versions = available_verl_versions()
    assert sorted(p.stem for p in DOCS_DIR.glob("*.json")) == sorted(versions)
    for version in versions:
        path = DOCS_DIR / f"{version}.json"
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        assert data["format"] == 1 and data["verl_version"] == version
        assert build.docs_text(data) == text, path.name
        snapshot = json.loads((ROOT / "schemas" / "verl" / f"{version}.json").read_text(encoding="utf-8"))
        assert data["source"] == snapshot["source"] and data.get("commit") == snapshot.get("commit")
        assert set(data["configs"]) == set(snapshot["configs"]), version
        docs = load_docs(version)
        for config, by_selection in data["configs"].items():
            assert set(by_selection) == set(snapshot["tree_sets"][snapshot["configs"][config]["trees"]]["trees"]) or (
                "extends" in snapshot["tree_sets"][snapshot["configs"][config]["trees"]]
            )
        selection = {"model_engine": "dp"} if "model_engine=dp" in data["configs"]["ppo_trainer"] else {}
        found = docs.comment("ppo_trainer", selection, "actor_rollout_ref.actor.ppo_mini_batch_size")
        if version != "0.4.1":  # verl 0.4.1's ppo_trainer.yaml is one file: its comment is another's
            assert found.text == "Split each sample into sub-batches of this size for PPO", version
            assert found.file == "trainer/config/actor/actor.yaml"
        else:
            assert found.file == "trainer/config/ppo_trainer.yaml"


def test_megatron_keys_are_documented_from_the_megatron_files():
    docs = load_docs("0.9.1")
    found = docs.comment(
        "ppo_trainer", {"model_engine": "megatron"}, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
    )
    assert found.text == "tensor model parallel size" and found.file == "trainer/config/engine/megatron.yaml"
    dp = docs.comment("ppo_trainer", {"model_engine": "dp"}, "actor_rollout_ref.actor.strategy")
    megatron = docs.comment("ppo_trainer", {"model_engine": "megatron"}, "actor_rollout_ref.actor.strategy")
    assert dp.file == "trainer/config/actor/dp_actor.yaml"  # dp_actor.yaml comments it again
    # megatron_actor.yaml sets it without a comment: the base actor.yaml's, merged before it, is the one there is
    assert megatron.file == "trainer/config/actor/actor.yaml" and megatron.text.startswith("the abstract actor configs")


def test_the_comments_stay_off_the_lint_path(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ppo_mini_batch_size=16\n")
    probe = (
        "import sys; from sapo_toolkit.linter.cli import main\n"
        "sys.argv = ['sapo-lint', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('ruamel', 'sapo_toolkit.linter.verl_docs', "
        "'sapo_toolkit.schemas.build.docs'))))"
    )
    proc = subprocess.run([sys.executable, "-c", probe, str(script)], capture_output=True, text=True)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr


def test_markdown_quote_escapes_the_comments_own_markup():
    assert markdown_quote("a <b> *c*\n\n[d](e) `f`") == "> a \\<b\\> \\*c\\*\n>\n> \\[d\\](e) \\`f\\`"


def test_docs_only_writes_the_comments_and_nothing_else(tmp_path, monkeypatch):
    conf = _tree(tmp_path / "verl" / "trainer" / "config")
    (tmp_path / "verl" / "version").mkdir()
    (tmp_path / "verl" / "version" / "version").write_text("0.0.1\n")
    (tmp_path / "verl" / "main.py").write_text(
        "import hydra\n\n@hydra.main(config_path='trainer/config', config_name='ppo_trainer')\ndef main(c):\n    pass\n"
    )
    (conf / "main.yaml").rename(conf / "ppo_trainer.yaml")
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sapo_toolkit.linter",
            "schema",
            "build",
            "--docs-only",
            "--verl-root",
            str(tmp_path),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()] == ["verl-docs/0.0.1.json"]
    data = json.loads((out / "verl-docs" / "0.0.1.json").read_text())
    assert data["files"]["trainer/config/ppo_trainer.yaml"]["roles.replicas"] == "how many replicas\nat least one"


@pytest.mark.slow
@pytest.mark.network
def test_the_committed_comments_of_verl_091_are_what_the_wheel_gives():
    from .test_schema_build import _wheel

    wheel = _wheel("verl==0.9.1", "verl-0.9.1-*.whl")
    text = build.docs_text(build.build_verl_docs(*build.locate_verl(wheel=wheel)))
    assert text == (DOCS_DIR / "0.9.1.json").read_text(encoding="utf-8"), (
        f"schemas/verl-docs/0.9.1.json is stale; regenerate with `sapo-lint schema build --docs-only --wheel {wheel}`"
    )


# -- hover, through a real LSP client (test_server.py's) -------------------------------------------------------------

from . import test_server as _lsp  # noqa: E402

client = getattr(_lsp, "client", None)  # pytest-lsp's fixture, where the test extra is installed

RECIPE_071 = """\
recipe: sapo-recipe/v1
name: docs-recipe
verl: "0.7.1"
model: {path: Qwen/Qwen3-0.6B}
overrides:
  critic.model.fsdp_config.param_offload: true
  actor_rollout_ref.actor.checkpoint.save_contents: [model]
"""


@_lsp.lsp_test
async def test_hover_shows_verls_comment_and_which_verl_removed_the_key(client, tmp_path):
    uri = _lsp.opened(client, tmp_path / "recipe.yaml", RECIPE_071, "yaml")
    await _lsp.published(client, uri, 1)
    said = await _lsp.hovered(client, uri, 5, 30)
    assert said.startswith("**`critic.model.fsdp_config.param_offload`**: bool, default false\n\n")
    # engine/fsdp.yaml's comment, over two lines, where 0.7.1 composes that file (critic.model.fsdp_config)
    assert (
        "> Whether to offload model parameters to CPU (trades speed for memory)\n"
        "> Note that this differs from the offload\\_policy in FSDP\n\n"
        "(verl's comment, `trainer/config/engine/fsdp.yaml`)"
    ) in said
    assert "Removed after verl 0.7.1 (not in 0.8.0, 0.9.1, 0.10.0.dev (main @ 1dda039))." in said
    print("\nhover (verl 0.7.1):", said.split("\n\n---")[0].replace("\n\n", " | "))
    said = await _lsp.hovered(client, uri, 6, 40)
    assert "> What to include in saved checkpoints\n> with 'hf\\_model' you can save whole model" in said
