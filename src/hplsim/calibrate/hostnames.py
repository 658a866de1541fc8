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


def host_names(template: str, nodes) -> list[str | None]:
    """`host_name` of each node number (None for a missing one), each distinct node named
    once: a calibration has tens of thousands of rows and a few dozen nodes.

    >>> host_names("dahu-{node-1}.grid5000.fr", [2, 3.0, float("nan"), None, 2])
    ['dahu-1.grid5000.fr', 'dahu-2.grid5000.fr', None, None, 'dahu-1.grid5000.fr']
    """
    names: dict[int, str] = {}
    out: list[str | None] = []
    for v in nodes:
        if v is None or v != v:  # None or NaN
            out.append(None)
            continue
        node = int(v)
        if node not in names:
            names[node] = host_name(template, node)
        out.append(names[node])
    return out


def check_host_format(template: str) -> str:
    if not _HOST_FIELD.search(template):
        raise HplsimError(f"host format {template!r} has no {{node}} field (e.g. 'dahu-{{node-1}}.grid5000.fr')")
    return template
