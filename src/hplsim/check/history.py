"""Adding runs to a calibration history (`check add`): the history's one writer. Its
format and reader are `hplsim.calibrate.history` (calibration data, read by `fit
--population` too)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pandas as pd

from hplsim.calibrate.history import FORMAT, FORMAT_VERSION, KEY, NON_METRICS, SCHEMA, format_of, is_sqlite
from hplsim.errors import HplsimError


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: transactions are opened explicitly (BEGIN IMMEDIATE), so that
    # the check for runs already present and the inserts happen under one write lock.
    con = sqlite3.connect(path, timeout=60, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    return con


def append_runs(path: Path, runs: pd.DataFrame) -> tuple[int, int]:
    """Add summarised runs in one transaction: all of them or, on any error, none. Runs
    already present (same host, CPU and run id) are left as they are. Returns (added,
    already present)."""
    path = Path(path)
    if path.exists() and path.stat().st_size > 0 and not is_sqlite(path):
        raise HplsimError(f"{path} is not an hplsim history (SQLite) file: cannot append to it")
    missing = {*KEY, "start_time"} - set(runs.columns)
    if missing:
        raise ValueError(f"runs without column(s) {', '.join(sorted(missing))}")
    metrics = [c for c in runs.columns if c not in NON_METRICS]
    if not metrics:
        raise ValueError("runs without any metric")
    try:
        con = _connect(path)
    except sqlite3.DatabaseError as exc:
        raise HplsimError(f"cannot open history {path}: {exc}") from None
    added = present = 0
    try:
        con.execute("BEGIN IMMEDIATE")
        fmt = format_of(con)
        if fmt is None or (fmt and fmt.get("format") != FORMAT):
            raise HplsimError(f"{path} is an SQLite file but not an hplsim history")
        for statement in filter(str.strip, SCHEMA.split(";")):
            con.execute(statement)
        con.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?), ('version', ?)", (FORMAT, str(FORMAT_VERSION)))
        seen = set()
        for r in runs.to_dict("records"):
            key = (str(r["host"]), int(r["cpu"]), str(r["run_id"]))
            if key in seen or con.execute("SELECT 1 FROM observations WHERE host=? AND cpu=? AND run_id=? LIMIT 1",
                                          key).fetchone():
                present += 1
                continue
            seen.add(key)
            start = float(r["start_time"])
            if not math.isfinite(start):
                raise HplsimError(f"run {key[2]} of {key[0]} CPU {key[1]} has no start time")
            values = [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
                      for v in (r.get(m) for m in metrics)]
            con.executemany("INSERT INTO observations VALUES (?, ?, ?, ?, ?, ?, ?)",
                            [(*key, start, m, v, str(r.get("source") or "")) for m, v in zip(metrics, values)])
            added += 1
        con.execute("COMMIT")
    except BaseException as exc:
        if con.in_transaction:
            con.execute("ROLLBACK")
        if isinstance(exc, sqlite3.DatabaseError):
            raise HplsimError(f"cannot write history {path}: {exc}") from None
        raise
    finally:
        con.close()
    return added, present
