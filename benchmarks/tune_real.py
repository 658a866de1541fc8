#!/usr/bin/env python3
"""`hplsim tune` against reality on this machine (issue 23).

1. The closed loop (benchmarks/validate_local.py, docs/validate.md): calibrate, fit the
   kernel models and the network here, run the real HPL on the closed-loop configurations.
2. The models' uncertainty: each kernel's law is scaled to every calibration pass and
   traced run (the fit's `group_factors`, kernel-fits.json); their relative spread, as a
   prediction for one more state of the machine (sd · sqrt(1 + 1/G)), is the kernel's
   `uncertainty.rsd` in a copy of the model file (docs/tune.md, Intervals).
3. Intervals against reality: every closed-loop configuration predicted with --replicates
   seeds and that model; how often the real runs' mean falls in the 90 % interval, and the
   intervals' median width.
4. `tune` on this machine's platform and models at N = --n, then the recommendation and a
   grid of >= 24 configurations around it (NB x DEPTH x BCAST x PFACT) run for real,
   interleaved and shuffled: where the recommendation ranks, how far from the grid's best.

Targets (issue 23): the recommendation within 2 % of the grid's best; the real mean inside
the interval for >= 80 % of the closed-loop configurations, with a median width that says
something (printed). Real HPL runs need a quiet machine:

    .venv/bin/python benchmarks/tune_real.py --out tune-real-DATE --repeat 5
    .venv/bin/python benchmarks/tune_real.py --tiny --out /tmp/tune-real-tiny   # checks it works (minutes)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_main, write_json  # noqa: E402

from hplsim.hpl.config import HplConfig  # noqa: E402
from hplsim.models.modelfile import load_model, save_model  # noqa: E402
from hplsim.platform.spec import load_platform  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.calibrate.local import CalibrationSettings  # noqa: E402
from hplsim.real.run import Launch, run_real  # noqa: E402
from hplsim.calibrate.hpl_designs import default_configs  # noqa: E402
from hplsim.validate.loop import validate_local  # noqa: E402
from hplsim.tune.constraints import DEFAULT_NBS  # noqa: E402
from hplsim.models.intervals import interval, law_rsd  # noqa: E402
from hplsim.tune.run import TuneRequest, run_tune  # noqa: E402

TINY_CONFIGS = [HplConfig(n=n, nb=nb, p=1, q=2, depth=d) for n in (1000, 1500) for nb in (64, 128) for d in (0, 1)]


def uncertainty_from_fits(fits: dict) -> dict[str, float]:
    """kernel -> its law's relative uncertainty across the calibration's groups
    (models.intervals.law_rsd, what `hplsim fit --method time-share` writes)."""
    rsd = {k: law_rsd(f.get("group_factors", [])) for k, f in fits.items()}
    return {k: v for k, v in rsd.items() if v is not None}


def grid_around(best: dict, n: int) -> list[HplConfig]:
    """>= 24 configurations around the recommendation: 3 NB (its neighbours in tune's list)
    x DEPTH 0/1 x 2 BCAST x 2 PFACT, the recommendation among them."""
    i = DEFAULT_NBS.index(best["nb"]) if best["nb"] in DEFAULT_NBS else 2
    nbs = sorted({DEFAULT_NBS[j] for j in (i - 1, i, i + 1) if 0 <= j < len(DEFAULT_NBS)} | {best["nb"]})
    while len(nbs) < 3:
        nbs.append(DEFAULT_NBS[len(nbs) + i])
    bcasts = [best["bcast"], 1 if best["bcast"] != 1 else 2]
    pfacts = [best["pfact"], 1 if best["pfact"] != 1 else 2]
    base = {k: best[k] for k in ("p", "q", "rfact", "swap")}
    out = [HplConfig(n=n, nb=nb, depth=d, bcast=b, pfact=pf, **base)
           for nb, d, b, pf in itertools.product(nbs, (0, 1), bcasts, pfacts)]
    rec = HplConfig(n=n, **{k: best[k] for k in ("nb", "p", "q", "pfact", "rfact", "bcast", "depth", "swap")})
    return list(dict.fromkeys([rec, *out]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="output directory (default: tune-real-DATE/)")
    ap.add_argument("--repeat", type=int, default=3, help="real runs per configuration")
    ap.add_argument("--min-seconds", type=float, default=10.0, help="short configurations run until this much HPL time")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--replicates", type=int, default=3, help="seeds per closed-loop prediction")
    ap.add_argument("--n", type=int, default=10000, help="problem size of the tune and of the real grid")
    ap.add_argument("--budget", default="10m", help="tune's budget of simulation time")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes and a quick calibration: checks the script works")
    ap.add_argument("--json", help="also write the report as JSON here")
    args = ap.parse_args()
    if args.tiny:
        args.n, args.repeat, args.min_seconds, args.budget, args.replicates = 1500, 1, 0.0, "60s", 2

    budget_s = _budget(args.budget)  # before an hour of measurements, not after
    out = Path(args.out or f"tune-real-{time.strftime('%Y%m%d-%H%M%S')}")
    say = lambda m: print(f"  {m}", file=sys.stderr, flush=True)  # noqa: E731
    load0 = os.getloadavg()
    t0 = time.monotonic()
    print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} on {os.cpu_count()} cores", flush=True)

    # 1. the closed loop (reused when already in --out)
    configs = TINY_CONFIGS if args.tiny else default_configs()
    report = validate_local(configs, out / "validation", repeat=args.repeat, seed=args.seed,
                            settings=CalibrationSettings.quick() if args.tiny else CalibrationSettings(),
                            reuse=True, progress=say, min_seconds=args.min_seconds)
    platform_path = Path(report.files["platform"])
    fits = json.loads((out / "validation" / "kernel-fits.json").read_text())

    # 2. the models' uncertainty, from the spread of the calibration's groups
    model = load_model(Path(report.files["model"]))
    model.uncertainty = uncertainty_from_fits(fits)
    model_path = out / "model-with-uncertainty.yaml"
    save_model(model, model_path)
    print("kernel uncertainty (rsd, %): " + ", ".join(f"{k} {100 * v:.2g}" for k, v in model.uncertainty.items()))

    # 3. the intervals against the closed loop's real runs
    platform = load_platform(platform_path)
    source = ModelSource.from_path(model_path)
    inside, widths, rows = 0, [], []
    for row in report.rows:
        runs = [predict(row.config, platform, source, args.seed + r, breakdown=True) for r in range(args.replicates)]
        iv = interval([p.gflops for p in runs], max(p.model_rsd for p in runs))
        real = statistics.fmean(r.gflops for r in row.real.runs)
        hit = iv.low <= real <= iv.high
        inside += hit
        widths.append(100 * (iv.high - iv.low) / iv.central)
        rows.append({"config": row.config.as_dict(), "predicted": iv.central, "interval": [iv.low, iv.high],
                     "real_mean": real, "real_runs": len(row.real.runs), "inside": hit})
    coverage = inside / len(rows)
    print(f"closed loop: real mean inside the 90 % interval for {inside} of {len(rows)} configurations "
          f"({100 * coverage:.0f} %; target >= 80 %); median width {statistics.median(widths):.2g} % of the "
          f"central value (range {min(widths):.2g}-{max(widths):.2g} %)")

    # 4. tune, then the recommendation and the grid for real
    result = run_tune(TuneRequest(budget_s=budget_s, seed=args.seed, platform_path=platform_path,
                                  model_path=model_path, n=args.n, db=out / "tune.sqlite", jobs=1, say=say))
    best = result["best"]
    print(f"tune: N={best['n']} NB={best['nb']} {best['p']}x{best['q']} PFACT {best['pfact']} RFACT {best['rfact']} "
          f"BCAST {best['bcast']} DEPTH {best['depth']} SWAP {best['swap']}: {best['gflops']:.4g} Gflops "
          f"[{best['interval'][0]:.4g}, {best['interval'][1]:.4g}] ({result['search']['summary']})")
    grid = grid_around(best, args.n)
    real = run_real(grid, Launch.choose("local"), repeat=args.repeat, out=out / "grid.zip", shuffle=True,
                    seed=args.seed, progress=say, min_seconds=args.min_seconds)
    means = {r.config: statistics.fmean(x.gflops for x in r.runs) for r in real.results}
    ranked = sorted(means, key=lambda c: -means[c])
    rec = grid[0]
    rank = ranked.index(rec) + 1
    gap = 100 * (means[rec] / means[ranked[0]] - 1)
    print(f"real grid: {len(grid)} configurations x {args.repeat}; the recommendation ranks {rank} of {len(grid)}, "
          f"{means[rec]:.4g} Gflops, {gap:+.2f} % from the grid's best ({means[ranked[0]]:.4g}: "
          f"NB={ranked[0].nb} DEPTH={ranked[0].depth} BCAST={ranked[0].bcast} PFACT={ranked[0].pfact}); "
          f"target: within 2 %; its real mean {'inside' if best['interval'][0] <= means[rec] <= best['interval'][1] else 'outside'} "
          "its interval")
    load1 = os.getloadavg()
    print(f"total {time.monotonic() - t0:.0f} s; load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    write_json(args.json, {"coverage": coverage, "median_width_pct": statistics.median(widths), "closed_loop": rows,
                           "uncertainty": model.uncertainty, "tune": result, "rank": rank, "gap_pct": gap,
                           "grid": [{**c.as_dict(), "real_mean": means[c]} for c in grid],
                           "load_average_before": list(load0), "load_average_after": list(load1)})


def _budget(text: str) -> float:
    from hplsim.tune.constraints import parse_budget

    return parse_budget(text)


if __name__ == "__main__":
    run_main(main)
