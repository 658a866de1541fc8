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

#: the option keys `hpl_options` adds (click's parameter names)
HPL_OPTION_KEYS = ("n", "nb", "p", "q", "pfact", "rfact", "nbmin", "ndiv", "bcast", "depth", "swap",
                   "swap_threshold", "pmap", "hpl_dat")

_OPTIONS = [
    click.option("-N", "n", type=INTS, help="Problem size(s) N, e.g. 20000 or 10000,20000."),
    click.option("--nb", type=INTS, help="Block size(s) NB."),
    click.option("-P", "p", type=INTS, help="Process rows (paired with -Q like HPL.dat's Ps/Qs)."),
    click.option("-Q", "q", type=INTS, help="Process columns."),
    click.option("--pfact", type=INTS, help="Panel factorization(s): 0 left, 1 Crout, 2 right."),
    click.option("--rfact", type=INTS, help="Recursive factorization(s): 0 left, 1 Crout, 2 right."),
    click.option("--nbmin", type=INTS, help="Recursion stopping size(s) NBMIN."),
    click.option("--ndiv", type=INTS, help="Panels in recursion NDIV."),
    click.option("--bcast", type=INTS, help="Broadcast(s): 0 1ring, 1 1ringM, 2 2ring, 3 2ringM, 4 long, 5 longM."),
    click.option("--depth", type=INTS, help="Look-ahead depth(s)."),
    click.option("--swap", type=int, help="Swap: 0 binary-exchange, 1 spread-roll, 2 mix."),
    click.option("--swap-threshold", type=int, help="Column threshold of the mixed swap."),
    click.option("--pmap", type=int, help="Process mapping: 0 row-major, 1 column-major."),
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
    changes = {}
    for key, field in (("n", "ns"), ("nb", "nbs"), ("pfact", "pfacts"), ("rfact", "rfacts"), ("nbmin", "nbmins"),
                       ("ndiv", "ndivs"), ("bcast", "bcasts"), ("depth", "depths")):
        if opts[key] is not None:
            changes[field] = opts[key]
    if opts["p"] is not None or opts["q"] is not None:
        ps = opts["p"] or tuple(p for p, _ in base.grids)
        qs = opts["q"] or tuple(q for _, q in base.grids)
        if len(ps) != len(qs):
            raise HplsimError(f"-P and -Q must list as many values ({len(ps)} vs {len(qs)})")
        changes["grids"] = tuple(zip(ps, qs))
    for key in ("swap", "pmap"):
        if opts[key] is not None:
            changes[key] = opts[key]
    if opts["swap_threshold"] is not None:
        changes["swap_threshold"] = opts["swap_threshold"]
    return base.replace(**changes)
