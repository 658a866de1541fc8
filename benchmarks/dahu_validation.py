#!/usr/bin/env python3
"""Dahu, 1,024 ranks (32x32), the 2019 validation runs: hplsim's prediction against the
mean of the real runs (2019-03, eight per N, the two known outliers at N = 175,000
dropped) and the authors' own prediction (D2_het, hpl_simulation_paper.csv) beside it.

Per run: hplsim's Gflops, the error against the real mean, the authors' D2_het and its
error, the simulation's wall time and memory (PSS). At the end, per variant: the largest
and the mean absolute error over the N that ran, and D2_het's over the same N.

Variants of the published models: stochastic (per-CPU polynomial + noise, the paper's D2:
what `hplsim predict --preset dahu -N N --seed SEED` runs, to the bit) and deterministic
(same means, no noise). Runs are kept in a sweep results store: the same command run again
runs only what the store lacks (the default store is named after the emulated HPL's
build, so that a change to the emulation's C code starts a new one).

    .venv/bin/python benchmarks/dahu_validation.py                  # N = 50k, 100k, 250k, 500k
    .venv/bin/python benchmarks/dahu_validation.py --n 50000 75000 100000 --variants stochastic deterministic
    .venv/bin/python benchmarks/dahu_validation.py --jobs 2 --dry-run

The machine moved (data README). The thesis's N-sweep with the cluster's cooling 'bad' and
'good' (hpl_cooling_2020.csv) holds the 2019-03 runs and others of 2019-10 at the 'bad'
level, and runs of 2018-10 and October 2020 at the 'good' one, the January 2020
factorial's, about 14 % above. `--machine cooling-good` (or `cooling-bad`) compares the
same runs with those means and with the authors' prediction for them (2020-09 for 'good');
with `--model` (e.g. E42's median CPUs, a stand-in for the good machine's) it asks what a
model of the factorial's machine does across N (docs/validation.md E58):

    .venv/bin/python benchmarks/dahu_validation.py --machine cooling-good --model median.yaml -N 50000 100000 250000
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (REPO, Parser, prepare_store, reference_data, require_files, run_main,  # noqa: E402
                     stored_by_other_builds, stored_statuses, sweep_text, warn_other_builds)

from hplsim.errors import HplsimError  # noqa: E402
from hplsim.hpl.cost import estimate_memory_bytes, estimate_s  # noqa: E402  (how far the cost law lands)
from hplsim.outputs import write_json  # noqa: E402
from hplsim.platform.spec import IPROBE_REPORTS  # noqa: E402
from hplsim.presets import get_preset  # noqa: E402
from hplsim.processes import run_dir  # noqa: E402
from hplsim.sweep.executors import LocalExecutor  # noqa: E402
from hplsim.sweep.plan import make_plan  # noqa: E402
from hplsim.sweep.run import run_sweep, work_dir  # noqa: E402
from hplsim.sweep.spec import SweepSpec, parse_spec  # noqa: E402
from hplsim.sweep.store import ResultStore  # noqa: E402

SOURCE = "benchmarks/dahu_validation.py"
DEFAULT_N = [50_000, 100_000, 250_000, 500_000]  # issue 18's N-sweep
VARIANTS = {"stochastic": {"name": "stochastic"}, "deterministic": {"name": "deterministic", "noise": False}}
WITHIN = 5.0  # %


MACHINES = {"2019-03": "the 2019-03 runs (hpl_reality.csv), the preset's models' machine",
            "cooling-bad": "cooling 'bad' (hpl_cooling_2020.csv: 2019-03 and 2019-10 runs)",
            "cooling-good": "cooling 'good' (hpl_cooling_2020.csv: 2018-10 and 2020-10 runs), the factorial's level"}


def reality(data: Path, machine: str = "2019-03") -> pd.Series:
    """The real runs' mean Gflops per N on `machine` (MACHINES)."""
    if machine != "2019-03":
        return _cooling(data, machine, "reality")
    df = pd.read_csv(data / "hpl_reality.csv")
    df = df[df.date == "2019-03"]
    df = df[~((df.matrix_size == 175000) & (df.gflops > 22000))]  # the two known outliers
    return df.groupby("matrix_size").gflops.mean()


def paper(data: Path, model: str) -> pd.Series:
    df = pd.read_csv(data / "hpl_simulation_paper.csv")
    return df[df.model == model].groupby("matrix_size").gflops.mean()


def authors(data: Path, machine: str = "2019-03") -> tuple[str, pd.Series]:
    """The authors' prediction of `machine`'s runs, and its column's name: the paper's
    D2_het for 2019-03, otherwise their prediction for the cooling experiment (2019-04 for
    'bad', 2020-09 for 'good', with the models of the time)."""
    if machine == "2019-03":
        return "D2_het", paper(data, "D2_het")
    return "authors", _cooling(data, machine, "simulation")


def _cooling(data: Path, machine: str, mode: str) -> pd.Series:
    df = pd.read_csv(data / "hpl_cooling_2020.csv")
    df = df[(df["mode"] == mode) & (df.cooling == machine.removeprefix("cooling-"))]
    return df.groupby("matrix_size").gflops.mean()


def sweep_spec(ns: list[int], seeds: list[int], variants: list[str], iprobe: str, build: str,
               platform_xml: Path | None = None, model: Path | None = None) -> SweepSpec:
    """The preset's HPL parameters at every N, its platform or `platform_xml` (with the
    what-if on MPI_Iprobe when asked) and its model or `model`, noisy and/or not."""
    preset = get_preset("dahu")
    hpl: dict = {k: [v] for k, v in preset.config(min(ns)).as_dict().items() if k not in ("p", "q", "n")}
    base = preset.config(min(ns))
    hpl.update(n=ns, grids=[[base.p, base.q]])
    path = platform_xml.resolve() if platform_xml else preset.platform
    platform: dict = {"path": str(path), "ranks_per_host": preset.ranks_per_host}
    if iprobe != "arrived":  # the published platform's (a variation would change nothing else)
        platform["variations"] = [{"name": f"iprobe {iprobe}", "iprobe_reports": iprobe}]
    doc = {"name": "dahu-validation", "hpl": hpl, "seeds": seeds, "platform": platform,
           "model": {"path": str(model.resolve() if model else preset.model), "variations": [VARIANTS[v] for v in variants]}}
    return parse_spec(doc, SOURCE, REPO, sweep_text(SOURCE, build, doc))


def _error(pred: float, ref: float) -> float:
    return 100 * (pred - ref) / ref


def summarise(rows: list[dict], real: pd.Series, d2: pd.Series) -> dict | None:
    """One variant's runs: per N the mean over its seeds, its error against the real mean;
    the largest and the mean absolute error, and the authors' (`d2`) mean absolute error on
    the same N. None when no run is at an N with real runs."""
    per_n: dict[int, list[float]] = {}
    for r in rows:
        per_n.setdefault(r["n"], []).append(r["gflops"])
    errors = {n: _error(statistics.mean(g), real[n]) for n, g in sorted(per_n.items()) if n in real}
    if not errors:
        return None
    theirs = [abs(_error(d2[n], real[n])) for n in errors if n in d2]
    worst = max(errors, key=lambda n: abs(errors[n]))
    return {"n": sorted(errors), "errors_pct": errors, "worst_n": worst, "max_abs_error_pct": abs(errors[worst]),
            "mean_abs_error_pct": statistics.mean(map(abs, errors.values())),
            "within_5pct": sum(abs(e) <= WITHIN for e in errors.values()),
            "paper_d2_mean_abs_error_pct": statistics.mean(theirs) if theirs else None}


def _num(x: float, spec: str, unit: str = "") -> str:
    """A figure, or a dash where the data have none (an N without real runs)."""
    width = int(spec.lstrip("+").split(".")[0]) + len(unit)
    return f"{x:{spec}}{unit}" if x == x else f"{'-':>{width}}"


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog=SOURCE, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-N", "--n", type=int, nargs="+", default=DEFAULT_N, help="problem sizes (default: %(default)s)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1], help="seeds, one run each (default: 1)")
    ap.add_argument("--variants", nargs="+", default=["stochastic"], choices=list(VARIANTS),
                    help="model variants (default: stochastic, the preset's)")
    ap.add_argument("--iprobe-reports", choices=IPROBE_REPORTS, default="arrived",
                    help="what-if: which messages MPI_Iprobe reports (docs/formats/platform.md); Dahu's "
                         "calibration did not measure it, the published platform is 'arrived'")
    ap.add_argument("--platform", type=Path, metavar="XML",
                    help="another platform file instead of the preset's (a what-if, e.g. the published one, "
                    "src/hplsim/data/dahu/platform.xml, with Dahu's idle network: docs/validation.md E52); "
                    "its runs are keyed apart from the preset's")
    ap.add_argument("--model", type=Path, metavar="YAML",
                    help="another model file instead of the preset's (a what-if, e.g. E42's median CPUs, "
                         "docs/experiments/e52_median_inputs.sh); its runs are keyed apart from the preset's")
    ap.add_argument("--machine", choices=list(MACHINES), default="2019-03",
                    help="the real runs to compare with: " + "; ".join(f"{k}: {v}" for k, v in MACHINES.items())
                         + " (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="simulations at once (default: 1)")
    ap.add_argument("--store", type=Path, metavar="PATH",
                    help="results store (the sweep's format); default results/dahu-validation-<emulated HPL "
                         "build>.sqlite in the repository")
    ap.add_argument("--retry-failed", action="store_true", help="run again the runs stored as failed")
    ap.add_argument("--dry-run", action="store_true", help="list what would run (and what is stored); run nothing")
    ap.add_argument("--data", help="folder holding dahu/ (default reference/, shipped with the project)")
    ap.add_argument("--json", type=Path, help="write the rows and the summary to this JSON file")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        raise HplsimError(f"--jobs must be at least 1, got {args.jobs}")
    if any(not 0 <= s < 2**64 for s in args.seeds):
        raise HplsimError("--seeds must be in 0 .. 2**64-1")
    ns = sorted(set(args.n))
    seeds = list(dict.fromkeys(args.seeds))
    variants = list(dict.fromkeys(args.variants))

    require_files(platform=args.platform, model=args.model)
    data = reference_data(args.data)
    real = reality(data, args.machine)
    theirs, d2 = authors(data, args.machine)
    build, store_path = prepare_store("dahu-validation", args.store, args.json, args.dry_run)
    spec = sweep_spec(ns, seeds, variants, args.iprobe_reports, build, args.platform, args.model)
    with run_dir("plan") as tmp:  # a dry run writes nothing (the sweep writes its derived model again)
        plan = make_plan(spec, tmp if args.dry_run else work_dir(store_path), spec.timeout)
    if plan.invalid:
        raise HplsimError(f"{plan.invalid[0].description}: {plan.invalid[0].reason}")
    hashes = {t.hash for t in plan.tasks}

    if args.dry_run:
        stored = stored_statuses(store_path, hashes)
        for t in plan.tasks:
            state = {"ok": "stored", "failed": "failed before"}.get(stored.get(t.hash, ""), "to run")
            print(f"N={t.config.n:<8} {plan.variants[t.variant].model_variation:<14} seed {t.seed:<4} {state}")
        print(f"{len(plan.tasks)} runs: {sum(s == 'ok' for s in stored.values())} stored, "
              f"{len(plan.tasks) - len(stored)} to run; store {store_path}")
        return 0

    with ResultStore(store_path) as store:
        warn_other_builds(stored_by_other_builds(store, hashes, build), build)
    run_sweep(spec, store_path, LocalExecutor(args.jobs), args.retry_failed, progress=sys.stderr.isatty())
    with ResultStore(store_path, create=False) as store:
        stored_rows = {r["hash"]: r for r in store.runs() if r["hash"] in hashes}

    rows = []
    print(f"real runs: {MACHINES[args.machine]}")
    print(f"{'N':>7} {'variant':>13} {'seed':>5} {'hplsim':>9} {'real':>9} {'error':>8} {theirs:>9} "
          f"{'D2 error' if theirs == 'D2_het' else 'their err':>9} {'sim wall s':>11} {'PSS MB':>8} {'est/wall':>8} "
          f"{'est/PSS':>7}", flush=True)
    for t in sorted(plan.tasks, key=lambda t: (t.variant, t.config.n, t.seed)):
        n, variant = t.config.n, plan.variants[t.variant].model_variation
        ref, paper_d2 = real.get(n, float("nan")), d2.get(n, float("nan"))
        r = stored_rows.get(t.hash)
        if not r or r["status"] != "ok":
            print(f"{n:>7} {variant:>13} {t.seed:>5} failed: {(r or {}).get('error') or 'not run'}")
            continue
        row = dict(n=n, variant=variant, seed=t.seed, gflops=r["gflops"], real_gflops=ref,
                   error_pct=_error(r["gflops"], ref), paper_d2_gflops=paper_d2, paper_d2_error_pct=_error(paper_d2, ref),
                   sim_wall_s=r["sim_wall_s"], sim_memory_bytes=r["sim_memory_bytes"], time_s=r["time_s"])
        rows.append(row)
        print(f"{n:>7} {variant:>13} {t.seed:>5} {r['gflops']:>9.0f} {_num(ref, '9.0f')} "
              f"{_num(row['error_pct'], '+7.1f', '%')} {_num(paper_d2, '9.0f')} {_num(row['paper_d2_error_pct'], '+8.1f', '%')} "
              f"{r['sim_wall_s']:>11.1f} {r['sim_memory_bytes'] / 1e6:>8.0f} {estimate_s(t.config) / r['sim_wall_s']:>8.2f} "
              f"{estimate_memory_bytes(t.config) / r['sim_memory_bytes']:>7.2f}")

    summaries = {v: summarise([r for r in rows if r["variant"] == v], real, d2) for v in variants}
    summaries = {v: s for v, s in summaries.items() if s}
    for variant, s in summaries.items():
        d2_text = (f"; {theirs} {s['paper_d2_mean_abs_error_pct']:.1f} % on the same N"
                   if s["paper_d2_mean_abs_error_pct"] is not None else "")
        print(f"{variant}: {s['within_5pct']} of {len(s['n'])} N within 5 %, largest |error| "
              f"{s['max_abs_error_pct']:.1f} % (N = {s['worst_n']:,}), mean |error| {s['mean_abs_error_pct']:.1f} %"
              f"{d2_text}")
    if args.json:
        write_json(args.json, {"rows": rows, "summary": summaries, "store": str(store_path), "build": build,
                                "platform": str(args.platform) if args.platform else "builtin:dahu",
                                "model": str(args.model) if args.model else "builtin:dahu", "machine": args.machine},
                   "the figures (--json)")
    return 0 if len(rows) == len(plan.tasks) else 1


if __name__ == "__main__":
    run_main(main)
