"""Faults lose nothing (docs/errors.md, Faults): each fault is injected for real — a small
tmpfs filled up, a read-only mount (both in a private mount namespace: `unshare
--map-root-user --mount`, which needs no privilege where user namespaces are allowed), a
store's bytes truncated or overwritten, two sweeps started at once, a model file rewritten
under a running sweep — and each ends in one ``hplsim: error:`` line (or, where nothing is
wrong, in success), keeps every finished result, and leaves no partial file and no
process behind."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from helpers import marked_processes, run_cli

from hplsim.sweep.plan import make_plan
from hplsim.sweep.spec import load_spec, parse_spec
from hplsim.sweep.store import ResultStore
from hplsim.sweep.tasks import Outcome, now

# 8 runs of a few tenths of a second each on 2 ranks: long enough to fault in the middle.
SPEC = "hpl: {n: [500, 600], nb: 64, grids: [[1, 2], [2, 1]], bcast: [0, 1]}\n"
SPEC4 = "hpl: {n: 500, nb: 64, grids: [[1, 2], [2, 1]], bcast: [0, 1]}\n"  # where fewer runs do
HANG = 300  # s: only against a hang; every wait below ends on an event

# Runs inside the mount namespace: mounts, runs the command, fills the file system up once
# the store holds `after` runs (0: before the command), then copies what the file system
# holds out to `keep` (the namespace's mounts die with it).
INNER = r"""
import json, os, shutil, sqlite3, subprocess, sys, time
a = json.loads(sys.argv[1])
for m in a["mounts"]:
    if m["kind"] == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + m["size"], "tmpfs", m["dir"]], check=True)
    else:
        subprocess.run(["mount", "--bind", m["dir"], m["dir"]], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", m["dir"]], check=True)

def fill(folder):
    try:
        with open(os.path.join(folder, "filler"), "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 4096)
    except OSError:
        pass  # full

fault = a.get("fault")
if fault and fault["after"] == 0:
    fill(fault["dir"])
proc = subprocess.Popen(a["command"], cwd=a["cwd"], env={**os.environ, **a["env"]})
if fault and fault["after"] > 0:
    deadline = time.monotonic() + a["hang"]
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with sqlite3.connect("file:" + fault["db"] + "?mode=ro", uri=True, timeout=5) as c:
                if c.execute("SELECT count(*) FROM runs").fetchone()[0] >= fault["after"]:
                    break
        except sqlite3.Error:
            pass  # not created yet
        time.sleep(0.02)
    if proc.poll() is not None:
        sys.exit(99)  # ended before the fault: the test says so
    fill(fault["dir"])
rc = proc.wait(timeout=a["hang"])
for m in a["mounts"]:
    shutil.copytree(m["dir"], os.path.join(a["keep"], os.path.basename(m["dir"])), dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if n == "filler"])
sys.exit(rc)
"""


def in_namespace(tmp_path: Path, command: list[str], mounts: list[dict], fault: dict | None = None,
                 cwd: Path | None = None, env: dict[str, str] | None = None,
                 ) -> tuple[subprocess.CompletedProcess, Path, str]:
    """`command` in a private mount namespace with `mounts` ({"dir", "kind": tmpfs|ro,
    "size"}) and `env` over the environment; returns the outcome, the folder holding a copy
    of each mount's files as the command left them, and the marker of its processes."""
    keep = tmp_path / "kept"
    keep.mkdir(exist_ok=True)
    marker = f"faults-{os.getpid()}-{time.time_ns()}"
    args = {"mounts": [{**m, "dir": str(m["dir"])} for m in mounts], "command": command,
            "cwd": str(cwd or tmp_path), "env": {**(env or {}), "HPLSIM_TEST_MARKER": marker}, "keep": str(keep),
            "fault": {**fault, "dir": str(fault["dir"]), "db": str(fault.get("db", ""))} if fault else None,
            "hang": HANG}
    out = subprocess.run(["unshare", "--map-root-user", "--mount", sys.executable, "-c", INNER, json.dumps(args)],
                         capture_output=True, text=True, timeout=HANG)
    assert out.returncode != 99, f"the command ended before the fault: {out.stderr}"
    return out, keep, marker


def hplsim_cmd(*args: object) -> list[str]:
    return [sys.executable, "-m", "hplsim.cli", *map(str, args)]


def one_error(stderr: str) -> str:
    """The one ``hplsim: error:`` line, and no traceback."""
    errors = [line for line in stderr.splitlines() if line.startswith("hplsim: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]



def nothing_left_running(marker: str) -> bool:
    deadline = time.monotonic() + 30  # the workers' exit is reaped after their parent's
    while marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return marked_processes(marker) == []


def stored(db: Path) -> list[dict]:
    with ResultStore(db, create=False) as store:
        assert store.integrity() == "ok"
        return store.runs()


def fake_store(tmp_path: Path, db: Path) -> list[str]:
    """A store of 8 runs without simulations (their hashes)."""
    spec = parse_spec({"hpl": {"n": [2000, 3000], "nb": 64, "grids": [[1, 2], [2, 1]], "bcast": [0, 1]}}, "t")
    plan = make_plan(spec, tmp_path / "work", None)
    with ResultStore(db) as store:
        sweep = store.begin_sweep("t", "", "local")
        for t in plan.tasks:
            store.record(t, plan.variants[0], Outcome(t.hash, "ok", 10.0, 1.0, 0.5, 1000, None, now(), now(), "h"),
                         sweep)
    return [t.hash for t in plan.tasks]


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    (tmp_path / "spec.yaml").write_text(SPEC)
    return tmp_path / "spec.yaml"


def planned(spec: Path, tmp_path: Path) -> set[str]:
    return {t.hash for t in make_plan(load_spec(spec), tmp_path / "plan", None).tasks}


# ------------------------------------------------------------------------ a full disk


def test_disk_full_during_a_sweep_keeps_the_stored_runs(tmp_path, spec):
    disk = tmp_path / "disk"
    disk.mkdir()
    db = disk / "r.sqlite"
    out, keep, marker = in_namespace(
        tmp_path, hplsim_cmd("sweep", spec, "--db", db, "--jobs", "1", "--no-progress"),
        [{"dir": disk, "kind": "tmpfs", "size": "2m"}], {"dir": disk, "db": db, "after": 2})
    assert out.returncode == 2
    line = one_error(out.stderr)
    assert "the disk is full" in line and "re-run the same command to continue" in line
    assert nothing_left_running(marker)
    left = sorted(p.name for p in (keep / "disk").iterdir())
    assert set(left) <= {"r.sqlite", "r.sqlite-wal", "r.sqlite-shm"}, left  # no partial file
    kept = stored(keep / "disk" / "r.sqlite")
    assert 2 <= len(kept) < 8 and all(r["status"] == "ok" for r in kept)
    # space again: the same command finishes the sweep from there
    again = run_cli("sweep", spec, "--db", keep / "disk" / "r.sqlite", "--jobs", "1", "--no-progress", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"{len(kept)} already stored; {8 - len(kept)} to run" in again.stderr
    assert {r["hash"] for r in stored(keep / "disk" / "r.sqlite")} == planned(spec, tmp_path)


def test_disk_full_for_a_prediction_output_keeps_the_prediction(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    out, keep, marker = in_namespace(
        tmp_path, hplsim_cmd("predict", "-N", 500, "--nb", 64, "-P", 1, "-Q", 2, "--json", "-o", disk / "p.json"),
        [{"dir": disk, "kind": "tmpfs", "size": "64k"}], {"dir": disk, "after": 0})
    assert out.returncode == 2
    assert "cannot write the results (-o)" in one_error(out.stderr) and "No space left on device" in out.stderr
    assert json.loads(out.stdout)[0]["gflops"] > 0  # printed before the file was tried
    assert list((keep / "disk").iterdir()) == []
    assert nothing_left_running(marker)


def test_disk_full_for_a_report_leaves_no_partial_page(tmp_path):
    fake_store(tmp_path, tmp_path / "r.sqlite")
    disk = tmp_path / "disk"
    disk.mkdir()
    out, keep, _ = in_namespace(tmp_path, hplsim_cmd("report", tmp_path / "r.sqlite", "-o", disk / "report.html"),
                                [{"dir": disk, "kind": "tmpfs", "size": "256k"}])  # the page: megabytes
    assert out.returncode == 2
    assert "cannot write the report (-o)" in one_error(out.stderr) and "No space left on device" in out.stderr
    assert list((keep / "disk").iterdir()) == []
    assert len(stored(tmp_path / "r.sqlite")) == 8  # the input untouched


def test_disk_full_for_a_calibration_archive_saves_it_next_door(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    out, keep, marker = in_namespace(
        tmp_path, hplsim_cmd("calibrate", "dgemm", "--rows", 3, "--warmup", 0, "--max-side", 64, "--max-product",
                             200000, "--anchors", "none", "--cores", 0, "--seed", 1, "-o", disk / "c.zip"),
        [{"dir": disk, "kind": "tmpfs", "size": "4k"}])  # the archive: ~8 kB
    assert out.returncode == 2
    line = one_error(out.stderr)
    assert "cannot write the calibration archive" in line and "No space left on device" in line
    assert line.endswith(f"saved it to {tmp_path / 'c.zip'} instead")
    assert list((keep / "disk").iterdir()) == []
    with zipfile.ZipFile(tmp_path / "c.zip") as z:  # the measurements, whole
        assert "metadata.yaml" in z.namelist() and z.testzip() is None
    assert nothing_left_running(marker)


def test_a_full_temporary_folder_is_passed_over_and_left_clean(tmp_path):
    """TMPDIR on a full file system: Python's choice of a temporary folder tries each
    candidate with a small write and passes over the full one, and hplsim gives SimGrid its
    run's own folder for its per-rank copies of the program (which it used to leave, half
    written, in TMPDIR): the prediction runs, and the full folder stays as it was."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out, keep, marker = in_namespace(
        tmp_path, hplsim_cmd("predict", "-N", 500, "--nb", 64, "-P", 1, "-Q", 2, "--json"),
        [{"dir": tmp, "kind": "tmpfs", "size": "64k"}], {"dir": tmp, "after": 0}, env={"TMPDIR": str(tmp)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["gflops"] > 0
    assert list((keep / "tmp").iterdir()) == []
    assert nothing_left_running(marker)


def test_temporary_space_filling_up_stops_a_sweep_and_stores_no_failure(tmp_path, spec):
    """The simulations' temporary folder fills up in the middle of a sweep (SimGrid copies
    the program there once per rank): that is the machine's fault, not the run's, and stored
    as failed it would pass for a result of the configuration. The sweep stops at the first
    such run with one error line, stores nothing for it, keeps what it stored, and the same
    command with space finishes the sweep."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    db = tmp_path / "r.sqlite"
    out, keep, marker = in_namespace(
        tmp_path, hplsim_cmd("sweep", spec, "--db", db, "--jobs", "1", "--no-progress"),
        [{"dir": tmp, "kind": "tmpfs", "size": "16m"}], {"dir": tmp, "db": db, "after": 2}, env={"TMPDIR": str(tmp)})
    assert out.returncode == 2, out.stderr
    line = one_error(out.stderr)
    assert "the disk is full" in line and "No space left on device" in line and "re-run the same command" in line
    assert "hplsim: failed:" not in out.stderr
    assert nothing_left_running(marker)
    assert list((keep / "tmp").iterdir()) == []
    kept = stored(db)
    assert 2 <= len(kept) < 8 and all(r["status"] == "ok" for r in kept)
    again = run_cli("sweep", spec, "--db", db, "--jobs", "1", "--no-progress", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert {r["hash"] for r in stored(db) if r["status"] == "ok"} == planned(spec, tmp_path)


# ------------------------------------------------------------------ a read-only store


def test_a_store_on_a_read_only_file_system_is_read_not_written(tmp_path, spec):
    ro = tmp_path / "ro"
    ro.mkdir()
    fake_store(tmp_path, ro / "r.sqlite")  # closed: no -wal, no -shm, which a reader must then do without
    before = (ro / "r.sqlite").read_bytes()
    script = tmp_path / "all.sh"
    script.write_text(f"""
{' '.join(hplsim_cmd('sweep', spec, '--db', ro / 'r.sqlite', '--no-progress'))} 2> sweep.err; echo $? > sweep.rc
{' '.join(hplsim_cmd('sweep', 'show', ro / 'r.sqlite', '--json'))} > show.json 2> show.err; echo $? > show.rc
{' '.join(hplsim_cmd('report', ro / 'r.sqlite', '-o', 'report.html'))} 2> report.err; echo $? > report.rc
""")
    out, keep, marker = in_namespace(tmp_path, ["sh", str(script)], [{"dir": ro, "kind": "ro"}])
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "sweep.rc").read_text().strip() == "2"
    assert "Read-only file system" in one_error((tmp_path / "sweep.err").read_text())
    assert (tmp_path / "show.rc").read_text().strip() == "0", (tmp_path / "show.err").read_text()
    assert len(json.loads((tmp_path / "show.json").read_text())) == 8
    assert (tmp_path / "report.rc").read_text().strip() == "0", (tmp_path / "report.err").read_text()
    assert sorted(p.name for p in (keep / "ro").iterdir()) == ["r.sqlite"]
    assert (ro / "r.sqlite").read_bytes() == before
    assert nothing_left_running(marker)


# ----------------------------------------------------------------- a damaged store


@pytest.mark.parametrize("damage", ["truncated", "overwritten", "garbage"])
def test_a_damaged_store_is_refused_and_left_as_it_is(tmp_path, spec, damage):
    db = tmp_path / "r.sqlite"
    fake_store(tmp_path, db)
    data = bytearray(db.read_bytes())
    assert len(data) >= 5 * 4096
    if damage == "truncated":
        data = data[:len(data) // 2 // 4096 * 4096]
    elif damage == "overwritten":  # a page in the middle: the header still says SQLite
        data[3 * 4096:4 * 4096] = bytes(range(256)) * 16
    else:
        data = bytearray(b"not a database at all " * 1000)
    db.write_bytes(bytes(data))
    for args in (("sweep", spec, "--db", db, "--no-progress"), ("sweep", "show", db), ("report", db)):
        out = run_cli(*args, cwd=tmp_path)
        assert out.returncode == 2, (args, out.stderr)
        line = one_error(out.stderr)
        assert "damaged" in line or "not an hplsim results store" in line, line
        assert db.read_bytes() == bytes(data)  # nothing written into it, nothing removed
    assert not (tmp_path / "report.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("r.sqlite")) == ["r.sqlite"]


# ---------------------------------------------------------- two sweeps on one store


def test_two_sweeps_started_at_once_on_one_store_share_the_work(tmp_path, spec):
    marker = f"faults-{os.getpid()}-{time.time_ns()}"
    procs = [subprocess.Popen(hplsim_cmd("sweep", "spec.yaml", "--db", "r.sqlite", "--jobs", "1", "--no-progress"),
                              cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "HPLSIM_TEST_MARKER": marker}) for _ in range(2)]
    errs = [p.communicate(timeout=HANG)[1] for p in procs]
    for p, err in zip(procs, errs):
        assert p.returncode == 0, err
        assert "Traceback" not in err and "locked" not in err and "hplsim: error" not in err, err
    runs = stored(tmp_path / "r.sqlite")
    assert sorted(r["hash"] for r in runs) == sorted(planned(spec, tmp_path))  # each once, none lost
    assert all(r["status"] == "ok" and r["attempts"] == 1 for r in runs)
    with ResultStore(tmp_path / "r.sqlite", create=False) as store:
        sweeps = store.sweeps()
        assert [s["status"] for s in sweeps] == ["done", "done"]
        assert sum(s["ok"] for s in sweeps) == 8  # no run simulated twice
        assert store.conn.execute("SELECT count(*) FROM claims").fetchone()[0] == 0
    assert nothing_left_running(marker)


def test_a_dead_sweeps_claims_are_taken_over(tmp_path):
    """A sweep killed (SIGKILL: no code of its own runs) leaves its claims: the next sweep
    sees their process gone and runs them."""
    from hplsim.sweep import store as store_module

    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC4)
    db = tmp_path / "r.sqlite"
    hashes = sorted(planned(spec, tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    with ResultStore(db) as store:
        sweep = store.begin_sweep("killed", "", "local")
        for h in hashes[:3]:
            store.conn.execute("INSERT INTO claims VALUES (?, ?, ?, ?, ?)",
                               (h, sweep, store_module.socket.gethostname(), dead.pid, time.time()))
    out = run_cli("sweep", spec, "--db", db, "--jobs", "1", "--no-progress", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "4 ok, 0 failed" in out.stderr and "waiting" not in out.stderr
    assert sorted(r["hash"] for r in stored(db)) == hashes


# ------------------------------------------------ a model file changed under a sweep


@pytest.mark.parametrize("what, name, comment", [("model", "m.yaml", "# every kernel as before, other bytes\n"),
                                                 ("platform", "p.xml", "<!-- every link as before, other bytes -->\n")])
def test_a_model_or_platform_file_rewritten_during_a_sweep_changes_no_stored_run(tmp_path, what, name, comment):
    from hplsim.presets import DEFAULT

    model = tmp_path / name
    shutil.copy(getattr(DEFAULT, what), model)
    shutil.copy(model, tmp_path / f"original-{name}")
    (tmp_path / "spec.yaml").write_text(SPEC4 + f"{what}: {name}\n")
    db = tmp_path / "r.sqlite"
    proc = subprocess.Popen(hplsim_cmd("sweep", "spec.yaml", "--db", "r.sqlite", "--jobs", "1", "--no-progress"),
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + HANG
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
                if c.execute("SELECT count(*) FROM runs").fetchone()[0] >= 1:
                    break
        except sqlite3.Error:
            pass
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep ended before the model changed"
    tmp = tmp_path / f"{name}.new"  # as an editor saves: a new file renamed over the old
    tmp.write_text(model.read_text() + comment)
    tmp.replace(model)
    err = proc.communicate(timeout=HANG)[1]
    assert proc.returncode == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("hplsim: warning:")]
    assert len(warnings) == 1 and f"{what} file {model} changed on disk during the sweep" in warnings[0], err
    assert len(stored(db)) == 4
    # the new content is other runs, which the same command now runs; the stored ones are
    # the original content's, under its digest
    dry = run_cli("sweep", "spec.yaml", "--db", "r.sqlite", "--dry-run", cwd=tmp_path)
    assert "0 already stored" in dry.stdout and "4 to run" in dry.stdout
    (tmp_path / "original.yaml").write_text(SPEC4 + f"{what}: original-{name}\n")
    dry = run_cli("sweep", "original.yaml", "--db", "r.sqlite", "--dry-run", cwd=tmp_path)
    assert "4 already stored" in dry.stdout and "0 to run" in dry.stdout
