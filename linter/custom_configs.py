"""A command's own config directory, composed as Hydra would (SPEC §5): which snapshot and config name a command
is checked against when it names a config of its own (`--config-path`/`--config-name`, or a wrapper module's
`@hydra.main`), and that config's snapshot, built and cached as `verl_source` builds a verl tree's."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .core.command import Command
from .core.files import UnreadableFile, read_bytes
from .engine import searchpath
from .schema import ConfigNotInSnapshot, load_snapshot, snapshot_document, snapshot_version
from .verl_source import (
    MAX_TREE_FILES,
    VerlChoice,
    builder_stamp,
    cached_build,
    in_repository,
    inside,
    repository_dirs,
)


class UnresolvedConfig(ConfigNotInSnapshot):
    """A command's config directory cannot be composed: no snapshot holds its config; the message says why (one
    line). `placeholder`: the path is a template's blank left unfilled (`/path/to/your/project/config`)."""

    def __init__(self, message: str, placeholder: bool = False) -> None:
        super().__init__(message)
        self.placeholder = placeholder


# A template's blank in a path: `/path/to/...`, `/your/project`, `<project_dir>`, `YOUR_DIR`.
_PLACEHOLDER_PATH = re.compile(r"/path/to/|(?:^|/)your[_/-]|<[A-Za-z][\w. -]{0,80}>|\bYOUR_[A-Z]", re.IGNORECASE)


# Hydra's `pkg://` and `file://` search path entries.
_PKG, _FILE = "pkg://", "file://"
_VERL_CONFIG = ("verl", "trainer", "config")
# A value the bash reader could not evaluate holds a private-use character from U+F0000 (`sources.bash.markers`),
# or reads `$NAME`.
_UNRESOLVED = re.compile("[\U000f0000-\U0010ffff$`]")


def config_for(snapshot: str, verl: VerlChoice | None, command: Command, file: str) -> tuple[str, str]:
    """(the snapshot reference, the config name) that `command` of `file` is checked against, for the verl snapshot
    `snapshot` of `verl` (`_config_for`). Raises `UnresolvedConfig`, its message naming the config."""
    try:
        return _config_for(snapshot, verl, command, file)
    except UnresolvedConfig as exc:
        raise UnresolvedConfig(f"config `{command.config_name}`: {exc}", exc.placeholder) from None


def _config_for(snapshot: str, verl: VerlChoice | None, command: Command, file: str) -> tuple[str, str]:
    """(the snapshot reference, the config name) that `command` is checked against: verl's snapshot, unless the
    command names a config directory of its own (`Command.config_path`), which is then composed as Hydra would and
    snapshotted (`schemas.build.build_custom_snapshot`, cached like a tree) with verl's own config files (`verl`'s
    package directory). Raises `UnresolvedConfig`.

    The directory is Hydra's `--config-path`: absolute; `pkg://a.b` (package a.b's directory); or relative to the
    directory of the module that declares `@hydra.main` (`hydra/_internal/utils.py` `compute_search_path_dir`: Hydra
    sees a module run with `-m` as `__main__`, its file's directory is the base), which for `python -m
    verl.trainer.main_ppo` is verl's `trainer/`: `--config-path=config` is verl's own. A directory inside verl's
    package, or whose path ends in `verl/trainer/config` (another machine's verl), is verl's own config directory.
    The config's `hydra.searchpath` (the command's `hydra.searchpath=[...]` override, else the config's own) is
    followed: `pkg://verl.x` in verl's package, `file://` and other `pkg://` entries from the directory holding
    verl's package, else the repository root. A directory this machine does not have (another machine's absolute
    path, a template's blank such as `<your_path>/scripts/config`, a part that cannot be evaluated) is the
    repository's directory its last components name, where there is one (`verl_source.in_repository`)."""
    written = command.config_path
    if written is None:
        return snapshot, command.config_name
    anchored = _anchored(written, file)
    if anchored is not None:  # `$(pwd)/config`, `$(dirname "$0")/config`: a directory on this machine
        written = str(next((d for d in anchored if d.is_dir()), anchored[0]))
    elif _UNRESOLVED.search(written):
        found = in_repository(Path(file), _known_end(written))
        if found is None:
            raise UnresolvedConfig(f"--config-path `{written}` is not known statically")
        written = str(found)  # `$ROOT/recipe/config`: the repository's recipe/config
    package = Path(verl.package_dir) if verl is not None and verl.package_dir is not None else None
    directory = _config_directory(written, command.entry_module, package, file)
    if directory is None or (package is not None and inside(directory, package) and _ships(snapshot, command)):
        return snapshot, command.config_name  # verl's own config directory, or one of verl's configs
    yaml_file = directory / f"{command.config_name}.yaml"
    if not yaml_file.is_file():
        raise UnresolvedConfig(f"--config-path `{written}` ({directory}) holds no `{command.config_name}.yaml`")
    if package is None:
        raise UnresolvedConfig(
            f"composing `{yaml_file}` needs verl's own config files, and the verl linted against "
            f"({snapshot_version(snapshot)}) has none on this machine: a verl source tree in the repository or an "
            "installed verl has them"
        )
    search = _search_path(command, yaml_file, package, file)
    return _custom_snapshot(snapshot, package, directory, command.config_name, search), command.config_name


# How scripts name the directory they are started in, and their own directory (bash's idioms, as the bash reader shows
# a construct it does not evaluate): a `--config-path` starting with one is a directory on this machine.
_STARTED_IN = re.compile(r"\$\(\s*pwd(?:\s+-[LP])?\s*\)|`pwd`|\$\{PWD\}|\$PWD")
_OWN_DIRECTORY = re.compile(r"\$\(.*\bdirname\b.*(?:\$0\b|\$\{0\}|BASH_SOURCE).*\)", re.DOTALL)


def _anchored(written: str, file: str) -> list[Path] | None:
    """The directories a path may be that starts with the directory the script is started in (`$(pwd)/x`, `$PWD/x`:
    each directory from the script's own up to the repository root, `repository_dirs`) or with the
    script's own (`$(dirname "$0")/x`, `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/x`); None for any other."""
    head = _leading_construct(written)
    rest = written[len(head) :] if head else ""
    if not head or (rest and not rest.startswith("/")) or _UNRESOLVED.search(rest):
        return None
    own = Path(os.path.abspath(file)).parent
    if _STARTED_IN.fullmatch(head):
        bases = repository_dirs(own)
    elif _OWN_DIRECTORY.fullmatch(head):
        bases = [own]
    else:
        return None
    return [Path(os.path.normpath(base / rest.lstrip("/"))) for base in bases]


def _known_end(written: str) -> str:
    """The whole path components written after the last part that cannot be evaluated (`recipe/config` of
    `$ROOT/recipe/config`; nothing of `${ROOT}-x`, whose last component is only partly known)."""
    end = written[max(m.end() for m in _UNRESOLVED.finditer(written)) :]
    return end if end.startswith("/") else end.partition("/")[2]


def _leading_construct(text: str) -> str:
    """The `$(...)` (parentheses balanced), `` `...` `` or `$NAME`/`${NAME}` that `text` starts with, else ''."""
    if text.startswith("$("):
        depth = 0
        for i, ch in enumerate(text):
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and ch == ")":
                return text[: i + 1]
        return ""
    m = re.match(r"`[^`]*`|\$\{[^}]*\}|\$\w+", text)
    return m[0] if m else ""


def _config_directory(written: str, module: str | None, package: Path | None, file: str) -> Path | None:
    """The directory a `--config-path` names, or None for verl's own config directory. Raises `UnresolvedConfig`."""
    if written.startswith(_PKG):
        dotted = written[len(_PKG) :].strip("/").replace("/", ".")
        if dotted == "verl" or dotted.startswith("verl."):
            return None
        found = _first_dir(Path(*dotted.split(".")), file, package)
        if found is None:
            raise UnresolvedConfig(f"--config-path `{written}`: package `{dotted}` is not found in the repository")
        return found
    if os.path.isabs(written):
        directory = Path(os.path.normpath(written))
    elif module is not None and module.startswith("verl."):
        relative = Path(*module.split(".")[1:-1], written)
        inside = os.path.normpath(relative)
        if package is None:
            if inside.startswith(".."):
                raise UnresolvedConfig(
                    f"--config-path `{written}` is relative to `{module}`'s directory in verl's package (Hydra), "
                    "outside it, and no verl source tree or installed verl was found"
                )
            return None
        directory = Path(os.path.normpath(package / relative))
    else:
        raise UnresolvedConfig(
            f"--config-path `{written}` is relative to the directory of the file of `{module}`, the module that "
            "declares `@hydra.main` (Hydra), which is not resolved"
        )
    if directory.is_dir():
        return directory
    if directory.parts[-3:] == _VERL_CONFIG:
        return None  # verl's own config directory, on the machine the script was written on
    found = in_repository(Path(file), written) if os.path.isabs(written) or _PLACEHOLDER_PATH.search(written) else None
    if found is not None:  # another machine's path, or a template's blank, to the repository's own directory
        return found
    if _PLACEHOLDER_PATH.search(written):
        raise UnresolvedConfig(
            f"--config-path `{written}` is a placeholder to fill in before a run (the directory does not exist)",
            placeholder=True,
        )
    raise UnresolvedConfig(f"--config-path `{written}` is {directory}, which does not exist")


def _ships(snapshot: str, command: Command) -> bool:
    """Whether verl's snapshot holds the command's config (one verl ships, in a directory of its package)."""
    try:
        load_snapshot(snapshot, command.config_name)
    except LookupError:
        return False
    return True


def _first_dir(relative: Path, file: str, package: Path | None) -> Path | None:
    """`relative` from the directory holding verl's package, else from each directory up to the repository root."""
    bases = ([package.parent] if package is not None else []) + repository_dirs(Path(os.path.abspath(file)).parent)
    return next((base / relative for base in bases if (base / relative).is_dir()), None)


def _search_path(command: Command, yaml_file: Path, package: Path, file: str) -> tuple[Path, ...]:
    """The directories Hydra searches after the primary config's: the command's `hydra.searchpath`, else the
    config's own, each entry as a directory (those that are not found are left out: Hydra does not find them
    either), then verl's own config directory, which verl's configs are written to be composed with (`- ppo_trainer`,
    `- /ppo_trainer@_here_`). Never empty: the builder then passes it to Hydra in place of the config's own list, so
    that Hydra never imports a package a `pkg://` entry names (the linted repository's code is never run)."""
    entries = searchpath(command)
    if not entries:
        import yaml

        try:
            document = yaml.safe_load(read_bytes(yaml_file).decode("utf-8"))
        except (UnreadableFile, UnicodeDecodeError, yaml.YAMLError, RecursionError):
            document = None
        hydra = document.get("hydra") if isinstance(document, dict) else None
        listed = hydra.get("searchpath") if isinstance(hydra, dict) else None
        entries = [str(e) for e in listed] if isinstance(listed, list) else []
    out: dict[Path, None] = {}
    for entry in entries:
        if entry.startswith(_PKG):
            parts = entry[len(_PKG) :].strip("/").replace("/", ".").split(".")
            found = package.joinpath(*parts[1:]) if parts[0] == "verl" else _first_dir(Path(*parts), file, package)
        else:
            written = Path(entry.removeprefix(_FILE))
            if written.parts[-3:] == _VERL_CONFIG:
                found = package / "trainer" / "config"
            elif written.is_absolute():
                found = written
            else:
                found = _first_dir(written, file, package)
        if found is not None and found.is_dir():
            out[Path(os.path.realpath(found))] = None
    out[Path(os.path.realpath(package / "trainer" / "config"))] = None
    return tuple(out)


# `_target_: a.b.C` in a config file: the dataclass the build walks the config's tree against.
_TARGET = re.compile(rb"^\s*_target_\s*:\s*['\"]?([A-Za-z_][\w.]*)", re.MULTILINE)


def _custom_key(snapshot: str, package: Path, directory: Path, name: str, search: tuple[Path, ...]) -> str:
    """The hash of what a custom config's build reads, each part framed by its length: the builder, the config, the
    verl snapshot (a built one's path names its content), every YAML file of the directories Hydra searches, and the
    Python files of each top-level package outside verl that a `_target_` of those files names (the repository's
    own dataclasses, which the build types the config's keys with). Raises `UnresolvedConfig` for a file that is
    not a regular one or over a bound (`_tree_files`' bounds)."""
    import hashlib  # here, not at import: loading OpenSSL is ~4 ms of every cold run, which builds no config

    key = hashlib.blake2b()

    def framed(part: str | bytes) -> None:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        key.update(len(data).to_bytes(8, "big") + data)

    def read(path: Path) -> bytes:
        try:
            return read_bytes(path)
        except UnreadableFile as exc:
            raise UnresolvedConfig(f"{path}: {exc}") from None

    for part in (builder_stamp(), "custom", name, snapshot, str(directory)):
        framed(part)
    packages: set[str] = set()
    for d in (directory, *search):
        framed(str(d))
        for path in _bounded(sorted(d.rglob("*.yaml"))):
            data = read(path)
            framed(str(path.relative_to(d)))
            framed(data)
            packages.update(m.group(1).split(b".")[0].decode() for m in _TARGET.finditer(data))
    for top in sorted(packages - {package.name}):
        framed(top)
        for path in _bounded(sorted((package.parent / top).rglob("*.py")) + [package.parent / f"{top}.py"]):
            if os.path.lexists(path):
                framed(str(path.relative_to(package.parent)))
                framed(read(path))
    return key.hexdigest()[:40]


def _bounded(paths: list[Path]) -> list[Path]:
    if len(paths) > MAX_TREE_FILES:
        raise UnresolvedConfig(f"over {MAX_TREE_FILES} files to read (the bound of a snapshot build)")
    return paths


def _custom_snapshot(snapshot: str, package: Path, directory: Path, name: str, search: tuple[Path, ...]) -> str:
    """The reference of the snapshot of config `name` in `directory`, with the verl of `snapshot` whose files are in
    `package`: built (`_cached`) or cached. Raises `UnresolvedConfig` with the builder's reason."""
    key = _custom_key(snapshot, package, directory, name, search)

    def build() -> dict:
        from sapo_toolkit.schemas.build.isolated import build_isolated

        base = snapshot_document(snapshot)
        if base is None:  # the verl snapshot itself is missing: RF004 reports it for the file
            raise UnresolvedConfig(f"no snapshot of verl {snapshot}")
        config = {"name": name, "config_dir": str(directory), "search_path": [str(d) for d in search]}
        return build_isolated({"kind": "custom", "base": base, "package_dir": str(package), "config": config})

    built = cached_build(key, build)
    if isinstance(built, str):
        raise UnresolvedConfig(f"config `{directory / name}.yaml` cannot be composed: {built}")
    return built[0]


__all__ = ["UnresolvedConfig", "config_for"]
