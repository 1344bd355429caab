"""Secret names: which variables and keys hold values that never reach a message, a file or the terminal.

One definition for the linter's messages and the launcher's run directories and dry run.
"""

from __future__ import annotations

import re

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
REDACTED = "<redacted>"

# `NAME=value` in text quoted from a file (a script word or line, a Hydra override): the value runs to the first
# unquoted blank, quoted parts included (`HF_TOKEN="a b"`, `+trainer.api_key='x'`). A name starts only where a run
# of name characters does: linear in the text, however long a run without `=` (a 100,000-digit value).
_ASSIGNMENT = re.compile(
    r"(?<![\w.@/+~-])(?P<name>[\w.@/+~-]+)="
    r"""(?P<value>(?:"(?:\\.|[^"\\])*"?|'[^']*'?|[^\s"'`])*)"""
)


def is_secret_name(name: str) -> bool:
    """Names containing KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL, in any case: `HF_TOKEN`, `env.WANDB_API_KEY`,
    `+trainer.api_key` (a dotted key is secret when any part of it is)."""
    upper = name.upper()
    return any(m in upper for m in SECRET_MARKERS)


def shown_value(name: str, value: object) -> str:
    """How a message quotes a value written under `name`: its repr, or `<redacted>` under a secret name."""
    return REDACTED if is_secret_name(name) else repr(value)


def redact_assignments(text: str) -> str:
    """`text` with the value of every `NAME=value` in it redacted where NAME is a secret name."""
    return _ASSIGNMENT.sub(lambda m: f"{m['name']}={REDACTED}" if is_secret_name(m["name"]) else m[0], text)
