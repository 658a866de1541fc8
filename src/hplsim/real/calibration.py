"""The calibrate → fit half of `hplsim validate`: measure this machine's kernels and MPI
on the cores HPL will use, and turn the measurements into a model file and a platform spec.

- dgemm and dtrsm: the calibration tool (`hplsim.calibrate.runner.calibrate_blas`), one
  pinned process per core, all cores at once, with a design drawn from the shapes HPL
  calls for the configurations at hand (`hpl_blas_design`), pooled with the dgemm/dtrsm
  calls of the traced run below; fitted M-2 (polynomial in the sizes, `fit_time_share`),
  which captures the cost of the short and thin calls (panel recursion, update chunks
  while a broadcast is pending) as well as the flop rate.
- the other kernels (idamax, dscal, dger, dgemv, dtrsv, daxpy, dswap, HPL's dlaswp*,
  dlacpy, dlatcpy): timed call by call inside a real HPL run (the traced binary,
  `hplsim.real.trace`) at a problem size below the validated ones (`trace_size`), and
  fitted per kernel. Those calls work on the panel and the rows HPL just touched: a
  standalone benchmark would have to recreate that cache state, the traced run has it.
- MPI between two local ranks: the calibration tool (`calibrate_mpi`), fitted into SMPI
  options (`hplsim.models.network`) relative to the loopback link of a one-node platform.
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig

#: reference link of the one-node platform: bw-factor and lat-factor are relative to it
LOOPBACK_BANDWIDTH = 10e9
LOOPBACK_LATENCY = 1e-6
#: kernels fitted from the traced HPL run (everything the emulation models but dgemm/dtrsm)
TRACED_KERNELS = ("dgemv", "dger", "dtrsv", "daxpy", "dscal", "dswap", "idamax", "HPL_dlacpy", "HPL_dlatcpy",
                  "HPL_dlaswp00N", "HPL_dlaswp10N", "HPL_dlaswp01N", "HPL_dlaswp01T", "HPL_dlaswp02N",
                  "HPL_dlaswp03N", "HPL_dlaswp03T", "HPL_dlaswp04N", "HPL_dlaswp04T", "HPL_dlaswp05N",
                  "HPL_dlaswp05T", "HPL_dlaswp06N", "HPL_dlaswp06T")


# ------------------------------------------------------------------ designs from HPL's shapes


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
    from hplsim.calibrate.designs import Design, _blas_frame

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


# ------------------------------------------------------------------ kernels


@dataclass
class CalibrationSettings:
    """How much to measure (the defaults of `hplsim validate`; `quick()` for tests)."""

    dgemm_rows: int = 150
    dtrsm_rows: int = 60
    blas_repetitions: int = 3
    mpi_rows: int = 64  # 8 per operation
    mpi_repetitions: int = 5
    mpi_max_size: int = 10**8
    warmup_seconds: float = 1.0
    trace_n: int | None = None  # default: from the configurations (below the smallest N)
    pad_bytes: int = 0  # the calibration tool's offset slack per operand (its minimum: 2 MB)

    @classmethod
    def quick(cls) -> "CalibrationSettings":
        return cls(dgemm_rows=30, dtrsm_rows=15, blas_repetitions=1, mpi_rows=32, mpi_repetitions=3,
                   mpi_max_size=10**7, warmup_seconds=0.2)


def calibrate_blas_for(configs: Sequence[HplConfig], outdir: Path, cores: list[int], seed: int,
                       settings: CalibrationSettings,
                       functions: Sequence[str] = ("dgemm", "dtrsm")) -> dict[str, Path]:
    """dgemm.zip and dtrsm.zip (or `functions`' only) in `outdir`, measured on `cores` at once."""
    from hplsim.calibrate.runner import BlasOptions, calibrate_blas

    # pad_bytes 0 (the tool's minimum slack, 2 MB): HPL's many small calls work on the panel
    # it just touched, in cache; calls that start cold would be several times slower
    opts = BlasOptions(warmup_seconds=settings.warmup_seconds, repetitions=settings.blas_repetitions,
                       monitor_interval=1.0, progress=False, pad_bytes=settings.pad_bytes)
    out = {}
    rows_of = {"dgemm": settings.dgemm_rows, "dtrsm": settings.dtrsm_rows}
    for function, rows in ((f, rows_of[f]) for f in functions):
        design = hpl_blas_design(configs, function, rows, seed)
        out[function] = calibrate_blas(design, outdir / f"{function}.zip", seed, opts, "local", None, cores).path
    return out


def calibration_drift(before: Path, after: Path, kernel: str = "dgemm") -> dict[str, Any]:
    """How the same calls' durations moved between two calibrations of one design (the
    machine's drift over a validation): per call shape, the median duration after over the
    median before; returned as the median and quartiles of that ratio − 1, in %."""
    from hplsim.models.readers import read_measurements

    def per_shape(path: Path) -> pd.Series:
        calls = read_measurements([path]).kernels
        return calls[calls["kernel"] == kernel].groupby(["m", "n", "k"])["duration"].median()

    both = per_shape(before).to_frame("before").join(per_shape(after).to_frame("after"), how="inner")
    if both.empty:
        raise HplsimError(f"{before} and {after} have no {kernel} call shape in common")
    pct = 100.0 * (both["after"] / both["before"] - 1.0)
    return {"kernel": kernel, "shapes": len(both), "median_pct": float(pct.median()),
            "q25_pct": float(pct.quantile(0.25)), "q75_pct": float(pct.quantile(0.75))}


def last_level_cache_bytes(default: int = 32 << 20) -> int:
    """Size of the largest CPU cache of this host (sysfs), `default` when not exposed."""
    best = 0
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = f.read_text().strip().upper()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            best = max(best, int(text.rstrip("KMG")) * mult)
        except (OSError, ValueError):
            continue
    return best or default


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


def l1_set_span_bytes(default: int = 4096) -> int:
    """Bytes after which an address falls in the same set of the first-level data cache
    again (its sets × its line size, sysfs); `default` when not exposed."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for d in sorted(base.glob("index*")):
        try:
            if (d / "level").read_text().strip() == "1" and (d / "type").read_text().strip() in ("Data", "Unified"):
                span = int((d / "number_of_sets").read_text()) * int((d / "coherency_line_size").read_text())
                if span > 0:
                    return span
        except (OSError, ValueError):
            continue
    return default


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


def trace_kernels(traced: Sequence[HplConfig], out: Path, launch,
                  progress: Callable[[str], None] | None = None) -> Path:
    """Run the traced HPL once on each of `traced` (`trace_configs`); the archive (kind hpl,
    with results/kernels.csv) is `out`."""
    from hplsim.real.run import run_real

    done = run_real(traced, launch, repeat=1, out=out, trace=True, progress=progress, keep_outputs=True)
    assert done.archive is not None
    return done.archive


def _calls_from_trace(archives: Sequence[Path]) -> pd.DataFrame:
    from hplsim.models.readers import read_measurements

    calls = read_measurements(list(archives)).kernels
    return calls[calls["kernel"].isin(TRACED_KERNELS + ("dgemm", "dtrsm"))]


@dataclass
class KernelSummary:
    kernel: str
    calls: int
    terms: dict[str, float]
    r2: float
    total_error_pct: float  # Σ fitted / Σ measured − 1 on the fitting calls, before the factor
    source: str
    pieces: list[dict[str, Any]] = field(default_factory=list)  # {when, calls, mean, ...} per piece
    factor: float = 1.0  # the common factor applied after the weighted fit (_typical_factor)
    group_factors: list[float] = field(default_factory=list)  # each pass's or run's measured / fitted total

    def to_dict(self) -> dict[str, Any]:
        out = {"calls": self.calls, "mean": self.terms, "r2": self.r2, "total_error_pct": self.total_error_pct,
               "factor": self.factor, "group_factors": self.group_factors, "source": self.source}
        if self.pieces:
            out["pieces"] = self.pieces
        return out


def fit_time_share(calls: pd.DataFrame, kernel: str, mean: str = "M2", source: str = ""):
    """One kernel's mean duration (no noise), a polynomial in its sizes (`mean`: M0, M1,
    M2 as in `hplsim fit`), every coefficient >= 0 (each term is a cost: flops, packing,
    loops, call overhead), by least squares weighted by 1/duration.

    The weights sit between ordinary least squares (ruled by the longest calls: the many
    short calls of the panel factorization come out tens of % off) and relative errors
    (every call alike: the longest calls, most of HPL's time, give way to the shortest):
    each call counts in proportion to its duration's square root. A final common factor
    makes the fitted durations add up to the measured ones in a typical group of calls
    (`_typical_factor`: a calibration pass, a traced run). Returns (model, summary); the
    summary's `total_error_pct` is before that factor."""
    from hplsim.models.kernel_fit import design, mean_terms
    from hplsim.models.linear import nnls
    from hplsim.models.modelfile import KERNEL_VARIABLES, KernelModel, Polynomial

    variables = KERNEL_VARIABLES[kernel]
    missing = [v for v in variables if v not in calls or calls[v].isna().any()]
    if missing:
        raise HplsimError(f"{kernel} calls lack the size(s) {', '.join(missing)}")
    sizes = {v: calls[v].to_numpy(dtype=float) for v in variables}
    y = calls["duration"].to_numpy(dtype=float)
    if len(y) == 0 or not np.isfinite(y).all() or (y < 0).any():
        raise HplsimError(f"{kernel}: no valid durations to fit")
    terms = mean_terms(kernel, mean)
    X = design(sizes, kernel, terms)
    floor = max(float(np.median(y)) * 1e-3, 1e-9)
    coef = nnls(X, y, 1.0 / np.maximum(y, floor))
    # then one factor on every coefficient (`_typical_factor`)
    fitted0 = X @ coef
    total = float(fitted0.sum())
    factor, group_factors = _typical_factor(calls, y, fitted0)
    coef = coef * factor
    poly = Polynomial(variables, tuple((e, float(c)) for e, c in zip(terms, coef) if c > 0))
    if not poly.terms:
        poly = Polynomial(variables, (((0,) * len(variables), float(np.mean(y))),))
    model = KernelModel(kernel, poly)
    fitted = model.predict(sizes)
    ss = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum((y - fitted) ** 2)) / ss if ss > 0 else float("nan")
    summary = KernelSummary(kernel, len(y), poly.to_mapping(), r2,
                            100.0 * (total / float(y.sum()) - 1.0) if y.sum() > 0 and total > 0 else 0.0, source,
                            factor=factor, group_factors=group_factors)
    return model, summary


def _typical_factor(calls: pd.DataFrame, y: np.ndarray, fitted: np.ndarray) -> tuple[float, list[float]]:
    """The factor on the fitted durations: the weighted median, over groups of calls (each
    calibration archive, i.e. a pass, and each traced run), of the group's measured /
    fitted total, each group weighted by its fitted total. Returns it and the groups'
    ratios.

    Why a factor: the weighted fit leans towards the typical call, while interference (an
    interrupt, another process) only ever lengthens calls, and HPL's time is the sum of its
    calls, slow ones included. Σ measured / Σ fitted over all calls, the factor before, is
    the weighted *mean* of the same ratios, and one disturbed group rules it: in the
    thirteenth validate run one pass's dtrsm calls met a stall (three calls of 0.13–0.27 s,
    up to 61 times their law), its total 4.7 times its law's; the factor came out 1.34 and
    every dtrsm call 26–36 % too long in the five other passes and in HPL's own traced calls
    (lab notebook E23). The median keeps the weights and drops the disturbed minority."""
    keys = {"source": calls["source"].astype(str).to_numpy() if "source" in calls else np.zeros(len(y))}
    if "run" in calls:
        keys["run"] = calls["run"].fillna(-1).to_numpy()
    ratios, weights = [], []
    for idx in pd.DataFrame(keys).groupby(list(keys), sort=True).indices.values():
        f = float(fitted[idx].sum())
        if f > 0:
            ratios.append(float(y[idx].sum()) / f)
            weights.append(f)
    if not ratios:
        return 1.0, []
    order = np.argsort(ratios)
    cum = np.cumsum(np.asarray(weights)[order])
    factor = float(np.asarray(ratios)[order][np.searchsorted(cum, 0.5 * cum[-1])])
    return factor, [round(r, 4) for r in ratios]


#: dgemm's wide calls (more columns than rows: 2×1's trailing updates, n ≈ 2m) get a law of
#: their own. OpenBLAS runs them several % slower per flop than tall ones of the same
#: m·n·k (42.7 against 47.8 Gflops at 1800×3600×64 and 3600×1800×64), a difference that one
#: polynomial in 1, MNK, MN, MK, NK cannot follow (lab notebook E20, E21).
DGEMM_PIECES = ("n > m",)
#: fewest calls, and distinct shapes, a piece needs to get a law of its own
MIN_PIECE_CALLS, MIN_PIECE_SHAPES = 20, 5
#: fewer for the row swaps' aliased piece: a traced run makes one swap per panel and rank
MIN_SWAP_PIECE_CALLS = 8


def row_swap_pieces(span_doubles: int) -> tuple[str, ...]:
    """The row swaps (HPL's dlaswp kernels) whose leading dimension is a multiple of the
    L1 set span get a law of their own (`aliased_size`; E25: 1.6–1.7× the time)."""
    return (f"ld % {span_doubles} == 0",)


def fit_pieces(calls: pd.DataFrame, kernel: str, pieces: Sequence[str], mean: str = "M2", source: str = "",
               min_calls: int = MIN_PIECE_CALLS):
    """`fit_time_share`, with a law of its own for the calls of each piece (conditions on
    the sizes, as in the model file: the first that holds claims a call); the calls no
    piece claims, and those of a piece with too few calls or shapes, make the base law."""
    from hplsim.models.modelfile import CONDITION_VARIABLES, KERNEL_VARIABLES, Condition, Piece

    variables = KERNEL_VARIABLES[kernel]
    if not pieces or any(v not in calls for v in variables):
        return fit_time_share(calls, kernel, mean, source)  # (which says which size is missing)
    cvars = CONDITION_VARIABLES[kernel]
    sizes = {v: calls[v].to_numpy(dtype=float) for v in cvars if v in calls}
    free = np.ones(len(calls), bool)
    fitted: list[tuple[Piece, KernelSummary]] = []
    for text in pieces:
        cond = Condition.parse(text, cvars)
        if any(c and v not in sizes for c, v in zip(cond.coefs, cvars)):
            continue  # calls that do not carry what the piece looks at (a trace without ld)
        mine = free & cond.holds(sizes, cvars)
        sub = calls[mine]
        if len(sub) < min_calls or len(sub.groupby(list(variables)).size()) < MIN_PIECE_SHAPES:
            continue
        model, summ = fit_time_share(sub, kernel, mean, source)
        fitted.append((Piece((cond,), model), summ))
        free &= ~mine
    base, summary = fit_time_share(calls[free], kernel, mean, source)
    if not fitted:
        return base, summary
    summary.pieces = [{"when": p.when[0].text, **ps.to_dict()} for p, ps in fitted]
    return replace(base, pieces=tuple(p for p, _ in fitted)), summary


def fit_models(blas_archives: Sequence[Path], trace_archives: Sequence[Path] | Path | None, out: Path, mean: str = "M2",
               seed: int = 0, pool_traced_blas: bool = True) -> dict[str, Any]:
    """The model file `out`: dgemm/dtrsm from the calibration archives (and, with
    `pool_traced_blas`, the first traced archive's dgemm/dtrsm calls too), the other kernels
    from every traced archive (one per calibration pass in validate), each by
    `fit_time_share`; pooled over cores (the `default` entry: one
    host here). Returns a summary per kernel (calls, terms, R², error of the total on the
    fitting calls, source).

    Why pool: the calibration covers the sizes of the validated runs (the traced run is
    smaller), but it times each call on its own; HPL's thousands of small panel calls run
    on a panel already in cache, 2–5× faster than the same calls started cold — the
    traced calls carry that."""
    from hplsim import __version__
    from hplsim.models.modelfile import CONDITION_VARIABLES, HostModel, ModelFile, save_model
    from hplsim.models.readers import read_measurements

    span = max(1, l1_set_span_bytes() // 8)
    models = {}
    summary: dict[str, Any] = {}
    blas = read_measurements(list(blas_archives)).kernels
    traces = [Path(trace_archives)] if isinstance(trace_archives, (str, Path)) else list(trace_archives or [])
    others = _calls_from_trace(traces) if traces else None
    # dgemm/dtrsm pool the first trace's calls only: the balance between the calibration's
    # calls and HPL's that E20–E24 measured; the other kernels take every trace (E25)
    traced = others[others["source"].str.startswith(f"{traces[0]}:")] if others is not None else None
    for kernel in ("dgemm", "dtrsm"):
        calls = blas[blas["kernel"] == kernel]
        if calls.empty:
            raise HplsimError(f"no {kernel} calls in the calibration archives")
        source = "calibration"
        if pool_traced_blas and traced is not None and (traced["kernel"] == kernel).any():
            calls = pd.concat([calls, traced[traced["kernel"] == kernel]], ignore_index=True)
            source = "calibration + traced HPL"
        models[kernel], s = fit_pieces(calls, kernel, DGEMM_PIECES if kernel == "dgemm" else (), mean, source)
        summary[kernel] = s.to_dict()
    if others is not None:
        for kernel in TRACED_KERNELS:
            calls = others[others["kernel"] == kernel]
            if calls.empty:
                continue  # HPL does not call it in these configurations (e.g. dlaswp01 at P = 1)
            if "ld" in CONDITION_VARIABLES[kernel]:
                models[kernel], s = fit_pieces(calls, kernel, row_swap_pieces(span), mean, "traced HPL",
                                               min_calls=MIN_SWAP_PIECE_CALLS)
            else:
                models[kernel], s = fit_time_share(calls, kernel, mean, "traced HPL")
            summary[kernel] = s.to_dict()
    provenance = {
        "tool": f"hplsim {__version__} validate",
        "dgemm_dtrsm": [str(p) for p in blas_archives],
        "other_kernels": [str(t) for t in traces] or None,
        "fit": f"{mean}, every coefficient >= 0, least squares weighted by 1/duration, no noise; dgemm's calls "
               f"where {' / '.join(DGEMM_PIECES)} in a piece of their own; the row swaps' where "
               f"{' / '.join(row_swap_pieces(span))} (the L1 set span) in one of theirs",
        "note": "dgemm/dtrsm: calibration tool on the cores HPL uses, design from HPL's call shapes; other "
                "kernels: calls timed inside a traced real HPL run at a smaller N (docs/validate.md)",
    }
    model = ModelFile(default=HostModel(models), description=f"kernel models of {socket.gethostname()} "
                      "for hplsim validate", provenance=provenance)
    save_model(model, out)
    return summary


# ------------------------------------------------------------------ network


def calibrate_network(out: Path, cores: list[int], seed: int, settings: CalibrationSettings) -> Path:
    from hplsim.calibrate.designs import mpi_design
    from hplsim.calibrate.runner import MpiOptions, calibrate_mpi

    if len(cores) < 2:
        raise HplsimError("an MPI calibration between two local ranks needs two cores")
    design = mpi_design(settings.mpi_rows, seed, max_size=settings.mpi_max_size)
    opts = MpiOptions(repetitions=settings.mpi_repetitions, progress=False)
    return calibrate_mpi(design, out, seed, opts, "local", None, cores[:2]).path


def fit_network_options(mpi_archive: Path, seed: int = 0) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """SMPI options for messages between two ranks of this host, relative to the loopback
    link of `local_platform_spec`, and the spec's `mpi` block (what MPI_Iprobe reports,
    when the calibration measured it)."""
    from hplsim.models.network import fit_network, smpi_options
    from hplsim.models.readers import read_measurements

    meas = read_measurements([mpi_archive])
    fit = fit_network(meas.network, seed=seed)
    options, notes = smpi_options(fit, LOOPBACK_BANDWIDTH, LOOPBACK_LATENCY)
    mpi = {"iprobe_reports": fit.iprobe_reports} if fit.iprobe_reports else {}
    return options, mpi, [*fit.threshold_reasons, *notes]


def local_platform_spec(cores: int, smpi: dict[str, str] | None = None, name: str | None = None,
                        mpi: dict[str, str] | None = None) -> dict[str, Any]:
    """This machine as a platform spec: one node with `cores` rank slots; ranks talk through
    the node's loopback link, whose factors and overheads come from the MPI calibration."""
    return {
        "format": "hplsim-platform",
        "name": name or f"{socket.gethostname()}-local",
        "nodes": 1,
        "cores_per_node": cores,
        "host_prefix": "local-",
        "network": {
            "topology": "star",
            "bandwidth": f"{LOOPBACK_BANDWIDTH:g}Bps",
            "latency": f"{LOOPBACK_LATENCY * 1e6:g}us",
            "loopback_bandwidth": f"{LOOPBACK_BANDWIDTH:g}Bps",
            "loopback_latency": f"{LOOPBACK_LATENCY * 1e6:g}us",
        },
        "smpi": dict(smpi or {}),
        **({"mpi": dict(mpi)} if mpi else {}),
    }
