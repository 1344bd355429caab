#!/usr/bin/env bash
# The GitHub Action's lint step (action.yml), runnable anywhere: lint SAPO_LINT_PATHS (blank-separated, default .)
# with SAPO_LINT_ARGS, write SARIF to SAPO_LINT_SARIF (default sapo-lint.sarif), print workflow annotations for the
# pull request, and record sapo-lint's exit code as `exit-code` in $GITHUB_OUTPUT (when set). It exits 0 itself: the
# action uploads the SARIF first and fails afterwards on that exit code.
set -uo pipefail
read -r -a paths <<< "${SAPO_LINT_PATHS:-.}"
read -r -a args <<< "${SAPO_LINT_ARGS:-}"
sarif="${SAPO_LINT_SARIF:-sapo-lint.sarif}"
# Annotations first, as the pull request shows them (infos are left out in CI: -v in the args shows them).
sapo-lint --format github --exit-zero "${args[@]}" "${paths[@]}"
sapo-lint --format sarif --output-file "$sarif" "${args[@]}" "${paths[@]}"
code=$?
echo "sapo-lint: exit $code; SARIF written to $sarif" >&2
if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "exit-code=$code" >> "$GITHUB_OUTPUT"
fi
