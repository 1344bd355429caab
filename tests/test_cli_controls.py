"""End to end through the console script: the controls a ruff user reaches for (--diff, --exit-zero, --quiet,
--output-file, --exclude, stdin, --color, Ctrl-C, a closed pipe, the progress bar), configuration found from each
linted path, and the `rules` / `rule` commands."""

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import REPO
from .test_cli import TAU_BUG, TAU_NEG, sapo_lint, write

UNKNOWN_KEY = "overrides:\n  trainer.nnodez: 2\n"
ANSI = "\x1b["


def command(*args):
    exe = shutil.which("sapo-lint")
    return [exe, *args] if exe else [sys.executable, "-m", "sapo_toolkit.linter", *args]


# --- --diff, --exit-zero, --quiet, --output-file --------------------------------------------------------------------


def test_diff_shows_what_fix_would_change_and_changes_nothing(tmp_path):
    path = write(tmp_path / "r.yaml", TAU_BUG + TAU_NEG)
    before = path.read_text()
    proc = sapo_lint(str(path), "--diff")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(f"--- {path}\n+++ {path}\n@@ ")
    assert (
        "-  +actor_rollout_ref.actor.policy_loss.tau_pos: 1.2\n+  actor_rollout_ref.actor.tau_pos: 1.2\n"
    ) in proc.stdout
    assert "Would fix 1 override in 1 file." in proc.stderr
    assert path.read_text() == before

    sapo_lint(str(path), "--fix")
    proc = sapo_lint(str(path), "--diff")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert sapo_lint(str(path), "--diff", "--fix").returncode == 2


def test_exit_zero_keeps_findings_but_not_usage_errors(tmp_path):
    path = write(tmp_path / "r.yaml", UNKNOWN_KEY)
    assert sapo_lint(str(path), "--select", "SL").returncode == 1
    proc = sapo_lint(str(path), "--select", "SL", "--exit-zero")
    assert proc.returncode == 0 and "SL001" in proc.stdout
    assert sapo_lint(str(path), "--exit-zero", "--select", "XX").returncode == 2
    (tmp_path / "binary.yaml").write_bytes(b"recipe: \0")
    assert sapo_lint(str(tmp_path / "binary.yaml"), "--exit-zero").returncode == 2  # unreadable is not a finding


def test_quiet_prints_only_the_findings(tmp_path):
    path = write(tmp_path / "r.yaml", UNKNOWN_KEY)
    proc = sapo_lint(str(path), "--select", "SL", "-q", "--format", "concise")
    assert proc.returncode == 1 and [line.split(": ")[1].split()[0] for line in proc.stdout.splitlines()] == ["SL001"]
    assert "Found" not in proc.stdout and "Found" not in sapo_lint(str(path), "--select", "SL", "-q").stdout
    clean = write(tmp_path / "clean.yaml", "overrides:\n  trainer.nnodes: 2\n")
    assert sapo_lint(str(clean), "--select", "SL", "--quiet").stdout == ""
    assert "All checks passed" in sapo_lint(str(clean), "--select", "SL").stdout
    fixed = sapo_lint(str(write(tmp_path / "t.yaml", TAU_BUG + TAU_NEG)), "--fix", "--quiet")
    assert "Fixed" not in fixed.stderr


def test_output_file_is_written_whole_and_stdout_stays_empty(tmp_path):
    path = write(tmp_path / "r.yaml", UNKNOWN_KEY)
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    report.write_text("an older report that is much longer than the new one " * 100)
    proc = sapo_lint(str(path), "--select", "SL", "--format", "json", "--output-file", str(report))
    assert proc.returncode == 1 and proc.stdout == ""
    assert [d["code"] for d in json.loads(report.read_text())["diagnostics"]] == ["SL001"]
    assert list(report.parent.iterdir()) == [report]  # no temporary file left beside it
    proc = sapo_lint(str(path), "-o", str(tmp_path / "missing" / "report.txt"))
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "cannot write" in proc.stderr


# --- --exclude / --extend-exclude ----------------------------------------------------------------------------------


def test_exclude_on_the_command_line_replaces_and_extend_exclude_adds(tmp_path):
    for where in ("recipes", "experiments", "scratch"):
        (tmp_path / where).mkdir()
        write(tmp_path / where / "r.yaml", UNKNOWN_KEY)
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nexclude = ["experiments"]\n')

    def linted(*args):
        proc = sapo_lint(".", "--select", "SL", "--format", "json", *args, cwd=tmp_path)
        return {d["path"].split("/")[0] for d in json.loads(proc.stdout)["diagnostics"]}

    assert linted() == {"recipes", "scratch"}
    assert linted("--exclude", "scratch") == {"recipes", "experiments"}  # instead of the pyproject's
    assert linted("--extend-exclude", "scratch") == {"recipes"}  # besides it
    assert linted("--exclude", "scratch,recipes") == {"experiments"}
    proc = sapo_lint(".", "--extend-exclude", "*/r.yaml", cwd=tmp_path)  # a file glob: nothing left to lint
    assert proc.returncode == 2 and "no recipes or run scripts found" in proc.stderr


# --- standard input --------------------------------------------------------------------------------------------------


def test_stdin_is_linted_as_the_named_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nselect = ["SL", "SH001"]\n')
    text = tmp_path / "unused.yaml"
    write(text, UNKNOWN_KEY)
    name = str(tmp_path / "sub" / "r.yaml")  # need not exist; its project's settings apply
    proc = subprocess.run(
        command("-", "--stdin-filename", name, "--format", "json"),
        input=text.read_text(),
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert [(d["path"], d["code"], d["line"]) for d in json.loads(proc.stdout)["diagnostics"]] == [(name, "SL001", 6)]

    script = 'ARGS=(trainer.nnodes=1)\npython3 -m verl.trainer.main_ppo "${ARGS[@]}" "${PREFIX}.x=1"\n'
    proc = subprocess.run(
        command("-", "--stdin-filename", "run_qwen3_8b_fsdp.sh"),
        input=script,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.stdout.startswith("run_qwen3_8b_fsdp.sh:2:") and "SH001" in proc.stdout, proc.stdout + proc.stderr

    proc = subprocess.run(command("-"), input=script, capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "--stdin-filename" in proc.stderr
    proc = subprocess.run(
        command("-", str(tmp_path), "--stdin-filename", "x.sh"),
        input=script,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "alone" in proc.stderr


# --- colour --------------------------------------------------------------------------------------------------------


def run_on_a_terminal(args, env, cwd=None):
    """Run with stdout on a pseudo-terminal; its output as read from the terminal."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        command(*args), stdout=follower, stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True
    )
    os.close(follower)
    try:
        out = b"".join(terminal_chunks(leader, proc))
        proc.wait(timeout=60)
    finally:
        os.close(leader)
    return out.decode()


# A process on a terminal still running this long after it started is hung (a run here takes seconds, minutes on a
# busy machine): it is killed with its workers and the test fails, rather than the test run waiting for ever.
HUNG_AFTER_S = 300


def terminal_chunks(leader: int, proc: subprocess.Popen):
    """What `proc`, on the other side of a pseudo-terminal, writes, chunk by chunk, until it closes it. A process
    silent for 60 s, or still writing after HUNG_AFTER_S (a progress bar redrawn by a hung run), fails the test."""
    hung_at = time.monotonic() + HUNG_AFTER_S
    while True:
        left = hung_at - time.monotonic()
        if left <= 0 or not select.select([leader], [], [], min(60, left))[0]:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"hung: still running after {HUNG_AFTER_S} s, or silent for 60 s; killed")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            return
        if not chunk:
            return
        yield chunk


def test_color_auto_always_never_and_no_color(tmp_path):
    path = str(write(tmp_path / "r.yaml", UNKNOWN_KEY))
    plain = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert ANSI not in sapo_lint(path, "--select", "SL", env={"NO_COLOR": ""}).stdout  # auto, not a terminal
    assert ANSI in sapo_lint(path, "--select", "SL", "--color", "always").stdout  # NO_COLOR=1 from sapo_lint
    assert ANSI in run_on_a_terminal([path, "--select", "SL"], plain)
    assert ANSI not in run_on_a_terminal([path, "--select", "SL"], {**plain, "NO_COLOR": "1"})
    assert ANSI not in run_on_a_terminal([path, "--select", "SL", "--color", "never"], plain)


# --- Ctrl-C, a closed pipe, the progress bar ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def many_recipes(tmp_path_factory):
    """Enough recipes, each different, for a run of several seconds (1,200 take about 1.5 s)."""
    root = tmp_path_factory.mktemp("many")
    for i in range(MANY):
        write(root / f"r{i:04}.yaml", f"{UNKNOWN_KEY}  trainer.total_epochs: {i + 1}\n")
    return root


MANY = 3000


def stderr_on_a_terminal(argv, on_output=lambda proc, shown: None) -> tuple[subprocess.Popen, str]:
    """Run `argv` with stderr on a pseudo-terminal, calling `on_output(proc, what it showed so far)` as output comes
    (escape sequences removed); the ended process and all it showed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=follower, start_new_session=True)
    os.close(follower)
    seen, shown = b"", ""
    try:
        for chunk in terminal_chunks(leader, proc):
            seen += chunk
            shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen).decode(errors="replace")
            on_output(proc, shown)
        proc.wait(timeout=60)
    finally:
        os.close(leader)
    return proc, shown


# sapo-lint, with the last recipe's check never ending: the run is still linting whenever the signal comes.
LAST_FILE_NEVER_ENDS = f"""
import sys, time
from sapo_toolkit.linter import api
check_file = api.check_file
def never_ends_on_the_last(loaded, *args, **kwargs):
    if loaded.source.path.endswith("r{MANY - 1:04}.yaml"):
        time.sleep(3600)
    return check_file(loaded, *args, **kwargs)
api.check_file = never_ends_on_the_last
from sapo_toolkit.linter.cli import main
sys.argv[0] = "sapo-lint"
main()
"""


def test_ctrl_c_exits_130_without_a_traceback(many_recipes):
    """Ctrl-C in the middle of linting, however slow or busy the machine: the signal goes once the progress bar
    shows files still to lint, and the run cannot end before it (its last file's check never ends)."""
    interrupted = []

    def interrupt_once_linting(proc, shown):
        if not interrupted and re.search(rf"\b\d+/{MANY} files", shown):
            proc.send_signal(signal.SIGINT)
            interrupted.append(shown)

    argv = [sys.executable, "-c", LAST_FILE_NEVER_ENDS, str(many_recipes)]
    proc, shown = stderr_on_a_terminal(argv, interrupt_once_linting)
    assert interrupted, f"no progress bar: {shown[-500:]}"
    assert proc.returncode == 130, shown[-2000:]
    assert "Traceback" not in shown and "KeyboardInterrupt" not in shown


def test_a_closed_pipe_ends_the_run_quietly():
    proc = subprocess.Popen(command("rules"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    fcntl.fcntl(proc.stdout, fcntl.F_SETPIPE_SZ, 4096)  # smaller than the table: the writer meets the closed pipe
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=30)
    assert first.startswith(b"BS001")
    assert err == "" and proc.returncode == 141, (proc.returncode, err)


def test_progress_bar_on_a_terminal_only_after_a_second(many_recipes, tmp_path):
    # not a terminal: nothing on stderr however long the run
    proc = subprocess.run(command(str(many_recipes), "-q"), capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and proc.stderr == ""
    # stderr on a terminal: the bar appears once the run passes a second
    _, shown = stderr_on_a_terminal(command(str(many_recipes)))
    assert "sapo-lint" in shown and f"{MANY}/{MANY} files" in shown, shown[-500:]
    # a short run on a terminal shows none
    leader, follower = pty.openpty()
    quick = subprocess.run(
        command(str(write(tmp_path / "r.yaml", UNKNOWN_KEY)), "--select", "SL"),
        stdout=subprocess.DEVNULL,
        stderr=follower,
        check=False,
    )
    os.close(follower)
    try:
        written = os.read(leader, 65536)
    except OSError:  # EIO: the terminal was closed with nothing written to it
        written = b""
    os.close(leader)
    assert quick.returncode == 1 and written == b""


# --- configuration -------------------------------------------------------------------------------------------------


def test_settings_come_from_the_linted_paths_project_not_the_current_directory(tmp_path):
    repo, other, elsewhere = tmp_path / "repo", tmp_path / "other", tmp_path / "elsewhere"
    for where in (repo / "recipes", other, elsewhere):
        where.mkdir(parents=True)
    write(repo / "recipes" / "r.yaml", UNKNOWN_KEY + "  trainer.total_epochs: 1\n  trainer.total_epochs: 2\n")
    write(other / "r.yaml", UNKNOWN_KEY + "  trainer.total_epochs: 1\n  trainer.total_epochs: 2\n")
    (repo / "pyproject.toml").write_text('[tool.sapo-lint]\nselect = ["SL001"]\n')
    (repo / "recipes" / "pyproject.toml").write_text('[project]\nname = "no-sapo-lint-table"\n')  # passed over
    (other / "pyproject.toml").write_text('[tool.sapo-lint]\nselect = ["SL008"]\n')
    (elsewhere / "pyproject.toml").write_text('[tool.sapo-lint]\nselect = ["SP"]\n')

    def found(*paths):
        proc = sapo_lint(*map(str, paths), "--format", "json", cwd=elsewhere)
        return sorted((d["path"].split("/")[-2], d["code"]) for d in json.loads(proc.stdout)["diagnostics"])

    assert found(repo) == [("recipes", "SL001")]
    # two projects in one run: each file with its own project's settings
    assert found(repo, other / "r.yaml") == [("other", "SL008"), ("recipes", "SL001")]


def test_a_symlinked_folder_is_linted_with_the_settings_of_the_project_it_is_linked_into(tmp_path):
    outside, project = tmp_path / "outside", tmp_path / "project"
    outside.mkdir()
    project.mkdir()
    write(outside / "r.yaml", UNKNOWN_KEY + "  trainer.total_epochs: 1\n  trainer.total_epochs: 2\n")
    (project / "pyproject.toml").write_text('[tool.sapo-lint]\nselect = ["SL008"]\n')
    (project / "examples").symlink_to(outside, target_is_directory=True)
    proc = sapo_lint("examples", "--format", "json", cwd=project)
    assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["SL008"]


def test_a_configuration_error_is_one_line_naming_the_file_and_key(tmp_path):
    write(tmp_path / "r.yaml", UNKNOWN_KEY)
    pyproject = tmp_path / "pyproject.toml"
    for table, key in [
        ('select = ["XX9"]', "select"),
        ('ignore = ["SL", "nope"]', "ignore"),
        ("warnings-as-errors = 3", "warnings-as-errors"),
        ('selekt = ["SL"]', "selekt"),
    ]:
        pyproject.write_text(f"[tool.sapo-lint]\n{table}\n")
        proc = sapo_lint(str(tmp_path))
        assert proc.returncode == 2 and proc.stdout == ""
        (line,) = proc.stderr.splitlines()
        assert line.startswith(f"sapo-lint: {pyproject}: ") and key in line and "Usage" not in line, line


def test_the_checkout_lints_clean_with_plain_sapo_lint():
    proc = sapo_lint(cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "All checks passed" in proc.stdout


# --- rules and rule --------------------------------------------------------------------------------------------------


def test_rules_table_aligns_every_summary():
    lines = sapo_lint("rules").stdout.splitlines()
    assert any(line.split()[1] == "[*]" for line in lines)  # the rules with fixes are marked
    starts = set()
    for line in lines:
        code, severity, name, summary = line.replace("[*]", "   ").split(maxsplit=3)
        starts.add(line.index(summary, line.index(name) + len(name)))
    assert len(starts) == 1, starts


def test_rule_for_an_unknown_code_is_an_error_and_a_shellcheck_code_is_explained():
    for code in ("SH9999", "XX1", "SL999"):
        proc = sapo_lint("rule", code)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        (line,) = proc.stderr.splitlines()
        assert line.startswith(f"sapo-lint: no rule {code}") and "Usage" not in line
    proc = sapo_lint("rule", "sh2086")
    assert proc.returncode == 0 and proc.stdout.startswith("SH2086 is shellcheck's SC2086")


def test_virtual_environments_under_any_name_are_not_walked(tmp_path):
    # CI builds verl's venv as `.verl-venv` inside the checkout; its packages ship shell scripts (ray's).
    venv = tmp_path / ".verl-venv"
    (tmp_path / ".git").mkdir()  # a repository whose pre-commit hook runs verl's naming check on every folder
    (tmp_path / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: check-example-naming\n"
        "    entry: python3 tests/special_sanity/check_example_naming.py --root .\n"
    )
    for script in (venv / "lib" / "python3" / "ray" / "examples" / "waiter.sh", tmp_path / "examples" / "helper.sh"):
        script.parent.mkdir(parents=True)
        script.write_text("python3 -m verl.trainer.main_ppo\n")  # run scripts under the hook's root: NM names them
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    proc = sapo_lint(str(tmp_path), "--no-shellcheck", "--select", "NM")
    assert "helper.sh" in proc.stdout and "waiter.sh" not in proc.stdout, proc.stdout
    (venv / "pyvenv.cfg").unlink()  # not a virtual environment: walked like any folder
    assert "waiter.sh" in sapo_lint(str(tmp_path), "--no-shellcheck", "--select", "NM").stdout


# --- parallel linting ------------------------------------------------------------------------------------------------


def test_a_long_run_lints_in_forked_workers_with_the_same_result(tmp_path, monkeypatch):
    from sapo_toolkit.linter import api, lint
    from sapo_toolkit.linter.settings import SettingsFinder

    corpus = REPO.parent / "shared" / "corpus" / "verl-examples"
    scripts = sorted(corpus.rglob("*.sh"))[:12] if corpus.is_dir() else []
    for i in range(40):
        write(tmp_path / f"r{i:02}.yaml", f"{UNKNOWN_KEY}  trainer.total_epochs: {i % 3}\n")
    for i, script in enumerate(scripts + sorted((REPO / "tests" / "fixtures" / "scripts").glob("*.sh"))):
        shutil.copy(script, tmp_path / f"s{i:02}_{script.name}")
    (tmp_path / "bad.yaml").write_bytes(b"recipe: sapo-recipe/v1\nname: \xff\n")  # not UTF-8: unreadable
    named = write(tmp_path / "notes.txt", "no recipe\n")

    def lint_all():
        result = lint.lint_paths([tmp_path, named], SettingsFinder(), [])
        return result.diagnostics, result.files, result.unreadable, result.named_but_skipped

    sequential = lint_all()
    pids = tmp_path / "pids"
    real_load = api.load

    def load_and_record(path, options):
        with open(pids, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        return real_load(path, options)

    monkeypatch.setattr(api, "load", load_and_record)
    monkeypatch.setattr(lint, "FILES_PER_WORKER", 1)
    monkeypatch.setattr(lint, "_cores", lambda: 2)
    parallel = lint_all()
    first, *rest = pids.read_text().split()  # the first file here (it loads what the workers share), then forks
    workers = set(rest)
    assert first == str(os.getpid()) and len(workers) == 2 and first not in workers, (first, workers)
    assert parallel == sequential
    assert sequential[1] > 50 and sequential[2] == 1 and sequential[3] == 1


def test_where_fork_fails_a_long_run_is_linted_in_one_process(tmp_path, monkeypatch):
    from sapo_toolkit.linter import lint
    from sapo_toolkit.linter.settings import SettingsFinder

    for i in range(4):
        write(tmp_path / f"r{i}.yaml", f"{UNKNOWN_KEY}  trainer.total_epochs: {i + 1}\n")
    sequential = lint.lint_paths([tmp_path], SettingsFinder(), []).diagnostics

    def no_more_processes():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_more_processes)
    monkeypatch.setattr(lint, "FILES_PER_WORKER", 1)
    monkeypatch.setattr(lint, "_cores", lambda: 2)
    assert lint.lint_paths([tmp_path], SettingsFinder(), []).diagnostics == sequential
    assert len(sequential) == 4


def fake_files(count):
    return [Path(f"f{i:03}") for i in range(count)]


def test_a_worker_that_dies_has_its_files_linted_here(monkeypatch):
    """A worker killed mid-run (out of memory, a signal) loses nothing: its batch is linted by the main process and
    every outcome comes back, in order."""
    from sapo_toolkit.linter import lint

    main = os.getpid()

    def lint_file(path):
        if path.name == "f005" and os.getpid() != main:
            os.kill(os.getpid(), signal.SIGKILL)
        return path.name, os.getpid() == main

    monkeypatch.setattr(lint, "_cores", lambda: 2)
    files = fake_files(2 * lint.FILES_PER_WORKER + 7)
    with lint._outcomes(files, lint_file) as outcomes:
        got = list(outcomes)
    assert [name for name, _ in got] == [f.name for f in files]
    assert dict(got)["f005"] is True  # linted here
    assert not all(here for _, here in got)  # the others in workers


def test_an_interrupted_long_run_kills_its_workers_at_once(tmp_path, monkeypatch):
    """Ctrl-C while a worker is busy for an hour: the run ends at once and leaves no process behind
    (multiprocessing.Pool's teardown once hung here, on a lock its idle worker held)."""
    from sapo_toolkit.linter import lint

    files = fake_files(2 * lint.FILES_PER_WORKER + 1)
    main = os.getpid()
    pids = tmp_path / "pids"

    def lint_file(path):
        with open(pids, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        if path == files[-1]:
            os.kill(main, signal.SIGINT)  # Ctrl-C, once this worker is busy
            time.sleep(3600)
        return path

    monkeypatch.setattr(lint, "_cores", lambda: 2)
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as in sapo-lint, not as in xdist
    try:
        with pytest.raises(KeyboardInterrupt), lint._outcomes(files, lint_file) as outcomes:
            list(outcomes)
    finally:
        signal.signal(signal.SIGINT, interrupt)
    workers = {int(pid) for pid in pids.read_text().split()} - {main}
    assert workers and not workers & set(child_pids())


def child_pids():
    return [int(p) for p in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()]
