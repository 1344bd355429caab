"""Where sapo-lint keeps what it computes once and reuses across runs (shellcheck's findings, built verl snapshots)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """`$SAPO_LINT_CACHE_DIR`, else `$XDG_CACHE_HOME/sapo-lint` (an absolute `XDG_CACHE_HOME` only, as the XDG base
    directory specification says), else `~/.cache/sapo-lint`."""
    root = os.environ.get("SAPO_LINT_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "sapo-lint"
