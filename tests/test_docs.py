"""The README and docs/ cannot rot: every relative link resolves (to a file, and to a heading for `#anchor`), and every
`sapo-lint`/`sapo-launch` command in the README's `console`/`bash` blocks runs, from the repository root through the
console scripts, with the exit code it shows (`# exit N` at the end of the line). `text` blocks are never run: they
hold commands that need an accelerator, a cluster or files the repository does not have."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from .helpers import REPO
from .test_sarif import github_anchor

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
RUN_LANGUAGES = {"console", "bash", "sh", "shell"}
TOOLS = ("sapo-lint", "sapo-launch")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
SHOWN_EXIT = re.compile(r"^(?P<command>.+?)\s+#\s*exit\s+(?P<code>\d+)\s*$")


def prose(text: str) -> str:
    """`text` without fenced blocks and code spans, where brackets are code, not links."""
    return re.sub(r"(`+).+?\1", "", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    return {github_anchor(h) for h in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8")))}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check offline
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.is_relative_to(REPO) or not resolved.exists():
            broken.append(f"{page.relative_to(REPO)}: {target} (no such file in the repository)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{page.relative_to(REPO)}: {target} (no heading with that anchor)")
    return broken


def readme_commands() -> list[str]:
    """The command lines of the README's runnable blocks that start with one of the tools."""
    commands = []
    for language, body in FENCE.findall(README.read_text(encoding="utf-8")):
        if language in RUN_LANGUAGES:
            lines = (line.removeprefix("$ ") for line in body.splitlines())
            commands += [line for line in lines if line.split(" ", 1)[0] in TOOLS]
    return commands


def console_script(name: str) -> str:
    """The installed console script, looked up next to this Python first (a venv that is not activated)."""
    found = shutil.which(name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    assert found, f"console script {name} is not installed: pip install ."
    return found


def test_every_relative_link_in_readme_and_docs_resolves():
    assert [broken for page in PAGES for broken in broken_links(page)] == []


def test_readme_commands_exit_with_the_code_they_show():
    runs = REPO / "runs"
    before = set(runs.iterdir()) if runs.exists() else None
    commands = readme_commands()
    assert {command.split(" ", 1)[0] for command in commands} == set(TOOLS), commands
    try:
        for command in commands:
            shown = SHOWN_EXIT.match(command)
            assert shown, f"README: `{command}` does not show its exit code (end the line with `# exit N`)"
            argv = shlex.split(shown["command"])
            proc = subprocess.run(
                [console_script(argv[0]), *argv[1:]], check=False, cwd=REPO, capture_output=True, text=True, timeout=120
            )
            assert proc.returncode == int(shown["code"]), f"{command}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    finally:  # the launch example's run directory: only what this test made
        for made in (set(runs.iterdir()) - (before or set())) if runs.exists() else ():
            shutil.rmtree(made)
        if before is None and runs.exists() and not any(runs.iterdir()):
            runs.rmdir()


def test_readme_is_a_front_door_with_the_set_up_commands_ci_runs():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 10 * 1024
    bash_blocks = [body.strip() for language, body in FENCE.findall(text) if language == "bash"]
    assert bash_blocks == ["pip install . && sapo-lint recipes/", "pip install '.[test]' && python -m pytest -q"]
    assert bash_blocks[1] in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
