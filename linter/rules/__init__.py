"""Every rule, by code. `MODULES` is the code table (ruff's `codes.rs` habit): from a code, the module under
`linter/rules/` that holds its check, docs and bad/good examples. A module registers its rules when imported;
`load_rules` imports only the modules of the codes asked for, so `--select SL` never loads the estimator.

Family modules hold rules that a source reports about a whole file: `rf_recipe` (recipe files), `nm_naming`
(run-script names), `sh_script` and `sh_shellcheck` (shell scripts; shellcheck findings pass through as
SH<SC number>, documented by SH100). A test keeps this table and the modules in step; codes are a stable
contract: never reuse or renumber one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from importlib import import_module
from typing import NamedTuple

from ..core.diagnostics import Diagnostic
from ..core.problems import ReadProblem
from ..rulekit import registry
from ..rulekit.registry import Rule

MODULES: dict[str, str] = {
    "BS001": "bs001_batch_divisibility",
    "BS002": "bs002_mini_batch_divisibility",
    "BS003": "bs003_micro_batch_keys",
    "BS004": "bs004_mini_batch_exceeds_train",
    "BS005": "bs005_use_mbridge_required",
    "BS006": "bs006_dynamic_bsz_actor_rollout",
    "BS007": "bs007_rollout_expert_parallel",
    "BS008": "bs008_rollout_pipeline_parallel",
    "BS009": "bs009_rollout_world_size",
    "BS010": "bs010_dynamic_bsz_token_budget",
    "BS011": "bs011_rollout_moe_tensor_parallel",
    "CK001": "ck001_save_exceeds_timeout",
    "CK002": "ck002_checkpoint_disk_peak",
    "CK003": "ck003_broken_save_mode",
    "MEM001": "mem001_device_memory",
    "MEM002": "mem002_host_memory",
    "NM001": "nm_naming",
    "NM002": "nm_naming",
    "NM003": "nm_naming",
    "OP001": "op001_cpu_offload_fraction_zero",
    "OP002": "op002_precision_aware_prerequisites",
    "OP003": "op003_optimizer_offload_alone",
    "PF001": "pf001_single_worker_prompt_filter",
    "PF002": "pf002_partial_dynamic_bsz",
    "PF003": "pf003_static_micro_batch_one",
    "PF004": "pf004_hccl_env_range",
    "RC001": "rc001_recompute_granularity_value",
    "RC002": "rc002_recompute_method_value",
    "RC003": "rc003_recompute_full_needs_method",
    "RC004": "rc004_recompute_full_needs_num_layers",
    "RC005": "rc005_recompute_selective_num_layers",
    "RC006": "rc006_recompute_modules_invalid",
    "RC007": "rc007_recompute_cpu_offloading",
    "RC008": "rc008_recompute_distributed_activations_sp",
    "RC009": "rc009_recompute_moe_layer_full",
    "RC010": "rc010_recompute_moe_a2a_overlap",
    "RF001": "rf_recipe",
    "RF002": "rf_recipe",
    "RF003": "rf_recipe",
    "RF004": "rf_recipe",
    "RF005": "rf_recipe",
    "RF006": "rf_recipe",
    "RF007": "rf_recipe",
    "RF008": "rf_recipe",
    "RF009": "rf_recipe",
    "RF010": "rf_recipe",
    "RF011": "rf_recipe",
    "RF012": "rf_recipe",
    "RF013": "rf013_gate_cannot_be_judged",
    "RF014": "rf014_value_must_be_set",
    "RF015": "rf015_unknown_entry_module",
    "SH001": "sh_script",
    "SH002": "sh_script",
    "SH003": "sh_script",
    "SH004": "sh_script",
    "SH005": "sh_script",
    "SH006": "sh_script",
    "SH007": "sh_script",
    "SH100": "sh_shellcheck",
    "SL001": "sl001_unknown_key",
    "SL002": "sl002_append_existing",
    "SL003": "sl003_unread_key",
    "SL004": "sl004_type_mismatch",
    "SL005": "sl005_invalid_choice",
    "SL006": "sl006_delete_missing",
    "SL007": "sl007_passthrough_unknown_field",
    "SL008": "sl008_duplicate_override",
    "SL009": "sl009_override_syntax",
    "SL010": "sl010_breaks_inherited_node",
    "SL011": "sl011_unchecked_config_group",
    "SL012": "sl012_config_group_override",
    "SP001": "sp001_sapo_tau_nested",
    "SP002": "sp002_sapo_tau_range",
    "SP003": "sp003_sapo_tau_order",
    "SP004": "sp004_sapo_tau_ignored",
    "SP005": "sp005_sapo_clip_ignored",
    "TP001": "tp001_world_tp_pp_cp",
    "TP002": "tp002_world_ep_etp_pp",
    "TP003": "tp003_heads_tp",
    "TP004": "tp004_query_groups_tp",
    "TP005": "tp005_experts_ep",
    "TP006": "tp006_ep_needs_moe",
    "TP007": "tp007_layers_pp",
    "TP008": "tp008_vpp_needs_pp",
    "TP009": "tp009_ffn_tp",
    "TP010": "tp010_sequence_parallel_tp",
    "TP011": "tp011_rollout_tp_heads",
    "TP012": "tp012_rollout_tp_devices",
    "TP013": "tp013_context_parallel_length",
    "TP014": "tp014_size_below_one",
    "TP015": "tp015_hybrid_engine_separated_rollout",
    "TP016": "tp016_ulysses_sequence_parallel",
}


class Family(NamedTuple):
    prefix: str  # the codes' letters: `SL` for SL001-SL012
    runs_on: str
    severity: str
    in_plan: bool = False
    # Its rules' findings at one setting (location and variant) have one cause, the value written there: reported
    # as one finding (`one_finding_per_cause`). A TP of 3 for a 32-head model breaks the world size, the heads, the
    # query groups and the vocabulary: one value to change, one finding.
    one_cause_per_setting: bool = False


# One record per family of codes: on which inputs and devices its rules run, and which severity they use when (the
# table atop docs/rules.md; the device of a variant and how the model is found are one decision each,
# docs/run-scripts.md, and each rule's section says the rest); `in_plan`: `sapo-lint explain` shows its findings
# with the derived plan. tests/test_rule_table.py checks that every code's prefix has one.
FAMILIES = (
    Family(
        "SL",
        "every recipe and every trainer command of a run script, both devices",
        "error where Hydra or verl refuses the command; SL004 an error for a declared type or a key verl reads as "
        "its default's number or flag, else a warning; SL007 against megatron-core's config on GPU and, on NPU, "
        "also Megatron-LM's argparse flags and MindSpeed's (a warning naming the pin for a field only a pinned "
        "Megatron-LM commit has); SL008 and SL010 warnings; SL011 info",
    ),
    Family(
        "SP",
        "every command with SAPO settings, both devices",
        "SP001, SP002 errors; SP003, SP004 warnings; SP005 info",
        one_cause_per_setting=True,
    ),
    Family(
        "TP",
        "Megatron commands (PPO roles and an SFT trainer's engine), both devices; TP003-TP013 only when the model is "
        "found; TP016 an FSDP SFT trainer's Ulysses size",
        "errors, at the parallel size that breaks the invariant, the world-size lines as related locations",
        one_cause_per_setting=True,
    ),
    Family(
        "RC",
        "Megatron commands, both devices",
        "errors, at the option whose own check fails in megatron-core",
        one_cause_per_setting=True,
    ),
    Family(
        "BS",
        "every trainer command, both devices",
        "errors: verl's and its configs' start-up checks",
        one_cause_per_setting=True,
    ),
    Family(
        "MEM",
        "Megatron commands (PPO, or an SFT trainer's one model) whose model is found, on the accelerator named for "
        "the variant's device, else the one assumed (Ascend 910B3 for NPU, H100 for GPU)",
        "error over the accelerator's memory (on an assumed one, only when no accelerator of that kind has "
        "enough); warning above 90%, or against an assumed host RAM",
        in_plan=True,
    ),
    Family(
        "CK",
        "Megatron commands (PPO, or an SFT trainer) whose model is found; the HCCL or NCCL timeout by device",
        "CK001, CK003 errors; CK002 an error against a stated disk budget, a warning against the assumed one",
        in_plan=True,
    ),
    Family(
        "NM",
        "run scripts of a repository that runs verl's naming check (its `check-example-naming` hook, on the hook's "
        "`--root`), or under `[tool.sapo-lint] naming-roots`",
        "errors, as verl's own naming check",
    ),
    Family(
        "OP",
        "Megatron optimizer settings, both devices",
        "OP002 error; OP001 warning; OP003 info",
        one_cause_per_setting=True,
    ),
    Family(
        "PF", "every trainer command; PF004 only Ascend's HCCL variables", "warnings and info: the run works, slower"
    ),
    Family(
        "SH",
        "run scripts",
        "SH002 an error only where `bash -n` rejects the script, and the rest is still checked; SH005 error; "
        "SH001 warning; SH003, SH004 info; SH100 (shellcheck) an error only where the run breaks (SC1017, SC1101, "
        "SC2276, SC2283, and SC2154 under `set -u` before verl starts), else at most a warning",
    ),
    Family(
        "RF",
        "recipes and the reading of every file",
        "errors for a file that cannot be checked or run as written (RF014: a `???` left unset; RF015: an entry "
        "module the linted verl does not have); RF005 info when the model is not found; RF008-RF010, RF013 "
        "warnings",
    ),
)


def load_rules(enabled: Callable[[str], bool] = lambda code: True) -> list[Rule]:
    """The rules whose codes `enabled` accepts, in code order, importing only their modules."""
    codes = [code for code in sorted(MODULES) if enabled(code)]
    for module in dict.fromkeys(MODULES[code] for code in codes):
        import_module(f"{__name__}.{module}")
    return [registry.RULES[code] for code in codes]


# The family modules that turn what the sources find (`core.problems` records) into their rules' findings.
PROBLEM_READERS = ("rf_recipe", "sh_script", "sh_shellcheck")


def findings(problems: Iterable[ReadProblem]) -> list[Diagnostic]:
    """The findings the sources' problems are reported as, each by the rule it belongs to (`@registry.reads`)."""
    for module in PROBLEM_READERS:
        import_module(f"{__name__}.{module}")
    return [registry.finding_of(p) for p in problems]


def without_superseded(found: list[Diagnostic]) -> list[Diagnostic]:
    """`found` less each finding that a rule's `supersedes` (its `@rule` declaration) replaces at the same place.
    Only rules that ran replace any: with SP001 ignored, SL001 still reports the key."""
    replaced = {
        (code, d.location) for d in found if d.code in registry.RULES for code in registry.RULES[d.code].supersedes
    }
    return [d for d in found if (d.code, d.location) not in replaced] if replaced else found


_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def one_finding_per_cause(found: list[Diagnostic]) -> list[Diagnostic]:
    """`found` (sorted, filtered as shown) with the findings of a one-cause family (`Family.one_cause_per_setting`)
    at the same setting and variant reported as one: the most severe, then the first by code, carries the others
    (`Diagnostic.also`) and the union of their related locations. Applied last, after noqa, `select` and `ignore`:
    a code the user turned off is not reported inside another, and the next one leads where the first is off."""
    grouping = {family.prefix for family in FAMILIES if family.one_cause_per_setting}
    groups: dict[tuple, list[Diagnostic]] = {}
    seen: dict[tuple, int] = {}  # (place, code) -> how many findings of the code were met there before
    order: list[tuple | int] = []
    for index, d in enumerate(found):
        prefix = d.code.rstrip("0123456789")
        if prefix not in grouping:
            order.append(index)
            continue
        # the nth finding of a code here joins the nth group: one rule failing twice at a place (the actor's and
        # the rollout's missing micro-batch) names two things to change, not one
        place = (prefix, d.location, d.variant)
        occurrence = seen[place, d.code] = seen.get((place, d.code), -1) + 1
        key = (*place, occurrence)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(d)
    out = []
    for entry in order:
        if isinstance(entry, int):
            out.append(found[entry])
            continue
        lead, *others = sorted(groups[entry], key=lambda d: (_SEVERITY_RANK[d.severity.value], d.code))
        if not others:
            out.append(lead)
            continue
        related = tuple(sorted({r for d in (lead, *others) for r in d.related if r != lead.location}))
        out.append(lead._replace(related=related, also=tuple(others)))
    return out


# shellcheck's findings pass through as SH<SC number>, SC1xxx (parser), SC2xxx (checks) and SC3xxx (sh
# portability); one rule documents them all.
SHELLCHECK_CODE = re.compile(r"SH[123]\d{3}")
SHELLCHECK_RULE = "SH100"


def documenting_rule(code: str) -> Rule | None:
    """The rule that documents `code`: its own, or for a shellcheck finding (SH<SC number>) the one of all of them."""
    documented = code if code in MODULES else SHELLCHECK_RULE if SHELLCHECK_CODE.fullmatch(code) else None
    return load_rules(lambda c: c == documented)[0] if documented else None


def all_rules() -> dict[str, Rule]:
    """Every rule, by code."""
    return {r.code: r for r in load_rules()}


__all__ = [
    "FAMILIES",
    "Family",
    "MODULES",
    "SHELLCHECK_CODE",
    "Rule",
    "all_rules",
    "one_finding_per_cause",
    "documenting_rule",
    "load_rules",
]
