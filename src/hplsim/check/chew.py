"""Chew's (1966) prediction region for the mean of new observations.

Reference x_1..x_n in R^p (mean x̄, unbiased covariance S), r new observations with mean
m. Under "same distribution",

    t = n·r·(n−p) / ((n+r)(n−1)p) · (m−x̄)ᵀ S⁻¹ (m−x̄)  ~  F(p, n−p),

and an alarm is raised when t ≥ F⁻¹(γ; p, n−p). With p = 1 this is the band
x̄ ± s·sqrt(F⁻¹(γ; 1, n−1)·(n+r)/(n·r)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hplsim.quantiles import f_ppf, f_sf

# A metric whose spread is below this fraction of its magnitude is constant to rounding.
_CONSTANT = 1e-12
# Beyond this condition number of the correlation matrix, S⁻¹ is noise: metrics are
# (numerically) linear combinations of each other.
_SINGULAR = 1e12


class DegenerateReference(ValueError):
    """The reference cannot support the test (too few points, constant metric, ...)."""


@dataclass(frozen=True)
class ChewResult:
    statistic: float
    threshold: float
    alarm: bool
    n: int
    r: int
    p: int
    deviation: tuple[float, ...]  # m − x̄, per metric
    scale: tuple[float, ...]  # reference standard deviation, per metric

    @property
    def p_value(self) -> float:
        return f_sf(self.statistic, self.p, self.n - self.p)


def minimum_reference(p: int) -> int:
    """Reference points needed before a verdict is given: max(10, p + 2)."""
    return max(10, p + 2)


@lru_cache(maxsize=4096)
def threshold(gamma: float, p: int, dfd: int) -> float:
    """F⁻¹(γ; p, dfd), cached: a history replay asks for the same few quantiles thousands of times."""
    return f_ppf(gamma, p, dfd)


def _check(n: int, p: int, r: int, gamma: float) -> None:
    if not 0 < gamma < 1:
        raise ValueError(f"confidence must be in (0, 1), got {gamma}")
    if n <= p or n < 2:
        raise DegenerateReference(f"{n} reference point(s) for {p} metric(s) (need more than {max(p, 1)})")
    if r < 1:
        raise DegenerateReference("no new observation")


def chew_test(reference: np.ndarray, new: np.ndarray, gamma: float) -> ChewResult:
    """Test the mean of `new` (r × p, or one point of p values) against `reference` (n × p).

    An alarm says that the new mean lies outside what the reference predicts for r new
    points at confidence `gamma`.

    >>> import numpy as np
    >>> reference = np.random.default_rng(1).normal(25.0, 0.5, size=30)  # e.g. Gflops of 30 runs
    >>> chew_test(reference, [25.1, 24.8, 25.3], gamma=0.99).alarm
    False
    >>> result = chew_test(reference, [23.0, 23.2, 22.9], gamma=0.99)
    >>> result.alarm, result.statistic > result.threshold
    (True, True)
    """
    ref = np.asarray(reference, dtype=float)
    if ref.ndim == 1:
        ref = ref[:, None]
    obs = np.asarray(new, dtype=float)
    if obs.ndim == 1:
        obs = obs[:, None] if ref.shape[1] == 1 else obs[None, :]
    n, p = ref.shape
    r = obs.shape[0]
    if obs.shape[1] != p:
        raise ValueError(f"new observations have {obs.shape[1]} metrics, the reference {p}")
    _check(n, p, r, gamma)
    if not (np.isfinite(ref).all() and np.isfinite(obs).all()):
        raise DegenerateReference("missing (NaN) or infinite values")
    mean = ref.mean(axis=0)
    cov = np.atleast_2d(np.cov(ref, rowvar=False, ddof=1))
    scale = np.sqrt(np.diag(cov))
    if np.any(scale <= _CONSTANT * np.maximum(np.abs(mean), 1e-300)):
        raise DegenerateReference("a metric is constant over the reference (singular covariance)")
    # Solve on the correlation scale: metrics differ by many orders of magnitude
    # (an intercept of 1e-6 s next to Gflops of 25).
    corr = cov / np.outer(scale, scale)
    if np.linalg.cond(corr) > _SINGULAR:
        raise DegenerateReference("metrics are linearly dependent over the reference (singular covariance)")
    d = obs.mean(axis=0) - mean
    z = d / scale
    quad = float(z @ np.linalg.solve(corr, z))
    t = n * r * (n - p) / ((n + r) * (n - 1) * p) * quad
    f = threshold(gamma, p, n - p)
    return ChewResult(t, f, t >= f, n, r, p, tuple(map(float, d)), tuple(map(float, scale)))


def band(reference: np.ndarray, r: int, gamma: float) -> tuple[float, float]:
    """The 1-D prediction band for the mean of r new points: x̄ ± s·sqrt(F⁻¹(γ;1,n−1)(n+r)/(nr)).

    >>> import numpy as np
    >>> reference = np.random.default_rng(1).normal(25.0, 0.5, size=30)
    >>> [round(x, 2) for x in band(reference, 3, gamma=0.99)]
    [24.26, 25.67]
    """
    ref = np.asarray(reference, dtype=float)
    n = ref.size
    _check(n, 1, r, gamma)
    mean, sd = float(ref.mean()), float(ref.std(ddof=1))
    half = sd * math.sqrt(threshold(gamma, 1, n - 1) * (n + r) / (n * r))
    return mean - half, mean + half
