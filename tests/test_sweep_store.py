"""The results store without simulations: one row per run, what a retry replaces, format
checks, and many processes writing to one file at once."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from hplsim.errors import HplsimError
from hplsim.sweep.plan import make_plan
from hplsim.sweep.spec import parse_spec
from hplsim.sweep.store import ResultStore
from hplsim.sweep.tasks import Outcome, now


def small_plan(tmp_path, n=(2000, 3000), seeds=(0,)):
    spec = parse_spec({"hpl": {"n": list(n), "nb": 64, "grids": [[1, 2], [2, 1]], "bcast": [0, 1]},
                       "seeds": list(seeds)}, "test")
    return make_plan(spec, tmp_path / "work", None)


def ok(task, gflops=10.0) -> Outcome:
    return Outcome(task.hash, "ok", gflops, 1.0, 0.5, 1000, None, now(), now(), "here")


def failed(task, error="boom") -> Outcome:
    return Outcome(task.hash, "failed", error=error, started_at=now(), finished_at=now(), worker="here")


def test_record_keeps_ok_and_retries_failed(tmp_path):
    plan = small_plan(tmp_path)
    a, b = plan.tasks[:2]
    v = plan.variants[0]
    with ResultStore(tmp_path / "r.sqlite") as store:
        sweep = store.begin_sweep("spec", "text", "local")
        store.record(a, v, ok(a, 1.0), sweep)
        store.record(a, v, ok(a, 2.0), sweep)  # a second outcome of a stored run (concurrent sweep)
        store.record(b, v, failed(b), sweep)
        store.record(b, v, failed(b, "again"), sweep)
        store.record(b, v, ok(b, 3.0), sweep)
        runs = {r["hash"]: r for r in store.runs()}
        assert runs[a.hash]["gflops"] == 1.0 and runs[a.hash]["attempts"] == 1
        assert runs[b.hash]["status"] == "ok" and runs[b.hash]["error"] is None and runs[b.hash]["attempts"] == 3
        assert store.statuses([a.hash, b.hash, "nope"]) == {a.hash: "ok", b.hash: "ok"}
        row = runs[a.hash]
        assert (row["n"], row["nb"], row["p"], row["q"], row["seed"]) == (a.config.n, 64, a.config.p, a.config.q, 0)
        assert row["platform"] == "builtin:dahu" and row["model_digest"] == v.model.digest
        assert row["l1_transposed"] is True
        assert store.integrity() == "ok"
    raw = sqlite3.connect(tmp_path / "r.sqlite")
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_parameter_columns_are_those_of_the_version_1_files(tmp_path):
    """The columns come from the table of HPL parameters; stores already written (format
    version 1) have these, in this order, so the derived list must give them."""
    with ResultStore(tmp_path / "r.sqlite") as store:
        columns = [r["name"] for r in store.conn.execute("PRAGMA table_info(runs)")]
    assert columns[2:19] == ["n", "nb", "p", "q", "pmap", "pfact", "nbmin", "ndiv", "rfact", "bcast", "depth",
                             "swap", "swap_threshold", "l1_transposed", "u_transposed", "equil", "align"]
    assert columns[19] == "seed"


def test_a_store_older_than_a_parameter_gets_its_column_at_its_default(tmp_path):
    plan = small_plan(tmp_path)
    a, b = plan.tasks[:2]
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.record(a, plan.variants[0], ok(a), None)
    raw = sqlite3.connect(tmp_path / "r.sqlite")
    raw.execute("ALTER TABLE runs DROP COLUMN align")  # as if written before ALIGN was a parameter
    raw.commit()
    raw.close()
    with ResultStore(tmp_path / "r.sqlite", create=False) as store:
        store.record(b, plan.variants[0], ok(b), None)
        assert [r["align"] for r in store.runs()] == [8, b.config.align]


def test_not_a_store(tmp_path):
    with pytest.raises(HplsimError, match="no results store"):
        ResultStore(tmp_path / "missing.sqlite", create=False)
    (tmp_path / "text.sqlite").write_text("hello, this is not a database at all" * 100)
    with pytest.raises(HplsimError, match="not an hplsim results store"):
        ResultStore(tmp_path / "text.sqlite")
    other = sqlite3.connect(tmp_path / "other.sqlite")
    other.execute("CREATE TABLE t (x)")
    other.commit()
    other.close()
    with pytest.raises(HplsimError, match="not an hplsim results store"):
        ResultStore(tmp_path / "other.sqlite", create=False)


def _writer(path, tmp, worker: int, rounds: int) -> None:
    plan = small_plan(tmp, n=(2000, 3000, 4000, 5000), seeds=(0, 1, 2))
    with ResultStore(path) as store:
        sweep = store.begin_sweep("spec", "", f"w{worker}")
        for _ in range(rounds):
            for i, task in enumerate(plan.tasks):
                outcome = ok(task, float(worker)) if (i + worker) % 3 else failed(task, f"w{worker}")
                store.record(task, plan.variants[0], outcome, sweep)


def test_concurrent_writers_leave_one_consistent_row_per_run(tmp_path):
    path = tmp_path / "shared.sqlite"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, tmp_path / f"w{i}", i, 3)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    plan = small_plan(tmp_path, n=(2000, 3000, 4000, 5000), seeds=(0, 1, 2))
    with ResultStore(path, create=False) as store:
        assert store.integrity() == "ok"
        runs = store.runs()
        assert sorted(r["hash"] for r in runs) == sorted(t.hash for t in plan.tasks)
        # every run was reported ok by at least one writer: no failure may hide an ok
        assert all(r["status"] == "ok" and r["error"] is None for r in runs)
        assert len(store.sweeps()) == 4


def test_a_store_locked_too_long_is_reported_as_locked_not_as_foreign(tmp_path, monkeypatch):
    """Another process holding the store past the busy timeout is a lock, said as such (it was
    once reported as "not an hplsim results store")."""
    from hplsim.sweep import store

    path = tmp_path / "s.sqlite"
    ResultStore(path).conn.close()
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 200)
    with pytest.raises(HplsimError, match="stayed locked by another process"):
        ResultStore(path)
    holder.execute("COMMIT")
    assert ResultStore(path, create=False).path == path


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed one
def test_a_ctrl_c_that_a_finaliser_swallowed_still_stops_the_sweep_at_the_next_run(tmp_path):
    """Python drops an exception that a signal handler raises while a finaliser runs (it
    prints "Exception ignored in …"): a sweep whose Ctrl-C landed there ran on to its end
    and exited 0 (the Ctrl-C test of test_sweep_run.py, seen under load). Here the signal
    comes inside a __del__ after the first run: the sweep stops after the next one, and its
    record says interrupted."""
    import signal
    import threading

    from helpers import sigint_in_a_finaliser

    from hplsim.sweep.run import run_sweep

    if threading.current_thread() is not threading.main_thread():
        pytest.fail("signals need the main thread")  # pytest-xdist runs tests there

    class Executor:
        name = "fake"

        def check(self):
            pass

        def run(self, tasks, variants):
            for i, task in enumerate(tasks):
                if i == 1:
                    sigint_in_a_finaliser()
                yield ok(task)

    spec = parse_spec({"hpl": {"n": [2000, 3000], "nb": 64, "grids": [[1, 2], [2, 1]]}, "seeds": [0]}, "test")
    db = tmp_path / "s.sqlite"
    before = signal.getsignal(signal.SIGINT)  # Python's, or hplsim's if a test ran its main() here
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, db, Executor(), progress=False, log=lambda m: None)
    assert signal.getsignal(signal.SIGINT) is before  # restored
    with ResultStore(db, create=False) as store:
        assert [s["status"] for s in store.sweeps()] == ["interrupted"]
        assert len(store.runs()) == 2  # the run the signal came in, then stopped
