"""`[tool.sapo-lint]` in the linted repository's pyproject.toml, merged with command-line options."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class SettingsError(ValueError):
    """Bad configuration; the message is shown as is and the run exits 2."""


# key in pyproject -> (attribute, expected type, help)
KEYS = {
    "select": ("select", list, "rule codes or prefixes to enable (default: all)"),
    "ignore": ("ignore", list, "rule codes or prefixes to disable"),
    "exclude": ("exclude", list, "glob patterns of paths not to lint"),
    "verl-version": ("verl_version", str, "verl schema snapshot when a recipe names none"),
    "megatron-core-version": ("megatron_core", str, "megatron-core snapshot for pass-through dict checks"),
    "mbridge-version": ("mbridge", str, "mbridge snapshot (a release such as 0.15.1, or git-main)"),
    "warnings-as-errors": ("warnings_as_errors", bool, "exit 1 on warnings too"),
    "shellcheck": ("shellcheck", bool, "run shellcheck on scripts (SH<SC number> findings); false = --no-shellcheck"),
    "naming-ignore-dirs": ("naming_ignore_dirs", list, "directories whose scripts the naming rules (NM) skip"),
    "naming-ignore-files": ("naming_ignore_files", list, "scripts the naming rules (NM) skip"),
    "checkpoint-write-gib-per-s": ("write_gib_per_s", float, "checkpoint write bandwidth per writing rank (CK001)"),
    "host-ram-gib": ("host_ram_gib", float, "host RAM per node (MEM002)"),
    "checkpoint-disk-budget-gib": ("disk_budget_gib", float, "disk budget for checkpoints (CK002)"),
    "accelerator": ("accelerator", (str, dict), ("accelerator of every variant, or one per device kind: "
                                                 '{npu = "ascend-910b3", gpu = "nvidia-h100"} (MEM001)')),
}


def _naming_defaults() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from .rules.nm_naming import DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES

    return DEFAULT_IGNORE_DIRS, DEFAULT_IGNORE_FILES


@dataclass(slots=True)
class Settings:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    verl_version: str | None = None
    megatron_core: str | None = None
    mbridge: str | None = None
    warnings_as_errors: bool = False
    shellcheck: bool = True
    # verl's own check_example_naming ignores (linter/rules/nm_naming.py)
    naming_ignore_dirs: list[str] = field(default_factory=lambda: list(_naming_defaults()[0]))
    naming_ignore_files: list[str] = field(default_factory=lambda: list(_naming_defaults()[1]))
    write_gib_per_s: float | None = None
    host_ram_gib: float | None = None
    disk_budget_gib: float | None = None
    accelerator: str | dict[str, str] | None = None  # a name, or device kind -> name

    def resources(self) -> dict:
        return {k: getattr(self, k) for k in ("write_gib_per_s", "host_ram_gib", "disk_budget_gib")
                if getattr(self, k) is not None}

    def enabled(self, code: str) -> bool:
        selected = not self.select or any(code.startswith(p) for p in self.select)
        return selected and not any(code.startswith(p) for p in self.ignore)

    def explicitly_selected(self, code: str) -> bool:
        """Whether `select` names the code, or a prefix of it at least as long as its family's letters (`SH`,
        `SH2`, `SH2034`; not `S`): what an opt-in finding (a shellcheck code outside the default set) needs."""
        family = code.rstrip("0123456789")
        return any(code.startswith(p) and p.startswith(family) for p in self.select)


def find_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_settings(start: Path) -> tuple[Settings, Path | None]:
    path = find_pyproject(start.resolve())
    settings = Settings()
    if path is None:
        return settings, None
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read [tool.sapo-lint]: {exc}") from None
    tool = document.get("tool", {})
    table = tool.get("sapo-lint", {}) if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: `tool.sapo-lint` must be a table ([tool.sapo-lint])")
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
        if expected is float and not (math.isfinite(value) and value > 0):
            # a site limit of 0, a negative, inf or nan would switch its check off without a word
            raise SettingsError(f"{path}: [tool.sapo-lint] {key} must be a positive finite number, not {value}")
        setattr(settings, attribute, value)
    return settings, path


def _accelerator(path: Path, value) -> str | dict[str, str]:
    """`accelerator = "name"` or `accelerator = {npu = "name", gpu = "name"}`: every name known (aliases allowed) and
    of the kind it is given for."""
    from .catalog import DEVICE_KINDS, UnknownAccelerator, find_accelerator

    where = f"{path}: [tool.sapo-lint] accelerator"
    if isinstance(value, dict):
        unknown = [k for k in value if k not in DEVICE_KINDS]
        if unknown or not value or not all(isinstance(v, str) for v in value.values()):
            raise SettingsError(f"{where} maps device kinds ({', '.join(DEVICE_KINDS)}) to accelerator names, "
                                f"not {value!r}")
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
            raise SettingsError(f"{where}: {accelerator.name} is not {'an NPU' if kind == 'npu' else 'a GPU'} "
                                f"(given for {kind})")
    return value
