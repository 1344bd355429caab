"""verl-style bash run scripts -> located overrides, one command per variant, evaluated statically.

A static interpreter evaluates bash without running it: `interpreter` the statements, `conditions` the tests,
`expansion` the words and arithmetic, on the tree `parse` reads (with its workarounds for tree-sitter-bash);
`markers` stand for what cannot be evaluated, and `words` builds the fields of one word. `trainer_call` recognises
the verl trainer calls among the commands it evaluates, and `script` enumerates the variants and assembles each
call into a `Command`; `syntax` says whether bash itself rejects the script (SH002), which tree-sitter's errors do
not. Imports flow script -> trainer_call -> interpreter -> conditions -> expansion -> parse | markers -> words, and
script -> syntax.
"""

from .script import UNRESOLVED_VALUE, ScriptRead, read_script

__all__ = ["UNRESOLVED_VALUE", "ScriptRead", "read_script"]
