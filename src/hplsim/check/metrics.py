"""The metrics of a calibration run and which way each one is worse."""

from __future__ import annotations

from hplsim.calibrate.history import KEY, NON_METRICS

DEFAULT_METRICS = ["intercept", "mnk", "avg_gflops"]

# +1: higher is worse (durations and their noise up, a hotter chip); −1: lower is worse
# (speed, clock). Metrics absent from this table (the fits' t-values) have no better side.
ORIENTATION = {
    "intercept": +1, "mnk": +1, "mn": +1, "mk": +1, "nk": +1,
    "intercept_residual": +1, "mnk_residual": +1,
    "temperature_c": +1,
    "avg_gflops": -1, "frequency_hz": -1,
}


def orientation(metric: str) -> int:
    return ORIENTATION.get(metric, 0)


def metric_columns(history_columns) -> list[str]:
    """The metrics a history carries, in a stable order (the known ones first)."""
    cols = [c for c in history_columns if c not in NON_METRICS]
    known = [m for m in ORIENTATION if m in cols]
    return known + sorted(c for c in cols if c not in ORIENTATION)
