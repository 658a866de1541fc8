"""Host names of numbered nodes: the published Dahu data (calibrations and their history)
number nodes from 1 where the platform names hosts; a template turns one into the other.
The default, ``dahu-{node-1}.grid5000.fr``, is the rule of the data's README (host
``dahu-i`` is node i+1) with the host names of the built-in Dahu platform."""

from __future__ import annotations

import re

from hplsim.errors import HplsimError

DAHU_HOST_FORMAT = "dahu-{node-1}.grid5000.fr"
_HOST_FIELD = re.compile(r"\{node(?:\s*([+-])\s*(\d+))?\}")


def host_name(template: str, node: int) -> str:
    """``dahu-{node-1}.grid5000.fr`` with node 5 -> ``dahu-4.grid5000.fr``."""

    def repl(m: re.Match) -> str:
        offset = int(m.group(2) or 0) * (-1 if m.group(1) == "-" else 1)
        return str(int(node) + offset)

    return _HOST_FIELD.sub(repl, template)


def check_host_format(template: str) -> str:
    if not _HOST_FIELD.search(template):
        raise HplsimError(f"host format {template!r} has no {{node}} field (e.g. 'dahu-{{node-1}}.grid5000.fr')")
    return template
