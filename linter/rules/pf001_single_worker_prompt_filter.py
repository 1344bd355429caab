from ..core.diagnostics import Severity
from ..engine import LintContext
from ..rulekit.registry import Finding, rule

FILTER, WORKERS = "data.filter_overlong_prompts", "data.filter_overlong_prompts_workers"


@rule(
    "PF001",
    "single-worker-prompt-filter",
    Severity.WARNING,
    summary="overlong-prompt filtering in a single process",
    bad="""
    overrides:
      data.filter_overlong_prompts: true
    """,
    good="""
    overrides:
      data.filter_overlong_prompts: true
      data.filter_overlong_prompts_workers: 32
    """,
)
def check(ctx: LintContext):
    """With `data.filter_overlong_prompts=True`, verl's `RLHFDataset` tokenizes every prompt through
    `datasets.Dataset.filter(..., num_proc=self.num_workers)` (verl 0.9.1 `verl/utils/dataset/rl_dataset.py:148,
    199-270`), where `num_workers` is `data.filter_overlong_prompts_workers` — 1 in verl's `legacy_data.yaml`. On a
    large dataset one process takes tens of minutes on every launch, with every accelerator idle (incident 6:
    ~28 minutes). Set it to a few dozen (verl caps it at the CPU count)."""
    if ctx.config.value(FILTER) is not True:
        return
    workers = ctx.config.value(WORKERS)
    if workers is not None and not (isinstance(workers, int) and not isinstance(workers, bool)):
        return
    if workers is not None and workers > 1:
        return
    yield Finding(
        ctx.blame(WORKERS, FILTER),
        f"data.filter_overlong_prompts is on with filter_overlong_prompts_workers={workers}: prompts are "
        "tokenized and filtered in one process, over the whole dataset, on every launch, while the devices wait. "
        f"Set `{WORKERS}` to a few dozen (verl caps it at the CPU count)",
    )
