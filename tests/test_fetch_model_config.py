"""A model's config.json from the Hugging Face Hub, on request (issue 33, item 1), through the console script and
against a local server that speaks the Hub's file API (tests/hub_server.py), never the real Hub: fetched and then
found offline in huggingface_hub's cache; never fetched unasked; a Hub that does not answer, a gated model (401) and
a missing one (404) each one RF005 line, the other findings kept; without huggingface_hub, one line saying how to
install it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time

import pytest

from sapo_toolkit.linter.hub_config import hub_id

from .helpers import SCRIPTS
from .hub_server import HubServer
from .test_optional_packages import without

# A model no card and no cache has, TP 3 (TP003 once its 32 heads are known) and a key no verl has (SL001, a finding
# that needs no model: it must survive whatever the fetch does).
SCRIPT = (
    "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
    "    actor_rollout_ref.model.path=acme/tiny-8b \\\n"
    "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=3 \\\n"
    "    trainer.n_gpus_per_node=3 trainer.nnodes=1 trainer.no_such_key=1\n"
)


def card_config(name: str) -> dict:
    from sapo_toolkit.linter.catalog import _cards

    return _cards()[name]["config"]


def lint(tmp_path, *args, endpoint: str | None = None, env: dict | None = None, script: str = SCRIPT) -> dict:
    path = tmp_path / "run_x_megatron.sh"
    path.write_text(script)
    environment = {**(env or os.environ), "NO_COLOR": "1", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_ETAG_TIMEOUT": "1"}
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN"):
        environment.pop(name, None)
    if endpoint is not None:
        environment["HF_ENDPOINT"] = endpoint
    result = subprocess.run(
        [str(SCRIPTS / "sapo-lint"), "check", "--no-shellcheck", "--format", "json", *args, str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return json.loads(result.stdout)


def codes(report: dict) -> list[str]:
    return sorted(d["code"] for d in report["diagnostics"])


def rf005(report: dict) -> str:
    (found,) = [d["message"] for d in report["diagnostics"] if d["code"] == "RF005"]
    return found


needs_hub = pytest.mark.skipif(
    importlib.util.find_spec("huggingface_hub") is None, reason="the hub extra (huggingface_hub) is not installed"
)


def test_without_huggingface_hub_the_note_says_how_to_install_it(tmp_path):
    with HubServer({"acme/tiny-8b": card_config("qwen3-8b")}) as server:
        report = lint(
            tmp_path, "--fetch-model-config", endpoint=server.endpoint, env=without(tmp_path, "huggingface_hub")
        )
    assert server.requests == []
    assert "fetching config.json from the Hub needs huggingface_hub: pip install" in rf005(report)
    assert "[hub]" in rf005(report) and "SL001" in codes(report)


@needs_hub
def test_a_fetched_config_gives_the_model_and_the_next_run_finds_it_offline(tmp_path):
    with HubServer({"acme/tiny-8b": card_config("qwen3-8b")}) as server:
        fetched = lint(tmp_path, "--fetch-model-config", endpoint=server.endpoint)
    assert any(r.startswith("HEAD /acme/tiny-8b/resolve/main/config.json") for r in server.requests)
    assert [r for r in server.requests if "/resolve/" in r and "config.json" not in r] == []  # only config.json
    assert "RF005" not in codes(fetched) and "TP003" in codes(fetched) and "SL001" in codes(fetched)
    (tp003,) = [d for d in fetched["diagnostics"] if d["code"] == "TP003"]
    assert "acme/tiny-8b has 32 attention heads" in tp003["message"]
    # the server is gone and nothing asks to fetch: huggingface_hub's cache has it
    offline = lint(tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert codes(offline) == codes(fetched)


@needs_hub
def test_a_model_fetched_once_is_found_by_its_name_alone_later_in_the_run(tmp_path):
    script = SCRIPT + SCRIPT.replace("acme/tiny-8b", "$HOME/models/tiny-8b")
    with HubServer({"acme/tiny-8b": card_config("qwen3-8b")}) as server:
        report = lint(tmp_path, "--fetch-model-config", endpoint=server.endpoint, script=script)
    assert "RF005" not in codes(report) and codes(report).count("TP003") == 2
    assert len([r for r in server.requests if r.startswith("GET /acme/")]) == 1


def test_without_the_option_nothing_is_fetched_and_the_note_says_how(tmp_path):
    with HubServer({"acme/tiny-8b": card_config("qwen3-8b")}) as server:
        report = lint(tmp_path, endpoint=server.endpoint)
    assert server.requests == []
    message = rf005(report)
    assert "--fetch-model-config downloads `acme/tiny-8b`'s config.json from the Hugging Face Hub" in message
    assert "TP003" not in codes(report) and "SL001" in codes(report)


@needs_hub
def test_the_setting_fetches_as_the_option_does(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.sapo-lint]\nfetch-model-config = true\n")
    with HubServer({"acme/tiny-8b": card_config("qwen3-8b")}) as server:
        report = lint(tmp_path, endpoint=server.endpoint)
    assert "RF005" not in codes(report) and "TP003" in codes(report)


@needs_hub
def test_a_hub_that_never_answers_costs_a_bounded_wait_and_one_line(tmp_path):
    # two models in one script: the second is not tried once the endpoint has not answered
    script = SCRIPT + SCRIPT.replace("acme/tiny-8b", "acme/other-8b")
    with HubServer(silent=True) as server:
        started = time.monotonic()
        report = lint(tmp_path, "--fetch-model-config", endpoint=server.endpoint, script=script)
        elapsed = time.monotonic() - started
    assert elapsed < 15, elapsed  # HF_HUB_ETAG_TIMEOUT=1: two seconds per endpoint, plus starting up
    first, second = sorted((d for d in report["diagnostics"] if d["code"] == "RF005"), key=lambda d: d["line"])
    assert f"{server.endpoint} did not answer within 2 s for `acme/tiny-8b`" in first["message"]
    assert "not fetched from" in second["message"] and "earlier in this run" in second["message"]
    assert "\n" not in first["message"] and codes(report).count("SL001") == 2


@needs_hub
def test_a_gated_model_is_one_clear_line_and_nothing_else_is_lost(tmp_path):
    with HubServer(gated={"acme/tiny-8b"}) as server:
        report = lint(tmp_path, "--fetch-model-config", endpoint=server.endpoint)
    message = rf005(report)
    assert "the Hub refused `acme/tiny-8b` (401): a gated or private model" in message
    assert "HF_TOKEN" in message and "Traceback" not in json.dumps(report)
    assert "SL001" in codes(report)


@needs_hub
def test_a_model_the_hub_does_not_have_is_a_404_line(tmp_path):
    with HubServer({}) as server:
        report = lint(tmp_path, "--fetch-model-config", endpoint=server.endpoint)
    assert "the Hub has no model `acme/tiny-8b` (404)" in rf005(report)


@pytest.mark.parametrize(
    ("written", "repo_id"),
    [
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
        ("/fs/shared/llms/Qwen/Qwen2.5-Math-1.5B", "Qwen/Qwen2.5-Math-1.5B"),
        ("Qwen3-8B", None),  # no organisation: no repository to ask for
        ("org/bad--name", None),  # not a valid repository id
        ("models--Qwen--Qwen3-8B", None),
    ],
)
def test_which_hub_repository_a_path_names(written, repo_id):
    assert hub_id(written) == repo_id
