from ..core.diagnostics import Severity
from ..engine import LintContext, Part
from ..rulekit.registry import Finding, rule

# (lowest, highest) accepted integer values; from CANN's environment-variable reference (HCCL_*).
RANGES = {
    "HCCL_CONNECT_TIMEOUT": (120, 7200),
    "HCCL_EXEC_TIMEOUT": (0, 2147483647),
    "HCCL_BUFFSIZE": (1, None),
    "HCCL_RDMA_TIMEOUT": (5, 20),
}
AIV_EXEC_TIMEOUT_MAX = 1091


@rule(
    "PF004",
    "hccl-env-out-of-range",
    Severity.WARNING,
    part=Part.ROLLOUT,
    summary="HCCL environment value outside its valid range",
    bad="""
    overrides: {}
    env: {HCCL_CONNECT_TIMEOUT: "9000"}
    """,
    good="""
    overrides: {}
    env: {HCCL_CONNECT_TIMEOUT: "1800"}
    """,
)
def check(ctx: LintContext):
    """Ascend's collective library reads its timeouts and buffers from the environment, and does not fail on a value
    it cannot use: it falls back or clamps, so the run keeps the default the setting was meant to replace (a
    connect timeout that is still 120 s on a 16-node job, say). Valid ranges (CANN): `HCCL_CONNECT_TIMEOUT`
    120–7200 s; `HCCL_EXEC_TIMEOUT` 0–2147483647 s, but at most 1091 s with `HCCL_OP_EXPANSION_MODE=AIV` (larger
    values and 0 become 1091); `HCCL_BUFFSIZE` >= 1 MB; `HCCL_RDMA_TIMEOUT` 5–20. Values must be integers."""
    env = {var.name: var for var in (ctx.command.env if ctx.command else ())}
    for name, (low, high) in RANGES.items():
        var = env.get(name)
        if var is None:
            continue
        try:
            number = int(var.value)
        except ValueError:
            yield Finding(var.location, f"{name}={var.value!r} is not an integer")
            continue
        if number < low or (high is not None and number > high):
            limits = f"{low}–{high}" if high is not None else f">= {low}"
            yield Finding(var.location, f"{name}={number} is outside its valid range {limits}")
    mode, timeout = env.get("HCCL_OP_EXPANSION_MODE"), env.get("HCCL_EXEC_TIMEOUT")
    if mode is not None and mode.value == "AIV" and timeout is not None and timeout.value.isdigit():
        if int(timeout.value) == 0 or int(timeout.value) > AIV_EXEC_TIMEOUT_MAX:
            yield Finding(
                timeout.location,
                f"HCCL_EXEC_TIMEOUT={timeout.value} becomes {AIV_EXEC_TIMEOUT_MAX} s with HCCL_OP_EXPANSION_MODE=AIV",
            )
