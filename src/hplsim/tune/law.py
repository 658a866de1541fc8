"""Gflops at a problem size too large to simulate within the budget: HPL's time fitted as
T(N) = a·N³ + b·N² + c·N (a: the trailing updates' flops over the ranks; b: the panel
broadcasts, row swaps and panel factorisations, N²-sized; c: per-panel latencies, N/NB
messages of fixed cost), coefficients >= 0, least squares on relative errors, then
extrapolated with its 90 % interval (Student, the fit's residual degrees of freedom).

Extrapolating a law fitted at N <= N_top to N_final = 10-20 N_top is honest only with its
interval, and that interval is only as good as the law's form: the output says how far it
extrapolates (docs/tune.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import optimize, stats

from hplsim.tune.intervals import LEVEL

TERMS = (3, 2, 1)  # powers of N


def hpl_flops(n: float) -> float:
    return 2.0 / 3.0 * n**3 + 2.0 * n**2


@dataclass(frozen=True)
class Law:
    coefficients: dict[int, float]  # power of N -> coefficient (seconds)
    cov: np.ndarray  # of the active coefficients (relative-error fit)
    active: tuple[int, ...]
    dof: int
    sigma: float  # relative residual sd
    sizes: tuple[int, ...]

    def time(self, n: float) -> float:
        return sum(c * n**p for p, c in self.coefficients.items())

    def gflops(self, n: float) -> float:
        return hpl_flops(n) / self.time(n) / 1e9

    def gflops_interval(self, n: float) -> tuple[float, float, float]:
        """(central, low, high) Gflops at N for one run: the law's uncertainty and the
        residual scatter, Student's t with the fit's degrees of freedom."""
        t = self.time(n)
        x = np.array([n**p for p in self.active], dtype=float)
        var = float(x @ self.cov @ x) + (self.sigma * t) ** 2
        q = float(stats.t.ppf(0.5 + LEVEL / 2, self.dof)) if self.dof > 0 else 10.0
        # on the log scale: a time is positive, and far extrapolations stay finite
        spread = math.exp(q * math.sqrt(var) / t)
        g = self.gflops(n)
        return g, g / spread, g * spread

    def to_dict(self) -> dict:
        return {"form": "T(N) = " + " + ".join(f"{c:.4g}·N^{p}" for p, c in self.coefficients.items()),
                "fitted_on_n": list(self.sizes), "degrees_of_freedom": self.dof,
                "relative_residual_sd": self.sigma}


def fit_law(sizes: Sequence[int], times: Sequence[float]) -> Law | None:
    """The law on (N, time) points (several seeds of one N are several points); None with
    fewer than two distinct sizes. Terms a nonnegative fit zeroes are dropped; the N term
    is dropped first when points are too few to leave a degree of freedom."""
    n = np.asarray(sizes, dtype=float)
    y = np.asarray(times, dtype=float)
    if len(set(sizes)) < 2:
        return None
    terms = list(TERMS)
    while len(terms) >= len(n) and len(terms) > 1:
        terms.pop()  # the lowest power first
    X = np.column_stack([n**p for p in terms])
    w = 1.0 / y  # relative errors: the sizes span an order of magnitude of times
    coef, _ = optimize.nnls(X * w[:, None], y * w)
    active = [i for i, c in enumerate(coef) if c > 0]
    Xa = (X * w[:, None])[:, active]
    resid = y * w - Xa @ coef[active]
    dof = len(y) - len(active)
    sigma = float(np.sqrt(resid @ resid / dof)) if dof > 0 else 0.0
    try:
        cov_w = sigma**2 * np.linalg.inv(Xa.T @ Xa)
    except np.linalg.LinAlgError:
        cov_w = np.zeros((len(active), len(active)))
    return Law({terms[i]: float(coef[i]) for i in active}, cov_w, tuple(terms[i] for i in active), dof, sigma,
                tuple(sorted(set(int(s) for s in sizes))))
