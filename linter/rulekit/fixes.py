"""The fixes a rule can offer (what `Finding.fix` holds): rename the override's key, set its value, add an override
after it, remove it. A rule says what to change; `placed` writes it as an edit of the file in the file's own form
(a recipe's YAML entry, a script's shell word), or shows it only (DISPLAY_ONLY) where the override is not written
as such there: a key inside a merged mapping, a value from a variable, the command line's `--override`.

Applicability (`core.diagnostics.Applicability`): SAFE where the fix does what the finding's message says must be
done, UNSAFE where the value or key is a guess (a near spelling, a value from a range the message gives)."""

from __future__ import annotations

from typing import NamedTuple

from ..core.diagnostics import Applicability, Edit, Fix, Location
from ..core.printable import printable
from ..core.written import Written, hydra_override, shell_word, yaml_entry, yaml_key_part, yaml_value


class OverrideFix(NamedTuple):
    """A change to the finding's override, before `placed` writes it in its file."""

    kind: str  # RENAME | SET | ADD | REMOVE
    applicability: Applicability
    key: str | None = None  # the new key (RENAME) or the key to add, its prefix included (`+a.b`)
    value: object = None  # the value to set or add (None: null)


RENAME, SET, ADD, REMOVE = "rename", "set", "add", "remove"


def rename_key(new_key: str, applicability: Applicability = Applicability.SAFE) -> OverrideFix:
    """Write the override's key as `new_key` (its prefix included: `+a.b`), the value as it is."""
    return OverrideFix(RENAME, applicability, new_key)


def set_value(value: object, applicability: Applicability = Applicability.SAFE) -> OverrideFix:
    """Give the override `value` (a Python value: 1, 1.0, True, None, "a b", [1, 2]), the key as it is."""
    return OverrideFix(SET, applicability, value=value)


def add_override(key: str, value: object, applicability: Applicability = Applicability.SAFE) -> OverrideFix:
    """Add `key=value` (`key: value` in a recipe) on a new line after the override."""
    return OverrideFix(ADD, applicability, key, value)


def remove_override(applicability: Applicability = Applicability.SAFE) -> OverrideFix:
    """Remove the override (its line, where it is alone on it)."""
    return OverrideFix(REMOVE, applicability)


def placed(fix: OverrideFix, at, location: Location) -> Fix:
    """`fix` as an edit of the file where the finding's override (`at`: a resolved or located override, or a bare
    location) is written; only shown where it cannot be written there."""
    override = getattr(at, "override", at)
    merged = getattr(override, "merged_from", None) is not None
    key_text = getattr(override, "key_text", None)
    if fix.kind == RENAME:
        replaces = None if merged else key_text
        edit = Edit(location.line, location.column, replaces, fix.key)
        return Fix((edit,), fix.applicability if replaces is not None else Applicability.DISPLAY_ONLY)
    written = None if merged else getattr(override, "written", None)
    placing = {SET: _set, ADD: _add, REMOVE: _remove}[fix.kind]
    edit, title = placing(fix, written, key_text, location)
    applicability = fix.applicability if edit.replaces is not None else Applicability.DISPLAY_ONLY
    return Fix((edit,), applicability, printable(title))


def _shown(written: Written | None, key: str, value: object) -> str:
    """`key=value` in the file's form: a recipe's `key: value`, else a script's word or a command line's override."""
    if written is not None and not written.script:
        return yaml_entry(key, value)
    return shell_word(key, value) if written is not None else hydra_override(key, value)


def _set(fix: OverrideFix, written: Written | None, key_text, location: Location) -> tuple[Edit, str]:
    shown = _shown(written, key_text or "", fix.value)
    if written is None:
        return Edit(location.line, location.column, None, shown), shown
    if written.script:
        return Edit(location.line, location.column, written.text, shown), shown
    key_part = yaml_key_part(written)
    if key_part is None:
        return Edit(location.line, location.column, None, shown), shown
    new = key_part + yaml_value(fix.value)
    return Edit(location.line, location.column, written.text, new), new


def _add(fix: OverrideFix, written: Written | None, key_text, location: Location) -> tuple[Edit, str]:
    shown = _shown(written, fix.key, fix.value)
    if written is None or written.before.strip():  # not at the start of its line (a YAML flow mapping)
        return Edit(location.line, location.column, None, shown), shown
    rest = written.text + written.after
    indent = written.before
    if not written.script:
        return Edit(location.line, location.column, rest, f"{rest}\n{indent}{shown}"), shown
    if written.after.rstrip().endswith("\\"):  # the command goes on: the new word goes on with it
        return Edit(location.line, location.column, rest, f"{rest}\n{indent}{shown} \\"), shown
    if not written.after.strip():  # the command's last word: continue it onto the new word
        return Edit(location.line, location.column, rest, f"{written.text} \\\n{indent}{shown}"), shown
    return Edit(location.line, location.column, None, shown), shown  # `| tee log` after it: no place for a line


def _remove(fix: OverrideFix, written: Written | None, key_text, location: Location) -> tuple[Edit, str]:
    title = f"remove `{written.text if written is not None else key_text}`"
    whole = None if written is None else written.before + written.text + written.after
    if written is None:
        edit = Edit(location.line, location.column, None, "")
    elif not written.script and not written.before.strip() and written.after.strip()[:1] in ("", "#"):
        edit = Edit(location.line, 1, whole + "\n", "")  # the entry's line, its comment with it
    elif written.script and not written.before.strip() and written.after.strip() == "\\":
        edit = Edit(location.line, 1, whole + "\n", "")  # a continued line of its own
    elif written.script and not written.before.strip() and not written.after.strip():
        # The command's last word: its line is left empty, which ends the command the line before continues
        edit = Edit(location.line, 1, whole, "")
    elif written.script and written.before[-1:].isspace():  # among other words: with the blank before it
        blank = len(written.before) - len(written.before.rstrip())
        edit = Edit(location.line, location.column - blank, written.before[-blank:] + written.text, "")
    else:
        edit = Edit(location.line, location.column, None, "")
    return edit, title
