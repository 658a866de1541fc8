"""Figures of a prediction's trace: the Gantt chart, the waiting chain of one panel, the
per-rank time split, and the time per HPL phase and per kernel over the panels."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hplsim.emulate.trace import STATES, Trace, rank_breakdown
from hplsim.report.page import Figure, Section

# Gantt colours: the two big kernels, the rest of compute, MPI moving data, MPI waiting.
GANTT_STATES = ("dgemm", "dtrsm", "other kernels", "MPI transfer", "MPI wait")
COLOURS = {"dgemm": "#1f77b4", "dtrsm": "#17becf", "other kernels": "#9467bd",
           "MPI transfer": "#ff7f0e", "MPI wait": "#d62728",
           "compute": "#1f77b4", "transfer": "#ff7f0e", "wait": "#d62728"}
PHASE_COLOURS = {"fact": "#2ca02c", "bcast": "#ff7f0e", "swap": "#8c564b", "update": "#1f77b4",
                 "trsv": "#7f7f7f", "none": "#c7c7c7"}
# Above this many segments the Gantt chart shows each rank's state at evenly spaced instants
# (a heat map: one cell per rank and instant) instead of every interval: it opens in a
# second at 1,024 ranks where a million WebGL segments would not.
EXACT_MAX_SEGMENTS = 150_000
GANTT_INSTANTS = 1200  # about one per pixel of the chart


def segments(trace: Trace) -> pd.DataFrame:
    """Every interval as Gantt segments (rank, start, end, state), times from the start of
    HPL's timed region; an MPI call that waited is two segments, waiting first (it waits
    for its peer, then the data moves); a rank done before the slowest waits to the end."""
    ev = trace.events
    origin = float(trace.regions[:, 0].min())
    start = ev["start_s"].to_numpy() - origin
    end = ev["end_s"].to_numpy() - origin
    name = ev["name"].astype(str).to_numpy()
    kernel = (ev["kind"] == "kernel").to_numpy()
    wait = ev["wait_s"].to_numpy()
    state = np.where(kernel, np.where(np.isin(name, ("dgemm", "dtrsm")), name, "other kernels"), "MPI transfer")
    mpi_wait = ~kernel & (wait > 0)
    split = start + np.where(mpi_wait, wait, 0.0)
    parts = [
        pd.DataFrame({"rank": ev["rank"].to_numpy(), "start": split, "end": end, "state": state}),
        pd.DataFrame({"rank": ev["rank"].to_numpy()[mpi_wait], "start": start[mpi_wait], "end": split[mpi_wait],
                      "state": "MPI wait"}),
    ]
    if trace.meta.get("panels") is None:
        last = trace.regions[:, 1] - origin
        tail = last < last.max()
        parts.append(pd.DataFrame({"rank": np.flatnonzero(tail), "start": last[tail], "end": last.max(),
                                   "state": "MPI wait"}))
    seg = pd.concat(parts, ignore_index=True)
    seg = seg[seg["end"] > seg["start"]]
    return seg.sort_values(["rank", "start"], kind="stable", ignore_index=True)


def _exact_gantt(seg: pd.DataFrame, ranks: int):
    import plotly.graph_objects as go

    fig = go.Figure()
    width = max(1.0, min(12.0, 500.0 / ranks))
    for state in GANTT_STATES:
        s = seg[seg["state"] == state]
        if s.empty:
            continue
        n = len(s)
        x = np.empty(3 * n)
        y = np.empty(3 * n)
        x[0::3], x[1::3], x[2::3] = s["start"], s["end"], np.nan
        y[0::3], y[1::3], y[2::3] = s["rank"], s["rank"], np.nan
        fig.add_trace(go.Scattergl(x=x, y=y, mode="lines", name=state, line=dict(color=COLOURS[state], width=width),
                                   hoverinfo="x+y+name"))
    return fig


def state_at_instants(seg: pd.DataFrame, ranks: int, instants: np.ndarray) -> np.ndarray:
    """codes[rank, i]: the index in GANTT_STATES of what the rank does at instants[i], -1 idle."""
    codes = np.full((ranks, len(instants)), -1, dtype=np.int8)
    code_of = {s: i for i, s in enumerate(GANTT_STATES)}
    state = seg["state"].map(code_of).to_numpy()
    for rank, rows in seg.groupby("rank", sort=False).indices.items():
        st, en = seg["start"].to_numpy()[rows], seg["end"].to_numpy()[rows]
        i = np.searchsorted(st, instants, side="right") - 1
        ok = (i >= 0) & (en[np.clip(i, 0, None)] > instants)
        codes[rank, ok] = state[rows][i[ok]]
    return codes


def _instant_gantt(seg: pd.DataFrame, ranks: int):
    import plotly.graph_objects as go

    t_end = float(seg["end"].max())
    instants = (np.arange(GANTT_INSTANTS) + 0.5) * t_end / GANTT_INSTANTS
    codes = state_at_instants(seg, ranks, instants)
    n = len(GANTT_STATES)
    # A discrete colour scale: code c (or -1 idle, shown white) gets its own band.
    scale = [[0.0, "#ffffff"], [1 / (n + 1), "#ffffff"]]
    for i, state in enumerate(GANTT_STATES):
        scale += [[(i + 1) / (n + 1), COLOURS[state]], [(i + 2) / (n + 1), COLOURS[state]]]
    fig = go.Figure(go.Heatmap(z=codes.astype(np.int8), x=instants, y=np.arange(ranks), zmin=-1.5, zmax=n - 0.5,
                               colorscale=scale, showscale=False, hoverinfo="x+y"))
    for state in GANTT_STATES:  # legend entries
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=state,
                                 marker=dict(color=COLOURS[state], symbol="square", size=10)))
    return fig


def gantt(trace: Trace, seg: pd.DataFrame) -> Figure:
    ranks = trace.meta["ranks"]
    exact = len(seg) <= EXACT_MAX_SEGMENTS
    fig = _exact_gantt(seg, ranks) if exact else _instant_gantt(seg, ranks)
    fig.update_layout(xaxis_title="simulated time since HPL's start (s)", yaxis_title="rank",
                      yaxis=dict(autorange="reversed"), legend=dict(orientation="h"), margin=dict(t=30))
    share = (seg.assign(d=seg["end"] - seg["start"]).groupby("state")["d"].sum()
             .reindex(list(GANTT_STATES), fill_value=0.0))
    table = pd.DataFrame({"state": share.index, "seconds (all ranks)": share.to_numpy(),
                          "share %": 100 * share.to_numpy() / max(share.sum(), 1e-300)})
    panels = trace.meta.get("panels")
    what = f"the first {panels} panels" if panels else "the whole run"
    caption = (f"Gantt chart of {what}: what each of the {ranks} ranks does over simulated time "
               f"(zoom with the mouse; double-click to reset).")
    note = "" if exact else (f"{len(seg):,} intervals: each rank's state is shown at {GANTT_INSTANTS} evenly spaced "
                             "instants; the trace file has every interval.")
    return Figure("gantt", caption, fig, table, tall=True, note=note)


def breakdown(trace: Trace) -> Figure:
    import plotly.graph_objects as go

    b = rank_breakdown(trace)
    fig = go.Figure()
    for state in STATES:
        fig.add_trace(go.Bar(x=b["rank"], y=b[f"{state}_s"], name=state, marker_color=COLOURS[state]))
    fig.update_layout(barmode="stack", xaxis_title="rank", yaxis_title="seconds", margin=dict(t=30),
                      legend=dict(orientation="h"))
    panels = trace.meta.get("panels")
    total = f"HPL's time ({trace.hpl_time_s:.6g} s)" if panels is None else f"the first {panels} panels"
    caption = (f"Each rank's time split into modelled compute, MPI transfers and MPI waiting; "
               f"the bars add up to {total}.")
    return Figure("breakdown", caption, fig, b)


def phases_over_panels(trace: Trace) -> Figure:
    import plotly.graph_objects as go

    ev = trace.events[trace.events["panel"] >= 0]
    per = ((ev["end_s"] - ev["start_s"]).groupby([ev["panel"], ev["phase"].astype(str)]).sum()
           / trace.meta["ranks"]).unstack(fill_value=0.0)
    fig = go.Figure()
    for phase in [p for p in PHASE_COLOURS if p in per.columns]:
        fig.add_trace(go.Bar(x=per.index, y=per[phase], name=phase, marker_color=PHASE_COLOURS[phase]))
    fig.update_layout(barmode="stack", xaxis_title="panel", yaxis_title="seconds per rank (mean)",
                      margin=dict(t=30), legend=dict(orientation="h"))
    table = per.reset_index()
    caption = ("Time per HPL phase for each panel (factorisation, broadcast, row swaps, update; "
               "kernels and MPI, mean over ranks): where each iteration's time goes.")
    return Figure("phases", caption, fig, table)


def kernels_over_panels(trace: Trace, top: int = 8) -> Figure:
    import plotly.graph_objects as go

    ev = trace.events[(trace.events["kind"] == "kernel") & (trace.events["panel"] >= 0)]
    per = ((ev["end_s"] - ev["start_s"]).groupby([ev["panel"], ev["name"].astype(str)]).sum()
           .unstack(fill_value=0.0))
    order = per.sum().sort_values(ascending=False).index
    fig = go.Figure()
    for name in order[:top]:
        fig.add_trace(go.Scatter(x=per.index, y=per[name], mode="lines+markers", name=name))
    fig.update_layout(xaxis_title="panel", yaxis_title="seconds (sum over ranks)", yaxis_type="log",
                      margin=dict(t=30), legend=dict(orientation="h"))
    caption = f"Time per kernel in each panel, summed over ranks (the {min(top, len(order))} largest kernels)."
    return Figure("kernels", caption, fig, per[list(order)].reset_index())


def waiting_chain(trace: Trace, panel: int, max_steps: int = 100_000) -> pd.DataFrame:
    """The chain of intervals that made panel `panel` end when it did: from the panel's last
    interval, walk back on its rank; where a rank waited for a message, jump to the sender
    at the moment it began sending. Each row: rank, start, end, what (latest first)."""
    ev = trace.events
    ev = ev[ev["panel"] == panel]
    if ev.empty:
        return pd.DataFrame(columns=["rank", "start_s", "end_s", "what", "phase", "waited_for"])
    by_rank = {r: g.sort_values("start_s") for r, g in ev.groupby("rank", sort=False)}
    t_begin = float(ev["start_s"].min())
    last = ev.loc[ev["end_s"].idxmax()]
    rank, t = int(last["rank"]), float(last["end_s"])
    rows = []
    for _ in range(max_steps):
        g = by_rank.get(rank)
        if g is None:
            break
        i = int(np.searchsorted(g["start_s"].to_numpy(), t, side="left")) - 1
        if i < 0:
            break
        e = g.iloc[i]
        waited = e["kind"] == "mpi" and e["wait_s"] > 0 and not np.isnan(e["peer_start_s"]) and pd.notna(e["peer"])
        rows.append({"rank": rank, "start_s": float(e["start_s"]), "end_s": float(min(e["end_s"], t)),
                     "what": str(e["name"]), "phase": str(e["phase"]),
                     "waited_for": int(e["peer"]) if waited else None})
        if waited and e["peer_start_s"] > e["start_s"]:
            rank, t = int(e["peer"]), float(e["peer_start_s"])
        else:
            t = float(e["start_s"])
        if t <= t_begin:
            break
    return pd.DataFrame(rows)


def _chain_panel(trace: Trace) -> int:
    """The traced panel with the most waiting (the interesting one), else the first."""
    ev = trace.events[trace.events["panel"] >= 0]
    if ev.empty:
        return 0
    waits = ev.groupby("panel")["wait_s"].sum()
    return int(waits.idxmax()) if waits.max() > 0 else int(waits.index.min())


def chain_figure(trace: Trace) -> Figure:
    import plotly.graph_objects as go

    panel = _chain_panel(trace)
    chain = waiting_chain(trace, panel)
    origin = float(trace.regions[:, 0].min())
    fig = go.Figure()
    ev = trace.events[trace.events["panel"] == panel]
    if not chain.empty:  # the ranks on the chain only: readable, and light at 1,024 ranks
        ev = ev[ev["rank"].isin(chain["rank"].unique())]
    # The panel's intervals as a light backdrop, the chain on top.
    for kind, colour in (("kernel", "#aec7e8"), ("mpi", "#ffbb78")):
        s = ev[ev["kind"] == kind]
        n = len(s)
        x = np.empty(3 * n)
        y = np.empty(3 * n)
        x[0::3], x[1::3], x[2::3] = s["start_s"] - origin, s["end_s"] - origin, np.nan
        y[0::3], y[1::3], y[2::3] = s["rank"], s["rank"], np.nan
        fig.add_trace(go.Scattergl(x=x, y=y, mode="lines", line=dict(color=colour, width=6),
                                   name=f"panel {panel}: {'kernels' if kind == 'kernel' else 'MPI'}", hoverinfo="skip"))
    if not chain.empty:
        c = chain.iloc[::-1]
        xs, ys = [], []
        for _, r in c.iterrows():
            xs += [r["start_s"] - origin, r["end_s"] - origin]
            ys += [r["rank"], r["rank"]]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name="waiting chain",
                                 line=dict(color="#d62728", width=2), marker=dict(size=4)))
    fig.update_layout(xaxis_title="simulated time since HPL's start (s)", yaxis_title="rank",
                      yaxis=dict(autorange="reversed"), margin=dict(t=30), legend=dict(orientation="h"))
    hops = int(chain["waited_for"].notna().sum()) if not chain.empty else 0
    caption = (f"Waiting chain of panel {panel} (the traced panel with the most waiting): what its last "
               f"interval waited for, back to the panel's start ({len(chain)} intervals, {hops} jumps to a sender).")
    table = chain.assign(start_s=chain["start_s"] - origin, end_s=chain["end_s"] - origin) if not chain.empty else chain
    return Figure("chain", caption, fig, table)


def trace_section(trace: Trace, source: str) -> Section:
    c = trace.meta["config"]
    seg = segments(trace)
    intro = (f"Prediction traced from {source}: N={c.get('n')}, NB={c.get('nb')}, P×Q={c.get('p')}×{c.get('q')} "
             f"{c.get('label', '')}, seed {trace.meta.get('seed')}: {trace.meta.get('gflops', float('nan')):.6g} Gflops "
             f"in {trace.hpl_time_s:.6g} s (simulated), {len(trace.events):,} intervals"
             + (f", first {trace.meta['panels']} panels." if trace.meta.get("panels") else "."))
    return Section("trace", "Prediction trace", intro, [
        gantt(trace, seg), breakdown(trace), chain_figure(trace), phases_over_panels(trace), kernels_over_panels(trace),
    ])
