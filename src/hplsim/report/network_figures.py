"""Figures of an MPI calibration: the measured durations against message size, the
piecewise-linear fit that `hplsim fit --network` makes of them (the same function, same
seed), its breakpoints, and the residuals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hplsim.models.network import NetworkFit, fit_network, segments_table
from hplsim.report.page import Figure, Section

MAX_POINTS = 3000  # per operation: enough to see the cloud, light enough for the page


def _points(g: pd.DataFrame) -> pd.DataFrame:
    return g.sample(MAX_POINTS, random_state=0) if len(g) > MAX_POINTS else g


def _fit_figure(data: pd.DataFrame, fit: NetworkFit, tag: str) -> Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    breakpoints = sorted({b for bs in fit.breakpoints.values() for b in bs})
    for op, f in fit.fits.items():
        g = _points(data[data["operation"] == op])
        fig.add_trace(go.Scattergl(x=g["size"], y=g["duration"], mode="markers", name=f"{op} (measured)",
                                   marker=dict(size=3, opacity=0.4)))
        sizes = np.unique(np.concatenate([np.geomspace(max(1.0, g["size"].min()), g["size"].max(), 200),
                                          np.asarray(f.breakpoints, float)]))
        fig.add_trace(go.Scatter(x=sizes, y=f.predict(sizes), mode="lines", name=f"{op} (fit)"))
    for b in breakpoints:
        fig.add_vline(x=b, line=dict(color="#bbb", dash="dot", width=1))
    fig.update_layout(xaxis=dict(type="log", title="message size (bytes)"),
                      yaxis=dict(type="log", title="duration (s)"), margin=dict(t=30), legend=dict(orientation="h"))
    caption = (f"{tag}: every measured MPI call ({len(data):,}) against its size, the piecewise-linear fit of "
               f"each operation and the breakpoints ({', '.join(f'{b:,.0f}' for b in breakpoints) or 'none'} bytes; "
               f"detached below {fit.detached_threshold:,} bytes).")
    return Figure(f"fit-{tag}", caption, fig, segments_table(fit))


def _residual_figure(data: pd.DataFrame, fit: NetworkFit, tag: str) -> Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    rows = []
    for op, f in fit.fits.items():
        g = data[data["operation"] == op]
        rel = g["duration"].to_numpy(float) / f.predict(g["size"].to_numpy(float)) - 1.0
        seg = f.segment_index(g["size"].to_numpy(float))
        for i in np.unique(seg):
            r = rel[seg == i]
            rows.append({"operation": op, "segment": int(i), "calls": int(r.size),
                         "median_residual_pct": 100 * float(np.median(r)),
                         "p10_pct": 100 * float(np.quantile(r, 0.1)), "p90_pct": 100 * float(np.quantile(r, 0.9))})
        keep = _points(pd.DataFrame({"size": g["size"].to_numpy(float), "rel": rel}))
        fig.add_trace(go.Scattergl(x=keep["size"], y=100 * keep["rel"], mode="markers", name=op,
                                   marker=dict(size=3, opacity=0.4)))
    fig.add_hline(y=0, line=dict(color="#999", dash="dash"))
    fig.update_layout(xaxis=dict(type="log", title="message size (bytes)"),
                      yaxis=dict(title="measured / fitted − 1 (%)"), margin=dict(t=30), legend=dict(orientation="h"))
    caption = (f"{tag}: residuals of the fit, by size; the table gives each segment's median and 10–90 % "
               "range (the noise the emulation draws from).")
    return Figure(f"residuals-{tag}", caption, fig, pd.DataFrame(rows))


def network_section(network: pd.DataFrame, source: str) -> Section:
    """One fit per cluster of the measurements (a file may hold several, as Dahu's does)."""
    clusters = [c for c in network["cluster"].dropna().unique()] if "cluster" in network else []
    groups = [(str(c), network[network["cluster"] == c]) for c in clusters] or [("network", network)]
    figures = []
    for tag, data in groups:
        fit = fit_network(data, cluster=tag if clusters else None, seed=0)
        figures += [_fit_figure(data, fit, tag), _residual_figure(data, fit, tag)]
    intro = (f"MPI calibration {source}: {len(network):,} measurements. The fit is the one "
             "`hplsim fit --network` makes (breakpoints shared by the operations, seed 0); its SMPI options "
             "are what a platform file gets from it (docs/fit.md).")
    return Section("network", "MPI calibration: fit and breakpoints", intro, figures)
