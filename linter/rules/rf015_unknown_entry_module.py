from difflib import get_close_matches

from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule


@rule(
    "RF015",
    "unknown-entry-module",
    Severity.ERROR,
    supersedes=("SH001",),  # a missing entry module, not the config assumed for it
    part=Part.ENTRY,
    summary="the verl entry module is not one the verl version linted can run: the run stops at start",
    bad="""
    verl: "0.10.0.dev"
    entrypoint: verl.trainer.main_ppo_sync
    overrides:
      trainer.nnodes: 1
    """,
    good="""
    verl: "0.10.0.dev"
    entrypoint: verl.trainer.main_ppo
    overrides:
      trainer.nnodes: 1
    """,
)
def check(ctx: LintContext):
    """The module a run script starts with `python -m verl.<module>` (or `torchrun ... -m`), or a recipe's
    `entrypoint` under `verl.`, must be one that verl version runs: a module with an `if __name__ == "__main__":`
    block or a package with a `__main__.py` (the snapshot's `main_modules`, read from verl's source). Any other
    name stops the run before training starts: Python exits with `No module named verl.trainer.main_ppo_sync`
    (verl main removed `main_ppo_sync`, which verl 0.8.0 had), or runs a module that has no main block and exits
    having done nothing. An error, on the trainer call (on the recipe's `overrides:` line), with the nearest
    module verl does run. A recipe's entrypoint outside `verl.` (a team's wrapper) is not checked. No other rule
    judges such a command: the run never composes the config they would check."""
    module = ctx.command.entry_module if ctx.command is not None else None
    if not module or not module.startswith("verl.") or module in ctx.snapshot.main_modules:
        return
    near = get_close_matches(module, sorted(ctx.snapshot.main_modules), n=1)
    yield Finding(
        ctx.command.origin,
        f"`{module}` is not a module verl {ctx.snapshot.label} runs with `python -m`: the run stops at start "
        f"(`No module named {module}`, or a module without a main block that exits having done nothing)"
        + (f"; did you mean `{near[0]}`?" if near else ""),
    )
