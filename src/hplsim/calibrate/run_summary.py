"""One history row per (host, CPU) of a dgemm calibration archive.

Each CPU's calls are summarised as in the published Dahu history (an "M-1/N-2" fit):
duration = intercept + mnk·MNK by least squares, the residuals' standard deviation
= intercept_residual + mnk_residual·MNK, the t-values of both slopes, the mean Gflops,
and the mean core frequency and temperature over the timed calls when they were monitored.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least squares y = a + b·x: (a, b, t-value of b)."""
    xc = x - x.mean()
    sxx = float(xc @ xc)
    b = float(xc @ (y - y.mean())) / sxx
    a = float(y.mean() - b * x.mean())
    resid = y - a - b * x
    dof = len(y) - 2
    se = math.sqrt(float(resid @ resid) / dof / sxx) if dof > 0 else math.nan
    return a, b, (b / se if se > 0 else math.inf)


def summarise_calls(calls: pd.DataFrame) -> dict[str, float]:
    """M-1/N-2 summary of one CPU's dgemm calls (columns m, n, k, duration). The noise line
    is a regression of |residual|, scaled by sqrt(pi/2) so that it estimates the standard
    deviation of normal residuals."""
    x = (calls["m"].astype(float) * calls["n"].astype(float) * calls["k"].astype(float)).to_numpy()
    y = calls["duration"].astype(float).to_numpy()
    keep = np.isfinite(x) & np.isfinite(y) & (y > 0)
    x, y = x[keep], y[keep]
    if len(y) < 3 or np.ptp(x) == 0:
        raise HplsimError("needs at least 3 timed calls of at least two different sizes")
    b0, b1, t1 = _line(x, y)
    r0, r1, tr = _line(x, np.abs(y - (b0 + b1 * x)))
    scale = math.sqrt(math.pi / 2)
    return {
        "intercept": b0, "mnk": b1, "tvalue_mnk": t1,
        "intercept_residual": r0 * scale, "mnk_residual": r1 * scale, "tvalue_mnk_residual": tr,
        # Calls too short to time (m·n·k = 0) would count as 0 Gflops; they say nothing of speed.
        "avg_gflops": float(np.mean(2 * x[x > 0] / y[x > 0] / 1e9)) if (x > 0).any() else math.nan,
    }


def _timed_window(metadata: dict) -> tuple[float, float] | None:
    """The monotonic-clock span of the timed calls, to leave the build and warm-up out of
    the monitored means."""
    for phase in metadata.get("phases") or []:
        if isinstance(phase, dict) and phase.get("name") in ("timed-calls", "measure"):
            lo, hi = phase.get("start_monotonic"), phase.get("end_monotonic")
            if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
                return float(lo), float(hi)
    return None


def monitored_means(monitoring: pd.DataFrame, host: str, cores: set[int],
                    window: tuple[float, float] | None) -> dict[str, float]:
    """Mean frequency and temperature of these cores of `host`. A package sensor (empty
    core) stands for the CPU when no core of it has its own reading."""
    mon = monitoring[monitoring["host"].astype(str) == str(host)]
    if window is not None and "timestamp" in mon.columns:
        inside = mon[(mon["timestamp"] >= window[0]) & (mon["timestamp"] <= window[1])]
        mon = inside if not inside.empty else mon
    core = pd.to_numeric(mon["core"], errors="coerce") if "core" in mon.columns else pd.Series(np.nan, mon.index)
    out = {}
    for col in ("frequency_hz", "temperature_c"):
        if col not in mon.columns:
            continue
        values = pd.to_numeric(mon[col], errors="coerce")
        own = values[core.isin(cores)].dropna()
        if own.empty:
            own = values[core.isna()].dropna()
        if not own.empty:
            out[col] = float(own.mean())
    return out


def summarise_archive(path: Path) -> pd.DataFrame:
    """One row per (host, CPU) of a complete dgemm calibration archive; the run is named by
    the archive's start time, so the same run added twice (even renamed) is one run."""
    from hplsim.calibrate.archive import read_archive, unix_time

    a = read_archive(path)
    kind = a.metadata.get("kind")
    if kind != "dgemm" or not a.has_table("dgemm"):
        raise HplsimError(f"{path}: not a dgemm calibration archive (kind {kind!r})")
    if a.metadata.get("status") != "complete":
        raise HplsimError(f"{path}: an aborted calibration (status {a.metadata.get('status')!r}), not added")
    calls = a.table("dgemm")
    if "function" in calls.columns:
        calls = calls[calls["function"].astype(str) == "dgemm"]
    missing = {"m", "n", "k", "duration", "host", "cpu"} - set(calls.columns)
    if missing:
        raise HplsimError(f"{path}: dgemm table without column(s) {', '.join(sorted(missing))}")
    if calls.empty:
        raise HplsimError(f"{path}: no dgemm call in the archive")
    if a.metadata.get("start_time") is None:
        raise HplsimError(f"{path}: metadata has no start_time")
    start = unix_time(a.metadata["start_time"])  # checked by read_archive
    run_id = str(a.metadata.get("run_id") or a.metadata["start_time"])
    monitoring = a.table("monitoring") if a.has_table("monitoring") else None
    window = _timed_window(a.metadata)
    rows = []
    for (host, cpu), group in calls.groupby(["host", "cpu"], sort=True):
        row = {"host": str(host), "cpu": int(cpu), "run_id": run_id, "start_time": start, "source": str(path)}
        try:
            row.update(summarise_calls(group))
        except HplsimError as exc:
            raise HplsimError(f"{path}: {host} CPU {cpu}: {exc}") from None
        if monitoring is not None and not monitoring.empty and "host" in monitoring.columns:
            cores = set(pd.to_numeric(group.get("core", pd.Series(dtype=float)), errors="coerce").dropna().astype(int))
            row.update(monitored_means(monitoring, str(host), cores, window))
        rows.append(row)
    return pd.DataFrame(rows)
