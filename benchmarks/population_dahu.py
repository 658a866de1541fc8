#!/usr/bin/env python3
"""Sampled Dahu clusters (issue 24): the Dahu platform with its nodes drawn from the dgemm
population law, against the real 2019 runs; and a 128-node cluster sampled from the same
law, with the cost of its spread. One simulation at a time; prints its figures.

1. `--n` sizes x `--seeds` (each seed another sampled cluster of `--nodes` nodes x
   `--ranks-per-node` ranks, the validation runs' HPL parameters): Gflops per seed, their
   spread, and the mean of the real 2019-03 runs of `hpl_reality.csv` at that N (inside the
   spread or not, and by how much).
2. A `--big-nodes` cluster at `--big-n`, seed `--big-seed`: Gflops at spatial variability 1
   and 0 (same seed: the same run effect and per-node noise, the spread between nodes
   removed), the slowest node of the draw, the cost of the spread, the wall time of each.

Dahu scale (hours: 20 simulations of 8-17 min, then two of a 4,096-rank cluster), in one
go or in parts:

    .venv/bin/python benchmarks/population_dahu.py --json population_dahu.json
    .venv/bin/python benchmarks/population_dahu.py --n 50000 --big-nodes 0 --json p50k.json
    .venv/bin/python benchmarks/population_dahu.py --n 100000 --big-nodes 0 --json p100k.json
    .venv/bin/python benchmarks/population_dahu.py --n --json p128.json     # part 2 only
    .venv/bin/python benchmarks/population_dahu.py --n --big-spatial 1 --json p128-1.json  # its halves,
    .venv/bin/python benchmarks/population_dahu.py --n --big-spatial 0 --json p128-0.json  # two processes

Parts run as separate processes are put together (no simulation: the table, the summary
against reality, and the cost of the spread when both halves of part 2 are there):

    .venv/bin/python benchmarks/population_dahu.py --merge p100k_s*.json --json p100k.json

A check that it works (a few minutes): --tiny (4 nodes x 8 ranks, N = 4,000; 8 nodes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, reference_dir, run_main, write_json  # noqa: E402

from hplsim.errors import HplsimError  # noqa: E402
from hplsim.models.modelfile import load_model  # noqa: E402
from hplsim.models.population import draw_cluster, with_variability  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.presets.dahu import validation_config  # noqa: E402
from hplsim.sweep.spec import parse_spec  # noqa: E402
from hplsim.sweep.variants import build_variants, host_dgemm_time  # noqa: E402

DEFAULT_MODEL = REPO / "examples" / "sensitivity" / "dahu-population.yaml"


def reality(data: Path) -> pd.DataFrame:
    df = pd.read_csv(data / "hpl_reality.csv")
    df = df[df.date == "2019-03"]
    df = df[~((df.matrix_size == 175000) & (df.gflops > 22000))]  # the two known outliers (data README)
    return df.groupby("matrix_size").gflops.agg(["mean", "min", "max", "count"])


def grid(ranks: int) -> tuple[int, int]:
    """The squarest P <= Q with P * Q = ranks."""
    p = int(math.isqrt(ranks))
    while ranks % p:
        p -= 1
    return p, ranks // p


def platform_of(nodes: int, ranks_per_node: int, workdir: Path):
    """The built-in Dahu platform with `nodes` nodes (the sweep's own platform variation)."""
    spec = parse_spec({"hpl": {"n": 1000}, "platform": {"ranks_per_host": ranks_per_node,
                                                        "variations": [{"nodes": nodes}]}}, "benchmark", workdir)
    return build_variants(spec, workdir)[0].platform


def run(config, platform, model: ModelSource, seed: int) -> tuple[float, float]:
    r = predict(config, platform, model, seed=seed)
    return r.gflops, r.sim_wall_s


def slowest(model, hosts: list[str], seed: int) -> tuple[str, float, float]:
    """The draw's slowest node (longest expected dgemm, M=N=2048, K=128, on its slowest CPU)
    and how much slower it is than the median node."""
    drawn = draw_cluster(model, hosts, seed).model
    times = {h: host_dgemm_time(drawn, h) for h in dict.fromkeys(hosts)}
    worst = max(times, key=times.get)
    return worst, times[worst], times[worst] / statistics.median(times.values()) - 1


def seed_row(s: dict) -> str:
    """One sampled cluster's line of part 1's table."""
    return f"{s['n']:>7} {s['seed']:>5} {s['gflops']:>9.1f} {s['sim_wall_s']:>11.1f}"


def part1_summary(n: int, values: list[float], real: pd.DataFrame, ranks: int) -> tuple[str, dict | None]:
    """The line that sums up part 1 at size `n`, and how it compares with the real runs
    (the Dahu runs had 1,024 ranks: other clusters are not compared)."""
    lo, hi, mid = min(values), max(values), statistics.median(values)
    line = (f"  N={n}: sampled Gflops median {mid:.1f}, spread {lo:.1f}-{hi:.1f} "
            f"({100 * (hi - lo) / mid:.1f} % of the median, {len(values)} seeds)")
    if n not in real.index or ranks != 1024:
        return line, None
    r = real.loc[n]
    inside = lo <= r["mean"] <= hi
    miss = 0.0 if inside else (r["mean"] - (lo if r["mean"] < lo else hi)) / r["mean"]
    line += (f"; real 2019-03 mean {r['mean']:.1f} ({int(r['count'])} runs, {r['min']:.0f}-{r['max']:.0f}): "
             + ("inside the spread" if inside else f"outside, {100 * miss:+.1f} % from the nearest seed"))
    return line, {"n": n, "real_mean": r["mean"], "sampled_min": lo, "sampled_max": hi, "inside": inside}


def cost_of_spread(big: dict) -> float | None:
    """Gflops lost to the spread between nodes: 1 - spatial 1 / spatial 0, same seed."""
    if big.get("gflops") is None or big.get("gflops_spatial0") is None:
        return None
    return 1 - big["gflops"] / big["gflops_spatial0"]


def merge(paths: list[str], real: pd.DataFrame) -> dict:
    """The figures of parts run as separate processes (their --json files), put together."""
    docs = []
    for path in paths:
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise HplsimError(f"--merge {path}: not a JSON file of this benchmark ({e})") from None
        if not (isinstance(doc, dict) and {"model", "model_digest", "sampled"} <= doc.keys()):
            raise HplsimError(f"--merge {path}: not a JSON file of this benchmark (no model, model_digest, sampled)")
        docs.append(doc)
    for key in ("model_digest", "nodes", "ranks_per_node"):
        values = {str(d[key]) for d in docs if key in d}  # files of older versions lack the cluster's size
        if len(values) > 1:
            raise HplsimError(f"--merge: the parts differ in {key} ({', '.join(sorted(values))}): not one experiment")
    first = docs[0]
    nodes = next((d["nodes"] for d in docs if "nodes" in d), 32)  # the defaults: the older files' runs
    ranks_per_node = next((d["ranks_per_node"] for d in docs if "ranks_per_node" in d), 32)
    out: dict = {"model": first["model"], "model_digest": first["model_digest"], "merged": paths,
                 "nodes": nodes, "ranks_per_node": ranks_per_node, "sampled": [], "big": None}
    seen: dict[tuple[int, int], dict] = {}
    for d in docs:
        for s in d.get("sampled", []):
            key = (s["n"], s["seed"])
            if key in seen and seen[key]["gflops"] != s["gflops"]:
                raise HplsimError(f"--merge: N={key[0]} seed {key[1]} has two different results: not one experiment")
            seen.setdefault(key, s)
    out["sampled"] = [seen[k] for k in sorted(seen)]
    ranks = nodes * ranks_per_node
    for n in sorted({k[0] for k in seen}):
        rows = [s for s in out["sampled"] if s["n"] == n]
        for s in rows:
            print(seed_row(s))
        line, versus = part1_summary(n, [s["gflops"] for s in rows], real, ranks)
        print(line)
        if versus:
            out.setdefault("versus_reality", []).append(versus)
    halves = [d["big"] for d in docs if d.get("big")]
    if halves:
        same = {(h["nodes"], h["n"], h["seed"]) for h in halves}
        if len(same) > 1:
            raise HplsimError("--merge: the parts of part 2 differ in nodes, N or seed: not one cluster")
        big: dict = {}
        for h in halves:
            big.update({k: v for k, v in h.items() if v is not None})
        cost = cost_of_spread(big)
        if cost is not None:
            big["cost_of_spread"] = cost
        out["big"] = big
        print(f"2. {big['nodes']} sampled nodes, N={big['n']}, seed {big['seed']}: "
              + ", ".join(f"spatial {s}: {big[k]:.1f} Gflops" for s, k in (("1", "gflops"), ("0", "gflops_spatial0"))
                          if k in big)
              + f"; slowest node {big['slowest_node']} ({100 * big['slowest_vs_median']:+.1f} % on dgemm)"
              + (f"; cost of the spread between nodes: {100 * cost:.1f} % of the Gflops" if cost is not None else ""))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="a model file with a dgemm population")
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--ranks-per-node", type=int, default=32)
    ap.add_argument("--n", type=int, nargs="*", default=[50000, 100000], help="sizes of part 1 (none: skip it)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(1, 11)))
    ap.add_argument("--big-nodes", type=int, default=128, help="0: skip part 2")
    ap.add_argument("--big-n", type=int, default=100000)
    ap.add_argument("--big-seed", type=int, default=1)
    ap.add_argument("--big-spatial", type=float, nargs="+", default=[1.0, 0.0], choices=[1.0, 0.0],
                    help="the spatial variabilities of part 2 (one of them: run the two halves as two processes, "
                         "the cost of the spread is printed only when both run)")
    ap.add_argument("--tiny", action="store_true", help="a quick check: 4 nodes x 8 ranks, N = 4,000, seeds 1 2; "
                                                        "8 nodes at N = 4,000")
    ap.add_argument("--data", help="folder holding dahu/ (default reference/, shipped with the project)")
    ap.add_argument("--json", help="write every figure to this JSON file")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="put together the --json files of parts run separately (no simulation)")
    args = ap.parse_args()
    if args.merge:
        write_json(args.json, merge(args.merge, reality(reference_dir(args.data))))
        return
    if args.tiny:
        args.nodes, args.ranks_per_node, args.n, args.seeds = 4, 8, [4000], [1, 2]
        args.big_nodes, args.big_n = 8, 4000

    real = reality(reference_dir(args.data))
    model = ModelSource.from_path(args.model)
    if "dgemm" not in model.model.population:
        raise SystemExit(f"{args.model}: no dgemm population (hplsim fit --per population, docs/population.md)")
    work = Path(tempfile.mkdtemp(prefix="hplsim-population-"))
    out: dict = {"model": str(args.model), "model_digest": model.digest, "nodes": args.nodes,
                 "ranks_per_node": args.ranks_per_node, "sampled": [], "big": None}

    platform = platform_of(args.nodes, args.ranks_per_node, work)
    p, q = grid(args.nodes * args.ranks_per_node)
    if args.n:
        print(f"1. {args.nodes} sampled nodes x {args.ranks_per_node} ranks ({p}x{q}), seeds {args.seeds}", flush=True)
        print(f"{'N':>7} {'seed':>5} {'Gflops':>9} {'sim wall s':>11}", flush=True)
    for n in args.n:
        config = dataclasses.replace(validation_config(n), p=p, q=q)
        values = []
        for seed in args.seeds:
            gflops, wall = run(config, platform, model, seed)
            values.append(gflops)
            out["sampled"].append({"n": n, "seed": seed, "gflops": gflops, "sim_wall_s": wall})
            print(seed_row(out["sampled"][-1]), flush=True)
        line, versus = part1_summary(n, values, real, args.nodes * args.ranks_per_node)
        if versus:
            out.setdefault("versus_reality", []).append(versus)
        print(line, flush=True)

    if args.big_nodes:
        big = platform_of(args.big_nodes, args.ranks_per_node, work)
        p, q = grid(args.big_nodes * args.ranks_per_node)
        config = dataclasses.replace(validation_config(args.big_n), p=p, q=q)
        flat = ModelSource(with_variability(model.model, 0, None), f"{model.label} [spatial x0]", model.digest)
        print(f"2. {args.big_nodes} sampled nodes x {args.ranks_per_node} ranks ({p}x{q}), N={args.big_n}, "
              f"seed {args.big_seed}", flush=True)
        runs = {}
        for spatial in args.big_spatial:
            begin = time.perf_counter()
            gflops, wall = run(config, big, model if spatial else flat, args.big_seed)
            runs[spatial] = (gflops, wall, time.perf_counter() - begin)
            print(f"  spatial {spatial:g}: {gflops:.1f} Gflops, simulation wall {wall:.1f} s "
                  f"(total {runs[spatial][2]:.1f} s)", flush=True)
        host, worst, excess = slowest(model.model, big.slots[: p * q], args.big_seed)
        print(f"  slowest node {host}: dgemm(2048, 2048, 128) {1e3 * worst:.2f} ms, {100 * excess:+.1f} % "
              "vs the median node")
        out["big"] = {"nodes": args.big_nodes, "ranks": p * q, "n": args.big_n, "seed": args.big_seed,
                      "slowest_node": host, "slowest_dgemm_s": worst, "slowest_vs_median": excess}
        if 1.0 in runs:
            out["big"].update(gflops=runs[1.0][0], sim_wall_s=runs[1.0][1])
        if 0.0 in runs:
            out["big"].update(gflops_spatial0=runs[0.0][0], sim_wall_s_spatial0=runs[0.0][1])
        cost = cost_of_spread(out["big"])
        if cost is not None:
            print(f"  cost of the spread between nodes: {100 * cost:.1f} % of the Gflops")
            out["big"]["cost_of_spread"] = cost
    write_json(args.json, out)


if __name__ == "__main__":
    run_main(main)
