"""Figures of a model file: the cluster's dgemm speed per host and CPU as a heat map, and
each kernel's expected duration for a reference call."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hplsim.models.modelfile import CONDITION_VARIABLES, KernelModel, ModelFile
from hplsim.report.page import Figure, Section

# A reference call per kernel variable: the shape of HPL's trailing updates at NB = 128
# (a leading dimension that is not a multiple of the L1 set span: the common case).
REFERENCE_SIZES = {"m": 4096, "n": 4096, "k": 128, "ld": 4100, "m0": 128, "m1": 128}


def _reference(model: KernelModel) -> float:
    names = CONDITION_VARIABLES.get(model.kernel, model.variables)  # pieces may ask for more (ld)
    sizes = {v: np.array(REFERENCE_SIZES[v], dtype=float) for v in names}
    return float(np.asarray(model.predict(sizes)).reshape(-1)[0])


def _entries(model: ModelFile) -> list[tuple[str, int, dict[str, KernelModel]]]:
    """(host, cpu, kernels) of every host and CPU the file describes; the default alone if none."""
    if not model.hosts:
        return [("default", 0, model.resolve("default", 0))]
    return [(h, cpu, model.resolve(h, cpu)) for h in model.hosts for cpu in range(model.cpus_of(h))]


def dgemm_heatmap(model: ModelFile) -> Figure | None:
    import plotly.graph_objects as go

    rows = []
    for host, cpu, kernels in _entries(model):
        if "dgemm" in kernels:
            t = _reference(kernels["dgemm"])
            flops = 2.0 * REFERENCE_SIZES["m"] * REFERENCE_SIZES["n"] * REFERENCE_SIZES["k"]
            rows.append({"host": host, "cpu": cpu, "seconds": t, "gflops": flops / t / 1e9 if t > 0 else np.nan})
    if len(rows) < 2:  # one entry: nothing to compare, the kernel table says it
        return None
    table = pd.DataFrame(rows)
    grid = table.pivot(index="host", columns="cpu", values="gflops").reindex(list(dict.fromkeys(table["host"])))
    fig = go.Figure(go.Heatmap(z=grid.to_numpy(), x=[f"CPU {c}" for c in grid.columns], y=list(grid.index),
                               colorscale="RdYlGn", colorbar=dict(title="Gflops")))
    fig.update_layout(margin=dict(t=30), yaxis=dict(autorange="reversed"))
    m, n, k = (REFERENCE_SIZES[v] for v in "mnk")
    spread = (table["gflops"].max() / table["gflops"].min() - 1) * 100 if len(table) > 1 else 0.0
    caption = (f"dgemm speed of every host and CPU of the model for a {m}x{n}x{k} call "
               f"(expected duration; {len(table)} entries, fastest {spread:.1f} % above the slowest).")
    return Figure("dgemm-hosts", caption, fig, table, tall=len(grid) > 16)


def kernel_durations(model: ModelFile) -> Figure:
    import plotly.graph_objects as go

    host, cpu, kernels = _entries(model)[0]
    rows = []
    for name, k in sorted(kernels.items()):
        names = CONDITION_VARIABLES.get(name, k.variables)
        rows.append({"kernel": name, "sizes": ", ".join(f"{v}={REFERENCE_SIZES[v]}" for v in names),
                     "expected_s": _reference(k), "noise": k.family, "pieces": len(k.pieces),
                     "mean_terms": ", ".join(f"{t}: {c:.4g}" for t, c in k.mean.to_mapping().items())})
    table = pd.DataFrame(rows)
    fig = go.Figure(go.Bar(x=table["kernel"], y=table["expected_s"], marker_color="#1f77b4"))
    fig.update_layout(yaxis_type="log", yaxis_title="expected seconds", margin=dict(t=30))
    caption = (f"Each kernel's expected duration for a reference call ({host}, CPU {cpu}), log scale; "
               "the table gives its law.")
    return Figure("kernels", caption, fig, table)


def model_section(model: ModelFile, source: str) -> Section:
    intro = (f"Model file {source}: {model.description or 'no description'}; "
             f"{len(model.hosts)} host entries{' and a default' if model.default else ''}.")
    figures = [f for f in (dgemm_heatmap(model), kernel_durations(model)) if f is not None]
    return Section("model", "Kernel models", intro, figures)
