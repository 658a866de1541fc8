"""HPL's parameters: one run (`HplConfig`) and HPL.dat's lists of values (`HplParams`).

Codes are HPL's own: PFACT/RFACT 0 left, 1 Crout, 2 right; BCAST 0 1ring, 1 1ringM,
2 2ring, 3 2ringM, 4 long, 5 longM; SWAP 0 binary-exchange, 1 spread-roll (long),
2 mix; PMAP 0 row-major, 1 column-major. Defaults are those of the HPL.dat shipped with
hpcc's HPL (``_hpccinf.txt``), except NB which hpcc sizes from memory.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field

from hplsim.errors import HplsimError

FACT_NAMES = {0: "left", 1: "crout", 2: "right"}
BCAST_NAMES = {0: "1ring", 1: "1ringM", 2: "2ring", 3: "2ringM", 4: "long", 5: "longM"}
SWAP_NAMES = {0: "binary-exchange", 1: "spread-roll", 2: "mix"}
PMAP_NAMES = {0: "row-major", 1: "column-major"}
MAX_PARAM = 20  # HPL_MAX_PARAM: HPL.dat accepts at most 20 values per list


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
    nb: int = 128
    p: int = 1
    q: int = 1
    pmap: int = 0
    pfact: int = 2
    nbmin: int = 4
    ndiv: int = 2
    rfact: int = 1
    bcast: int = 1
    depth: int = 1
    swap: int = 2
    swap_threshold: int = 64
    l1_transposed: bool = True
    u_transposed: bool = True
    equil: bool = True
    align: int = 8

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


def _check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise HplsimError(f"{name} must be an integer, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise HplsimError(f"{name} must be {bound}, got {value}")


def validate_config(c: HplConfig) -> None:
    _check_int("N", c.n, 1)
    _check_int("NB", c.nb, 1)
    if c.nb > c.n:
        raise HplsimError(f"NB ({c.nb}) must not exceed N ({c.n})")
    _check_int("P", c.p, 1)
    _check_int("Q", c.q, 1)
    _check_int("PMAP", c.pmap, 0, 1)
    _check_int("PFACT", c.pfact, 0, 2)
    _check_int("RFACT", c.rfact, 0, 2)
    _check_int("NBMIN", c.nbmin, 1)
    _check_int("NDIV", c.ndiv, 2)
    _check_int("BCAST", c.bcast, 0, 5)
    _check_int("DEPTH", c.depth, 0)
    _check_int("SWAP", c.swap, 0, 2)
    _check_int("swapping threshold", c.swap_threshold, 0)
    _check_int("ALIGN", c.align, 1)


@dataclass(frozen=True)
class HplParams:
    """The lists of an HPL.dat; `configs()` expands them in HPL's own loop order."""

    ns: tuple[int, ...]
    nbs: tuple[int, ...] = (128,)
    grids: tuple[tuple[int, int], ...] = ((1, 1),)
    pmap: int = 0
    threshold: float = 16.0
    pfacts: tuple[int, ...] = (2,)
    nbmins: tuple[int, ...] = (4,)
    ndivs: tuple[int, ...] = (2,)
    rfacts: tuple[int, ...] = (1,)
    bcasts: tuple[int, ...] = (1,)
    depths: tuple[int, ...] = (1,)
    swap: int = 2
    swap_threshold: int = 64
    l1_transposed: bool = True
    u_transposed: bool = True
    equil: bool = True
    align: int = 8
    output: str = field(default="stdout")

    def __post_init__(self) -> None:
        for name in ("ns", "nbs", "grids", "pfacts", "nbmins", "ndivs", "rfacts", "bcasts", "depths"):
            values = getattr(self, name)
            if not values:
                raise HplsimError(f"HPL parameter list {name} is empty")
            if len(values) > MAX_PARAM:
                raise HplsimError(f"HPL accepts at most {MAX_PARAM} values of {name}, got {len(values)}")

    def configs(self) -> list[HplConfig]:
        """One config per combination, in the order HPL's driver runs them.

        >>> params = HplParams(ns=(1000, 2000), nbs=(64,), grids=((1, 2), (2, 1)))
        >>> [(c.p, c.q, c.n) for c in params.configs()]
        [(1, 2, 1000), (1, 2, 2000), (2, 1, 1000), (2, 1, 2000)]
        """
        out = []
        for (p, q), n, nb, depth, bcast, rfact, pfact, nbmin, ndiv in itertools.product(
            self.grids, self.ns, self.nbs, self.depths, self.bcasts, self.rfacts, self.pfacts, self.nbmins, self.ndivs
        ):
            out.append(
                HplConfig(
                    n=n, nb=nb, p=p, q=q, pmap=self.pmap, pfact=pfact, nbmin=nbmin, ndiv=ndiv,
                    rfact=rfact, bcast=bcast, depth=depth, swap=self.swap,
                    swap_threshold=self.swap_threshold, l1_transposed=self.l1_transposed,
                    u_transposed=self.u_transposed, equil=self.equil, align=self.align,
                )
            )
        return out

    @classmethod
    def from_config(cls, c: HplConfig, threshold: float = 16.0, output: str = "stdout") -> "HplParams":
        return cls(
            ns=(c.n,), nbs=(c.nb,), grids=((c.p, c.q),), pmap=c.pmap, threshold=threshold,
            pfacts=(c.pfact,), nbmins=(c.nbmin,), ndivs=(c.ndiv,), rfacts=(c.rfact,),
            bcasts=(c.bcast,), depths=(c.depth,), swap=c.swap, swap_threshold=c.swap_threshold,
            l1_transposed=c.l1_transposed, u_transposed=c.u_transposed, equil=c.equil,
            align=c.align, output=output,
        )

    def replace(self, **changes) -> "HplParams":
        return dataclasses.replace(self, **changes)

    @property
    def max_ranks(self) -> int:
        return max(p * q for p, q in self.grids)
