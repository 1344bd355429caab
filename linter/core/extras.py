"""The command that installs one of the distribution's optional extras (`plot`, `report`, `ray`), for the way this
copy was installed: every piece of advice about a missing optional package names it.

`sapo-toolkit[extra]` is only right for a copy installed from a package index. A copy installed from a checkout
records it in `direct_url.json` (PEP 610): `pip install '<checkout>[extra]'` there, with `-e` for an editable
install (without it, pip would replace the editable install by a copy). Anything else (a wheel file, a VCS URL, a
checkout since removed) gets the extra's own requirements, which install whatever the source.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "sapo-toolkit"


def install_command(extra: str) -> str:
    """`pip install ...` that adds `extra` to the installed sapo-toolkit. Run from a checkout, the current directory
    also holds setuptools' `sapo_toolkit.egg-info`, found first and without `direct_url.json`: the record that has one
    is the installed copy's."""
    from importlib import metadata  # ~20 ms (email, zipfile, csv): only when advice names an extra

    for distribution in metadata.distributions(name=DISTRIBUTION):
        direct_url = distribution.read_text("direct_url.json")
        if direct_url is not None:
            return install_command_for(extra, direct_url, distribution.requires or ())
    return install_command_for(extra, None, ())


def install_command_for(extra: str, direct_url: str | None, requires: Iterable[str]) -> str:
    """The command for a copy whose `direct_url.json` text is `direct_url` (None: installed from an index) and whose
    `Requires-Dist` entries are `requires`."""
    if direct_url is None:
        return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"
    try:
        record = json.loads(direct_url)
        url = urlparse(record["url"])
        dir_info = record.get("dir_info")
    except (ValueError, KeyError, TypeError, AttributeError):
        dir_info = url = None
    if isinstance(dir_info, dict) and url is not None and url.scheme == "file":
        from urllib.request import url2pathname  # ~10 ms (http.client, ssl): only for a checkout's install

        checkout = Path(url2pathname(unquote(url.path)))
        if checkout.is_dir():
            editable = "-e " if dir_info.get("editable") else ""
            return f"pip install {editable}{shlex.quote(f'{checkout}[{extra}]')}"
    return "pip install " + " ".join(shlex.quote(r) for r in extra_requirements(extra, requires))


def extra_requirements(extra: str, requires: Iterable[str]) -> list[str]:
    """The requirements `extra` adds, markers dropped: those whose marker holds with the extra and not without it
    (so `tomli; python_version < '3.11'` is not one of them)."""
    from packaging.requirements import Requirement

    found = []
    for text in requires:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is not None and marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": ""}):
            requirement.marker = None
            found.append(str(requirement))
    return found
