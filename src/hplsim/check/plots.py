"""Control charts (per series: each metric over time, its prediction band, changelog marks)
and an overview heat-map (series × run) of the verdicts."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from hplsim.check.verdicts import (  # noqa: E402
    IMPROVEMENT, NOT_ENOUGH, NOT_TESTABLE, OK, REGRESSION, ChangelogEntry, rolling,
)

COLORS = {OK: "#4daf4a", REGRESSION: "#e41a1c", IMPROVEMENT: "#377eb8", NOT_ENOUGH: "#bdbdbd", NOT_TESTABLE: "#984ea3"}


def _dates(times) -> list[datetime]:
    return [datetime.fromtimestamp(float(t), timezone.utc) for t in times]


def control_chart(series: pd.DataFrame, metrics: list[str], gamma: float, changelog: list[ChangelogEntry],
                  path: Path) -> pd.DataFrame:
    roll = rolling(series, metrics, gamma, changelog)
    data = series.dropna(subset=metrics).reset_index(drop=True)
    host, cpu = data["host"].iloc[0], int(data["cpu"].iloc[0])
    fig, axes = plt.subplots(len(metrics), 1, figsize=(9, 2.4 * len(metrics)), sharex=True, squeeze=False)
    when = _dates(data["start_time"])
    for ax, m in zip(axes[:, 0], metrics):
        if f"{m}_low" in roll:
            ax.fill_between(when, roll[f"{m}_low"], roll[f"{m}_high"], step="mid", color="#dddddd",
                            label=f"prediction band (γ={gamma})")
        ax.plot(when, data[m], color="#555555", linewidth=0.8)
        ax.scatter(when, data[m], c=[COLORS[v] for v in roll["verdict"]], s=18, zorder=3)
        for e in changelog:
            if e.host in (host, "all"):
                ax.axvline(datetime.fromtimestamp(e.time, timezone.utc), color="#ff7f00", linestyle="--",
                           linewidth=1)
        ax.set_ylabel(m)
    axes[0, 0].set_title(f"{host} CPU {cpu}: each run against the runs before it (orange: changelog)")
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=c, label=v) for v, c in COLORS.items()]
    axes[0, 0].legend(handles=handles, fontsize=7, loc="best")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    roll.insert(0, "series", f"{host}/cpu{cpu}")
    return roll


def overview(rolls: list[pd.DataFrame], path: Path) -> None:
    codes = {v: i for i, v in enumerate(COLORS)}
    names = [r["series"].iloc[0] for r in rolls if not r.empty]
    width = max((len(r) for r in rolls), default=1)
    grid = np.full((len(names), width), np.nan)
    for i, r in enumerate(r for r in rolls if not r.empty):
        grid[i, : len(r)] = [codes[v] for v in r["verdict"]]
    fig, ax = plt.subplots(figsize=(min(18, 2 + 0.25 * width), max(3, 0.22 * len(names) + 1)))
    cmap = matplotlib.colors.ListedColormap(list(COLORS.values()))
    ax.imshow(np.ma.masked_invalid(grid), aspect="auto", interpolation="nearest", cmap=cmap, vmin=-0.5,
              vmax=len(COLORS) - 0.5)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=6)
    ax.set_xlabel("run (in time order within each series)")
    handles = [matplotlib.patches.Patch(color=c, label=v) for v, c in COLORS.items()]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("Verdict of each run against the runs before it")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
