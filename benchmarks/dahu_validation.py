#!/usr/bin/env python3
"""Dahu, 1,024 ranks (32x32), the 2019 validation runs: hplsim's prediction against the
mean of the real runs (2019-03, known outliers dropped) and the paper's own prediction.

Both variants of the published models are run: stochastic (per-CPU polynomial + noise,
the paper's D2) and deterministic (same means, no noise). One simulation at a time.

    .venv/bin/python benchmarks/dahu_validation.py [--n 50000 75000 100000] [--seeds 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import reference_dir, write_json  # noqa: E402

from hplsim.errors import HplsimError  # noqa: E402
from hplsim.models.modelfile import load_model, save_model  # noqa: E402
from hplsim.platform.spec import IPROBE_REPORTS, load_platform  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.presets import get_preset  # noqa: E402


def reality(data: Path) -> pd.Series:
    df = pd.read_csv(data / "hpl_reality.csv")
    df = df[df.date == "2019-03"]
    df = df[~((df.matrix_size == 175000) & (df.gflops > 22000))]  # the two known outliers
    return df.groupby("matrix_size").gflops.mean()


def paper(data: Path, model: str) -> pd.Series:
    df = pd.read_csv(data / "hpl_simulation_paper.csv")
    return df[df.model == model].groupby("matrix_size").gflops.mean()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[50000, 75000, 100000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--variants", nargs="+", default=["stochastic", "deterministic"],
                    choices=["stochastic", "deterministic"])
    ap.add_argument("--data", help="folder holding dahu/ (default ../shared/data)")
    ap.add_argument("--json", help="write the rows to this JSON file")
    ap.add_argument("--iprobe-reports", choices=IPROBE_REPORTS, default="arrived",
                    help="what-if: which messages MPI_Iprobe reports (docs/formats/platform.md); Dahu's "
                         "calibration did not measure it, the published platform is 'arrived'")
    args = ap.parse_args()

    data = reference_dir(args.data)
    real, d2 = reality(data), paper(data, "D2_het")
    preset = get_preset("dahu")
    platform = dataclasses.replace(load_platform(preset.platform, preset.ranks_per_host),
                                   iprobe_reports=args.iprobe_reports)
    tmp = Path(tempfile.mkdtemp(prefix="hplsim-dahu-"))
    save_model(load_model(preset.model).without_noise(), tmp / "deterministic.yaml")
    models = {"stochastic": ModelSource.from_path(preset.model, "dahu (per-CPU polynomial + noise)"),
              "deterministic": ModelSource.from_path(tmp / "deterministic.yaml", "dahu (no noise)")}

    rows = []
    print(f"{'N':>7} {'variant':>13} {'seed':>5} {'predicted':>10} {'real':>9} {'error':>8} "
          f"{'paper D2':>9} {'sim wall s':>11} {'PSS MB':>8}", flush=True)
    for n in args.n:
        for variant in args.variants:
            for seed in args.seeds:
                try:
                    r = predict(preset.config(n), platform, models[variant], seed=seed)
                except HplsimError as e:  # e.g. the mapping budget: say it, go on with the next N
                    print(f"{n:>7} {variant:>13} {seed:>5} error: {e}", flush=True)
                    continue
                ref = real.get(n, float("nan"))
                row = dict(n=n, variant=variant, seed=seed, gflops=r.gflops, real_gflops=ref,
                           error_pct=100 * (r.gflops - ref) / ref, paper_d2_gflops=d2.get(n, float("nan")),
                           sim_wall_s=r.sim_wall_s, sim_memory_bytes=r.sim_memory_bytes, time_s=r.time_s)
                rows.append(row)
                print(f"{n:>7} {variant:>13} {seed:>5} {r.gflops:>10.0f} {ref:>9.0f} {row['error_pct']:>+7.1f}% "
                      f"{row['paper_d2_gflops']:>9.0f} {r.sim_wall_s:>11.1f} {r.sim_memory_bytes / 1e6:>8.0f}",
                      flush=True)
    errors = [abs(r["error_pct"]) for r in rows if r["variant"] == "stochastic"]
    if errors:
        print(f"stochastic: max |error| {max(errors):.1f} %, mean |error| {statistics.mean(errors):.1f} %")
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
