"""No silent pass (SPEC §7): every report says how many files were checked and why the others were not, in each
format; `--strict` (or `strict = true`) fails a run with a file that could not be checked. Through the console
script, as a user or CI runs it."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from .test_cli import sapo_lint, write
from .test_sarif import validate

TRAINER = "python3 -m verl.trainer.main_ppo"
ESC = "\x1b"


def script(path: Path, *lines: str) -> Path:
    path.write_text("#!/bin/bash\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def reasons_tree(root: Path) -> Path:
    """One checked recipe, and one file for each reason a file is not checked that plain files can give."""
    write(root / "checked.yaml", "overrides:\n  trainer.nnodes: 1\n")
    script(root / "setup.sh", "pip install -e .", "echo ready")  # a helper: no trainer command
    script(root / "custom.sh", f"{TRAINER} --config-name my_cfg trainer.nnodes=1")
    write(root / "old.yaml", "verl: '0.0.1'\noverrides:\n  trainer.nnodes: 1\n")  # a version with no snapshot
    (root / "broken.yaml").write_text("recipe: sapo-recipe/v1\noverrides: [\n", encoding="utf-8")
    script(root / "retired.sh", "echo retired; exit 1", f"{TRAINER} trainer.nnodes=1")
    script(root / "wrapper.sh", "python3 -m recipe.mine.main_ppo trainer.nnodes=1")  # no such module
    return root


SUMMARY = (
    "Checked 1 of 7 files; 6 not checked: every path exits before the trainer (1), invalid recipe (1), "
    "no snapshot for verl 0.0.1 (1), unknown config `my_cfg` (1), unresolved entry module `recipe.mine.main_ppo` "
    "(1), no trainer command (1)."
)


def test_each_reason_is_counted_in_the_summary_line(tmp_path):
    proc = sapo_lint(str(reasons_tree(tmp_path)), "--no-shellcheck")
    assert proc.returncode == 1, proc.stderr  # the broken recipe and the missing snapshot are errors
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("Found ") and last.endswith(" in 7 files. " + SUMMARY), last
    assert "All checks passed" not in proc.stdout


def test_one_reason_with_different_details_is_one_count(tmp_path):
    """Thirty wrappers of thirty modules make one count, not thirty: the summary line stays one short line."""
    for name in ("a_cfg", "b_cfg"):
        script(tmp_path / f"{name}.sh", f"{TRAINER} --config-name {name} trainer.nnodes=1")
    out = sapo_lint(str(tmp_path), "--no-shellcheck", "--select", "SL").stdout
    assert out.splitlines()[-1] == "Checked 0 of 2 files; 2 not checked: unknown config (2)."


def test_verbose_names_each_file_not_checked(tmp_path):
    root = reasons_tree(tmp_path)
    lines = sapo_lint(str(root), "--no-shellcheck", "--select", "SL", "-v").stdout.splitlines()
    assert [line for line in lines if ": not checked: " in line] + lines[-1:] == [
        f"{root / 'broken.yaml'}: not checked: invalid recipe",
        f"{root / 'custom.sh'}: not checked: unknown config `my_cfg`",
        f"{root / 'old.yaml'}: not checked: no snapshot for verl 0.0.1",
        f"{root / 'retired.sh'}: not checked: every path exits before the trainer",
        f"{root / 'setup.sh'}: not checked: no trainer command",
        f"{root / 'wrapper.sh'}: not checked: unresolved entry module `recipe.mine.main_ppo`",
        SUMMARY,
    ]


def test_a_helper_script_alone_is_not_all_checks_passed(tmp_path):
    proc = sapo_lint(str(script(tmp_path / "setup.sh", "echo hi")), "--no-shellcheck")
    assert proc.returncode == 0 and "All checks passed" not in proc.stdout
    assert proc.stdout.splitlines()[-1] == "Checked 0 of 1 file; 1 not checked: no trainer command (1)."


def test_an_unreadable_file_is_not_checked_and_exits_2(tmp_path):
    (tmp_path / "run.sh").write_bytes(b"#!/bin/bash\n\0\0\0")
    proc = sapo_lint(str(tmp_path / "run.sh"), "--no-shellcheck")
    assert proc.returncode == 2
    assert proc.stdout.splitlines()[-1].endswith("Checked 0 of 1 file; 1 not checked: unreadable (1).")


def run_patched(root: Path, patch: str) -> subprocess.CompletedProcess:
    """`sapo-lint --format json --no-shellcheck root` with `patch` run first in the same interpreter."""
    program = f"import sys\n{patch}\nfrom sapo_toolkit.linter.cli import main\nsys.argv[0] = 'sapo-lint'\nmain()\n"
    return subprocess.run(
        [sys.executable, "-c", program, "--format", "json", "--no-shellcheck", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_over_budget_and_internal_errors_are_reasons(tmp_path):
    write(tmp_path / "r.yaml", "overrides:\n  trainer.nnodes: 1\n")
    no_units = run_patched(tmp_path, "import sapo_toolkit.linter.lint as lint\nlint.FILE_WORK_UNITS = 0")
    failing = run_patched(
        tmp_path,
        "from sapo_toolkit.linter import api\ndef fail(*args):\n    raise ValueError\napi.check_file = fail",
    )
    assert (no_units.returncode, failing.returncode) == (1, 2)
    assert json.loads(no_units.stdout)["summary"]["not_checked_reasons"] == [
        {"reason": "over-budget", "message": "over its work budget", "files": 1}
    ]
    assert json.loads(failing.stdout)["summary"]["not_checked_files"] == [
        {"path": str(tmp_path / "r.yaml"), "reason": "internal-error", "message": "sapo-lint failed on it"}
    ]


def test_json_summary_adds_the_counts_and_reasons(tmp_path):
    root = reasons_tree(tmp_path)
    summary = json.loads(sapo_lint(str(root), "--no-shellcheck", "--format", "json").stdout)["summary"]
    assert {k: summary[k] for k in ("files", "checked", "not_checked")} == {"files": 7, "checked": 1, "not_checked": 6}
    assert summary["not_checked_reasons"] == [
        {"reason": "exits-before-trainer", "message": "every path exits before the trainer", "files": 1},
        {"reason": "invalid-recipe", "message": "invalid recipe", "files": 1},
        {"reason": "no-snapshot", "message": "no snapshot for verl 0.0.1", "files": 1},
        {"reason": "unknown-config", "message": "unknown config `my_cfg`", "files": 1},
        {
            "reason": "unresolved-entry-module",
            "message": "unresolved entry module `recipe.mine.main_ppo`",
            "files": 1,
        },
        {"reason": "no-trainer-command", "message": "no trainer command", "files": 1},
    ]
    assert [(Path(f["path"]).name, f["reason"]) for f in summary["not_checked_files"]] == [
        ("broken.yaml", "invalid-recipe"),
        ("custom.sh", "unknown-config"),
        ("old.yaml", "no-snapshot"),
        ("retired.sh", "exits-before-trainer"),
        ("setup.sh", "no-trainer-command"),
        ("wrapper.sh", "unresolved-entry-module"),
    ]


def test_sarif_has_a_notification_per_file_not_checked_and_validates(tmp_path):
    reasons_tree(tmp_path)
    doc = json.loads(sapo_lint(".", "--no-shellcheck", "--format", "sarif", cwd=tmp_path).stdout)
    validate(doc)
    (run,) = doc["runs"]
    assert {k: run["properties"][k] for k in ("files", "checked", "notChecked")} == {
        "files": 7,
        "checked": 1,
        "notChecked": 6,
    }
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is True
    notified = [
        (
            n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            n["level"],
            n["properties"]["reason"],
            n["message"]["text"],
        )
        for n in invocation["toolExecutionNotifications"]
    ]
    assert notified == [
        ("broken.yaml", "warning", "invalid-recipe", "not checked: invalid recipe"),
        ("custom.sh", "warning", "unknown-config", "not checked: unknown config `my_cfg`"),
        ("old.yaml", "warning", "no-snapshot", "not checked: no snapshot for verl 0.0.1"),
        ("retired.sh", "warning", "exits-before-trainer", "not checked: every path exits before the trainer"),
        ("setup.sh", "note", "no-trainer-command", "not checked: no trainer command"),
        (
            "wrapper.sh",
            "warning",
            "unresolved-entry-module",
            "not checked: unresolved entry module `recipe.mine.main_ppo`",
        ),
    ]


def test_github_annotates_each_file_not_checked_helpers_with_verbose_only(tmp_path):
    script(tmp_path / "setup.sh", "echo hi")
    script(tmp_path / "custom.sh", f"{TRAINER} --config-name my_cfg trainer.nnodes=1")

    def not_checked(*options):
        out = sapo_lint(".", "--no-shellcheck", "--format", "github", *options, cwd=tmp_path).stdout
        return [line for line in out.splitlines() if "title=sapo-lint%3A not checked" in line]

    custom = "::warning file=custom.sh,title=sapo-lint%3A not checked::not checked: unknown config `my_cfg`"
    assert not_checked() == [custom]
    assert not_checked("-v") == [
        custom,
        "::notice file=setup.sh,title=sapo-lint%3A not checked::not checked: no trainer command",
    ]


def test_strict_fails_a_file_that_could_not_be_checked_not_a_helper(tmp_path):
    helper = str(script(tmp_path / "setup.sh", "echo hi"))
    custom = str(script(tmp_path / "custom.sh", f"{TRAINER} --config-name my_cfg trainer.nnodes=1"))
    codes = {
        options: sapo_lint(*options, "--no-shellcheck").returncode
        for options in (
            (custom,),
            (custom, "--strict"),
            (custom, "--strict", "--exit-zero"),
            (helper, "--strict"),
        )
    }
    assert list(codes.values()) == [0, 1, 0, 0]
    (tmp_path / "pyproject.toml").write_text("[tool.sapo-lint]\nstrict = true\n")
    assert sapo_lint(custom, "--no-shellcheck").returncode == 1
    assert sapo_lint(helper, "--no-shellcheck").returncode == 0


def test_summary_escapes_what_the_file_names(tmp_path):
    custom = script(tmp_path / "custom.sh", f"{TRAINER} --config-name 'my{ESC}]0;x{ESC}\\cfg' trainer.nnodes=1")
    out = sapo_lint(str(custom), "--no-shellcheck", "-v").stdout
    assert ESC not in out
    assert out.splitlines()[-1].endswith("not checked: unknown config `my\\x1b]0;x\\x1b\\cfg` (1).")


def test_ctrl_c_while_starting_exits_130_with_one_line(tmp_path):
    """SIGINT while the console script imports click (the bulk of a cold start, where a traceback used to come
    out): delivered from an import hook, so the moment is the same on any machine."""
    interrupt_at_click = (
        "import os, signal, sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'click':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from sapo_toolkit.linter.cli import main\n"
        "sys.exit(main())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", interrupt_at_click, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (128 + signal.SIGINT, "", "\n")
