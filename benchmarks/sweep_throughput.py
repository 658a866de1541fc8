#!/usr/bin/env python3
"""Sweep throughput: configurations per minute with the local pool vs one after the other.

Fixed sweep (so that figures compare across versions): the built-in Dahu platform and
model, N in {2000, 4000, 6000}, NB 64, P x Q in {1x2, 2x1, 2x2}, BCAST in {0, 1}, DEPTH in
{0, 1}, seed 1: 36 configurations of 0.1-1 s of simulation each.

- serial: the runs one after the other in this process (what a shell loop over
  ``hplsim predict`` does, minus its start-up cost);
- pool: ``hplsim sweep`` with its local pool (default: one simulation per usable core),
  into a fresh store, start-up of the workers included.

Both measure everything a user waits for (planning, storing). The machine is shared: the
load average is printed, and other jobs on the cores lower the pool's gain; repeat to see
the noise.

    .venv/bin/python benchmarks/sweep_throughput.py [--jobs N] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_main, spread, write_json  # noqa: E402

from hplsim.sweep.executors import LocalExecutor, default_jobs, usable_cores  # noqa: E402
from hplsim.sweep.plan import make_plan  # noqa: E402
from hplsim.sweep.run import run_sweep, work_dir  # noqa: E402
from hplsim.sweep.spec import parse_spec  # noqa: E402
from hplsim.sweep.store import ResultStore  # noqa: E402
from hplsim.sweep.tasks import run_task  # noqa: E402

SPEC = {
    "hpl": {"n": [2000, 4000, 6000], "nb": [64], "grids": [[1, 2], [2, 1], [2, 2]], "bcast": [0, 1],
            "depth": [0, 1]},
    "seeds": [1],
}


def serial(db: Path) -> float:
    """Every run in turn, stored as the sweep stores them; returns the wall time."""
    start = time.perf_counter()
    plan = make_plan(parse_spec(SPEC, "benchmark"), work_dir(db), None)
    with ResultStore(db) as store:
        sweep = store.begin_sweep("benchmark", "", "serial")
        for task in plan.tasks:
            outcome = run_task(task, plan.variants[task.variant])
            assert outcome.status == "ok", outcome.error
            store.record(task, plan.variants[task.variant], outcome, sweep)
    return time.perf_counter() - start


def pool(db: Path, jobs: int | None) -> float:
    start = time.perf_counter()
    result = run_sweep(parse_spec(SPEC, "benchmark"), db, LocalExecutor(jobs), progress=False, log=lambda m: None)
    assert result.failed == 0 and result.ok == result.planned
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, help="pool size (default: the sweep's own choice)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", help="write the measurements to this JSON file")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="hplsim-sweep-bench-"))
    count = len(make_plan(parse_spec(SPEC, "benchmark"), tmp / "plan", None).tasks)
    jobs = args.jobs or default_jobs(make_plan(parse_spec(SPEC, "benchmark"), tmp / "plan", None).tasks)[0]
    print(f"{count} configurations; {usable_cores()} usable cores; pool of {jobs}; "
          f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    rates: dict[str, list[float]] = {"serial": [], "pool": []}
    for i in range(args.repeat):
        s = serial(tmp / f"serial-{i}.sqlite")
        p = pool(tmp / f"pool-{i}.sqlite", args.jobs)
        rates["serial"].append(60 * count / s)
        rates["pool"].append(60 * count / p)
        print(f"  run {i + 1}: serial {s:.1f} s, pool {p:.1f} s", flush=True)
    ratios = [p / s for s, p in zip(rates["serial"], rates["pool"])]
    print(f"serial: {spread(rates['serial'])} configurations/min")
    print(f"pool:   {spread(rates['pool'])} configurations/min ({jobs} workers)")
    print(f"ratio:  {spread(ratios)} x (load average after: {os.getloadavg()[0]:.2f})")
    write_json(args.json, {"configurations": count, "jobs": jobs, "cores": usable_cores(),
                           "serial_per_min": rates["serial"], "pool_per_min": rates["pool"], "ratio": ratios})


if __name__ == "__main__":
    run_main(main)
