"""What rules are built from: the registry (`Rule`, `Finding`, the `@rule` decorator) and helpers that several
rule families share (messages and suggestions, recompute settings, SAPO keys). The rules themselves live one per
module in `linter/rules/`."""
