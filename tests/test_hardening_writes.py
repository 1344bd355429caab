"""What the writers write, and where: `convert`'s YAML holds only the keys convert meant, whatever text the script
has; `-o` writes into a device or FIFO, never replacing it; `--fix` never rewrites a file that changed under it."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sapo_toolkit.linter.api import read_options
from sapo_toolkit.linter.convert import recipe_yaml, script_to_recipe
from sapo_toolkit.linter.core.overrides import _same, format_value
from sapo_toolkit.linter.settings import Settings
from sapo_toolkit.linter.sources.files import TextFile

OPTIONS = read_options(Settings(verl_version="0.9.1"))
SAPO_LINT = [sys.executable, "-m", "sapo_toolkit.linter"]


def sapo_lint(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*SAPO_LINT, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


# --- convert: the script's text never becomes YAML of its own ----------------------------------------------------

TRAINER = "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.n_gpus_per_node=8\n"


def test_convert_keeps_a_quoted_newline_out_of_the_recipe_keys(tmp_path):
    script = tmp_path / "run_x.sh"
    script.write_text('#!/bin/bash\nsource "lib\nenv: {LD_PRELOAD: /x/evil.so}\ngates: []\n#"\n' + TRAINER)
    done = sapo_lint("convert", str(script), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    recipe = yaml.safe_load(done.stdout)
    assert list(recipe) == ["recipe", "name", "verl", "entrypoint", "config_name", "model", "overrides"]
    assert "LD_PRELOAD: /x/evil.so}\\ngates" in done.stdout.splitlines()[1]  # the note: one line, escaped


# Line breaks YAML knows (CR, NEL, LS, PS), controls, bidi overrides, YAML noncharacters and YAML/shell syntax,
# besides any other character a UTF-8 script can hold.
HOSTILE = st.sampled_from(list("\n\r\t\x85\u2028\u2029\ufeff\ufffe\x1b\x07\x7f\u202e '\"\\$`#:{}[],=&*!|>%@-?~"))
TEXT = st.text(HOSTILE | st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=40)
KEY = st.sampled_from(["trainer.project_name", "+data.extra", "actor_rollout_ref.rollout.n"]) | TEXT
VALUE = TEXT | st.integers() | st.floats() | st.booleans() | st.none() | st.lists(TEXT | st.integers(), max_size=3)


def _q(text: str) -> str:
    return shlex.quote(text)


def _double_quoted(text: str) -> str:
    return '"' + "".join("\\" + c if c in '\\"$`' else c for c in text) + '"'


@st.composite
def scripts(draw) -> str:
    """A run script with generated text in a comment, a `source` argument, a variable's value used in an override,
    exported values (shared and per device), override keys and values (Hydra-quoted, and raw)."""

    def override(key, value) -> str:
        try:
            return _q(f"{key}={format_value(value)}")
        except ValueError:  # a value Hydra cannot write: the raw text instead
            return _q(f"{key}={value}")

    comment = "".join(f"# {line}\n" for line in draw(TEXT).split("\n"))
    source = draw(st.sampled_from([_q, _double_quoted]))(draw(TEXT))
    return (
        f"#!/usr/bin/env bash\n{comment}source {source}\nDEVICE=${{DEVICE:-gpu}}\nNAME={_q(draw(TEXT))}\n"
        f"export SHARED_VALUE={_q(draw(TEXT))}\n"
        f'if [ "$DEVICE" = npu ]; then\n    export HCCL_VALUE={_q(draw(TEXT))}\n'
        f"    EXTRA=({override(draw(KEY), draw(VALUE))})\nelse\n    EXTRA=({override(draw(KEY), draw(VALUE))})\nfi\n"
        f"python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B \\\n"
        f'    trainer.experiment_name="$NAME" {override(draw(KEY), draw(VALUE))} {_q(draw(TEXT))} "${{EXTRA[@]}}"\n'
    )


@settings(
    max_examples=int(os.environ.get("SAPO_FUZZ_EXAMPLES", 150)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scripts(), TEXT)
def test_convert_writes_exactly_the_recipe_it_built(script, name):
    recipe, notes = script_to_recipe(TextFile(f"run_{name.replace('/', '_')}.sh", script), OPTIONS)
    text = recipe_yaml(recipe, notes, Path(f"run_{name.replace('/', '_')}.sh"))
    assert _same(yaml.safe_load(text), recipe), text
    lines = text.split("\n")
    comments = [line for line in lines if line.startswith("#")]
    assert comments == lines[: 1 + len(notes)], text  # one line per note, at the top, before the data
    assert not any(c in text for c in "\r\x85\u2028\u2029\x1b\u202e\ufffe"), text


# --- -o: a device or FIFO is written into, never replaced ----------------------------------------------------------


def test_output_into_a_fifo_or_device_never_replaces_it(tmp_path):
    script = tmp_path / "run_x.sh"
    script.write_text("#!/bin/bash\n" + TRAINER)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    args = ("--no-shellcheck", "--exit-zero", "--format", "json", str(script))
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the report fits in the pipe's buffer
    try:
        done = sapo_lint("-o", str(fifo), *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(os.read(reader, 1 << 16))["summary"]["files"] == 1
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    done = sapo_lint("-o", str(fifo), *args, cwd=tmp_path)  # no reader now: an error, not a hang
    assert done.returncode == 2 and done.stderr.strip().endswith("a FIFO that no process reads"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and stat.S_ISFIFO(os.stat(fifo).st_mode)
    # Only now that a FIFO is known to be written in place: the same for /dev/null (replaced, as root, before).
    link = tmp_path / "null"
    link.symlink_to(os.devnull)
    for target in (os.devnull, link):
        done = sapo_lint("-o", str(target), *args, cwd=tmp_path)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert stat.S_ISCHR(os.stat(os.devnull).st_mode) and link.is_symlink()


def test_a_directory_is_never_written(tmp_path):
    from sapo_toolkit.atomicio import write_atomically

    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomically(tmp_path / "dir", "text")
    assert os.listdir(tmp_path / "dir") == [] and sorted(os.listdir(tmp_path)) == ["dir"]


# --- --fix / --add-noqa: a file that changed while being fixed is left as it is ------------------------------------

TAU_BUG = "overrides:\n  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n"
APPENDED = "  trainer.total_epochs: 3  # appended by another process\n"


def _append_after(function):
    """`function`, then an append to the file being fixed: what another process does between the read and the
    replace."""

    def appending(*args):
        done = function(*args)
        with open(os.environ["SAPO_TEST_APPEND_TO"], "a") as handle:
            handle.write(APPENDED)
        return done

    return appending


def test_fix_never_rewrites_a_file_that_changed_while_being_fixed(tmp_path, monkeypatch):
    from sapo_toolkit.linter import fix
    from sapo_toolkit.linter.lint import lint_paths

    from .helpers import HEADER

    path = tmp_path / "r.yaml"
    path.write_text(HEADER + TAU_BUG)
    monkeypatch.setenv("SAPO_TEST_APPEND_TO", str(path))
    found = lint_paths([path], Settings(shellcheck=False)).diagnostics
    for function, outcome in (("planned_fixes", fix.apply_fixes), ("_meaning_kept", fix.add_noqa)):
        with monkeypatch.context() as patch:
            patch.setattr(fix, function, _append_after(getattr(fix, function)))
            before = path.read_text()
            assert outcome(found).changed == (path,)
        assert path.read_text() == before + APPENDED  # the append kept, nothing else written
    path.write_text(HEADER + TAU_BUG)
    # The command line says so in one line and exits 2.
    run = (
        "import sys; from sapo_toolkit.linter import cli, fix; from tests.test_hardening_writes import _append_after;"
        "fix.planned_fixes = _append_after(fix.planned_fixes); sys.argv[1:] = ['--fix', 'r.yaml']; cli.main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", run],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    assert done.returncode == 2 and done.stderr == "sapo-lint: r.yaml changed while fixing; not rewritten\n", done
    assert path.read_text() == HEADER + TAU_BUG + APPENDED
