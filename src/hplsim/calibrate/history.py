"""The calibration history: one row per (host, CPU, run) with the metrics to watch.

Its format (docs/formats/history.md: the SQLite tables, the columns) is declared here with
its reader, `read_history`; its writer is `hplsim.check.history.append_runs` (`check add`).
Read from our history file (SQLite) or from a CSV: the published Dahu history
(``dgemm_calibration_history.csv``: node, cpu, jobid, start_time, metrics) or the same
table with our column names (host, cpu, run_id, start_time, metrics).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd

from hplsim import formats, tables
from hplsim.calibrate.hostnames import DAHU_HOST_FORMAT, check_host_format, host_names
from hplsim.errors import HplsimError, warn
from hplsim.formats import Field, Record

FORMAT = "hplsim-history"
FORMAT_VERSION = 1

#: The columns of a history that identify a run rather than measure it (CSV and SQLite
#: alike; every other column is a metric, a number or empty); what each must hold.
COLUMNS = {"host": "a host name", "cpu": "a CPU index (an integer)", "run_id": "the run's name",
           "start_time": "the Unix time (s) the run started", "source": "the file the run came from"}
KEY = ["host", "cpu", "run_id"]
NON_METRICS = set(COLUMNS)
#: The published Dahu history's names for host and run_id: a node number (from 1), a job id.
DAHU_COLUMNS = {"node": "a node number (an integer)", "jobid": "the run's name"}
#: The SQLite file's meta table (key -> what its value must be).
META = Record({
    "format": Field(formats.exactly(FORMAT), repr(FORMAT), required=True),
    "version": Field(lambda v: _version(v), f"a version up to {FORMAT_VERSION} (this hplsim's)", FORMAT_VERSION),
}, name="the meta table", extra=True)

SCHEMA = """
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


def _version(value: str) -> int:
    try:
        version = int(value)
    except ValueError:
        version = -1
    if not 0 <= version <= FORMAT_VERSION:
        raise formats.Invalid(f"a version up to {FORMAT_VERSION} (this hplsim's)")
    return version


def _first_bad(source: str, df: pd.DataFrame, column: str, bad: pd.Series, expected: str) -> HplsimError:
    """The error for a column with bad cells: the first one, its line, how many in all."""
    row = int(bad.to_numpy().nonzero()[0][0])
    count = int(bad.sum())
    return formats.error(source, f"{column} (line {row + 2})", expected, shown_as=f"{df[column].iloc[row]!r}"
                         + (f" ({count} bad rows in all)" if count > 1 else ""))


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


# ----------------------------------------------------------------------------- CSV


def _from_csv(path: Path, host_format: str) -> pd.DataFrame:
    source = f"history {path}"
    df = tables.read_csv(path, source)
    columns = set(df.columns)
    if not ({"host", "run_id"} <= columns or {"node", "jobid"} <= columns) or not {"cpu", "start_time"} <= columns:
        raise formats.error(source, "", "columns host, cpu, run_id, start_time (or the Dahu layout node, cpu, "
                            "jobid, start_time), then the metrics", shown_as="columns " + ", ".join(map(str, df.columns)))
    if {"host", "run_id"} <= columns:
        host, run = df["host"].astype(str), df["run_id"].astype(str)
    else:
        # the Dahu layout numbers nodes from 1: node i+1 is the platform's host dahu-i, the
        # rule `fit` applies to the same data (--host-format)
        nodes = pd.to_numeric(df["node"], errors="coerce")
        bad = nodes.isna() | (nodes != nodes.round())
        if bad.any():
            raise _first_bad(source, df, "node", bad, DAHU_COLUMNS["node"])
        host = pd.Series(host_names(host_format, nodes), index=df.index, dtype=object)
        run = df["jobid"].astype(str)
    cpu = pd.to_numeric(df["cpu"], errors="coerce")
    bad = cpu.isna() | (cpu != cpu.round())
    if bad.any():
        raise _first_bad(source, df, "cpu", bad, COLUMNS["cpu"])
    out = pd.DataFrame({"host": host, "cpu": cpu.astype(int), "run_id": run,
                        "start_time": pd.to_numeric(df["start_time"], errors="coerce"), "source": str(path)})
    for col in df.columns:
        if col in NON_METRICS or col in ("node", "jobid", "cluster"):
            continue
        values = pd.to_numeric(df[col], errors="coerce")
        if values.notna().any():  # text columns (function, expfile_hash) are not metrics
            out[col] = values
    return _without_duplicates(out, path)


def _without_duplicates(runs: pd.DataFrame, path: Path) -> pd.DataFrame:
    """A run (host, CPU, run id) listed twice would count twice in every test: identical
    copies are dropped with a warning, copies that disagree are an error."""
    key = list(KEY)
    dup = runs.duplicated(key, keep=False)
    if not dup.any():
        return runs
    copies = runs[dup]
    same = copies.drop(columns=["source"]).drop_duplicates()
    if same.duplicated(key).any():
        h, c, r = same[same.duplicated(key)].iloc[0][key]
        raise HplsimError(f"history {path}: run {r} of {h} CPU {c} is listed twice with different values")
    extra = int(runs.duplicated(key).sum())
    warn(f"history {path}: {extra} duplicated row(s) (same host, CPU and run) counted once")
    return runs.drop_duplicates(key).reset_index(drop=True)


# --------------------------------------------------------------------------- SQLite


def format_of(con: sqlite3.Connection) -> dict[str, str] | None:
    """The meta table of an hplsim history; {} for an empty database, None for another
    application's database."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return {}
    if "meta" not in tables:
        return None
    return dict(con.execute("SELECT key, value FROM meta").fetchall())


def _from_sqlite(path: Path) -> pd.DataFrame:
    try:
        # Read-only: reading a history never creates or changes a file.
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=60)
        try:
            fmt = format_of(con)
            if not fmt:
                raise formats.error(f"history {path}", "", "an SQLite file with an hplsim history's meta table",
                                    shown_as="an SQLite file that is not an hplsim history")
            formats.read(META, fmt, f"history {path}", "meta")
            long = pd.read_sql_query("SELECT * FROM observations", con)
        finally:
            con.close()
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
        raise HplsimError(f"cannot read history {path}: {exc}") from None
    if long.empty:
        return pd.DataFrame(columns=[*KEY, "start_time", "source"])
    long["source"] = long["source"].fillna("")
    # NULL values (not measured) come back as NaN, as empty cells of a CSV.
    wide = long.set_index([*KEY, "start_time", "source", "metric"])["value"].unstack("metric").reset_index()
    wide.columns.name = None
    return wide.astype({"cpu": int})


def read_history(path: Path, host_format: str = DAHU_HOST_FORMAT) -> pd.DataFrame:
    """A history as a table: host, cpu, run_id, start_time, source, then one column per metric.

    `host_format`: the host of a node number, for the Dahu layout (node, jobid)."""
    check_host_format(host_format)
    path = Path(path)
    if not path.is_file():
        raise HplsimError(f"history {path} does not exist")
    return _from_sqlite(path) if is_sqlite(path) else _from_csv(path, host_format)
