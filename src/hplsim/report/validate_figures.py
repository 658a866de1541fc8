"""Figures of a `hplsim validate` run: predicted against real Gflops with the real runs'
spread, and the error of each configuration."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hplsim.errors import HplsimError
from hplsim.report.page import Figure, Section

TABLE = "validation.csv"
COLUMNS = ["configuration", "predicted_gflops", "real_gflops_median", "real_gflops_min", "real_gflops_max",
           "real_runs", "error_pct", "spread_pct", "within_real_range"]


def is_validate_dir(path: Path) -> bool:
    return path.is_dir() and (path / TABLE).exists()


def load_validation(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path / TABLE)
    except (OSError, ValueError) as exc:
        raise HplsimError(f"{path / TABLE}: not readable ({exc})") from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise HplsimError(f"{path / TABLE}: not a validate table (no {', '.join(missing)})")
    if df.empty:
        raise HplsimError(f"{path / TABLE}: no configuration")
    return df


def _predicted_vs_real(df: pd.DataFrame) -> Figure:
    import plotly.graph_objects as go

    lo = float(min(df["predicted_gflops"].min(), df["real_gflops_min"].min())) * 0.95
    hi = float(max(df["predicted_gflops"].max(), df["real_gflops_max"].max())) * 1.05
    fig = go.Figure([
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="#999", dash="dash"), name="prediction = reality"),
        go.Scatter(x=df["real_gflops_median"], y=df["predicted_gflops"], mode="markers", text=df["configuration"],
                   name="configurations", marker=dict(size=9, color="#1f77b4"),
                   error_x=dict(type="data", symmetric=False, array=df["real_gflops_max"] - df["real_gflops_median"],
                                arrayminus=df["real_gflops_median"] - df["real_gflops_min"]),
                   hovertemplate="%{text}: real %{x:.4g}, predicted %{y:.4g}<extra></extra>"),
    ])
    fig.update_layout(xaxis_title="real Gflops (median; bars: min to max of the runs)", yaxis_title="predicted Gflops",
                      margin=dict(t=30), legend=dict(orientation="h"))
    err = df["error_pct"].abs()
    caption = (f"Predicted against real Gflops for {len(df)} configurations (median |error| {err.median():.1f} %, "
               f"max {err.max():.1f} %; {int(df['within_real_range'].sum())} within the real runs' range).")
    return Figure("predicted-vs-real", caption, fig, df[COLUMNS])


def _errors(df: pd.DataFrame) -> Figure:
    import plotly.graph_objects as go

    low = 100.0 * (df["real_gflops_min"] / df["real_gflops_median"] - 1.0)
    high = 100.0 * (df["real_gflops_max"] / df["real_gflops_median"] - 1.0)
    fig = go.Figure([
        go.Bar(x=df["configuration"], y=df["error_pct"], name="prediction error", marker_color="#1f77b4"),
        go.Scatter(x=df["configuration"], y=high, mode="markers", name="real runs' range",
                   marker=dict(symbol="line-ew-open", size=18, color="#d62728")),
        go.Scatter(x=df["configuration"], y=low, mode="markers", showlegend=False,
                   marker=dict(symbol="line-ew-open", size=18, color="#d62728")),
    ])
    fig.update_layout(yaxis_title="% (predicted / real median − 1)", margin=dict(t=30, b=120),
                      legend=dict(orientation="h"))
    caption = ("Each configuration's prediction error against the real median, and the real runs' range around "
               "that median: an error inside the range is within the machine's noise.")
    table = df[["configuration", "error_pct", "real_runs"]].assign(real_low_pct=low, real_high_pct=high)
    return Figure("errors", caption, fig, table)


def validate_section(df: pd.DataFrame, source: str) -> Section:
    intro = f"Validate run {source}: {len(df)} configurations predicted and run for real on this machine."
    return Section("validate", "Predicted vs real", intro, [_predicted_vs_real(df), _errors(df)])
