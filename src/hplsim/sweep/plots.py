"""PNG plots of a results store (``hplsim sweep show DB --plot DIR``):

- ``gflops_vs_n.png``: Gflops vs N, one line per configuration family (everything but N
  the same), the best families only; the band is the spread across seeds;
- ``heatmap_grid_nb.png`` and ``heatmap_bcast_depth.png``: the best Gflops reached in each
  cell (P×Q × NB, BCAST × DEPTH) over all other parameters, on the reference variant;
- ``whatif.png``: the best Gflops of each platform/model variant, and the reference's best
  configuration run on each.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hplsim.hpl.config import BCAST_NAMES
from hplsim.outputs import check_dir, save_figure
from hplsim.sweep.show import GROUP_COLUMNS, VARIANT, configurations, of_variant, reference_variant, variants, what_if

MAX_FAMILIES = 10


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt

    return plt


def _family_label(row, many_variants: bool) -> str:
    text = f"NB={row['nb']} {row['p']}x{row['q']} {row['label']}"
    return f"{text} [{row['platform_name']} / {row['model_name']}]" if many_variants else text


def gflops_vs_n(confs: pd.DataFrame, path: Path) -> None:
    plt = _pyplot()
    family_cols = [c for c in GROUP_COLUMNS if c != "n"]
    many = confs[VARIANT].drop_duplicates().shape[0] > 1
    best = confs.groupby(family_cols, sort=False, dropna=False)["mean"].max().sort_values(ascending=False)
    fig, ax = plt.subplots(figsize=(8, 5))
    for key in best.index[:MAX_FAMILIES]:
        sel = pd.Series(True, index=confs.index)
        for c, v in zip(family_cols, key):
            sel &= confs[c] == v
        fam = confs[sel].sort_values("n")
        line, = ax.plot(fam["n"], fam["mean"], marker="o", label=_family_label(fam.iloc[0], many))
        if (fam["seeds"] > 1).any():
            ax.fill_between(fam["n"], fam["min"], fam["max"], color=line.get_color(), alpha=0.2)
    ax.set_xlabel("N")
    ax.set_ylabel("Gflops")
    shown = min(len(best), MAX_FAMILIES)
    ax.set_title(f"Gflops vs N ({shown} best of {len(best)} families)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    try:
        save_figure(fig, path, "a plot", dpi=120)
    finally:
        plt.close(fig)


def heatmap(confs: pd.DataFrame, rows: str, cols: str, path: Path, title: str) -> None:
    plt = _pyplot()
    table = confs.pivot_table(index=rows, columns=cols, values="mean", aggfunc="max")
    fig, ax = plt.subplots(figsize=(max(5.0, 1.5 + 1.1 * len(table.columns)), 1.8 + 0.6 * len(table.index)))
    image = ax.imshow(table.values, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(table.columns)), [str(c) for c in table.columns])
    ax.set_yticks(range(len(table.index)), [str(i) for i in table.index])
    ax.set_xlabel(cols.upper())
    ax.set_ylabel("P x Q" if rows == "grid" else rows.upper())
    finite = table.values[~pd.isna(table.values)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0
    for i in range(len(table.index)):
        for j in range(len(table.columns)):
            v = table.values[i, j]
            if not pd.isna(v):
                ax.text(j, i, f"{v:.4g}", ha="center", va="center", fontsize=8,
                        color="black" if v > middle else "white")
    fig.colorbar(image, ax=ax, label="best Gflops")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    try:
        save_figure(fig, path, "a plot", dpi=120)
    finally:
        plt.close(fig)


def whatif_bars(df: pd.DataFrame, path: Path) -> None:
    plt = _pyplot()
    w = what_if(df)
    labels = [f"{p}\n{m}" for p, m in zip(w["platform"], w["model"])]
    fig, ax = plt.subplots(figsize=(min(14, max(5, 1.0 * len(w) + 2)), 5))
    x = range(len(w))
    # error bars: the best configuration's spread across seeds (min to max)
    spread = [w["best_gflops"] - w["best_min"], w["best_max"] - w["best_gflops"]]
    ax.bar([i - 0.2 for i in x], w["best_gflops"], width=0.4, yerr=spread, capsize=3,
           label="best configuration of the variant (bars: min-max over seeds)")
    same = [v if v is not None and not pd.isna(v) else 0 for v in w["reference_config_gflops"]]
    ax.bar([i + 0.2 for i in x], same, width=0.4, label="reference's best configuration")
    ax.set_xticks(list(x), labels, fontsize=7, rotation=30 if len(w) > 6 else 0, ha="right" if len(w) > 6 else "center")
    ax.set_ylabel("Gflops")
    ref = reference_variant(df)
    ax.set_title(f"What if (reference: platform {ref[0]}, model {ref[1]})", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    try:
        save_figure(fig, path, "a plot", dpi=120)
    finally:
        plt.close(fig)


def write_plots(df: pd.DataFrame, outdir: Path) -> list[Path]:
    """All plots of the store's successful runs; returns the files written."""
    confs = configurations(df)
    if confs.empty:
        return []
    outdir = check_dir(outdir, "the plots (--plot)")
    written = []
    path = outdir / "gflops_vs_n.png"
    gflops_vs_n(confs, path)
    written.append(path)

    ref = reference_variant(df)
    mine = of_variant(confs, ref).copy()
    mine["grid"] = [f"{p}x{q}" for p, q in zip(mine["p"], mine["q"])]
    mine["bcast"] = [f"{b} {BCAST_NAMES[int(b)]}" for b in mine["bcast"]]
    where = f"platform {ref[0]}, model {ref[1]}" if len(variants(df)) > 1 else "all runs"
    for rows, cols, name, what in (("grid", "nb", "heatmap_grid_nb.png", "P x Q vs NB"),
                                   ("depth", "bcast", "heatmap_bcast_depth.png", "DEPTH vs BCAST")):
        path = outdir / name
        heatmap(mine, rows, cols, path, f"{what}: best Gflops over the other parameters\n({where})")
        written.append(path)
    path = outdir / "whatif.png"
    whatif_bars(df, path)
    written.append(path)
    return written
