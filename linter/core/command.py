"""The run model: one trainer command (config, ordered overrides, environment, versions) as a source read it.

Shared by the linter (sources build commands, the engine resolves them) and any program that launches them. It
imports nothing of the project but the rest of `core`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .diagnostics import Location
from .gates import GateNeeds
from .model import Accelerator, ModelShape
from .overrides import OverrideSyntaxError, ParsedOverride, format_override, parse_override
from .redaction import is_secret_name, redact_assignments
from .written import Written

# OmegaConf's mandatory-value marker (`???`): a value a recipe leaves to be set before a launch (RF014)
MUST_BE_SET = "???"


class DeviceSignal(NamedTuple):
    """Something a run script writes that only makes sense on one kind of device (`core.device` ranks them)."""

    kind: str  # "npu" | "gpu"
    evidence: str  # what says so, for messages: "it sources `/usr/local/Ascend/ascend-toolkit/set_env.sh` (line 9)"


class LocatedOverride(NamedTuple):
    """One override as a source read it: the parsed form (None on a syntax error) and where it was written."""

    location: Location
    key_text: str  # the key as written, prefix included: what a fix replaces
    parsed: ParsedOverride | None
    syntax_error: str | None = None
    # What a run script's value holds that cannot be evaluated statically (`$HOME (never set in the script)`,
    # `$(date +%s)`), each as the construct written then the reason in parentheses; the parsed value is then an
    # interpolation that stands for it. Empty when the value is known.
    unresolved: tuple[str, ...] = ()
    # The conditional regions of a run script that the override is written in, outermost first, each named by its
    # start byte (a `case` item, an `if`'s `then` part, an `elif`/`else` clause, the right of `&&`/`||`); empty
    # for one written unconditionally and for every recipe override.
    branches: tuple[int, ...] = ()
    # For a mapping value (a recipe's nested `key: {a: {b: 1}}`), where each key inside it was written, by its
    # dotted path below the key (`a`, `a.b`); a key not listed is located at the override itself.
    inner_locations: tuple[tuple[str, Location], ...] = ()
    # For one key of a mapping value that Hydra merges into the config key by key: the key text of the override
    # it was written in. Its fixes are not mechanical (the dotted key is not what the file says there).
    merged_from: str | None = None
    # The override as its file writes it on the line where it starts, where a fix can rewrite it there; None where
    # it is not written as such (a value from a variable, a value on later lines, the command line's `--override`).
    written: Written | None = None


class Stack(NamedTuple):
    """Versions of the libraries that receive verl's pass-through dicts."""

    megatron_core: str | None  # None in `ReadOptions` when nothing names one: each source pairs it with its verl
    mbridge: str
    mindspeed: str | None = None  # a recipe's `stack.mindspeed`: the run is on Ascend NPU, with MindSpeed
    megatron_pin: str | None = None  # a Megatron-LM commit or branch a run script installs, not a release
    # The repository whose own code runs with the verl (its registrations and reads count: `verl_source.
    # repository_code`, read only when a rule asks), and the verl package inside it that is not its own code
    repository: str | None = None
    verl_package: str | None = None
    # The verl facts its source tree's own code decides (`schemas/facts.json` `code`): (name, holds); () for a
    # committed snapshot, whose version decides
    code_facts: tuple[tuple[str, bool], ...] = ()


class EnvVar(NamedTuple):
    """An environment variable the run sets (recipe `env`, then the variant's), and where it was written."""

    name: str
    value: str
    location: Location


_PLACEHOLDER = re.compile(r"<[A-Za-z][\w./ -]{0,80}>")


def locate_override(text: str, location: Location, key_text: str | None = None) -> LocatedOverride:
    """One `key=value` argument, parsed with Hydra's grammar; a syntax error is kept with its message."""
    key_text = text.split("=", 1)[0] if key_text is None else key_text
    try:
        return LocatedOverride(location, key_text, parse_override(text))
    except OverrideSyntaxError as exc:
        # Hydra's message quotes the text where it stopped: part of the value, which a secret's must not show
        why = "not a valid Hydra override" if is_secret_name(key_text) else exc.message
        placeholder = _PLACEHOLDER.search(text.partition("=")[2])
        if placeholder and not is_secret_name(key_text):  # `<path_to_ckpt>`: a template's blank, left unfilled
            why = f"`{placeholder[0]}` is a placeholder to fill in before a run: Hydra cannot read `<` ({why})"
        return LocatedOverride(location, key_text, None, f"`{redact_assignments(text)}`: {why}")


class Command(NamedTuple):
    """One trainer invocation to check: one variant of a recipe or script."""

    config_name: str
    overrides: tuple[LocatedOverride, ...]
    stack: Stack
    variant: str | None = None
    origin: Location | None = None  # where findings not tied to one override are reported
    model: ModelShape | None = None  # None: unknown architecture (model-aware rules are skipped)
    accelerator: Accelerator | None = None
    env: tuple[EnvVar, ...] = ()
    # Site limits verl's config has no place for, as sorted (name, value) pairs: checkpoint write bandwidth, host
    # RAM, disk budget (`RESOURCE_KEYS`); the estimator assumes documented defaults for the ones not given.
    resources: tuple[tuple[str, float], ...] = ()
    entry_module: str | None = None  # the module run with `python -m` (verl.trainer.main_ppo); None: not stated
    # What a run script's variant does that names a device (the Ascend set-up it sources or installs, the MindSpeed
    # fields it sets, its file name), in `core.device`'s order; and the device each conditional region of the script
    # is for (`if [ "$DEVICE" == npu ]`), by the region's start byte as in `LocatedOverride.branches`.
    device_signals: tuple[DeviceSignal, ...] = ()
    device_regions: tuple[tuple[int, DeviceSignal], ...] = ()
    gates: tuple[GateNeeds, ...] = ()  # a recipe's `gates:`, as far as a run must serve them (RF013)
    # Hydra's `--config-path` as the trainer call writes it (a directory outside the entry module's own config);
    # None: the entry module's `@hydra.main` directory
    config_path: str | None = None
    # A run script's words before the entry module, as written: a launcher's (`uv run --frozen`), the interpreter
    # (`python3`), its options; and the values the loops around the trainer call have in this round (`(("lr",
    # "1e-6"),)`), which tell the rounds' commands apart. Empty for a recipe.
    launch: tuple[str, ...] = ()
    loop: tuple[tuple[str, str], ...] = ()

    def hydra_overrides(self) -> list[str]:
        """The command's overrides as Hydra command-line arguments that Hydra reads back as exactly these values.
        Strings holding `${...}` stay interpolations, as they would in a Hydra YAML file."""
        return [
            format_override(lo.parsed.op, lo.parsed.key, lo.parsed.value, lo.parsed.package, allow_interpolation=True)
            for lo in self.overrides
            if lo.parsed is not None
        ]


RESOURCE_KEYS = ("write_gib_per_s", "host_ram_gib", "disk_budget_gib")


def site_limits(mapping: dict) -> tuple[tuple[str, float], ...]:
    """`Command.resources` from a mapping of site limits."""
    return tuple(sorted((k, mapping[k]) for k in RESOURCE_KEYS if mapping.get(k) is not None))


def merge_overrides(base, extra) -> tuple[LocatedOverride, ...]:
    """A variant's (or the command line's) override of a base key replaces it; new keys are appended."""

    def ident(lo: LocatedOverride):
        return (lo.parsed.key, lo.parsed.package) if lo.parsed else lo.key_text

    replaced = {ident(lo) for lo in extra}
    return tuple([lo for lo in base if ident(lo) not in replaced] + list(extra))
