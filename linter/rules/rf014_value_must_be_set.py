from ..core.command import MUST_BE_SET
from ..core.diagnostics import Severity
from ..core.overrides import format_override
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule


@rule(
    "RF014",
    "value-must-be-set",
    Severity.ERROR,
    supersedes=("SL004", "SL005"),  # `???` is no value of a wrong type or choice: it is none yet
    summary="a value left as `???` (to be set): set it in the recipe or on the launch's command line",
    bad="""
    overrides:
      data.train_files: ???
    """,
    good="""
    overrides:
      data.train_files: /data/gsm8k/train.parquet
    """,
    part=Part.CONFIG,
)
def check(ctx: LintContext):
    """`???` is OmegaConf's mandatory-value marker: Hydra composes it, and verl fails with `MissingMandatoryValue`
    the moment it reads the key. A recipe uses it for what it cannot know and its user must give: `sapo-lint convert`
    writes it for each value of a run script that depends on the environment the script runs in (`$DATA_DIR/...`,
    `$(date +%s)`, the notes at the top of the recipe say which), and a shared recipe may leave a data path to each
    user. The launch is refused until it is set: in the recipe, or as `KEY=VALUE` after the recipe on `sapo-launch`'s
    command line, which replaces the recipe's value. An environment variable of the recipe set to `???` is reported
    the same way (it is set in the recipe's `env`). This finding replaces SL004 and SL005 on the same value: `???` is
    no value of the wrong type or choice, it is none yet."""
    # The last override of a key (at a package: a config-group selection, `actor@actor_rollout_ref.actor`), as a
    # variant's or the command line's override of it replaces it
    last = {(ro.parsed.key, ro.parsed.package): ro for ro in ctx.overrides}
    for ro in ctx.overrides:
        p = ro.parsed
        if p.value == MUST_BE_SET and last[p.key, p.package] is ro:
            name = p.key if p.package is None else f"{p.key}@{p.package}"
            yield Finding(
                ro,
                f"`{name}` is `{MUST_BE_SET}`: it must be set before a launch; set it in the recipe, or on the "
                f"command line: `sapo-launch RECIPE {format_override(p.op, p.key, 'VALUE', p.package)}`",
            )
    for var in ctx.command.env if ctx.command else ():
        if var.value == MUST_BE_SET:
            yield Finding(var.location, f"`${var.name}` is `{MUST_BE_SET}`: set it in the recipe's `env:`")
