#!/usr/bin/env python3
"""A closed-loop error, split: the kernel models against the calls a traced real run made,
and the time between the kernels against the emulation's (lab notebook E88).

    .venv/bin/hplsim run-real -N 10000 --nb 128 -P 2,1 -Q 1,2 --repeat 3 --trace --out traced.zip
    .venv/bin/python benchmarks/trace_vs_model.py traced.zip --model VAL/model.yaml --platform VAL/platform.yaml

prints, for each real run and rank, HPL's region, the measured calls' total, the model's for
the same calls and the time between them; each configuration's prediction the same way
(from `predict --trace`, same model, platform and seed); each kernel's measured and
modelled totals; and the labels between calls (``before>after``) that differ most between
the real runs (median) and the emulation.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_main  # noqa: E402

import pandas as pd  # noqa: E402

from hplsim.emulate.trace import TraceRequest, read_trace  # noqa: E402
from hplsim.hpl.config import HplConfig  # noqa: E402
from hplsim.platform.spec import load_platform  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.validate.against_trace import gaps, kernel_totals, modelled, rank_totals, read_traced, simulated_calls  # noqa: E402

CONFIG_FIELDS = tuple(HplConfig.__dataclass_fields__)


def _grid(row) -> str:
    return f"N={row.n} NB={row.nb} {row.p}x{row.q} d{row.depth} b{row.bcast}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traced", type=Path, help="archive of `hplsim run-real --trace`")
    ap.add_argument("--model", type=Path, required=True, help="model file the prediction uses")
    ap.add_argument("--platform", type=Path, help="platform spec: also simulate each configuration with --trace")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=8, help="labels between calls to print")
    args = ap.parse_args()

    real = read_traced(args.traced)
    source = ModelSource.from_path(args.model)
    real.calls["model"] = modelled(real.calls, source.model)
    runs = real.runs.assign(config=lambda d: d.apply(_grid, axis=1))
    config_of = dict(zip(runs["run"], runs["config"]))
    real.calls["config"] = real.calls["run"].map(config_of)
    pd.set_option("display.width", 200)

    totals = rank_totals(real.calls, real.regions).merge(runs[["run", "config", "gflops"]], on="run")
    totals["model_error_pct"] = 100.0 * (totals["model"] / totals["kernels"] - 1.0)
    print("real runs (s): HPL's region, its calls measured and as modelled, the time between calls")
    print(totals[["config", "run", "rank", "gflops", "region", "kernels", "model", "model_error_pct", "between"]]
          .round(3).to_string(index=False))

    real_gaps = gaps(real.calls, real.regions)
    real_gaps["config"] = real_gaps["run"].map(config_of)
    sim_gaps = {}
    if args.platform:
        platform = load_platform(args.platform)
        print("\npredictions (s), same model, platform and seed:")
        for _, row in runs.drop_duplicates("config").iterrows():
            config = HplConfig(**{f: row[f].item() if hasattr(row[f], "item") else row[f] for f in CONFIG_FIELDS})
            with tempfile.TemporaryDirectory() as tmp:
                pred = predict(config, platform, source, args.seed, trace=TraceRequest(Path(tmp) / "trace"))
                trace = read_trace(Path(tmp) / "trace")
            calls, regions = simulated_calls(trace.events, trace.meta)
            sim = rank_totals(calls, regions)
            print(f"  {row.config}: {pred.gflops:.2f} Gflops, region " +
                  ", ".join(f"rank {r.rank} {r.region:.3f} = calls {r.kernels:.3f} + between {r.between:.3f}"
                            for r in sim.itertuples()))
            sim_gaps[row.config] = gaps(calls, regions)

    print("\nkernels: measured and modelled totals over the runs of each configuration (s)")
    kt = kernel_totals(real.calls, ["config"])
    print(kt[kt["measured"] > 1e-3].round({"measured": 3, "model": 3, "error_pct": 1}).to_string(index=False))

    print(f"\nbetween calls, per rank: the real runs' median and the prediction's, the {args.top} labels that differ most (s)")
    for config, g in real_gaps.groupby("config"):
        per_run = g.groupby(["rank", "label", "run"])["seconds"].sum().groupby(["rank", "label"]).median()
        table = per_run.rename("real").to_frame()
        if config in sim_gaps:
            table = table.join(sim_gaps[config].groupby(["rank", "label"])["seconds"].sum().rename("predicted"),
                               how="outer").fillna(0.0)
            table["real - predicted"] = table["real"] - table["predicted"]
            table = table.reindex(table["real - predicted"].abs().sort_values(ascending=False).index)
        else:
            table = table.sort_values("real", ascending=False)
        print(f"  {config}")
        print(table.head(args.top).round(4).to_string())


if __name__ == "__main__":
    run_main(main)
