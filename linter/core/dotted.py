"""Dotted config keys (`actor_rollout_ref.actor.ppo_epochs`): their ancestors, in time linear in the key."""

from __future__ import annotations

# No config nests deeper (verl's deepest keys have 8 levels): ancestors deeper than this are never looked up, so a
# key of 20,000 segments costs what one of 64 does (joining every prefix of it took seconds per lookup).
MAX_DEPTH = 64


def ancestors(path: str) -> list[str]:
    """The key's proper ancestors, deepest first, at most `MAX_DEPTH` segments deep: `a.b.c` -> `a.b`, `a`."""
    dots = []
    at = path.find(".")
    while at >= 0 and len(dots) < MAX_DEPTH:
        dots.append(at)
        at = path.find(".", at + 1)
    return [path[:at] for at in reversed(dots)]
