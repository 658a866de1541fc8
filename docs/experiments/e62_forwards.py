"""E62: where the spread-roll's stall with look-ahead comes from, in a trace of any grid.

    python e62_forwards.py TRACE_DIR [TRACE_DIR ...]

Per trace (panels 5 to the last traced one but five): per rank and panel, the swap's span
(first to last event of the rank's swap, the broadcast calls made inside it included) and
its MPI waiting; the look-ahead broadcast's forwards made inside the swap (the panel's
`MPI_Send` to the row neighbour between two steps of the swap), their duration and the
part spent waiting for the neighbour to post its receive; and what that neighbour was
doing when the forward began (its innermost phase and call, and its panel against the
forwarder's swap's), and what the rank at the end of the chain of waits was doing
(`held_by`: a held roll partner's partner, and so on, to a rank that is not waiting).
"Behind": that rank was in an earlier panel than the forwarder's swap; its column's
parity is its CPU when a node holds a process row (the emulation puts a host's local rank
r on CPU r % 2). A panel's step: the time between the median rank's entries into the
updates of consecutive panels."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.emulate.trace import during, held_by, inside, read_trace


def summary(trace_dir: Path) -> dict[str, object]:
    trace = read_trace(trace_dir)
    last = (trace.meta["panels"] or 30) - 5
    events = trace.events[trace.events.panel.between(5, last - 1)].sort_values(["rank", "start_s"])
    events = events.reset_index(drop=True)
    n_rank_panels = events.groupby(["rank", "panel"]).ngroups
    swap = events[events.phase == "swap"]
    span = swap.groupby(["rank", "panel"]).agg(first=("start_s", "min"), last=("end_s", "max"))
    swap_wait = swap[swap.kind == "mpi"].wait_s.sum() / n_rank_panels
    # when each rank enters the swap against the last rank of its process column
    q = trace.meta["config"]["q"]
    column = span.index.get_level_values("rank") % q
    column_last = span.groupby([span.index.get_level_values("panel"), column])["first"]
    late = column_last.transform("max") - span["first"]
    entry_spread = (column_last.max() - column_last.min()).mean()
    last_row = column_last.idxmax().map(lambda at: at[0] // q)  # at: (rank, panel)
    sends = (events.phase == "bcast") & (events.name == "MPI_Send")
    fwd = events[sends][inside(events, sends, "swap", "bcast")]
    peer = during(events, fwd.peer.to_numpy(dtype=np.int64), fwd.start_s.to_numpy())
    peer.index = fwd.index
    # a state's panel against the forwarder's swap's (the forward is of the next panel):
    # -1, a rank a panel behind
    offset = fwd.panel.to_numpy() - 1

    def describe(state: pd.DataFrame) -> pd.Series:
        return state.phase + ":" + state.name + " " + (state.panel - offset).map("{:+d}".format)

    label = describe(peer)
    # the rank that holds the chain of waits up when the forward begins, and what it does
    roots, hops = held_by(events, fwd.peer.to_numpy(dtype=np.int64), fwd.start_s.to_numpy())
    held = during(events, roots, fwd.start_s.to_numpy())
    held.index = fwd.index
    held_label = describe(held)
    chain = pd.Series(hops, index=fwd.index)
    behind = held.panel - offset < 0
    parity = pd.Series(roots % q % 2, index=fwd.index)  # the holder's column: CPU 0 if even (local rank % 2)
    # a panel's step: between the median rank's entries into consecutive panels' updates
    entry = events[events.phase == "update"].groupby(["panel", "rank"]).start_s.min().groupby("panel").median()
    duration = fwd.end_s - fwd.start_s
    return {
        "config": trace.meta["config"]["label"], "p": trace.meta["config"]["p"], "q": trace.meta["config"]["q"],
        "gflops": trace.meta["gflops"],
        "step_ms": 1e3 * entry.diff().mean(),
        "swap_span_ms": 1e3 * (span["last"] - span["first"]).mean(),
        "swap_wait_ms": 1e3 * swap_wait,
        "until_last_entry_ms": 1e3 * late.mean(),
        "until_last_entry_ms_even_col": 1e3 * late[column % 2 == 0].mean(),
        "until_last_entry_ms_odd_col": 1e3 * late[column % 2 == 1].mean(),
        "column_entry_spread_ms": 1e3 * entry_spread,
        "last_entering_rows": last_row.value_counts().head(4).to_dict(),
        "fwd_per_rank_panel": len(fwd) / n_rank_panels,
        "fwd_ms": 1e3 * duration.mean() if len(fwd) else 0.0,
        "fwd_wait_ms": 1e3 * fwd.wait_s.mean() if len(fwd) else 0.0,
        "chain_hops": float(chain.mean()) if len(fwd) else 0.0,
        # held by a rank a panel or more behind, in all and by its column's parity (its CPU)
        "behind_share": float(duration[behind].sum() / duration.sum()) if len(fwd) else 0.0,
        "behind_ms_even_col": 1e3 * float(duration[behind & (parity == 0)].sum()),
        "behind_ms_odd_col": 1e3 * float(duration[behind & (parity == 1)].sum()),
        "holder": (duration.groupby(held_label).agg(["count", "mean", "sum"]) * [1, 1e3, 1e3]).rename(
            columns={"mean": "ms", "sum": "total_ms"}).sort_values("total_ms", ascending=False),
        "receiver": (duration.groupby(label).agg(["count", "mean"]) * [1, 1e3]).rename(
            columns={"mean": "ms"}).sort_values("count", ascending=False),
    }


if __name__ == "__main__":
    for d in sys.argv[1:]:
        s = summary(Path(d))
        receiver, holder = s.pop("receiver"), s.pop("holder")
        print("##", d)
        print("  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in s.items()))
        print("forward inside the swap, by what the receiving neighbour was doing when it began:")
        print(receiver.round(3).to_string())
        print("the same forwards, by what the rank at the end of the chain of waits was doing:")
        print(holder.round(3).to_string())
        sys.stdout.flush()
