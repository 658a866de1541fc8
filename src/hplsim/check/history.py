"""The calibration history: one row per (host, CPU, run) with the metrics to watch.

Sources: our history file (SQLite, docs/formats/history.md; one reader `read_history`,
one writer `append_runs`), the published Dahu history CSV (read directly), and our
calibration archives (summarised by `summarise_archive`).
"""

from __future__ import annotations

import math
import sqlite3
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError

KEY = ["host", "cpu", "run_id"]
FORMAT = "hplsim-history"
FORMAT_VERSION = 1

# Which way is worse, per metric: durations and their noise up, speed and frequency down.
HIGHER_IS_WORSE = {"intercept", "mnk", "mn", "mk", "nk", "intercept_residual", "mnk_residual", "temperature_c"}
LOWER_IS_WORSE = {"avg_gflops", "frequency_hz"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS observations (
    host TEXT NOT NULL,
    cpu INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    start_time REAL NOT NULL,
    metric TEXT NOT NULL,
    value REAL,
    source TEXT,
    PRIMARY KEY (host, cpu, run_id, metric)
);
"""

# ------------------------------------------------------------------- Dahu history CSV

_DAHU_METRICS = ["intercept", "mnk", "intercept_residual", "mnk_residual", "avg_gflops", "tvalue_mnk",
                 "tvalue_mnk_residual"]


def read_dahu_csv(path: Path) -> pd.DataFrame:
    """The published history (``dgemm_calibration_history.csv``): one row per node, CPU and
    job; nodes are named ``<cluster>-<node>`` as on Grid'5000."""
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise HplsimError(f"cannot read history {path}: {exc}") from None
    needed = {"node", "cpu", "jobid", "start_time", "intercept", "mnk", "avg_gflops"}
    missing = needed - set(df.columns)
    if missing:
        raise HplsimError(f"history {path}: missing column(s) {', '.join(sorted(missing))}")
    cluster = df["cluster"].astype(str) if "cluster" in df.columns else "node"
    out = pd.DataFrame({
        "host": cluster + "-" + df["node"].astype(str),
        "cpu": df["cpu"].astype(int),
        "run_id": df["jobid"].astype(str),
        "start_time": pd.to_numeric(df["start_time"], errors="coerce"),
        "source": str(path),
    })
    for m in _DAHU_METRICS:
        if m in df.columns:
            out[m] = pd.to_numeric(df[m], errors="coerce")
    return out


# --------------------------------------------------------------------- our history file


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=60)
    con.execute("PRAGMA journal_mode=WAL")
    return con


def read_history(path: Path) -> pd.DataFrame:
    """A history: our SQLite file, or a CSV in the published Dahu layout."""
    path = Path(path)
    if not path.exists():
        raise HplsimError(f"history {path} does not exist")
    with open(path, "rb") as f:
        head = f.read(16)
    if not head.startswith(b"SQLite format 3"):
        return read_dahu_csv(path)
    try:
        con = _connect(path)
        try:
            fmt = dict(con.execute("SELECT key, value FROM meta").fetchall())
            long = pd.read_sql_query("SELECT * FROM observations", con)
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise HplsimError(f"cannot read history {path}: {exc}") from None
    if fmt.get("format") != FORMAT:
        raise HplsimError(f"{path} is an SQLite file but not an hplsim history")
    if long.empty:
        return pd.DataFrame(columns=[*KEY, "start_time", "source"])
    wide = long.set_index([*KEY, "start_time", "source", "metric"])["value"].unstack("metric").reset_index()
    wide.columns.name = None
    return wide


def append_runs(path: Path, runs: pd.DataFrame) -> tuple[int, int]:
    """Add summarised runs in one transaction (all or nothing). Runs already present (same
    host, CPU and run id) are left as they are. Returns (added, already present)."""
    path = Path(path)
    con = _connect(path)
    try:
        with con:
            con.executescript(_SCHEMA)
            con.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?), ('version', ?)", (FORMAT, str(FORMAT_VERSION)))
            added = skipped = 0
            metrics = [c for c in runs.columns if c not in (*KEY, "start_time", "source")]
            for row in runs.itertuples(index=False):
                r = row._asdict()
                exists = con.execute("SELECT 1 FROM observations WHERE host=? AND cpu=? AND run_id=? LIMIT 1",
                                     (r["host"], int(r["cpu"]), str(r["run_id"]))).fetchone()
                if exists:
                    skipped += 1
                    continue
                for m in metrics:
                    value = r[m]
                    value = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
                    con.execute("INSERT INTO observations VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (r["host"], int(r["cpu"]), str(r["run_id"]), float(r["start_time"]), m, value,
                                 str(r.get("source", ""))))
                added += 1
    except sqlite3.DatabaseError as exc:
        raise HplsimError(f"cannot write history {path}: {exc}") from None
    finally:
        con.close()
    return added, skipped


# -------------------------------------------------------------- calibration archives


def _unix_time(value) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        raise HplsimError(f"archive start_time {value!r} is not a date") from None


def summarise_calls(calls: pd.DataFrame) -> dict[str, float]:
    """M-1/N-2 summary of one CPU's dgemm calls: duration = intercept + mnk·MNK (OLS), and
    the residuals' standard deviation = intercept_residual + mnk_residual·MNK (from a
    regression of |residual|, scaled by sqrt(pi/2) for normal residuals)."""
    x = (calls["m"].astype(float) * calls["n"].astype(float) * calls["k"].astype(float)).to_numpy()
    y = calls["duration"].astype(float).to_numpy()
    if len(y) < 3 or np.ptp(x) == 0:
        raise HplsimError("a CPU needs calls of at least two different sizes to be summarised")
    a = np.column_stack([np.ones_like(x), x])
    (b0, b1), *_ = np.linalg.lstsq(a, y, rcond=None)
    res = np.abs(y - (b0 + b1 * x))
    (r0, r1), *_ = np.linalg.lstsq(a, res, rcond=None)
    scale = math.sqrt(math.pi / 2)
    with np.errstate(divide="ignore"):
        gflops = 2 * x / y / 1e9
    return {
        "intercept": float(b0), "mnk": float(b1),
        "intercept_residual": float(r0 * scale), "mnk_residual": float(r1 * scale),
        "avg_gflops": float(np.mean(gflops[np.isfinite(gflops)])),
    }


def summarise_archive(path: Path) -> pd.DataFrame:
    """One row per (host, CPU) of a dgemm calibration archive."""
    from hplsim.calibrate.archive import read_archive

    a = read_archive(path)
    if a.metadata.get("kind") != "dgemm" or not a.has_table("dgemm"):
        raise HplsimError(f"{path} is not a dgemm calibration archive (kind {a.metadata.get('kind')!r})")
    if a.metadata.get("status") != "complete":
        raise HplsimError(f"{path} is an aborted calibration: not added to the history")
    calls = a.table("dgemm")
    calls = calls[calls["function"] == "dgemm"] if "function" in calls.columns else calls
    monitoring = a.table("monitoring") if a.has_table("monitoring") else None
    start = _unix_time(a.metadata.get("start_time"))
    run_id = str(a.metadata.get("run_id") or f"{Path(path).name}@{a.metadata.get('start_time')}")
    rows = []
    for (host, cpu), group in calls.groupby(["host", "cpu"]):
        row = {"host": str(host), "cpu": int(cpu), "run_id": run_id, "start_time": start, "source": str(path)}
        row.update(summarise_calls(group))
        if monitoring is not None and not monitoring.empty:
            cores = set(group["core"].astype(int))
            mon = monitoring[(monitoring["host"] == host) & monitoring["core"].astype(int).isin(cores)]
            for col in ("frequency_hz", "temperature_c"):
                if col in mon.columns and mon[col].notna().any():
                    row[col] = float(mon[col].mean())
        rows.append(row)
    return pd.DataFrame(rows)
