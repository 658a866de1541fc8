#!/usr/bin/env python3
"""Fit the cost law (`hplsim.hpl.cost`) on timed runs of `benchmarks/emulation_scaling.py`.

`tune` plans its search with the law, `sweep --dry-run` and `predict` quote it; when the
emulation gets faster or slower, the law is refitted here and its constants copied into
`src/hplsim/hpl/cost.py` (declared there once; this script only prints them).

Wall time at NB = 128: OVERHEAD + PER_RANK · R + a · N^α · R^β with R = P·Q ranks, all five
terms at once, least squares on the logarithm of the wall (every point weighs by its ratio,
not its seconds). Memory (peak PSS): BASE + PER_RANK · R + PER_RANK_N · R · N, least squares
on the relative error, on the runs of at least --min-memory-wall seconds (a shorter run is
sampled too few times, and its figure is then the tree's RSS, which counts every shared page
once per mapping).

    .venv/bin/python benchmarks/cost_law.py benchmarks/results/emulation_scaling-star.json \\
        benchmarks/results/emulation_scaling-dahu.json benchmarks/results/emulation_scaling-dahu-small.json

Prints each run's measurement, the fitted law's estimate and the current law's, as ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_main  # noqa: E402

from hplsim.hpl import cost  # noqa: E402
from hplsim.hpl.config import HplConfig  # noqa: E402


@dataclass(frozen=True)
class Run:
    n: int
    nb: int
    p: int
    q: int
    wall_s: float
    pss_mb: float
    source: str

    @property
    def ranks(self) -> int:
        return self.p * self.q


def _runs(paths: list[Path]) -> list[Run]:
    runs = []
    for path in paths:
        doc = json.loads(path.read_text())
        for row in doc["rows"]:
            if row.get("exchanges", "modelled") != "modelled":
                continue  # the law prices predict's default
            runs.append(Run(row["n"], row.get("nb") or 128, row["p"], row["q"],
                            statistics.median(row["wall_s"]), statistics.median(row["pss_mb"]), path.name))
    return runs


def _wall(params: np.ndarray, n: np.ndarray, r: np.ndarray, nb: np.ndarray) -> np.ndarray:
    overhead, per_rank, log_a, alpha, beta = params
    return overhead + per_rank * r + np.exp(log_a) * n ** alpha * r ** beta * cost.REFERENCE_NB / nb


def fit_wall(runs: list[Run]) -> np.ndarray:
    n = np.array([x.n for x in runs], float)
    r = np.array([x.ranks for x in runs], float)
    nb = np.array([x.nb for x in runs], float)
    wall = np.array([x.wall_s for x in runs])
    start = [cost.OVERHEAD_S, cost.PER_RANK_S, np.log(cost.COEFFICIENT), cost.N_EXPONENT, cost.RANK_EXPONENT]
    fit = least_squares(lambda p: np.log(_wall(p, n, r, nb)) - np.log(wall), start,
                        bounds=([0, 0, -60, 0.3, 0.3], [10, 0.1, 0, 2.5, 2.5]))
    return fit.x


def fit_memory(runs: list[Run]) -> np.ndarray:
    a = np.array([[1.0, x.ranks, x.ranks * x.n] for x in runs])
    pss = np.array([x.pss_mb * 1e6 for x in runs])
    # relative residuals: each row divided by its measurement
    coefs, *_ = np.linalg.lstsq(a / pss[:, None], np.ones(len(runs)), rcond=None)
    return coefs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", type=Path, help="emulation_scaling.py --json outputs")
    ap.add_argument("--min-memory-wall", type=float, default=2.0, metavar="S",
                    help="memory fit: only runs at least this long (default 2 s)")
    args = ap.parse_args()
    runs = _runs(args.results)
    if len(runs) < 5:
        raise SystemExit("hplsim: error: the wall law has five terms: give at least five timed runs")
    params = fit_wall(runs)
    overhead, per_rank, log_a, alpha, beta = params
    print(f"wall ≈ {overhead:.2f} s + {per_rank * 1e3:.2f} ms/rank + {np.exp(log_a):.3g} · N^{alpha:.2f} · "
          f"(P·Q)^{beta:.2f} · 128/NB s")
    print(f"  OVERHEAD_S = {overhead:.2f}; PER_RANK_S = {per_rank:.5f}; COEFFICIENT = {np.exp(log_a):.3g}; "
          f"N_EXPONENT = {alpha:.2f}; RANK_EXPONENT = {beta:.2f}")
    long_enough = [x for x in runs if x.wall_s >= args.min_memory_wall]
    mem = fit_memory(long_enough) if len(long_enough) >= 3 else None
    if mem is not None:
        print(f"memory ≈ {mem[0] / 1e6:.1f} MB + {mem[1] / 1e6:.3f} MB/rank + {mem[2]:.3f} B · ranks · N "
              f"(on {len(long_enough)} runs of ≥ {args.min_memory_wall:g} s)")
        print(f"  MEMORY_BASE = {mem[0]:.3g}; MEMORY_PER_RANK = {mem[1]:.3g}; MEMORY_PER_RANK_N = {mem[2]:.3g}")
    print(f"\n{'N':>8} {'grid':>6} {'wall s':>9} {'fit/wall':>9} {'law/wall':>9} {'PSS MB':>8} "
          f"{'fit/PSS':>8} {'law/PSS':>8}  source")
    fitted = _wall(params, np.array([x.n for x in runs], float), np.array([x.ranks for x in runs], float),
                   np.array([x.nb for x in runs], float))
    for x, f in zip(runs, fitted):
        config = HplConfig(n=x.n, nb=x.nb, p=x.p, q=x.q, bcast=1, depth=1, swap=0)  # both scenarios: a ring, the binary exchange
        law = cost.estimate_s(config)
        mem_cols = "       -        -"
        if x.wall_s >= args.min_memory_wall and mem is not None:
            fm = (mem[0] + mem[1] * x.ranks + mem[2] * x.ranks * x.n) / 1e6
            mem_cols = f"{fm / x.pss_mb:8.2f} {cost.estimate_memory_bytes(config) / 1e6 / x.pss_mb:8.2f}"
        print(f"{x.n:8d} {x.p:>2}x{x.q:<3} {x.wall_s:9.2f} {f / x.wall_s:9.2f} {law / x.wall_s:9.2f} "
              f"{x.pss_mb:8.1f} {mem_cols}  {x.source}")
    return 0


if __name__ == "__main__":
    run_main(main)
