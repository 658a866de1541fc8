"""The plot of `hplsim validate` (validation.png): per configuration, the real runs'
median and range against the prediction; the error with the real runs' spread; every real
run in time order against the machine probe."""

from __future__ import annotations

import socket
from pathlib import Path

from hplsim.outputs import save_figure
from hplsim.report.validation import STEADY_PCT, TARGET_MAX_PCT, TARGET_MEDIAN_PCT, Report


def plot_report(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report.rows
    x = list(range(len(rows)))
    timeline = [(run.start, 100 * (run.gflops / r.predicted_gflops - 1), 100 * (speed - 1))
                for r in rows for run in r.real.runs if (speed := r.speed(run)) is not None]
    width = max(6.0, 0.45 * len(rows) + 2)
    if timeline:
        fig, (top, bottom, machine) = plt.subplots(3, 1, figsize=(width, 10), layout="constrained",
                                                   gridspec_kw={"height_ratios": [3, 2, 2]})
        bottom.sharex(top)
        top.tick_params(labelbottom=False)
    else:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(width, 7), sharex=True,
                                          gridspec_kw={"height_ratios": [3, 2]})
    med = [r.real.gflops for r in rows]
    lo = [r.real.gflops - r.real.gflops_min for r in rows]
    hi = [r.real.gflops_max - r.real.gflops for r in rows]
    top.errorbar(x, med, yerr=[lo, hi], fmt="o", color="black", capsize=3, label="real: median, min–max")
    top.plot(x, [r.predicted_gflops for r in rows], "x", color="tab:red", markersize=8, mew=2, label="predicted")
    top.set_ylabel("Gflops")
    top.legend(loc="best")
    top.grid(alpha=0.3)
    top.set_title(f"hplsim validate on {socket.gethostname()}")
    err = [r.error_pct for r in rows]
    band_lo = [100 * (r.real.gflops_min / r.real.gflops - 1) for r in rows]
    band_hi = [100 * (r.real.gflops_max / r.real.gflops - 1) for r in rows]
    bottom.bar(x, err, color=["tab:red" if abs(e) > TARGET_MAX_PCT else "tab:blue" for e in err], alpha=0.7,
               label="error of the prediction")
    bottom.errorbar(x, [0] * len(x), yerr=[[-b for b in band_lo], band_hi], fmt="none", color="gray", capsize=3,
                    label="spread of the real runs")
    bottom.axhline(0, color="black", lw=0.8)
    for t in (TARGET_MEDIAN_PCT, -TARGET_MEDIAN_PCT):
        bottom.axhline(t, color="gray", ls=":", lw=0.8)
    bottom.set_ylabel("error (%)")
    bottom.legend(loc="best", fontsize="small")
    bottom.grid(alpha=0.3)
    bottom.set_xticks(x)
    bottom.set_xticklabels([f"{r.config.label()} {r.config.n}/{r.config.nb} {r.config.p}x{r.config.q}"
                            for r in rows], rotation=70, ha="right", fontsize="small")
    if timeline:
        # every real run in time order: the real runs follow the machine, whatever the configuration
        timeline.sort()
        t0 = timeline[0][0]
        minutes = [(t - t0) / 60 for t, _, _ in timeline]
        machine.plot(minutes, [g for _, g, _ in timeline], "o", ms=3, color="black",
                     label="real run / its prediction − 1")
        machine.plot(minutes, [m for _, _, m in timeline], "-", color="tab:green",
                     label="machine probe around the run / at calibration − 1")
        machine.axhspan(-STEADY_PCT, STEADY_PCT, color="tab:green", alpha=0.1)
        machine.axhline(0, color="black", lw=0.8)
        machine.set_xlabel("minutes since the first real run")
        machine.set_ylabel("%")
        machine.legend(loc="best", fontsize="small")
        machine.grid(alpha=0.3)
    else:
        fig.tight_layout()
    try:
        save_figure(fig, path, "the validation plot", dpi=110)
    finally:
        plt.close(fig)
