"""Config-group options from a directory outside verl (SL011) and Hydra's own `hydra.*` keys: what the schema rules
(SL001, SL003-SL006) leave alone, and what they still report. Group selections of verl's own options:
tests/test_group_selections.py."""

from sapo_toolkit.linter.core.hydra_keys import is_hydra_key

from .helpers import codes, only

SCHEMA_CODES = ("SL001", "SL003", "SL004", "SL005", "SL006")

# grpo_trainer/run_qwen3_5_35b_megatron_lite.sh in verl's examples
MLITE = """overrides:
  hydra.searchpath: ["pkg://verl_mlite.config"]
  actor@actor_rollout_ref.actor: mlite_actor
  actor_rollout_ref.actor.engine.tp: 2
  +actor_rollout_ref.actor.engine.impl_cfg.recompute: [full]
  actor_rollout_ref.actor.ppo_mini_batch_size: 16
"""


def schema_findings(diagnostics):
    return [d for d in diagnostics if d.code in SCHEMA_CODES]


def test_group_option_outside_the_snapshot_leaves_its_subtree_unchecked(lint_text):
    found = lint_text(MLITE)
    assert not schema_findings(found)
    notes = only(found, "SL011")
    assert len(notes) == 1 and notes[0].location.line == 7
    assert "`actor_rollout_ref.actor`" in notes[0].message and "pkg://verl_mlite.config" in notes[0].message
    assert notes[0].severity.value == "info"


def test_keys_outside_the_selected_subtree_are_still_checked(lint_text):
    found = lint_text(MLITE + "  actor_rollout_ref.rollout.tensor_parallel_size: 2\n  trainer.logger: 3\n")
    assert codes(schema_findings(found)) == ["SL001", "SL004"]
    # without the group override the same keys are unknown
    found = lint_text(MLITE.replace("  actor@actor_rollout_ref.actor: mlite_actor\n", ""))
    assert {"SL001", "SL003"} <= set(codes(found)) and not only(found, "SL011")


def test_hydra_keys_are_checked_against_hydra_conf(lint_text):
    body = (
        "overrides:\n  hydra.run.dir: /tmp/out\n  hydra.job.chdir: false\n  hydra/job_logging: disabled\n"
        "  hydra.searchpath: []\n  hydra.job_logging.root.level: WARN\n"
    )
    found = lint_text(body)
    assert not schema_findings(found) and not only(found, "SL011")
    assert codes(only(lint_text("overrides:\n  hydra.run.dirr: /tmp/out\n"), "SL001")) == ["SL001"]


def test_is_hydra_key_reads_hydra_conf():
    assert is_hydra_key("hydra.run.dir") and is_hydra_key("hydra/job_logging") and is_hydra_key("hydra.verbose")
    assert is_hydra_key("hydra.job.config.override_dirname.kv_sep")
    assert not is_hydra_key("hydra.run.nope") and not is_hydra_key("hydra.searchpath.x")
    assert not is_hydra_key("hydra/nope") and not is_hydra_key("hydra") and not is_hydra_key("trainer.logger")


def test_searchpath_makes_an_unknown_model_engine_option_external(lint_text):
    found = lint_text("overrides:\n  model_engine: mlite\n")
    assert only(found, "SL005") and not only(found, "SL011")
    found = lint_text(
        "overrides:\n  hydra.searchpath: [pkg://verl_mlite.config]\n  model_engine: mlite\n"
        "  actor_rollout_ref.actor.engine.tp: 2\n"
    )
    assert not schema_findings(found)
    assert "the whole config" in only(found, "SL011")[0].message


def test_global_package_puts_the_whole_config_outside(lint_text):
    searchpath = "overrides:\n  hydra.searchpath: [pkg://verl_mlite.config]\n"
    found = lint_text(searchpath + "  +actor@_global_: mlite_actor\n  actor_rollout_ref.actor.engine.tp: 2\n")
    assert not schema_findings(found)
    assert "the whole config" in only(found, "SL011")[0].message
    # without the search path verl has no such option; and `actor@_global_` is no placement of verl's config
    assert codes(schema_findings(lint_text("overrides:\n  +actor@_global_: mlite_actor\n"))) == ["SL005"]
    assert [d.code for d in lint_text(searchpath + "  actor@_global_: mlite_actor\n") if d.code[:2] == "SL"] == [
        "SL012"
    ]
