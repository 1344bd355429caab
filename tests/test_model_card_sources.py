"""Every shipped model card whose source is a wheel on the package registry holds exactly the numbers of the
config.json it cites (issue 33, item 5): the wheel is fetched, its sha256 checked against the card's, and every
field the card keeps (nested ones too: a vision-language card's `text_config`) equals the cited file's."""

import hashlib
import json
import re
import zipfile
from functools import cache
from pathlib import Path

import pytest

from .helpers import REPO, fetch_wheel

pytestmark = pytest.mark.network

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


@pytest.mark.parametrize("card", FROM_WHEELS, ids=lambda p: p.stem)
def test_a_card_holds_the_numbers_of_the_config_it_cites(card: Path):
    data = json.loads(card.read_text(encoding="utf-8"))
    cited = WHEEL_SOURCE.match(data["source"])
    wheel = fetch_wheel(f"{cited['package']}=={cited['version']}")
    assert sha256_of(wheel).startswith(cited["sha"]), f"{wheel.name} is another build"
    source = json.loads(zipfile.ZipFile(wheel).read(cited["member"]))
    assert kept_from(data["config"], source) == []
