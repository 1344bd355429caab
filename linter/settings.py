"""`[tool.sapo-lint]` in the linted repository's pyproject.toml, merged with command-line options."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .core.files import toml_parser
from .core.printable import printable


class SettingsError(ValueError):
    """Bad configuration; the message is shown as one line (control characters of values from the file escaped)
    and the run exits 2."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


# key in pyproject -> (attribute, expected type, help)
KEYS = {
    "select": ("select", list, "rule codes or prefixes to enable (default: all)"),
    "ignore": ("ignore", list, "rule codes or prefixes to disable"),
    "exclude": ("exclude", list, "glob patterns of paths not to lint"),
    "verl-version": (
        "verl_version",
        str,
        "a verl pin: the release files are linted against where no verl source tree or installed verl is found",
    ),
    "megatron-core-version": ("megatron_core", str, "megatron-core snapshot for pass-through dict checks"),
    "mbridge-version": ("mbridge", str, "mbridge snapshot (a release such as 0.15.1, or git-main)"),
    "warnings-as-errors": ("warnings_as_errors", bool, "exit 1 on warnings too"),
    "strict": ("strict", bool, "exit 1 when a file is not checked (a script with no trainer command excepted)"),
    "shellcheck": ("shellcheck", bool, "run shellcheck on scripts (SH<SC number> findings); false = --no-shellcheck"),
    "show-infos": (
        "show_infos",
        bool,
        "show info findings in pre-commit and CI too (default: there only errors and warnings; -v shows all)",
    ),
    "naming-roots": (
        "naming_roots",
        list,
        "directories whose run scripts the naming rules (NM) check, which turns them on (default: only where the "
        "repository runs verl's check-example-naming hook or checker, on the hook's --root)",
    ),
    "naming-ignore-dirs": ("naming_ignore_dirs", list, "directories whose scripts the naming rules (NM) skip"),
    "naming-ignore-files": ("naming_ignore_files", list, "scripts the naming rules (NM) skip"),
    "checkpoint-write-gib-per-s": ("write_gib_per_s", float, "checkpoint write bandwidth per writing rank (CK001)"),
    "host-ram-gib": ("host_ram_gib", float, "host RAM per node (MEM002)"),
    "checkpoint-disk-budget-gib": ("disk_budget_gib", float, "disk budget for checkpoints (CK002)"),
    "model": (
        "model",
        str,
        "the model of the files whose model path is known only at run time ($MODEL_PATH): a Hugging Face id such "
        "as Qwen/Qwen3-8B, or a directory holding config.json (relative to this file)",
    ),
    "fetch-model-config": (
        "fetch_model_config",
        bool,
        "fetch the config.json of a model no local source has from the Hugging Face Hub (needs the hub extra; "
        "default: lint never reaches the network)",
    ),
    "accelerator": (
        "accelerator",
        (str, dict),
        ('accelerator of every variant, or one per device kind: {npu = "ascend-910b3", gpu = "nvidia-h100"} (MEM001)'),
    ),
}


@dataclass(slots=True)
class Settings:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    verl_version: str | None = None
    megatron_core: str | None = None
    mbridge: str | None = None
    warnings_as_errors: bool = False
    strict: bool = False
    shellcheck: bool = True
    show_infos: bool = False  # in pre-commit and CI too (elsewhere infos are always shown)
    # None: the roots the script's repository runs verl's naming check on, verl's own ignore lists (nm_naming.py)
    naming_roots: list[str] | None = None
    naming_ignore_dirs: list[str] | None = None
    naming_ignore_files: list[str] | None = None
    write_gib_per_s: float | None = None
    host_ram_gib: float | None = None
    disk_budget_gib: float | None = None
    accelerator: str | dict[str, str] | None = None  # a name, or device kind -> name
    model: str | None = None  # for files whose model path is known only at run time
    fetch_model_config: bool = False
    config: Path | None = None  # the pyproject.toml these settings come from; `exclude` is relative to its directory

    def resources(self) -> dict:
        return {
            k: getattr(self, k)
            for k in ("write_gib_per_s", "host_ram_gib", "disk_budget_gib")
            if getattr(self, k) is not None
        }

    def naming_scope(self):
        """Which run scripts the naming rules check (`nm_naming.NamingScope`): the roots and ignores given in the
        pyproject.toml, relative to its directory; else the roots the script's repository runs verl's check on (none
        where it does not) and verl's own ignore lists."""
        from .rules.nm_naming import NamingScope

        project = self.config.parent if self.config is not None else Path()

        def absolute(paths: list[str] | None) -> tuple[str, ...] | None:
            return None if paths is None else tuple(os.path.abspath(project / p) for p in paths)

        given = {
            "roots": absolute(self.naming_roots),
            "ignore_dirs": absolute(self.naming_ignore_dirs),
            "ignore_files": absolute(self.naming_ignore_files),
        }
        return NamingScope()._replace(**{k: v for k, v in given.items() if v is not None})

    def enabled(self, code: str) -> bool:
        selected = not self.select or any(code.startswith(p) for p in self.select)
        return selected and not any(code.startswith(p) for p in self.ignore)

    def explicitly_selected(self, code: str) -> bool:
        """Whether `select` names the code, or a prefix of it at least as long as its family's letters (`SH`,
        `SH2`, `SH2034`; not `S`): what an opt-in finding (a shellcheck code outside the default set) needs."""
        family = code.rstrip("0123456789")
        return any(code.startswith(p) and p.startswith(family) for p in self.select)


SHELLCHECK_PREFIX = re.compile(r"SH\d{1,4}")  # `SH2` picks shellcheck's SC2xxx, `SH2086` one code (SH100)


def unknown_codes(codes: list[str]) -> list[str]:
    """The codes or prefixes that name no rule (case as given; rules are matched upper-case)."""
    from .rules import MODULES

    return [
        c
        for c in codes
        if not any(code.startswith(c.upper()) for code in MODULES) and not SHELLCHECK_PREFIX.fullmatch(c.upper())
    ]


def find_pyproject(start: Path) -> Path | None:
    """The closest pyproject.toml with a `[tool.sapo-lint]` table from the directory `start` upwards: one without
    the table is passed over (ruff's rule for `[tool.ruff]`), so a sub-package's pyproject.toml does not hide its
    repository's settings."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        # os.path.isfile: a path over PATH_MAX, or in a directory that cannot be searched, holds no settings (nothing
        # under it can be read either) rather than raising
        if os.path.isfile(candidate) and _table(candidate) is not None:
            return candidate
    return None


def _table(path: Path) -> dict | None:
    """The `[tool.sapo-lint]` table of a pyproject.toml, None without one."""
    toml = toml_parser()
    try:
        document = toml.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read [tool.sapo-lint]: {exc}") from None
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise SettingsError(f"{path}: `tool` must be a table ([tool.sapo-lint])")
    if "sapo-lint" not in tool:
        return None
    if not isinstance(tool["sapo-lint"], dict):
        raise SettingsError(f"{path}: `tool.sapo-lint` must be a table ([tool.sapo-lint])")
    return tool["sapo-lint"]


def load_settings(start: Path) -> tuple[Settings, Path | None]:
    """The settings for paths in the directory `start`: from `find_pyproject`, else the defaults. Raises
    `SettingsError`, one line naming the file and the key."""
    path = find_pyproject(start.resolve())
    return (Settings(), None) if path is None else (settings_from(path), path)


def settings_from(path: Path) -> Settings:
    """The settings a pyproject.toml's `[tool.sapo-lint]` table gives. Raises `SettingsError`."""
    settings = Settings(config=path)
    table = _table(path) or {}
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        # A key with a line break or another control character is shown escaped: the message stays one line.
        shown = (key if key.isprintable() else ascii(key) for key in unknown)
        raise SettingsError(
            f"{path}: unknown key(s) in [tool.sapo-lint]: {', '.join(shown)}; valid keys: {', '.join(KEYS)}"
        )
    for key, value in table.items():
        attribute, expected, _ = KEYS[key]
        if key == "accelerator":
            value = _accelerator(path, value)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is list and not all(isinstance(v, str) for v in value)):
            kind = {list: "a list of strings", float: "a number"}.get(expected, expected.__name__)
            raise SettingsError(f"{path}: [tool.sapo-lint] {key} must be {kind}")
        if key in ("select", "ignore"):
            if unknown := unknown_codes(value):
                raise SettingsError(
                    f"{path}: [tool.sapo-lint] {key}: unknown rule code or prefix: "
                    f"{', '.join(unknown)} (see `sapo-lint rules`)"
                )
            value = [code.upper() for code in value]
        if expected is float and not (math.isfinite(value) and value > 0):
            # a site limit of 0, a negative, inf or nan would switch its check off without a word
            raise SettingsError(f"{path}: [tool.sapo-lint] {key} must be a positive finite number, not {value}")
        setattr(settings, attribute, value)
    return settings


class SettingsFinder:
    """The settings that govern each linted path, as `load_settings` finds them for its directory (so paths in
    different projects each get their own project's), every pyproject.toml read once, with `adjust` (the command
    line's options) applied over each."""

    def __init__(self, adjust: Callable[[Settings], None] = lambda settings: None):
        self._adjust = adjust
        self._configs: dict[Path, Path | None] = {}  # absolute directory -> its pyproject.toml
        self._settings: dict[Path | None, Settings] = {}

    def for_path(self, path: Path) -> Settings:
        """The settings for a file (from its directory) or a directory. Raises `SettingsError`."""
        # the path as named (made absolute, `..` folded), not its symlinks' targets: a project's symlinked folder
        # is linted with that project's settings
        config = self._config_of(Path(os.path.abspath(path if os.path.isdir(path) else path.parent)))
        if config not in self._settings:
            settings = Settings() if config is None else settings_from(config)
            self._adjust(settings)
            self._settings[config] = settings
        return self._settings[config]

    def _config_of(self, directory: Path) -> Path | None:
        """`find_pyproject` for an absolute directory, remembering the answer for every directory passed."""
        passed = []
        config = None
        for candidate_dir in (directory, *directory.parents):  # a loop: a tree can be deeper than the recursion limit
            if candidate_dir in self._configs:
                config = self._configs[candidate_dir]
                break
            passed.append(candidate_dir)
            candidate = candidate_dir / "pyproject.toml"
            if os.path.isfile(candidate) and _table(candidate) is not None:  # as in find_pyproject
                config = candidate
                break
        self._configs.update(dict.fromkeys(passed, config))
        return config


def _accelerator(path: Path, value) -> str | dict[str, str]:
    """`accelerator = "name"` or `accelerator = {npu = "name", gpu = "name"}`: every name known (aliases allowed) and
    of the kind it is given for."""
    from .catalog import UnknownAccelerator, find_accelerator
    from .core.device import kind_names

    where = f"{path}: [tool.sapo-lint] accelerator"
    if isinstance(value, dict):
        unknown = [k for k in value if k not in kind_names()]
        if unknown or not value or not all(isinstance(v, str) for v in value.values()):
            raise SettingsError(
                f"{where} maps device kinds ({', '.join(kind_names())}) to accelerator names, not {value!r}"
            )
        entries = value.items()
    elif isinstance(value, str):
        entries = [(None, value)]
    else:
        raise SettingsError(f"{where} must be a name or a table of device kind -> name")
    for kind, name in entries:
        try:
            accelerator = find_accelerator(name)
        except UnknownAccelerator as exc:
            raise SettingsError(f"{where}: {exc}") from None
        if kind is not None and accelerator.device != kind:
            raise SettingsError(
                f"{where}: {accelerator.name} is not {'an NPU' if kind == 'npu' else 'a GPU'} (given for {kind})"
            )
    return value
