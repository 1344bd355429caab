"""What a repository's own code adds to the verl it runs, read as text and never imported: the loss modes and
advantage estimators it registers with verl's registries (valid choices: SL005), and the key names it reads (not
unread: SL003). Read only when a rule asks (`rulekit.common.repository_code`)."""

from __future__ import annotations

import itertools
import os
import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

from .core.files import UnreadableFile, read_bytes
from .verl_source import MAX_TREE_BYTES, MAX_TREE_FILES, SOURCE_TREE, VerlChoice, repository_dirs

# The keys whose values verl looks up in a registry its code fills with a decorator: a repository's own module (a
# recipe's `core_algos.py` that the repository's verl imports) may add to it. The name written is the one looked up.
REGISTRIES = {
    "register_policy_loss": "actor_rollout_ref.actor.policy_loss.loss_mode",
    "register_adv_est": "algorithm.adv_estimator",
}
# `@register_policy_loss("vespo")`, `@core_algos.register_adv_est('my_est')`: a string literal (an enum member is
# verl's own, which the snapshot reads); one line, linear (the file is untrusted input).
_REGISTRATION = re.compile(rb"@[ \t]*(?:[A-Za-z_][\w.]*\.)?(register_policy_loss|register_adv_est)[ \t]*\([ \t]*"
                           rb"[\"']([A-Za-z0-9_.+-]{1,100})[\"']")  # fmt: skip


# What repository code reads: each key name with the name it is read from (`config.algorithm.my_key` ->
# (algorithm, my_key); `data_cfg.get("k")`, `data_cfg["k"]` -> (data_cfg, k)), so that a key counts as read only
# where code reads it off a node named like its own parent: a name read off another node (`recurrent_config.k`)
# says nothing of `data.k`. Read as text, linear (the files are untrusted input).
_READ = re.compile(
    rb"([A-Za-z_][A-Za-z0-9_]{0,100})\s{0,8}(?:\.get\(\s{0,8}[\"']|\[\s{0,8}[\"']|\.)(?=([A-Za-z_][A-Za-z0-9_]{0,100}))"
)  # the key's name in a lookahead: `config.algorithm.my_key` gives (config, algorithm) and (algorithm, my_key)
# A key read by name off a node given as an argument, as verl's own reads are collected too (schemas/build
# source_index.read_names): `OmegaConf.select(self.config.trainer, "log_freq", default=1)`, `getattr(cfg.data,
# "k", None)`, `hasattr(...)`: (trainer, log_freq); a dotted path (`OmegaConf.select(cfg, "trainer.k")`) reads
# each part off the one before it.
_READ_BY_NAME = re.compile(
    rb"(?:OmegaConf\.select|getattr|hasattr)\(\s{0,8}(?:[A-Za-z_][A-Za-z0-9_]{0,100}\.){0,20}"
    rb"([A-Za-z_][A-Za-z0-9_]{0,100})\s{0,8},\s{0,8}[\"']([A-Za-z_][A-Za-z0-9_.]{0,300})[\"']"
)
MAX_REPOSITORY_BYTES = MAX_TREE_BYTES  # Python of the repository read for registrations and reads


class RepositoryCode(NamedTuple):
    """What a repository's own Python, outside the verl package it runs, adds to that verl."""

    registered: tuple[tuple[str, tuple[str, ...]], ...]  # (key, values) registered with verl's registries
    reads: frozenset[tuple[str, str]]  # (the name a key is read off, the key's name)


@cache
def repository_code(root: Path, package_dir: Path | None) -> RepositoryCode:
    """The registrations (`REGISTRIES`: a loss mode or an advantage estimator a recipe's code adds) and the key
    names read (a wrapper's trainer subclass reading `config.algorithm.my_key`) of the Python files under the
    repository `root`, outside `package_dir` (whose own the snapshot holds). Read as text, never imported; virtual
    environments, hidden and `__pycache__` directories are skipped, and reading stops after `MAX_TREE_FILES` files
    or `MAX_REPOSITORY_BYTES` bytes."""
    package = os.path.realpath(package_dir) if package_dir is not None else None
    found: dict[str, dict[str, None]] = {}
    reads: set[tuple[bytes, bytes]] = set()
    pending, files, total = [root], 0, 0
    while pending and files < MAX_TREE_FILES and total < MAX_REPOSITORY_BYTES:
        directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        if any(e.name == "pyvenv.cfg" for e in entries):  # a virtual environment: installed packages, not the repo's
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    skipped = entry.name == "__pycache__" or entry.name.startswith(".")
                    if not skipped and os.path.realpath(entry.path) != package:
                        pending.append(Path(entry.path))
                    continue
                if not entry.name.endswith(".py") or not entry.is_file(follow_symlinks=False):
                    continue
                data = read_bytes(Path(entry.path))
            except (OSError, UnreadableFile):
                continue
            files, total = files + 1, total + len(data)
            reads.update(_READ.findall(data))
            for node, path in _READ_BY_NAME.findall(data):
                reads.update(itertools.pairwise([node, *path.split(b".")]))
            if b"register_" in data:
                for registry, value in _REGISTRATION.findall(data):
                    found.setdefault(REGISTRIES[registry.decode()], {})[value.decode()] = None
    registered = tuple((key, tuple(values)) for key, values in sorted(found.items()))
    return RepositoryCode(registered, frozenset((left.decode(), name.decode()) for left, name in reads))


def repository_root(file: str, verl: VerlChoice) -> Path | None:
    """The repository whose code runs with `file`'s trainer: the git repository holding its verl source tree, else
    the directory holding that tree (a repository unpacked without `.git`: the directories above it are no
    project's), else the git repository the file is in; None for a file in no repository (its directories up to
    the home directory are no project: they are never read)."""
    start = Path(verl.package_dir).parent if verl.source == SOURCE_TREE and verl.package_dir else None
    top = repository_dirs(start or Path(os.path.abspath(file)).parent)[-1]
    return top if (top / ".git").exists() else start
