"""E63: does a dgemm law of the Dahu calibrations' form (M-2: intercept, mnk, mn, mk, nk),
fitted on their kind of design (uniform product up to 1e10, sides up to 15,012), price
HPL's thin update pieces (m x NB x NB) right against a big update call (m x m x NB)?

    python e63_pieces.py design OUT.csv      # the design's rows, then HPL's shapes x 25
    hplsim calibrate dgemm --experiment OUT.csv --warmup 2 --seed 54 --out mixed.zip
    python e63_pieces.py analyse mixed.zip   # measured against the fitted law

Both kinds of call are measured in one shuffled run, so the machine's drift (this VM's
speed moved by 20 % between runs) is shared. The HPL rows are the ones with a leading
dimension (HPL's 7,816 for the full grid's 7,812 local rows at N = 250,000).
"""
import sys

import numpy as np
import pandas as pd

from hplsim.calibrate.archive import read_archive
from hplsim.calibrate.designs import blas_design
from hplsim.models.kernel_fit import fit_kernel

NB, LD = 128, 7816
HEIGHTS = (7812, 5000, 2500)  # the full grid's local height at N = 250,000, and two later
REPEATS = 25
BOOT = 2000  # bootstrap draws for the measured ratio's 90 % interval (seeded)


def design(out: str, seed: int = 53) -> None:
    points = blas_design("dgemm", "uniform-product", rows=500, seed=seed, max_product=1e10, max_side=15012).points
    rows = [dict(m=r.m, n=r.n, k=r.k, lda="", ldb="", ldc="") for r in points.itertuples()]
    for m in HEIGHTS:
        for n in (NB, 2 * NB, m):
            rows += [dict(m=m, n=n, k=NB, lda=LD, ldb=LD, ldc=LD)] * REPEATS
    pd.DataFrame(rows).to_csv(out, index=False)


def analyse(archive: str) -> None:
    calls = read_archive(archive).table("results/dgemm.csv").assign(kernel="dgemm")
    hpl = calls.lda.eq(LD) & calls.ldb.eq(LD)  # the calibrator records the minimum for the others
    print(f"{len(calls)} calls: {int((~hpl).sum())} of the uniform-product design, {int(hpl.sum())} of HPL's shapes")
    print("core | m | piece, measured | its share of m x m x NB | ratio [90 % bootstrap] | law's piece | law's share | law's ratio | law / measured piece")
    rng = np.random.default_rng(63)
    for core, sub in [("all", calls)] + list(calls.groupby("core")):
        fit = fit_kernel(sub[~hpl.loc[sub.index]], "dgemm", mean="M2", noise="N0")
        by = {key: g.to_numpy() for key, g in sub[hpl.loc[sub.index]].groupby(["m", "n"])["duration"]}
        med = {key: float(np.median(v)) for key, v in by.items()}
        for m in HEIGHTS:
            piece, share = med[(m, NB)], med[(m, m)] * NB / m
            boot = [np.median(rng.choice(by[(m, NB)], len(by[(m, NB)]))) /
                    np.median(rng.choice(by[(m, m)], len(by[(m, m)]))) * m / NB for _ in range(BOOT)]
            lo, hi = np.quantile(boot, [0.05, 0.95])
            lp = float(fit.predict({"m": m, "n": NB, "k": NB}))
            ls = float(fit.predict({"m": m, "n": m, "k": NB})) * NB / m
            print(f"{core} | {m} | {piece * 1e3:.3f} ms | {share * 1e3:.3f} ms | {piece / share:.3f} [{lo:.3f}, {hi:.3f}] | "
                  f"{lp * 1e3:.3f} ms | {ls * 1e3:.3f} ms | {lp / ls:.3f} | {lp / piece:.3f}")
        print(f"{core} | law: " + ", ".join(f"{t} {v:.4g}" for t, v in fit.coefficients.items()))


if __name__ == "__main__":
    {"design": design, "analyse": analyse}[sys.argv[1]](sys.argv[2])
