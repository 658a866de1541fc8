"""The default test suite's wall time, and where it goes (issue 22's target: <= 3 min here).

Runs the README's test command (`pytest`, CI's environment: CI=true, stdin closed) with
tests/conftest.py's timeline (HPLSIM_TEST_TIMELINE) and prints: the wall time, the CPU its
processes used (and its share of the cores over the wall time), each
worker's time in tests, waiting for an exclusive test, and idle (collection, start-up and
the end, when the other worker still runs), the exclusive tests' total, and the modules
that cost the most. Run it alone on the machine: it times the machine.

    .venv/bin/python benchmarks/suite_time.py [--repeat 2] [--json out.json] [-- PYTEST_ARGS]
"""

from __future__ import annotations

import collections
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, Parser, run_main, spread, write_json


def read_timeline(path: Path) -> list[tuple[str, float, float, float, bool, str]]:
    rows = []
    for line in path.read_text().splitlines():
        worker, asked, started, ended, exclusive, nodeid = line.split("\t", 5)
        rows.append((worker, float(asked), float(started), float(ended), exclusive == "1", nodeid))
    return rows


def one_run(extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="hplsim-suite-") as d:
        timeline = Path(d) / "timeline.tsv"
        env = dict(os.environ, CI="true", HPLSIM_TEST_TIMELINE=str(timeline))
        t0 = time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *extra], cwd=REPO,
                             env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        wall = time.time() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = read_timeline(timeline) if timeline.exists() else []
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr.strip()[-300:]
    workers: dict[str, dict[str, float]] = {}
    for w in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == w]
        running = sum(r[3] - r[2] for r in mine)
        waiting = sum(r[2] - r[1] for r in mine)
        workers[w] = {"tests_s": running, "waiting_s": waiting, "idle_s": wall - running - waiting,
                      "first_start_s": min(r[1] for r in mine) - t0, "last_end_s": max(r[3] for r in mine) - t0}
    modules: collections.Counter[str] = collections.Counter()
    for r in rows:
        modules[r[5].split("::")[0]] += r[3] - r[2]
    failed = [line for line in out.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    slowest = sorted(rows, key=lambda r: r[2] - r[3])
    # the CPU the suite's processes used, out of what the machine's cores offered over the
    # wall time: well below 1, the workers wait (sleeps, signals, subprocesses) more than they work
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "cpu_share": cpu / (wall * (os.cpu_count() or 1)),
            "exit_code": out.returncode, "pytest": summary, "failed": failed, "workers": workers,
            "exclusive_s": sum(r[3] - r[2] for r in rows if r[4]), "tests": len(rows),
            "modules": dict(modules.most_common()),
            "slowest_tests": {r[5]: round(r[3] - r[2], 2) for r in slowest[:100]}}


def main() -> int:
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=1, help="runs of the suite (the spread of the wall time)")
    p.add_argument("--top", type=int, default=12, help="modules and tests to list")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    a = p.parse_args()
    if a.repeat < 1:
        p.error("--repeat must be at least 1")
    runs = []
    for i in range(a.repeat):
        r = one_run(a.pytest_args)
        runs.append(r)
        print(f"run {i + 1}: {r['wall_s']:.0f} s wall ({r['pytest']}), exit code {r['exit_code']}; "
              f"CPU {r['cpu_s']:.0f} s, {100 * r['cpu_share']:.0f} % of the cores")
        for line in r["failed"]:
            print(f"  {line}")
        for w, f in r["workers"].items():
            print(f"  {w}: tests {f['tests_s']:.0f} s, waiting for an exclusive test {f['waiting_s']:.0f} s, "
                  f"idle {f['idle_s']:.0f} s (first test at {f['first_start_s']:.0f} s, "
                  f"last ends at {f['last_end_s']:.0f} s)")
        print(f"  exclusive tests: {r['exclusive_s']:.0f} s")
    walls = [r["wall_s"] for r in runs]
    print(f"wall time (target <= 180 s): {spread(walls)} s over {len(runs)} run(s)")
    print("modules, time in their tests (last run):")
    for m, s in list(runs[-1]["modules"].items())[:a.top]:
        print(f"  {s:6.1f} s  {m}")
    print("tests, with the set-up of the fixtures they are first to use (last run):")
    for t, s in list(runs[-1]["slowest_tests"].items())[:a.top]:
        print(f"  {s:6.1f} s  {t}")
    write_json(a.json, {"runs": runs, "wall_s": walls})
    return 0 if all(r["exit_code"] == 0 for r in runs) else 1


if __name__ == "__main__":
    run_main(main)
