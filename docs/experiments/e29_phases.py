# E29: per-phase time of a trace (hplsim predict --trace DIR --trace-panels K) and the row swaps' start offsets by process column. Usage: python e29_phases.py DIR [DIR ...]
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from hplsim.emulate.trace import read_trace
for d in sys.argv[1:]:
    t = read_trace(d); e = t.events
    e = e.assign(dur=e.end_s - e.start_s)
    e["xfer"] = np.where(e.kind == "mpi", e.dur - e.wait_s, 0.0)
    e["comp"] = np.where(e.kind == "kernel", e.dur, 0.0)
    R = t.meta["ranks"]
    print("==", d, "gflops", t.meta["gflops"], "time", t.meta["time_s"], "panels", t.meta["panels"])
    g = e.groupby("phase").agg(total=("dur", "sum"), wait=("wait_s", "sum"), xfer=("xfer", "sum"), comp=("comp", "sum")) / R
    print(g.round(4).to_string())
    # per panel: span of the whole panel's activity, and swap phase stats
    P = 32
    e["col"] = e["rank"] % P  # row-major: rank = p*Q + q
    e["row"] = e["rank"] // P
    sw = e[e.phase == "swap"].groupby(["panel", "rank"]).agg(s=("start_s", "min"), f=("end_s", "max"), w=("wait_s", "sum"), x=("xfer", "sum"))
    sw = sw.reset_index(); sw["col"] = sw["rank"] % P
    bycol = sw.groupby(["panel", "col"]).agg(s=("s", "min"), f=("f", "max"), w=("w", "mean"), x=("x", "mean")).reset_index()
    for p in (1, 5, 20, 35):
        b = bycol[bycol.panel == p]
        if len(b) == 0: continue
        s0 = b.s.min()
        print(f"panel {p}: swap start offsets by col (ms):", np.round((b.sort_values('s').s.values - s0) * 1e3, 2)[:32:3], 
              " durations (ms) median", round(float(((b.f - b.s) * 1e3).median()), 2), "max", round(float(((b.f - b.s) * 1e3).max()), 2),
              " mean wait/xfer per rank ms", round(float(b.w.mean() * 1e3), 2), round(float(b.x.mean() * 1e3), 2))
    # per panel wall span (first start to last end among all ranks)
    span = e.groupby("panel").agg(s=("start_s", "min"), f=("end_s", "max"))
    print("panel spans (s) 1..10:", np.round(np.diff(span.s.values[:12]), 4))
