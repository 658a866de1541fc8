"""Which kernel model to use: AIC, BIC and k-fold cross-validated errors of every option,
and the rule that picks one.

The CV error that the rule uses by default is the CRPS (continuous ranked probability
score) of held-out calls: the mean distance between the model's whole predictive law and
the observed duration, in seconds. It is the absolute error for N-0 and rewards a noise
model only as far as it describes the spread of real calls, which is what the emulation
draws from. The CV RMSE of the mean and the held-out coverage of the central 90 %
interval are reported alongside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.models.kernel_fit import MEAN_OPTIONS, NOISE_OPTIONS, check_calls, fit_kernel_noises, identifiable

ALL_OPTIONS: tuple[tuple[str, str], ...] = tuple((m, n) for m in MEAN_OPTIONS for n in NOISE_OPTIONS)
CRITERIA = ("crps", "rmse", "aic", "bic")
DEFAULT_TOLERANCE = 0.01
DEFAULT_FOLDS = 5


def parse_option(text: str) -> tuple[str, str] | None:
    """``"M2,N2"`` -> ("M2", "N2"); ``"auto"`` -> None (choose by the selection rule)."""
    text = text.strip()
    if text.lower() == "auto":
        return None
    parts = [p.strip() for p in text.replace("/", ",").split(",")]
    canon = {o.lower(): o for o in (*MEAN_OPTIONS, *NOISE_OPTIONS)}
    canon["nmix"] = canon["n'"] = "NMix"
    if len(parts) != 2 or parts[0].lower() not in canon or parts[1].lower() not in canon:
        raise HplsimError(f"option {text!r} is not 'auto' or MEAN,NOISE with MEAN in {', '.join(MEAN_OPTIONS)} "
                          f"and NOISE in {', '.join(NOISE_OPTIONS)} (e.g. M2,N2)")
    mean, noise = canon[parts[0].lower()], canon[parts[1].lower()]
    if mean not in MEAN_OPTIONS or noise not in NOISE_OPTIONS:
        raise HplsimError(f"option {text!r}: write the mean model first, then the noise (e.g. M2,N2)")
    return mean, noise


def complexity(option: tuple[str, str]) -> tuple[int, int]:
    """Order of simplicity: mean model first (M0 < M1 < M2), then noise (N0 < … < NMix)."""
    return MEAN_OPTIONS.index(option[0]), NOISE_OPTIONS.index(option[1])


def _folds(n: int, k: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n) % k


def compare(
    calls: pd.DataFrame,
    kernel: str,
    options: Iterable[tuple[str, str]] = ALL_OPTIONS,
    *,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    what: str = "data",
) -> pd.DataFrame:
    """One row per option: parameters, log-likelihood, AIC, BIC, R² (full data) and the
    k-fold CV errors (calls assigned to folds at random, seeded)."""
    options = list(options)
    sizes, y = check_calls(calls, kernel, what)
    data = pd.DataFrame({**sizes, "duration": y})
    fold = _folds(len(data), folds, seed)
    by_mean: dict[str, list[str]] = {}
    for mean, noise in options:
        by_mean.setdefault(mean, []).append(noise)
    rows = []
    for mean, noises in by_mean.items():
        base = {noise: {"option": f"{mean},{noise}", "mean": mean, "noise": noise, "n": len(data)} for noise in noises}
        if not identifiable(sizes, kernel, mean):
            rows += [{**row, "note": "sizes do not determine every term"} for row in base.values()]
            continue
        full = fit_kernel_noises(data, kernel, mean, tuple(noises), seed=seed, what=what)
        for noise, f in full.items():
            base[noise].update(params=f.n_params, loglik=f.loglik, aic=f.aic, bic=f.bic, r2=f.r2)
        acc = {noise: {"crps": 0.0, "sq": 0.0, "inside": 0, "count": 0} for noise in noises}
        for k in range(folds):
            train, test = data[fold != k], data[fold == k]
            if len(test) == 0:
                continue
            try:
                models = fit_kernel_noises(train, kernel, mean, tuple(noises), seed=seed, what=what)
            except HplsimError:
                break  # a fold without enough distinct sizes: no CV for this mean model
            yt = test["duration"].to_numpy()
            for noise, model in models.items():
                dist = model.distribution(test)
                a = acc[noise]
                a["crps"] += float(dist.crps(yt).sum())
                a["sq"] += float(np.sum((yt - dist.mean) ** 2))
                a["inside"] += int(np.sum((yt >= dist.quantile(0.05)) & (yt <= dist.quantile(0.95))))
                a["count"] += len(yt)
        for noise, a in acc.items():
            if a["count"] == len(data):
                base[noise].update(cv_crps=a["crps"] / a["count"], cv_rmse=math.sqrt(a["sq"] / a["count"]),
                                   cv_coverage90=a["inside"] / a["count"])
            else:
                base[noise]["note"] = "too few distinct sizes for cross-validation"
        rows += list(base.values())
    order = {f"{m},{n}": i for i, (m, n) in enumerate(options)}
    rows.sort(key=lambda r: order[r["option"]])
    columns = ["option", "mean", "noise", "n", "params", "loglik", "aic", "bic", "r2", "cv_crps", "cv_rmse",
               "cv_coverage90", "note"]
    return pd.DataFrame(rows).reindex(columns=columns)


def pooled_table(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Several groups' tables (one per host or CPU) summed into one: CV errors averaged
    over all held-out calls, AIC/BIC/log-likelihood/parameters summed (the groups are
    fitted separately, so their likelihoods add)."""
    frames = [t.assign(group=g) for g, t in tables.items()]
    if len(frames) == 1:
        return frames[0].drop(columns="group")
    all_rows = pd.concat(frames, ignore_index=True)
    out = []
    for option, g in all_rows.groupby("option", sort=False):
        n = g["n"].sum()
        row = {"option": option, "mean": g["mean"].iloc[0], "noise": g["noise"].iloc[0], "n": n}
        for col in ("params", "loglik", "aic", "bic"):
            row[col] = g[col].sum(min_count=len(g)) if g[col].notna().all() else np.nan
        for col in ("r2", "cv_crps", "cv_coverage90"):
            row[col] = float((g[col] * g["n"]).sum() / n) if g[col].notna().all() else np.nan
        row["cv_rmse"] = math.sqrt(float((g["cv_rmse"] ** 2 * g["n"]).sum() / n)) if g["cv_rmse"].notna().all() else np.nan
        notes = sorted({str(x) for x in g["note"].dropna()})
        row["note"] = "; ".join(notes) if notes else np.nan
        out.append(row)
    return pd.DataFrame(out).reindex(columns=all_rows.columns.drop("group"))


@dataclass(frozen=True)
class Choice:
    option: tuple[str, str]
    reason: str


def choose(table: pd.DataFrame, criterion: str = "crps", tolerance: float = DEFAULT_TOLERANCE) -> Choice:
    """The default rule: the simplest option whose CV error is within `tolerance` (1 %)
    of the best one. With ``aic`` or ``bic``: the option with the lowest value."""
    if criterion not in CRITERIA:
        raise HplsimError(f"unknown criterion {criterion!r} (known: {', '.join(CRITERIA)})")
    col = {"crps": "cv_crps", "rmse": "cv_rmse"}.get(criterion, criterion)
    ok = table[table[col].notna()]
    if ok.empty:
        raise HplsimError(f"no option could be scored by {criterion} (too few distinct sizes?)")
    if criterion in ("aic", "bic"):
        best = ok.loc[ok[col].idxmin()]
        return Choice((best["mean"], best["noise"]), f"lowest {criterion.upper()} ({best[col]:.6g})")
    best_value = float(ok[col].min())
    within = ok[ok[col] <= best_value * (1 + tolerance)]
    simplest = min(((r["mean"], r["noise"]) for _, r in within.iterrows()), key=complexity)
    value = float(within[within["option"] == f"{simplest[0]},{simplest[1]}"][col].iloc[0])
    return Choice(simplest, f"simplest option with CV {criterion.upper()} within {tolerance:.0%} of the best "
                            f"({value:.4g} vs {best_value:.4g})")
