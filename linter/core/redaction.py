"""Secret names: which variables and keys hold values that never reach a message, a file or the terminal.

One definition for the linter's messages and the launcher's run directories and dry run.
"""

from __future__ import annotations

import re

REDACTED = "<redacted>"

# `NAME=value` in text quoted from a file (a script word or line, a Hydra override): the value runs to the first
# unquoted blank, quoted parts included (`HF_TOKEN="a b"`, `+trainer.api_key='x'`). A name starts only where a run
# of name characters does: linear in the text, however long a run without `=` (a 100,000-digit value).
_ASSIGNMENT = re.compile(
    r"(?<![\w.@/+~-])(?P<name>[\w.@/+~-]+)="
    r"""(?P<value>(?:"(?:\\.|[^"\\])*"?|'[^']*'?|[^\s"'`])*)"""
)


# How credential scanners recognise a secret by its name (detect-secrets' keyword plugin, gitleaks' generic rule): by
# whole words at the end of the name, never by a substring, so that `ppo_max_token_len_per_gpu`, `max_num_batched_
# tokens`, `prompt_key` and `reward_fn_key` stay ordinary keys.
SECRET_WORDS = frozenset({"token", "secret", "password", "passwd", "pwd", "passphrase", "credential", "credentials"})
# `KEY` alone names a dictionary key in verl's config (`prompt_key`); after one of these words it names a secret.
SECRET_KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "priv", "auth", "client", "service", "signing", "encryption", "master"}
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def is_secret_name(name: str) -> bool:
    """A name whose value is a secret: its last part (of a dotted key) ends in the word TOKEN, SECRET, PASSWORD
    (PASSWD, PWD, PASSPHRASE) or CREDENTIAL(S), or in KEY after API, ACCESS, SECRET, PRIVATE, AUTH, CLIENT, ...
    (`HF_TOKEN`, `WANDB_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `db_password`, `+trainer.api_key`, `apiKey`, `APIKEY`),
    words split at `_`, `-` and case changes, in any case."""
    last = name.rsplit(".", 1)[-1]
    words = [w.lower() for w in _WORD.findall(last)]
    if not words:
        return False
    if words[-1] in SECRET_WORDS or words[-1] in ("apikey", "secretkey", "privatekey", "accesskey"):
        return True
    return words[-1] == "key" and len(words) > 1 and words[-2] in SECRET_KEY_QUALIFIERS


def shown_value(name: str, value: object) -> str:
    """How a message quotes a value written under `name`: its repr, or `<redacted>` under a secret name."""
    return REDACTED if is_secret_name(name) else repr(value)


def redact_assignments(text: str) -> str:
    """`text` with the value of every `NAME=value` in it redacted where NAME is a secret name."""
    return _ASSIGNMENT.sub(lambda m: f"{m['name']}={REDACTED}" if is_secret_name(m["name"]) else m[0], text)


# In a line of a file shown whole (the text format's excerpt), a secret can also be a YAML or JSON mapping's value
# (`api_key: x`, `{"HF_TOKEN": "x"}`) or a command-line option's argument (`--hf_token x`).
_MAPPING_ENTRY = re.compile(r"""(?P<name>["']?[\w.@/+~-]+["']?)(?P<sep>\s*:\s+)(?P<value>\[[^\]]*\]?|[^,{}\[\]#]*)""")
_OPTION_ARGUMENT = re.compile(r"(?P<name>--?[\w.-]+)(?P<sep>\s+)(?P<value>[^\s-]\S*)")


def redact_line(text: str) -> str:
    """A line quoted whole from a file, every value under a secret name redacted: `NAME=value`, `name: value`
    (YAML, JSON) and `--name value`."""

    def entry(m: re.Match) -> str:
        secret = is_secret_name(m["name"].strip("\"'").lstrip("-"))
        return f"{m['name']}{m['sep']}{REDACTED}" if secret and m["value"].strip() else m[0]

    return _OPTION_ARGUMENT.sub(entry, _MAPPING_ENTRY.sub(entry, redact_assignments(text)))
