"""`sapo-lint server` end to end, driven by a real LSP client (pytest-lsp) over stdio: diagnostics as a document is
opened and changed (the CLI's findings, on the key, with rule links and related information), completion of keys,
values and group options, hover, code actions (fixes and noqa), the project's `[tool.sapo-lint]`, shutdown; a
300-line script edited 100 times, its median diagnostic latency printed; and without pygls, one line naming the
install command. Skipped where pytest-lsp (the `test` extra) is not installed."""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sapo_toolkit.linter.core.extras import install_command

from .test_optional_packages import console, without

try:
    import pytest_lsp
    from lsprotocol import types
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, default_converter, register_lsp_features
except ImportError:  # the test extra is not installed: every test but the last is skipped
    pytest_lsp = None

WAIT_S = 120  # a first lint loads the snapshots: generous on a loaded machine

SCRIPT = """\
#!/usr/bin/env bash
set -x
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpoo \\
    actor_rollout_ref.model.path=Qwen/Qwen3-0.6B \\
    actor_rollout_ref.actor.policy_loss.clip_ratio_c=3 \\
    +actor_rollout_ref.actor.policy_loss.tau_pos=1.0 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=3 \\
    data.train_batch_size=32 \\
    trainer.n_gpus_per_node=8
"""
LAST = len(SCRIPT.splitlines()[10])  # the end of the command's last line

RECIPE = """\
recipe: sapo-recipe/v1
name: lsp-recipe
verl: "0.9.1"
model: {path: Qwen/Qwen3-0.6B}
overrides:
  algorithm.adv_estimator: grpo
  actor_rollout_ref:
    actor:
      ppo_mini_batch_size: 16
  actor_rollout_ref.rollout.name: vllm
  trainer.n_gpus_per_node: 8
"""


def lsp_test(function):
    """An asyncio test of the server, skipped without pytest-lsp."""
    if pytest_lsp is None:
        return pytest.mark.skip(reason="needs pytest-lsp (pip install -e '.[test]')")(function)
    return pytest.mark.asyncio(function)


if pytest_lsp is not None:

    def recording_client() -> LanguageClient:
        """pytest-lsp's client, which also records each publishDiagnostics with the time it arrived."""
        client = LanguageClient(converter_factory=default_converter)
        client.published = []

        def publish_diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
            client.diagnostics[params.uri] = params.diagnostics
            client.published.append((time.monotonic(), params))

        register_lsp_features(
            client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish_diagnostics}
        )
        return client

    @pytest_lsp.fixture(
        config=pytest_lsp.ClientServerConfig(
            server_command=[sys.executable, "-m", "sapo_toolkit.linter", "server"], client_factory=recording_client
        )
    )
    async def client(lsp_client: LanguageClient):
        await lsp_client.initialize_session(
            types.InitializeParams(capabilities=types.ClientCapabilities(), initialization_options={"debounceMs": 300})
        )
        yield
        await lsp_client.shutdown_session()


async def published(client, uri: str, version: int) -> types.PublishDiagnosticsParams:
    """The diagnostics the server publishes for `version` of the document (waited for, up to `WAIT_S`)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for _, params in client.published:
            if params.uri == uri and params.version == version:
                return params
        await asyncio.sleep(0.005)
    raise AssertionError(f"no diagnostics for version {version} of {uri} in {WAIT_S} s")


def opened(client, path: Path, text: str, language: str = "shellscript") -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text))
    )
    return uri


def changed(client, uri: str, version: int, row: int, start: int, end: int, text: str) -> None:
    """Replace characters `start`..`end` of line `row` (0-based) with `text`, as version `version`."""
    where = types.Range(types.Position(row, start), types.Position(row, end))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangePartial(range=where, text=text)],
        )
    )


def cli_findings(path: Path) -> set[tuple[str, int, int]]:
    """What `sapo-lint --format json PATH` reports: (code, 0-based line, 0-based column)."""
    proc = subprocess.run(
        [sys.executable, "-m", "sapo_toolkit.linter", "--format", "json", str(path)], capture_output=True, text=True
    )
    return {(d["code"], d["line"] - 1, d["column"] - 1) for d in json.loads(proc.stdout)["diagnostics"]}


def shown(diagnostics) -> set[tuple[str, int, int]]:
    return {(d.code, d.range.start.line, d.range.start.character) for d in diagnostics}


# -- diagnostics -----------------------------------------------------------------------------------------------------


@lsp_test
async def test_diagnostics_on_open_and_change_are_the_clis_findings_on_their_keys(client, tmp_path):
    script = tmp_path / "run.sh"
    uri = opened(client, script, SCRIPT)
    first = (await published(client, uri, 1)).diagnostics
    assert shown(first) == cli_findings(script)
    by_code = {d.code: d for d in first}
    print(
        "\nopen:", *(f"{d.code} {d.range.start.line}:{d.range.start.character}-{d.range.end.character}" for d in first)
    )

    estimator = by_code["SL005"]
    assert estimator.severity == types.DiagnosticSeverity.Error and estimator.source == "sapo-lint"
    assert (estimator.range.start.character, estimator.range.end.character) == (4, 27)  # the key, to its `=`
    assert estimator.code_description.href.endswith("/docs/rules.md#sl005-unknown-choice") or (
        "/docs/rules.md#sl005-" in estimator.code_description.href
    )
    tp = by_code["TP011"]  # the rollout TP: its related settings, and TP012 of the same cause
    related = [(r.location.range.start.line, r.message) for r in tp.related_information]
    assert (4, "related setting") in related
    assert any(message.startswith("TP012 ") for _, message in related) and "TP012" in tp.message
    print("TP011 related:", related)

    changed(client, uri, 2, 3, 28, 33, "grpo")  # grpoo -> grpo
    second = (await published(client, uri, 2)).diagnostics
    assert "SL005" not in {d.code for d in second}
    script.write_text(SCRIPT.replace("grpoo", "grpo"))
    assert shown(second) == cli_findings(script)
    assert any("checked against verl 0.9.1" in m.message for m in client.log_messages)
    print("log:", [m.message for m in client.log_messages if "checked against" in m.message])


# -- completion ------------------------------------------------------------------------------------------------------


async def completed(client, uri: str, row: int, column: int) -> list:
    found = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(row, column))
    )
    return found.items if found is not None else []


@lsp_test
async def test_completion_of_keys_values_and_group_options_in_a_script(client, tmp_path):
    uri = opened(client, tmp_path / "run.sh", SCRIPT)
    await published(client, uri, 1)
    changed(client, uri, 2, 10, LAST, LAST, " \\\n    actor_rollout_ref.actor.")  # a new override being typed
    items = await completed(client, uri, 11, 28)
    labels = {i.label for i in items}
    assert {"ppo_mini_batch_size", "clip_ratio", "policy_loss", "tau_pos"} <= labels and "rollout" not in labels
    mini = next(i for i in items if i.label == "ppo_mini_batch_size")
    assert mini.detail == "int, default 256" and mini.kind == types.CompletionItemKind.Field
    assert (mini.text_edit.range.start.character, mini.text_edit.range.end.character) == (28, 28)
    print("\nactor_rollout_ref.actor.<>:", len(items), "keys, e.g.", sorted(labels)[:6])

    resolved = await client.completion_item_resolve_async(mini)
    assert "Checked against verl 0.9.1 `ppo_trainer` (model_engine=dp)" in resolved.documentation.value

    changed(client, uri, 3, 11, 4, 28, "actor_rollout_ref.actor.ppo_mi")
    items = await completed(client, uri, 11, 34)
    mini = next(i for i in items if i.label == "ppo_mini_batch_size")
    assert (mini.text_edit.range.start.character, mini.text_edit.range.end.character) == (28, 34)

    changed(client, uri, 4, 11, 4, 34, "algorithm.adv_estimator=")
    items = await completed(client, uri, 11, 28)
    assert {"grpo", "gae", "rloo"} <= {i.label for i in items}
    print("algorithm.adv_estimator=<>:", [i.label for i in items][:6])

    changed(client, uri, 5, 11, 4, 28, "actor@actor_rollout_ref.actor=")
    items = await completed(client, uri, 11, 34)
    assert {i.label for i in items} >= {"dp_actor", "megatron_actor"}
    print("actor@actor_rollout_ref.actor=<>:", [i.label for i in items])

    changed(client, uri, 6, 11, 4, 34, "actor_roll")
    items = await completed(client, uri, 11, 14)
    assert "actor_rollout_ref" in {i.label for i in items} and "actor@actor_rollout_ref.actor" in {
        i.label for i in items
    }
    assert await completed(client, uri, 0, 5) == []  # the shebang: no override there


@lsp_test
async def test_completion_in_a_recipes_overrides_nested_and_after_a_colon(client, tmp_path):
    uri = opened(client, tmp_path / "recipe.yaml", RECIPE, "yaml")
    await published(client, uri, 1)
    items = await completed(client, uri, 8, 10)  # `      ppo_mi|ni_batch_size: 16`, below actor_rollout_ref: actor:
    assert "ppo_mini_batch_size" in {i.label for i in items}
    changed(client, uri, 2, 9, 33, 38, "")  # `  actor_rollout_ref.rollout.name:`
    items = await completed(client, uri, 9, 33)
    vllm = next(i for i in items if i.label == "vllm")
    assert vllm.text_edit.new_text == " vllm"  # after the colon that triggered it, a blank first
    assert {"sglang", "vllm"} <= {i.label for i in items}
    print("\nrecipe rollout.name:<>:", [i.label for i in items])
    assert await completed(client, uri, 1, 8) == []  # `name:` is no override
    said = await hovered(client, uri, 8, 8)  # the nested key, named with its parents
    assert said.startswith("**`actor_rollout_ref.actor.ppo_mini_batch_size`**: int, default 256")
    assert "verl 0.9.1 (the recipe's `verl:`)" in said


# -- hover -----------------------------------------------------------------------------------------------------------


async def hovered(client, uri: str, row: int, column: int) -> str | None:
    found = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(row, column))
    )
    return found.contents.value if found is not None else None


@lsp_test
async def test_hover_says_type_default_choices_versions_and_the_verl(client, tmp_path):
    uri = opened(client, tmp_path / "run.sh", SCRIPT + "    # algorithm.rollout_correction.rollout_is=token\n")
    await published(client, uri, 1)
    said = await hovered(client, uri, 7, 10)
    assert said.startswith("**`actor_rollout_ref.actor.ppo_mini_batch_size`**: int, default 256")
    assert "verl 0.9.1 (the newest committed snapshot" in said
    # the comment verl's YAML carries for it: actor/actor.yaml, composed at actor_rollout_ref.actor
    assert "\n\n> Split each sample into sub-batches of this size for PPO\n\n" in said
    assert "(verl's comment, `trainer/config/actor/actor.yaml`)" in said
    print("\nhover ppo_mini_batch_size:", said.replace("\n\n", " | "))
    said = await hovered(client, uri, 3, 8)
    assert "One of `gae`" in said and "`grpo`" in said
    said = await hovered(client, uri, 5, 40)
    assert "is not a key of verl 0.9.1" in said
    print("hover clip_ratio_c under policy_loss:", said.split("\n\n")[0])
    changed(client, uri, 2, 10, LAST, LAST, " \\\n    algorithm.rollout_correction=null")
    await published(client, uri, 2)
    said = await hovered(client, uri, 11, 10)
    history = "Added in verl 0.6.1 (not in 0.4.1, 0.5.0)."
    assert history in said
    print("hover algorithm.rollout_correction:", said.split("\n\n")[0], "|", history)
    changed(client, uri, 3, 11, 4, 37, "actor@actor_rollout_ref.actor=megatron_actor")
    await published(client, uri, 3)
    said = await hovered(client, uri, 11, 6)
    assert "config group `actor`" in said and "`megatron_actor`" in said
    assert await hovered(client, uri, 0, 3) is None


# -- code actions ----------------------------------------------------------------------------------------------------


async def actions_at(client, uri: str, row: int) -> list:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            types.Range(types.Position(row, 0), types.Position(row, 0)),
            types.CodeActionContext(diagnostics=[]),
        )
    )
    return found or []


@lsp_test
async def test_code_actions_offer_safe_and_unsafe_fixes_and_noqa_where_the_command_ends(client, tmp_path):
    uri = opened(client, tmp_path / "run.sh", SCRIPT)
    await published(client, uri, 1)
    actions = await actions_at(client, uri, 6)  # +actor_rollout_ref.actor.policy_loss.tau_pos=1.0
    titles = [a.title for a in actions]
    print("\nline 7 actions:", titles)
    safe = next(a for a in actions if a.title.startswith("Fix SP001"))
    assert safe.is_preferred and safe.kind == types.CodeActionKind.QuickFix
    (edit,) = safe.edit.changes[uri]
    assert edit.new_text == "actor_rollout_ref.actor.tau_pos"
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.character) == (6, 4, 48)
    noqa = next(a for a in actions if a.title.startswith("Suppress SP001"))
    (comment,) = noqa.edit.changes[uri]
    assert comment.range.start.line == 10 and comment.new_text == "  # sapo-lint: noqa: SP001"  # where it ends

    actions = await actions_at(client, uri, 5)  # the clip ratio under policy_loss: the rename is a guess
    unsafe = next(a for a in actions if a.title.startswith("Unsafe fix (may change what the run does) SL001"))
    assert not unsafe.is_preferred
    assert unsafe.edit.changes[uri][0].new_text == "actor_rollout_ref.actor.clip_ratio_c"
    print("line 6 actions:", [a.title for a in actions])

    changed(client, uri, 2, 5, 4, 4, " ")  # the findings are now of an older text: no action until the next lint
    assert await actions_at(client, uri, 5) == []
    await published(client, uri, 2)
    assert await actions_at(client, uri, 5) != []


# -- settings --------------------------------------------------------------------------------------------------------


@lsp_test
async def test_the_files_project_settings_and_verl_pin_apply(client, tmp_path):
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.sapo-lint]\nignore = ["SL005"]\nverl-version = "0.6.1"\n')
    script = project / "scripts" / "run.sh"
    uri = opened(client, script, SCRIPT)
    found = (await published(client, uri, 1)).diagnostics
    assert "SL005" not in {d.code for d in found}
    assert shown(found) == cli_findings(script)
    said = [m.message for m in client.log_messages if m.message.startswith("run.sh: checked against verl 0.6.1")]
    assert said, [m.message for m in client.log_messages]
    assert "verl 0.6.1" in await hovered(client, uri, 7, 10)
    print("\nlog:", said[0])


@lsp_test
async def test_a_bad_project_setting_is_shown_and_nothing_is_linted(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.sapo-lint]\nignore = "SL005"\n')
    uri = opened(client, tmp_path / "run.sh", SCRIPT)
    assert not (await published(client, uri, 1)).diagnostics  # as the CLI exits 2 on it
    (message,) = client.messages
    assert message.type == types.MessageType.Error and message.message.startswith("sapo-lint: ")
    assert "ignore" in message.message
    print("\nshowMessage:", message.message)


# -- staying responsive ----------------------------------------------------------------------------------------------


def long_script() -> str:
    """A 300-line run script: a trainer command of 100 overrides and 190 lines of set-up around it."""
    keys = [
        "data.train_batch_size=32",
        "actor_rollout_ref.actor.ppo_mini_batch_size=16",
        "actor_rollout_ref.rollout.n=4",
        "trainer.n_gpus_per_node=8",
        "algorithm.adv_estimator=grpo",
    ]
    setup = [f'echo "step {i}: preparing $HOME/data"' for i in range(95)]
    overrides = [f"    {keys[i % len(keys)]} \\" for i in range(99)]
    lines = ["#!/usr/bin/env bash", "set -euo pipefail", *setup, "python3 -m verl.trainer.main_ppo \\", *overrides]
    lines += ["    trainer.nnodes=1", *(f"# note {i}" for i in range(300 - len(lines) - 1))]
    assert len(lines) == 300
    return "\n".join(lines) + "\n"


@lsp_test
async def test_a_300_line_script_edited_100_times_stays_responsive(client, tmp_path):
    """20 bursts of 5 keystrokes 20 ms apart (typing a batch size), each followed by a hover while it is linted;
    the diagnostic latency is from a burst's last change to the diagnostics of that version."""
    script = tmp_path / "run_long.sh"
    text = long_script()
    uri = opened(client, script, text)
    await published(client, uri, 1)
    row = text.splitlines().index("    data.train_batch_size=32 \\")
    version, latencies, hovers, value = 1, [], [], "32"
    for burst in range(20):
        typed = str(10000 + burst * 37)
        for i, digit in enumerate(typed):
            version += 1
            changed(client, uri, version, row, 26 + i, 26 + (len(value) if i == 0 else i), digit)
            sent = time.monotonic()
            await asyncio.sleep(0.02)
        value = typed
        asked = time.monotonic()
        await hovered(client, uri, row, 8)
        hovers.append(time.monotonic() - asked)
        params = await published(client, uri, version)
        arrived = next(t for t, p in client.published if p is params)
        latencies.append(arrived - sent)
    final = text.splitlines()
    final[row] = f"    data.train_batch_size={value} \\"
    script.write_text("\n".join(final) + "\n")
    assert shown(client.diagnostics[uri]) == cli_findings(script)
    print(
        f"\n100 edits in 20 bursts: diagnostic latency median {statistics.median(latencies) * 1000:.0f} ms "
        f"(min {min(latencies) * 1000:.0f}, max {max(latencies) * 1000:.0f}; debounce 300 ms); "
        f"hover during a lint median {statistics.median(hovers) * 1000:.0f} ms (max {max(hovers) * 1000:.0f}); "
        f"{sum(p.uri == uri for _, p in client.published)} publications for {version} versions"
    )


# -- without pygls ---------------------------------------------------------------------------------------------------


def test_without_pygls_the_server_command_is_one_line_naming_the_install(tmp_path):
    proc = console("sapo-lint", "server", env=without(tmp_path, "pygls", "lsprotocol"))
    assert proc.returncode == 2
    assert proc.stderr == f"sapo-lint: the language server needs pygls: {install_command('server')}\n"
