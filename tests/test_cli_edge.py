"""The command lines live in linter/cli/ and launcher/cli/, one module per command, imported only when named;
through the console scripts, a command's `ctx.exit(code)` is the exit code a shell sees."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = Path(sysconfig.get_path("scripts"))


def test_a_doctor_usage_error_exits_2_through_the_console_script(tmp_path):
    done = subprocess.run(
        [str(SCRIPTS / "sapo-launch"), "doctor", "--format", "xml"],
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.startswith("sapo-launch doctor: Invalid value for '--format'") and done.stderr.count("\n") == 1


def test_linting_imports_only_the_check_command():
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(sorted(m for m in sys.modules if m.startswith('sapo_toolkit.linter.cli.')"
        " or m == 'rich'), file=sys.stderr))\n"
        "from sapo_toolkit.linter.cli import main\nsys.argv[0] = 'sapo-lint'\nmain()\n"
    )
    for args, loaded in (
        ([str(REPO / "recipes")], ["sapo_toolkit.linter.cli.check", "sapo_toolkit.linter.cli.options"]),
        (["--version"], []),
    ):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=REPO,
            env={**os.environ, "NO_COLOR": "1"},
        )
        assert done.returncode == 0, done
        assert done.stderr.strip().splitlines()[-1] == repr(loaded), done.stderr
