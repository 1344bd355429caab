"""`--fix`: rewrite override keys in place where a rule offers a mechanical fix."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .core.diagnostics import Diagnostic
from .sources.files import write_atomically

BOM = b"\xef\xbb\xbf"


def _replace_key(line: str, column: int, old: str, new: str) -> str | None:
    start = column - 1
    if line[start : start + len(old)] == old:
        return line[:start] + new + line[start + len(old) :]
    if line[start : start + 1] in ("'", '"') and line[start + 1 : start + 1 + len(old)] == old:  # quoted YAML key
        return line[: start + 1] + new + line[start + 1 + len(old) :]
    return None


def apply_fixes(diagnostics: list[Diagnostic]) -> int:
    """Apply every fix whose key text is still where the diagnostic says; returns how many were applied."""
    by_file: dict[str, dict[tuple[int, int], Diagnostic]] = defaultdict(dict)
    for d in diagnostics:
        if d.fix is not None and d.replaces is not None and Path(d.location.path).is_file():
            by_file[d.location.path].setdefault((d.location.line, d.location.column), d)
    applied = 0
    for name, fixes in by_file.items():
        path = Path(name)
        raw = path.read_bytes()
        bom = raw.startswith(BOM)
        # Lines exactly as written: CRLF stays CRLF, and a byte-order mark is put back (diagnostic columns count
        # from after it, as the linter read the file).
        lines = raw[len(BOM) if bom else 0:].decode("utf-8").splitlines(keepends=True)
        changed = 0
        for (line_no, column), d in sorted(fixes.items(), reverse=True):  # right to left keeps columns valid
            if not 0 < line_no <= len(lines):
                continue
            new_line = _replace_key(lines[line_no - 1], column, d.replaces, d.fix)
            if new_line is not None:
                lines[line_no - 1] = new_line
                changed += 1
        if changed:
            write_atomically(path, (BOM if bom else b"") + "".join(lines).encode("utf-8"))
            applied += changed
    return applied
