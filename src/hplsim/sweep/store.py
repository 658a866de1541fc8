"""The results store: one SQLite file (format in docs/formats/results-store.md).

The only code that reads or writes it. Concurrency rules, all in this module:

- WAL journal: readers (``sweep show``) never block the writer, and a writer killed at
  any moment (even SIGKILL) leaves the file consistent — a transaction is in or out.
- every write is one short ``BEGIN IMMEDIATE`` transaction, and every connection waits
  (busy timeout) instead of failing when another sweep holds the write lock, so two
  sweeps can share one store;
- a run's row is written once, whole, when its outcome is known (nothing for runs in
  flight); a stored ``ok`` row is never replaced, a ``failed`` one may be (retry).
- only the coordinating process writes; workers (local, Dask, Slurm) just return outcomes;
- a run is claimed (``claims``) just before it starts: another sweep on the same store
  skips it and waits for its outcome instead of running it again, unless the claimer has
  died (its process gone, or no heartbeat for `CLAIM_STALE_S`), whose runs it then takes.

Every SQLite error becomes one `HplsimError` naming the store and what went wrong for the
user (disk full, read-only, damaged, locked), never a traceback.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from hplsim import __version__
from hplsim.errors import HplsimError
from hplsim.hpl.parameters import PARAMETERS
from hplsim.sweep.tasks import Outcome, Task, now
from hplsim.sweep.variants import Variant

FORMAT_NAME = "hplsim-results"
FORMAT_VERSION = 1
BUSY_TIMEOUT_MS = 120_000  # another sweep's transaction lasts milliseconds; wait generously
HEARTBEAT_S = 60.0  # a running sweep refreshes its claims this often ...
CLAIM_STALE_S = 300.0  # ... so a claim older than this is a dead sweep's (e.g. on another host)

#: HPL parameters, one column each (so that the file can be queried with plain SQL), in
#: the table's order — the order of the existing files' columns (flags stored as 0/1).
HPL_COLUMNS = tuple(p.name for p in PARAMETERS)
_FLAG_COLUMNS = tuple(p.name for p in PARAMETERS if p.type is bool)

#: The runs table's columns and their SQL types, declared once: the schema and the row a
#: run writes derive from it (docs/formats/results-store.md).
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("hash", "TEXT PRIMARY KEY"),
    ("status", "TEXT NOT NULL CHECK (status IN ('ok', 'failed'))"),
    *((c, "INTEGER NOT NULL") for c in HPL_COLUMNS),
    ("seed", "INTEGER NOT NULL"),
    ("label", "TEXT NOT NULL"),
    ("platform", "TEXT NOT NULL"),
    ("platform_variation", "TEXT NOT NULL"),
    ("platform_digest", "TEXT NOT NULL"),
    ("model", "TEXT NOT NULL"),
    ("model_variation", "TEXT NOT NULL"),
    ("model_digest", "TEXT NOT NULL"),
    ("hplsim_version", "TEXT NOT NULL"),
    ("gflops", "REAL"),
    ("time_s", "REAL"),
    ("sim_wall_s", "REAL"),
    ("sim_memory_bytes", "INTEGER"),
    ("error", "TEXT"),
    ("attempts", "INTEGER NOT NULL DEFAULT 1"),  # counted by the store, not written by a run
    ("started_at", "TEXT NOT NULL"),
    ("finished_at", "TEXT NOT NULL"),
    ("worker", "TEXT"),
    ("sweep_id", "INTEGER REFERENCES sweeps(id)"),
    ("config", "TEXT NOT NULL"),
)
# Laid out as the first stores were (the HPL columns on one line), so that a new store's
# schema text is the same as ever.
_RUNS_BODY = ",\n    ".join(
    [f"{name:<17} {sql}" for name, sql in RUN_COLUMNS[:2]]
    + [", ".join(f"{name} {sql}" for name, sql in RUN_COLUMNS[2:2 + len(HPL_COLUMNS)])]
    + [f"{name:<17} {sql}" for name, sql in RUN_COLUMNS[2 + len(HPL_COLUMNS):]])

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sweeps (
    id               INTEGER PRIMARY KEY,
    started_at       TEXT NOT NULL,
    finished_at      TEXT,
    status           TEXT NOT NULL DEFAULT 'running',  -- running (or killed), done, interrupted, error
    spec_path        TEXT,
    spec             TEXT,
    executor         TEXT,
    host             TEXT,
    hplsim_version   TEXT NOT NULL,
    planned          INTEGER NOT NULL DEFAULT 0,
    already_stored   INTEGER NOT NULL DEFAULT 0,
    invalid          INTEGER NOT NULL DEFAULT 0,
    ok               INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS runs (
    {_RUNS_BODY}
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS claims (
    hash      TEXT PRIMARY KEY,
    sweep_id  INTEGER NOT NULL,
    host      TEXT NOT NULL,
    pid       INTEGER NOT NULL,
    heartbeat REAL NOT NULL
);
"""

_RUN_FIELDS = tuple(name for name, _ in RUN_COLUMNS if name != "attempts")
# Outcome fields a retry replaces; inputs stay as first written (they are the same by hash).
_UPDATED = ("status", "gflops", "time_s", "sim_wall_s", "sim_memory_bytes", "error", "started_at",
            "finished_at", "worker", "sweep_id")


@dataclass(frozen=True)
class SweepCounts:
    planned: int = 0
    already_stored: int = 0
    invalid: int = 0
    ok: int = 0
    failed: int = 0


def _locked(exc: sqlite3.Error) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _problem(path: Path, exc: sqlite3.Error) -> HplsimError:
    """What a SQLite error means to the user, in one line naming the store."""
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL or "disk is full" in text:
        return HplsimError(f"cannot write the results store {path}: the disk is full ({text})")
    if code == sqlite3.SQLITE_READONLY or "readonly" in text or "read-only" in text:
        return HplsimError(f"cannot write the results store {path}: it is read-only ({text})")
    if _locked(exc):
        return HplsimError(f"results store {path} stayed locked by another process for "
                           f"{BUSY_TIMEOUT_MS / 1000:g} s ({text})")
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in text or "not a database" in text:
        return HplsimError(f"results store {path} is damaged or not a database ({text}); it is left as it is")
    if code == sqlite3.SQLITE_CANTOPEN or "unable to open" in text:
        return HplsimError(f"cannot open the results store {path} ({text})")
    return HplsimError(f"results store {path}: {text}")


def _alive(host: str, pid: int) -> bool:
    """Whether process `pid` of `host` may still run (another host's: cannot tell, yes)."""
    from hplsim.processes import running

    return host != socket.gethostname() or running(pid)


class ResultStore:
    """A connection to one store. ``ResultStore(path)`` creates it if needed;
    ``ResultStore(path, create=False)`` refuses a missing file (readers)."""

    def __init__(self, path: Path, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise HplsimError(f"no results store at {self.path}")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        existing = self.path.is_file() and self.path.stat().st_size > 0
        # SQLite's side files that this open may create: on a damaged WAL store its close
        # cannot always checkpoint and leaves them, and a refused file must be left as found
        side = [Path(f"{self.path}{suffix}") for suffix in ("-wal", "-shm")]
        ours = [f for f in side if not f.exists()]
        self.conn: sqlite3.Connection | None = None
        try:
            self.conn = self._connect(create)
            if existing and not self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                existing = False  # another sweep creating the store right now (or an empty database)
            if existing:  # before any write: a damaged or foreign file is left as it is
                self._check_format()
                self._check_intact()
            if create:
                self._enable_wal()
                # NORMAL in WAL mode: a killed process never loses a committed transaction;
                # only a power loss may lose the last ones (never corrupts).
                self.conn.execute("PRAGMA synchronous = NORMAL")
                with self._write():  # executescript would commit on its own: one statement at a time
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        self.conn.execute(statement)
                    self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?), ('version', ?)",
                                      (FORMAT_NAME, str(FORMAT_VERSION)))
            if not existing:
                self._check_format()
            self._add_new_parameters()
        except BaseException as exc:
            if self.conn is not None:
                self.conn.close()  # now: its -wal and -shm files go with it
            code = getattr(exc, "sqlite_errorcode", None)
            damaged = isinstance(exc, HplsimError) or (isinstance(exc, sqlite3.DatabaseError) and code in (
                sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, None))
            if damaged:  # no sweep can use such a file: the side files are this open's own
                for f in ours:
                    f.unlink(missing_ok=True)
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            if code not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, None):  # locked, full, read-only …
                raise _problem(self.path, exc) from None
            raise HplsimError(f"{self.path} is not an hplsim results store, or is damaged ({exc}); "
                              "it is left as it is") from None

    def _connect(self, create: bool) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE below).
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            # A WAL store on a read-only file system: SQLite cannot create the -shm file a
            # reader needs; nothing can write it through this mount, so read it as immutable.
            conn.close()
            if create or not ("unable to open" in str(exc) or "readonly" in str(exc)):
                raise
            wal = Path(f"{self.path}-wal")
            if wal.is_file() and wal.stat().st_size > 0:  # immutable would ignore its transactions
                raise HplsimError(f"cannot read the results store {self.path}: its {wal.name} file holds runs not "
                                  f"yet in the store, and SQLite cannot read them here ({exc}); open it once "
                                  "where it can be written") from None
            uri = "file:" + _quote(str(self.path.resolve())) + "?immutable=1"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    def _enable_wal(self) -> None:
        # Two processes creating the same store at once both switch it to WAL; SQLite answers
        # the loser "database is locked" at once, without waiting on busy_timeout: retry.
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _locked(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _check_format(self) -> None:
        try:
            meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            raise HplsimError(f"{self.path} is not an hplsim results store (no meta table)") from None
        if meta.get("format") != FORMAT_NAME:
            raise HplsimError(f"{self.path} is not an hplsim results store (format {meta.get('format')!r})")
        if meta.get("version") != str(FORMAT_VERSION):
            raise HplsimError(f"{self.path}: results store version {meta.get('version')} "
                              f"(this hplsim reads {FORMAT_VERSION})")

    def _check_intact(self) -> None:
        """A damaged file (truncated, overwritten) is refused whole, before any work: its
        rows could be read half, or a write into it could destroy what it still holds."""
        problems = [r[0] for r in self.conn.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise HplsimError(f"results store {self.path} is damaged ({'; '.join(problems)}); it is left as it is "
                              "(`sqlite3 FILE .recover` may save its readable rows)")

    def _add_new_parameters(self) -> None:
        """A store written before an HPL parameter was declared lacks its column: its runs
        ran with that parameter at its default, which the added column holds (so a new
        parameter needs no new format version)."""
        present = {r["name"] for r in self.conn.execute("PRAGMA table_info(runs)")}
        missing = [p for p in PARAMETERS if p.name not in present]
        if missing:
            with self._write():
                for p in missing:
                    self.conn.execute(f"ALTER TABLE runs ADD COLUMN {p.name} INTEGER NOT NULL "
                                      f"DEFAULT {int(p.default or 0)}")

    def _write(self):
        return _Transaction(self.conn, self.path)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise _problem(self.path, exc) from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------ writing

    def begin_sweep(self, spec_path: str, spec_text: str, executor: str) -> int:
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO sweeps (started_at, spec_path, spec, executor, host, hplsim_version) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (now(), spec_path, spec_text, executor, socket.gethostname(), __version__),
            )
            return int(cur.lastrowid)

    def end_sweep(self, sweep_id: int, counts: SweepCounts, status: str) -> None:
        with self._write():
            self.conn.execute(
                "UPDATE sweeps SET finished_at = ?, status = ?, planned = ?, already_stored = ?, invalid = ?, "
                "ok = ?, failed = ? WHERE id = ?",
                (now(), status, counts.planned, counts.already_stored, counts.invalid, counts.ok, counts.failed,
                 sweep_id),
            )

    def record(self, task: Task, variant: Variant, outcome: Outcome, sweep_id: int | None) -> None:
        """Store one run's outcome in one transaction. An ``ok`` row already there (e.g.
        written by a concurrent sweep) is kept; a ``failed`` one is replaced and its
        ``attempts`` counted."""
        c = task.config
        row = {
            "hash": task.hash, "status": outcome.status, **{k: int(v) for k, v in c.as_dict().items()},
            "seed": task.seed, "label": c.label(), "platform": variant.platform.label,
            "platform_variation": variant.platform_variation, "platform_digest": variant.platform_digest,
            "model": variant.model.label, "model_variation": variant.model_variation,
            "model_digest": variant.model.digest, "hplsim_version": json.loads(task.key)["hplsim_version"],
            "gflops": outcome.gflops, "time_s": outcome.time_s, "sim_wall_s": outcome.sim_wall_s,
            "sim_memory_bytes": outcome.sim_memory_bytes, "error": outcome.error,
            "started_at": outcome.started_at or now(), "finished_at": outcome.finished_at or now(),
            "worker": outcome.worker, "sweep_id": sweep_id, "config": task.key,
        }
        columns = ", ".join(_RUN_FIELDS)
        marks = ", ".join(f":{f}" for f in _RUN_FIELDS)
        updates = ", ".join(f"{f} = excluded.{f}" for f in _UPDATED)
        with self._write():
            self.conn.execute(
                f"INSERT INTO runs ({columns}) VALUES ({marks}) ON CONFLICT(hash) DO UPDATE SET {updates}, "
                "attempts = runs.attempts + 1 WHERE runs.status != 'ok'",
                row,
            )
            self.conn.execute("DELETE FROM claims WHERE hash = ?", (task.hash,))

    def stored_state(self, hashes: Iterable[str]) -> dict[str, tuple[str, int]]:
        """hash -> (status, attempts) of the given hashes that are stored: what changes when
        another sweep stores an outcome of the run."""
        out: dict[str, tuple[str, int]] = {}
        items = list(hashes)
        with self._reading():
            for i in range(0, len(items), 500):  # SQLite's limit on bound parameters
                chunk = items[i:i + 500]
                rows = self.conn.execute(
                    f"SELECT hash, status, attempts FROM runs WHERE hash IN ({', '.join('?' * len(chunk))})", chunk)
                out.update({r["hash"]: (r["status"], r["attempts"]) for r in rows})
        return out

    def claim(self, task_hash: str, sweep_id: int, seen: tuple[str, int] | None) -> str:
        """Before running a run: "mine" (claimed, run it), "stored" (another sweep stored an
        outcome since this one saw `seen`) or "busy" (another live sweep is running it)."""
        with self._write():
            row = self.conn.execute("SELECT status, attempts FROM runs WHERE hash = ?", (task_hash,)).fetchone()
            if row is not None and (row["status"], row["attempts"]) != seen:
                return "stored"
            claim = self.conn.execute("SELECT * FROM claims WHERE hash = ?", (task_hash,)).fetchone()
            if claim is not None and claim["sweep_id"] != sweep_id and self._live(claim):
                return "busy"
            self.conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                              (task_hash, sweep_id, socket.gethostname(), os.getpid(), time.time()))
            return "mine"

    def claimer(self, task_hash: str) -> str | None:
        """Who holds a live claim on the run ("pid 123 on host"), or None."""
        with self._reading():
            claim = self.conn.execute("SELECT * FROM claims WHERE hash = ?", (task_hash,)).fetchone()
        return f"pid {claim['pid']} on {claim['host']}" if claim is not None and self._live(claim) else None

    @staticmethod
    def _live(claim: sqlite3.Row) -> bool:
        return time.time() - claim["heartbeat"] < CLAIM_STALE_S and _alive(claim["host"], claim["pid"])

    def release(self, sweep_id: int) -> None:
        """The claims of a sweep that stops (its unfinished runs are anyone's again)."""
        with self._write():
            self.conn.execute("DELETE FROM claims WHERE sweep_id = ?", (sweep_id,))

    # ------------------------------------------------------------------------ reading

    def statuses(self, hashes: Iterable[str]) -> dict[str, str]:
        """hash -> stored status, for the given hashes that are stored."""
        return {h: status for h, (status, _) in self.stored_state(hashes).items()}

    def runs(self, status: str | None = None) -> list[dict[str, Any]]:
        """Stored runs in the order they were stored (the full configuration JSON left out)."""
        fields = ", ".join(f for f in _RUN_FIELDS if f != "config") + ", attempts"
        query = f"SELECT {fields} FROM runs"
        args: tuple = ()
        if status is not None:
            query += " WHERE status = ?"
            args = (status,)
        with self._reading():
            rows = [dict(r) for r in self.conn.execute(query + " ORDER BY rowid", args)]
        for r in rows:
            for b in _FLAG_COLUMNS:
                r[b] = bool(r[b])
        return rows

    def sweeps(self) -> list[dict[str, Any]]:
        with self._reading():
            return [dict(r) for r in self.conn.execute("SELECT * FROM sweeps ORDER BY id")]

    def integrity(self) -> str:
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])


def heartbeat(path: Path, sweep_id: int) -> None:
    """Refresh a running sweep's claims (from a thread of its own: its own connection)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.execute("UPDATE claims SET heartbeat = ? WHERE sweep_id = ?", (time.time(), sweep_id))
    finally:
        conn.close()


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(path)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (or ``ROLLBACK`` on any exception, even
    KeyboardInterrupt): takes the write lock up front, so the busy timeout applies. A SQLite
    error (disk full, read-only, damaged) leaves the transaction out and becomes one
    `HplsimError`."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path

    def __enter__(self) -> None:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _problem(self.path, exc) from None

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if exc_type is None:
                self.conn.execute("COMMIT")
                return False
            if self.conn.in_transaction:  # SQLite may have rolled back already (disk full)
                self.conn.execute("ROLLBACK")
        except sqlite3.Error as error:
            if self.conn.in_transaction:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if exc_type is None or issubclass(exc_type, sqlite3.Error):
                raise _problem(self.path, error) from None
            return False
        if exc_type is not None and issubclass(exc_type, sqlite3.Error):
            raise _problem(self.path, exc) from None
        return False
