"""Designs drawn from HPL's configurations: which configurations `hplsim validate` runs,
which dgemm/dtrsm calls the calibration measures for them (HPL's own call shapes and
leading dimensions), and at which problem sizes the traced HPL runs that time the other
kernels. See docs/validate.md ("Kernel models") for the measurements behind each rule.

    configs = default_configs()
    design = hpl_blas_design(configs, "dgemm", rows=150, seed=0)
    traced = trace_configs(configs)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from hplsim.calibrate.designs import Design, _blas_frame
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.sysinfo import l1_set_span_bytes, last_level_cache_bytes


def default_configs() -> list[HplConfig]:
    """The default configuration set: 34 configurations of P×Q ∈ {1×2, 2×1}, N ∈ {5000,
    10000, 15000}, NB ∈ {64, 128, 256}, BCAST ∈ {1ringM, 2ring}, DEPTH ∈ {0, 1}. Real runs
    take about 18 minutes at R = 3 on 2 idle cores of ~45 Gflops, 27 at R = 5 (each N =
    5000 configuration runs 9–11 times to reach --min-seconds 10):

    - N = 5000: every NB, DEPTH and grid; both BCAST on 1×2 (on 2×1, Q = 1: a broadcast
      among one process does nothing, BCAST cannot matter) — 18 configurations;
    - N = 10000: every NB and DEPTH on both grids, BCAST 1ringM — 12;
    - N = 15000: NB 128 and 256 on both grids, BCAST 1ringM, DEPTH 1 — 4.

    Left out: BCAST 2ring beyond N = 5000 (with two processes in a row, 1ringM and 2ring
    send the same message to the same process), NB 64 and DEPTH 0 at N = 15000 (the runs
    take longest there, and both effects are already measured at 5000 and 10000).
    """
    out = []
    for p, q in ((1, 2), (2, 1)):
        for nb in (64, 128, 256):
            for depth in (0, 1):
                for bcast in ((1, 2) if q > 1 else (1,)):
                    out.append(HplConfig(n=5000, nb=nb, p=p, q=q, bcast=bcast, depth=depth))
        for nb in (64, 128, 256):
            for depth in (0, 1):
                out.append(HplConfig(n=10000, nb=nb, p=p, q=q, bcast=1, depth=depth))
        for nb in (128, 256):
            out.append(HplConfig(n=15000, nb=nb, p=p, q=q, bcast=1, depth=1))
    return out


# ------------------------------------------------------------------ dgemm/dtrsm from HPL's shapes


def _local(n: int, nb: int, procs: int) -> int:
    """Rows (or columns) process 0 holds of an N-matrix, block-cyclic in NB: the most any
    process holds (HPL_numroc for process 0, source 0)."""
    blocks, extra = divmod(n, nb)
    rows = (blocks // procs) * nb
    if blocks % procs > 0:
        return rows + nb
    return rows + extra


def hpl_leading_dimension(n: int, nb: int, p: int, align: int) -> int:
    """The leading dimension HPL gives process 0's piece of A (HPL_pdtest): its rows
    rounded up to a multiple of ALIGN, and never a power of two. Not the rounded block
    count: at N = 5000, NB = 64, P = 2 that gives 2560 (20 kB columns, a multiple of 4 kB:
    set conflicts that made the same dgemm 5 % slower than HPL's 2504, E20)."""
    ld = ((max(1, _local(n, nb, p)) - 1) // align) * align
    while True:
        ld += align
        if ld & (ld - 1):  # not a power of two
            return ld


def hpl_blas_design(configs: Sequence[HplConfig], function: str, rows: int, seed: int):
    """A dgemm or dtrsm design covering the calls HPL makes for `configs`.

    dgemm, three families in equal shares: the trailing update (K = NB, M up to the
    local rows, N up to the local columns, with M·N uniform so the time axis is covered
    evenly); update chunks (K = NB, N = NB: what a process updates between two polls of
    a pending broadcast); the panel recursion (K = N = a recursion width NB/2^j, M up to
    the local rows). A, B and C have HPL's leading dimension (the local rows of the
    whole matrix: C and, at P = 1, B are blocks of the matrix, A a panel of it), so that
    strides, TLB and cache behave as in HPL: with compact operands the same calls ran
    ~3 % faster than inside HPL. dtrsm: the update's solve with L1 (order NB) on the
    left (P = 1) or on the right (P > 1) of NB columns or up to the local columns, and
    the panel's small solves on the right.
    """
    if not configs:
        raise HplsimError("no configuration to draw a design from")
    rng = np.random.default_rng([int(seed), 7])
    shapes = []
    for c in configs:
        widths = []
        w = c.nb
        while w >= max(c.nbmin, 1) and w >= 1:
            widths.append(w)
            if w < 2 * c.ndiv:
                break
            w //= c.ndiv
        shapes.append((_local(c.n, c.nb, c.p), _local(c.n, c.nb, c.q), c.nb, tuple(widths),
                       hpl_leading_dimension(c.n, c.nb, c.p, c.align), c.p))
    # every distinct shape in turn, in a seeded order, within each family: drawn at random,
    # 50 update points over 16 shapes left some (K = 64 at ld = 2560) without any, and
    # the fit extrapolated there by 5-7 % (lab notebook E20)
    distinct = sorted(set(shapes))
    orders = [[distinct[j] for j in rng.permutation(len(distinct))] for _ in range(3)]
    points: list[dict[str, Any]] = []
    families = 3
    for i in range(rows):
        family = i % families
        mp, nq, nb, widths, ld, p = orders[family][(i // families) % len(distinct)]
        if function == "dgemm":
            if family == 0:
                target = rng.uniform(0, 1) * mp * nq  # M·N uniform: the time axis covered evenly
                m = int(rng.integers(max(1, math.ceil(target / nq)), mp + 1))
                n = int(np.clip(round(target / m), 1, nq))
                points.append(dict(function="dgemm", m=m, n=n, k=nb, side="", lda=ld, ldb=ld, ldc=ld, anchor=False))
            elif family == 1:
                m = int(rng.integers(1, mp + 1))
                points.append(dict(function="dgemm", m=m, n=min(nb, nq), k=nb, side="", lda=ld, ldb=ld, ldc=ld,
                                   anchor=False))
            else:
                w = int(widths[rng.integers(len(widths))]) if len(widths) > 1 else nb
                m = int(rng.integers(1, mp + 1))
                points.append(dict(function="dgemm", m=m, n=w, k=w, side="", lda=ld, ldb=ld, ldc=ld, anchor=False))
        else:
            # the update solves with L1 (order NB): on the left at P = 1 (U in place), on the
            # right at P > 1 (U, transposed, in its own buffer); the panel's small solves
            # are on the right
            cols = int(rng.integers(1, nq + 1)) if family == 0 else min(nb, nq)
            if family < 2:
                if p == 1:
                    points.append(dict(function="dtrsm", m=nb, n=cols, side="L", lda=nb, ldb=ld, anchor=False))
                else:
                    points.append(dict(function="dtrsm", m=cols, n=nb, side="R", lda=nb, anchor=False))
            else:
                w = int(widths[rng.integers(len(widths))])
                m = int(rng.integers(1, max(w, 1) + 1))
                points.append(dict(function="dtrsm", m=m, n=w, side="R", anchor=False))
    frame = _blas_frame(points)
    params = {"function": function, "configurations": len(configs),
              "shapes": [dict(local_rows=s[0], local_columns=s[1], nb=s[2], widths=s[3], ld=s[4], p=s[5])
                         for s in shapes],
              "families": "update (K=NB), update chunks (N=K=NB), panel recursion (N=K=width)"
              if function == "dgemm" else "update (order NB: left at P=1, right at P>1), chunks (NB columns), "
                                          "panel (right, order = a recursion width)"}
    return Design("blas", "hpl-shapes", seed, params, frame)


# ------------------------------------------------------------------ the traced runs


def trace_size(configs: Sequence[HplConfig]) -> int:
    """Problem size of the traced run: as large as possible below the validated sizes,
    so that the kernels run in the regime of the validated runs. The row swaps and copies
    stream through the trailing matrix: their cost per element depends on whether it fits
    in the last-level cache (in a run at N = 1000 they were 3× cheaper than at 5000).
    Rule: the larger of half the smallest N and the N whose matrix is 4× the last-level
    cache, but at most 80 % of the smallest N (never a validated size)."""
    smallest = min(c.n for c in configs)
    big = math.ceil(math.sqrt(4 * last_level_cache_bytes() / 8))
    return max(1, min(max(smallest // 2, big), int(0.8 * smallest)))


def aliased_size(config: HplConfig, below: int, span_doubles: int) -> int | None:
    """The largest N <= `below` (and above half of it) at which process row 0's leading
    dimension is a multiple of `span_doubles`, or None.

    HPL's row swaps walk rows of A, one element per column, ld apart: at a multiple of the
    L1 data cache's set span every column of a block falls in the same set, and the same
    swaps take 1.6× as long (lab notebook E25). Whether a validated run meets that depends
    on its N, NB and P (N = 5000, NB = 128 or 256, P = 2: process 0 holds 2560 rows, 20 kB
    columns), so the traced runs that fit the swaps' models must hold such calls too."""
    for n in range(below, max(config.nb, below // 2), -1):
        if hpl_leading_dimension(n, config.nb, config.p, config.align) % span_doubles == 0:
            return n
    return None


def trace_configs(configs: Sequence[HplConfig], n: int | None = None,
                  span_doubles: int | None = None) -> list[HplConfig]:
    """The configurations of the traced run: each distinct (grid, NB, variant) of
    `configs`, at a problem size `n` (default: `trace_size`), so that the kernels are
    never calibrated on the runs they will predict; then each again at the size below it
    where process row 0's leading dimension is a multiple of the L1 set span
    (`aliased_size`; `span_doubles`: default from sysfs), for the row swaps' piece."""

    seen: dict[tuple, HplConfig] = {}
    for c in configs:
        key = (c.p, c.q, c.nb, c.pfact, c.rfact, c.nbmin, c.ndiv, c.swap, c.swap_threshold, c.l1_transposed,
               c.u_transposed, c.pmap, c.depth)
        seen.setdefault(key, c)
    size = n if n is not None else trace_size(configs)
    span = span_doubles if span_doubles is not None else max(1, l1_set_span_bytes() // 8)
    out = [replace(c, n=max(size, c.nb)) for c in seen.values()]
    for c in seen.values():
        aliased = aliased_size(c, max(size, c.nb), span)
        if aliased is not None and aliased != max(size, c.nb):
            out.append(replace(c, n=aliased))
    return out
