"""PNG plots of fits for the report: kernel durations vs the flop term with the fitted
means, residuals vs fitted values, the selection table, MPI durations vs size with the
segments (log axes)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.models.kernels import POOLED, KernelFits
from hplsim.models.modelfile import KERNEL_VARIABLES
from hplsim.models.network import NetworkFit
from hplsim.outputs import save_figure

MAX_PANELS = 16
_POINTS = 4000  # per panel: enough to see the cloud, few enough to draw fast


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt

    return plt


def _grid(count: int, width: float = 4.2, height: float = 3.4):
    plt = _pyplot()
    cols = min(count, 4)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return plt, fig, list(axes.flat)


def _subsets(fits: KernelFits, calls: pd.DataFrame) -> list[tuple[str, pd.DataFrame, object]]:
    mine = calls[calls["kernel"] == fits.kernel] if calls["kernel"].notna().any() else calls
    if not fits.groups:
        return [(POOLED, mine, fits.pooled)]
    out = []
    for (host, cpu), f in list(fits.groups.items())[:MAX_PANELS]:
        sel = mine["host"] == host
        if cpu is not None:
            sel &= mine["cpu"] == cpu
        out.append((fits.group_label((host, cpu)), mine[sel], f))
    return out


def _thin(df: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    return df.sample(_POINTS, random_state=seed) if len(df) > _POINTS else df


def kernel_plots(fits: KernelFits, calls: pd.DataFrame, outdir: Path) -> list[Path]:
    variables = KERNEL_VARIABLES[fits.kernel]
    flop = "·".join(v.upper() for v in variables)
    panels = _subsets(fits, calls)
    written = []

    plt, fig, axes = _grid(len(panels))
    for ax, (name, df, f) in zip(axes, panels):
        df = _thin(df)
        x = np.prod([df[v].to_numpy(float) for v in variables], axis=0)
        ax.scatter(x, df["duration"], s=3, alpha=0.35, label="measured", color="tab:blue")
        ax.scatter(x, f.predict(df), s=3, alpha=0.6, label=f"fitted mean ({f.option})", color="tab:red")
        ax.set_title(f"{fits.kernel} on {name}  (R² {f.r2:.4f})", fontsize=9)
        ax.set_xlabel(flop)
        ax.set_ylabel("duration (s)")
        ax.legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    written.append(_save(fig, plt, outdir / f"{fits.kernel}-durations.png"))

    plt, fig, axes = _grid(len(panels))
    for ax, (name, df, f) in zip(axes, panels):
        df = _thin(df)
        fitted = f.predict(df)
        ax.scatter(fitted, df["duration"].to_numpy(float) - fitted, s=3, alpha=0.35)
        # σ depends on the sizes, not on the mean alone: the interval's edges are points too
        lo, hi = f.interval(df, 0.9)
        center = f.distribution(df).mean
        ax.scatter(fitted, lo - center, s=1, color="tab:red", label="90 % interval")
        ax.scatter(fitted, hi - center, s=1, color="tab:red")
        ax.axhline(0, color="black", lw=0.5)
        ax.set_title(f"{fits.kernel} on {name}: residuals", fontsize=9)
        ax.set_xlabel("fitted mean (s)")
        ax.set_ylabel("measured - fitted (s)")
        ax.legend(fontsize=7, markerscale=5)
    fig.tight_layout()
    written.append(_save(fig, plt, outdir / f"{fits.kernel}-residuals.png"))

    if fits.summary is not None:
        table = fits.summary.dropna(subset=["cv_crps"])
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(8, 3.5))
        colors = ["tab:green" if o == f"{fits.option[0]},{fits.option[1]}" else "tab:gray" for o in table["option"]]
        ax.bar(table["option"], table["cv_crps"], color=colors)
        ax.set_yscale("log")
        ax.set_ylabel("CV CRPS (s, lower is better)")
        ax.set_title(f"{fits.kernel}: cross-validated error per option (chosen: {fits.option[0]},{fits.option[1]})",
                     fontsize=9)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        fig.tight_layout()
        written.append(_save(fig, plt, outdir / f"{fits.kernel}-selection.png"))
    return written


def network_plot(fit: NetworkFit, data: pd.DataFrame, path: Path) -> Path:
    ops = list(fit.fits)
    plt, fig, axes = _grid(len(ops), 4.8, 3.8)
    for ax, op in zip(axes, ops):
        df = data[data["operation"] == op]
        ax.scatter(df["size"], df["duration"], s=4, alpha=0.5, label="measured")
        f = fit.fits[op]
        lo_all, hi_all = float(df["size"].min()), float(df["size"].max())
        for seg in f.segments:
            lo, hi = max(seg.lower, lo_all), min(seg.upper, hi_all)
            if hi > lo:
                xs = np.geomspace(lo, hi, 60)
                ax.plot(xs, seg.predict(xs), color="tab:red", lw=1.2)
        for b in f.breakpoints:
            ax.axvline(b, color="tab:green", lw=0.6, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("message size (B)")
        ax.set_ylabel("duration (s)")
        title = f"{fit.cluster + ' ' if fit.cluster else ''}{op}: {len(f.segments)} segments"
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return _save(fig, plt, path)


def _save(fig, plt, path: Path) -> Path:
    try:
        save_figure(fig, path, "a plot", dpi=90)
    finally:
        plt.close(fig)
    return path
