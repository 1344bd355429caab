"""Git, run so that nothing a repository says runs a program. Every git call of the project goes through `run`.

A repository's config (`.git/config`, what it includes, a worktree's `config.worktree`) is untrusted input: git
starts programs it names, even for `rev-parse`, `status` and `ls-files` (`core.fsmonitor` on reading the index,
a filter driver's `clean` on a file whose timestamp makes its content worth comparing, hooks). So:

- the environment is rebuilt: PATH, HOME and XDG_CONFIG_HOME only (the user's own ignore file still applies);
  no system or global config, no prompt, no askpass, no pager, no optional locks (nothing is written), nothing
  inherited (GIT_DIR, GIT_CONFIG_*, GIT_EXTERNAL_DIFF, GIT_SSH_COMMAND, ...);
- settings in git's command scope (GIT_CONFIG_COUNT: they win over the repository's config, and a key is passed
  verbatim, `=` in a driver's name included) switch off what runs without being named in the config (hooks live
  in the repository) and every transport (a partial clone's lazy fetch);
- a program named under a name the repository chooses (`filter.<driver>.clean`, `diff.<driver>.textconv`,
  `credential.<url>.helper`, ...) cannot be switched off by a fixed key, and git has no switch to ignore a
  repository's includes. So before each command, git's own reading of the config (`git config --list`: reading
  config runs nothing; includes and `includeIf` conditions are followed exactly as the command will follow them)
  lists what the repository sets, and each variable that names a program is set empty (`false` where empty is
  not a value) in the command scope too. Reading `.git/config` here instead would miss what it includes and
  could parse differently from git.

An older git than 2.32 ignores GIT_CONFIG_GLOBAL (and before 2.31 GIT_CONFIG_COUNT, so nothing above would be
switched off): it is never run, and what asked for it reads as unknown.

What remains: a config changed between the listing and the command (both take milliseconds). Submodules are
separate repositories: callers keep git out of them (`status --ignore-submodules=all`; `ls-files` does not
recurse unless asked).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

# Set for every command: hooks run from the repository's hooks directory whatever its config says, the file-system
# monitor, and no transport at all (a lazy fetch would run ssh, a proxy or a remote helper).
FIXED = (("core.hooksPath", os.devnull), ("core.fsmonitor", "false"), ("protocol.allow", "never"))
# Variables whose value is a program git runs (git-config(1)), in whatever section and under whatever driver, tool
# or URL name: core.fsmonitor, core.pager, core.editor, core.askPass, core.sshCommand, core.gitProxy,
# core.alternateRefsCommand, diff.external, diff.<driver>.command|textconv, merge.<driver>.driver,
# filter.<driver>.clean|smudge|process, credential[.<url>].helper, gpg[.<format>].program, sequence.editor,
# interactive.diffFilter, imap.tunnel, remote.<name>.uploadpack|receivepack|vcs, (merge|diff)tool.<tool>.cmd,
# browser.<tool>.cmd, man.<tool>.cmd, guitool.<name>.cmd, tar.<format>.command, hook.<name>.command,
# sendemail.smtpServer|toCmd|ccCmd|headerCmd, instaweb.httpd, web.browser.
PROGRAM_VARIABLES = frozenset(
    {
        "fsmonitor",
        "hookspath",
        "pager",
        "editor",
        "askpass",
        "sshcommand",
        "gitproxy",
        "alternaterefscommand",
        "external",
        "command",
        "textconv",
        "driver",
        "clean",
        "smudge",
        "process",
        "helper",
        "program",
        "difffilter",
        "tunnel",
        "uploadpack",
        "receivepack",
        "vcs",
        "cmd",
        "smtpserver",
        "tocmd",
        "cccmd",
        "headercmd",
        "httpd",
        "browser",
        "required",  # filter.<driver>.required: a required filter whose program is switched off would stop git
    }
)
# `<tool>.path` is the program in these sections (elsewhere `path` is a file: submodule.<name>.path, include.path).
PROGRAM_PATH_SECTIONS = frozenset({"mergetool", "difftool", "browser", "man"})
NOT_EMPTY = {"fsmonitor": "false", "required": "false"}  # booleans: off
MIN_VERSION = (2, 32)  # GIT_CONFIG_GLOBAL; GIT_CONFIG_COUNT is 2.31's


def run(directory: Path, *args: str, timeout_s: float = 10) -> bytes | None:
    """The stdout of `git args` in `directory`, run as the module docstring says; None when git is not installed
    or older than `MIN_VERSION`, fails (not a repository, a config git cannot read) or takes longer than
    `timeout_s`."""
    if not hardenable():
        return None
    listed = _git(directory, ("config", "--list", "--null"), FIXED, timeout_s)
    if listed is None:
        return None
    return _git(directory, args, (*switched_off(listed), *FIXED), timeout_s)


@functools.cache
def hardenable() -> bool:
    """Whether the git on PATH honours the settings that harden it (`MIN_VERSION`)."""
    version = _git(Path(os.sep), ("version",), (), 10)
    found = re.search(rb"(\d+)\.(\d+)", version or b"")
    return found is not None and (int(found[1]), int(found[2])) >= MIN_VERSION


def switched_off(listed: bytes) -> list[tuple[str, str]]:
    """For `git config --list --null`'s output, a setting that switches off each variable naming a program."""
    settings = []
    for record in listed.decode("utf-8", "surrogateescape").split("\0"):
        key = record.split("\n", 1)[0]
        section, _, variable = key.lower().rpartition(".")
        section = section.split(".", 1)[0]
        if variable in PROGRAM_VARIABLES or (variable == "path" and section in PROGRAM_PATH_SECTIONS):
            settings.append((key, NOT_EMPTY.get(variable, "")))
    return settings


def _git(directory: Path, args: Iterable[str], settings: Iterable[tuple[str, str]], timeout_s: float) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", "--no-pager", "--no-optional-locks", "-C", str(directory), *args],
            env=_environment(list(settings)),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _environment(settings: list[tuple[str, str]]) -> dict[str, str]:
    env = {name: os.environ[name] for name in ("PATH", "HOME", "XDG_CONFIG_HOME") if name in os.environ}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        GIT_PAGER="cat",
        LC_ALL="C",
        GIT_CONFIG_COUNT=str(len(settings)),
    )
    for i, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env
