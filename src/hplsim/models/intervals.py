"""Prediction intervals: a central Gflops figure and a 90 % interval for a real run.

Two sources, combined (docs/tune.md, "Intervals"):

- the noise, from seeds: k simulations of the same configuration with different seeds
  (kernel noise, pivot draws, a population model's sampled cluster) give a mean and a
  standard deviation s; a new run falls within mean ± t(0.95; k-1) · s · sqrt(1 + 1/k)
  (Student's prediction interval for one more draw);
- the models' own uncertainty: a model file may say, per kernel, how uncertain its mean
  law is (`uncertainty: {dgemm: {rsd: 0.02}}`: a relative standard deviation of the law's
  scale, e.g. from the spread of the calibration passes it was fitted on). HPL's time
  moves by share_k · rsd_k when kernel k's law moves by rsd_k, share_k being the kernel's
  share of the run's time (the rank-mean of its modelled seconds over HPL's time). The
  kernels' laws come from the same machine, so their errors are taken as fully correlated:
  rsd_T = Σ share_k · rsd_k. Without the shares (a results store keeps none), the bound
  max_k rsd_k (Σ share_k <= 1) is used.

The two are added in quadrature in Gflops. Neither covers what no input knows: the real
machine drifting after its calibration, a network model that is wrong, the emulation's
own bias (docs/validation.md).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

from hplsim.models.modelfile import ModelFile
from hplsim.quantiles import NORM_PPF_95, t_ppf

LEVEL = 0.90
#: LEVEL's two-sided normal quantile, written out (tests/test_quantiles.py checks both)
Z = NORM_PPF_95


@dataclass(frozen=True)
class Interval:
    central: float
    low: float
    high: float
    seeds: int
    seed_sd: float | None  # None with one seed: the noise part is unknown
    model_rsd: float  # relative sd of HPL's time from the model's uncertainty (0: none declared)

    @property
    def sources(self) -> list[str]:
        out = []
        if self.seed_sd is not None:
            out.append(f"{self.seeds} seeds")
        if self.model_rsd > 0:
            out.append(f"model uncertainty ({100 * self.model_rsd:.2g} %)")
        return out

    def to_dict(self) -> dict:
        return {"interval": [self.low, self.high], "interval_level": LEVEL,
                "interval_sources": self.sources or ["none: one seed and a model without uncertainty"]}

    def text(self) -> str:
        if not self.sources:
            return "none (one seed and a model without uncertainty: use --replicates)"
        return f"[{self.low:.4g}, {self.high:.4g}]"


def law_rsd(group_factors: Sequence[float]) -> float | None:
    """A kernel law's relative uncertainty from the calibration's groups (its passes and
    traced runs): each group's measured / fitted total is a draw of the law's scale in
    one state of the machine, and their relative spread, as a prediction for one more
    group, sd/mean · sqrt(1 + 1/G), is the law's `uncertainty` (None below two groups: no
    spread to see; capped below 1).

    >>> round(law_rsd([0.98, 1.00, 1.02]), 4)
    0.0231
    >>> law_rsd([1.0]) is None
    True
    """
    g = [float(x) for x in group_factors if x > 0]
    if len(g) < 2:
        return None
    return min(0.99, statistics.stdev(g) / statistics.fmean(g) * math.sqrt(1 + 1 / len(g)))


def model_rsd(model: ModelFile, shares: Mapping[str, float] | None = None) -> float:
    """Relative sd of HPL's time due to the kernels' declared uncertainty (0 if none)."""
    rsd = model.uncertainty
    if not rsd:
        return 0.0
    if shares is None:
        return max(rsd.values())
    return sum(min(1.0, max(0.0, shares.get(k, 0.0))) * v for k, v in rsd.items())


def kernel_shares(breakdown: Mapping | None, time_s: float) -> dict[str, float] | None:
    """Each kernel's share of HPL's time: its seconds summed over ranks / (ranks · time)."""
    if not breakdown or time_s <= 0:
        return None
    ranks = breakdown["ranks"]
    return {k: v["seconds"] / (ranks * time_s) for k, v in breakdown["kernels"].items()}


def interval(gflops: Sequence[float], rsd: float = 0.0) -> Interval:
    """The interval for one real run, from the seeds' Gflops and the model part (`rsd`)."""
    values = [float(g) for g in gflops]
    if not values:
        raise ValueError("no Gflops to make an interval from")
    k = len(values)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if k >= 2 else None
    # Gflops ∝ 1/time: to first order, the model's relative sd is the Gflops' one
    half = math.hypot(t_half(sd or 0.0, k), z_half(rsd, mean))
    return Interval(mean, max(0.0, mean - half), mean + half, k, sd, rsd)


def combine(central: float, half_widths: Sequence[float], seeds: int, seed_sd: float | None,
            rsd: float) -> Interval:
    """An interval around `central` from independent parts' 90 % half-widths, added in
    quadrature on the log scale (relative widths): far extrapolations stay positive."""
    rel = math.sqrt(sum((h / central) ** 2 for h in half_widths)) if central > 0 else 0.0
    return Interval(central, central * math.exp(-rel), central * math.exp(rel), seeds, seed_sd, rsd)


def z_half(rsd: float, value: float) -> float:
    return Z * rsd * value


def t_half(sd: float, k: int) -> float:
    """A 90 % prediction half-width for one more draw from k samples of sd `sd`."""
    if k < 2:
        return 0.0
    return t_ppf(0.5 + LEVEL / 2, k - 1) * sd * math.sqrt(1 + 1 / k)
