"""Gflops at a problem size too large to simulate within the budget: HPL's time as
T(N) = a·N³ + b·N² + c·N, extrapolated with its 90 % interval.

a, the trailing updates' flops, comes from the model, not from the fit: the updates are
dgemm calls of depth NB, whose modelled time per flop is (mnk + mn/NB)/2 (the dgemm law's
coefficients), and (2/3)·N³ flops spread over R ranks give a = (mnk + mn/NB) / (3R), with the
mean over the ranks of the run as the central value and the slowest rank's as the
pessimistic one. Runs at small N hardly see this term (at N_top it may be a few % of the
time), so fitting it would leave the extrapolation to chance: with a free a, a fit on small
sizes sets a = 0 and Gflops then grows without bound. b (the N²-sized panel broadcasts, row
swaps and panel factorisations) and c (per-panel latencies, N/NB messages of fixed cost) are
fitted on the runs, both >= 0, least squares on relative errors, Student's t with the fit's
residual degrees of freedom. The interval adds, in quadrature on the log scale, the gap
between the mean and the slowest rank's compute term.

Extrapolating from N <= N_top to N_final = 10-100 N_top is honest only with its interval,
and that interval is only as good as the law's form: the output says how far it
extrapolates and what share of the time at N_top the N³ term is (docs/tune.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import optimize

from hplsim.models.modelfile import ModelFile
from hplsim.models.intervals import LEVEL
from hplsim.quantiles import t_ppf

TERMS = (2, 1)  # fitted powers of N (the N³ term comes from the model)


def hpl_flops(n: float) -> float:
    return 2.0 / 3.0 * n**3 + 2.0 * n**2


@dataclass(frozen=True)
class Law:
    a: float  # the compute term's coefficient (from the model): mean over ranks
    a_slowest: float  # the same for the slowest rank
    coefficients: dict[int, float]  # fitted: power of N -> coefficient (seconds)
    cov: np.ndarray  # of the active fitted coefficients
    active: tuple[int, ...]
    dof: int
    sigma: float  # relative residual sd
    sizes: tuple[int, ...]

    def time(self, n: float, a: float | None = None) -> float:
        return (self.a if a is None else a) * n**3 + sum(c * n**p for p, c in self.coefficients.items())

    def gflops(self, n: float) -> float:
        return hpl_flops(n) / self.time(n) / 1e9

    def compute_share(self, n: float) -> float:
        """The share of the time at N that the N³ (compute) term makes."""
        return self.a * n**3 / self.time(n)

    def gflops_interval(self, n: float) -> tuple[float, float, float]:
        """(central, low, high) Gflops at N for one run: the fitted terms' uncertainty and
        the residual scatter (Student's t), and the slowest rank's compute term."""
        t = self.time(n)
        x = np.array([n**p for p in self.active], dtype=float)
        var = (float(x @ self.cov @ x) if len(self.active) else 0.0) + (self.sigma * t) ** 2
        q = t_ppf(0.5 + LEVEL / 2, self.dof) if self.dof > 0 else 10.0
        fit_rel = q * math.sqrt(var) / t
        imbalance_rel = math.log(self.time(n, self.a_slowest) / t)
        # on the log scale: a time is positive, and far extrapolations stay finite
        spread = math.exp(math.hypot(fit_rel, imbalance_rel))
        g = self.gflops(n)
        return g, g / spread, g * spread

    def to_dict(self) -> dict:
        terms = [f"{self.a:.4g}·N^3 (model)"] + [f"{c:.4g}·N^{p}" for p, c in self.coefficients.items()]
        return {"form": "T(N) = " + " + ".join(terms), "a_model_mean": self.a, "a_model_slowest": self.a_slowest,
                "fitted_on_n": list(self.sizes), "degrees_of_freedom": self.dof, "relative_residual_sd": self.sigma}


def compute_coefficients(model: ModelFile, hosts: Sequence[str], nb: int) -> tuple[float, float] | None:
    """(mean, slowest) over the run's ranks of a = (mnk + mn/NB) / (3R) from each rank's
    dgemm law (its base law; a rank's CPU is its local rank modulo the host's CPUs); None
    when a rank has no polynomial dgemm law with an mnk term (e.g. a population model)."""
    per_rank = []
    seen: dict[str, int] = {}
    for host in hosts:
        local = seen.get(host, 0)
        seen[host] = local + 1
        try:
            law = model.resolve(host, local % model.cpus_of(host)).get("dgemm")
        except Exception:  # noqa: BLE001 - a host the model does not know: no law
            return None
        if law is None:
            return None
        coefs = law.mean.to_mapping()
        if coefs.get("mnk", 0.0) <= 0:
            return None
        per_rank.append(coefs["mnk"] + coefs.get("mn", 0.0) / nb)
    r = len(per_rank)
    return float(np.mean(per_rank)) / (3 * r), max(per_rank) / (3 * r)


def fit_law(sizes: Sequence[int], times: Sequence[float], a: tuple[float, float]) -> Law | None:
    """The law on (N, time) points (several seeds of one N are several points), with the
    compute term `a` (mean, slowest) from `compute_coefficients`; None with fewer than two
    distinct sizes. The N term is dropped when the points leave no degree of freedom."""
    n = np.asarray(sizes, dtype=float)
    y = np.asarray(times, dtype=float)
    if len(set(sizes)) < 2:
        return None
    terms = list(TERMS)
    while len(terms) >= len(n) and len(terms) > 1:
        terms.pop()  # the lowest power first
    X = np.column_stack([n**p for p in terms])
    w = 1.0 / y  # relative errors: the sizes span an order of magnitude of times
    rest = (y - a[0] * n**3) * w
    coef, _ = optimize.nnls(X * w[:, None], rest)
    active = [i for i, c in enumerate(coef) if c > 0]
    Xa = (X * w[:, None])[:, active]
    resid = rest - Xa @ coef[active]
    dof = len(y) - len(active)
    sigma = float(np.sqrt(resid @ resid / dof)) if dof > 0 else 0.0
    try:
        cov = sigma**2 * np.linalg.inv(Xa.T @ Xa) if active else np.zeros((0, 0))
    except np.linalg.LinAlgError:
        cov = np.zeros((len(active), len(active)))
    return Law(a[0], a[1], {terms[i]: float(coef[i]) for i in active}, cov, tuple(terms[i] for i in active), dof,
               sigma, tuple(sorted(set(int(s) for s in sizes))))
