"""Installed versions of the training stack, read from distribution metadata; never imports the packages.

Public:

* ``PACKAGES``: the distributions `sapo-launch doctor` reports.
* ``installed_versions(names=PACKAGES, lookup=None) -> dict[str, str | None]``: name -> version, None when absent.
* ``parse_version(text) -> packaging.version.Version``: full PEP 440 ordering; ``VersionError`` on bad text.
* ``version_tuple(text) -> tuple[int, ...]``: the release numbers only (``0.18.0+empty`` -> ``(0, 18, 0)``,
  ``0.13.0rc1`` -> ``(0, 13, 0)``, ``2.7.1.post1`` -> ``(2, 7, 1)``); ``VersionError`` on bad text.
* ``vllm_patch_variant(vllm_version) -> "v013" | "v011" | None``: the NPU vLLM patch set a vLLM version needs.
* ``mbridge_save_weights_params(locate=None) -> frozenset[str] | None``: the keyword names of the installed mbridge's
  ``save_weights``, read from its source text.
* ``load_compatibility() -> dict``: ``compatibility.json`` (the data the doctor checks against).

Versions are parsed with ``packaging`` (imported on first use, not at module import).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path

PACKAGES = ("torch", "torch_npu", "vllm", "vllm-ascend", "megatron-core", "mindspeed", "mbridge", "verl", "ray")
COMPATIBILITY_FILE = Path(__file__).with_name("compatibility.json")


class VersionError(ValueError):
    """Text that is not a PEP 440 version; the message quotes it."""


# ------------------------------------------------------------------------------------------------ installed


def spellings(name: str) -> tuple[str, ...]:
    """The distribution names a package may be registered under: `megatron-core`/`megatron_core`,
    `vllm-ascend`/`vllm_ascend`, `torch_npu`/`torch-npu` (the name as given first)."""
    out = [name]
    for alt in (name.replace("-", "_"), name.replace("_", "-"), name.lower()):
        if alt not in out:
            out.append(alt)
    return tuple(out)


def _metadata_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a broken dist-info reads as "not installed", never a crash
        return None


def installed_version(name: str, lookup: Callable[[str], str | None] | None = None) -> str | None:
    """`name`'s installed version from its distribution metadata under any of its `spellings`, or None.
    `lookup(dist_name) -> version | None` replaces `importlib.metadata.version` (tests)."""
    lookup = lookup or _metadata_version
    for candidate in spellings(name):
        found = lookup(candidate)
        if found:
            return found
    return None


def installed_versions(
    names: Iterable[str] = PACKAGES, lookup: Callable[[str], str | None] | None = None
) -> dict[str, str | None]:
    """name -> installed version (None when no distribution of that name is installed), in the order given."""
    return {name: installed_version(name, lookup) for name in names}


# ------------------------------------------------------------------------------------------------ parsing


def parse_version(text: str):
    """`packaging.version.Version(text)` (local segments, pre-, post- and dev-releases all accepted); raises
    `VersionError` with the text quoted when it is not a PEP 440 version."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(text, str):
        raise VersionError(f"not a version: {text!r}")
    try:
        return Version(text.strip())
    except InvalidVersion:
        raise VersionError(f"not a version: {text!r}") from None


def version_tuple(text: str) -> tuple[int, ...]:
    """The release numbers of a version, dropping pre-/post-/dev-release and local segments: `0.18.0+empty` ->
    (0, 18, 0), `0.13.0rc1` -> (0, 13, 0), `2.7.1.post1` -> (2, 7, 1), `0.11.1.dev3+g12ab` -> (0, 11, 1).
    Raises `VersionError` on text that is not a version."""
    return tuple(parse_version(text).release)


def release_at_least(version: str, minimum: str) -> bool:
    """`version`'s release numbers >= `minimum`'s, trailing zeros ignored ((0, 13) == (0, 13, 0))."""
    a, b = version_tuple(version), version_tuple(minimum)
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)) >= b + (0,) * (width - len(b))


def same_release(a: str, b: str, parts: int = 3) -> bool:
    """Whether two versions have the same first `parts` release numbers (`2.7.1.post1` and `2.7.1` do)."""
    ta, tb = version_tuple(a), version_tuple(b)
    pad = (0,) * parts
    return (ta + pad)[:parts] == (tb + pad)[:parts]


# ------------------------------------------------------------------------------------------------ data


@cache
def load_compatibility(path: Path = COMPATIBILITY_FILE) -> dict:
    """The compatibility table (`launcher/compatibility.json`), parsed once."""
    return json.loads(path.read_text(encoding="utf-8"))


def vllm_patch_variant(vllm_version: str | None, table: Mapping | None = None) -> str | None:
    """The NPU vLLM patch set that a vLLM version needs: release >= 0.13.0 -> "v013", >= 0.11.0 -> "v011", older
    or None (no vLLM) -> None.

    Open-ended: no upper bound (vLLM 0.18, 0.24 resolve to "v013"), so a new vLLM never falls through every
    interval (field incident 9). Only the release numbers count: a local segment (`0.18.0+empty`, the version a
    source build of vLLM for vllm-ascend reported in incident 9) and a pre-release (`0.13.0rc1`, which runs 0.13
    code) resolve like the release they belong to. verl 0.8.0's own gate differs: it compares full PEP 440
    versions against closed intervals (see `compatibility.json` `verl_npu_vllm_patch_gates`), so there
    `0.13.0rc1` gets the 0.11 MoE-comm patch and `0.14.0+empty`, `0.14.1`, `0.18.0` get none.

    `table` replaces `compatibility.json`'s `vllm_npu_patch_variants` (tests). Raises `VersionError` when the
    text is not a version."""
    if vllm_version is None:
        return None
    table = table if table is not None else load_compatibility()["vllm_npu_patch_variants"]
    for row in sorted(table["variants"], key=lambda r: version_tuple(r["min_release"]), reverse=True):
        if release_at_least(vllm_version, row["min_release"]):
            return row["variant"]
    return None


# ------------------------------------------------------------------------------------------------ mbridge


def _mbridge_bridge_file() -> Path | None:
    """`mbridge/core/bridge.py` of the installed mbridge, found without importing mbridge (`find_spec` of a
    top-level name runs none of its code)."""
    from importlib.util import find_spec

    try:
        spec = find_spec("mbridge")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "core" / "bridge.py"
        if candidate.is_file():
            return candidate
    return None


def save_weights_params(source: str) -> frozenset[str] | None:
    """The parameter names (without `self`) of `save_weights` defined in a class of `source` (mbridge's
    `core/bridge.py`), or None when there is none or the text does not parse."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "save_weights":
                    args = item.args
                    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                    if args.kwarg is not None:
                        names.append("**" + args.kwarg.arg)
                    return frozenset(n for n in names if n != "self")
    return None


def mbridge_save_weights_params(locate: Callable[[], Path | None] | None = None) -> frozenset[str] | None:
    """The keyword names the installed mbridge's `Bridge.save_weights` accepts, read from its source text (mbridge
    from PyPI and from git both report version 0.15.1, but only git main has `distributed_filesystem`); None
    when mbridge is not installed or its source cannot be read. `locate() -> path | None` replaces the lookup."""
    path = (locate or _mbridge_bridge_file)()
    if path is None:
        return None
    try:
        return save_weights_params(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


__all__ = [
    "COMPATIBILITY_FILE",
    "PACKAGES",
    "VersionError",
    "installed_version",
    "installed_versions",
    "load_compatibility",
    "mbridge_save_weights_params",
    "parse_version",
    "release_at_least",
    "same_release",
    "save_weights_params",
    "spellings",
    "version_tuple",
    "vllm_patch_variant",
]
