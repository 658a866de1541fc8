"""E61: the spread-roll's stall with look-ahead under CPUs of different speeds, on E57's
slice (16 Dahu nodes x 8 ranks, N = 8,000, 2ring, E52's platform without the per-message
cost, seed 1).

    python e61_roll_stall.py OUT e52.xml NAME=model.yaml [NAME=model.yaml ...]
    python e61_roll_stall.py --seeds 1,2,3,4 OUT e52.xml NAME=model.yaml [...]
    python e61_roll_stall.py --report OUT/t-NAME-1-1 [...]

Per model: spread-roll / binary exchange at DEPTH 0 and 1, and from the traced roll at
DEPTH 1 (panels 5-24), per node: its CPUs' dgemm seconds per flop and its share of the
dgemm flops, both relative to the slice's, the broadcast's receives and sends made inside
the roll and the roll's MPI waiting per rank and panel, and when its ranks enter the roll. With --seeds: spread-roll / binary exchange at DEPTH 1 for each seed, no
trace."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.emulate.trace import TraceRequest, inside, read_trace
from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import load_platform
from hplsim.predict import ModelSource, predict

P, Q, N = 16, 8, 8000
PANELS = range(5, 25)


def run(out: Path, platform, model: ModelSource, depth: int, swap: int, bcast: int = 2, trace: bool = False,
        seed: int = 1):
    config = HplConfig(n=N, nb=128, p=P, q=Q, pfact=1, rfact=2, bcast=bcast, depth=depth, swap=swap)
    request = TraceRequest(out, panels=30) if trace else None
    return predict(config, platform, model, seed=seed, trace=request).gflops


def per_node(trace_dir: Path) -> pd.DataFrame:
    """Per node (process row): its dgemm's seconds per flop over the slice's (its CPUs'
    speed; the seconds alone follow the rows' shares of the trailing matrix), its share of
    the dgemm flops, forwarding inside the roll and the roll's waiting (ms per rank and
    panel), and when its ranks enter the roll relative to the slice's median entry (ms,
    mean over panels)."""
    events = read_trace(trace_dir).events
    events = events[events.panel.isin(PANELS)].sort_values(["rank", "start_s"])
    entry = events[events.phase == "swap"].groupby(["panel", "rank"]).start_s.min().unstack("rank")
    calls = (events.phase == "bcast") & events.name.isin(["MPI_Send", "MPI_Recv"])
    hops = events[calls][inside(events, calls, "swap", "bcast")]
    forwarded = (hops.end_s - hops.start_s).groupby([hops["rank"], hops.name]).sum().unstack(fill_value=0.0)
    dgemm = events[events.name == "dgemm"]
    by_rank = pd.DataFrame({
        "dgemm_s": (dgemm.end_s - dgemm.start_s).groupby(dgemm["rank"]).sum(),
        "flops": (2.0 * dgemm.m * dgemm.n * dgemm.k).astype(float).groupby(dgemm["rank"]).sum(),  # m, n, k: nullable
        "fwd_recv": forwarded.get("MPI_Recv"), "fwd_send": forwarded.get("MPI_Send"),
        "wait": events[(events.phase == "swap") & (events.kind == "mpi")].groupby("rank").wait_s.sum(),
        "entry": entry.sub(entry.median(axis=1), axis=0).mean() * 1e3,
    }).fillna({"fwd_recv": 0.0, "fwd_send": 0.0})
    by_rank["dgemm"] = (by_rank.dgemm_s / by_rank.flops) / (by_rank.dgemm_s.sum() / by_rank.flops.sum())
    by_rank["work"] = by_rank.flops / by_rank.flops.mean()
    by_rank[["fwd_recv", "fwd_send", "wait"]] *= 1e3 / len(PANELS)
    columns = ["dgemm", "work", "fwd_recv", "fwd_send", "wait", "entry"]
    return by_rank[columns].groupby(by_rank.index // Q).mean().rename_axis("node")


def main(out: Path, xml: Path, models: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    platform = load_platform(xml, ranks_per_host=Q)
    for spec in models:
        name, path = spec.split("=", 1)
        model = ModelSource.from_path(Path(path))
        g = {(d, s): run(out / f"t-{name}-{d}-{s}", platform, model, d, s, trace=(d == 1 and s == 1))
             for d in (0, 1) for s in (0, 1)}
        print(f"## {name}")
        print(f"Gflops D0 bx {g[0, 0]:.3f} roll {g[0, 1]:.3f} ratio {g[0, 1] / g[0, 0]:.4f}; "
              f"D1 bx {g[1, 0]:.3f} roll {g[1, 1]:.3f} ratio {g[1, 1] / g[1, 0]:.4f}")
        report(out / f"t-{name}-1-1")


def report(trace_dir: Path) -> None:
    df = per_node(trace_dir)
    print(df.round(3).to_string())
    print("slice mean:", df.mean().round(3).to_dict())
    print("corr(dgemm, wait) %.2f  corr(dgemm, fwd_send) %.2f  corr(dgemm, entry) %.2f" % (
        df.dgemm.corr(df.wait), df.dgemm.corr(df.fwd_send), df.dgemm.corr(df.entry)))
    sys.stdout.flush()


def seeds(out: Path, xml: Path, models: list[str], seeds: list[int]) -> None:
    platform = load_platform(xml, ranks_per_host=Q)
    for spec in models:
        name, path = spec.split("=", 1)
        model = ModelSource.from_path(Path(path))
        r = np.array([run(out, platform, model, 1, 1, seed=s) / run(out, platform, model, 1, 0, seed=s)
                      for s in seeds])
        print(f"{name}: DEPTH 1 roll / bx {r.mean():.4f} sd {r.std(ddof=1):.4f} per seed "
              + " ".join(f"{x:.4f}" for x in r))
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "--report":  # the per-node table of traces already made
        for d in sys.argv[2:]:
            print("##", d)
            report(Path(d))
    elif sys.argv[1] == "--seeds":
        seeds(Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5:], [int(s) for s in sys.argv[2].split(",")])
    else:
        main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
