"""Writing snapshots under a schema directory (normally ``schemas/``)."""

from __future__ import annotations

from pathlib import Path

from sapo_toolkit.atomicio import write_atomically

from .consumers import build_consumer_snapshot, mbridge_git_main_snapshot
from .distributions import LocatedVerl
from .layout import snapshot_text
from .mindspeed import mindspeed_snapshot
from .validator_codegen import write_recipe_validator
from .verl import build_verl_snapshot


def verl_snapshot_path(out_dir: Path, version: str) -> Path:
    return Path(out_dir) / "verl" / f"{version}.json"


def consumer_snapshot_path(out_dir: Path, package: str, version: str) -> Path:
    return Path(out_dir) / "consumers" / f"{package}-{version}.json"


def write_snapshot(snapshot: dict, path: Path) -> None:
    """Write atomically, sorted keys, deterministic layout."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, snapshot_text(snapshot))


def build_all(out_dir: Path, verl_packages: list[LocatedVerl], consumer_wheels: list[Path]) -> list[Path]:
    """Write the snapshots of each located verl (``locate_verl``'s result) and each consumer wheel, plus the
    transcribed mbridge git-main and MindSpeed snapshots, under ``out_dir`` (normally ``schemas/``); returns the
    files written."""
    written: list[Path] = []
    for located in verl_packages:
        p = verl_snapshot_path(out_dir, located.version)
        write_snapshot(build_verl_snapshot(*located), p)
        written.append(p)
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
