"""verl-style bash run scripts -> located overrides, one command per variant, evaluated statically.

`interpreter` evaluates bash without running it (`words` builds the fields of one word), `trainer_call`
recognises the verl trainer calls among the commands it evaluates, and `script` enumerates the variants and
assembles each call into a `Command`. Imports flow script -> trainer_call -> interpreter -> words.
"""

from .script import UNRESOLVED_VALUE, ScriptRead, read_script

__all__ = ["UNRESOLVED_VALUE", "ScriptRead", "read_script"]
