"""E42: is Dahu's dgemm call noise remembered from call to call, and were the 2019
model's noisy CPUs still noisy when the factorial ran (Jan 2020)?

Usage: python e42_noise_memory.py [DAHU_DATA_DIR]   (default reference/dahu)

Prints (1) for each job and CPU of dgemm_raw.csv, the calls' spread around their own
size's median and the autocorrelation of that residual at lags 1..1000 (in call order);
(2) for each node, the 2019 model's dgemm mean and noise at HPL's update at N = 250,000
on 32 x 32 (M = N = 7,812, K = 128) against the median CPU's, and the same node's
calibrations of Nov 2019 - Jan 2020 (dgemm_calibration_history.csv) against theirs.
"""
import sys
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(sys.argv[1] if len(sys.argv) > 1 else "reference/dahu")
M, N, K = 7812, 7812, 128
TERMS = {"intercept": 1, "mnk": M * N * K, "mn": M * N, "mk": M * K, "nk": N * K}
LAGS = (1, 2, 3, 5, 10, 50, 200, 1000)


def autocorrelation(x: np.ndarray, lag: int) -> float:
    return float(np.corrcoef(x[:-lag], x[lag:])[0, 1])


raw = pd.read_csv(DATA / "dgemm_raw.csv")
print("(1) dgemm_raw.csv: residual = duration / median of the same (m, n, k) in the job - 1")
print(f"{'job':>8} {'cpu':>3} {'calls':>6} {'sd':>6} {'sd>1e9':>7}  autocorrelation at lags " + " ".join(map(str, LAGS)))
for (job, cpu), g in raw.groupby(["jobid", "cpu"], sort=True):
    r = (g.duration / g.groupby(["m", "n", "k"]).duration.transform("median") - 1).to_numpy()
    big = (g.m * g.n * g.k).to_numpy() > 1e9
    ac = " ".join(f"{autocorrelation(r - r.mean(), lag):+.3f}" for lag in LAGS)
    print(f"{job:>8} {cpu:>3} {len(r):>6} {r.std():6.2%} {r[big].std():7.2%}  {ac}")

model = pd.read_csv(DATA / "dgemm_model_per_cpu.csv")
model = model[model.cpu != "default"].copy()
model["node"] = model.node.astype(float).astype(int)
model["cpu_of_node"] = model.cpu.astype(int) % 2
model["mu"] = sum(model[f"mu_{t}"] * v for t, v in TERMS.items())
model["sigma"] = sum(model[f"sigma_{t}"] * v for t, v in TERMS.items())
hist = pd.read_csv(DATA / "dgemm_calibration_history.csv")
hist["mu"] = hist.intercept + hist.mnk * TERMS["mnk"]
hist["sd"] = hist.intercept_residual + hist.mnk_residual * TERMS["mnk"]
h = hist.groupby(["node", "cpu"]).agg(mu=("mu", "median"), sd=("sd", "median")).reset_index()

print("\n(2) per CPU: 2019 model (mean / median CPU's, noise sd / mean) and 2019-11..2020-01"
      " history (median over runs: mean / median CPU's, residual sd / mean)")
mu19, mu20 = model.mu.median(), h.mu.median()
t = model.merge(h, left_on=["node", "cpu_of_node"], right_on=["node", "cpu"], suffixes=("", "_h"))
t["mean19"] = t.mu / mu19
t["noise19"] = t.sigma / t.mu
t["mean20"] = t.mu_h / mu20
t["noise20"] = t.sd / t.mu_h
t = t.sort_values("noise19", ascending=False)
print(t[["node", "cpu_of_node", "mean19", "noise19", "mean20", "noise20"]].head(12).to_string(index=False, float_format="%.3f"))
print("median of the 64 CPUs:", t[["mean19", "noise19", "mean20", "noise20"]].median().round(3).to_dict())
print("max of the 64 CPUs:   ", t[["mean19", "noise19", "mean20", "noise20"]].max().round(3).to_dict())

print("\n(3) dgemm_raw.csv: the history's kind of summary (M-1/N-2: a linear mean in MNK, a |residual| line x sqrt(pi/2))"
      " of the same calls, at HPL's update: its sd / mean against the spread at a fixed shape")
for (job, cpu), g in raw.groupby(["jobid", "cpu"], sort=True):
    x = np.c_[np.ones(len(g)), g.m * g.n * g.k]
    y = g.duration.to_numpy()
    b = np.linalg.lstsq(x, y, rcond=None)[0]
    s = np.linalg.lstsq(x, np.abs(y - x @ b), rcond=None)[0] * np.sqrt(np.pi / 2)
    at = np.array([1.0, TERMS["mnk"]])
    print(f"{job:>8} {cpu:>3} {g.expfile.iloc[0]:>16}  linear law's sd / mean {at @ s / (at @ b):6.2%}")
