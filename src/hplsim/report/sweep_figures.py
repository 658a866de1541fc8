"""Figures of a sweep's results store: the best configurations, Gflops against N, NB and
P×Q, and the what-if variants side by side."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hplsim.errors import HplsimError
from hplsim.report.page import Figure, Section
from hplsim.sweep.show import GROUP_COLUMNS, VARIANT, configurations, describe, frame, of_variant, reference_variant, \
    varying, what_if
from hplsim.sweep.store import ResultStore

TOP = 15
MAX_FAMILIES = 10


def load_runs(path: Path) -> pd.DataFrame:
    with ResultStore(path, create=False) as store:
        df = frame(store.runs())
    if df.empty or not (df["status"] == "ok").any():
        raise HplsimError(f"{path}: the sweep holds no successful run (nothing to report)")
    return df


def _best(confs: pd.DataFrame, df: pd.DataFrame) -> Figure:
    import plotly.graph_objects as go

    top = confs.head(TOP).iloc[::-1]
    many = len(set(zip(confs["platform_name"], confs["model_name"]))) > 1
    names = [describe(r) + (f" [{r['platform_name']} / {r['model_name']}]" if many else "") for _, r in top.iterrows()]
    fig = go.Figure(go.Bar(
        x=top["mean"], y=names, orientation="h", marker_color="#1f77b4",
        error_x=dict(type="data", symmetric=False, array=top["max"] - top["mean"], arrayminus=top["mean"] - top["min"]),
    ))
    fig.update_layout(xaxis_title="Gflops (mean over seeds; bars: min to max)", margin=dict(t=30, l=10))
    cols = [c for c in varying(df) if c in confs] + ["label", *VARIANT, "mean", "min", "max", "std", "seeds"]
    caption = f"The {len(top)} best of {len(confs)} configurations, with their spread across seeds."
    return Figure("best", caption, fig, confs.head(TOP)[list(dict.fromkeys(cols))])


def _vs_n(confs: pd.DataFrame) -> Figure:
    import plotly.graph_objects as go

    family_cols = [c for c in GROUP_COLUMNS if c != "n"]
    best = confs.groupby(family_cols, sort=False, dropna=False)["mean"].max().sort_values(ascending=False)
    fig = go.Figure()
    rows = []
    for key in best.index[:MAX_FAMILIES]:
        sel = pd.Series(True, index=confs.index)
        for c, v in zip(family_cols, key):
            sel &= confs[c] == v
        fam = confs[sel].sort_values("n")
        name = f"NB={fam.iloc[0]['nb']} {fam.iloc[0]['p']}x{fam.iloc[0]['q']} {fam.iloc[0]['label']}"
        fig.add_trace(go.Scatter(x=fam["n"], y=fam["mean"], mode="lines+markers", name=name,
                                 error_y=dict(type="data", symmetric=False, array=fam["max"] - fam["mean"],
                                              arrayminus=fam["mean"] - fam["min"])))
        rows += [{"family": name, "n": r["n"], "mean": r["mean"], "min": r["min"], "max": r["max"]}
                 for _, r in fam.iterrows()]
    fig.update_layout(xaxis_title="N", yaxis_title="Gflops", margin=dict(t=30), legend=dict(font=dict(size=10)))
    caption = (f"Gflops against N for the {min(len(best), MAX_FAMILIES)} best of {len(best)} configuration families "
               "(everything but N equal; error bars: spread across seeds).")
    return Figure("vs-n", caption, fig, pd.DataFrame(rows))


def _grid_nb(confs: pd.DataFrame) -> Figure:
    import plotly.graph_objects as go

    c = confs.assign(grid=confs["p"].astype(str) + "x" + confs["q"].astype(str))
    table = c.pivot_table(index="grid", columns="nb", values="mean", aggfunc="max")
    fig = go.Figure(go.Heatmap(z=table.to_numpy(), x=[str(v) for v in table.columns], y=list(table.index),
                               colorscale="Viridis", colorbar=dict(title="Gflops"),
                               text=table.round(1).to_numpy(), texttemplate="%{text}"))
    fig.update_layout(xaxis_title="NB", yaxis_title="P x Q", margin=dict(t=30))
    caption = "Best Gflops reached for each process grid and block size NB (over every other parameter)."
    return Figure("grid-nb", caption, fig, table.reset_index())


def _whatif(df: pd.DataFrame, confs: pd.DataFrame) -> Figure | None:
    import plotly.graph_objects as go

    w = what_if(df)
    if len(w) < 2:
        return None
    names = [f"{p} / {m}" for p, m in zip(w["platform"], w["model"])]
    ref = reference_variant(df)
    ref_best = describe(of_variant(confs, ref).iloc[0])
    fig = go.Figure([
        go.Bar(x=names, y=w["best_gflops"], name="its best configuration", marker_color="#1f77b4"),
        go.Bar(x=names, y=w["reference_config_gflops"], name=f"the reference's best ({ref_best})",
               marker_color="#ff7f0e"),
    ])
    fig.update_layout(barmode="group", yaxis_title="Gflops", margin=dict(t=30), legend=dict(orientation="h"))
    caption = ("What-if variants side by side: each variant's best Gflops, and the reference's best "
               "configuration run on it.")
    return Figure("whatif", caption, fig, w)


def sweep_section(df: pd.DataFrame, source: str) -> Section:
    confs = configurations(df)
    failed = int((df["status"] != "ok").sum())
    intro = (f"Sweep store {source}: {len(df)} runs ({failed} failed), {len(confs)} configurations, "
             f"{len(set(zip(df['platform_name'], df['model_name'])))} platform/model variant(s).")
    figures = [_best(confs, df), _vs_n(confs), _grid_nb(confs)]
    w = _whatif(df, confs)
    if w is not None:
        figures.append(w)
    return Section("sweep", "Sweep", intro, figures)
