"""Fit a population law (models/population.py) on a calibration history.

Input: one row per (host, CPU, run) with the run's M-1/N-2 summary of dgemm (intercept,
mnk, intercept_residual, mnk_residual: the published Dahu history, or our archives through
`hplsim.calibrate.run_summary`). On the log scale the rows follow a crossed random-effects model,
CPU x run (docs/population.md):

    y[c, r] = center + b[c] + d[r] + e[c, r]

The covariances are method-of-moments estimates: the two-way additive least-squares fit
(CPU and run effects, by backfitting, exact for unbalanced data) gives the residual
covariance (temporal.cpu, with its degrees of freedom N - C - R + 1), and the covariances
of the fitted CPU and run effects, less the part the residual noise puts in them, give
spatial and temporal.run. statsmodels' MixedLM fits one response at a time with a scalar
residual variance, so it cannot give the 4x4 run-to-run covariance; the moment estimator
is closed-form (milliseconds), needs nothing beyond numpy, and its variances match
MixedLM's REML per coefficient (tests/test_population.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.quantiles import chi2_ppf, norm_ppf
from hplsim.models.population import Population

#: population coefficient -> history metric (docs/formats/history.md)
HISTORY_METRICS = {
    "mean.intercept": "intercept",
    "mean.mnk": "mnk",
    "sigma.intercept": "intercept_residual",
    "sigma.mnk": "mnk_residual",
}
LEVEL = 0.9


def read_population_data(paths: Sequence[Path]) -> pd.DataFrame:
    """History files (CSV or SQLite) and dgemm calibration archives -> one table of runs."""
    import zipfile

    from hplsim.calibrate.history import read_history
    from hplsim.calibrate.run_summary import summarise_archive

    frames = []
    for path in map(Path, paths):
        if not path.exists():
            raise HplsimError(f"{path}: no such file")
        if path.suffix.lower() == ".zip" or zipfile.is_zipfile(path):
            frames.append(summarise_archive(path))
        else:
            frames.append(read_history(path))
    table = pd.concat(frames, ignore_index=True)
    if "function" in table.columns:  # the published history names its kernel
        table = table[table["function"].isna() | (table["function"].astype(str) == "dgemm")]
    return table


def _check(table: pd.DataFrame, family: str) -> list[str]:
    wanted = [c for c in HISTORY_METRICS if family != "none" or c.startswith("mean.")]
    columns = [HISTORY_METRICS[c] for c in wanted]
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise HplsimError(f"population of dgemm: the history has no column {', '.join(missing)} "
                          f"(needs {', '.join(columns)} per host, cpu and run)")
    for col in columns:
        v = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(v) | (v <= 0)
        if bad.any():
            r = table.iloc[int(np.flatnonzero(bad)[0])]
            raise HplsimError(f"population of dgemm: {int(bad.sum())} run(s) have a {col} that is missing or not "
                              f"positive (first: host {r['host']} cpu {r['cpu']} run {r['run_id']}): a log-scale "
                              "law needs positive coefficients (a negative least-squares intercept: calibrate small calls too)")
    return wanted


def _floor_pd(m: np.ndarray, what: str, notes: list[str]) -> np.ndarray:
    """A moment estimate can have negative eigenvalues (a variance smaller than its noise):
    raise them to a small floor so that the law stays a law, and say so."""
    m = (m + m.T) / 2
    w, v = np.linalg.eigh(m)
    floor = max(1e-12, 1e-6 * float(np.abs(np.diag(m)).max()))
    if w.min() < floor:
        notes.append(f"{what}: {int((w < floor).sum())} eigenvalue(s) of the moment estimate raised to {floor:.2g} "
                     "(not identified by the data)")
        m = (v * np.maximum(w, floor)) @ v.T
        m = (m + m.T) / 2
    return m


@dataclass
class PopulationFit:
    population: Population
    notes: list[str]


def fit_population(table: pd.DataFrame, kernel: str = "dgemm", family: str = "halfnormal") -> PopulationFit:
    if kernel != "dgemm":
        raise HplsimError(f"--per population: fits dgemm from calibration histories (their M-1 summaries); "
                          f"got --kernel {kernel}")
    if table.empty:
        raise HplsimError("population of dgemm: the history has no run")
    coefs = _check(table, family)
    cpu_key = table["host"].astype(str) + "\x00" + table["cpu"].astype(str)
    c, cpus = pd.factorize(cpu_key, sort=True)
    r, runs = pd.factorize(table["run_id"].astype(str), sort=True)
    if len(cpus) < 2:
        raise HplsimError(f"population of dgemm: the history has {len(cpus)} CPU (columns host, cpu): the spatial "
                          "covariance needs runs of at least 2 CPUs")
    if len(runs) < 2:
        raise HplsimError(f"population of dgemm: the history has {len(runs)} run (column run_id/jobid): the temporal "
                          "covariance needs at least 2 runs (days) of each CPU")
    y = np.log(table[[HISTORY_METRICS[k] for k in coefs]].to_numpy(dtype=float))
    n_c, n_r = len(cpus), len(runs)
    if np.bincount(c).max() < 2:
        raise HplsimError("population of dgemm: no CPU has 2 runs (column run_id/jobid): the temporal covariance "
                          "needs several runs of the same CPU")
    center = y.mean(0)
    a = np.zeros((n_c, y.shape[1]))
    b = np.zeros((n_r, y.shape[1]))
    for _ in range(1000):  # backfitting: the least-squares two-way fit, converged to round-off
        a_new = _group_mean(y - center - b[r], c, n_c)
        b_new = _group_mean(y - center - a_new[c], r, n_r)
        a_new -= a_new.mean(0)
        b_new -= b_new.mean(0)
        center_new = (y - a_new[c] - b_new[r]).mean(0)
        done = max(np.abs(a_new - a).max(), np.abs(b_new - b).max()) < 1e-13
        a, b, center = a_new, b_new, center_new
        if done:
            break
    resid = y - center - a[c] - b[r]
    dof = len(y) - n_c - n_r + 1
    if dof < 1:
        raise HplsimError(f"population of dgemm: {len(y)} runs of {n_c} CPUs in {n_r} runs leave no degree of "
                          "freedom for the run-to-run covariance: each CPU needs several runs")
    notes: list[str] = []
    cov_cpu = resid.T @ resid / dof
    per_cpu, per_run = np.bincount(c), np.bincount(r)
    spatial = a.T @ a / (n_c - 1) - cov_cpu * float(np.mean(1.0 / per_cpu))
    cov_run = b.T @ b / (n_r - 1) - cov_cpu * float(np.mean(1.0 / per_run))
    population = Population(
        kernel, tuple(coefs), center,
        _floor_pd(spatial, "spatial", notes), _floor_pd(cov_run, "temporal.run", notes),
        _floor_pd(cov_cpu, "temporal.cpu", notes), family,
        cpus_per_host=int(table["cpu"].astype(int).max()) + 1,
        fitted_on={"cpus": n_c, "runs": n_r, "observations": len(y),
                   "hosts": int(table["host"].nunique())},
    )
    return PopulationFit(population, notes)


def _group_mean(x: np.ndarray, g: np.ndarray, n: int) -> np.ndarray:
    sums = np.zeros((n, x.shape[1]))
    np.add.at(sums, g, x)
    return sums / np.bincount(g, minlength=n)[:, None]


# ---------------------------------------------------------------------- within-run noise


def noise_shape(calls: pd.DataFrame, seed: int = 0) -> tuple[tuple[float, float, float], ...]:
    """The within-run noise of dgemm calls as a Gaussian mixture of residuals in units of
    the history's σ: each (source, host, CPU, run) summarised as the history is (M-1 mean,
    σ = the |residual| line x sqrt(pi/2), `calibrate.run_summary.summarise_calls`), its residuals
    divided by that σ, pooled, and fitted by a mixture (components by BIC), recentred on 0."""
    from hplsim.calibrate.run_summary import summarise_calls
    from hplsim.models.noise import fit_mixture_1d

    keys = [k for k in ("source", "host", "cpu", "run") if k in calls and calls[k].notna().any()]
    z = []
    for _, g in calls.groupby(keys, sort=True, dropna=False) if keys else [(None, calls)]:
        s = summarise_calls(g)
        x = (g["m"] * g["n"] * g["k"]).to_numpy(dtype=float)
        y = g["duration"].to_numpy(dtype=float)
        sigma = s["intercept_residual"] + s["mnk_residual"] * x
        ok = sigma > 0
        z.append((y[ok] - s["intercept"] - s["mnk"] * x[ok]) / sigma[ok])
    values = np.concatenate(z)
    if len(values) < 50:
        raise HplsimError(f"population noise shape: {len(values)} calls, too few for a mixture (needs 50)")
    weights, means, sds = fit_mixture_1d(values, seed=seed)
    offset = float(np.dot(weights, means))
    return tuple((w, m - offset, s) for w, m, s in zip(weights, means, sds))


# ------------------------------------------------------------------------ held-out check


def region(pop: Population, level: float = LEVEL) -> tuple[np.ndarray, float]:
    """The law's predictive region for one CPU's coefficients in one run: the ellipsoid
    (y - center)' S^-1 (y - center) <= chi2_k(level), S = spatial + temporal.run + temporal.cpu."""
    return np.linalg.inv(pop.predictive_cov()), chi2_ppf(level, len(pop.center))


def marginal_widths(pop: Population, level: float = LEVEL) -> dict[str, tuple[float, float]]:
    """Per coefficient, the central `level` interval as factors of the centre (e.g. 0.95, 1.05)."""
    z = norm_ppf(0.5 + level / 2)
    sd = np.sqrt(np.diag(pop.predictive_cov()))
    return {c: (math.exp(-z * s), math.exp(z * s)) for c, s in zip(pop.coefficients, sd)}


def coverage(pop: Population, table: pd.DataFrame, level: float = LEVEL) -> float:
    """Share of the table's runs (rows) inside the law's predictive region."""
    inv, bound = region(pop, level)
    y = np.log(table[[HISTORY_METRICS[k] for k in pop.coefficients]].to_numpy(dtype=float)) - pop.center
    return float((np.einsum("ij,jk,ik->i", y, inv, y) <= bound).mean())


def holdout_check(table: pd.DataFrame, family: str = "halfnormal", seed: int = 0,
                  level: float = LEVEL) -> dict[str, Any]:
    """Fit on half of the CPUs (drawn with `seed`), report the share of the other half's
    runs inside the fitted law's `level` predictive region and the region's width."""
    key = table["host"].astype(str) + " cpu " + table["cpu"].astype(str)
    cpus = np.array(sorted(key.unique()))
    if len(cpus) < 4:
        raise HplsimError(f"population held-out check: needs at least 4 CPUs (columns host, cpu), got {len(cpus)}")
    train = set(np.random.default_rng(seed).permutation(cpus)[: len(cpus) // 2])
    mine = key.isin(train).to_numpy()
    fitted = fit_population(table[mine], family=family).population
    held = table[~mine]
    return {
        "level": level, "seed": seed, "train_cpus": len(train), "held_out_cpus": len(cpus) - len(train),
        "held_out_runs": int(len(held)), "coverage": coverage(fitted, held, level),
        "widths": {c: list(w) for c, w in marginal_widths(fitted, level).items()},
    }
