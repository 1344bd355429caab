"""Writing snapshots under a schema directory (normally ``schemas/``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from sapo_toolkit.atomicio import write_atomically

from . import SchemaBuildError
from .consumers import build_consumer_snapshot, mbridge_git_main_snapshot
from .distributions import LocatedVerl
from .docs import build_verl_docs, docs_text
from .layout import snapshot_text
from .mindspeed import mindspeed_snapshot
from .validator_codegen import write_recipe_validator
from .verl import build_verl_snapshot

# A version or package name that may name a file: a plain version string (what `sapo-lint --verl-version` accepts).
_PLAIN_NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]*")


def verl_snapshot_path(out_dir: Path, version: str) -> Path:
    return _inside(Path(out_dir), "verl", f"{_plain(version, 'verl version')}.json")


def verl_docs_path(out_dir: Path, version: str) -> Path:
    """Where the comments of a verl version's config YAML go (FORMAT.md `verl-docs`), beside its snapshot's folder:
    linting never reads them."""
    return _inside(Path(out_dir), "verl-docs", f"{_plain(version, 'verl version')}.json")


def consumer_snapshot_path(out_dir: Path, package: str, version: str) -> Path:
    return _inside(Path(out_dir), "consumers", f"{_plain(package, 'package')}-{_plain(version, 'version')}.json")


def _plain(text: str, what: str) -> str:
    """`text` when it is a plain version or package name; a tree's version file is untrusted input (`../x`)."""
    if not _PLAIN_NAME.fullmatch(text) or ".." in text:
        raise SchemaBuildError(f"the {what} {text!r} is not a plain version string; it cannot name a snapshot file")
    return text


def _inside(out_dir: Path, *parts: str) -> Path:
    path = out_dir.joinpath(*parts)
    top = os.path.realpath(out_dir)
    if not os.path.realpath(path).startswith(top + os.sep):
        raise SchemaBuildError(f"{path} is outside the output directory {out_dir}")
    return path


def write_snapshot(snapshot: dict, path: Path) -> None:
    """Write atomically, sorted keys, deterministic layout."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, snapshot_text(snapshot))


def build_all(out_dir: Path, verl_packages: list[LocatedVerl], consumer_wheels: list[Path]) -> list[Path]:
    """Write the snapshots of each located verl (``locate_verl``'s result) and the comments of its config YAML, and
    each consumer wheel's, plus the transcribed mbridge git-main and MindSpeed snapshots, under ``out_dir`` (normally
    ``schemas/``); returns the files written."""
    written: list[Path] = []
    for located in verl_packages:
        p = verl_snapshot_path(out_dir, located.version)
        write_snapshot(build_verl_snapshot(*located), p)
        written.append(p)
    written += write_verl_docs(out_dir, verl_packages)
    for wheel in consumer_wheels:
        snap = build_consumer_snapshot(Path(wheel))
        p = consumer_snapshot_path(out_dir, snap["package"], snap["version"])
        write_snapshot(snap, p)
        written.append(p)
    written.append(write_recipe_validator(out_dir))
    for snap in (mbridge_git_main_snapshot(), mindspeed_snapshot()):
        p = consumer_snapshot_path(out_dir, snap["package"], snap["version"])
        write_snapshot(snap, p)
        written.append(p)
    return written


def write_verl_docs(out_dir: Path, verl_packages: list[LocatedVerl]) -> list[Path]:
    """Write the comments document of each located verl (FORMAT.md `verl-docs`); returns the files written."""
    written = []
    for located in verl_packages:
        p = verl_docs_path(out_dir, located.version)
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(p, docs_text(build_verl_docs(*located)))
        written.append(p)
    return written
