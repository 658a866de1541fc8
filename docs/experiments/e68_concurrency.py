"""E68: per node, how many intra-node transfers are in flight at once, as a share of the
time the node has at least one; from an hplsim trace (`predict --trace DIR`).

Usage: python e68_concurrency.py TRACE_DIR [RANKS_PER_NODE]

A transfer is a receive (MPI_Recv or the wait of an MPI_Irecv) of at least 64 kB (HPL's
panels, not its pivots) from a rank of the same node (ranks numbered node by node, as the
presets' hostfiles place them), from when both sides had begun (the later of the receive's
start and the send's, `peer_start_s`) to the receive's end."""
import sys
import numpy as np
from hplsim.emulate.trace import read_trace

RPN = int(sys.argv[2]) if len(sys.argv) > 2 else 32
MINB = 64000
t = read_trace(sys.argv[1])
e = t.events
r = e[e.name.isin(["MPI_Recv", "MPI_Wait(recv)"]) & (e.bytes >= MINB)].copy()
r = r[(r["rank"] // RPN) == (r.peer // RPN)]
r["s"] = np.maximum(r.start_s, r.peer_start_s.fillna(r.start_s))
r["node"] = r["rank"] // RPN
tot = {}
for node, g in r.groupby("node"):
    ev = np.concatenate([np.stack([g.s.values, np.ones(len(g))], 1), np.stack([g.end_s.values, -np.ones(len(g))], 1)])
    ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]
    c = np.cumsum(ev[:, 1])
    dt = np.diff(ev[:, 0])
    for k, d in zip(c[:-1], dt):
        tot[int(k)] = tot.get(int(k), 0.0) + d
busy = sum(v for k, v in tot.items() if k > 0)
print("transfers", len(r), "busy node-seconds", round(busy, 3))
for k in sorted(tot):
    if k > 0:
        print(f"  {k:3d} at once: {100 * tot[k] / busy:5.1f} % of busy time")
print("mean concurrency while busy", round(sum(k * v for k, v in tot.items() if k > 0) / busy, 2))
