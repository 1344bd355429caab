"""How snapshots are laid out as JSON text: deterministic, one entry per line, so that committed files diff well."""

from __future__ import annotations

import json
from typing import Any

VERL_FORMAT = 1
CONSUMER_FORMAT = 1


def _dumps(obj: Any, expand_depth: int, depth: int = 0) -> str:
    """Deterministic JSON: dicts above ``expand_depth`` get one key per line, everything deeper is compact."""
    if isinstance(obj, dict) and obj and depth < expand_depth:
        items = [f"{json.dumps(str(k))}:{_dumps(obj[k], expand_depth, depth + 1)}" for k in sorted(obj)]
        return "{\n" + ",\n".join(items) + "\n}"
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def snapshot_text(snapshot: dict) -> str:
    # verl: top / trees / option / one line per entry; consumers: top / classes / class / fields / one line per field
    expand = 3 if "trees" in snapshot else 4
    return _dumps(snapshot, expand) + "\n"
