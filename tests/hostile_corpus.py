"""A generated directory of hostile lint inputs: one file (or directory) per input of the hardening issues, each
written as an attacker or a careless user would, none stored in the repository.

Used by tests/test_hostile_directory.py (everything in one `sapo-lint` run: every input gets its finding, nothing
crashes) and by bench/hostile.py (the same run, timed, with its peak memory).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NamedTuple

TRAINER = "python3 -m verl.trainer.main_ppo \\\n"
RECIPE_HEADER = (
    "recipe: sapo-recipe/v1\nname: hostile\nconfig_name: ppo_megatron_trainer\nmodel: {path: Qwen/Qwen3-8B}\n"
)
SECRET = "hf_s3cr3tVALUEthatMustNeverPrint"
DEEP = "dddd"  # 1,200 of these nested: deeper than the recursion limit, longer than PATH_MAX


class Hostile(NamedTuple):
    """One generated input: where it is (relative to the directory) and the codes of which at least one must be
    reported for it (an empty tuple: any outcome but a crash is fine, e.g. a comment that only has to be fast)."""

    path: str
    codes: tuple[str, ...]


def _script(*override_lines: str, before: str = "") -> str:
    body = "".join(f"    {line} \\\n" for line in override_lines)
    return f"#!/usr/bin/env bash\nset -x\n{before}{TRAINER}{body}    trainer.total_epochs=1\n"


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def nested_directories(root: Path, depth: int, name: str, script: str) -> str:
    """`depth` nested directories called `name` under `root`, with `script` (a run script's text) at the bottom;
    returns the script's path relative to `root`. Made with relative steps: the whole path may exceed PATH_MAX,
    which an absolute mkdir refuses (and os.makedirs recurses). Remove it with `remove_chain`."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with os.fdopen(os.open("run_deep_megatron.sh", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write(script)
    finally:
        os.close(fd)
    return "/".join([name] * depth + ["run_deep_megatron.sh"])


def remove_chain(root: Path, name: str) -> None:
    """Removes what `nested_directories` made, one level at a time (shutil.rmtree, and pytest's clean-up of old
    temporary directories, recurse on Python 3.11): the second level is moved up beside the first, the emptied
    first removed, and the second renamed into its place."""
    top, spare = root / name, root / (name + ".next")
    while (top / name).is_dir():
        (top / name).rename(spare)
        shutil.rmtree(top)
        spare.rename(top)
    shutil.rmtree(top)


def generate(root: Path) -> list[Hostile]:
    """Writes every hostile input under `root` (an empty directory) and says what each must get."""
    inputs: list[Hostile] = []

    def add(relative: str, text: str, *codes: str) -> None:
        _write(root, relative, text)
        inputs.append(Hostile(relative, codes))

    # Terminal injection: a name and a value with a newline, OSC and CSI sequences.
    add("evil\n\x1b]0;pwned\x07\x1b[2J.yaml", RECIPE_HEADER + "overrides:\n  trainer.nnodez: 1\n", "SL001")
    add("run_escape_megatron.sh", _script("trainer.project_name=x\x1b[31mfake\x07", "trainer.nnodez=1"), "SL001")
    # A secret of the wrong type.
    add("secret.yaml", RECIPE_HEADER + f"env: {{HF_TOKEN: [{SECRET}]}}\noverrides: {{}}\n", "RF001")
    # shellcheck: deep nesting, and external sources switched on by the repository's own rc file.
    nested = "".join(f'if [ -n "$A{i}" ]; then\n' for i in range(2000)) + "echo deep\n" + "fi\n" * 2000
    add("run_nested_megatron.sh", nested + _script("trainer.nnodez=1"), "SL001")
    _write(root, ".shellcheckrc", "external-sources=true\nsource-path=/dev\n")
    add(
        "run_zero_megatron.sh",
        "# shellcheck source=/dev/zero\nsource /dev/zero\n" + _script("trainer.nnodez=1"),
        "SL001",
    )
    # Quadratic or worse on a few KB.
    add("run_sum_megatron.sh", f"N=$(( {'+'.join(['1'] * 4000)} ))\n" + _script("trainer.nnodez=$N"), "SL001")
    add("run_pin_megatron.sh", "# " + "Megatron-LM " * 20000 + "\n" + _script("trainer.nnodez=1"), "SL001")
    add("run_long_megatron.sh", _script(*(f"+trainer.extra_{i}=1" for i in range(20000))), "SL003", "SL001")
    add(
        "unknown_keys.yaml",
        RECIPE_HEADER + "overrides: {" + ", ".join(f"k{i}: 1" for i in range(331000)) + "}\n",
        "SL001",
        "RF011",
    )
    items = "|".join(f"v{i}" for i in range(50000))
    add("run_case_megatron.sh", f'case "$X" in\n  {items}) Y=1 ;;\nesac\n' + _script("trainer.nnodez=1"), "SL001")
    add("interpolation.yaml", RECIPE_HEADER + 'overrides:\n  trainer.project_name: "${' + "." * 20000 + '"\n')
    # Integers beyond Python's int/str conversion limit.
    add(
        "hex_gpus.yaml",
        RECIPE_HEADER + "overrides:\n  trainer.n_gpus_per_node: 0x" + "f" * 100000 + "\n",
        "SL004",
        "RF002",
    )
    big = "9" * 2200
    add(
        "big_product.yaml",
        RECIPE_HEADER + f"overrides:\n  trainer.nnodes: {big}\n  trainer.n_gpus_per_node: {big}\n",
        "SL004",
    )
    squares = "".join("X=$((X*X))\n" for _ in range(20))
    # bash's arithmetic wraps at 64 bits, and so does the reader's: whatever the value, no crash
    add("run_square_megatron.sh", "X=99999\n" + squares + _script("trainer.nnodes=$X"))
    nested_directories(root, 1200, DEEP, _script("trainer.nnodez=1"))
    inputs.append(Hostile(DEEP, ("RF003",)))
    inputs += repositories_with_their_own_verl(root)
    # A file the other findings must not hide.
    add("typo.yaml", RECIPE_HEADER + "overrides:\n  actor_rollout_ref.actor.tau_poss: 1.0\n", "SL001")
    return inputs


# An environment variable the hostile run is given (tests/test_hostile_directory.py, bench/hostile.py), which a
# vendored config asks for; like SECRET, it must never be printed.
TOKEN_VARIABLE = "SAPO_HOSTILE_TOKEN"
CANARY = "canary-created"  # a file that code of a linted repository would create, were it ever run


def repositories_with_their_own_verl(root: Path) -> list[Hostile]:
    """Repositories (each a directory with `.git`) vendoring a verl tree or a config that is hostile to the snapshot
    build (the third hardening round): each script must get its finding (RF004: the tree cannot be snapshotted, or
    SL001: the typo of its script found against the tree that can), and no code of the repository runs."""
    from tests.helpers import tiny_verl

    inputs: list[Hostile] = []
    canary = f"open({str(root / CANARY)!r}, 'w').close()\nprint('CANARY-OUTPUT')\n"
    script = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.tiny_knob=3 trainer.tiny_typo=1\n"
    plain = "trainer:\n  nnodes: 1\n  tiny_knob: 2\n"

    def repository(name: str, config: str, *codes: str, script_text: str = script) -> Path:
        repo = root / name
        (repo / ".git").mkdir(parents=True)
        package = tiny_verl(repo)
        (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(config)
        _write(repo, "run_tiny_megatron.sh", script_text)
        inputs.append(Hostile(f"{name}/run_tiny_megatron.sh", codes))
        return package

    _write(root, "hydra_plugins/hostile_plugin/__init__.py", canary)  # on sys.path with `python -m` from the root
    _write(root, "hostile_module/__init__.py", canary)
    for scheme in ("pkg", "structured"):
        repository(f"repo_{scheme}", f"hydra:\n  searchpath:\n    - {scheme}://hostile_module\n{plain}", "SL001")
    package = repository("repo_env", f"defaults:\n  - g: ${{oc.env:{TOKEN_VARIABLE}}}\n  - _self_\n{plain}", "RF004")
    _write(package, "trainer/config/g/a.yaml", "x: 1\n")
    package = repository("repo_fifo", plain, "RF004")
    os.mkfifo(package / "trainer" / "stuck.py")
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
    )
    repository("repo_bomb", bomb + plain, "RF004")
    package = repository(
        "repo_selections", "defaults:\n" + "".join(f"  - g{i}: a\n" for i in range(10)) + plain, "RF004"
    )
    for i in range(10):
        for option in "ab":
            _write(package, f"trainer/config/g{i}/{option}.yaml", f"v{i}: {option}\n")
    package = repository(
        "repo_crash", "trainer:\n  _target_: verl.trainer.cfg.TrainerConfig\n  tiny_knob: 2\n", "RF004"
    )
    _write(package, "trainer/cfg.py", "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    package = repository("repo_version", plain, "SL001")
    _write(package, "version/version", "../../elsewhere/owned\n")
    repo = root / "repo_custom_fifo"
    repository(
        "repo_custom_fifo",
        plain,
        "RF004",
        script_text=script.replace("main_ppo ", "main_ppo --config-path=../../configs --config-name=c "),
    )
    _write(repo, "configs/c.yaml", "defaults:\n  - ppo_trainer\n  - _self_\n")
    os.mkfifo(repo / "configs" / "stuck.yaml")
    repo = root / "repo_wrapper"
    (repo / ".git").mkdir(parents=True)
    _write(repo, "pkg/main.py", "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    _write(repo, "run_wrapper_megatron.sh", "#!/bin/bash\npython3 -m pkg.main trainer.nnodez=1\n")
    inputs.append(Hostile("repo_wrapper/run_wrapper_megatron.sh", ()))
    repo = root / "repo_pin"
    (repo / ".git").mkdir(parents=True)
    _write(repo, "requirements.txt", "\n" * 200_000 + "verl==0.8.0\n" + "pip install " * 20_000 + "\n")
    _write(
        repo, "run_pin_megatron.sh", "#!/bin/bash\n# " + "pip install " * 50_000 + "\n" + _script("trainer.nnodez=1")
    )
    inputs.append(Hostile("repo_pin/run_pin_megatron.sh", ("SL001",)))
    return inputs
