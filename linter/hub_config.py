"""A model's config.json from the Hugging Face Hub, on request (`--fetch-model-config`, `[tool.sapo-lint]
fetch-model-config`): only that file, downloaded with huggingface_hub (the `hub` extra, imported only here and only
when a fetch is asked for) into huggingface_hub's own cache, with its `HF_ENDPOINT` and token (`HF_TOKEN`, `hf auth
login`), so a later run finds the file offline where the resolver already looks (`catalog.hub_cache`)."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from .core.extras import install_command

# Seconds huggingface_hub may wait for the Hub's answer to each request (its `etag_timeout`), unless its own
# HF_HUB_ETAG_TIMEOUT says otherwise; a fetch gives up after two of them (the metadata, then the file), since
# huggingface_hub retries a request that timed out with a minute's timeout of its own.
FETCH_TIMEOUT_S = 5.0
# A Hub repository id as huggingface_hub's `validate_repo_id` accepts it: `org/name`, letters, digits, `-_.`, no `--`
# or `..`, at most 96 characters.
_REPO_ID = re.compile(r"(?!.*(--|\.\.))[A-Za-z0-9][\w.-]*/[\w.-]*[A-Za-z0-9_]")

# The endpoints that did not answer in this run, with the reason: each model after the first is not tried there
# (every fetch would wait out the same timeout).
_unanswered: dict[str, str] = {}
_fetched: dict[str, Path | str] = {}  # repo id -> its config.json, or why it could not be fetched


class FetchFailed(LookupError):
    """Why a config.json could not be fetched, in one line."""


def hub_id(written: str) -> str | None:
    """The Hub repository a model path names, if any: the path itself when it is `org/name`, else its last two
    components (`/data/llms/Qwen/Qwen2.5-Math-1.5B` names `Qwen/Qwen2.5-Math-1.5B`), as the cards are matched."""
    parts = [p for p in re.split(r"[\\/]+", written.strip()) if p not in ("", ".", "~")]
    if len(parts) < 2:
        return None
    candidate = f"{parts[-2]}/{parts[-1]}"
    return candidate if len(candidate) <= 96 and _REPO_ID.fullmatch(candidate) else None


def fetch_config(repo_id: str) -> Path:
    """The local path of `repo_id`'s config.json, downloaded into huggingface_hub's cache (only that file, at most
    `2 x FETCH_TIMEOUT_S` seconds). Raises FetchFailed saying why in one line: huggingface_hub not installed, no
    answer, gated or private (401/403), no such model (404)."""
    if repo_id not in _fetched:
        try:
            _fetched[repo_id] = _download(repo_id)
        except FetchFailed as exc:
            _fetched[repo_id] = str(exc)
    found = _fetched[repo_id]
    if isinstance(found, str):
        raise FetchFailed(found)
    return found


def _download(repo_id: str) -> Path:
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub.utils import disable_progress_bars
    except ImportError:
        raise FetchFailed(
            f"fetching config.json from the Hub needs huggingface_hub: {install_command('hub')}"
        ) from None
    disable_progress_bars()  # a lint report on stdout/stderr, not download bars
    endpoint = constants.ENDPOINT
    if endpoint in _unanswered:
        raise FetchFailed(f"not fetched from {endpoint}: {_unanswered[endpoint]} earlier in this run")
    timeout = float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or FETCH_TIMEOUT_S)
    outcome: dict[str, object] = {}

    def download() -> None:
        try:
            outcome["path"] = hf_hub_download(repo_id, "config.json", etag_timeout=timeout)
        except Exception as exc:  # every failure is reported below, in one line
            outcome["error"] = exc

    # A daemon thread: a Hub that never answers is left behind after the deadline, and never holds up the exit.
    worker = threading.Thread(target=download, name=f"fetch {repo_id}", daemon=True)
    worker.start()
    worker.join(2 * timeout)
    if worker.is_alive():
        _unanswered[endpoint] = f"it did not answer within {2 * timeout:g} s"
        raise FetchFailed(f"{endpoint} did not answer within {2 * timeout:g} s for `{repo_id}`")
    if "error" in outcome:
        response = _response(outcome["error"])
        if response is None:  # no HTTP answer: the endpoint cannot be reached (refused, unknown host, TLS)
            _unanswered[endpoint] = "it could not be reached"
            raise FetchFailed(f"could not reach {endpoint} for `{repo_id}`: {_first_line(outcome['error'])}")
        raise FetchFailed(_refusal(response, repo_id))
    return Path(str(outcome["path"]))


def _response(error: BaseException):
    """The HTTP response in a failed download's exception chain, None without one (huggingface_hub wraps a failed
    request in errors of its own, whose classes differ between its releases; the status says what happened)."""
    seen: BaseException | None = error
    for _ in range(10):
        if seen is None:
            return None
        if getattr(getattr(seen, "response", None), "status_code", None):
            return seen.response
        seen = seen.__cause__ or seen.__context__
    return None


def _first_line(error: BaseException) -> str:
    """The innermost cause's message, first line (the reason a connection failed)."""
    for _ in range(10):  # bounded: a chain can loop
        if not (error.__cause__ or error.__context__):
            break
        error = error.__cause__ or error.__context__
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _refusal(response, repo_id: str) -> str:
    """One line for the Hub's refusal of a config.json."""
    status, code = response.status_code, response.headers.get("X-Error-Code", "")
    if status in (401, 403) or code == "GatedRepo":
        return (
            f"the Hub refused `{repo_id}` ({status}): a gated or private model; accept its terms on the Hub and log "
            "in (`hf auth login`) or set HF_TOKEN"
        )
    if status == 404:
        if code == "EntryNotFound":
            return f"`{repo_id}` on the Hub has no config.json (404)"
        return f"the Hub has no model `{repo_id}` (404)"
    return f"the Hub answered {status} for `{repo_id}`'s config.json"
