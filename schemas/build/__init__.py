"""Generate the schema snapshots that ``sapo-lint`` checks against (format: ``schemas/FORMAT.md``).

Everything here reads *files* of the real packages: verl's Hydra YAML (composed with hydra-core) and the Python
sources of verl, megatron-core and mbridge (parsed with libcst).  verl, torch and megatron are never imported.
In the linter only ``sapo-lint schema build`` (linter/cli.py) imports this package, and it imports nothing from
the linter: imports flow linter -> schemas.  Importing this facade is cheap: each name below loads its module (and
hydra, omegaconf, libcst) on first use.

* ``locate_verl`` -> ``LocatedVerl(package_dir, version, source, commit)`` (distributions.py)
* ``build_verl_snapshot`` -> the snapshot of one verl version (every trainer config it ships);
  ``entrypoint_defaults``, ``config_sources`` (verl.py)
* ``build_custom_snapshot`` -> the snapshot of one config of a repository's own, composed with verl's configs on its
  search path (custom.py; ``ConfigSource``: compose.py)
* ``build_consumer_snapshot``, ``mbridge_git_main_snapshot`` -> megatron-core / mbridge / ray snapshots (consumers.py;
  Megatron-LM's argparse flags of a source archive: megatron_arguments.py)
* ``mindspeed_snapshot`` -> the transcribed MindSpeed (Ascend) snapshot (mindspeed.py)
* ``build_verl_docs`` -> the comments verl's config YAML carries for its keys, where they land (docs.py; read
  with ruamel.yaml); ``docs_text``
* ``snapshot_text`` -> the deterministic JSON text (layout.py)
* ``write_snapshot``, ``build_all`` (regenerate every committed snapshot under ``schemas/``), ``write_verl_docs``
  (the comments documents alone) (writer.py)
* ``recipe_validator_code`` -> ``schemas/recipe_validator.py`` (validator_codegen.py)

Regenerate the committed files with::

    sapo-lint schema build --wheel verl-0.9.1-py3-none-any.whl --wheel verl-0.8.0-py3-none-any.whl \
        --wheel verl-0.7.1-py3-none-any.whl --wheel verl-0.6.1-py3-none-any.whl \
        --wheel verl-0.5.0-py2.py3-none-any.whl --wheel verl-0.4.1-py2.py3-none-any.whl \
        --verl-root verl-main-1dda039.tar.gz \
        --consumer-wheel megatron_core-0.12.1-....whl ... --consumer-wheel mbridge-0.15.1-py3-none-any.whl \
        --consumer-wheel ray-2.60.0-....whl \
        --consumer-wheel mlm-core_v0.18.0.tar.gz --consumer-wheel mlm-core_v0.19.0.tar.gz   # ../shared/megatron-src/

and the comments documents alone (``schemas/verl-docs/``) with ``sapo-lint schema build --docs-only`` and the same
``--wheel`` and ``--verl-root`` arguments.
"""

from __future__ import annotations

from importlib import import_module


class SchemaBuildError(Exception):
    """A snapshot cannot be built; the message is one line for the CLI."""


class ResolverRefused(SchemaBuildError):
    """A config asked for a resolver's value (`${oc.env:...}`); a build of untrusted files never evaluates one
    (isolated.py)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a config uses the resolver `{name}`, which a snapshot build never evaluates")


# Public name -> the submodule that defines it.
_EXPORTS = {
    "locate_verl": "distributions",
    "build_verl_snapshot": "verl",
    "build_custom_snapshot": "custom",
    "ConfigSource": "compose",
    "entrypoint_defaults": "verl",
    "config_sources": "verl",
    "build_consumer_snapshot": "consumers",
    "mbridge_git_main_snapshot": "consumers",
    "mindspeed_snapshot": "mindspeed",
    "build_verl_docs": "docs",
    "docs_text": "docs",
    "snapshot_text": "layout",
    "write_snapshot": "writer",
    "verl_snapshot_path": "writer",
    "consumer_snapshot_path": "writer",
    "build_all": "writer",
    "write_verl_docs": "writer",
    "verl_docs_path": "writer",
    "recipe_validator_code": "validator_codegen",
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value
