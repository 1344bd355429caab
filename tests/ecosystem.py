"""Ecosystem check (ruff's habit): lint verl's own example run scripts and compare with a reviewed expected file.

    python tests/ecosystem.py            # print today's findings in the expected file's form
    python tests/ecosystem.py --update   # rewrite tests/ecosystem/verl-examples.expected, keeping review notes

The corpus is `../shared/corpus/verl-examples/` beside the checkout (verl main @ 1dda039), linted as the
`examples/` folder of a verl checkout (so verl's own naming-check ignores apply), against the
snapshot built from that same verl (`VERL_VERSION`) with the default settings, shellcheck included: what a user
who runs `sapo-lint` on these scripts sees. One line per finding:

    <path relative to the corpus>:<line> <CODE> <severity> [<variant>]  -- <review note>

Every error carries a review note after ` -- `: a real problem upstream (what breaks) or, until fixed, why it is
reported. `--update` keeps the note of a finding that is still there (matched on path, code and variant, then the
nearest line) and leaves new errors without one, which the test rejects until someone writes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "verl-examples"
EXPECTED = REPO / "tests" / "ecosystem" / "verl-examples.expected"
VERL_VERSION = "0.10.0.dev"
NOTE = "  -- "
HEADER = f"""\
# sapo-lint findings on ../shared/corpus/verl-examples (verl main @ 1dda039), `--verl-version {VERL_VERSION}`,
# default settings. Regenerate with `python tests/ecosystem.py --update` (see that file); review every error.
"""


def findings(corpus: Path = CORPUS) -> list[str]:
    """Today's findings on the corpus, one line each, sorted (path, line, code, variant)."""
    with tempfile.TemporaryDirectory() as tmp:
        # Linted as `examples/` of a verl checkout, so that verl's own naming-check ignores (examples/profile,
        # examples/mtp_trainer, ...) apply as they do upstream.
        (Path(tmp) / "examples").symlink_to(corpus.resolve(), target_is_directory=True)
        env = {**os.environ, "SAPO_LINT_CACHE_DIR": os.environ.get("SAPO_LINT_CACHE_DIR", tmp)}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "sapo_toolkit.linter",
                "--format",
                "json",
                "--verl-version",
                VERL_VERSION,
                "examples",
            ],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp,
        )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"sapo-lint exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    rows = []
    for d in json.loads(proc.stdout)["diagnostics"]:
        path = Path(d["path"]).relative_to("examples").as_posix()
        rows.append((path, d["line"] or 0, d["code"], d["variant"] or "", d["severity"]))
    rows = sorted(set(rows))
    return [f"{p}:{line} {code} {sev}" + (f" [{variant}]" if variant else "") for p, line, code, variant, sev in rows]


def split_note(line: str) -> tuple[str, str]:
    finding, _, note = line.partition(NOTE)
    return finding.rstrip(), note.strip()


def read_expected(path: Path = EXPECTED) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def _key(finding: str) -> tuple[str, str, str]:
    """(path, code, variant): a finding's identity once its line number moves."""
    where, code, _sev, *variant = finding.split(" ", 3)
    return where.rsplit(":", 1)[0], code, variant[0] if variant else ""


def carry_notes(current: list[str], expected: list[str]) -> list[str]:
    """`current` with the review note of the same finding in `expected` (same line first, else the nearest line)."""
    notes: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for line in expected:
        finding, note = split_note(line)
        if note:
            notes.setdefault(_key(finding), []).append((int(finding.split(" ", 1)[0].rsplit(":", 1)[1]), note))
    out = []
    for finding in current:
        candidates = notes.get(_key(finding), [])
        at = int(finding.split(" ", 1)[0].rsplit(":", 1)[1])
        note = min(candidates, key=lambda c: abs(c[0] - at))[1] if candidates else ""
        out.append(finding + (NOTE + note if note else ""))
    return out


def main(argv: list[str]) -> int:
    if not CORPUS.is_dir():
        print(f"no corpus at {CORPUS}", file=sys.stderr)
        return 2
    lines = carry_notes(findings(), read_expected())
    if "--update" in argv:
        from sapo_toolkit.atomicio import write_atomically

        EXPECTED.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(EXPECTED, HEADER + "".join(f"{line}\n" for line in lines))
        missing = [line for line in lines if " error" in line and NOTE not in line]
        print(f"wrote {EXPECTED} ({len(lines)} findings; {len(missing)} error(s) without a review note)")
        return 0
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
