"""`--version` and shell completion of both console scripts, through the installed scripts: click's protocol
(`_PROG_COMPLETE=bash_complete` with COMP_WORDS/COMP_CWORD) and bash itself running the sourced script. The first
word offers the commands that match beside the files, since a bare path is a command's argument too."""

import os
import shutil
import subprocess

import pytest

from sapo_toolkit.linter import __version__

from .helpers import SCRIPTS


def console(tool: str, *args, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPTS / tool), *args], env={**os.environ, **(env or {})}, cwd=cwd, capture_output=True, text=True
    )


def completions(tool: str, words: str, cwd=None) -> list[str]:
    """What `tool` offers for the last of `words` (a trailing space: a new, empty word), as `type,value` lines."""
    var = f"_{tool.upper().replace('-', '_')}_COMPLETE"
    cword = len(words.split(" ")) - 1
    proc = console(tool, env={var: "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("tool", ["sapo-lint", "sapo-launch"])
def test_version(tool):
    proc = console(tool, "--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{tool}, version {__version__}\n", "")


def test_the_first_word_offers_matching_commands_and_files():
    assert completions("sapo-lint", "sapo-lint ex") == ["plain,explain", "file,ex"]
    assert completions("sapo-launch", "sapo-launch re") == ["plain,report", "plain,rerun", "plain,resume", "file,re"]
    everything = completions("sapo-lint", "sapo-lint ")
    assert {"plain,check", "plain,explain", "plain,rules", "file,"} <= set(everything)


def test_options_are_the_default_commands_and_later_words_its_arguments():
    assert "plain,--format" in completions("sapo-lint", "sapo-lint --fo")  # `sapo-lint --format json PATH`
    assert "plain,--version" in completions("sapo-lint", "sapo-lint --v")
    assert completions("sapo-lint", "sapo-lint recipes/ ex") == ["file,ex"]
    assert completions("sapo-lint", "sapo-lint explain --fo") == ["plain,--format"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_offers_the_command_and_the_files_together(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "exit.yaml").write_text("")
    script = (
        'eval "$(_SAPO_LINT_COMPLETE=bash_source sapo-lint)"; COMP_WORDS=(sapo-lint ex); COMP_CWORD=1; '
        '_sapo_lint_completion sapo-lint 2>/dev/null; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    path = os.pathsep.join([str(SCRIPTS), os.environ.get("PATH", "")])
    proc = subprocess.run(
        ["bash", "--norc", "-c", script], cwd=tmp_path, env={**os.environ, "PATH": path}, capture_output=True, text=True
    )
    assert sorted(proc.stdout.split()) == ["examples", "exit.yaml", "explain"], proc.stderr
