"""E92: the two states of Dahu at small N, from the real runs alone, and the shape of the
gap between a sweep of predictions and its machine state's runs.

1. Per N, the mean Gflops of each date of each cooling state (`hpl_cooling_2020.csv`) and
   the spread of the runs within a date: is the state of the cooling fault one machine at
   every N, as the dgemm calibrations that describe it assume?
2. Given a sweep results store (`benchmarks/dahu_validation.py --store`), the gap per N in
   seconds (real mean time, from HPL's flop count, minus the prediction's), fitted by least
   squares on the panels (N / NB) and on the flops, each alone and together (E38's method).

usage: e92_states.py REFERENCE_DAHU [STORE STATE]   (STATE: good or 2019-03)"""
from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np
import pandas as pd

NB = 128


def dates_table(ref: Path) -> pd.DataFrame:
    df = pd.read_csv(ref / "hpl_cooling_2020.csv")
    real = df[df["mode"] == "reality"]
    means = real.groupby(["matrix_size", "cooling", "date"]).gflops.mean().unstack(["cooling", "date"])
    return means


def spread_table(ref: Path) -> pd.DataFrame:
    df = pd.read_csv(ref / "hpl_cooling_2020.csv")
    real = df[df["mode"] == "reality"]
    g = real.groupby(["matrix_size", "cooling", "date"]).gflops
    out = (100 * (g.max() - g.min()) / g.mean()).unstack(["cooling", "date"])
    several = g.count().unstack(["cooling", "date"]).min() > 1
    return out.loc[:, several]


def real_means(ref: Path, state: str) -> pd.Series:
    if state == "good":
        df = pd.read_csv(ref / "hpl_cooling_2020.csv")
        return df[(df["mode"] == "reality") & (df.cooling == "good")].groupby("matrix_size").gflops.mean()
    df = pd.read_csv(ref / "hpl_reality.csv")
    df = df[df.date == state]
    df = df[~((df.matrix_size == 175_000) & (df.gflops > 22_000))]  # the data README's two outliers
    return df.groupby("matrix_size").gflops.mean()


def gap_fits(ref: Path, store: Path, state: str) -> None:
    with sqlite3.connect(store) as c:
        sim = pd.read_sql("select n, gflops, time_s from runs where status = 'ok' and seed = 1", c)
    sim = sim.set_index("n").sort_index()
    real = real_means(ref, state)
    n = sim.index.to_numpy(dtype=float)
    flops = 2 / 3 * n**3 + 2 * n**2  # HPL's own count
    t_real = flops / (real.reindex(sim.index).to_numpy() * 1e9)
    gap = t_real - sim.time_s.to_numpy()
    panels = n / NB
    print(f"{'N':>8} {'real':>9} {'hplsim':>9} {'error %':>8} {'gap s':>8} {'gap per panel ms':>17}")
    for i, size in enumerate(sim.index):
        print(f"{size:>8} {real[size]:>9.0f} {sim.gflops[size]:>9.0f} "
              f"{100 * (sim.gflops[size] / real[size] - 1):>+8.2f} {gap[i]:>8.3f} {1e3 * gap[i] / panels[i]:>17.2f}")
    columns = {"panel": panels, "flop": flops}
    for name, terms in (("per panel", ["panel"]), ("per flop", ["flop"]), ("both", ["panel", "flop"])):
        x = np.column_stack([columns[t] for t in terms])
        coef, *_ = np.linalg.lstsq(x, gap, rcond=None)
        resid = gap - x @ coef
        shown = [f"{v * 1e3:.3f} ms/panel" if t == "panel" else f"{v:.2e} s/flop" for t, v in zip(terms, coef)]
        print(f"{name:>9}: {', '.join(shown)}; residuals {np.round(resid, 2).tolist()} s")


def main() -> None:
    ref = Path(sys.argv[1])
    pd.set_option("display.width", 200)
    print("Mean Gflops per date:")
    print(dates_table(ref).round(0).to_string())
    print("\nRange of the runs within a date, % of its mean (dates with more than one run per N):")
    print(spread_table(ref).round(1).to_string())
    if len(sys.argv) == 4:
        print()
        gap_fits(ref, Path(sys.argv[2]), sys.argv[3])


if __name__ == "__main__":
    main()
