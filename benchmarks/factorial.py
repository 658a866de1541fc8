#!/usr/bin/env python3
"""The Dahu factorial experiment (issue 18): hplsim against the real runs of January 2020
and the authors' own prediction, on any subset of its 36 configurations, on either Dahu preset
(`--preset dahu-2020`, the default: the factorial's own machine state; `--preset dahu`: the
machine of March 2019, whose CPUs the factorial did not run on; docs/presets.md).

The data (reference/dahu/hpl_factorial_nb128.csv): N = 250,000, 32x32, NB 128, Crout,
Right, every BCAST 0-5 x DEPTH 0/1 x SWAP 0/1/2, eight real runs each and one prediction of
the authors (made with their models of that time). The January 2020 machine ran ~14 %
faster than the 2019 one the dahu preset's models describe; what counts is relative:

    relative error = (pred(c) / pred(ref)) / (real(c) / real(ref)) - 1

with ref = (BCAST 2, NB 128, DEPTH 1, SWAP 0), the preset's own configuration, always run.
The absolute error, (hplsim - real) / real, is printed too.

Each run is `hplsim predict --preset PRESET -N N --bcast B --depth D --swap S --seed SEED`
(the same code path, in the sweep's pool of worker processes), kept in a sweep results
store: the same command run again runs only what the store lacks (after an interruption,
or with more configurations). The default store is named after the emulated HPL's build,
so that a change to the emulation's C code starts a new one; a change of the platform or
of the models changes the runs' keys by itself. The runs go through the sweep stage
(`run_sweep`): two processes on one store share the work (each run is claimed by the one
that starts it; the other waits for its outcome), and SIGTERM stops it as a Ctrl-C does.

    .venv/bin/python benchmarks/factorial.py                      # all 36, N = 250,000, 2 at a time
    .venv/bin/python benchmarks/factorial.py --bcast 0 2 --depth 0 --swap 0 1
    .venv/bin/python benchmarks/factorial.py --configs 2,1,0 5,1,1 --dry-run
    .venv/bin/python benchmarks/factorial.py --depth 0 1 --bcast 2 --swap 0 --model median.yaml   # a what-if
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (REPO, Parser, prepare_store, write_json, reference_data, require_files, run_main,  # noqa: E402
                     stored_by_other_builds, stored_statuses, sweep_text, warn_other_builds)

from hplsim.errors import HplsimError, warn  # noqa: E402
from hplsim.hpl.config import HplConfig  # noqa: E402
from hplsim.hpl.cost import estimate_memory_bytes, estimate_s  # noqa: E402  (how far the cost law lands)
from hplsim.presets import get_preset  # noqa: E402
from hplsim.sweep.executors import LocalExecutor  # noqa: E402
from hplsim.sweep.plan import make_plan  # noqa: E402
from hplsim.sweep.run import run_sweep, work_dir  # noqa: E402
from hplsim.sweep.spec import SweepSpec, parse_spec  # noqa: E402
from hplsim.sweep.store import ResultStore  # noqa: E402
from hplsim.sweep.tasks import Outcome, Task  # noqa: E402

Key = tuple[int, int, int]  # (BCAST, DEPTH, SWAP); NB is 128 throughout the data

CSV_NAME = "hpl_factorial_nb128.csv"
NB = 128
REFERENCE: Key = (2, 1, 0)
REAL_N = 250_000
REAL_GRID = (32, 32)
WITHIN = 0.05
SOURCE = "benchmarks/factorial.py"


def label(key: Key) -> str:
    return f"{key[0]},{NB},{key[1]},{key[2]}"


PRESETS = ("dahu-2020", "dahu")  # the first is the default: the factorial's machine state


def predict_command(key: Key, n: int, grid: tuple[int, int], seed: int,
                    platform: Path | None = None, model: Path | None = None, preset: str = PRESETS[0]) -> str:
    """The `hplsim predict` command whose figures a run's are."""
    pq = f" -P {grid[0]} -Q {grid[1]}" if grid != REAL_GRID else ""
    files = (f" --platform {platform}" if platform else "") + (f" --model {model}" if model else "")
    return (f"hplsim predict --preset {preset}{files} -N {n}{pq} --bcast {key[0]} --depth {key[1]} --swap {key[2]} "
            f"--seed {seed}")


# ----------------------------------------------------------------------------- the data


@dataclass(frozen=True)
class Measured:
    real_mean: float
    real_sd: float
    real_runs: int
    authors: float  # the authors' prediction (their `simulation` row)


def load_factorial(dahu: Path) -> dict[Key, Measured]:
    path = dahu / CSV_NAME
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise HplsimError(f"cannot read {path}: {exc}") from None
    missing = {"gflops", "mode", "bcast", "block_size", "depth", "swap"} - set(df.columns)
    if missing:
        raise HplsimError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    out: dict[Key, Measured] = {}
    for (b, d, s), g in df[df.block_size == NB].groupby(["bcast", "depth", "swap"]):
        real, sim = g[g["mode"] == "reality"].gflops, g[g["mode"] == "simulation"].gflops
        if real.empty or sim.empty:
            raise HplsimError(f"{path}: configuration {b},{NB},{d},{s} lacks its real runs or the authors' prediction")
        out[(int(b), int(d), int(s))] = Measured(float(real.mean()), float(real.std(ddof=1)), len(real),
                                                  float(sim.mean()))
    if REFERENCE not in out:
        raise HplsimError(f"{path}: no reference configuration {label(REFERENCE)}")
    return out


# ------------------------------------------------------------------------ the selection


def parse_config(text: str) -> Key:
    """``B,D,S`` or ``B,NB,D,S`` (as in issue 18's tables); NB must be 128."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) == 4:
        if values[1] != NB:
            raise HplsimError(f"--configs {text}: NB {values[1]}: the factorial's data are at NB {NB} only")
        values = [values[0], values[2], values[3]]
    if len(values) != 3:
        raise HplsimError(f"--configs {text!r}: expected BCAST,DEPTH,SWAP (e.g. 2,1,0) or BCAST,NB,DEPTH,SWAP "
                          "(e.g. 2,128,1,0)")
    return values[0], values[1], values[2]


def select(known: Iterable[Key], bcast: Sequence[int] | None = None, depth: Sequence[int] | None = None,
           swap: Sequence[int] | None = None, configs: Sequence[Key] | None = None) -> list[Key]:
    """The configurations asked for, in (BCAST, DEPTH, SWAP) order: a list (--configs), or
    every configuration whose values are among those given (an axis not given: all)."""
    known = sorted(known)
    if configs:
        if bcast or depth or swap:
            raise HplsimError("--configs lists configurations; it does not combine with --bcast, --depth, --swap")
        unknown = [c for c in configs if c not in known]
        if unknown:
            raise HplsimError(f"--configs: {label(unknown[0])} is not a configuration of the factorial "
                              "(BCAST 0-5, NB 128, DEPTH 0-1, SWAP 0-2)")
        return sorted(set(configs))
    filters = (("--bcast", bcast, 0), ("--depth", depth, 1), ("--swap", swap, 2))
    for option, values, i in filters:
        present = sorted({k[i] for k in known})
        bad = sorted(set(values or ()) - set(present))
        if bad:
            raise HplsimError(f"{option} {bad[0]}: the factorial has {option[2:].upper()} "
                              f"{', '.join(map(str, present))} only")
    return [k for k in known if all(not values or k[i] in values for _, values, i in filters)]


def simulated_as(key: Key, swap2_as_swap1: bool) -> Key:
    """The run that gives `key`'s figure: SWAP 2 (mix, threshold 64) differs from SWAP 1
    only where at most 64 local columns remain, and may borrow its run."""
    return (key[0], key[1], 1) if swap2_as_swap1 and key[2] == 2 else key


# ------------------------------------------------------------------------- the figures


def relative_error(pred: Mapping[Key, float], real: Mapping[Key, float], key: Key, ref: Key = REFERENCE) -> float:
    return (pred[key] / pred[ref]) / (real[key] / real[ref]) - 1


@dataclass(frozen=True)
class Summary:
    count: int
    within: int  # configurations within WITHIN relative
    worst: Key | None  # the largest |relative error|
    worst_error: float | None
    spearman: float | None  # rank correlation of the predicted and real means (None: < 3 values or constant)

    def as_dict(self) -> dict:
        return {"configurations": self.count, "within_5pct": self.within,
                "worst": label(self.worst) if self.worst else None, "worst_relative_error": self.worst_error,
                "spearman": self.spearman}


def summarise(pred: Mapping[Key, float], real: Mapping[Key, float], keys: Sequence[Key],
              ref: Key = REFERENCE) -> Summary:
    errors = {k: relative_error(pred, real, k, ref) for k in keys}
    worst = max(errors, key=lambda k: abs(errors[k]), default=None)
    rho = None
    if len(keys) >= 3:
        from scipy import stats  # here: the simulation workers re-import this script, and need none of it

        with warnings.catch_warnings():  # constant input: scipy warns and answers nan
            warnings.simplefilter("ignore")
            r = float(stats.spearmanr([pred[k] for k in keys], [real[k] for k in keys]).statistic)
        rho = None if math.isnan(r) else r
    return Summary(len(keys), sum(abs(e) <= WITHIN for e in errors.values()), worst,
                   errors[worst] if worst is not None else None, rho)


# ---------------------------------------------------------------------- the simulations


def sweep_spec(n: int, grid: tuple[int, int], seed: int, keys: Iterable[Key], build: str,
               platform: Path | None = None, model: Path | None = None, preset_name: str = PRESETS[0]) -> SweepSpec:
    """The preset's HPL parameters at N, on `grid`, for the product of the keys' values
    (the plan is then cut down to the keys themselves); the preset's platform and model
    unless others are given (a what-if: their digests key the runs in the store)."""
    preset = get_preset(preset_name)
    hpl: dict = {k: [v] for k, v in preset.config(n).as_dict().items() if k not in ("p", "q")}
    keys = list(keys)
    hpl.update(bcast=sorted({k[0] for k in keys}), depth=sorted({k[1] for k in keys}),
               swap=sorted({k[2] for k in keys}), grids=[list(grid)])
    doc = {"name": "factorial", "hpl": hpl, "seeds": [seed],
           "platform": {"path": str(platform.resolve() if platform else preset.platform),
                        "ranks_per_host": preset.ranks_per_host},
           "model": {"path": str(model.resolve() if model else preset.model)}}
    return parse_spec(doc, SOURCE, REPO, sweep_text(SOURCE, build, doc))


def plan_runs(spec: SweepSpec, keys: Iterable[Key], workdir: Path) -> dict[Key, Task]:
    """key -> task, for exactly the keys (the plan `run_sweep` makes of the same spec)."""
    plan = make_plan(spec, workdir, spec.timeout)
    if plan.invalid:
        raise HplsimError(f"{plan.invalid[0].description}: {plan.invalid[0].reason}")
    by_key = {(t.config.bcast, t.config.depth, t.config.swap): t for t in plan.tasks}
    return {k: by_key[k] for k in keys}


def run_missing(spec: SweepSpec, tasks: Mapping[Key, Task], store_path: Path, jobs: int, retry_failed: bool) -> None:
    """Run the tasks the store lacks through the sweep stage (`run_sweep`, the spec's product
    cut down to `tasks`): each outcome stored as it comes, each run claimed in the store, so
    that two processes on one store never run the same configuration twice."""
    stored = stored_statuses(store_path, [t.hash for t in tasks.values()])
    todo = [t for t in tasks.values() if t.hash not in stored or (retry_failed and stored[t.hash] == "failed")]
    already = sum(s == "ok" for s in stored.values())
    failed_before = sum(1 for t in tasks.values() if stored.get(t.hash) == "failed" and t not in todo)
    log(f"{len(tasks)} runs, {already} already stored"
        + (f", {failed_before} failed before (not retried: --retry-failed)" if failed_before else "")
        + f"; {len(todo)} to run" + (f", {min(jobs, len(todo))} at a time" if todo else ""))
    if not todo:
        return
    wanted = {t.hash for t in tasks.values()}
    done = 0

    def tell(task: Task, outcome: Outcome) -> None:
        nonlocal done
        done += 1
        what = (f"{outcome.gflops:,.0f} Gflops (sim {outcome.sim_wall_s:.1f} s, "
                f"{outcome.sim_memory_bytes / 1e6:,.0f} MB)" if outcome.status == "ok" else f"failed: {outcome.error}")
        c = task.config
        log(f"[{done}/{len(todo)}] {label((c.bcast, c.depth, c.swap))} N={c.n} {c.p}x{c.q}: {what}")

    try:
        # run_sweep's own lines speak of a sweep spec; this script says what it does above
        run_sweep(spec, store_path, LocalExecutor(jobs), retry_failed, progress=sys.stderr.isatty(),
                  log=lambda message: None, select=lambda t: t.hash in wanted, on_outcome=tell)
    except BaseException:  # Ctrl-C, SIGTERM or an error: what is stored stays
        log(f"stopped after {done} of {len(todo)} runs; they are stored: run the same command to continue")
        raise


def log(message: str) -> None:
    print(f"hplsim: factorial: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ report


@dataclass(frozen=True)
class Row:
    key: Key
    measured: Measured
    selected: bool
    run_key: Key  # the simulation that gives its figure (see simulated_as)
    run: dict | None  # the store's row of that simulation


def table(rows: list[Row], pred: Mapping[Key, float], real: Mapping[Key, float],
          authors: Mapping[Key, float]) -> list[str]:
    have_ref = REFERENCE in pred
    head = (f"{'BCAST,NB,DEPTH,SWAP':<20}{'real mean ± sd':>17}{'hplsim':>9}{'authors':>9}{'abs err':>9}"
            f"{'rel err':>9}{'authors rel':>12}{'sim wall s':>11}{'PSS MB':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        m, k = r.measured, r.key
        note = ("ref" if k == REFERENCE else "") + ("" if r.selected else " (not selected)") \
            + (f" (= run {label(r.run_key)})" if r.run_key != k else "")
        real_text = f"{m.real_mean:>9,.0f} ± {m.real_sd:>5,.0f}"
        if k in pred:
            run = r.run or {}
            rel = f"{100 * relative_error(pred, real, k):>+8.1f}%" if have_ref else f"{'-':>9}"
            lines.append(f"{label(k):<20}{real_text:>17}{pred[k]:>9,.0f}{m.authors:>9,.0f}"
                         f"{100 * (pred[k] - m.real_mean) / m.real_mean:>+8.1f}%{rel}"
                         f"{100 * relative_error(authors, real, k):>+11.1f}%"
                         f"{run.get('sim_wall_s') or 0:>11.1f}{(run.get('sim_memory_bytes') or 0) / 1e6:>8,.0f}"
                         f"  {note}".rstrip())
        else:
            why = (r.run or {}).get("error") or "not run"
            lines.append(f"{label(k):<20}{real_text:>17}{'-':>9}{m.authors:>9,.0f}  {note + ': ' if note else ''}{why}")
    return lines


def summary_lines(ours: Summary | None, theirs: Summary) -> list[str]:
    def worst(s: Summary | None) -> str:
        return f"{100 * s.worst_error:+.1f} % ({label(s.worst)})" if s and s.worst else "-"

    def rho(s: Summary | None) -> str:
        return f"{s.spearman:.2f}" if s and s.spearman is not None else "-"

    within = f"{ours.within} / {ours.count}" if ours else "-"
    return [
        f"{'on ' + str(theirs.count) + ' configurations':<42}{'hplsim':>18}{'authors':>22}",
        f"{'within 5 % relative':<42}{within:>18}{f'{theirs.within} / {theirs.count}':>22}",
        f"{'largest relative error':<42}{worst(ours):>18}{worst(theirs):>22}",
        f"{'Spearman, predicted vs real means':<42}{rho(ours):>18}{rho(theirs):>22}",
    ]


# -------------------------------------------------------------------------------- main


def grid_option(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise HplsimError(f"--grid {text!r}: expected PxQ, e.g. 32x32")
    return int(m.group(1)), int(m.group(2))


def parser() -> Parser:
    ap = Parser(prog="benchmarks/factorial.py", description=__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    sel = ap.add_argument_group("which configurations (default: all 36; the reference 2,128,1,0 always runs)")
    sel.add_argument("--bcast", type=int, nargs="+", metavar="B", help="BCAST values (0-5)")
    sel.add_argument("--depth", type=int, nargs="+", metavar="D", help="DEPTH values (0-1)")
    sel.add_argument("--swap", type=int, nargs="+", metavar="S", help="SWAP values (0-2)")
    sel.add_argument("--configs", nargs="+", metavar="B,D,S",
                     help="a list of configurations, each BCAST,DEPTH,SWAP or BCAST,NB,DEPTH,SWAP "
                          "(e.g. --configs 2,1,0 5,128,1,1); not with --bcast/--depth/--swap")
    run = ap.add_argument_group("the simulations")
    run.add_argument("--preset", choices=PRESETS, default=PRESETS[0],
                     help="the Dahu preset (default %(default)s, the factorial's machine state: docs/presets.md)")
    run.add_argument("-N", "--n", type=int, default=REAL_N, help="problem size (default %(default)s, that of the real runs)")
    run.add_argument("--seed", type=int, default=1, help="seed of every run (default %(default)s)")
    run.add_argument("--jobs", type=int, default=2, help="simulations at once (default %(default)s)")
    run.add_argument("--grid", default="32x32", metavar="PxQ",
                     help="process grid (default 32x32, that of the real runs; smaller only to try the benchmark)")
    run.add_argument("--swap2-as-swap1", action="store_true",
                     help="give SWAP 2 (mix, threshold 64) the figure of SWAP 1's run instead of its own: they "
                          "differ only where at most 64 local columns remain; saves a third of the runs")
    run.add_argument("--platform", type=Path, metavar="XML",
                     help="another platform file instead of the preset's (a what-if, e.g. docs/validation.md E41's wide.xml)")
    run.add_argument("--model", type=Path, metavar="YAML",
                     help="another model file instead of the preset's (a what-if, e.g. E42's median.yaml)")
    run.add_argument("--retry-failed", action="store_true", help="run again the runs stored as failed")
    out = ap.add_argument_group("store and output")
    out.add_argument("--store", type=Path, metavar="PATH",
                     help="results store (SQLite, the sweep's format: hplsim sweep show PATH reads it); default "
                          "results/factorial-<emulated HPL build>.sqlite in the repository")
    out.add_argument("--json", type=Path, metavar="PATH", help="also write every figure to this JSON file")
    out.add_argument("--dry-run", action="store_true", help="list what would run (and what is stored); run nothing")
    out.add_argument("--data", metavar="DIR", help="folder holding dahu/ (default reference/, shipped with the project)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    grid = grid_option(args.grid)
    if args.jobs < 1:
        raise HplsimError(f"--jobs must be at least 1, got {args.jobs}")
    if not 0 <= args.seed < 2**64:
        raise HplsimError("--seed must be in 0 .. 2**64-1")
    data = load_factorial(reference_data(args.data))
    configs = [parse_config(c) for c in args.configs] if args.configs else None
    selected = select(data, args.bcast, args.depth, args.swap, configs)
    shown = selected + ([REFERENCE] if REFERENCE not in selected else [])
    run_keys = {k: simulated_as(k, args.swap2_as_swap1) for k in shown}
    sims = sorted(set(run_keys.values()))

    require_files(platform=args.platform, model=args.model)
    build, store_path = prepare_store("factorial", args.store, args.json, args.dry_run)
    spec = sweep_spec(args.n, grid, args.seed, sims, build, args.platform, args.model, args.preset)
    # the preset's platform and model as they are: nothing is written into the work folder
    tasks = plan_runs(spec, sims, work_dir(store_path))
    if (args.n, grid) != (REAL_N, REAL_GRID):
        warn(f"the real runs and the authors' prediction are at N = {REAL_N:,} on {REAL_GRID[0]}x{REAL_GRID[1]}: "
             f"at N = {args.n:,} on {grid[0]}x{grid[1]} the errors compare different problems "
             "(a trial of the benchmark, not a judgement of hplsim)")
    log(f"{len(selected)} configurations selected, {len(sims)} simulations (N = {args.n:,}, {grid[0]}x{grid[1]}, "
        f"seed {args.seed}); store {store_path}")

    if args.dry_run:
        stored = stored_statuses(store_path, [t.hash for t in tasks.values()])
        for k in shown:
            state = {"ok": "stored", "failed": "failed before"}.get(stored.get(tasks[run_keys[k]].hash, ""), "to run")
            borrowed = f" (= the run of {label(run_keys[k])})" if run_keys[k] != k else ""
            print(f"{label(k):<11}{'ref' if k == REFERENCE else '':<5}{state:<15}"
                  f"{predict_command(run_keys[k], args.n, grid, args.seed, args.platform, args.model, args.preset)}{borrowed}")
        print(f"{len(sims)} runs: {sum(s == 'ok' for s in stored.values())} stored, "
              f"{len(sims) - len(stored)} to run, {sum(s == 'failed' for s in stored.values())} failed before")
        return 0

    with ResultStore(store_path) as store:
        warn_other_builds(stored_by_other_builds(store, {t.hash for t in tasks.values()}, build), build)
    run_missing(spec, tasks, store_path, args.jobs, args.retry_failed)
    with ResultStore(store_path) as store:
        stored_rows = {r["hash"]: r for r in store.runs()}

    rows = [Row(k, data[k], k in selected, run_keys[k], stored_rows.get(tasks[run_keys[k]].hash)) for k in shown]
    pred = {r.key: r.run["gflops"] for r in rows if r.run and r.run["status"] == "ok"}
    real = {k: m.real_mean for k, m in data.items()}
    authors = {k: m.authors for k, m in data.items()}
    done = [k for k in selected if k in pred]
    ours = summarise(pred, real, done) if REFERENCE in pred else None
    theirs = summarise(authors, real, done)

    files = "".join(f", {what} {path}" for what, path in (("platform", args.platform), ("model", args.model)) if path)
    print(f"preset {args.preset}: {get_preset(args.preset).machine_state}")
    print(f"preset {args.preset}{files}, {grid[0] * grid[1]:,} ranks ({grid[0]}x{grid[1]}), N = {args.n:,}, seed {args.seed}; "
          f"real: Jan 2020, mean ± sd of the runs; authors: their prediction")
    print(f"relative error = (pred(c) / pred(ref)) / (real(c) / real(ref)) - 1, ref = {label(REFERENCE)}; "
          "abs err = (hplsim - real) / real")
    print("\n".join(table(rows, pred, real, authors)))
    print()
    print("\n".join(summary_lines(ours, theirs)))
    if REFERENCE not in pred:
        print(f"no relative error for hplsim: the reference {label(REFERENCE)} has no result")
    missing = [k for k in selected if k not in pred]
    if missing:
        print(f"{len(missing)} selected configuration(s) without a result: {', '.join(map(label, missing))}")
    ran = {r.run_key: r.run for r in rows if r.run and r.run["status"] == "ok"}  # a borrowed run once
    if ran:
        runs = list(ran.values())
        base = get_preset(args.preset).config(args.n).as_dict()
        configs = [HplConfig(**{**base, "p": grid[0], "q": grid[1], "bcast": k[0], "depth": k[1], "swap": k[2]})
                   for k in ran]
        wall, pss = sum(r["sim_wall_s"] for r in runs), max(r["sim_memory_bytes"] for r in runs)
        print(f"simulations: {len(runs)}, wall {wall:,.1f} s in total "
              f"(max {max(r['sim_wall_s'] for r in runs):,.1f} s), peak PSS {pss / 1e6:,.0f} MB; "
              f"the cost law's estimates over them: wall {sum(map(estimate_s, configs)) / wall:.2f}, "
              f"PSS {max(map(estimate_memory_bytes, configs)) / pss:.2f}")

    if args.json:
        write_json(args.json, {
            "n": args.n, "grid": list(grid), "seed": args.seed, "store": str(store_path), "build": build,
            "reference": label(REFERENCE), "swap2_as_swap1": args.swap2_as_swap1,
            "preset": args.preset,
            "platform": str(args.platform) if args.platform else f"builtin:{args.preset}",
            "model": str(args.model) if args.model else f"builtin:{args.preset}",
            "configurations": [_row_doc(r, pred, real, authors) for r in rows],
            "summary": {"hplsim": ours.as_dict() if ours else None, "authors": theirs.as_dict()},
        })
    return 1 if missing or REFERENCE not in pred else 0


def _row_doc(r: Row, pred, real, authors) -> dict:
    m, k = r.measured, r.key
    run = r.run or {}
    ok = k in pred
    return {
        "bcast": k[0], "nb": NB, "depth": k[1], "swap": k[2], "selected": r.selected, "simulated_as": label(r.run_key),
        "real_mean": m.real_mean, "real_sd": m.real_sd, "real_runs": m.real_runs, "authors_gflops": m.authors,
        "hplsim_gflops": pred.get(k), "status": run.get("status", "not run"), "error": run.get("error"),
        "abs_error": (pred[k] - m.real_mean) / m.real_mean if ok else None,
        "rel_error": relative_error(pred, real, k) if ok and REFERENCE in pred else None,
        "authors_rel_error": relative_error(authors, real, k),
        "time_s": run.get("time_s"), "sim_wall_s": run.get("sim_wall_s"), "sim_memory_bytes": run.get("sim_memory_bytes"),
    }


if __name__ == "__main__":
    run_main(main)
