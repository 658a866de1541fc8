"""Figures of a calibration history (`hplsim check`): the verdict of every host and CPU,
and control charts of the series that deserve a look."""

from __future__ import annotations

import pandas as pd

from hplsim.check.metrics import DEFAULT_METRICS
from hplsim.check.verdicts import IMPROVEMENT, NOT_ENOUGH, NOT_TESTABLE, OK, REGRESSION, evaluate, replay_series, \
    series_of
from hplsim.report.page import Figure, Section

VERDICT_COLOURS = {OK: "#2ca02c", IMPROVEMENT: "#1f77b4", REGRESSION: "#d62728", NOT_ENOUGH: "#c7c7c7",
                   NOT_TESTABLE: "#7f7f7f"}
CHARTS = 4  # control charts drawn: the alarms first, then the series with the most runs
WINDOW, GAMMA = 5, 0.9999  # hplsim check's defaults


def _verdicts(verdicts) -> Figure:
    import plotly.graph_objects as go

    table = pd.DataFrame([{"host": v.host, "cpu": v.cpu, "verdict": v.verdict, "runs": v.runs, "message": v.message}
                          for v in verdicts])
    codes = {v: i for i, v in enumerate(VERDICT_COLOURS)}
    grid = table.pivot(index="host", columns="cpu", values="verdict").reindex(list(dict.fromkeys(table["host"])))
    n = len(codes)
    scale = []
    for v, i in codes.items():
        scale += [[i / n, VERDICT_COLOURS[v]], [(i + 1) / n, VERDICT_COLOURS[v]]]
    fig = go.Figure(go.Heatmap(z=grid.apply(lambda col: col.map(codes)).to_numpy(dtype=float),
                               x=[f"CPU {c}" for c in grid.columns], y=list(grid.index), text=grid.to_numpy(),
                               hovertemplate="%{y} %{x}: %{text}<extra></extra>", zmin=-0.5, zmax=n - 0.5,
                               colorscale=scale, showscale=False))
    for v in VERDICT_COLOURS:  # legend entries
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=v,
                                 marker=dict(color=VERDICT_COLOURS[v], symbol="square", size=10)))
    fig.update_layout(yaxis=dict(autorange="reversed"), margin=dict(t=30), legend=dict(orientation="h"))
    counts = table["verdict"].value_counts()
    caption = (f"Verdict of each host and CPU's latest calibration against its history (Chew's test, γ = {GAMMA}, "
               f"r = 1 and {WINDOW}): " + ", ".join(f"{c} {v}" for v, c in counts.items()) + ".")
    return Figure("verdicts", caption, fig, table, tall=len(grid) > 16)


def _control_charts(history: pd.DataFrame, verdicts, metric: str) -> Figure:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    series = {(s.host, s.cpu): s for s in series_of(history, [metric])}
    alarms = [v for v in verdicts if v.verdict in (REGRESSION, IMPROVEMENT)]
    rest = sorted((v for v in verdicts if v not in alarms), key=lambda v: -v.runs)
    chosen = [(v.host, v.cpu) for v in (alarms + rest)[:CHARTS]]
    fig = make_subplots(rows=len(chosen), cols=1, shared_xaxes=False, vertical_spacing=0.08,
                        subplot_titles=[f"{h} CPU {c}" for h, c in chosen])
    tables = []
    for row, key in enumerate(chosen, start=1):
        s = series[key]
        replay = replay_series(s, WINDOW, GAMMA)
        t = pd.to_datetime(replay["start_time"], unit="s")
        values = s.runs[metric].to_numpy()
        low, high = replay.get(f"{metric}_low"), replay.get(f"{metric}_high")
        if low is not None:
            fig.add_trace(go.Scatter(x=t, y=high, mode="lines", line=dict(width=0), showlegend=False,
                                     hoverinfo="skip"), row=row, col=1)
            fig.add_trace(go.Scatter(x=t, y=low, mode="lines", line=dict(width=0), fill="tonexty",
                                     fillcolor="rgba(44,160,44,0.2)", name="expected (r = 1)",
                                     showlegend=row == 1), row=row, col=1)
        colours = replay["verdict"].map(VERDICT_COLOURS).fillna("#000000")
        fig.add_trace(go.Scatter(x=t, y=values, mode="lines+markers", marker=dict(color=colours, size=7),
                                 line=dict(color="#444", width=1), name=metric, showlegend=row == 1),
                      row=row, col=1)
        tables.append(replay.assign(host=key[0], cpu=key[1], **{metric: values}))
    fig.update_layout(height=max(300, 260 * len(chosen)), margin=dict(t=40), legend=dict(orientation="h"))
    table = pd.concat(tables, ignore_index=True)
    keep = ["host", "cpu", "run_id", "start_time", metric, f"{metric}_low", f"{metric}_high", "verdict"]
    caption = (f"Control charts of {metric} for {len(chosen)} series (alarms first): each run, coloured by its "
               "verdict when it arrived, and the band the runs before it predicted.")
    return Figure("control", caption, fig, table[[c for c in keep if c in table]], tall=True)


def check_section(history: pd.DataFrame, source: str) -> Section:
    metrics = [m for m in DEFAULT_METRICS if m in history.columns]
    verdicts = evaluate(history, metrics, WINDOW, GAMMA)
    chart_metric = "avg_gflops" if "avg_gflops" in history.columns else metrics[0]
    intro = (f"Calibration history {source}: {len(history)} observations of {len(verdicts)} host/CPU series, "
             f"tested on {', '.join(metrics)}.")
    return Section("check", "Calibration history", intro,
                   [_verdicts(verdicts), _control_charts(history, verdicts, chart_metric)])
