#!/usr/bin/env python3
"""Same predictions? Each of issue 54's speed levers against its reference.

`--lever exchanges` (the default): every scenario runs twice with the same seed,
`--exchanges messages` (the reference) and `--exchanges modelled` (the default;
docs/predict.md "Modelled exchanges", lab notebook E67). `--lever probes`: the probes
SimGrid answers (HPLSIM_PROBE_COUNTS=off, the reference) against those the message counts
answer (the default; docs/predict.md "Polling for a panel", E70). `--lever fat-tree-star`
(with `--set stampede`): the Stampede preset's fat-tree (the reference) against its hosts on
a star whose routes keep the fat-tree's latencies (`hplsim predict --fat-tree-as-star`;
docs/predict.md "Fat-trees as stars", E90). The table gives both
Gflops, the move of the faster way, and both simulations' wall time. Target: every move
within 0.5 %, the median within 0.2 %.

With look-ahead, one seed is one draw of a schedule that a nanosecond anywhere reorders:
the message-level reference itself moves by −1.4 … +1.0 % when the links' latency moves by
1 ns (lab notebook E89). `--seeds K` runs every scenario at K seeds (from --seed) both ways
and compares the means over the seeds; the table then also gives the range of the per-seed
moves and the reference's own spread over its seeds.

Sets (--set, any of them):

  local     8×8 and 16×16 (N = 10,000, NB 128) under every BCAST × DEPTH × SWAP, on a
            one-switch cluster of one-rank hosts (12.5 GB/s, 1 µs) and on a slice of the
            Dahu preset (its platform, 32 ranks a node, its models)
  dahu      the Dahu preset's N-sweep: N = 50,000, 100,000, 250,000, 500,000
  factorial the Dahu preset at N = 250,000 under the factorial's configurations (NB 128)
            already run with messages in the notebook: 2,128,1,0 (the reference),
            0,128,0,0, 2,128,0,0, 5,128,1,0, 2,128,0,1, 2,128,1,1
  stampede  the Stampede preset (its TOP500 run's parameters, NB 1,024) on 41×40 at
            N = 4,096 and 20,480 (4 and 20 panels: MB-sized pieces), and on its full 77×78
            grid at N = 4,096 (--only "41x40 N=4096" ...)

Results are appended to --results (JSON lines, one per simulation) as they finish, and a
run of the script skips what that file already holds: a long set resumes across sessions.

    .venv/bin/python benchmarks/exchanges_fidelity.py --set local --jobs 2
    .venv/bin/python benchmarks/exchanges_fidelity.py --set local --only "star 16x16" --seeds 4 --jobs 2
    .venv/bin/python benchmarks/exchanges_fidelity.py --set dahu --only 50000 100000
    .venv/bin/python benchmarks/exchanges_fidelity.py --lever probes --set local --jobs 2
    .venv/bin/python benchmarks/exchanges_fidelity.py --lever probes --set local --only "star 8x8" "dahu 8x8"
    .venv/bin/python benchmarks/exchanges_fidelity.py --lever fat-tree-star --set stampede --only "41x40 N=4096"
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_main  # noqa: E402

from hplsim.errors import HplsimError  # noqa: E402
from hplsim.hpl.config import HplConfig  # noqa: E402
from hplsim.models.modelfile import ModelFile, load_model, save_model  # noqa: E402
from hplsim.platform.spec import load_platform, spec_from_dict  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.presets import DEFAULT, get_preset  # noqa: E402

TARGET_MAX, TARGET_MEDIAN = 0.005, 0.002
FACTORIAL = ["2,128,1,0", "0,128,0,0", "2,128,0,0", "5,128,1,0", "2,128,0,1", "2,128,1,1"]


@dataclass(frozen=True)
class Scenario:
    key: str
    config: HplConfig
    platform: object
    model: ModelSource
    #: the platform as a star with the fat-tree's latencies (fat-tree platforms only)
    star: object | None = None


def _dahu():
    preset = get_preset("dahu")
    return preset, load_platform(preset.platform, preset.ranks_per_host), ModelSource.from_path(preset.model, "builtin:dahu")


def local_set(only: list[str] | None = None) -> list[Scenario]:
    star = spec_from_dict({"name": "star-256", "nodes": 256, "cores_per_node": 1,
                           "network": {"bandwidth": "12.5GBps", "latency": "1us"}}).platform()
    tmp = Path(tempfile.mkdtemp(prefix="hplsim-fidelity-"))
    save_model(ModelFile(default=load_model(DEFAULT.model).default, description="Dahu default row"), tmp / "m.yaml")
    default_row = ModelSource.from_path(tmp / "m.yaml", "dahu default")
    preset, dahu_platform, dahu_model = _dahu()
    out = []
    for (where, plat, model), g, (b, d, s) in itertools.product(
            (("star", star, default_row), ("dahu", dahu_platform, dahu_model)), (8, 16),
            itertools.product(range(6), range(2), range(3))):
        if only and f"{where} {g}x{g}" not in only:
            continue
        config = HplConfig(**{**preset.config(10000).as_dict(), "p": g, "q": g, "bcast": b, "depth": d, "swap": s})
        out.append(Scenario(f"local {where} {g}x{g} N=10000 {b},128,{d},{s}", config, plat, model))
    return out


def dahu_set(only: list[int] | None) -> list[Scenario]:
    preset, plat, model = _dahu()
    return [Scenario(f"dahu N={n}", preset.config(n), plat, model) for n in (only or [50000, 100000, 250000, 500000])]


def factorial_set(only: list[str] | None) -> list[Scenario]:
    preset, plat, model = _dahu()
    out = []
    for label in only or FACTORIAL:
        b, nb, d, s = map(int, label.split(","))
        config = HplConfig(**{**preset.config(250000).as_dict(), "nb": nb, "bcast": b, "depth": d, "swap": s})
        out.append(Scenario(f"factorial {label}", config, plat, model))
    return out


STAMPEDE = [("41x40", 4096), ("41x40", 20480), ("77x78", 4096)]


def stampede_set(only: list[str] | None) -> list[Scenario]:
    preset = get_preset("stampede")
    model = ModelSource.from_path(preset.model, "builtin:stampede")
    tree, star = preset.load_platform(), preset.load_platform(fat_tree_as_star=True)
    out = []
    for grid, n in STAMPEDE:
        if only and f"{grid} N={n}" not in only:
            continue
        p, q = map(int, grid.split("x"))
        config = HplConfig(**{**preset.config(n).as_dict(), "p": p, "q": q})
        out.append(Scenario(f"stampede {grid} N={n}", config, tree, model, star))
    return out


#: lever -> (reference, faster way): each way is (name, `exchanges` argument,
#: HPLSIM_PROBE_COUNTS, on the scenario's star platform)
LEVERS = {
    "exchanges": (("messages", "messages", "on", False), ("modelled", "modelled", "on", False)),
    "probes": (("simgrid-probes", "modelled", "off", False), ("counted-probes", "modelled", "on", False)),
    "fat-tree-star": (("fat-tree", "modelled", "on", False), ("fat-tree-star", "modelled", "on", True)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", nargs="+", choices=("local", "dahu", "factorial", "stampede"), default=["local"])
    ap.add_argument("--only", nargs="+", help="local: the parts to run ('star 8x8', 'dahu 16x16', ...); "
                    "dahu: the N to run; factorial: B,NB,D,S labels; stampede: 'PxQ N=N' labels")
    ap.add_argument("--jobs", type=int, default=1, help="simulations at once (wall times are then not comparable)")
    ap.add_argument("--lever", choices=sorted(LEVERS), default="exchanges",
                    help="which speed lever to compare with its reference (default: %(default)s)")
    ap.add_argument("--results", type=Path, help="JSON lines of every simulation (default: "
                    "results/exchanges-fidelity.jsonl, results/probes-fidelity.jsonl with --lever probes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1,
                    help="seeds per scenario, from --seed on: compare the means over them (default: %(default)s)")
    args = ap.parse_args()
    reference, faster = LEVERS[args.lever]
    args.results = args.results or Path(f"results/{args.lever}-fidelity.jsonl")

    scenarios: list[Scenario] = []
    for name in args.set:
        scenarios += (local_set(args.only) if name == "local" else
                      dahu_set([int(n) for n in args.only] if args.only else None) if name == "dahu" else
                      stampede_set(args.only) if name == "stampede" else
                      factorial_set(args.only))
    if reference[3] or faster[3]:
        if any(s.star is None for s in scenarios):
            raise HplsimError(f"--lever {args.lever} compares a fat-tree with its star: it takes --set stampede")
    if args.seeds < 1:
        raise HplsimError("--seeds must be at least 1")
    seeds = list(range(args.seed, args.seed + args.seeds))
    done: dict[tuple[str, str, int], dict] = {}
    if args.results.exists():
        for line in args.results.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                if r["seed"] in seeds:
                    done[(r["key"], r["exchanges"], r["seed"])] = r
    args.results.parent.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    todo = [(s, way, seed) for way in (reference, faster) for s in scenarios for seed in seeds
            if (s.key, way[0], seed) not in done]
    print(f"{len(scenarios)} scenarios, {len(todo)} simulations to run ({len(done)} in {args.results})", flush=True)

    def one(job: tuple[Scenario, tuple[str, str, str], int]) -> None:
        s, (name, exchanges, _, on_star), seed = job
        p = predict(s.config, s.star if on_star else s.platform, s.model, seed=seed, exchanges=exchanges)
        r = {"key": s.key, "exchanges": name, "seed": seed, "gflops": p.gflops, "time_s": p.time_s,
             "sim_wall_s": p.sim_wall_s, "sim_memory_bytes": p.sim_memory_bytes, **p.exchanges}
        with lock:
            done[(s.key, name, seed)] = r
            with open(args.results, "a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"  {s.key} {name} seed {seed}: {p.gflops:.6g} Gflops, {p.sim_wall_s:.1f} s", flush=True)

    # the probe counts are the simulation's environment: one way at a time
    for way in (reference, faster):
        os.environ["HPLSIM_PROBE_COUNTS"] = way[2]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for fut in [pool.submit(one, job) for job in todo if job[1] == way]:
                fut.result()
    os.environ.pop("HPLSIM_PROBE_COUNTS")

    print(f"\n{'scenario':<40} {reference[0]:>14} {faster[0]:>14} {'move':>8}"
          + (f" {'per seed':>17} {'ref spread':>10}" if len(seeds) > 1 else "") + f" {'wall ref':>9} {'wall new':>9}")
    moves = []
    for s in scenarios:
        m = [done[(s.key, reference[0], k)] for k in seeds if (s.key, reference[0], k) in done]
        d = [done[(s.key, faster[0], k)] for k in seeds if (s.key, faster[0], k) in done]
        if len(m) < len(seeds) or len(d) < len(seeds):
            continue
        gm, gd = statistics.mean(r["gflops"] for r in m), statistics.mean(r["gflops"] for r in d)
        move = gd / gm - 1
        moves.append(abs(move))
        line = f"{s.key:<40} {gm:>14.6g} {gd:>14.6g} {100 * move:>+7.3f}%"
        if len(seeds) > 1:
            per = [b["gflops"] / a["gflops"] - 1 for a, b in zip(m, d)]
            ref = [r["gflops"] for r in m]
            line += f" {100 * min(per):>+7.2f}…{100 * max(per):>+6.2f}% {100 * (max(ref) - min(ref)) / gm:>9.2f}%"
        wall_m, wall_d = (statistics.mean(r["sim_wall_s"] for r in rs) for rs in (m, d))
        print(f"{line} {wall_m:>8.1f}s {wall_d:>8.1f}s")
    if moves:
        med = statistics.median(moves)
        what = "|move|" if len(seeds) == 1 else f"|move of the mean over {len(seeds)} seeds|"
        print(f"{len(moves)} scenarios: {what} max {100 * max(moves):.3f} % (target {100 * TARGET_MAX:.1f} %), "
              f"median {100 * med:.3f} % (target {100 * TARGET_MEDIAN:.1f} %): "
              f"{'met' if max(moves) <= TARGET_MAX and med <= TARGET_MEDIAN else 'NOT met'}")


if __name__ == "__main__":
    run_main(main)
