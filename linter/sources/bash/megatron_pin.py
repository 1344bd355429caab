"""The Megatron-LM commit or branch a run script installs or names, read from its text (never run): a pin that is
no release lets a field no release has yet be a warning naming the pin (SL007)."""

from __future__ import annotations

import re

_MEGATRON = re.compile(r"Megatron-LM\b", re.IGNORECASE)
_CHECKOUT = re.compile(r"\bgit checkout ([0-9a-f]{7,40})\b")
_CLONE = re.compile(r"git clone\b")
_CD = re.compile(r"(?:^|[\s;&|(])(?:cd|pushd)\s+(\S+)")
_BRANCH_FLAG = re.compile(r"(?:-b|--branch)[ =](\S+)")
_SPACED_BRANCH_FLAG = re.compile(r"(?<=\s)(?:-b|--branch)[ =](\S+)")
_MEGATRON_REF = re.compile(r"Megatron-LM(?:\.git)?@([\w./-]+)", re.IGNORECASE)
_NAMED_COMMIT = re.compile(
    r"Megatron-LM(?:\.git)?(?:/(?:commit|tree)/|\s*(?:==|:)\s*)([0-9a-f]{7,40})(?![\w.-])", re.IGNORECASE
)
_RELEASE_TAG = re.compile(r"(?:core_)?v?\d+\.\d+(?:\.\d+)?(?:rc\d+)?")
_COMMIT_ID = re.compile(r"[0-9a-f]{7,40}")


def megatron_pin(text: str) -> str | None:
    """The Megatron-LM commit or branch the script installs or names ("commit 23e092f4", "branch lite"), if it
    names one rather than a release; read from the text, never run."""
    in_checkout = False  # a line cloned Megatron-LM or entered its directory: a later `git checkout <sha>` is its
    for line in text.splitlines():
        if _MEGATRON.search(line):
            if pin := _megatron_commit(line) or _megatron_ref(line) or _megatron_branch(line):
                return pin
            in_checkout = bool(_CLONE.search(line) or _cd_into_megatron(line))
        elif in_checkout:
            if _CD.search(line) or _CLONE.search(line):  # another directory or repository from here on
                in_checkout = False
            elif checkout := _CHECKOUT.search(line):
                return f"commit {checkout[1][:8]}"
    return None


def _cd_into_megatron(line: str) -> bool:
    """Whether the last `cd` of the line enters a directory named Megatron-LM (`cd Megatron-LM`, `cd ./megatron-lm`)."""
    entered = list(_CD.finditer(line))
    return bool(entered) and _MEGATRON.search(entered[-1][1]) is not None


def _megatron_commit(line: str) -> str | None:
    """The last `git checkout <sha>` after the first `Megatron-LM` (`cd Megatron-LM; git checkout 23e092f`), else a
    commit named after the name (`Megatron-LM/commit/<sha>`, `Megatron-LM==<sha>`)."""
    named = _MEGATRON.search(line)
    checkouts = list(_CHECKOUT.finditer(line, named.end())) if named else []
    found = checkouts[-1] if checkouts else _NAMED_COMMIT.search(line)
    return f"commit {found[1][:8]}" if found else None


def _megatron_ref(line: str) -> str | None:
    """`Megatron-LM.git@<ref>` (pip's `git+` URL): a commit or a branch; None for a release tag."""
    m = _MEGATRON_REF.search(line)
    if m is None or _RELEASE_TAG.fullmatch(m[1]):
        return None
    return f"commit {m[1][:8]}" if _COMMIT_ID.fullmatch(m[1]) else f"ref {m[1]}"


def _megatron_branch(line: str) -> str | None:
    """`git clone ... -b BRANCH ... Megatron-LM` or `Megatron-LM ... -b BRANCH`, whichever starts first."""
    names = [m.start() for m in _MEGATRON.finditer(line)]
    clone, named = _CLONE.search(line), names[0]
    cloned = _BRANCH_FLAG.search(line, clone.end()) if clone else None
    if cloned:
        last_named = names[-1]
        if last_named < cloned.start(1) + 1:  # the repository must follow the branch
            cloned = None
        elif last_named < cloned.end(1):  # `-b devMegatron-LM`: the branch ends where the name begins
            return f"branch {line[cloned.start(1) : last_named]}"
    after = _SPACED_BRANCH_FLAG.search(line, named + len("Megatron-LM"))
    if cloned and (after is None or clone.start() < named):
        return f"branch {cloned[1]}"
    return f"branch {after[1]}" if after else None
