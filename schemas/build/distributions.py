"""Finding and unpacking the distributions a snapshot is built from: verl (wheel, source checkout or installed
distribution) and the megatron-core / mbridge wheels.  Standard library only; nothing found here is imported."""

from __future__ import annotations

import atexit
import re
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

from . import SchemaBuildError

_TEMP_DIRS: list[str] = []


def _tempdir(prefix: str) -> Path:
    d = tempfile.mkdtemp(prefix=prefix)
    if not _TEMP_DIRS:
        atexit.register(lambda: [shutil.rmtree(p, ignore_errors=True) for p in _TEMP_DIRS])
    _TEMP_DIRS.append(d)
    return Path(d)


def extract_wheel(wheel: Path, prefix: str) -> Path:
    """Unpack ``wheel`` into a temporary directory (removed at exit), refusing members that escape it."""
    if not wheel.is_file():
        raise SchemaBuildError(f"wheel not found: {wheel}")
    dest = _tempdir(prefix)
    try:
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if member.startswith("/") or ".." in Path(member).parts:
                    raise SchemaBuildError(f"{wheel.name}: unsafe path in wheel: {member}")
            zf.extractall(dest)
    except zipfile.BadZipFile as e:
        raise SchemaBuildError(f"{wheel.name} is not a valid wheel: {e}") from None
    return dest


def extract_source_archive(archive: Path) -> tuple[Path, str | None]:
    """Unpack a ``git archive`` tarball of verl or Megatron-LM (``.tar.gz``/``.tgz``/``.tar``) into a temporary
    directory (removed at exit); returns ``(its single top directory, the commit id)``. ``git archive`` of a commit
    records the id in the archive's pax global header (``comment``); None when it has none."""
    dest = _tempdir("sapo-lint-verl-src-")
    try:
        with tarfile.open(archive) as tf:
            commit = tf.pax_headers.get("comment")
            tf.extractall(dest, filter="data")  # refuses members that escape dest, links included
    except (tarfile.TarError, OSError) as e:
        raise SchemaBuildError(f"{archive.name} is not a readable source archive: {e}") from None
    tops = [p for p in dest.iterdir() if p.is_dir()]
    root = tops[0] if len(tops) == 1 else dest
    return root, commit if commit and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def parse_metadata(text: str) -> dict[str, str]:
    """The header fields of a ``METADATA`` file (first value of each)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        k, sep, v = line.partition(":")
        if sep and not line[0].isspace() and k not in out:
            out[k.strip()] = v.strip()
    return out


def normalise_name(name: str) -> str:
    """PEP 503 normalised distribution name (``Megatron_Core`` -> ``megatron-core``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_info_version(root: Path, name: str) -> str | None:
    for meta in sorted(root.glob("*.dist-info/METADATA")):
        fields = parse_metadata(meta.read_text(encoding="utf-8", errors="replace"))
        if normalise_name(fields.get("Name", "")) == normalise_name(name):
            return fields.get("Version")
    return None


def _is_verl_package(d: Path) -> bool:
    return (d / "trainer" / "config" / "ppo_trainer.yaml").is_file()


def _read_version_file(pkg: Path) -> str | None:
    vf = pkg / "version" / "version"
    if vf.is_file():
        v = vf.read_text(encoding="utf-8").strip()
        return v or None
    return None


class LocatedVerl(NamedTuple):
    package_dir: Path  # holds verl's trainer/config/
    version: str
    source: str  # what the snapshot was built from, in words (the snapshot's `source`)
    commit: str | None = None  # the git commit, for a source archive that records it


def locate_verl(wheel: Path | None = None, verl_root: Path | None = None) -> LocatedVerl:
    """Find the verl package directory to build a snapshot of.

    ``wheel``: a verl ``.whl`` (extracted to a temporary directory, removed at exit); ``verl_root``: a source checkout
    (its ``verl/`` directory; the version comes from ``verl/version/version``), or a ``git archive`` tarball of one
    (extracted likewise; the commit comes from the archive); neither: the installed verl, found through
    ``importlib.metadata.distribution('verl')`` (verl is never imported).
    """
    if wheel is not None and verl_root is not None:
        raise SchemaBuildError("give either a verl wheel or a verl source root, not both")
    if wheel is not None:
        wheel = Path(wheel)
        root = extract_wheel(wheel, "sapo-lint-verl-")
        pkg = root / "verl"
        if not _is_verl_package(pkg):
            raise SchemaBuildError(f"{wheel.name}: no verl/trainer/config/ppo_trainer.yaml inside; not a verl wheel?")
        version = _read_version_file(pkg) or _dist_info_version(root, "verl")
        if not version:
            raise SchemaBuildError(f"{wheel.name}: cannot tell the verl version (no verl/version/version)")
        return LocatedVerl(pkg, version, wheel.name)
    if verl_root is not None:
        verl_root = Path(verl_root).resolve()
        archive, commit = None, None
        if verl_root.is_file():
            archive = verl_root
            verl_root, commit = extract_source_archive(archive)
        for pkg in (verl_root / "verl", verl_root):
            if _is_verl_package(pkg):
                break
        else:
            raise SchemaBuildError(f"{verl_root}: no verl/trainer/config/ppo_trainer.yaml; not a verl checkout?")
        version = _read_version_file(pkg)
        if not version:
            raise SchemaBuildError(f"{verl_root}: cannot tell the verl version (no verl/version/version)")
        if archive is None:
            return LocatedVerl(pkg, version, f"verl source checkout {pkg.parent}")
        of = f" of commit {commit}" if commit else ""
        return LocatedVerl(pkg, version, f"git archive {archive.name}{of}", commit)
    # Installed distribution: never `import verl` (it pulls in torch).
    from importlib import metadata

    try:
        dist = metadata.distribution("verl")
    except metadata.PackageNotFoundError:
        raise SchemaBuildError("verl is not installed; pass a verl wheel or --verl-root") from None
    pkg = None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("verl/trainer/config/ppo_trainer.yaml"):
            cand = Path(dist.locate_file(f)).resolve().parents[2]
            if _is_verl_package(cand):
                pkg = cand
                break
    if pkg is None:  # editable installs list no package files; find_spec of a top-level name does not import it
        import importlib.util

        spec = importlib.util.find_spec("verl")
        for loc in (spec.submodule_search_locations or []) if spec else []:
            if _is_verl_package(Path(loc)):
                pkg = Path(loc).resolve()
                break
    if pkg is None:
        raise SchemaBuildError(f"installed verl {dist.version} has no trainer/config/ppo_trainer.yaml")
    return LocatedVerl(pkg, dist.version, f"installed distribution verl=={dist.version}")
