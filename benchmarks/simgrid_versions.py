#!/usr/bin/env python3
"""Two SimGrid installations side by side: the same predictions, and how long each takes.

Issue 19 asks whether SimGrid 4.1 should replace Debian's 3.32: only if it is faster and
gives the same predictions within noise. This script runs the same `hplsim predict`
scenarios under the SimGrid on PATH (A: Debian's 3.32) and under another installation
(B: --simgrid PREFIX, e.g. SimGrid 4.1 built from its PyPI sdist with -Denable_smpi=ON),
one run at a time, alternating A B B A so that a drift of the machine falls on both, and
prints per scenario the Gflops of each (and their relative difference) and the wall times
(median [range]) with the ratio A / B.

Each installation gets its own build cache (HPLSIM_CACHE_DIR under --work): the emulated
HPL is built once per SimGrid (its build key holds `smpicc --version`, which names it).

    .venv/bin/python benchmarks/simgrid_versions.py --simgrid /opt/simgrid-4.1 [--quick] [--rounds 2] [--json out.json]

The full set ends with the Dahu preset at 32×32 (1,024 ranks, N = 20,000: about five
minutes a run); --quick keeps the small grids. Run it on a quiet machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Parser, run_main, spread, write_json  # noqa: E402

from hplsim.errors import HplsimError  # noqa: E402

#: (name, hplsim predict arguments): HPL's broadcasts and depths at 4×4 for the predictions
#: (every code path of the broadcasts and the look-ahead), then grids of growing size for
#: the cost, up to the 1,024 ranks that issue 19 is about
EQUALITY = [(f"4x4 N=4000 bcast {b} depth {d}",
             ["-N", "4000", "--nb", "64", "-P", "4", "-Q", "4", "--bcast", str(b), "--depth", str(d)])
            for b in range(6) for d in (0, 1)]
COST_QUICK = [("8x8 N=20000", ["-N", "20000", "-P", "8", "-Q", "8"]),
              ("16x16 N=20000", ["-N", "20000", "-P", "16", "-Q", "16"])]
COST_FULL = COST_QUICK + [("dahu 32x32 N=20000", ["--preset", "dahu", "-N", "20000"])]


def installation(prefix: str) -> dict[str, str]:
    """The environment that puts `prefix`'s smpicc/smpirun and libsimgrid first."""
    bin_dir, lib_dir = Path(prefix) / "bin", Path(prefix) / "lib"
    if not (bin_dir / "smpirun").exists() or not (bin_dir / "smpicc").exists():
        raise HplsimError(f"--simgrid {prefix}: no bin/smpirun and bin/smpicc there")
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["LD_LIBRARY_PATH"] = f"{lib_dir}{os.pathsep}{env['LD_LIBRARY_PATH']}" if env.get("LD_LIBRARY_PATH") \
        else str(lib_dir)
    return env


def version(env: dict[str, str]) -> str:
    try:
        out = subprocess.run(["smpirun", "-version"], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HplsimError(f"smpirun -version did not run: {exc}") from None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else "?"


def predict(args: list[str], env: dict[str, str], seed: int) -> dict:
    cmd = [str(Path(sys.executable).with_name("hplsim")), "predict", *args, "--seed", str(seed), "--json"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise HplsimError(f"hplsim predict {' '.join(args)} failed under {env['HPLSIM_CACHE_DIR']}: "
                          f"{lines[-1] if lines else 'no message'}")
    return json.loads(out.stdout)[0]


def main() -> int:
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--simgrid", required=True, help="prefix of the other SimGrid installation (bin/, lib/)")
    ap.add_argument("--quick", action="store_true", help="the small grids only")
    ap.add_argument("--rounds", type=int, default=1, help="A B B A rounds of the cost scenarios (two runs each)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", help="folder for the two build caches (default: a temporary one)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.rounds < 1:
        raise HplsimError("--rounds must be at least 1")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="hplsim-simgrid-"))
    envs = {"A": dict(os.environ), "B": installation(args.simgrid)}
    for name, env in envs.items():
        env["HPLSIM_CACHE_DIR"] = str(work / f"cache-{name}")
    names = {k: version(env) for k, env in envs.items()}
    print(f"A: {names['A']} (on PATH); B: {names['B']} ({args.simgrid}); load "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    for env in envs.values():  # the builds, outside the timings
        predict(["-N", "256", "--nb", "64", "-P", "1", "-Q", "2"], env, args.seed)

    doc: dict = {"A": names["A"], "B": names["B"], "seed": args.seed, "equality": [], "cost": []}
    print("\npredictions (Gflops):")
    for name, argv in EQUALITY:
        a, b = (predict(argv, envs[k], args.seed)["gflops"] for k in "AB")
        doc["equality"].append({"scenario": name, "A": a, "B": b, "rel_diff": b / a - 1})
        print(f"  {name:<26} A {a:.6f}  B {b:.6f}  B/A - 1 = {b / a - 1:+.2e}", flush=True)

    print(f"\ncost ({args.rounds} round(s), A B B A):")
    for name, argv in COST_FULL if not args.quick else COST_QUICK:
        runs: dict[str, list[dict]] = {"A": [], "B": []}
        for _ in range(args.rounds):
            for k in ("A", "B", "B", "A"):
                runs[k].append(predict(argv, envs[k], args.seed))
        wall = {k: [x["sim_wall_s"] for x in v] for k, v in runs.items()}
        gflops = {k: statistics.median(x["gflops"] for x in v) for k, v in runs.items()}
        ratios = [a / b for a, b in zip(wall["A"], wall["B"])]  # pairs: the runs next to each other
        doc["cost"].append({"scenario": name, "gflops": gflops, "wall_s": wall, "ratio_a_over_b": ratios,
                            "memory_bytes": {k: max(x["sim_memory_bytes"] for x in v) for k, v in runs.items()}})
        print(f"  {name:<20} Gflops A {gflops['A']:.2f} B {gflops['B']:.2f} ({gflops['B'] / gflops['A'] - 1:+.2e}); "
              f"wall A {spread(wall['A'])} s, B {spread(wall['B'])} s; A/B {spread(ratios)}", flush=True)
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    run_main(main)
