"""The doctor's checks: `doctor_report` runs each `_check_*` over the injected facts and builds the `Report`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sapo_toolkit.linter.core.words import counted

from ..device import DeviceFacts, DeviceProbe, detect_device
from ..versions import (
    PACKAGES,
    VersionError,
    load_compatibility,
    parse_version,
    same_release,
    version_tuple,
    vllm_patch_variant,
)
from .facts import (
    ADVISORY,
    BLOCKING,
    CANN_DEFAULT_HOME,
    CANN_VARIABLES,
    OK,
    SEVERITIES,
    CannFacts,
    Finding,
    PatchFacts,
    RecipeFacts,
    Report,
    VariantFacts,
    _join,
    _read_text,
    read_cann,
)

# The module each distribution is imported as: a package installed without metadata (PYTHONPATH, a copied tree --
# common for Megatron-LM and MindSpeed on Ascend) is still found, version unknown.
IMPORT_NAMES = {
    "torch": "torch",
    "torch_npu": "torch_npu",
    "vllm": "vllm",
    "vllm-ascend": "vllm_ascend",
    "megatron-core": "megatron",
    "mindspeed": "mindspeed",
    "mbridge": "mbridge",
    "verl": "verl",
    "ray": "ray",
}
RESOURCE_CHECK_SOURCE = (
    "verl 0.9.1 verl/single_controller/ray/base.py _check_resource_available (ValueError: "
    "'Total available GPUs ... is less than total desired GPUs ...'); the resource pool is "
    "[n_gpus_per_node] * nnodes"
)


# ------------------------------------------------------------------------------------------------ helpers


def _parse(text: str | None):
    try:
        return None if text is None else parse_version(text)
    except VersionError:
        return None


def _release_ok(text: str | None) -> bool:
    return _parse(text) is not None


def _gate_applies(gate: dict, vllm: str) -> tuple[str, ...]:
    """The names of the patches a verl gate applies to `vllm`, compared as verl compares (full PEP 440 versions,
    closed or half-open intervals as written in verl)."""
    v = _parse(vllm)
    if v is None:
        return ()
    applied = []
    for patch in gate.get("patches", ()):
        for iv in patch["intervals"]:
            low, high = parse_version(iv["min"]), parse_version(iv["max"])
            if low <= v and (v <= high if iv["max_inclusive"] else v < high):
                applied.append(f"{patch['name']} [{patch['variant']}]")
                break
    return tuple(applied)


def _find_verl(rows: list[dict], verl: str | None) -> dict | None:
    v = _parse(verl)
    if v is None:
        return None
    for row in rows:
        key = row["verl"].split(" ")[0]
        r = _parse(key)
        if r is not None and r.public == v.public:
            return row
    return None


def _find_vllm_ascend_row(rows: list[dict], installed: str) -> dict | None:
    v = _parse(installed)
    if v is None:
        return None
    for row in rows:  # exact public version first, then the same release and pre-release (dev/post/local ignored)
        if parse_version(row["vllm_ascend"]).public == v.public:
            return row
    for row in rows:
        r = parse_version(row["vllm_ascend"])
        if r.release == v.release and r.pre == v.pre:
            return row
    return None


# ------------------------------------------------------------------------------------------------ the report


def doctor_report(
    recipe: RecipeFacts | None,
    env: Mapping[str, str],
    probe: DeviceProbe,
    versions: Mapping[str, str | None],
    *,
    requested: str | None = None,
    mbridge_params: frozenset[str] | None = None,
    read_text: Callable[[str], str | None] | None = None,
    machine: str | None = None,
) -> Report:
    """Every check of the doctor over injected facts: `versions` (name -> installed version or None, as
    `versions.installed_versions()` gives), `env` (the environment a run would get), `probe` (devices and module
    look-ups), `mbridge_params` (`versions.mbridge_save_weights_params()`; None: not known), `read_text` (reads
    the CANN info file; None for a missing file) and `machine` (`platform.machine()`)."""
    import platform

    read_text = read_text or _read_text
    machine = machine or platform.machine()
    table = load_compatibility()
    facts = detect_device(requested, env, probe)
    findings: list[Finding] = []
    add = findings.append

    # -- what is installed (metadata, else importable without metadata)
    present = {}
    packages = []
    for name in PACKAGES:
        version = versions.get(name)
        here = version is not None or probe.module_findable(IMPORT_NAMES.get(name, name.replace("-", "_")))
        present[name] = here
        packages.append((name, version, here))
    for name, version, _ in packages:
        if version is not None and not _release_ok(version):
            add(
                Finding(
                    "versions",
                    ADVISORY,
                    f"{name} reports version {version!r}, which is not a PEP 440 "
                    "version: its compatibility is not checked",
                )
            )
    bare = [n for n, v, here in packages if here and v is None]
    if bare:
        add(
            Finding(
                "versions",
                ADVISORY,
                f"installed without distribution metadata (importable, version unknown): "
                f"{_join(bare)}; their compatibility is not checked",
            )
        )

    # -- the recipe's variants for this device
    relevant: tuple[VariantFacts, ...] = ()
    if recipe is not None:
        labelled = [v for v in recipe.variants if v.device is not None]
        relevant = tuple(v for v in recipe.variants if facts.kind is None or v.device in (None, facts.kind))
        if facts.kind is not None and labelled and not relevant:
            kinds = sorted({v.device for v in labelled})
            add(
                Finding(
                    "devices",
                    BLOCKING,
                    f"the recipe has no variant for {facts.kind} (its variants are for "
                    f"{_join(kinds)}); the device here: {facts.how}",
                )
            )
        if not relevant:
            relevant = recipe.variants
    npu = facts.kind == "npu" or present["torch_npu"]
    uses_vllm = any(v.rollout == "vllm" for v in relevant) if recipe is not None else present["vllm"]
    uses_megatron = any(v.model_engine == "megatron" for v in relevant)

    # -- devices
    _check_devices(recipe, relevant, facts, add)

    # -- packages the run needs
    needed = ["torch", "ray", "verl"]
    if recipe is not None:
        if uses_vllm:
            needed.append("vllm")
        if uses_megatron:
            needed.append("megatron-core")
    if facts.kind == "npu":
        needed.append("torch_npu")
        if uses_vllm and (recipe is not None or present["vllm"]):
            needed.append("vllm-ascend")
        if uses_megatron:
            needed.append("mindspeed")
    missing = [n for n in dict.fromkeys(needed) if not present[n]]
    if missing:
        if recipe is not None:
            src = table["verl_megatron_npu"]["source"] if "mindspeed" in missing else None
            add(Finding("packages", BLOCKING, f"not installed, and the recipe needs them here: {_join(missing)}", src))
        else:
            add(Finding("packages", ADVISORY, f"not installed: {_join(missing)} (needed to train here)"))
    elif recipe is not None:
        add(Finding("packages", OK, f"installed: {_join(dict.fromkeys(needed))}"))

    # -- pairings
    _check_torch_npu(versions, table, add)
    _check_vllm_ascend(versions, table, add)
    cann = None
    if npu:
        cann = read_cann(env, read_text, machine)
        _check_cann(cann, facts, versions, table, add)
    _check_mindspeed(versions, table, add)
    _check_verl_vllm(versions, table, facts, uses_vllm, add)
    patch = _patch_facts(versions, table, npu)
    _check_patch(patch, table, uses_vllm, add)
    _check_mbridge(mbridge_params, versions, relevant, table, add)
    if recipe is not None:
        _check_recipe_stack(recipe, versions, add)

    order = {s: i for i, s in enumerate(SEVERITIES)}
    ordered = tuple(sorted(findings, key=lambda f: order[f.severity]))
    return Report(requested or "auto", facts, tuple(packages), cann, patch, recipe, mbridge_params, ordered)


def _check_devices(recipe, relevant, facts: DeviceFacts, add) -> None:
    what = f"{counted(facts.count, (facts.kind or 'accelerator') + ' device')} visible ({facts.how})"
    if recipe is None:
        if facts.kind is None or facts.count == 0:
            add(
                Finding(
                    "devices",
                    ADVISORY,
                    f"no accelerator device visible: training cannot run on this machine "
                    f"(linting, planning and --dry-run can) -- {facts.how}",
                )
            )
        else:
            add(Finding("devices", OK, what))
        return
    wanted = sorted({v.n_gpus_per_node for v in relevant if v.n_gpus_per_node is not None})
    if not wanted:
        add(
            Finding(
                "devices",
                ADVISORY,
                f"trainer.n_gpus_per_node is not a number in the recipe: devices not compared; {what}",
            )
        )
        return
    need = wanted[-1]
    nodes = sorted({v.nnodes for v in relevant if v.nnodes is not None})
    per = f"trainer.n_gpus_per_node={need}" + (
        f" (variants ask {', '.join(map(str, wanted))})" if len(wanted) > 1 else ""
    )
    other = (
        f"; the other {counted(nodes[-1] - 1, 'node')} {'is' if nodes[-1] == 2 else 'are'} not checked from here"
        if nodes and nodes[-1] > 1
        else ""
    )
    if facts.count < need:
        add(
            Finding(
                "devices",
                BLOCKING,
                f"the recipe needs {need} devices on every node ({per}); {what}{other}",
                RESOURCE_CHECK_SOURCE,
            )
        )
    elif facts.count > need:
        add(Finding("devices", ADVISORY, f"{what}; the recipe uses {need} per node ({per}): the rest stay idle{other}"))
    else:
        add(Finding("devices", OK, f"{what}, as the recipe needs ({per}){other}"))


def _check_torch_npu(versions, table, add) -> None:
    torch, torch_npu = versions.get("torch"), versions.get("torch_npu")
    if not (_release_ok(torch) and _release_ok(torch_npu)):
        return
    src = table["torch_npu"]["source"]
    if same_release(torch, torch_npu):
        add(Finding("torch_npu", OK, f"torch_npu {torch_npu} is built for torch {torch}", src))
    else:
        add(
            Finding(
                "torch_npu",
                BLOCKING,
                f"torch_npu {torch_npu} is built for torch "
                f"{'.'.join(map(str, version_tuple(torch_npu)[:3]))}, but torch {torch} "
                "is installed",
                src,
            )
        )


def _check_vllm_ascend(versions, table, add) -> None:
    installed = versions.get("vllm-ascend")
    if not _release_ok(installed):
        return
    section = table["vllm_ascend"]
    row = _find_vllm_ascend_row(section["rows"], installed)
    src = section["source"]
    if row is None:
        add(
            Finding(
                "vllm-ascend",
                ADVISORY,
                f"vllm-ascend {installed} is not in the compatibility table: its vLLM, "
                "torch, torch_npu and CANN pairing is not checked",
                src,
            )
        )
        return
    label = f"vllm-ascend {installed} (table row {row['vllm_ascend']})"
    if row.get("uncertain"):
        label += f" [uncertain: {row['uncertain']}]"
    problems, notes = [], []
    vllm = versions.get("vllm")
    if _release_ok(vllm) and not any(version_tuple(vllm) == version_tuple(v) for v in row["vllm"]):
        problems.append(f"vllm {vllm} (the row pairs vllm {_join(row['vllm'])})")
    torch = versions.get("torch")
    if _release_ok(torch) and not same_release(torch, row["torch"]):
        problems.append(f"torch {torch} (the row pairs torch {row['torch']})")
    torch_npu = versions.get("torch_npu")
    if _release_ok(torch_npu):
        if not same_release(torch_npu, row["torch_npu"]):
            problems.append(f"torch_npu {torch_npu} (the row pairs torch_npu {row['torch_npu']})")
        elif parse_version(torch_npu).public != parse_version(row["torch_npu"]).public:
            notes.append(f"torch_npu {torch_npu} (the row pairs torch_npu {row['torch_npu']})")
    if problems:
        add(Finding("vllm-ascend", BLOCKING, f"{label} does not pair with {_join(problems)}", src))
    if notes:
        add(Finding("vllm-ascend", ADVISORY, f"{label}: {_join(notes)}", src))
    if not problems and not notes:
        add(Finding("vllm-ascend", OK, f"{label} pairs with the installed vllm, torch and torch_npu", src))


def _check_cann(cann: CannFacts, facts: DeviceFacts, versions, table, add) -> None:
    section = table["cann_toolkit"]
    src = section["source"]
    if not cann.env:
        where = f" (a toolkit is installed: {cann.info_file})" if cann.info_file else ""
        severity = BLOCKING if facts.kind == "npu" and facts.count > 0 else ADVISORY
        add(
            Finding(
                "cann",
                severity,
                f"the CANN toolkit environment is not set up: none of {_join(CANN_VARIABLES)} "
                f"is set{where}; source the toolkit's set_env.sh (e.g. "
                "/usr/local/Ascend/ascend-toolkit/set_env.sh) before launching",
                section["environment_source"],
            )
        )
    if cann.info_file is None:
        add(
            Finding(
                "cann",
                ADVISORY,
                "no CANN toolkit version file (<toolkit>/<arch>-linux/"
                "ascend_toolkit_install.info) under ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME or "
                f"{CANN_DEFAULT_HOME}: the CANN version is unknown",
                src,
            )
        )
        return
    if cann.version is None:
        add(Finding("cann", ADVISORY, f"{cann.info_file} has no `version=` line: the CANN version is unknown", src))
        return
    installed = versions.get("vllm-ascend")
    row = _find_vllm_ascend_row(table["vllm_ascend"]["rows"], installed) if _release_ok(installed) else None
    if row is not None and cann.version != row["cann"].lower():
        add(
            Finding(
                "cann",
                ADVISORY,
                f"CANN {cann.version} ({cann.info_file}); vllm-ascend {installed}'s stable CANN is {row['cann']}",
                table["vllm_ascend"]["source"],
            )
        )
    elif cann.env:
        add(
            Finding(
                "cann",
                OK,
                f"CANN {cann.version} ({cann.info_file}), environment set ({_join(k for k, _ in cann.env)})",
                src,
            )
        )


def _check_mindspeed(versions, table, add) -> None:
    mindspeed, mcore = versions.get("mindspeed"), versions.get("megatron-core")
    if mindspeed is None or not _release_ok(mcore):
        return
    section = table["mindspeed"]
    targets = sorted({r["megatron_core"] for r in section["rows"]}, key=version_tuple)
    if any(same_release(mcore, t) for t in targets):
        add(
            Finding(
                "mindspeed",
                OK,
                f"megatron-core {mcore} is a release MindSpeed branches target "
                "(the installed mindspeed's own branch is not known)",
                section["source"],
            )
        )
    else:
        add(
            Finding(
                "mindspeed",
                ADVISORY,
                f"megatron-core {mcore} is not a release any MindSpeed branch targets "
                f"({_join(targets)}); MindSpeed does not check it at import, mismatches "
                "surface as patch or attribute errors",
                section["source"],
            )
        )


def _check_verl_vllm(versions, table, facts, uses_vllm, add) -> None:
    verl, vllm = versions.get("verl"), versions.get("vllm")
    if facts.kind == "npu" or vllm is None or not uses_vllm:
        return
    row = _find_verl(table["verl_vllm"]["rows"], verl)
    if row is None or _parse(vllm) is None:
        return
    floor = row["min_vllm_off_npu"]
    if _parse(vllm) >= parse_version(floor):  # verl's own comparison: full PEP 440 (0.18.0rc1 < 0.18.0)
        add(Finding("verl-vllm", OK, f"vllm {vllm} meets verl {verl}'s floor {floor}", row["source"]))
    else:
        add(
            Finding(
                "verl-vllm",
                BLOCKING,
                f"verl {verl} refuses vllm {vllm} off NPU: it needs vllm >= {floor} (unless SGLang is installed)",
                row["source"],
            )
        )


def _patch_facts(versions, table, npu: bool) -> PatchFacts:
    vllm, verl = versions.get("vllm"), versions.get("verl")
    try:
        variant = vllm_patch_variant(vllm)
    except VersionError:
        variant = None
    gate = _find_verl(table["verl_npu_vllm_patch_gates"]["gates"], verl)
    if verl is None:
        return PatchFacts(vllm, variant, npu, None, None, "verl is not installed")
    if gate is None:
        return PatchFacts(vllm, variant, npu, verl, None, f"verl {verl}: its NPU vLLM patch gate is not in the table")
    if gate.get("compare") is None:
        return PatchFacts(
            vllm,
            variant,
            npu,
            verl,
            ("every NPU patch (no version gate)",),
            f"verl {verl}: no vLLM version gate ({gate['note']})",
        )
    applies = _gate_applies(gate, vllm) if vllm else ()
    bounds = "; ".join(
        f"{p['variant']} {p['name']}: "
        + ", ".join(f"[{iv['min']}, {iv['max']}{']' if iv['max_inclusive'] else ')'}" for iv in p["intervals"])
        for p in gate["patches"]
    )
    return PatchFacts(vllm, variant, npu, verl, applies, f"verl {verl} gate ({gate['compare']}): {bounds}")


def _check_patch(patch: PatchFacts, table, uses_vllm: bool, add) -> None:
    if not patch.npu or patch.vllm is None:
        return
    gates = table["verl_npu_vllm_patch_gates"]
    gate = _find_verl(gates["gates"], patch.verl)
    src = gate["source"] if gate else table["vllm_npu_patch_variants"]["source"]
    if _parse(patch.vllm) is None:
        add(Finding("vllm-patch", ADVISORY, f"vllm {patch.vllm!r} is not a version: the NPU patch variant is unknown"))
        return
    if patch.variant is None:
        add(
            Finding(
                "vllm-patch",
                ADVISORY,
                f"vllm {patch.vllm} is older than every NPU patch variant (0.11.0): verl has no NPU patches for it",
                src,
            )
        )
        return
    if patch.verl_applies is None:
        add(
            Finding(
                "vllm-patch",
                ADVISORY,
                f"vllm {patch.vllm} needs the {patch.variant} NPU patches; {patch.verl_gate}: not checked",
                src,
            )
        )
        return
    if gate is not None and gate.get("compare") is None:
        add(Finding("vllm-patch", OK, f"vllm {patch.vllm} -> {patch.variant}; {patch.verl_gate}", src))
        return
    severity = BLOCKING if uses_vllm else ADVISORY
    own = [a for a in patch.verl_applies if a.endswith(f"[{patch.variant}]")]
    if not patch.verl_applies:
        add(
            Finding(
                "vllm-patch",
                severity,
                f"vllm {patch.vllm} needs the {patch.variant} NPU patches, but verl {patch.verl}'s gate applies "
                f"none to it ({patch.verl_gate}): the rotary, MoE weight-loader and MoE-comm patches never "
                "apply (field incident 9)",
                src,
            )
        )
    elif not own:
        add(
            Finding(
                "vllm-patch",
                ADVISORY,
                f"vllm {patch.vllm} runs {patch.variant} code, but verl {patch.verl}'s gate applies "
                f"{_join(patch.verl_applies)} ({patch.verl_gate})",
                src,
            )
        )
    else:
        add(
            Finding(
                "vllm-patch",
                OK,
                f"vllm {patch.vllm} -> {patch.variant}; verl {patch.verl} applies {_join(patch.verl_applies)}",
                src,
            )
        )
    exact = gate.get("exact") if gate else None
    if (
        exact
        and patch.vllm not in exact["versions"]
        and any(version_tuple(patch.vllm) == version_tuple(v) for v in exact["versions"])
    ):
        add(
            Finding(
                "vllm-patch",
                ADVISORY,
                f"verl {patch.verl}'s {exact['name']} compares vllm.__version__ as a string with "
                f"{_join(exact['versions'])}: {patch.vllm!r} matches neither, so the check is skipped",
                src,
            )
        )


def _check_mbridge(params, versions, relevant, table, add) -> None:
    section = table["mbridge"]
    if params is None:
        return
    accepts_all = any(p.startswith("**") for p in params)
    options = sorted(p for p in params if p not in ("models", "weights_path") and not p.startswith("**"))
    features = ", ".join(options) or "no options"
    missing_fs = (
        ""
        if "distributed_filesystem" in params or accepts_all
        else (" (no distributed_filesystem: the PyPI 0.15.1 signature)")
    )
    asked = sorted({k for v in relevant for k in v.mbridge_config})
    dropped = [k for k in asked if k not in params and not accepts_all]
    src = section["verl_use"] + "; " + section["source"]
    if dropped:
        add(
            Finding(
                "mbridge",
                BLOCKING,
                f"the installed mbridge {versions.get('mbridge') or ''} save_weights accepts "
                f"{features}; the recipe's mbridge_config sets {_join(dropped)}, which verl "
                "drops without a word (field incident 5)",
                src,
            )
        )
    else:
        add(Finding("mbridge", OK, f"mbridge save_weights accepts {features}{missing_fs}", section["source"]))


def _check_recipe_stack(recipe: RecipeFacts, versions, add) -> None:
    pairs = (
        ("verl", recipe.verl, "the recipe is checked against the verl {want} schema"),
        ("megatron-core", recipe.megatron_core, "the recipe's stack names megatron-core {want}"),
        ("mbridge", recipe.mbridge, "the recipe's stack names mbridge {want}"),
    )
    for name, want, text in pairs:
        have = versions.get(name)
        if not (want and have) or _parse(want) is None or _parse(have) is None:
            continue
        if _parse(want).public != _parse(have).public:
            add(
                Finding(
                    "recipe-stack",
                    ADVISORY,
                    f"{text.format(want=want)}, but {name} {have} is installed: lint and run may disagree",
                )
            )
