"""The read-set per entry point (issue 30 item 3): which entry modules take a top-level node off their config, built
from verl's source (`schemas/build/entry_reads.py`), and SL003 for a key under a node the command's entry module
never reads."""

import json
import zipfile
from pathlib import Path

import pytest

from sapo_toolkit.schemas.build.entry_reads import entry_reads

from .helpers import REPO, fetch_wheel, only

ASYNC = "verl.experimental.fully_async_policy.fully_async_main"
PPO = "verl.trainer.main_ppo"


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "verl" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "verl"


MIGRATION = "def migrate(config):\n    config.reward.name = config.legacy.manager\n    return config\n"
ASYNC_MAIN = (
    "import hydra\nfrom verl.utils.legacy import migrate\nfrom verl.trainer.main_ppo import run\n\n"
    "@hydra.main(config_path='config', config_name='async')\ndef main(config):\n    run(migrate(config))\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def _ppo_main(body: str) -> str:
    return (
        "import hydra\n\ndef run(config):\n    print(config.data.files)\n\n"
        f"@hydra.main(config_path='config', config_name='ppo')\ndef main(config):\n{body}\n"
        "if __name__ == '__main__':\n    main()\n"
    )


NODES = {"verl.trainer.main_ppo": {"data", "legacy", "reward"}, "verl.experimental.async_main": {"data", "legacy"}}


def test_a_node_only_another_entry_modules_call_graph_reads_is_unread_by_this_one(tmp_path):
    package = _package(
        tmp_path,
        {
            "utils/legacy.py": MIGRATION,
            "utils/__init__.py": "from .legacy import migrate\n__all__ = ['migrate']\n",  # a re-export runs nothing
            "trainer/main_ppo.py": _ppo_main("    run(config)\n"),
            "experimental/async_main.py": ASYNC_MAIN,
        },
    )
    assert entry_reads(package, NODES) == {"legacy": ["verl.experimental.async_main"]}


@pytest.mark.parametrize(
    "body",
    [
        "    from verl.utils import migrate\n    run(migrate(config))\n",  # called through the re-export
        "    import verl.utils.legacy as legacy\n    run(legacy.migrate(config))\n",  # a module's attribute
        "    runner.migrate(config)\n",  # an object's attribute: any unit of that name may be what it holds
    ],
)
def test_a_node_read_on_every_entry_modules_path_is_not_listed(tmp_path, body):
    package = _package(
        tmp_path,
        {
            "utils/legacy.py": MIGRATION,
            "utils/__init__.py": "from .legacy import migrate\n",
            "trainer/main_ppo.py": _ppo_main(body),
            "experimental/async_main.py": ASYNC_MAIN,
        },
    )
    assert entry_reads(package, NODES) == {}


@pytest.mark.slow
def test_verl_0_9_1_main_ppo_never_reads_the_legacy_reward_nodes_that_0_8_0_migrated(tmp_path):
    """The committed snapshots say what the builder reads from the real wheels: verl 0.8.0's `main_ppo.main` calls
    `migrate_legacy_reward_impl`, 0.9.1's only `fully_async_main` does."""
    for version in ("0.8.0", "0.9.1"):
        committed = json.loads((REPO / "schemas" / "verl" / f"{version}.json").read_text())
        with zipfile.ZipFile(fetch_wheel(f"verl=={version}")) as zf:
            zf.extractall(tmp_path / version, [n for n in zf.namelist() if n.startswith("verl/")])
        readers = committed["entry_reads"]["reward_model"]
        assert (PPO in readers) == (version == "0.8.0") and ASYNC in readers
        nodes = {module: {"reward_model"} for module in committed["entrypoints"]}
        built = entry_reads(tmp_path / version / "verl", nodes)
        assert built["reward_model"] == readers


DAPO = (
    "overrides:\n  reward_model.reward_manager: dapo\n  +reward_model.reward_kwargs.max_resp_len: 4096\n"
    "  trainer.total_epochs: 1\n"
)


def test_sl003_dapo_reward_under_main_ppo_of_verl_0_9_1_is_never_read(lint_text):
    (found,) = only(lint_text('verl: "0.9.1"\n' + DAPO), "SL003")  # one per node, the other keys related
    assert found.location.line == 7 and [r.line for r in found.related] == [8] and found.severity == "error"
    message = found.message
    assert message.startswith("`reward_model.reward_manager` and 1 more key are never read: "), message
    assert f"`{PPO}` of verl 0.9.1 never reads `reward_model` (only `{ASYNC}` does)" in message, message
    assert "Removed or renamed since verl 0.8.0: `verl.trainer.main_ppo` reads `reward_model` there" in message


def test_sl003_dapo_reward_with_the_entry_module_that_reads_it_is_accepted(lint_text):
    header = f'verl: "0.9.1"\nentrypoint: {ASYNC}\nconfig_name: fully_async_ppo_trainer\n'
    assert not only(lint_text(header + DAPO), "SL003")


@pytest.mark.parametrize("version", ["0.8.0", "0.7.1", "0.5.0"])
def test_sl003_dapo_reward_where_main_ppo_read_it_is_accepted(lint_text, version):
    assert not only(lint_text(f'verl: "{version}"\n' + DAPO), "SL003")


def test_sl003_unread_node_turned_off_is_a_warning(lint_text):
    found = only(lint_text('verl: "0.9.1"\noverrides:\n  reward_model.reward_manager: null\n'), "SL003")
    assert [d.severity for d in found] == ["warning"]


def test_sl003_repository_code_taking_the_node_off_its_config_reads_it(lint_text, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "migrate.py").write_text("def migrate(config):\n    return config.reward_model.reward_manager\n")
    assert not only(lint_text('verl: "0.9.1"\n' + DAPO), "SL003")
