"""HPL's parameters: one run (`HplConfig`) and HPL.dat's lists of values (`HplParams`).

What each parameter is — its codes, range, default, HPL.dat line — is declared once, in
`hplsim.hpl.parameters`; this module derives the checks and defaults from it.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Sequence

from hplsim.errors import HplsimError
from hplsim.hpl.parameters import LOOP_ORDER, MAX_PARAM, PARAMETER, PARAMETERS, SINGLE, defaults

FACT_NAMES = dict(PARAMETER["pfact"].codes)
BCAST_NAMES = dict(PARAMETER["bcast"].codes)
SWAP_NAMES = dict(PARAMETER["swap"].codes)
PMAP_NAMES = dict(PARAMETER["pmap"].codes)
_D = defaults()
_LISTS = tuple(p for p in LOOP_ORDER if p.list_field != "grids")  # HPL.dat's lists but the grid, in loop order

# `HplConfig`'s fields stay written out, typed: every stage reads `config.nb`,
# `config.bcast` …, and a type checker or a reader should see them. Their defaults come
# from the table, and tests/test_parameters.py fails when a field's name, order or type
# differs from the table's, so the copy cannot drift. `HplParams` is the table seen as
# HPL.dat: each of its fields follows from a row (a list's name, a tuple of its type, the
# default), so they are generated (`_hpl_dat_fields`).


@dataclass(frozen=True)
class HplConfig:
    """One HPL run: what HPL's driver loops over, plus the global switches.

    Checked when made: a value HPL would refuse is an `HplsimError`.

    Examples
    --------
    >>> from hplsim.hpl.config import HplConfig
    >>> config = HplConfig(n=20000, nb=128, p=8, q=8, bcast=2, depth=0)
    >>> config.ranks, config.label()
    (64, 'WR02C2R4')
    >>> HplConfig(n=100, nb=128)
    Traceback (most recent call last):
    hplsim.errors.HplsimError: NB (128) must not exceed N (100)
    """

    n: int
    nb: int = _D["nb"]
    p: int = _D["p"]
    q: int = _D["q"]
    pmap: int = _D["pmap"]
    pfact: int = _D["pfact"]
    nbmin: int = _D["nbmin"]
    ndiv: int = _D["ndiv"]
    rfact: int = _D["rfact"]
    bcast: int = _D["bcast"]
    depth: int = _D["depth"]
    swap: int = _D["swap"]
    swap_threshold: int = _D["swap_threshold"]
    l1_transposed: bool = _D["l1_transposed"]
    u_transposed: bool = _D["u_transposed"]
    equil: bool = _D["equil"]
    align: int = _D["align"]

    def __post_init__(self) -> None:
        validate_config(self)

    @property
    def ranks(self) -> int:
        return self.p * self.q

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def label(self) -> str:
        """HPL's own T/V code, e.g. ``WR11C2R4`` (order, depth, bcast, rfact, ndiv, pfact, nbmin)."""
        letter = {0: "L", 1: "C", 2: "R"}
        return (
            f"W{'R' if self.pmap == 0 else 'C'}{self.depth}{self.bcast}"
            f"{letter[self.rfact]}{self.ndiv}{letter[self.pfact]}{self.nbmin}"
        )


def validate_config(c: HplConfig) -> None:
    for parameter in PARAMETERS:
        parameter.check(getattr(c, parameter.name))
    if c.nb > c.n:
        raise HplsimError(f"NB ({c.nb}) must not exceed N ({c.n})")


def _hpl_dat_fields(cls: type) -> type:
    """Give `cls` a field per entry of HPL.dat, in its order, before `dataclass` reads them:
    a list is a tuple of values (the grid: (P, Q) pairs), a single value is of its type;
    each defaults to the table's default (N has none: it comes first, required)."""
    annotations: dict[str, str] = {}
    for p in sorted(PARAMETERS, key=lambda p: p.line):
        default: object = p.default
        if p.list_field == "grids":
            annotations["grids"], default = "tuple[tuple[int, int], ...]", ((_D["p"], _D["q"]),)
        elif p.listed:
            annotations[p.list_field], default = f"tuple[{p.type.__name__}, ...]", (p.default,)
        else:
            annotations[p.list_field] = p.type.__name__
        if p.default is not None:
            setattr(cls, p.list_field, default)
    cls.__annotations__ = {**annotations, **cls.__annotations__}
    return cls


@dataclass(frozen=True)
@_hpl_dat_fields
class HplParams:
    """The lists of an HPL.dat; `configs()` expands them in HPL's own loop order.

    One field per HPL.dat entry (`ns`, `nbs`, `pmap`, `grids`, `pfacts` …: the table's
    `list_field`), then the residual check's `threshold` and the `output`.
    """

    threshold: float = 16.0
    output: str = field(default="stdout")

    def __post_init__(self) -> None:
        for name in dict.fromkeys(p.list_field for p in LOOP_ORDER):
            values = getattr(self, name)
            if not values:
                raise HplsimError(f"HPL parameter list {name} is empty")
            if len(values) > MAX_PARAM:
                raise HplsimError(f"HPL accepts at most {MAX_PARAM} values of {name}, got {len(values)}")

    def values(self, name: str) -> tuple:
        """The values of parameter `name` (one for a single-valued one): P and Q from the grids.

        >>> HplParams(ns=(1000,), grids=((1, 2), (2, 2))).values("q"), HplParams(ns=(1000,)).values("swap")
        ((2, 2), (2,))
        """
        parameter = PARAMETER[name]
        if parameter.list_field == "grids":
            return tuple(grid[("p", "q").index(name)] for grid in self.grids)
        value = getattr(self, parameter.list_field)
        return value if parameter.listed else (value,)

    def configs(self) -> list[HplConfig]:
        """One config per combination, in the order HPL's driver runs them.

        >>> params = HplParams(ns=(1000, 2000), nbs=(64,), grids=((1, 2), (2, 1)))
        >>> [(c.p, c.q, c.n) for c in params.configs()]
        [(1, 2, 1000), (1, 2, 2000), (2, 1, 1000), (2, 1, 2000)]
        """
        single = {x.name: getattr(self, x.name) for x in SINGLE}
        return [
            HplConfig(p=p, q=q, **dict(zip((x.name for x in _LISTS), values)), **single)
            for (p, q), *values in itertools.product(self.grids, *(getattr(self, x.list_field) for x in _LISTS))
        ]

    @classmethod
    def from_config(cls, c: HplConfig, threshold: float = 16.0, output: str = "stdout") -> "HplParams":
        return cls.from_configs([c], threshold, output)

    @classmethod
    def from_configs(cls, configs: Sequence[HplConfig], threshold: float = 16.0,
                     output: str = "stdout") -> "HplParams":
        """One HPL.dat listing the configurations' values, each list at most HPL's 20 (a
        superset when the configurations are not a full product); the single values are
        the first configuration's."""
        def uniq(values):
            return tuple(dict.fromkeys(values))[:MAX_PARAM]

        lists = {x.list_field: uniq(getattr(c, x.name) for c in configs) for x in _LISTS}
        return cls(**lists, grids=uniq((c.p, c.q) for c in configs), threshold=threshold, output=output,
                   **{x.name: getattr(configs[0], x.name) for x in SINGLE})

    def replace(self, **changes) -> "HplParams":
        return dataclasses.replace(self, **changes)

    @property
    def max_ranks(self) -> int:
        return max(p * q for p, q in self.grids)
