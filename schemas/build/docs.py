"""The comments verl's config YAML carries for its keys, by composed key path (`schemas/FORMAT.md`, `verl-docs`):
what the language server's hover and `sapo-lint schema export`'s descriptions show. Kept apart from the snapshot,
which linting loads: nothing on the lint path reads these.

A key's comment is the run of comment lines directly above it (no blank line between) and the comment at the end of
its own line. ruamel.yaml reads the comments (never the text inside a block scalar or a quoted string); the lines
they are on come from matching ruamel's comment tokens to the file's lines, as ruamel's marks for a comment token
are off by a line after some scalars. A key of a group file lands where Hydra composes that file: the configs
compose.py composes (every selection of each trainer config, every single group override), each file at the package
its defaults list puts it, the last file in merge order that comments a key giving its comment."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from . import SchemaBuildError
from .compose import (
    MAX_YAML_BYTES,
    MAX_YAML_NODES,
    ConfigSource,
    Workspace,
    compose_config,
    config_files_parsed_once,
)

DOCS_FORMAT = 1
# How far from ruamel's mark a comment token's first line is looked for in the file (its marks are off by one line
# in verl's files: after a quoted scalar, a token's mark is the blank line before the comment).
_SLACK = 3


def yaml_comments(text: str, name: object = "<yaml>") -> dict[str, str]:
    """Dotted key (relative to the document's root) -> the comment verl's YAML carries for it: the comment lines
    directly above the key, then the comment at the end of its line, each without its `#`. The root's `defaults`
    list and Hydra's `# @package` directives are not comments on a key; keys inside lists are not listed."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    if len(text) > MAX_YAML_BYTES:
        raise SchemaBuildError(f"config file {name} is over {MAX_YAML_BYTES} bytes (the build's bound)")
    try:
        data = YAML(typ="rt", pure=True).load(text)
    except YAMLError as e:
        raise SchemaBuildError(f"config file {name} is not YAML ruamel.yaml reads: {type(e).__name__}") from None
    if not isinstance(data, dict):
        return {}
    lines = text.splitlines()
    above, inline = _comment_lines(lines, data)
    out: dict[str, str] = {}
    visited = 0
    pending: list[tuple[str, object]] = [("", data)]
    while pending:
        prefix, node = pending.pop()
        positions = getattr(getattr(node, "lc", None), "data", {})
        for key, value in node.items():
            visited += 1
            if visited > MAX_YAML_NODES:
                raise SchemaBuildError(f"config file {name} expands to over {MAX_YAML_NODES} nodes (the build's bound)")
            if not prefix and key == "defaults":
                continue
            path = f"{prefix}.{key}" if prefix else str(key)
            if key in positions:  # not a key merged in from an anchor (`<<: *base`)
                line = positions[key][0]
                said = [*_run_above(above, line), *([inline[line]] if line in inline else [])]
                said = [s for s in said if not s.startswith("@package")]
                if any(said):
                    out[path] = "\n".join(said).strip("\n")
            if isinstance(value, dict):
                pending.append((path, value))
    return dict(sorted(out.items()))


def _run_above(above: dict[int, str], line: int) -> list[str]:
    run = []
    while line - 1 in above:
        line -= 1
        run.append(above[line])
    return run[::-1]


def _comment_lines(lines: list[str], data) -> tuple[dict[int, str], dict[int, str]]:
    """(line -> text of a comment alone on its line, line -> text of a comment after content), 0-based, text
    without the `#`s and the blanks around it."""
    above: dict[int, str] = {}
    inline: dict[int, str] = {}
    for token in _comment_tokens(data):
        segments = token.value.lstrip("\n").split("\n")
        if segments and segments[-1] == "":
            segments.pop()
        placed = _placed(lines, segments, token.start_mark.line)
        if placed is None:
            continue  # not where ruamel says (never seen in verl's files): left out rather than misplaced
        for n, segment in zip(placed, segments, strict=True):
            comment = segment.strip()
            if not comment:
                continue
            text = comment.lstrip("#").strip()
            if lines[n][: len(lines[n].rstrip()) - len(comment)].strip():
                inline[n] = text
            else:
                above[n] = text
    return above, inline


def _placed(lines: list[str], segments: list[str], mark: int) -> list[int] | None:
    """The line of each segment (a line of text) of a comment token: from the start nearest to ruamel's mark where
    each segment is the end of its line (the first may follow content, the others are alone on theirs) and a blank
    segment is a blank line. ruamel leaves a line of blanks out of a token (`rank: 0  # ...`, `  `, `# ...`), so a
    blank line may come between two segments."""
    for distance in range(_SLACK + 1):
        for start in (mark - distance, mark + distance) if distance else (mark,):
            found = _match(lines, segments, start)
            if found is not None:
                return found
    return None


def _match(lines: list[str], segments: list[str], start: int) -> list[int] | None:
    found: list[int] = []
    n = start
    for i, segment in enumerate(segments):
        text = segment.strip()
        while i and text and 0 <= n < len(lines) and not lines[n].strip():
            n += 1  # a blank line ruamel left out
        if not 0 <= n < len(lines):
            return None
        line = lines[n]
        if text:
            if not line.rstrip().endswith(text) or (i and line[: len(line.rstrip()) - len(text)].strip()):
                return None
        elif line.strip():
            return None
        found.append(n)
        n += 1
    return found


def _comment_tokens(data) -> Iterator:
    """Every comment token of a ruamel round-trip document, once (ruamel attaches some to two nodes)."""
    from ruamel.yaml.tokens import CommentToken

    seen: set[int] = set()
    nodes, visited = [data], set()

    def tokens(held) -> Iterator:
        if isinstance(held, CommentToken):
            yield held
        elif isinstance(held, (list, tuple)):
            for h in held:
                yield from tokens(h)

    while nodes:
        node = nodes.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        ca = getattr(node, "ca", None)
        if ca is not None:
            for token in (*tokens(ca.comment), *tokens(list(ca.items.values())), *tokens(ca.end)):
                if id(token) not in seen:
                    seen.add(id(token))
                    yield token
        if isinstance(node, dict):
            nodes.extend(node.values())
        elif isinstance(node, list):
            nodes.extend(node)


def build_verl_docs(package_dir: Path, version: str, source: str, commit: str | None = None) -> dict:
    """The comments document of the verl package in ``package_dir`` (FORMAT.md `verl-docs`): the comments of every
    config file its trainer configs (``verl.config_sources``) compose from, as the snapshot build composes them."""
    from .verl import config_sources

    package_dir = Path(package_dir)
    document: dict = {"format": DOCS_FORMAT, "verl_version": version, "source": source}
    if commit:
        document["commit"] = commit
    return document | composed_comments(config_sources(package_dir), package_dir)


def composed_comments(sources: list[ConfigSource], root: Path) -> dict:
    """``files``, ``configs`` and ``options`` of a comments document (FORMAT.md) for the configs of ``sources``,
    composed with hydra-core as compose.py composes them (every selection of each config, every single group
    override); files named by their path below ``root``."""
    workspace = Workspace()
    files: dict[str, dict[str, str]] = {}
    configs: dict[str, dict[str, list[list[str]]]] = {}
    options: dict[str, list[list[str]]] = {}
    with config_files_parsed_once():
        for src in sorted(sources, key=lambda src: (len(src.name), src.name)):  # as verl.configs_snapshot composes
            first = len(workspace.pool)
            composed = compose_config(src, workspace)
            placements = {p.key: p for p in composed.placements}
            for key, composition in sorted(composed.selections.items()):
                configs.setdefault(src.name, {})[key] = [layer for _, layer in _layers(composition, src, files, root)]
            for composition in workspace.pool[first:]:  # its selections first, then its single group overrides
                layers = _layers(composition, src, files, root)
                for key, option in sorted(composition.choices.items()):
                    p = placements.get(key)
                    if p is None or option is None or f"{p.group}/{option}" in options:
                        continue
                    options[f"{p.group}/{option}"] = [
                        [name, relative]
                        for item, (name, package) in layers
                        if item.placement == key and (relative := _relative(package, p.package)) is not None
                    ]
    return {
        "configs": configs,
        "files": {name: files[name] for name in sorted(files) if files[name]},
        "options": dict(sorted(options.items())),
    }


def _layers(composition, src: ConfigSource, files: dict[str, dict[str, str]], root: Path) -> list[tuple]:
    """``(item, [file, package])`` for each config file of a composition that comments a key, in merge order; each
    file's comments read into ``files`` the first time."""
    from .compose import _config_file

    out = []
    for item in composition.items:
        file = _config_file(src, item.config_path) if item.config_path else None
        if file is None:  # hydra's own configs
            continue
        name = _file_name(file, root)
        if name not in files:
            files[name] = yaml_comments(file.read_text(encoding="utf-8"), name)
        if files[name]:
            out.append((item, [name, item.package]))
    return out


def _file_name(file: Path, root: Path) -> str:
    """A config file's name in the document: its path below the verl package (`trainer/config/actor/actor.yaml`)."""
    try:
        return file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return file.name


def _relative(package: str, base: str) -> str | None:
    """``package`` relative to ``base`` ('' for ``base`` itself); None when it is not at or below it."""
    if not base or package == base:
        return package if not base else ""
    return package[len(base) + 1 :] if package.startswith(base + ".") else None


# Written one item per line: each file's comments, each config's selections, the options (all else compact).
_DOCS_LAYOUT: dict = {"configs": {"*": {}}, "files": {"*": {}}, "options": {}}


def docs_text(document: dict) -> str:
    """Deterministic JSON text of a comments document: sorted keys, one comment per line."""
    from .layout import _dumps

    return _dumps(document, _DOCS_LAYOUT) + "\n"
