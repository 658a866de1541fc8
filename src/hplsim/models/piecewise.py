"""Piecewise-linear regression in one size variable with breakpoints found from the data
(the M' model: MPI protocol switches such as eager / rendez-vous).

Algorithm (docs/fit.md, "Breakpoints"):

1. Model tree: start from one segment; repeatedly split the segment whose best split
   lowers the BIC the most; stop when no split lowers it.
2. Refine: move each breakpoint to its best position between its neighbours (the tree
   placed early splits while later regimes were still mixed in).
3. Greedy merge: merge the adjacent pair whose merge lowers the BIC the most, until none
   does; refine again.

Errors are relative: each point is weighted by 1/duration², since durations span many
decades and their spread grows with them. Segments are fitted independently, so the
model may jump at a breakpoint (protocol switches do). A breakpoint lies between the
last size of one segment and the first of the next; we report their geometric mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from hplsim.errors import HplsimError

#: fewest points and distinct sizes a segment may hold (two coefficients need some slack)
MIN_POINTS = 5
MIN_SIZES = 3
MAX_SEGMENTS = 16


@dataclass(frozen=True)
class MixtureNoise:
    """Relative noise of a segment: duration = mean · (1 + e), e ~ Σ weight·N(shift, sd²)."""

    weights: tuple[float, ...]
    shifts: tuple[float, ...]
    sds: tuple[float, ...]

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        w = np.asarray(self.weights)
        pick = rng.choice(len(w), size=shape, p=w / w.sum())
        return np.asarray(self.shifts)[pick] + np.asarray(self.sds)[pick] * rng.standard_normal(shape)


@dataclass(frozen=True)
class Segment:
    """duration = intercept + slope · size, for lower <= size < upper."""

    lower: float
    upper: float
    intercept: float
    slope: float
    n: int
    rel_sd: float  # standard deviation of duration/mean - 1 in the segment
    noise: MixtureNoise | None = None

    def predict(self, size: np.ndarray) -> np.ndarray:
        return self.intercept + self.slope * np.asarray(size, dtype=float)


@dataclass
class PiecewiseLinear:
    segments: list[Segment]
    bic: float
    n: int
    history: list[str] = field(default_factory=list)  # what the search did, for the report

    @property
    def breakpoints(self) -> list[float]:
        return [s.lower for s in self.segments[1:]]

    def segment_index(self, size: np.ndarray) -> np.ndarray:
        return np.searchsorted(np.asarray(self.breakpoints), np.asarray(size, dtype=float), side="right")

    def predict(self, size: np.ndarray) -> np.ndarray:
        size = np.asarray(size, dtype=float)
        idx = self.segment_index(size)
        a = np.array([s.intercept for s in self.segments])[idx]
        b = np.array([s.slope for s in self.segments])[idx]
        return a + b * size

    def sample(self, size: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Random durations: the segment's mean times (1 + its relative noise), at least 0."""
        size = np.asarray(size, dtype=float)
        mean = self.predict(size)
        idx = self.segment_index(size)
        rel = np.zeros(size.shape)
        for i, seg in enumerate(self.segments):
            sel = idx == i
            if not sel.any():
                continue
            if seg.noise is not None:
                rel[sel] = seg.noise.sample((int(sel.sum()),), rng)
            else:
                rel[sel] = seg.rel_sd * rng.standard_normal(int(sel.sum()))
        return np.maximum(mean * (1.0 + rel), 0.0)


# ------------------------------------------------------------------------ the search


class _Series:
    """One operation's sizes and durations, sorted by size.

    The RSS of a line over a range of points comes from its weighted moments. They are
    accumulated from the ends of the range being split, never as differences of sums over
    the whole series: with weights 1/duration², the few smallest durations would dominate
    such sums and swamp the large-size ranges' contributions in rounding."""

    def __init__(self, x: np.ndarray, y: np.ndarray):
        order = np.argsort(x, kind="stable")
        self.x = x[order]
        self.y = y[order]
        self.n = len(x)
        self.w = 1.0 / self.y**2
        flags = np.concatenate([[1.0], (np.diff(self.x) > 0).astype(float)])
        self.ndistinct = np.concatenate([[0.0], np.cumsum(flags)])

    def index(self, size: np.ndarray) -> np.ndarray:
        """Row index of the first point with x >= size."""
        return np.searchsorted(self.x, size, side="left")

    def _moments(self, i: int, j: int) -> np.ndarray:
        """Per point of [i, j): w, wx, wy, wx², wxy, wy², x centred and scaled on the range."""
        x, y, w = self.x[i:j], self.y[i:j], self.w[i:j]
        xs = (x - x[len(x) // 2]) / (float(x[-1] - x[0]) or 1.0)
        return np.stack([w, w * xs, w * y, w * xs * xs, w * xs * y, w * y * y])

    def rss(self, i: int, j: int) -> float:
        """Weighted RSS of the best line through points [i, j) (0 for fewer than 3)."""
        if j - i < 3:
            return 0.0
        return float(_rss(self._moments(i, j).sum(axis=1)))

    def split_rss(self, i: int, j: int, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """RSS of [i, k) and of [k, j) for every split row k in `ks` (i < k < j)."""
        mom = self._moments(i, j)
        left = np.cumsum(mom, axis=1)  # left[:, t] = sums over [i, i + t]
        right = np.cumsum(mom[:, ::-1], axis=1)[:, ::-1]  # right[:, t] = sums over [i + t, j)
        t = np.asarray(ks) - i
        lo = np.where(t >= 3, _rss(left[:, t - 1]), 0.0)
        hi = np.where(j - np.asarray(ks) >= 3, _rss(right[:, t]), 0.0)
        return lo, hi

    def sizes_between(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Distinct sizes among points [i, j)."""
        i, j = np.asarray(i), np.asarray(j)
        return np.where(j > i, 1 + self.ndistinct[j] - self.ndistinct[np.minimum(i + 1, j)], 0)


def _rss(sums: np.ndarray) -> np.ndarray:
    """RSS of the weighted line fit from the moment sums (W, X, Y, XX, XY, YY) along axis 0."""
    W, X, Y, XX, XY, YY = sums
    with np.errstate(divide="ignore", invalid="ignore"):
        sxx = XX - X * X / W
        sxy = XY - X * Y / W
        syy = YY - Y * Y / W
        out = syy - np.where(sxx > 0, sxy * sxy / sxx, 0.0)
    return np.maximum(np.nan_to_num(out), 0.0)


class _Joint:
    """Several operations segmented at the same sizes (a protocol switch is a property of
    the MPI library, shared by all operations); each keeps its own lines and noise."""

    def __init__(self, series: list[_Series], min_points: int):
        self.series = series
        self.min_points = min_points
        # candidate boundaries: every distinct size (a boundary sits just below it)
        self.grid = np.unique(np.concatenate([s.x for s in series]))
        self.m = len(self.grid)
        self.N = sum(s.n for s in series)
        # row index of each grid position in each series, with m -> n
        self.pos = [np.concatenate([s.index(self.grid), [s.n]]) for s in series]

    def rss(self, s: int, a: int, b: int) -> float:
        return self.series[s].rss(int(self.pos[s][a]), int(self.pos[s][b]))

    def valid(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ok = np.ones(np.broadcast(np.asarray(a), np.asarray(b)).shape, dtype=bool)
        for s, ser in enumerate(self.series):
            i, j = self.pos[s][a], self.pos[s][b]
            ok &= (j - i >= self.min_points) & (ser.sizes_between(i, j) >= MIN_SIZES)
        return ok

    def totals(self, bounds: list[int]) -> np.ndarray:
        return np.array([sum(self.rss(s, a, b) for a, b in zip(bounds[:-1], bounds[1:]))
                         for s in range(len(self.series))])

    def bic(self, bounds: list[int]) -> float:
        return self._bic(self.totals(bounds)[:, None], len(bounds) - 1)[0]

    def _bic(self, totals: np.ndarray, segments: int) -> np.ndarray:
        """Gaussian relative errors, one σ per operation; per operation 2 coefficients a
        segment, plus the S-1 shared breakpoints. totals: (operations, candidates)."""
        k = len(self.series) * (2 * segments + 1) + (segments - 1)
        ns = np.array([s.n for s in self.series], dtype=float)[:, None]
        ll = (ns * np.log(np.maximum(totals / ns, 1e-300))).sum(axis=0)
        return ll + k * math.log(self.N)

    def best_split(self, bounds: list[int], seg: int) -> tuple[int, float] | None:
        """Best boundary inside segment `seg` and the BIC with it."""
        a, b = bounds[seg], bounds[seg + 1]
        ks = np.arange(a + 1, b)
        ks = ks[self.valid(a, ks) & self.valid(ks, b)]
        if len(ks) == 0:
            return None
        base = self.totals(bounds)
        rows = []
        for s, ser in enumerate(self.series):
            i, j = int(self.pos[s][a]), int(self.pos[s][b])
            lo, hi = ser.split_rss(i, j, self.pos[s][ks])
            rows.append(base[s] - self.rss(s, a, b) + lo + hi)
        new = np.stack(rows)
        values = self._bic(new, len(bounds))
        best = int(np.argmin(values))
        return int(ks[best]), float(values[best])

    def breakpoint(self, k: int) -> float:
        """Boundary k sits between grid sizes k-1 and k: their geometric mean."""
        return math.sqrt(self.grid[k - 1] * self.grid[k])


def _search(j: _Joint, max_segments: int, history: list[str]) -> list[int]:
    """Boundaries [0, b1, ..., m] of the segments (indexes into the grid of sizes)."""
    bounds = [0, j.m]
    # 1. model tree with a BIC stopping rule
    while len(bounds) - 1 < max_segments:
        current = j.bic(bounds)
        best: tuple[float, int] | None = None
        for seg in range(len(bounds) - 1):
            split = j.best_split(bounds, seg)
            if split is not None and (best is None or split[1] < best[0]):
                best = (split[1], split[0])
        if best is None or best[0] >= current:
            break
        bounds = sorted(bounds + [best[1]])
        history.append(f"split at {j.breakpoint(best[1]):.6g} (BIC {current:.1f} -> {best[0]:.1f})")
    bounds = _refine(j, bounds)

    # 2. greedy merge of adjacent segments while the BIC drops
    while len(bounds) > 2:
        current = j.bic(bounds)
        value, i = min((j.bic(bounds[:i] + bounds[i + 1:]), i) for i in range(1, len(bounds) - 1))
        if value >= current:
            break
        history.append(f"merge at {j.breakpoint(bounds[i]):.6g} (BIC {current:.1f} -> {value:.1f})")
        bounds = _refine(j, bounds[:i] + bounds[i + 1:])
    return bounds


def _refine(j: _Joint, bounds: list[int]) -> list[int]:
    """Coordinate descent: each breakpoint to its best place between its neighbours."""
    bounds = list(bounds)
    for _ in range(20):
        moved = False
        for i in range(1, len(bounds) - 1):
            without = bounds[:i] + bounds[i + 1:]
            split = j.best_split(without, i - 1)
            if split is not None and split[0] != bounds[i] and split[1] < j.bic(bounds) - 1e-9:
                bounds[i] = split[0]
                moved = True
        if not moved:
            break
    return bounds


# ----------------------------------------------------------------------- segment fits


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Relative-error line with a non-negative intercept and slope (durations and their
    growth with size cannot be negative; a negative coefficient would make SimGrid skip
    or invert a delay)."""
    w = 1.0 / y
    scale = float(x.max()) or 1.0
    A = np.column_stack([w, w * x / scale])
    t = np.ones_like(y)
    coef, *_ = np.linalg.lstsq(A, t, rcond=None)
    if coef[0] < 0 or coef[1] < 0:
        candidates = []
        for col in (0, 1):
            c = np.zeros(2)
            num, den = float(A[:, col] @ t), float(A[:, col] @ A[:, col])
            c[col] = max(num / den, 0.0) if den > 0 else 0.0
            candidates.append((float(np.sum((t - A @ c) ** 2)), c))
        coef = min(candidates, key=lambda rc: rc[0])[1]
    return float(coef[0]), float(coef[1] / scale)


def _mixture(rel: np.ndarray, max_components: int, seed: int) -> MixtureNoise | None:
    from hplsim.models.noise import fit_mixture_1d

    if len(rel) < 10:
        return None
    weights, means, sds = fit_mixture_1d(rel, max_components, seed)
    return MixtureNoise(tuple(weights), tuple(means), tuple(sds))


def _check(x: np.ndarray, y: np.ndarray, what: str) -> None:
    if len(x) == 0:
        raise HplsimError(f"{what}: no measurements")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise HplsimError(f"{what}: sizes and durations must be finite numbers")
    if (x <= 0).any() or (y <= 0).any():
        raise HplsimError(f"{what}: sizes and durations must be positive (relative errors need durations > 0)")
    if len(np.unique(x)) < 2:
        raise HplsimError(f"{what}: all measurements have the same size {x[0]:g}: a fit in size needs at least two")


def fit_piecewise_joint(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    min_points: int = MIN_POINTS,
    max_segments: int = MAX_SEGMENTS,
    noise: str = "normal",
    max_components: int = 3,
    seed: int = 0,
) -> dict[str, PiecewiseLinear]:
    """Fit M' to several operations with breakpoints shared by all of them (chosen by the
    BIC of all operations together); each operation gets its own lines and noise.

    series: name -> (sizes, durations). noise: ``normal`` (relative σ per segment) or
    ``mixture`` (Gaussian mixture of the relative residuals per segment, components by BIC).
    """
    if noise not in ("normal", "mixture"):
        raise ValueError(f"unknown noise {noise!r}")
    if not series:
        raise HplsimError("no measurements")
    data = {}
    for name, (x, y) in series.items():
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        _check(x, y, name)
        data[name] = _Series(x, y)
    joint = _Joint(list(data.values()), max(min_points, 3))
    history: list[str] = []
    bounds = _search(joint, max(max_segments, 1), history)
    cuts = [joint.breakpoint(k) for k in bounds[1:-1]]
    edges = [0.0, *cuts, math.inf]
    out = {}
    for s, (name, ser) in enumerate(data.items()):
        segments = []
        rows = joint.pos[s][np.asarray(bounds)]
        for i, (a, b) in enumerate(zip(rows[:-1], rows[1:])):
            xs, ys = ser.x[a:b], ser.y[a:b]
            intercept, slope = _line(xs, ys)
            rel = ys / np.maximum(intercept + slope * xs, 1e-300) - 1.0
            mix = _mixture(rel, max_components, seed) if noise == "mixture" else None
            segments.append(Segment(edges[i], edges[i + 1], intercept, slope, int(b - a),
                                    float(np.sqrt(np.mean(rel**2))), mix))
        out[name] = PiecewiseLinear(segments, joint.bic(bounds), ser.n, history)
    return out


def fit_piecewise(
    size: np.ndarray,
    duration: np.ndarray,
    *,
    min_points: int = MIN_POINTS,
    max_segments: int = MAX_SEGMENTS,
    noise: str = "normal",
    max_components: int = 3,
    seed: int = 0,
    what: str = "data",
) -> PiecewiseLinear:
    """Fit M': a piecewise-linear duration(size) with breakpoints chosen by BIC."""
    return fit_piecewise_joint({what: (size, duration)}, min_points=min_points, max_segments=max_segments,
                               noise=noise, max_components=max_components, seed=seed)[what]
