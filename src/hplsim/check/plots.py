"""Control charts (per series: each chosen metric over time, the r=1 prediction band of each
run against the runs before it, the changelog marks) and an overview heat-map (series ×
day) of the verdicts."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from hplsim.check.logs import ChangelogEntry  # noqa: E402
from hplsim.outputs import save_figure  # noqa: E402
from hplsim.check.verdicts import (  # noqa: E402
    IMPROVEMENT, NOT_ENOUGH, NOT_TESTABLE, OK, PRECEDENCE, REGRESSION, Series,
)

COLORS = {OK: "#4daf4a", REGRESSION: "#e41a1c", IMPROVEMENT: "#377eb8", NOT_ENOUGH: "#bdbdbd",
          NOT_TESTABLE: "#984ea3"}
DAY = 86400.0


def _day_ticks(ax, lo: float, hi: float, count: int = 6) -> None:
    """Plain numeric x (days since the epoch) with a few date labels: matplotlib's automatic
    date axis costs more than the rest of the chart."""
    ticks = np.linspace(lo, hi, count) if hi > lo else np.array([lo])
    ax.set_xticks(ticks)
    ax.set_xticklabels([datetime.fromtimestamp(t * DAY, timezone.utc).strftime("%Y-%m-%d") for t in ticks],
                       fontsize=7)


def control_chart(s: Series, replay: pd.DataFrame, gamma: float, changelog: list[ChangelogEntry],
                  path: Path) -> None:
    metrics = s.metrics
    x = s.runs["start_time"].to_numpy(float) / DAY
    fig, axes = plt.subplots(len(metrics), 1, figsize=(9, 1.9 * len(metrics) + 0.8), sharex=True, squeeze=False)
    colors = [COLORS[v] for v in replay["verdict"]]
    marks = [e for e in changelog if e.applies_to(s.host)]
    for ax, m in zip(axes[:, 0], metrics):
        if f"{m}_low" in replay:
            ax.fill_between(x, replay[f"{m}_low"].to_numpy(float), replay[f"{m}_high"].to_numpy(float),
                            step="mid", color="#dddddd", linewidth=0)
        ax.plot(x, s.runs[m].to_numpy(float), color="#777777", linewidth=0.7)
        ax.scatter(x, s.runs[m].to_numpy(float), c=colors, s=16, zorder=3)
        for e in marks:
            ax.axvline(e.time / DAY, color="#ff7f00", linestyle="--", linewidth=1)
        ax.set_ylabel(m, fontsize=8)
        ax.tick_params(labelsize=7)
    top = axes[0, 0]
    for e in marks:
        top.annotate(e.reason or "change", (e.time / DAY, 1.0), xycoords=("data", "axes fraction"), fontsize=6,
                     color="#ff7f00", rotation=90, va="top", ha="right")
    fig.suptitle(f"{s.host} CPU {s.cpu}: each run against the runs before it "
                 f"(grey: r=1 band, γ={gamma}; orange: changelog)", fontsize=9)
    handles = [Line2D([], [], marker="o", linestyle="", color=c, label=v) for v, c in COLORS.items()]
    top.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if len(x):
        _day_ticks(axes[-1, 0], float(x.min()), float(x.max()))
    fig.subplots_adjust(left=0.11, right=0.84, top=0.88, bottom=0.1, hspace=0.25)
    try:
        save_figure(fig, path, "a control chart", dpi=80)
    finally:
        plt.close(fig)


def overview(replays: dict[str, pd.DataFrame], path: Path) -> None:
    """Series × calendar day (UTC); a day with several runs shows the worst verdict."""
    names = list(replays)
    days = sorted({int(t // DAY) for r in replays.values() for t in r.get("start_time", [])})
    col = {d: j for j, d in enumerate(days)}
    rank = {v: i for i, v in enumerate(PRECEDENCE)}  # lower = worse
    codes = {v: i for i, v in enumerate(COLORS)}
    grid = np.full((len(names), max(len(days), 1)), np.nan)
    for i, name in enumerate(names):
        r = replays[name]
        worst: dict[int, str] = {}
        for t, v in zip(r.get("start_time", []), r.get("verdict", [])):
            d = int(t // DAY)
            if d not in worst or rank[v] < rank[worst[d]]:
                worst[d] = v
        for d, v in worst.items():
            grid[i, col[d]] = codes[v]
    fig, ax = plt.subplots(figsize=(min(20, 3 + 0.28 * len(days)), max(3, 0.16 * len(names) + 1.5)))
    ax.imshow(np.ma.masked_invalid(grid), aspect="auto", interpolation="nearest",
              cmap=ListedColormap(list(COLORS.values())), vmin=-0.5, vmax=len(COLORS) - 0.5)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=6)
    step = max(1, len(days) // 30)
    ax.set_xticks(range(0, len(days), step))
    ax.set_xticklabels([datetime.fromtimestamp(d * DAY, timezone.utc).strftime("%Y-%m-%d") for d in days[::step]],
                       rotation=90, fontsize=6)
    ax.legend(handles=[Patch(color=c, label=v) for v, c in COLORS.items()], fontsize=7, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    ax.set_title("Each run against the runs before it (worst verdict of the day)", fontsize=9)
    try:
        save_figure(fig, path, "the overview chart", dpi=80, bbox_inches="tight")
    finally:
        plt.close(fig)
