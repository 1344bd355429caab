"""Ecosystem check: verl's own example scripts give exactly the reviewed findings (see tests/ecosystem.py)."""

import difflib

import pytest

from tests.ecosystem import CORPUS, EXPECTED, NOTE, carry_notes, findings, read_expected, split_note

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS} (see tests/ecosystem.py)")


def test_corpus_findings_match_the_reviewed_expected_file():
    assert EXPECTED.exists(), "run `python tests/ecosystem.py --update` and review it"
    expected = [split_note(line)[0] for line in read_expected()]
    current = findings()
    if current != expected:
        diff = "\n".join(difflib.unified_diff(expected, current, str(EXPECTED), "today", lineterm="", n=1))
        pytest.fail(f"findings on {CORPUS} changed; review, then `python tests/ecosystem.py --update`:\n{diff}")


def test_every_expected_error_is_reviewed():
    unreviewed = [
        line for line in read_expected() if split_note(line)[0].split(" ")[2] == "error" and not split_note(line)[1]
    ]
    assert not unreviewed, "errors without a review note (` -- why`):\n" + "\n".join(unreviewed)


def test_update_keeps_a_review_note_when_the_line_moves():
    expected = ["a.sh:10 SL001 error  -- upstream typo", "a.sh:12 SL001 error [DEVICE=npu]  -- npu only"]
    current = ["a.sh:11 SL001 error", "a.sh:12 SL001 error [DEVICE=gpu]"]
    assert carry_notes(current, expected) == [
        "a.sh:11 SL001 error" + NOTE + "upstream typo",
        "a.sh:12 SL001 error [DEVICE=gpu]",
    ]
