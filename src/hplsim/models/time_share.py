"""The time-share fit (`hplsim fit --method time-share`, and `hplsim validate`'s): one
mean law per kernel, pooled over the cores, no noise, fitted so that the sum of the
fitted durations follows HPL's time.

    model, summary = fit_kernel(calls, "dgemm", default_pieces("dgemm", span_doubles=512))
    fit_models(blas_archives, trace_archives, Path("model.yaml"))     # validate's data layout

- the law: a polynomial in the sizes (`mean`: M0, M1, M2 as in `hplsim fit`'s selection
  rule), every coefficient >= 0, least squares weighted by 1/duration, then one common
  factor that makes the fitted durations add up to the measured ones in a typical group of
  calls (`fit_time_share`, `_typical_factor`);
- pieces: the calls of a region of sizes get a law of their own (`fit_pieces`); by default
  dgemm's wide calls (`n > m`) and the row swaps whose leading dimension is a multiple of
  the L1 set span (`default_pieces`); a piece with too few calls or shapes stays in the
  kernel's own law.

The closed loop on this machine validated this fit (docs/validation-records.md R2, runs 17–19: median
|error| 1.6–2.5 %, max 4.0–6.3 %); docs/fit.md says when to use it.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from hplsim import __version__
from hplsim.errors import HplsimError
from hplsim.hpl.kernels import calibrated, traced
from hplsim.models.kernel_fit import design, mean_terms
from hplsim.models.linear import nnls
from hplsim.models.modelfile import (
    CONDITION_VARIABLES, KERNEL_VARIABLES, Condition, HostModel, KernelModel, ModelFile, Piece, Polynomial, save_model,
)
from hplsim.models.readers import read_measurements
from hplsim.sysinfo import l1_set_span_bytes

#: kernels fitted from the traced HPL runs in `fit_models` (every traced kernel but those the
#: calibration benchmark measures: dgemm/dtrsm), in the order the model file lists them
TRACED_KERNELS = tuple(k for k in traced() if k not in calibrated())


def _calls_from_trace(archives: Sequence[Path]) -> pd.DataFrame:
    calls = read_measurements(list(archives)).kernels
    return calls[calls["kernel"].isin(traced())]


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
    fitted total, each group weighted by its fitted total. When some groups are traced
    HPL runs (calls with a `run`), the median is over those only. Returns it and every
    group's ratio (the law's uncertainty takes their spread).

    Why a factor: the weighted fit leans towards the typical call, while interference (an
    interrupt, another process) only ever lengthens calls, and HPL's time is the sum of its
    calls, slow ones included. Σ measured / Σ fitted over all calls, the factor before, is
    the weighted *mean* of the same ratios, and one disturbed group rules it: in the
    thirteenth validate run one pass's dtrsm calls met a stall (three calls of 0.13–0.27 s,
    up to 61 times their law), its total 4.7 times its law's; the factor came out 1.34 and
    every dtrsm call 26–36 % too long in the five other passes and in HPL's own traced calls
    (lab notebook E23). The median keeps the weights and drops the disturbed minority.

    Why HPL's runs when there are any: the calibration times each call with the other cores
    running the same calls; inside HPL a call runs among the other ranks' polling, copies
    and swaps. On a 2-core AVX-512 VM HPL's own dgemm calls ran 4–15 % longer than the law
    fitted to the calibration passes run around them, in every pass, and the real runs
    sided with HPL's calls (the closed loop's mean error +16.0 % → +2.7 %, lab notebook
    E31). The calibration passes, each 30–100 times a traced run's fitted total, would
    otherwise rule the weighted median. Where HPL's calls run like the calibration's (the
    AMD VM of E20–E24: −1.5 %), the two medians agree."""
    keys = {"source": calls["source"].astype(str).to_numpy() if "source" in calls else np.zeros(len(y))}
    if "run" in calls:
        keys["run"] = calls["run"].fillna(-1).to_numpy()
    ratios, weights, traced = [], [], []
    for key, idx in pd.DataFrame(keys).groupby(list(keys), sort=True).indices.items():
        f = float(fitted[idx].sum())
        if f > 0:
            ratios.append(float(y[idx].sum()) / f)
            weights.append(f)
            traced.append(isinstance(key, tuple) and len(key) > 1 and key[1] >= 0)
    if not ratios:
        return 1.0, []
    chosen = [i for i, t in enumerate(traced) if t] or list(range(len(ratios)))
    r, w = np.asarray(ratios)[chosen], np.asarray(weights)[chosen]
    order = np.argsort(r)
    cum = np.cumsum(w[order])
    factor = float(r[order][np.searchsorted(cum, 0.5 * cum[-1])])
    return factor, ratios  # unrounded: law_rsd takes their spread, which can be a few 1e-3


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
    L1 set span get a law of their own (`calibrate.hpl_designs.aliased_size`; E25: 1.6–1.7×
    the time)."""
    return (f"ld % {span_doubles} == 0",)


def default_pieces(kernel: str, span_doubles: int) -> tuple[str, ...]:
    """The pieces the validated fit gives `kernel`: dgemm's wide calls; the row swaps' calls
    on a leading dimension that is a multiple of `span_doubles` (the L1 set span in doubles
    of the machine that was measured); none for the other kernels."""
    if kernel == "dgemm":
        return DGEMM_PIECES
    if "ld" in CONDITION_VARIABLES[kernel]:
        return row_swap_pieces(span_doubles)
    return ()


def min_piece_calls(kernel: str) -> int:
    """Fewest calls a piece of `kernel` needs to get a law of its own."""
    return MIN_SWAP_PIECE_CALLS if "ld" in CONDITION_VARIABLES[kernel] else MIN_PIECE_CALLS


def fit_pieces(calls: pd.DataFrame, kernel: str, pieces: Sequence[str], mean: str = "M2", source: str = "",
               min_calls: int = MIN_PIECE_CALLS):
    """`fit_time_share`, with a law of its own for the calls of each piece (conditions on
    the sizes joined by ``,``, all of which must hold, as in the model file: the first piece
    that holds claims a call); the calls no piece claims, and those of a piece with too few
    calls or shapes, make the base law."""
    variables = KERNEL_VARIABLES[kernel]
    if not pieces or any(v not in calls for v in variables):
        return fit_time_share(calls, kernel, mean, source)  # (which says which size is missing)
    cvars = CONDITION_VARIABLES[kernel]
    sizes = {v: calls[v].to_numpy(dtype=float) for v in cvars if v in calls}
    free = np.ones(len(calls), bool)
    fitted: list[tuple[Piece, KernelSummary]] = []
    for text in pieces:
        conds = tuple(Condition.parse(c, cvars) for c in text.split(","))
        if any(c and v not in sizes for cond in conds for c, v in zip(cond.coefs, cvars)):
            continue  # calls that do not carry what the piece looks at (a trace without ld)
        mine = free.copy()
        for cond in conds:
            mine &= cond.holds(sizes, cvars)
        sub = calls[mine]
        if len(sub) < min_calls or len(sub.groupby(list(variables)).size()) < MIN_PIECE_SHAPES:
            continue
        model, summ = fit_time_share(sub, kernel, mean, source)
        fitted.append((Piece(conds, model), summ))
        free &= ~mine
    base, summary = fit_time_share(calls[free], kernel, mean, source)
    if not fitted:
        return base, summary
    summary.pieces = [{"when": ", ".join(c.text for c in p.when), **ps.to_dict()} for p, ps in fitted]
    return replace(base, pieces=tuple(p for p, _ in fitted)), summary


def fit_kernel(calls: pd.DataFrame, kernel: str, pieces: Sequence[str], mean: str = "M2",
               source: str = "") -> tuple[KernelModel, KernelSummary]:
    """One kernel's law by the time-share fit: `fit_pieces` with `pieces` and the kernel's
    fewest calls per piece (`min_piece_calls`). What `hplsim fit --method time-share` and
    `fit_models` run for every kernel."""
    return fit_pieces(calls, kernel, pieces, mean, source, min_calls=min_piece_calls(kernel))


def fit_models(blas_archives: Sequence[Path], trace_archives: Sequence[Path] | Path | None, out: Path, mean: str = "M2",
               seed: int = 0, pool_traced_blas: bool = True, span_doubles: int | None = None) -> dict[str, Any]:
    """The model file `out`: dgemm/dtrsm from the calibration archives (and, with
    `pool_traced_blas`, the first traced archive's dgemm/dtrsm calls too), the other kernels
    from every traced archive (one per calibration pass in validate), each by `fit_kernel`
    with its `default_pieces` (`span_doubles`: the L1 set span in doubles, default this
    host's); pooled over cores (the `default` entry: one host here). Returns a summary per kernel (calls, terms, R², error of the total on the
    fitting calls, source).

    Why pool: the calibration covers the sizes of the validated runs (the traced run is
    smaller), but it times each call on its own; HPL's thousands of small panel calls run
    on a panel already in cache, 2–5× faster than the same calls started cold — the
    traced calls carry that."""
    span = span_doubles if span_doubles is not None else max(1, l1_set_span_bytes() // 8)
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
        models[kernel], s = fit_kernel(calls, kernel, default_pieces(kernel, span), mean, source)
        summary[kernel] = s.to_dict()
    if others is not None:
        for kernel in TRACED_KERNELS:
            calls = others[others["kernel"] == kernel]
            if calls.empty:
                continue  # HPL does not call it in these configurations (e.g. dlaswp01 at P = 1)
            models[kernel], s = fit_kernel(calls, kernel, default_pieces(kernel, span), mean, "traced HPL")
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


