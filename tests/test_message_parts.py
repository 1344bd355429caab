"""The text format's form (issue 30, item 7): a headline per finding, the source line with a caret, `note:` and
`help:` lines (`linter/message_parts.py`); `--format concise` keeps one line per finding; notes follow the
terminal's width and never wrap in a pipe."""

import re

from hypothesis import given
from hypothesis import strategies as st

from sapo_toolkit.linter.core.diagnostics import Diagnostic, Location, Severity
from sapo_toolkit.linter.message_parts import message_parts
from sapo_toolkit.linter.report import Report
from sapo_toolkit.linter.reporters import render_text

from .helpers import REPO
from .test_cli import sapo_lint
from .test_rule_examples import EXAMPLE_RULES, RULES, example_findings


def test_the_opening_clause_is_the_headline_the_imperative_sentences_the_help():
    parts = message_parts(
        "unknown key `trainer.save_frequency`: not in verl 0.9.1 `ppo_trainer`, so Hydra refuses it at compose. "
        "Set `trainer.save_freq` instead. Remove the `+` if you meant to add it."
    )
    assert parts.headline == "unknown key `trainer.save_frequency`"
    assert parts.note == "not in verl 0.9.1 `ppo_trainer`, so Hydra refuses it at compose."
    assert parts.helps == ("Set `trainer.save_freq` instead.", "Remove the `+` if you meant to add it.")


def test_a_subject_word_or_key_stays_in_the_headline():
    assert message_parts("actor: world size 8 is not divisible by 3; TP 4 would do").headline == (
        "actor: world size 8 is not divisible by 3"
    )
    assert message_parts("`data.x`: nothing reads it; it is ignored").headline == "`data.x`: nothing reads it"


def test_only_top_level_punctuation_splits():
    parts = message_parts('verl asserts "a: b; c. D" (see `x: y`) here: why. Fix: set it')
    assert parts.headline == 'verl asserts "a: b; c. D" (see `x: y`) here'
    assert parts.note == "why."
    assert parts.helps == ("Set it.",)


def test_a_long_opening_clause_drops_its_asides_and_the_note_keeps_them():
    aside = "(" + "x" * 150 + ")"
    parts = message_parts(f"peak disk use 900 GiB {aside} exceeds the budget of 100 GiB. Save weights only")
    assert parts.headline == "peak disk use 900 GiB exceeds the budget of 100 GiB"
    assert aside in parts.note


@given(st.text(alphabet=st.sampled_from(list("ab :;.,()[]{}`\"'XFix!?\n")), max_size=120))
def test_every_word_of_a_message_is_shown(message):
    parts = message_parts(message)
    shown = " ".join([parts.headline, parts.note, *parts.helps])
    for word in re.findall(r"[a-zA-Z]+", message.replace("Fix:", "")):
        assert word in shown


def test_every_documented_finding_has_a_short_balanced_headline(tmp_path):
    for code in EXAMPLE_RULES:
        (tmp_path / code).mkdir()
        for d in example_findings(code, RULES[code].bad, tmp_path / code):
            headline = message_parts(d.message).headline
            assert 0 < len(headline) <= 200, (d.code, headline)
            assert headline.count("`") % 2 == 0 and headline.count("(") == headline.count(")"), (d.code, headline)


def script(tmp_path):
    path = tmp_path / "run_qwen_megatron.sh"
    path.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
        "    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\\n"
        "    trainer.save_frequency=10\n",
        encoding="utf-8",
    )
    return path


def test_text_shows_the_headline_the_line_with_a_caret_and_the_help(tmp_path):
    proc = sapo_lint(script(tmp_path).name, "--no-shellcheck", "--select", "SL001", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "run_qwen_megatron.sh:4:5: SL001 unknown key `trainer.save_frequency`"
    assert lines[1:4] == ["  |", "4 |     trainer.save_frequency=10", "  |     " + "^" * len("trainer.save_frequency")]
    assert any(line.startswith("  = note: ") for line in lines)
    assert any(line.startswith("  = help: Did you mean `trainer.save_freq`?") for line in lines), proc.stdout


def test_concise_is_one_line_per_finding_and_output_format_names_it(tmp_path):
    for option in ("--format", "--output-format"):
        proc = sapo_lint(script(tmp_path).name, "--no-shellcheck", "--select", "SL001", option, "concise", cwd=tmp_path)
        first, *rest = proc.stdout.splitlines()
        assert first.startswith("run_qwen_megatron.sh:4:5: SL001 unknown key `trainer.save_frequency`: ")
        assert first.endswith("Did you mean `trainer.save_freq`?") and rest[-1].startswith("Found 1 error")


def finding(message: str) -> Diagnostic:
    return Diagnostic(Location("run.sh", 3, 5), "MEM001", "device-memory", Severity.ERROR, message)


def test_notes_wrap_at_the_terminal_width_and_never_split_a_number_from_its_unit():
    message = "three phases are over budget: " + " ".join(["15.3 GiB of weights and"] * 8) + " 2.0 GiB of buffers"
    text = render_text(Report([finding(message)], 1, summary=False, width=60))
    lines = text.splitlines()
    assert len(lines) > 3 and all(len(line) <= 60 for line in lines)
    assert not any(line.rstrip().endswith(("15.3", "2.0")) for line in lines)
    assert not any(line.lstrip().startswith("GiB") for line in lines)


def test_a_pipe_never_wraps():
    message = "three phases are over budget: " + "x " * 200
    (_, note) = render_text(Report([finding(message)], 1, summary=False, width=None)).splitlines()
    assert note.startswith("  = note: ") and len(note) > 400


def test_counts_are_words_and_a_command_line_override_is_no_file_in_github(tmp_path):
    """`1 error, 0 warnings` (never `error(s)`); a GitHub annotation for an `--override` names it in its title
    instead of a `file=--override` that GitHub cannot place; RC messages end Megatron's quote with a full stop."""
    tau = "+actor_rollout_ref.actor.policy_loss.tau_pos=1.0"
    smoke, big = str(REPO / "recipes/smoke-qwen3-0.6b-sapo.yaml"), str(REPO / "recipes/qwen3-30b-a3b-sapo.yaml")
    proc = sapo_lint(smoke, "--override", tau)
    assert "Found 1 error, 0 warnings, 0 infos in 1 file." in proc.stdout, proc.stdout
    github = sapo_lint(smoke, "--override", tau, "--format", "github").stdout
    assert github.startswith("::error title=SP001 sapo-tau-nested (--override 1)::") and "file=" not in github
    full = "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full"
    rc = sapo_lint(big, "--select", "RC003", "--override", full, "--format", "concise")
    assert 'recompute_method must be "block" or "uniform"". Set ' in rc.stdout, rc.stdout


def test_a_quote_that_ends_a_sentence_ends_it():
    parts = message_parts('actor: megatron-core rejects this: "layers must be None." Drop the override')
    assert parts.note == '"layers must be None."' and parts.helps == ("Drop the override.",)
