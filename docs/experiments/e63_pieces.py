"""E63: does a dgemm law of the Dahu calibrations' form (M-2: intercept, mnk, mn, mk, nk),
fitted on their kind of design (uniform product up to 1e10, sides up to 15,012), price
HPL's thin update pieces (m x NB x NB) right against a big update call (m x m x NB)?
Measured here with both kinds of call, and on Dahu's own thin calls (dgemm_raw.csv).

    python e63_pieces.py design OUT.csv      # the design's rows, then HPL's shapes x 25
    hplsim calibrate dgemm --experiment OUT.csv --warmup 2 --seed 54 --out mixed.zip
    python e63_pieces.py analyse mixed.zip   # measured against the fitted law
    python e63_pieces.py alone OUT.csv       # HPL's shapes only, more repeats, for one core:
    hplsim calibrate dgemm --experiment OUT.csv --cores 1 --warmup 2 --seed 55 --out alone.zip
    python e63_pieces.py analyse alone.zip
    python e63_pieces.py dahu dgemm_raw.csv  # Dahu's own calls: thin against fat, by k

Both kinds of call are measured in one shuffled run, so the machine's drift (this VM's
speed moved by 20 % between runs) is shared. The HPL rows are the ones with a leading
dimension (HPL's 7,816 for the full grid's 7,812 local rows at N = 250,000).
"""
import sys

import numpy as np
import pandas as pd

from hplsim.calibrate.archive import read_archive
from hplsim.calibrate.designs import blas_design
from hplsim.models.readers import read_measurements
from hplsim.models.kernel_fit import fit_kernel

NB, LD = 128, 7816
HEIGHTS = (7812, 5000, 2500)  # the full grid's local height at N = 250,000, and two later
REPEATS = 25
BOOT = 2000  # bootstrap draws for the measured ratio's 90 % interval (seeded)


def _hpl(m: int, n: int) -> dict:
    return dict(m=m, n=n, k=NB, lda=LD, ldb=LD, ldc=LD)


def design(out: str, seed: int = 53) -> None:
    points = blas_design("dgemm", "uniform-product", rows=500, seed=seed, max_product=1e10, max_side=15012).points
    rows = [dict(m=r.m, n=r.n, k=r.k, lda="", ldb="", ldc="") for r in points.itertuples()]
    for m in HEIGHTS:
        for n in (NB, 2 * NB, m):
            rows += [_hpl(m, n)] * REPEATS
    pd.DataFrame(rows).to_csv(out, index=False)


def alone(out: str) -> None:
    rows = []
    for m in HEIGHTS[:2]:
        rows += [_hpl(m, NB)] * 300 + [_hpl(m, m)] * 60
    pd.DataFrame(rows).to_csv(out, index=False)


def _boot_medians(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """BOOT bootstrap draws of median(a), for 90 % intervals of medians and their ratios."""
    return np.median(rng.choice(a, (BOOT, len(a))), axis=1)


def analyse(archive: str) -> None:
    """Per core and pooled: the measured piece against its share of the big call, and,
    when the run holds the uniform-product design, the M-2 law fitted on it."""
    calls = read_archive(archive).table("results/dgemm.csv").assign(kernel="dgemm")
    calls["hpl"] = calls.lda.eq(LD) & calls.ldb.eq(LD)  # the calibrator records the minimum for the others
    print(f"{len(calls)} calls: {int((~calls.hpl).sum())} of the uniform-product design, {int(calls.hpl.sum())} of HPL's shapes")
    print("core | m | piece, measured | its share of m x m x NB | ratio [90 % bootstrap] | excess per m*k element"
          " | law's piece | law's share | law's ratio | law / measured piece")
    rng = np.random.default_rng(63)
    for core, sub in [("all", calls)] + list(calls.groupby("core")):
        uniform = sub[~sub.hpl]
        fit = fit_kernel(uniform, "dgemm", mean="M2", noise="N0") if len(uniform) else None
        by = {key: g.to_numpy() for key, g in sub[sub.hpl].groupby(["m", "n"])["duration"]}
        for m in HEIGHTS:
            if (m, NB) not in by:
                continue
            piece, share = float(np.median(by[(m, NB)])), float(np.median(by[(m, m)])) * NB / m
            lo, hi = np.quantile(_boot_medians(by[(m, NB)], rng) / _boot_medians(by[(m, m)] * NB / m, rng), [0.05, 0.95])
            line = (f"{core} | {m} | {piece * 1e3:.3f} ms | {share * 1e3:.3f} ms | {piece / share:.3f} [{lo:.3f}, {hi:.3f}] | "
                    f"{(piece - share) / (m * NB) * 1e9:.2f} ns")
            if fit is not None:
                lp = float(fit.predict({"m": m, "n": NB, "k": NB}))
                ls = float(fit.predict({"m": m, "n": m, "k": NB})) * NB / m
                line += f" | {lp * 1e3:.3f} ms | {ls * 1e3:.3f} ms | {lp / ls:.3f} | {lp / piece:.3f}"
            print(line)
        if fit is not None:
            print(f"{core} | law: " + ", ".join(f"{t} {v:.4g}" for t, v in fit.coefficients.items()))


K_BANDS = ((100, 700), (700, 1500), (1500, 3000), (3000, 20000))


def dahu(raw: str) -> None:
    """Dahu measured no HPL piece, but thin calls (32 <= n < 256, m >= 1000) at several k:
    within a band of k, each thin call's time over its flops at the median time per flop
    of the band's fat calls (n >= 1500, m >= 1000) on the same CPU, and that excess per
    m*k element. Not a least-squares line through the fat calls: its intercept (2-13 ms,
    an extrapolation from calls of 1e9-1e10 flops) swallows the thin calls' excess. The
    published law charges 1.55-1.63 ns per m*k element (node 5's CPUs)."""
    calls = read_measurements([raw]).kernels
    rng = np.random.default_rng(63)
    print("cpu | k band | fat calls | their Gflops (median) | thin calls | thin / flops at fat rate: median [90 % bootstrap] | excess per m*k element")
    for cpu, d in calls.groupby("cpu"):
        for lo, hi in K_BANDS:
            band = d[(d.k >= lo) & (d.k < hi) & (d.m >= 1000)]
            fat, thin = band[band.n >= 1500], band[(band.n >= 32) & (band.n < 256)]
            rate = float(np.median(fat.duration / (fat.m * fat.n * fat.k)))
            flops_time = rate * thin.m * thin.n * thin.k
            rel = (thin.duration / flops_time).to_numpy()
            lo_q, hi_q = np.quantile(_boot_medians(rel, rng), [0.05, 0.95])
            excess = np.median((thin.duration - flops_time) / (thin.m * thin.k)) * 1e9
            print(f"{cpu} | {lo}-{hi} | {len(fat)} | {2 / rate / 1e9:.1f} | {len(thin)} | "
                  f"{np.median(rel):.3f} [{lo_q:.3f}, {hi_q:.3f}] | {excess:.2f} ns")


if __name__ == "__main__":
    {"design": design, "alone": alone, "analyse": analyse, "dahu": dahu}[sys.argv[1]](sys.argv[2])
