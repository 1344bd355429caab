"""`sapo-lint explain FILE` (a recipe or a run script): the derived plan of each variant -- world, dp, edp,
parameters, device memory by phase and term against HBM, host RAM, checkpoint size, save time and disk peak -- as a
rich table, JSON, or a stacked-bar PNG (`--plot`, matplotlib imported only then).

The numbers come from `linter.estimate`; this module only reads the file (`api.load`, as lint does), resolves each
variant and renders.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .core.diagnostics import COMMAND_LINE
from .core.printable import printable
from .core.wrapping import wrap_prose
from .estimate.inputs import GIB, WARN_FRACTION, gib_text
from .estimate.plan import DEVICE_TERMS, HOST_TERMS, Estimate
from .rules import FAMILIES

PLAN_FAMILIES = tuple(f.prefix for f in FAMILIES if f.in_plan)  # the rules whose findings the plan shows

TERM_LABELS = {
    "weights": "actor weights (bf16)",
    "grads": "actor main grads",
    "optimizer": "actor optimizer state",
    "activations": "activations",
    "backward_working": "backward working set",
    "moe_dispatch": "MoE dispatch buffers",
    "logits": "logits / log-probs",
    "ref_weights": "ref weights",
    "critic_weights": "critic weights",
    "critic_grads": "critic main grads",
    "critic_optimizer": "critic optimizer state",
    "rollout": "rollout engine",
    "comm_buffers": "HCCL buffers",
    "runtime": "runtime context",
    "optimizer_cpu_offload": "Megatron optimizer CPU offload",
    "verl_offload": "verl param/optimizer offload",
    "rollout_sleep": "rollout weights while asleep",
}


@dataclass(slots=True)
class Item:
    """One variant: its label, and either an estimate (with the rule findings about it) or why there is none."""

    variant: str | None
    estimate: Estimate | None = None
    findings: list[dict] | None = None
    error: str | None = None


# ------------------------------------------------------------------------------------------------ loading


def explain_recipe(
    path: Path,
    *,
    variants: tuple[str, ...] = (),
    overrides: tuple[str, ...] = (),
    verl_version: str | None = None,
    accelerator: str | None = None,
    resources: dict | None = None,
) -> tuple[list[Item], list[str]]:
    """Estimate every (selected) variant of a recipe or run script, read as `sapo-lint` reads it (`api.load`):
    (items, problems that stop the whole file). `resources`: site limits from the command line; they reach the
    estimate as the linter's do, through `Command.resources`. An unknown accelerator name (RF006) and an
    `--override` that the override checks reject (SL001, SL004, ...) are problems: the plan would be of a run that
    cannot be meant."""
    from . import api
    from .estimate.from_context import estimate_for
    from .rules import load_rules
    from .rules.rf_recipe import UNKNOWN_ACCELERATOR
    from .schema import SnapshotNotFound
    from .settings import SettingsError, SettingsFinder
    from .sources.files import UnreadableFile
    from .topology import model_path, runs_sft

    try:  # the [tool.sapo-lint] that governs the file, as `sapo-lint` finds it: from the file's folder upwards
        settings = SettingsFinder().for_path(Path(path))
    except SettingsError as exc:
        return [], [str(exc)]
    try:
        loaded = api.load(path, api.read_options(settings, overrides, verl_version, accelerator, resources))
    except UnreadableFile as exc:
        return [], [str(exc)]
    if loaded is None:
        return [], [f"{path}: neither a recipe (a YAML file with a top-level `recipe:` key) nor a run script (*.sh)"]
    stopping = [
        d
        for d in loaded.diagnostics
        if d.code == UNKNOWN_ACCELERATOR.code or (d.severity.value == "error" and not loaded.commands)
    ]
    if (loaded.kind == "recipe" and loaded.recipe is None) or stopping:
        return [], [_line(d) for d in (stopping or loaded.diagnostics)]
    if not loaded.commands:
        return [], [f"{path}: no trainer command (`python3 -m verl...`) found"]
    rejected = [
        d for d in api.check(loaded, settings) if d.location.path == COMMAND_LINE and d.severity.value == "error"
    ]
    if rejected:
        return [], [_line(d) for d in dict.fromkeys(d.with_variant(None) for d in rejected)]
    commands = api.select(loaded.commands, variants)
    if not commands:
        known = ", ".join(c.variant or "(none)" for c in loaded.commands)
        return [], [f"no variant matches {', '.join(variants)}; variants: {known}"]
    rules = load_rules(lambda code: code.startswith(PLAN_FAMILIES))
    items = []
    for command in commands:
        try:
            ctx = api.resolve(command, loaded.verl_version, loaded)
        except SnapshotNotFound as exc:
            return [], [str(exc)]
        if command.model is None:
            how = (
                "name a shipped card (`model.card`), or a directory with config.json, a model in the Hugging Face "
                "cache or a path ending in a card's name (`model.path`)"
                if loaded.kind == "recipe"
                else "give a directory with config.json, a model in the Hugging Face cache or a path ending in a "
                f"card's name: --override {model_path(ctx)}=PATH"
            )
            items.append(Item(command.variant, error=f"unknown model: {how}"))
            continue
        est = estimate_for(ctx)  # the estimate the MEM/CK rules below report from
        if est is None:
            items.append(
                Item(
                    command.variant,
                    error=f"the {'SFT model' if runs_sft(ctx) else 'actor'} does not run on the "
                    "Megatron engine or its world size / parallel sizes are not numbers",
                )
            )
            continue
        findings = []
        for r in rules:
            if r.check is None:
                continue
            for f in r.check(ctx):
                severity = (f.severity or r.severity).value
                findings.append({"code": r.code, "severity": severity, "message": _in_the_plan(f.message)})
        items.append(Item(command.variant, est, findings))
    return items, []


# A memory finding points lint's reader to `sapo-lint explain` for every term; in explain's own plan that pointer
# would go round in a circle: it says where the terms are instead.
_POINTER_TO_EXPLAIN = re.compile(r"(?:See )?`sapo-lint explain` (?:for|shows) every term")


def _in_the_plan(message: str) -> str:
    return _POINTER_TO_EXPLAIN.sub(
        lambda m: ("Every" if m[0].startswith("See") else "every") + " term is in this plan's device memory by phase",
        message,
    )


def _line(d) -> str:
    where = (
        f"{d.location.path}:{d.location.line}:{d.location.column}"
        if d.location.path != COMMAND_LINE
        else f"--override {d.location.line}"
    )
    return f"{where}: {d.code} {d.message}"


# ------------------------------------------------------------------------------------------------ JSON


def _gib(value: float) -> float:
    return round(value / GIB, 3)


def to_json(item: Item, recipe_path: str | None = None) -> dict[str, Any]:
    """One variant's plan with the keys of issue 4 (`world`, `dp`, `edp`, `params.total`, `params.per_rank`,
    `memory_gib.<phase>.<term>`, `memory_gib.<phase>.total`, `memory_gib.peak`, `hbm_gib`, `checkpoint_gib.weights`,
    `checkpoint_gib.full`, `checkpoint.save_seconds`, `disk_peak_gib`) and more."""
    out: dict[str, Any] = {"variant": item.variant}
    if recipe_path is not None:
        out["recipe"] = recipe_path
    if item.estimate is None:
        out["error"] = item.error
        return out
    e = item.estimate
    p = e.inputs
    layout = p.actor.layout
    memory: dict[str, Any] = {}
    for phase, terms in e.phases.items():
        memory[phase] = {t: _gib(v) for t, v in terms.items()}
        memory[phase]["total"] = _gib(e.total(phase))
    memory["peak"] = _gib(e.peak_bytes)
    memory["peak_phase"] = e.peak_phase
    host: dict[str, Any] = {}
    for phase, terms in e.host.items():
        host[phase] = {t: _gib(v) for t, v in terms.items()}
        host[phase]["total"] = _gib(e.host_total(phase))
    host["per_node_peak"] = _gib(e.host_peak_per_node)
    host["node_ram"] = p.limits.host_ram_gib
    host["node_ram_assumed"] = p.limits.assumed("host_ram_gib")
    ck = e.checkpoint
    out.update(
        {
            "model": p.model.name,
            "model_source": p.model.source,
            "accelerator": p.accelerator,
            "accelerator_assumed": p.accelerator_assumed or None,
            "device": p.device,
            "world": e.world,
            "nodes": e.world // p.devices_per_node if p.devices_per_node else None,
            "dp": e.dp,
            "edp": e.edp,
            "layout": {
                "tp": layout.tp,
                "pp": layout.pp,
                "vpp": layout.vpp,
                "cp": layout.cp,
                "ep": layout.ep,
                "etp": layout.expert_tp,
            },
            "params": {
                "total": e.params.total,
                "embedding": e.params.embedding,
                "dense": e.params.dense,
                "expert": e.params.expert,
                "active": e.params.active,
                "per_rank": e.actor.params.total,
                "per_rank_dense": e.actor.params.dense,
                "per_rank_expert": e.actor.params.expert,
                "per_rank_stage": e.actor.params.stage,
            },
            "tokens": {
                "train": round(p.actor.train_tokens),
                "logprob": round(p.actor.logprob_tokens),
                "source": p.actor.token_source,
            },
            "recompute": p.actor.recompute.describe(),
            "memory_gib": memory,
            "hbm_gib": p.hbm_gib,
            "host_gib": host,
            "checkpoint_gib": {
                "weights": _gib(ck.weights_bytes),
                "full": _gib(ck.full_bytes),
                "saved": _gib(ck.saved_bytes),
                "per_rank_dist": _gib(ck.rank_dist_bytes),
                "rank0_hf": _gib(ck.rank0_hf_bytes),
            },
            "checkpoint": {
                "saves": ck.saves,
                "contents": list(p.checkpoint.contents),
                "async_save": ck.async_save,
                "save_seconds": round(ck.save_seconds, 1),
                "longest_wait_seconds": round(ck.longest_wait_seconds, 1),
                "timeout_seconds": ck.timeout_s,
                "timeout_source": ck.timeout_source,
                "write_gib_per_s": ck.write_gib_per_s,
                "write_bw_assumed": p.limits.assumed("write_gib_per_s"),
            },
            "disk_peak_gib": _gib(ck.disk_peak_bytes),
            "disk_budget_gib": p.limits.disk_budget_gib,
            "disk_budget_assumed": p.limits.assumed("disk_budget_gib"),
            "communicators": list(e.communicators),
            "findings": item.findings or [],
            "notes": list(e.notes),
        }
    )
    return out


# ------------------------------------------------------------------------------------------------ text


def _fmt(value: float) -> str:
    return f"{value / GIB:.1f}" if value else "-"


UNWRAPPED_WIDTH = 10_000  # the console's width where nothing is wrapped: wider than any line or table


def _wrapped(line: str, width: int | None) -> str:
    """`line` wrapped at `width` between words (`core.wrapping`), its continuation lines indented two columns
    deeper; whole for None."""
    if width is None or len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    return "\n".join(wrap_prose(line, width, indent=indent))


def render_text(items: list[Item], title: str, color: bool = False, width: int | None = None) -> str:
    """The plan as text, its lines wrapped at `width` (a terminal's), or never (None: a pipe, a file)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    # No rich markup: a path, a model name or a message may hold `[...]`; and what they take from files is
    # escaped (`printable`). Unwrapped, the table takes the width it needs.
    console = Console(
        file=buf,
        force_terminal=color,
        no_color=not color,
        width=width or UNWRAPPED_WIDTH,
        highlight=False,
        markup=False,
    )

    def say(line: str = "", style: str = "") -> None:
        console.print(Text(_wrapped(line, width), style=style), soft_wrap=True)  # wrapped here, not by rich

    for item in items:
        say(printable(f"{title}" + (f"  [{item.variant}]" if item.variant else "")), style="bold")
        if item.estimate is None:
            say(f"  cannot estimate: {printable(item.error)}")
            say()
            continue
        e = item.estimate
        p = e.inputs
        L = p.actor.layout
        pc = e.params
        moe = p.model.is_moe
        say(
            f"  model {printable(p.model.name)}: {pc.total / 1e9:.2f} B parameters "
            f"(embedding {pc.embedding / 1e9:.2f} B, dense {pc.dense / 1e9:.2f} B"
            + (f", routed experts {pc.expert / 1e9:.2f} B; {pc.active / 1e9:.2f} B active" if moe else "")
            + ")"
        )
        say(f"  model from {printable(p.model.source)}")
        say(
            f"  {e.world} x {p.accelerator} ({p.hbm_gib:g} GiB, {p.device}): TP{L.tp} PP{L.pp}"
            + (f" VPP{L.vpp}" if L.vpp else "")
            + f" CP{L.cp}"
            + (f" EP{L.ep} ETP{L.expert_tp}" if moe else "")
            + f", dp {e.dp}"
            + (f", edp {e.edp}" if moe else "")
        )
        if p.accelerator_assumed:
            say(
                f"  {p.accelerator} is {p.accelerator_assumed}: name yours with --accelerator, "
                "`hardware.accelerator` or `[tool.sapo-lint] accelerator`"
            )
        rank = e.actor.params
        say(
            f"  per rank (most loaded: stage {rank.stage}): {rank.total / 1e9:.3f} B parameters"
            + (f" ({rank.dense / 1e9:.3f} B dense, {rank.expert / 1e9:.3f} B routed-expert)" if moe else "")
        )
        say(
            f"  {'SFT update (no rollout, reference model or critic)' if p.sft else 'actor update'}: "
            f"{p.actor.recompute.describe()}, {p.actor.train_tokens:.0f} tokens per micro-batch per rank "
            f"({p.actor.token_source})" + ("" if p.sft else f"; log-prob passes {p.actor.logprob_tokens:.0f} tokens")
        )
        table = Table(title="device memory per device, GiB", title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("term")
        labels = {t: (label.replace("actor ", "model ") if p.sft else label) for t, label in TERM_LABELS.items()}
        for phase in e.phases:
            table.add_column(phase + (" (peak)" if phase == e.peak_phase else ""), justify="right")
        for term in DEVICE_TERMS:
            if any(e.phases[ph][term] for ph in e.phases):
                table.add_row(labels.get(term, term), *(_fmt(e.phases[ph][term]) for ph in e.phases))
        table.add_section()
        table.add_row("total", *(f"{e.total(ph) / GIB:.1f}" for ph in e.phases), style="bold")
        table.add_row("% of HBM", *(f"{e.total(ph) / e.hbm_bytes:.0%}" for ph in e.phases))
        console.print(table)
        peak = e.peak_bytes
        state = "OVER" if peak > e.hbm_bytes else ("over 90% of" if peak > WARN_FRACTION * e.hbm_bytes else "within")
        say(f"  peak: {e.peak_phase} {peak / GIB:.1f} GiB, {state} {p.hbm_gib:g} GiB HBM")
        hp = e.host_peak_phase
        host_terms = ", ".join(f"{TERM_LABELS[t]} {gib_text(v)}" for t, v in e.host[hp].items() if v)
        ram = f"{p.limits.host_ram_gib:g} GiB" + (" (assumed)" if p.limits.assumed("host_ram_gib") else "")
        if e.host_peak_per_node:
            say(
                f"  host RAM: {gib_text(e.host_total(hp))} per rank in the {hp} phase ({host_terms}) = "
                f"{gib_text(e.host_peak_per_node)} per node of {ram}"
            )
        else:  # "0.0 GiB ... = 0 GiB" would read as a figure rounded away
            say(f"  host RAM: nothing offloaded or parked there in any phase; the node has {ram}")
        ck = e.checkpoint
        bw = f"{ck.write_gib_per_s:g} GiB/s per writer" + (" (assumed)" if p.limits.assumed("write_gib_per_s") else "")
        say(
            f"  checkpoint: weights {ck.weights_bytes / GIB:.1f} GiB, full {ck.full_bytes / GIB:.1f} GiB; "
            f"save_contents {list(p.checkpoint.contents)} = {ck.saved_bytes / GIB:.1f} GiB"
            + ("" if ck.saves else " (trainer.save_freq <= 0: no saves)")
        )
        say(
            f"  save time: ~{ck.save_seconds:.0f} s (dist shard {gib_text(ck.rank_dist_bytes)} per rank, "
            f"rank 0 HF {gib_text(ck.rank0_hf_bytes)}, at {bw}); "
            f"longest barrier wait ~{ck.longest_wait_seconds:.0f} s vs {ck.timeout_s:.0f} s {ck.timeout_source}"
        )
        say(
            f"  disk peak: {ck.disk_peak_bytes / GIB:.1f} GiB (two checkpoints) of {p.limits.disk_budget_gib:g} GiB"
            + (" (assumed)" if p.limits.assumed("disk_budget_gib") else "")
        )
        for note in e.notes:
            say(f"  note: {printable(note)}")
        for f in item.findings or []:
            style = {"error": "red", "warning": "yellow"}.get(f["severity"], "")
            say(printable(f"  {f['code']} {f['severity']}: {f['message']}"), style=style)
        say()
    return buf.getvalue().rstrip() + "\n"


# ------------------------------------------------------------------------------------------------ plot


PLOT_COLORS = {
    "weights": "#4c72b0",
    "grads": "#55a868",
    "optimizer": "#c44e52",
    "activations": "#8172b2",
    "backward_working": "#a99bd0",
    "moe_dispatch": "#5f9e6e",
    "logits": "#ccb974",
    "ref_weights": "#64b5cd",
    "critic_weights": "#8c8c8c",
    "critic_grads": "#b0b0b0",
    "critic_optimizer": "#d0d0d0",
    "rollout": "#dd8452",
    "comm_buffers": "#937860",
    "runtime": "#da8bc3",
}


class NothingToPlot(ValueError):
    """`--plot` when no variant could be estimated."""


class PlotUnavailable(Exception):
    """`--plot` without matplotlib; the message says how to install it."""


def plot_titles(shown: list[Item], title: str) -> tuple[str, list[str]]:
    """The figure's title and each panel's. What every variant shares (the model on N x accelerator) goes in the
    figure's title, once; where variants differ (a recipe for NPU and GPU), each panel names its own."""
    setups = [
        f"{i.estimate.inputs.model.name} on {i.estimate.inputs.world} x {i.estimate.inputs.accelerator}" for i in shown
    ]
    panels = [i.variant or "(single variant)" for i in shown]
    if len(set(setups)) == 1:
        return f"{title}: {setups[0]} -- device memory by phase", panels
    return f"{title}: device memory by phase", [f"{p}\n{s}" for p, s in zip(panels, setups, strict=True)]


def plot(items: list[Item], out: Path, title: str) -> Path:
    """A stacked bar per phase (one panel per variant) with the HBM line and the 90% line."""
    try:
        import matplotlib
    except ImportError:
        from .core.extras import install_command

        raise PlotUnavailable(f"--plot needs matplotlib: {install_command('plot')}") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [i for i in items if i.estimate is not None]
    if not shown:
        raise NothingToPlot("nothing to plot: no variant could be estimated")
    cols = min(3, len(shown))
    rows = (len(shown) + cols - 1) // cols
    # At least 10 inches wide: one panel alone would cut off the title and the legend, which span the figure.
    fig, axes = plt.subplots(rows, cols, figsize=(max(4.6 * cols, 10.0), 4.2 * rows), squeeze=False, sharey=True)
    used_terms: dict[str, Any] = {}
    figure_title, panel_titles = plot_titles(shown, title)
    for ax, item, panel_title in zip(axes.flat, shown, panel_titles, strict=False):
        e = item.estimate
        phases = list(e.phases)
        bottoms = [0.0] * len(phases)
        for term in DEVICE_TERMS:
            heights = [e.phases[ph][term] / GIB for ph in phases]
            if not any(heights):
                continue
            bars = ax.bar(
                phases,
                heights,
                bottom=bottoms,
                color=PLOT_COLORS.get(term),
                width=0.6,
                edgecolor="white",
                linewidth=0.5,
            )
            used_terms.setdefault(term, bars)
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        hbm = e.inputs.hbm_gib
        ax.axhline(hbm, color="#b22222", linestyle="--", linewidth=1.5)
        ax.axhline(hbm * WARN_FRACTION, color="#b22222", linestyle=":", linewidth=1)
        ax.text(-0.45, hbm, f"HBM {hbm:g} GiB", va="bottom", ha="left", fontsize=8, color="#b22222")
        ax.text(-0.45, hbm * WARN_FRACTION, f"{WARN_FRACTION:.0%}", va="bottom", ha="left", fontsize=7, color="#b22222")
        for x, total in enumerate(bottoms):
            ax.text(x, total, f"{total:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_title(panel_title, fontsize=9)
        ax.set_ylim(0, max(max(bottoms), hbm) * 1.12)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("GiB per device")
    fig.legend(
        [used_terms[t] for t in used_terms],
        [TERM_LABELS.get(t, t) for t in used_terms],
        loc="lower center",
        ncol=min(6, len(used_terms)),
        fontsize=8,
        frameon=False,
    )
    fig.suptitle(figure_title, fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    from .sources.files import write_atomically

    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, metadata={"Title": figure_title})
    plt.close(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, png.getvalue())  # never a half-written PNG
    return out


__all__ = ["HOST_TERMS", "NothingToPlot", "PlotUnavailable", "explain_recipe", "plot", "render_text", "to_json"]
