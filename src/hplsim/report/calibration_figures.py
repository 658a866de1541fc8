"""Figures of a model file against its calibration archive: each measured kernel call next
to the duration the model expects for it (on the call's host and CPU), and the residuals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.models.modelfile import KERNEL_VARIABLES, ModelFile
from hplsim.models.readers import Measurements
from hplsim.report.page import Figure, Section

MAX_POINTS = 3000  # per kernel: enough to see the cloud, light enough for the page


def expected_durations(model: ModelFile, calls: pd.DataFrame) -> pd.DataFrame:
    """The calls the model describes, with the model's expected duration for each."""
    parts = []
    for (kernel, host, cpu), g in calls.groupby(["kernel", "host", "cpu"], dropna=False, sort=False):
        try:
            laws = model.resolve(str(host), int(cpu) if pd.notna(cpu) else 0)
        except HplsimError:
            continue  # a host the model does not describe (and no default)
        if kernel not in laws:
            continue
        law = laws[kernel]
        sizes = {v: g[v].to_numpy(float) for v in KERNEL_VARIABLES[kernel] if v in g}
        if len(sizes) != len(KERNEL_VARIABLES[kernel]):
            continue
        sizes.update({v: g[v].to_numpy(float) for v in ("ld",) if v in g})
        parts.append(g.assign(expected=np.broadcast_to(law.predict(sizes), len(g))))
    if not parts:
        raise HplsimError("the calibration archive has no call of a kernel and host the model describes")
    out = pd.concat(parts, ignore_index=True)
    return out[out["expected"] > 0]


def _measured_vs_expected(df: pd.DataFrame) -> Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    lo, hi = float(df[["duration", "expected"]].min().min()), float(df[["duration", "expected"]].max().max())
    fig.add_trace(go.Scattergl(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="#999", dash="dash"),
                               name="measured = expected"))
    for kernel, g in df.groupby("kernel", sort=True):
        g = g.sample(MAX_POINTS, random_state=0) if len(g) > MAX_POINTS else g
        fig.add_trace(go.Scattergl(x=g["expected"], y=g["duration"], mode="markers", name=str(kernel),
                                   marker=dict(size=4, opacity=0.5)))
    fig.update_layout(xaxis=dict(type="log", title="expected by the model (s)"),
                      yaxis=dict(type="log", title="measured (s)"), margin=dict(t=30), legend=dict(orientation="h"))
    caption = (f"Every calibration call ({len(df):,}) against the duration the model expects for it on its host "
               "and CPU: points on the diagonal are calls the model predicts exactly.")
    return Figure("measured-vs-expected", caption, fig, _summary(df))


def _summary(df: pd.DataFrame) -> pd.DataFrame:
    rel = df["duration"] / df["expected"] - 1.0
    g = rel.groupby(df["kernel"])
    return pd.DataFrame({"calls": g.size(), "median_residual_pct": 100 * g.median(),
                         "p10_pct": 100 * g.quantile(0.1), "p90_pct": 100 * g.quantile(0.9),
                         "total_measured_s": df.groupby("kernel")["duration"].sum(),
                         "total_expected_s": df.groupby("kernel")["expected"].sum()}).reset_index()


def _residuals(df: pd.DataFrame) -> Figure:
    import plotly.graph_objects as go

    rel = 100 * (df["duration"] / df["expected"] - 1.0)
    fig = go.Figure()
    for kernel, r in rel.groupby(df["kernel"], sort=True):
        fig.add_trace(go.Box(y=r.sample(MAX_POINTS, random_state=0) if len(r) > MAX_POINTS else r, name=str(kernel),
                             boxpoints="outliers"))
    # A few stalled calls (thousands of %) would flatten every box: the axis stops at the 1st
    # and 99th percentiles (zoom out to see the rest).
    lo, hi = np.percentile(rel, [1, 99])
    pad = 0.1 * (hi - lo) or 1.0
    fig.update_layout(yaxis=dict(title="measured / expected − 1 (%)", range=[lo - pad, hi + pad]),
                      margin=dict(t=30), showlegend=False)
    hosts = df.groupby(["host", "cpu"], dropna=False)
    per_host = pd.DataFrame({"calls": hosts.size(),
                             "median_residual_pct": 100 * hosts.apply(lambda g: (g["duration"] / g["expected"]).median()
                                                                      - 1.0)}).reset_index()
    caption = ("Residuals of each kernel relative to the model's expectation (box: quartiles, whiskers: 1.5 IQR; "
               "axis cut at the 1st and 99th percentiles); the table gives the median per host and CPU.")
    return Figure("residuals", caption, fig, per_host)


def calibration_section(model: ModelFile, measurements: Measurements, model_source: str, source: str) -> Section:
    df = expected_durations(model, measurements.kernels)
    intro = (f"Calibration archive {source} against the model {model_source}: {len(df):,} calls of "
             f"{df['kernel'].nunique()} kernel(s) on {df.groupby(['host', 'cpu'], dropna=False).ngroups} host/CPU(s).")
    return Section("calibration", "Model vs calibration", intro, [_measured_vs_expected(df), _residuals(df)])
