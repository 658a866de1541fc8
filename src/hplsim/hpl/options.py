"""The HPL parameters as command-line options, shared by every command that runs HPL
(`hplsim predict`, `hplsim run-real`, `hplsim validate`): same names, same meaning.

    @click.command()
    @hpl_options
    def cmd(**opts):
        params = params_from_options(read_hpl_dat(opts["hpl_dat"]) if opts["hpl_dat"] else None, opts)

Each option takes one value or a comma-separated list (like HPL.dat's lists); -P and -Q
are paired like HPL.dat's Ps and Qs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import click

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplParams
from hplsim.hpl.parameters import PARAMETERS, Parameter


class IntList(click.ParamType):
    """``4000`` or ``2000,4000,8000``."""

    name = "int-list"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            items = tuple(int(v) for v in str(value).split(",") if v.strip())
        except ValueError:
            self.fail(f"{value!r} is not an integer or a comma-separated list of integers", param, ctx)
        if not items:
            self.fail("empty list", param, ctx)
        return items


INTS = IntList()

#: the parameters that are command-line options, in the order of `--help`
OPTION_PARAMETERS: tuple[Parameter, ...] = tuple(p for p in PARAMETERS if p.option)
#: the option keys `hpl_options` adds (click's parameter names)
HPL_OPTION_KEYS = (*(p.name for p in OPTION_PARAMETERS), "hpl_dat")


def _option(p: Parameter) -> Callable:
    """A list takes one value or a comma-separated list, a single value one value, a flag
    ``--x``/``--no-x``; not given, each is None (the base's value stays)."""
    assert p.option is not None
    text = f"{p.help}: {p.codes_text()}." if p.codes else f"{p.help}."
    if p.type is bool:
        return click.option("/".join(p.spellings()), p.name, default=None, help=text)
    return click.option(p.option, p.name, type=INTS if p.listed else int, help=text)


_OPTIONS = [
    *(_option(p) for p in OPTION_PARAMETERS),
    click.option("--hpl-dat", type=click.Path(path_type=Path),
                 help="Read the HPL parameters (all lists) from an HPL.dat."),
]


def hpl_options(f: Callable) -> Callable:
    """Add the HPL parameter options (in the order of `--help`)."""
    for opt in reversed(_OPTIONS):
        f = opt(f)
    return f


def any_hpl_option(opts: dict) -> bool:
    return any(opts.get(k) is not None for k in HPL_OPTION_KEYS)


def params_from_options(base: HplParams | None, opts: dict) -> HplParams:
    """`base` (an HPL.dat's parameters, a preset's, or None) with the options given on the
    command line replacing its lists."""
    if base is None:
        if opts["n"] is None:
            raise HplsimError("give the problem size with -N (or an HPL.dat with --hpl-dat, or --preset)")
        base = HplParams(ns=opts["n"])
    changes: dict = {}
    for p in OPTION_PARAMETERS:
        if opts[p.name] is not None and p.list_field != "grids":
            changes[p.list_field] = opts[p.name]
    if opts["p"] is not None or opts["q"] is not None:
        ps = opts["p"] or base.values("p")
        qs = opts["q"] or base.values("q")
        if len(ps) != len(qs):
            raise HplsimError(f"-P and -Q must list as many values ({len(ps)} vs {len(qs)})")
        changes["grids"] = tuple(zip(ps, qs))
    return base.replace(**changes)
