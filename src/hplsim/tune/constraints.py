"""What `hplsim tune` may choose from, and the limits it must respect: the search space
(every HPL parameter the user did not fix), the problem size that fits in memory, the
budget of simulation time. Everything is checked here, before any simulation, and a bad
constraint is one `HplsimError` naming it.

The memory rule (docs/tune.md): HPL's matrix is N x (N+1) doubles spread block-cyclically
over the P x Q grid; a rank holds numroc(N) x numroc(N+1) of them plus its panels (DEPTH+1
panels of NB columns over its rows and columns, and the row-swap work space). The ranks of a
node are summed, and N is the largest multiple of NB for which the most loaded node stays
within `fraction` (default 0.80) of its memory: the remaining 20 % is left to the operating
system, MPI's buffers and the HPL binary, the margin the HPL FAQ and vendors' guides use.
A node that would have to swap would run HPL many times slower, or be killed.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.hpl.parameters import PARAMETER

#: of each node's memory, what HPL may use by default (the rest: OS, MPI, binary)
DEFAULT_MEMORY_FRACTION = 0.80

#: the values searched when the user fixes none (HPL's legal codes; NB and DEPTH: the usual range)
DEFAULT_NBS = (64, 96, 128, 192, 256, 384, 512)
DEFAULT_CHOICES = {k: (0, 1, 2) if k == "depth" else tuple(PARAMETER[k].codes)
                   for k in ("pfact", "rfact", "bcast", "depth", "swap")}
#: the parameters searched, in the order of the sensitivity table
SEARCHED = ("grid", "nb", "pfact", "rfact", "bcast", "depth", "swap")
#: HPL's legal range of each code (a fixed value outside it is refused)
LEGAL = {k: range(min(PARAMETER[k].codes), max(PARAMETER[k].codes) + 1) for k in DEFAULT_CHOICES if k != "depth"}
MAX_DEPTH = 8  # look-ahead deeper than this costs memory and never helped in HPL's studies

_MEMORY_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
                 "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "k": 2**10, "m": 2**20, "g": 2**30,
                 "t": 2**40}
_TIME_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_memory(text: str) -> int:
    """``192GB`` (10^9), ``192GiB`` or ``192G`` (2^30), ``512MB``, a plain number of bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _MEMORY_UNITS:
        raise HplsimError(f"--memory-per-node {text!r} is not a memory size like 192GB, 192GiB or 512MB")
    value = float(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()]
    if not math.isfinite(value) or value < 1:
        raise HplsimError(f"--memory-per-node {text!r} must be a positive size")
    return int(value)


def parse_budget(text: str) -> float:
    """``20m``, ``2h``, ``1h30m``, ``90s``, ``600`` (seconds) -> seconds of simulation."""
    s = str(text).strip().lower()
    if re.fullmatch(r"[0-9]*\.?[0-9]+", s):
        seconds = float(s)
    else:
        parts = re.findall(r"([0-9]*\.?[0-9]+)\s*(min|h|m|s)", s)
        if not parts or "".join(f"{a}{b}" for a, b in parts) != s.replace(" ", ""):
            raise HplsimError(f"--budget {text!r} is not a duration like 20m, 2h, 1h30m or 600s")
        seconds = sum(float(a) * _TIME_UNITS[b] for a, b in parts)
    if not math.isfinite(seconds) or seconds <= 0:
        raise HplsimError(f"--budget {text!r}: the budget of simulation time must be positive")
    return seconds


def grids_of(ranks: int) -> list[tuple[int, int]]:
    """Every P x Q = ranks with P <= Q. P > Q is pruned: HPL's panel factorisation runs down
    a process column (P ranks: its pivot search is a reduction over P) and the row swaps and
    update broadcast along rows, so the HPL authors' advice — and every published tuning —
    is P <= Q ("P and Q approximately equal, with Q slightly larger than P")."""
    return [(p, ranks // p) for p in range(1, math.isqrt(ranks) + 1) if ranks % p == 0]


def numroc(n: int, nb: int, iproc: np.ndarray, nprocs: int) -> np.ndarray:
    """Rows (or columns) of an n-long dimension, in blocks of nb dealt cyclically, owned by
    process `iproc` of `nprocs` (ScaLAPACK's and HPL's numroc, source process 0)."""
    nblocks = n // nb
    base = (nblocks // nprocs) * nb
    extra = nblocks % nprocs
    out = np.full(np.shape(iproc), base, dtype=np.int64)
    out = out + np.where(iproc < extra, nb, 0)
    return out + np.where(iproc == extra, n % nb, 0)


def node_bytes(n: int, nb: int, p: int, q: int, depth: int, hosts: Sequence[str], pmap: int = 0) -> int:
    """HPL's memory on the most loaded node: the local matrix (with the right-hand side
    column) and DEPTH+1 panels plus the row-swap work space per rank, ranks on their slots'
    hosts in rank order; PMAP row-major puts rank r at (r // Q, r % Q)."""
    ranks = np.arange(p * q)
    rows, cols = (ranks // q, ranks % q) if pmap == 0 else (ranks % p, ranks // p)
    mp = numroc(n, nb, rows, p)
    nq = numroc(n + 1, nb, cols, q)
    panels = (depth + 1) * nb * (mp + nq + 2 * nb)
    per_rank = 8 * (mp * nq + panels + (mp + nb) * nb)
    per_host: dict[str, int] = {}
    for host, b in zip(hosts, per_rank.tolist()):
        per_host[host] = per_host.get(host, 0) + b
    return max(per_host.values())


def memory_n(limit: int, nb: int, p: int, q: int, depth: int, hosts: Sequence[str], pmap: int = 0) -> int:
    """The largest multiple of NB whose most loaded node needs at most `limit` bytes (0 if
    not even N = NB fits)."""
    if node_bytes(nb, nb, p, q, depth, hosts, pmap) > limit:
        return 0
    lo, hi = 1, 2
    while node_bytes(hi * nb, nb, p, q, depth, hosts, pmap) <= limit:
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # lo fits, hi does not
        mid = (lo + hi) // 2
        if node_bytes(mid * nb, nb, p, q, depth, hosts, pmap) <= limit:
            lo = mid
        else:
            hi = mid
    return lo * nb


@dataclass(frozen=True)
class Space:
    """The values each searched parameter may take (a single value: fixed by the user), and
    the fixed rest of the configuration (`base`)."""

    grids: tuple[tuple[int, int], ...]
    nbs: tuple[int, ...]
    choices: dict[str, tuple[int, ...]] = field(default_factory=dict)  # pfact, rfact, bcast, depth, swap
    base: HplConfig = HplConfig(n=1000)

    def values(self, name: str) -> tuple:
        if name == "grid":
            return self.grids
        if name == "nb":
            return self.nbs
        return self.choices[name]

    @property
    def size(self) -> int:
        return math.prod(len(self.values(k)) for k in SEARCHED)

    def config(self, point: dict, n: int) -> HplConfig:
        p, q = point["grid"]
        return HplConfig(**{**self.base.as_dict(), "n": n, "p": p, "q": q, "nb": point["nb"],
                            **{k: point[k] for k in DEFAULT_CHOICES}})

    def points(self) -> list[dict]:
        """Every combination, in a fixed order."""
        names = list(SEARCHED)
        return [dict(zip(names, v)) for v in itertools.product(*(self.values(k) for k in names))]


def _fixed(name: str, values: tuple[int, ...] | None) -> tuple[int, ...]:
    if values is None:
        return DEFAULT_CHOICES[name]
    for v in values:
        if name == "depth":
            if not 0 <= v <= MAX_DEPTH:
                raise HplsimError(f"--depth {v} is out of range (0 .. {MAX_DEPTH})")
        elif v not in LEGAL[name]:
            raise HplsimError(f"--{name} {v} is not one of HPL's codes ({LEGAL[name].start} .. {LEGAL[name].stop - 1})")
    return tuple(dict.fromkeys(values))


def make_space(ranks: int, base: HplConfig, nbs: tuple[int, ...] | None = None,
               grids: tuple[tuple[int, int], ...] | None = None, **fixed: tuple[int, ...] | None) -> Space:
    """The search space on `ranks` ranks; each argument not None fixes (restricts) its
    parameter. Refuses what HPL cannot run."""
    if ranks < 1:
        raise HplsimError(f"the rank count must be at least 1, got {ranks}")
    if grids is None:
        grids_ = tuple(grids_of(ranks))
    else:
        for p, q in grids:
            if p < 1 or q < 1:
                raise HplsimError(f"process grid {p}x{q}: P and Q must be at least 1")
            if p * q != ranks:
                raise HplsimError(f"process grid {p}x{q} has {p * q} ranks, not the {ranks} to use")
        grids_ = tuple(dict.fromkeys(grids))
    if not grids_:
        raise HplsimError(f"{ranks} ranks have no P x Q process grid")
    nbs_ = DEFAULT_NBS if nbs is None else tuple(dict.fromkeys(nbs))
    for nb in nbs_:
        if not 1 <= nb <= 16384:
            raise HplsimError(f"--nb {nb} is out of range (1 .. 16384)")
    choices = {k: _fixed(k, fixed.get(k)) for k in DEFAULT_CHOICES}
    return Space(grids_, nbs_, choices, base)
