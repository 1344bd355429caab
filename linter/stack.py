"""The stack one file is checked against, decided once per file by `resolve_stack`, with why.

The readers (`sources.recipe`, `sources.bash.script`) call it once, as soon as they know what the file declares
(a recipe's `verl:` and `stack:`; where a script's trainer imports verl from, and the Megatron-LM it installs), and
hand its answer to every command they read; the reports show its `why` (text, JSON, SARIF). For each library the
first of these that applies:

- verl: `verl_source.choose`'s order (the command line, the recipe's `verl:`, a source tree where the trainer
  imports verl from or the repository's own, the installed verl, a pin, `options.default_verl`);
- megatron-core: the recipe's `stack.megatron_core`, the command line's or `[tool.sapo-lint] megatron-core-version`,
  else the release that verl runs with (`schemas/facts.json`, `verl` fact `megatron-core`);
- mbridge: the recipe's `stack.mbridge`, else the setting's, else what `pip install mbridge` gives;
- MindSpeed: the recipe's `stack.mindspeed` (the run is on Ascend NPU); the Megatron-LM commit or branch a script
  installs, as the script names it;
- for a file in a repository (the one holding its verl source tree, else its git repository), the repository whose
  own code adds to verl (`repository_code.repository_code`, read only when a rule asks): the loss modes and advantage
  estimators it registers, which SL005 accepts, and the key names it reads, which SL003 does not call unread.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

from .core.command import Stack
from .repository_code import repository_root
from .schema import DEFAULT_MBRIDGE, fact, snapshot_version
from .verl_source import SOURCE_TREE, VerlChoice, choose, tree_code_facts


class StackOptions(Protocol):
    """What the command line and `[tool.sapo-lint]` say for every file (`sources.options.ReadOptions`)."""

    default_verl: str  # the verl when nothing names or holds one: the newest committed release
    stack: Stack  # the setting's megatron-core (None: paired with verl) and mbridge
    cli_verl: str | None
    cli_verl_named: str | None  # `--verl-version` as written
    verl_pin: str | None  # `[tool.sapo-lint] verl-version`


class Declared(NamedTuple):
    """What the file itself says about its stack."""

    verl: str | None = None  # a recipe's `verl:`, as written
    megatron_core: str | None = None  # a recipe's `stack.megatron_core`
    mbridge: str | None = None
    mindspeed: str | None = None
    megatron_pin: str | None = None  # a Megatron-LM commit or branch a script installs
    roots: tuple[Path, ...] | None = None  # where the script's trainer imports verl from (None: a recipe)
    text: str | None = None  # the script's text, for `pip install verl==X`


class ResolvedStack(NamedTuple):
    """The verl and the libraries one file's commands are checked against, and why each."""

    verl: VerlChoice
    libraries: Stack
    why: tuple[str, ...]  # one line per library: `verl 0.5.0.dev from ./verl (source tree, snapshot cached)`

    @property
    def snapshot(self) -> str:
        return self.verl.snapshot

    def describe(self) -> str:
        """The text report's note: `verl 0.10.0.dev from ./verl (source tree, snapshot cached) and megatron-core
        0.18.0` (the JSON and SARIF give every `why`)."""
        return f"{self.why[0]} and megatron-core {self.libraries.megatron_core}"

    def as_dict(self) -> dict:
        """The JSON's and SARIF's per-file `verl` object: the verl's own fields, the libraries and `why`."""
        return {
            **self.verl.as_dict(),
            "megatron_core": self.libraries.megatron_core,
            "mbridge": self.libraries.mbridge,
            "why": list(self.why),
        }


def resolve_stack(path: str, declared: Declared, options: StackOptions) -> ResolvedStack:
    """The stack `path` is checked against (the module docstring's order)."""
    cli_verl = options.cli_verl_named or options.cli_verl
    verl = choose(path, cli_verl, options.verl_pin, declared.roots, declared.text, declared.verl, options.default_verl)
    version = snapshot_version(verl.snapshot) if verl.snapshot else verl.version
    megatron_core, core_why = _first(
        (declared.megatron_core, "the recipe's `stack.megatron_core`"),
        (options.stack.megatron_core, "`--megatron-core-version` or `[tool.sapo-lint] megatron-core-version`"),
        (fact("verl", "megatron-core", version), f"the release verl {version} runs with, schemas/facts.json"),
    )
    mbridge, bridge_why = _first(
        (declared.mbridge, "the recipe's `stack.mbridge`"),
        (options.stack.mbridge, "`[tool.sapo-lint] mbridge-version`"),
        (DEFAULT_MBRIDGE, "what `pip install mbridge` gives"),
    )
    why = [verl.describe(), f"megatron-core {megatron_core} ({core_why})", f"mbridge {mbridge} ({bridge_why})"]
    if declared.mindspeed:
        why.append(f"MindSpeed {declared.mindspeed} (the recipe's `stack.mindspeed`)")
    if declared.megatron_pin:
        why.append(f"Megatron-LM {declared.megatron_pin} (installed by the script)")
    root = repository_root(path, verl) if verl.unbuilt is None else None
    package = verl.package_dir if verl.source == SOURCE_TREE else None
    if root is not None:
        why.append(f"the code of the repository at {root} (the loss modes it registers, the keys it reads)")
    built = verl.cached is not None and verl.unbuilt is None and verl.package_dir is not None
    code_facts = tree_code_facts(verl.snapshot, Path(verl.package_dir)) if built else ()
    libraries = Stack(
        megatron_core, mbridge, declared.mindspeed, declared.megatron_pin, root and str(root), package, code_facts
    )
    return ResolvedStack(verl, libraries, tuple(why))


def _first(*candidates: tuple[str | None, str]) -> tuple[str, str]:
    return next((str(value), why) for value, why in candidates if value is not None)


__all__ = ["Declared", "ResolvedStack", "StackOptions", "resolve_stack"]
