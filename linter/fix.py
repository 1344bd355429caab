"""`--fix`: rewrite overrides in place (a key renamed, a value set, an override added on a line after one, or one
removed) where a rule offers a safe fix (an unsafe one too with `--unsafe-fixes`, a display-only one never);
`--add-noqa`: suppress every current finding with a `# sapo-lint: noqa` comment."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from . import api
from .core.diagnostics import Diagnostic, Edit
from .sources.files import is_regular_file, write_atomically

BOM = b"\xef\xbb\xbf"


def _edited(line: str, edit: Edit) -> str | None:
    """The line with the edit applied, or None where its text is no longer where the edit says (a key may be
    written inside YAML quotes that start there). A line break ending `replaces` stands for the line's own (CRLF,
    LF, or none on a last line), and one in `content` is written as the line's own."""
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    old, new = edit.replaces, edit.content.replace("\n", ending or "\n")
    through_end = old.endswith("\n")
    old = old.removesuffix("\n")
    start = edit.column - 1
    if body[start : start + len(old)] != old and body[start : start + 1] in ("'", '"'):
        start += 1  # a key written inside quotes that start there
    if body[start : start + len(old)] != old or (through_end and start + len(old) != len(body)):
        return None
    return body[:start] + new + body[start + len(old) :] + ("" if through_end else ending)


class FileRead(NamedTuple):
    """A file's bytes and, from the open file, what says it is still the same file with the same content."""

    data: bytes
    identity: tuple[int, int, int, int]  # device, inode, size, modification time (ns)


def _read(path: Path) -> FileRead:
    with path.open("rb") as handle:
        info = os.fstat(handle.fileno())
        return FileRead(handle.read(), (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))


def _rewrite(path: Path, read: FileRead, content: bytes) -> bool:
    """Replace the file with `content`, unless it is no longer what was `read` (another process appended to it,
    an editor saved it): then it is left as it is, and False. Read again just before the replace, so only the
    replace itself can still race."""
    if _read(path) != read:
        return False
    write_atomically(path, content)
    return True


class FixedFile(NamedTuple):
    path: Path
    before: FileRead
    after: bytes
    fixes: int  # edits applied in `after`


class FixOutcome(NamedTuple):
    fixes: int  # fixes written
    changed: tuple[Path, ...]  # files that changed while being fixed: not rewritten


def planned_fixes(diagnostics: list[Diagnostic], unsafe: bool = False) -> list[FixedFile]:
    """Every fix `--fix` applies (`unsafe`: with --unsafe-fixes) whose text is still where its edit says, applied
    in memory, right to left on each line: the files it changes."""
    by_file: dict[str, dict[tuple[int, int], Edit]] = defaultdict(dict)
    for d in diagnostics:
        if Path(d.location.path).is_file():
            for fix in d.fixes:
                if fix.applied(unsafe):
                    for edit in fix.edits:
                        by_file[d.location.path].setdefault((edit.line, edit.column), edit)
    planned = []
    for name, fixes in by_file.items():
        path = Path(name)
        before = _read(path)
        raw = before.data
        bom = raw.startswith(BOM)
        # Lines exactly as written: CRLF stays CRLF, and a byte-order mark is put back (diagnostic columns count
        # from after it, as the linter read the file).
        lines = raw[len(BOM) if bom else 0 :].decode("utf-8").splitlines(keepends=True)
        changed = 0
        for (line_no, _), edit in sorted(fixes.items(), reverse=True):  # right to left keeps columns valid
            if not 0 < line_no <= len(lines):
                continue
            new_line = _edited(lines[line_no - 1], edit)
            if new_line is not None:
                lines[line_no - 1] = new_line
                changed += 1
        if changed:
            planned.append(FixedFile(path, before, (BOM if bom else b"") + "".join(lines).encode("utf-8"), changed))
    return planned


def apply_fixes(diagnostics: list[Diagnostic], unsafe: bool = False) -> FixOutcome:
    """Apply every fix `planned_fixes` plans, in each file that did not change since it was read for fixing."""
    fixes, changed = 0, []
    for fixed in planned_fixes(diagnostics, unsafe):
        if _rewrite(fixed.path, fixed.before, fixed.after):
            fixes += fixed.fixes
        else:
            changed.append(fixed.path)
    return FixOutcome(fixes, tuple(changed))


def unified_diff(planned: list[FixedFile]) -> str:
    """What `apply_fixes` would change, as a unified diff (`--- path` / `+++ path`, as `ruff --diff` prints)."""
    import difflib

    chunks = []
    for fixed in planned:
        before, after = (b.decode("utf-8").splitlines(keepends=True) for b in (fixed.before.data, fixed.after))
        chunks.extend(difflib.unified_diff(before, after, str(fixed.path), str(fixed.path)))
    return "".join(chunks)


# --- --add-noqa -------------------------------------------------------------------------------------------------

NOQA_PREFIX = "# sapo-lint: noqa: "


class NoqaOutcome(NamedTuple):
    comments: int  # comments written or extended
    covered: int  # findings they cover
    files: int  # files rewritten
    left: list[tuple[Diagnostic, str]]  # findings no comment can cover, with why
    changed: tuple[Path, ...]  # files that changed while comments were added: not rewritten


def add_noqa(diagnostics: list[Diagnostic]) -> NoqaOutcome:
    """Append `# sapo-lint: noqa: CODE, ...` to the line of every finding (merged into a noqa comment the line
    already has), where `api.check` reads it back: in a script, a line continued with `\\` cannot end in a
    comment, so its codes go where the continued command ends. A comment is written only where it leaves the file
    meaning what it did (a script's text outside comments, a recipe's YAML events): never inside a string, a
    heredoc or a block scalar, never on a shebang line."""
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    left: list[tuple[Diagnostic, str]] = []
    for d in diagnostics:
        path = Path(d.location.path)
        if path.suffix in api.RECIPE_SUFFIXES + api.SCRIPT_SUFFIXES and is_regular_file(path):
            by_file[d.location.path].append(d)
        else:
            left.append((d, "not a line of a recipe or script"))
    comments = covered = files = 0
    changed: list[Path] = []
    for name, found in by_file.items():
        path = Path(name)
        try:
            read = _read(path)
            raw = read.data
            bom = raw.startswith(BOM)
            text = raw[len(BOM) if bom else 0 :].decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            left.extend((d, f"cannot read the file: {getattr(exc, 'strerror', None) or exc}") for d in found)
            continue
        script = path.suffix in api.SCRIPT_SUFFIXES
        lines = text.splitlines(keepends=True)  # as `api.check` numbers them
        bare = text.splitlines()
        targets: dict[int, list[Diagnostic]] = defaultdict(list)
        ends = api.noqa_lines(bare, script)
        for d in found:
            index = d.location.line - 1
            if not 0 <= index < len(lines):
                left.append((d, "outside the file"))
                continue
            index = ends[index]
            if script and api.continued(bare[index]):
                left.append((d, "its command is continued with `\\` to the end of the file"))
            elif script and index == 0 and bare[0].startswith("#!"):
                left.append((d, "on the shebang line, where a comment would become the interpreter's argument"))
            else:
                targets[index].append(d)
        edits = {i: _with_codes(lines[i], bare[i], {c for d in ds for c in d.codes}) for i, ds in targets.items()}
        edits = {i: line for i, line in edits.items() if line != lines[i]}
        kept = _meaning_kept(text, lines, edits, _script_meaning if script else _yaml_meaning)
        if kept and not _rewrite(path, read, (BOM if bom else b"") + _joined(lines, kept).encode("utf-8")):
            changed.append(path)
            continue
        for i, ds in targets.items():
            if i in edits and i not in kept:
                left.extend(
                    (d, "inside a string, heredoc or block scalar, where a comment would change it") for d in ds
                )
            else:
                covered += len(ds)
        if kept:
            comments += len(kept)
            files += 1
    return NoqaOutcome(comments, covered, files, left, tuple(changed))


def _with_codes(line: str, content: str, codes: set[str]) -> str:
    """The line with `codes` in its noqa comment: merged into an existing one, else a new one at its end."""
    ending = line[len(content) :]
    m = api.NOQA.search(content)
    if m and m.group("codes") is None:  # a bare noqa already covers every code
        return line
    if m:
        present = [c.strip().upper() for c in m.group("codes").split(",")]
        merged = present + sorted(codes - set(present))
        return content[: m.start("codes")] + ", ".join(merged) + content[m.end("codes") :] + ending
    gap = "" if content[-1:].isspace() else "  "
    return content + gap + NOQA_PREFIX + ", ".join(sorted(codes)) + ending


def _joined(lines: list[str], edits: dict[int, str]) -> str:
    return "".join(edits.get(i, line) for i, line in enumerate(lines))


def _meaning_kept(text: str, lines: list[str], edits: dict[int, str], meaning) -> dict[int, str]:
    """The edits that leave the file's meaning as it was: all of them when they do together, else each one that
    does alone (and then those together, or none)."""
    if not edits:
        return {}
    before = meaning(text)
    if before is None:  # a file that does not parse: nothing to compare a change with
        return {}
    if meaning(_joined(lines, edits)) == before:
        return edits
    alone = {i: line for i, line in edits.items() if meaning(_joined(lines, {i: line})) == before}
    return alone if alone and meaning(_joined(lines, alone)) == before else {}


def _script_meaning(text: str) -> list[str]:
    """The script without its comments, lines right-stripped: what bash runs."""
    from .sources.bash.parse import parse

    data = text.encode("utf-8")
    comments, stack = [], [parse(data).root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            comments.append((node.start_byte, node.end_byte))
        else:
            stack.extend(node.children)
    kept, at = [], 0
    for start, end in sorted(comments):
        kept.append(data[at:start])
        at = end
    kept.append(data[at:])
    return [line.rstrip() for line in b"".join(kept).decode("utf-8").split("\n")]


def _yaml_meaning(text: str) -> list[tuple] | None:
    """The recipe's YAML parse events (comments are not events); None when it does not parse."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return [
            (type(e).__name__, *(getattr(e, k, None) for k in ("anchor", "tag", "implicit", "value", "style")))
            for e in yaml.parse(text, Loader=loader)
        ]
    except yaml.YAMLError:
        return None
