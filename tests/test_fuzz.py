"""Fuzz tests: every reader takes hostile input without an uncaught exception, within a bounded time, and reports
only at places inside its input.

Readers: recipe YAML and bash run scripts (through `lint_paths`, as `sapo-lint` reads them), Hydra override strings
(`parse_override`, and `--override` through `lint_paths`), a model's `config.json` (`find_model`, and through a
recipe whose `model.path` points at it), `[tool.sapo-lint]` (`load_settings`), and verl's log lines (the launcher's
`metrics` module). A smaller sample of generated files goes end to end through `python -m sapo_toolkit.linter`.

Budget: `SAPO_FUZZ_PROFILE` picks a hypothesis profile, `ci` (the default: 200 examples per test, the whole file
in about 20 s) or `big` (10,000 per test); `SAPO_FUZZ_EXAMPLES=N` sets the examples per test under either. The
end-to-end tests start a process per example, so they run a tenth as many (`SAPO_FUZZ_CLI_EXAMPLES` sets them).
The big run, with per-test figures:

    SAPO_FUZZ_PROFILE=big python -m pytest tests/test_fuzz.py -p no:cacheprovider --hypothesis-show-statistics

Each example must finish within `DEADLINE` (the slowest real input takes well under 0.2 s).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sapo_toolkit.launcher import metrics
from sapo_toolkit.linter.catalog import ModelNotFound, find_model
from sapo_toolkit.linter.core.model import ModelShape
from sapo_toolkit.linter.core.overrides import OPS, OverrideSyntaxError, ParsedOverride, parse_override
from sapo_toolkit.linter.lint import lint_paths
from sapo_toolkit.linter.settings import KEYS, Settings, SettingsError, load_settings

from .helpers import REPO

DEADLINE = timedelta(seconds=5)
_BASE = {
    "deadline": DEADLINE,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
}
settings.register_profile("sapo-fuzz-ci", max_examples=200, **_BASE)
settings.register_profile("sapo-fuzz-big", max_examples=10_000, **_BASE)
_PROFILE = settings.get_profile("sapo-fuzz-" + os.environ.get("SAPO_FUZZ_PROFILE", "ci"))
EXAMPLES = int(os.environ.get("SAPO_FUZZ_EXAMPLES", _PROFILE.max_examples))
CLI_EXAMPLES = int(os.environ.get("SAPO_FUZZ_CLI_EXAMPLES", max(3, EXAMPLES // 10)))
FUZZ = settings(_PROFILE, max_examples=EXAMPLES)
# A process start costs ~0.5 s and varies with the machine's load: the subprocess timeout is the hang guard.
FUZZ_CLI = settings(_PROFILE, max_examples=CLI_EXAMPLES, deadline=None)
NO_SHELLCHECK = Settings(shellcheck=False)
# Hydra warns about `@_name_` packages in generated overrides (sapo-lint lets it: test_overrides.py).
pytestmark = pytest.mark.filterwarnings("ignore:.*_name_ keyword is deprecated:UserWarning")

RECIPES = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "recipes").glob("*.yaml"))}
FIXTURE_SCRIPTS = {
    p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "tests/fixtures/scripts").glob("*.sh"))
}
# Real verl example scripts (read-only input, not part of the repository): mutated when present.
CORPUS = REPO.parent / "shared" / "corpus" / "verl-examples"
CORPUS_SCRIPTS = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(CORPUS.rglob("*.sh"))}
SCRIPTS = {**CORPUS_SCRIPTS, **FIXTURE_SCRIPTS}
MODEL_CARDS = [
    json.loads(p.read_text(encoding="utf-8"))["config"] for p in sorted((REPO / "schemas/models").glob("*.json"))
]


# --------------------------------------------------------------------------- #
# The properties
# --------------------------------------------------------------------------- #


def line_count(text: str) -> int:
    """Lines in the file, by `\\n` or by every line break Python and YAML know (NEL, U+2028, ...); an empty file
    has one (empty) line."""
    by_newline = text.count("\n") + (not text.endswith("\n"))
    return max(1, by_newline, len(text.splitlines()))


def assert_inside(diagnostics, path: Path, text: str, cli_overrides: int = 0) -> None:
    """Every diagnostic is at a line of the file, or at one of the `--override` arguments."""
    lines = line_count(text)
    for d in diagnostics:
        where = d.location
        if where.path == "--override":
            assert 1 <= where.line <= cli_overrides, d
        else:
            assert where.path == str(path), d
            assert 1 <= where.line <= lines, (d, lines)
        assert where.column >= 1, d


def write(path: Path, content: str | bytes) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


@contextmanager
def written(name: str, content: str | bytes):
    """A fresh directory holding one file; yields the file's path. (Hypothesis runs many examples per test, so
    pytest's per-test `tmp_path` cannot be used.)"""
    with tempfile.TemporaryDirectory() as directory:
        write(Path(directory, name), content)
        yield Path(directory, name)


def as_read(content: str | bytes) -> str:
    """The text the linter sees (line numbers are counted on it)."""
    return content.decode("utf-8", "replace") if isinstance(content, bytes) else content


def lint_one(name: str, content: str | bytes, cli_overrides: list[str] = (), lint_settings: Settings = NO_SHELLCHECK):
    with written(name, content) as path:
        result = lint_paths([path], lint_settings, list(cli_overrides))
        assert_inside(result.diagnostics, path, as_read(content), len(cli_overrides))
    record_reach(result.diagnostics)


def record_reach(diagnostics) -> None:
    """How deep the inputs get, in `--hypothesis-show-statistics`: the rule families that reported."""
    for family in sorted({d.code.rstrip("0123456789") for d in diagnostics}) or ["no finding"]:
        event(f"reported {family}")


# --------------------------------------------------------------------------- #
# Strategies: line-level mutations shared by the YAML and bash generators
# --------------------------------------------------------------------------- #


def _index(draw, lines: list[str]) -> int:
    return draw(st.integers(0, max(0, len(lines) - 1)))


def delete_line(draw, lines, tokens):
    del lines[_index(draw, lines)]


def duplicate_line(draw, lines, tokens):
    lines.insert(_index(draw, lines), lines[_index(draw, lines)])


def swap_lines(draw, lines, tokens):
    i, j = _index(draw, lines), _index(draw, lines)
    lines[i], lines[j] = lines[j], lines[i]


def insert_soup_line(draw, lines, tokens):
    lines.insert(_index(draw, lines), "".join(draw(st.lists(st.sampled_from(tokens), max_size=8))))


def insert_token(draw, lines, tokens):
    i = _index(draw, lines)
    at = draw(st.integers(0, len(lines[i])))
    lines[i] = lines[i][:at] + draw(st.sampled_from(tokens)) + lines[i][at:]


def replace_word(draw, lines, tokens):
    i = _index(draw, lines)
    words = lines[i].split(" ")
    words[_index(draw, words)] = draw(st.sampled_from(tokens) | st.text(max_size=6))
    lines[i] = " ".join(words)


def delete_char(draw, lines, tokens):
    i = _index(draw, lines)
    if lines[i]:
        at = draw(st.integers(0, len(lines[i]) - 1))
        lines[i] = lines[i][:at] + lines[i][at + 1 :]


def reindent(draw, lines, tokens):
    i = _index(draw, lines)
    lines[i] = draw(st.sampled_from(["", " ", "   ", "\t", "  \t", " " * 40])) + lines[i].lstrip(" \t")


def random_line(draw, lines, tokens):
    lines[_index(draw, lines)] = draw(st.text(max_size=30))


def truncate(draw, lines, tokens):
    text = "\n".join(lines)
    lines[:] = text[: draw(st.integers(0, len(text)))].split("\n")


LINE_MUTATIONS = [
    delete_line,
    duplicate_line,
    swap_lines,
    insert_soup_line,
    insert_token,
    replace_word,
    delete_char,
    reindent,
    random_line,
    truncate,
]


def mutate(draw, text: str, mutations, tokens) -> str:
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 6))):
        draw(st.sampled_from(mutations))(draw, lines, tokens)
        if not lines:
            lines = [""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# Recipe YAML
# --------------------------------------------------------------------------- #

ODD_SCALARS = [
    "1e400",
    "-1e400",
    "1e-400",
    ".nan",
    ".NaN",
    ".inf",
    "-.Inf",
    "+.INF",
    "9" * 30,
    "-" + "9" * 5000,
    "0x1F",
    "0o17",
    "0b101",
    "1_000",
    "1:30:00",
    "190:20:30.15",
    "~",
    "null",
    "NULL",
    "true",
    "yes",
    "on",
    "off",
    "y",
    "n",
    "''",
    '""',
    "'\t'",
    '"\\t"',
    '"\\u0000"',
    '"\\ud800"',
    '"\\U0010FFFF"',
    '"\\x85"',
    "ä-ü",
    "日本語",
    "🙂",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "!!binary aGVsbG8=",
    "!!int x",
    "!!int 1e400",
    "!!float x",
    "!!bool maybe",
    "!!timestamp x",
    "!!null x",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!!pairs [a: 1]",
    "!!str",
    "!!map x",
    "!!seq x",
    "!!python/object:os.system x",
    "!custom x",
    "!<tag:example.com,2000:x> 1",
    "&a 1",
    "*a",
    "*nowhere",
    "[a, *a]",
    "{<<: *a}",
    "{<<: [*a, *a]}",
    "<<",
    "|\n    block",
    ">-\n    folded",
    "'unterminated",
    '"unterminated',
    "[",
    "{",
    "]",
    "}",
    ":",
    "- ",
    "? ",
    "#",
    "%",
    "@",
    "`",
    "\t",
    "${oc.env:HOME}",
    "${",
    "???",
    "=",
    "a=b",
    "\\",
    "\x85",
    "\u2028",
    "\ufeff",
    "[" * 80 + "]" * 80,
    "{a: " * 80 + "1" + "}" * 80,
    "[1, 2, 3]",
    "{}",
    "[]",
    "{a: 1}",
    "- 1\n  - 2",
    "0",
    "-1",
    "1.5",
    "-0.0",
    "2",
    "1024",
    "~nobody_here/model",
    '"a\\0b"',
    "/a" * 3000,
    "Qwen/Qwen3-8B",
    "deepseek-v3",
    "nvidia-h100",
    "ascend-910b3",
]
ODD_KEYS = [
    "+a.b",
    "++a.b",
    "~a.b",
    "~",
    "+",
    "a..b",
    ".a",
    "a.",
    "a@b",
    "a@",
    "a/b",
    "a=b",
    "a b",
    "123",
    "1.5",
    "true",
    "null",
    '""',
    "''",
    '"a:b"',
    "<<",
    "? a",
    "ä.ö",
    "a[0]",
    "a.0.b",
    "$a",
    "-a",
    "a-b",
    ".".join(["a"] * 60),
    "x" * 500,
    "${a}",
    "hydra/launcher",
    "hydra.run.dir",
    "? [a, b]",
    "!!str k",
    "!custom k",
    "&k k",
    "*k",
    "recipe",
    "overrides",
    "variants",
    "model",
    "hardware",
    "env",
    "gates",
    "stack",
    "verl",
    "config_name",
    "entrypoint",
    "name",
    "path",
    "card",
    "accelerator",
    "device",
    "npu",
    "gpu",
    "actor_rollout_ref.actor.tau_pos",
    "actor_rollout_ref.model.path",
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
    "model_engine",
    "+model_engine",
]
YAML_TOKENS = [
    "recipe:",
    "overrides:",
    "variants:",
    "model:",
    "path:",
    "card:",
    "hardware:",
    "accelerator:",
    "env:",
    "gates:",
    "actor_rollout_ref.actor.tau_pos:",
    "trainer.nnodes:",
    "+trainer.x:",
    "~trainer.y:",
    "- ",
    "? ",
    ": ",
    ":",
    "-",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "<<: ",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!map ",
    "!!seq ",
    "!custom ",
    "!",
    "|",
    ">",
    "|-",
    ">+",
    "'",
    '"',
    "#",
    "---",
    "...",
    "%YAML 1.2",
    "%TAG ! tag:x,2000:",
    "\n",
    "\n  ",
    "\n    ",
    "\t",
    " ",
    "1e400",
    ".nan",
    "-.inf",
    "9" * 20,
    "null",
    "~",
    "true",
    "yes",
    "0x1F",
    "é",
    "\u2028",
    "\x85",
    "\ufeff",
    "\\",
    "@",
    "`",
    "%",
    "=",
    "${x}",
    "sapo-recipe/v1",
    "0.9.1",
    "npu",
    "1",
]


def set_value(draw, lines, tokens):
    i = _index(draw, lines)
    key, colon, _ = lines[i].partition(": ")
    if colon:
        lines[i] = key + ": " + draw(st.sampled_from(ODD_SCALARS) | st.text(max_size=12))


def set_key(draw, lines, tokens):
    i = _index(draw, lines)
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip(" "))]
    _, colon, value = lines[i].partition(":")
    if colon:
        lines[i] = indent + draw(st.sampled_from(ODD_KEYS)) + ":" + value


def retype_value(draw, lines, tokens):
    i = _index(draw, lines)
    key, colon, value = lines[i].partition(": ")
    if colon:
        shape = draw(st.sampled_from(["[{}]", "{{{}: {}}}", '"{}"', "'{}'", "[[{}], {{}}]", "!!str {}"]))
        lines[i] = key + ": " + shape.format(value, value)


def nest_deep(draw, lines, tokens):
    i = _index(draw, lines)
    key, colon, value = lines[i].partition(": ")
    depth = draw(st.integers(1, 300))
    if draw(st.booleans()):  # flow nesting on one line
        nested = "[" * depth + value + "]" * depth if draw(st.booleans()) else "{a: " * depth + value + "}" * depth
        lines[i] = (key + ": " if colon else "x: ") + nested
    else:  # block nesting over many lines
        lines[i + 1 : i + 1] = [" " * (2 * d) + f"k{d}:" for d in range(1, depth)] + [" " * (2 * depth) + "k: 1"]


def anchor_alias(draw, lines, tokens):
    i, j = _index(draw, lines), _index(draw, lines)
    name = draw(st.sampled_from(["a", "b", "x" * 40]))
    key, colon, value = lines[i].partition(": ")
    if colon:
        lines[i] = f"{key}: &{name} {value}"
    key, colon, value = lines[j].partition(": ")
    if colon:
        lines[j] = f"{key}: *{name}"


def alias_bomb(draw, lines, tokens):
    """Billion laughs: each level lists the previous one ten times."""
    levels = draw(st.integers(2, 9))
    bomb = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, levels)]
    lines[_index(draw, lines) : 0] = bomb


def tag_value(draw, lines, tokens):
    i = _index(draw, lines)
    key, colon, value = lines[i].partition(": ")
    if colon:
        tag = draw(
            st.sampled_from(
                [
                    "!!str",
                    "!!int",
                    "!!float",
                    "!!bool",
                    "!!null",
                    "!!map",
                    "!!seq",
                    "!!binary",
                    "!!timestamp",
                    "!!set",
                    "!!omap",
                    "!!pairs",
                    "!!merge",
                    "!custom",
                    "!<tag:yaml.org,2002:int>",
                    "!<tag:example.com,2000:x>",
                    "!!python/name:os.system",
                ]
            )
        )
        lines[i] = f"{key}: {tag} {value}"


# The keys the rules, the topology and the estimator read, and numbers no real recipe holds.
RULE_KEYS = [
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "trainer.save_freq",
    "trainer.max_actor_ckpt_to_keep",
    "data.train_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "data.filter_overlong_prompts_workers",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.data_parallel_size",
    "actor_rollout_ref.rollout.pipeline_model_parallel_size",
    "actor_rollout_ref.rollout.expert_parallel_size",
    "actor_rollout_ref.rollout.gpu_memory_utilization",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
    "actor_rollout_ref.actor.tau_pos",
    "actor_rollout_ref.actor.tau_neg",
    "actor_rollout_ref.actor.clip_ratio",
    "actor_rollout_ref.nccl_timeout",
    "critic.enable",
    "algorithm.use_kl_in_reward",
    "actor_rollout_ref.actor.use_kl_loss",
    *(
        f"actor_rollout_ref.actor.megatron.{size}"
        for size in (
            "tensor_model_parallel_size",
            "pipeline_model_parallel_size",
            "virtual_pipeline_model_parallel_size",
            "context_parallel_size",
            "expert_model_parallel_size",
            "expert_tensor_parallel_size",
            "sequence_parallel",
            "override_transformer_config.num_layers_in_first_pipeline_stage",
            "override_transformer_config.num_layers_in_last_pipeline_stage",
            "override_transformer_config.recompute_num_layers",
            "override_transformer_config.recompute_granularity",
            "override_optimizer_config.optimizer_offload_fraction",
        )
    ),
]
ODD_NUMBERS = [
    "0",
    "-1",
    "-8",
    "1",
    "2",
    "3",
    "7",
    "1.5",
    "2.0",
    "0.5",
    "1e400",
    "-1e400",
    ".nan",
    "-.inf",
    "1e300",
    "99999999999999999999",
    "9" * 30,
    "18446744073709551616",
    "-9223372036854775808",
    "true",
    "null",
    "x",
    "[]",
    "{}",
    "[1, 2]",
]


def insert_override(draw, lines, tokens):
    """A rule-relevant key set to an odd number, first in the `overrides:` block."""
    at = next((i for i, line in enumerate(lines) if line.startswith("overrides:")), None)
    if at is not None:
        lines.insert(at + 1, f"  {draw(st.sampled_from(RULE_KEYS))}: {draw(st.sampled_from(ODD_NUMBERS))}")


def set_hardware(draw, lines, tokens):
    """Site limits and an accelerator, real or not, with odd numbers."""
    at = next((i for i, line in enumerate(lines) if line.startswith("hardware:")), None)
    if at is not None:
        limits = {
            k: draw(st.sampled_from(ODD_NUMBERS))
            for k in ("write_gib_per_s", "host_ram_gib", "disk_budget_gib")
            if draw(st.booleans())
        }
        accelerator = draw(st.sampled_from(["nvidia-h100", "ascend-910b3", "nvidia-b200", "tpu", "[x]"]))
        lines[at] = (
            "hardware: {" + ", ".join(f"{k}: {v}" for k, v in {"accelerator": accelerator, **limits}.items()) + "}"
        )


YAML_MUTATIONS = [
    *LINE_MUTATIONS,
    set_value,
    set_value,
    set_key,
    retype_value,
    nest_deep,
    anchor_alias,
    alias_bomb,
    tag_value,
    insert_override,
    insert_override,
    insert_override,
    set_hardware,
]


def set_number(draw, lines, tokens):
    """An override's value replaced by an odd number (the line stays valid YAML)."""
    overrides = [i for i, line in enumerate(lines) if re.match(r"  [\w.+~]+: ", line)]
    if overrides:
        i = draw(st.sampled_from(overrides))
        lines[i] = lines[i].split(": ", 1)[0] + ": " + draw(st.sampled_from(ODD_NUMBERS))


def delete_override(draw, lines, tokens):
    overrides = [i for i, line in enumerate(lines) if re.match(r"  [\w.+~]+: ", line)]
    if overrides:
        del lines[draw(st.sampled_from(overrides))]


# Mutations that keep the recipe valid YAML, so that the rules see odd values (the others mostly stop at RF002).
VALUE_MUTATIONS = [insert_override, set_number, delete_override, set_hardware]


@st.composite
def mutated_recipes(draw) -> str:
    mutations = draw(st.sampled_from([YAML_MUTATIONS, VALUE_MUTATIONS]))
    return mutate(draw, RECIPES[draw(st.sampled_from(sorted(RECIPES)))], mutations, YAML_TOKENS)


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(10**30), 0, -1])
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(ODD_KEYS)
)
yaml_data = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(ODD_KEYS), inner, max_size=4)
    ),
    max_leaves=20,
)
RECIPE_KEYS = [
    "recipe",
    "name",
    "verl",
    "stack",
    "entrypoint",
    "config_name",
    "model",
    "hardware",
    "overrides",
    "variants",
    "env",
    "gates",
]


@st.composite
def random_recipe_documents(draw) -> str:
    """Random YAML data under the recipe's own keys (so that the reader goes past its first check), dumped in
    block or flow style."""
    data = {"recipe": draw(st.just("sapo-recipe/v1") | scalars)}
    for key in draw(st.lists(st.sampled_from(RECIPE_KEYS) | st.text(max_size=8), max_size=6)):
        data[key] = draw(yaml_data)
    if draw(st.booleans()):
        data["overrides"] = draw(
            st.dictionaries(st.sampled_from(ODD_KEYS) | st.text(max_size=20), yaml_data, max_size=6)
        )
    text = yaml.safe_dump(
        data,
        default_flow_style=draw(st.sampled_from([False, True, None])),
        allow_unicode=draw(st.booleans()),
        sort_keys=False,
    )
    return text if text.startswith("recipe:") else "recipe: x\n" + text


@st.composite
def yaml_soups(draw) -> str:
    soup = "".join(draw(st.lists(st.sampled_from(YAML_TOKENS) | st.text(max_size=4), max_size=60)))
    return draw(st.sampled_from(["recipe: sapo-recipe/v1\n", "recipe:", ""])) + soup


recipe_texts = mutated_recipes() | random_recipe_documents() | yaml_soups()
recipe_bytes = st.binary(max_size=300).map(lambda b: b"recipe: sapo-recipe/v1\n" + b) | st.binary(max_size=300)


@FUZZ
@given(recipe_texts)
def test_recipe_yaml(text):
    lint_one("recipe.yaml", text)


@FUZZ
@given(recipe_bytes)
def test_recipe_random_bytes(data):
    lint_one("recipe.yaml", data)


# --------------------------------------------------------------------------- #
# Bash run scripts
# --------------------------------------------------------------------------- #

BASH_TOKENS = [
    "python3",
    "-m",
    "verl.trainer.main_ppo",
    "python3 -m verl.trainer.main_ppo ",
    "--config-name",
    "--config-name=ppo_megatron_trainer",
    "--config-path",
    "ppo_megatron_trainer",
    "actor_rollout_ref.actor.tau_pos=1.0",
    "trainer.nnodes=",
    "+actor_rollout_ref.actor.policy_loss.tau_pos=",
    "~trainer.x",
    "actor_rollout_ref.model.path=",
    "=",
    "X=",
    "X=1",
    "DEVICE=${DEVICE:-gpu}",
    "$X",
    "${X}",
    "${X:-",
    "${X:=1}",
    "${X:+w}",
    "${X-d}",
    "${X=d}",
    "${!X}",
    "${#X}",
    "${X/a/b}",
    "${X^^}",
    "${X:0:1}",
    "${X[@]}",
    '"${ARR[@]}"',
    "${ARR[*]}",
    "${ARR[",
    "ARR=(",
    "ARR+=(",
    "(",
    ")",
    "$(",
    "$(date)",
    "`date`",
    "`",
    "$((",
    "))",
    "$((1/0))",
    "$((2**64))",
    "$((X+1))",
    "$(( 99999999999999999999 * 9 ))",
    "$((1<<70))",
    "$((-9223372036854775808 / -1))",
    "$((08))",
    "[[",
    "]]",
    "[",
    "]",
    "==",
    "!=",
    "-eq",
    "if",
    "then",
    "elif",
    "else",
    "fi",
    "case",
    "in",
    "esac",
    ";;",
    ";&",
    "*)",
    "npu)",
    "for",
    "while",
    "until",
    "do",
    "done",
    "function",
    "f()",
    "{",
    "}",
    "f",
    "export",
    "local",
    "declare -a",
    "readonly",
    "source",
    ".",
    "eval",
    "set -e",
    "shift",
    "exit",
    "return",
    "&&",
    "||",
    "|",
    ";",
    "&",
    "\n",
    " ",
    "\t",
    "\\\n",
    "#",
    "# sapo-lint: noqa",
    '"',
    "'",
    "$'\\x41'",
    '$"x"',
    "<<EOF\n",
    "\nEOF\n",
    "<<-'EOF'\n",
    "<<<",
    ">",
    ">>",
    "2>&1",
    "<(",
    "$@",
    '"$@"',
    "$*",
    "$#",
    "$0",
    "$1",
    "~",
    "*",
    "?",
    "!",
    "é",
    "\u00a0",
    "\ufeff",
    "\x85",
    "\r",
    "\\",
    "\x00",
    "🙂",
    "\U00031860",
    "\U0010ffff",
    "{\U000e0100",
]


def insert_bash_soup(draw, lines, tokens):
    lines.insert(_index(draw, lines), " ".join(draw(st.lists(st.sampled_from(tokens), max_size=10))))


BASH_MUTATIONS = [*LINE_MUTATIONS, insert_token, insert_token, replace_word, insert_bash_soup]


@st.composite
def mutated_scripts(draw) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(SCRIPTS)))
    return name, mutate(draw, SCRIPTS[name], BASH_MUTATIONS, BASH_TOKENS)


@st.composite
def bash_soups(draw) -> tuple[str, str]:
    tokens = draw(st.lists(st.sampled_from(BASH_TOKENS) | st.text(max_size=4), max_size=80))
    separators = draw(st.lists(st.sampled_from([" ", "", "\n", " \\\n  "]), min_size=len(tokens), max_size=len(tokens)))
    return draw(st.sampled_from(sorted(FIXTURE_SCRIPTS))), "".join(
        t + s for t, s in zip(tokens, separators, strict=True)
    )


@FUZZ
@given(mutated_scripts() | bash_soups())
def test_bash_script(named):
    name, text = named
    lint_one(name, text)


@FUZZ
@given(st.binary(max_size=300))
def test_bash_random_bytes(data):
    lint_one("run_qwen3_8b_megatron.sh", data)


# --------------------------------------------------------------------------- #
# Hydra override strings
# --------------------------------------------------------------------------- #

HYDRA_TOKENS = [
    "a",
    "b.c",
    "actor_rollout_ref.actor.tau_pos",
    "trainer.nnodes",
    "+",
    "++",
    "~",
    "@",
    "=",
    "/",
    ".",
    "..",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    " ",
    "\t",
    "'",
    '"',
    "\\",
    "${",
    "}",
    "${a.b}",
    "${oc.env:X}",
    "choice(",
    "range(",
    "interval(",
    "glob(",
    "sort(",
    "shuffle(",
    "tag(",
    "int(",
    "float(",
    "str(",
    "bool(",
    "json_str(",
    "extend_list(",
    ")",
    "1",
    "-1",
    "1.5",
    "1e400",
    "-1e400",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "1_000",
    "1000000000",
    "9" * 4400,
    "true",
    "null",
    "None",
    "\n",
    "é",
    "日本",
    "\x00",
    "$",
    "%",
    "*",
    "?",
    "|",
    "_name_",
    "hydra",
    "hydra/launcher",
    "@pkg",
    "???",
    "reverse=true",
    "seed=1",
    "sweep=",
]


@st.composite
def override_texts(draw) -> str:
    if draw(st.integers(0, 3)) == 0:
        return draw(st.text(max_size=40))
    prefix = draw(st.sampled_from(["", "+", "++", "~"]))
    key = draw(
        st.sampled_from(
            [
                "actor_rollout_ref.actor.tau_pos",
                "trainer.nnodes",
                "a.b.0.c",
                "model_engine",
                "hydra/launcher",
                "a-b$c",
                "data.train_files",
            ]
        )
        | st.text(max_size=8)
    )
    package = draw(st.sampled_from(["", "@pkg", "@a.b", "@_name_", "@"]))
    equals = draw(st.sampled_from(["=", "= ", "=\t", "", "=="]))
    value = "".join(draw(st.lists(st.sampled_from(HYDRA_TOKENS) | st.text(max_size=3), max_size=12)))
    return prefix + key + package + equals + value


@FUZZ
@given(override_texts())
def test_override_string(text):
    try:
        parsed = parse_override(text)
    except OverrideSyntaxError as exc:
        assert 0 <= exc.column <= len(text), exc
        return
    assert isinstance(parsed, ParsedOverride) and parsed.op in OPS


@FUZZ
@given(
    st.sampled_from(sorted(RECIPES) + ["run_qwen3_8b_megatron.sh"]), st.lists(override_texts(), min_size=1, max_size=4)
)
def test_override_on_the_command_line(name, overrides):
    content = RECIPES.get(name) or FIXTURE_SCRIPTS[name]
    lint_one(name, content, overrides)


# --------------------------------------------------------------------------- #
# A model's config.json
# --------------------------------------------------------------------------- #

HF_KEYS = [
    "model_type",
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_experts",
    "n_routed_experts",
    "num_local_experts",
    "moe_intermediate_size",
    "intermediate_size",
    "first_k_dense_replace",
    "moe_layer_freq",
    "decoder_sparse_step",
    "mlp_only_layers",
    "n_shared_experts",
    "shared_expert_intermediate_size",
    "attention_bias",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "tie_word_embeddings",
    "num_experts_per_tok",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
]
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 300)
    | st.integers()
    | st.sampled_from([0, -1, 10**12, 10**400, 1.5, "12", " 7 ", "1e3", "x", "", "qwen3_moe", "deepseek_v3"])
    | st.floats()
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


@st.composite
def model_configs(draw) -> str:
    """A shipped card's config.json with some fields deleted or retyped, or any JSON value (NaN and infinities
    included, as Python's json reads them)."""
    if draw(st.integers(0, 4)) == 0:
        return json.dumps(draw(json_values))
    config = dict(draw(st.sampled_from(MODEL_CARDS)))
    for key in draw(st.lists(st.sampled_from(HF_KEYS) | st.text(max_size=6), max_size=5)):
        if draw(st.integers(0, 3)) == 0:
            config.pop(key, None)
        else:
            config[key] = draw(json_values)
    return json.dumps(config)


model_config_files = model_configs() | st.binary(max_size=200)


@contextmanager
def model_directory(config: str | bytes):
    with written("config.json", config) as path:
        yield path.parent


@FUZZ
@given(model_config_files)
def test_model_config_json(config):
    with model_directory(config) as directory:
        try:
            shape = find_model(directory.name, None, directory.parent)
        except ModelNotFound:
            return
    assert isinstance(shape, ModelShape)


MODEL_PATHS = [
    "model",
    "./model",
    "~",
    "~/model",
    "~nobody_here/model",
    "/",
    "x" * 300,
    "/a" * 3000,
    "a\0b",
    "..",
    "Qwen/Qwen3-8B",
    "qwen/QWEN3-8B/",
    " Qwen/Qwen3-8B ",
    "config.json",
    "model/config.json",
    "日本/🙂",
    "",
]


@FUZZ
@given(st.sampled_from(MODEL_PATHS) | st.text(max_size=20))
def test_model_path(path):
    with model_directory(json.dumps(MODEL_CARDS[0])) as directory:
        try:
            shape = find_model(path, None, directory)
        except ModelNotFound:
            return
    assert isinstance(shape, ModelShape)


@FUZZ
@given(model_config_files, st.sampled_from(sorted(RECIPES)))
def test_model_config_json_through_a_recipe(config, name):
    recipe = re.sub(r"^model: .*$", "model: {path: model}", RECIPES[name], count=1, flags=re.MULTILINE)
    assert "model: {path: model}" in recipe
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "model").mkdir()
        write(Path(directory, "model", "config.json"), config)
        path = Path(directory, name)
        write(path, recipe)
        result = lint_paths([path], NO_SHELLCHECK)
        assert_inside(result.diagnostics, path, recipe)
    record_reach(result.diagnostics)


# --------------------------------------------------------------------------- #
# [tool.sapo-lint] in pyproject.toml
# --------------------------------------------------------------------------- #

TOML_VALUES = [
    "1",
    "-0",
    "0",
    "-1",
    "1e400",
    "inf",
    "-inf",
    "nan",
    "+nan",
    "0.5",
    "1_000",
    "0x10",
    "9" * 30,
    "true",
    "false",
    '"str"',
    "'lit'",
    '""',
    '"0.9.1"',
    '"0.8.0"',
    '"0.12.1"',
    '"git-main"',
    '"../../../etc"',
    '"0.9"',
    '"x" ',
    '"SL"',
    '"SP005"',
    '"*"',
    '"["',
    '"\\u00e9"',
    "[]",
    '["SL", "SP"]',
    '["*"]',
    "[1, 2]",
    '["a", 1]',
    "[[]]",
    "{}",
    "{a = 1}",
    "1979-05-27T07:32:00Z",
    "1979-05-27",
    "07:32:00",
    '"""multi\nline"""',
    "'''raw'''",
]


@st.composite
def pyprojects(draw) -> str | bytes:
    shape = draw(st.integers(0, 5))
    if shape == 0:
        return draw(st.binary(max_size=200))
    if shape == 1:
        return draw(
            st.sampled_from(
                [
                    "tool = 1\n",
                    "[tool]\nsapo-lint = 1\n",
                    "[[tool.sapo-lint]]\nselect = []\n",
                    'tool.sapo-lint = "x"\n',
                    "[tool]\n",
                    "",
                    "[tool.sapo-lint]\n[tool.sapo-lint]\n",
                ]
            )
        )
    entries = draw(
        st.lists(
            st.tuples(
                st.sampled_from(sorted(KEYS)) | st.text(max_size=8), st.sampled_from(TOML_VALUES) | st.text(max_size=8)
            ),
            max_size=6,
        )
    )
    body = "".join(f"{json.dumps(key)} = {value}\n" for key, value in entries)
    return "[tool.sapo-lint]\n" + body


@FUZZ
@given(pyprojects())
def test_pyproject_settings(content):
    with written("pyproject.toml", content) as path:
        try:
            loaded, found = load_settings(path.parent)
        except SettingsError as exc:
            assert len(str(exc).splitlines()) == 1, exc  # the CLI prints it as the one line
            return
        assert found in (path, None)  # None: no [tool.sapo-lint] table, the file is passed over
        loaded.shellcheck = False
        # What was accepted is used: a recipe and a script are linted with it.
        for name in ("qwen3-8b-sapo.yaml", "run_qwen3_8b_megatron.sh"):
            lint_one(name, RECIPES.get(name) or FIXTURE_SCRIPTS[name], lint_settings=loaded)


# --------------------------------------------------------------------------- #
# verl's log lines (the launcher's metrics reader)
# --------------------------------------------------------------------------- #

LOG_TOKENS = [
    "step:",
    "step:3",
    "step:" + "9" * 5000,
    " - ",
    "actor/pg_loss:",
    "critic/rewards/mean:",
    "training/global_step:",
    ":",
    "-0.0123",
    "1e-06",
    "nan",
    "inf",
    "-inf",
    "np.float64(0.4375)",
    "np.int64(812)",
    "np.float64(",
    ")",
    "True",
    "False",
    "None",
    "(TaskRunner pid=123) ",
    "\x1b[36m",
    "\x1b[0m",
    "\x1b]0;title\x07",
    "\x1b",
    "\r",
    "\n",
    " [repeated 2x across cluster]",
    "1" * 400,
    "é",
    "\x00",
    "{",
    "}",
    '"step": 1',
    '"data": {',
    "null",
    "[" * 5000,
    "]" * 5000,
]
log_text = st.lists(st.sampled_from(LOG_TOKENS) | st.text(max_size=5), max_size=40).map("".join)
jsonl_records = st.builds(
    lambda step, data: json.dumps({"step": step, "data": data}), st.integers() | json_scalars, json_values
)


def assert_step_values(parsed) -> None:
    if parsed is not None:
        step, values = parsed
        assert isinstance(step, int) and all(isinstance(k, str) and isinstance(v, float) for k, v in values.items())


@FUZZ
@given(log_text, st.booleans())
def test_verl_console_line(line, complete):
    assert_step_values(metrics.parse_console_line(line, complete))


@FUZZ
@given(jsonl_records | log_text | st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")))
def test_verl_jsonl_line(line):
    assert_step_values(metrics.parse_jsonl_line(line))
    assert_step_values(metrics.parse_jsonl_line(line.encode()))


@FUZZ
@given(st.lists(log_text.map(str.encode) | jsonl_records.map(str.encode) | st.binary(max_size=50), max_size=8))
def test_verl_log_stream(chunks):
    watcher = metrics.MetricsWatcher(None)
    for chunk in chunks:
        watcher.feed(chunk)
    watcher.close()
    with written("train.log", b"\n".join(chunks)) as path:
        table = metrics.read_files([path])
    assert all(isinstance(step, int) for step in table.steps())


# --------------------------------------------------------------------------- #
# End to end through the command line
# --------------------------------------------------------------------------- #

cli_files = (
    recipe_texts.map(lambda t: ("recipe.yaml", t))
    | recipe_bytes.map(lambda b: ("recipe.yaml", b))
    | mutated_scripts()
    | bash_soups()
    | st.binary(max_size=300).map(lambda b: ("run_x_megatron.sh", b))
)


@FUZZ_CLI
@given(cli_files)
def test_command_line(named):
    name, content = named
    with written(name, content) as path:
        env = {**os.environ, "SAPO_LINT_CACHE_DIR": str(path.parent / "cache")}
        proc = subprocess.run(
            [sys.executable, "-m", "sapo_toolkit.linter", "--format", "json", name],
            capture_output=True,
            text=True,
            cwd=path.parent,
            env=env,
            timeout=60,
        )
    assert proc.returncode in (0, 1, 2), proc
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    lines = line_count(as_read(content))
    for d in report["diagnostics"]:
        assert d["path"] == name and 1 <= d["line"] <= lines and d["column"] >= 1, (d, lines)


def test_a_setting_with_a_line_break_is_one_line_of_error(tmp_path):
    """Found by test_pyproject_settings: a multi-line value quoted in a SettingsError made it two lines."""
    with written("pyproject.toml", '[tool.sapo-lint]\n"accelerator" = """multi\nline"""\n') as path:
        with pytest.raises(SettingsError) as raised:
            load_settings(path.parent)
    assert len(str(raised.value).splitlines()) == 1 and "multi\\nline" in str(raised.value)
