"""Resource estimator: parameter counts, per-device memory by phase, host RAM, checkpoint size and save time.

The formulas are pure functions of immutable records (no file, network or device access) and import nothing of
the linter but `core`: `params` (parameter counts and Megatron layouts), `activations`, `optimizer`, `inputs`
(what an estimate is computed from, and the documented assumptions) and `plan` (`estimate(PlanInputs) ->
Estimate`). `from_context` reads a resolved `LintContext` into `PlanInputs` and memoises the estimate per context
for the MEM/CK rules and `sapo-lint explain`.
"""
