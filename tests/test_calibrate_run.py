"""Real calibrations on this machine: the examples of docs/calibrate.md (among them the
acceptance commands) run as written, and their archives hold what they promise;
interruptions leave an aborted archive or none; bad input is one line before anything runs."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from docexamples import examples, run_python
from helpers import HPLSIM, assert_one_line_error, processes_mentioning, run_cli, system_dgemm_gflops

# The page's two acceptance calibrations measure this machine (Gflops against its BLAS, a
# ping-pong in microseconds, a probe's delay): the tests that ask for them (`measured`) are
# `exclusive`, so that they run alone. How long they take is recorded in their archives
# (`phases`), not asserted. The page's other examples run
# after them with the machine shared (`docs`): what is checked of them is their archives'
# contents, not their speed.
measures = pytest.mark.exclusive
MEASURED = ("hplsim calibrate dgemm --rows 60 --seed 1 --out d.zip",
            "hplsim calibrate mpi --rows 48 --seed 1 --out m.zip")

from hplsim.models.network import IPROBE_LATE_GAP
from hplsim.calibrate import runner
from hplsim.calibrate.archive import BLAS_COLUMNS, MPI_COLUMNS, read_archive
from hplsim.calibrate.designs import blas_design, sequence
from hplsim.calibrate.summary import blas_flops
from hplsim.errors import HplsimError

DOC = REPO / "docs" / "calibrate.md"

METADATA_KEYS = {"archive_format", "kind", "status", "hplsim", "command_line", "start_time", "end_time",
                 "monotonic_offset", "seed", "design", "run", "hosts", "cpu", "versions", "monitoring",
                 "phases", "counts", "files"}
VERSION_KEYS = {"kernel", "os", "python", "compiler", "mpi", "openblas", "simgrid"}


class DocRun:
    def __init__(self, workdir: Path):
        self.dir = workdir
        self.stdout: dict[str, str] = {}
        self.alone = False  # measured while no other test ran


def _run_doc_command(run: DocRun, command: str) -> None:
    out = run_cli(*shlex.split(command)[1:], cwd=run.dir)
    assert out.returncode == 0, f"`{command}` failed: {out.stderr.strip()}"
    run.stdout[command] = out.stdout


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> DocRun:
    """The first `hplsim` lines of docs/calibrate.md, the acceptance calibrations, run alone
    on the machine when an exclusive test asks for them first (the conftest runs exclusive
    tests first; `alone` records it for the tests that read their speed)."""
    run = DocRun(tmp_path_factory.mktemp("calibrate-docs"))
    run.alone = request._pyfuncitem.get_closest_marker("exclusive") is not None
    files, commands = examples(DOC)
    assert tuple(commands[:len(MEASURED)]) == MEASURED
    for name, body in files.items():
        (run.dir / name).write_text(body)
    for command in MEASURED:
        _run_doc_command(run, command)
    return run


@pytest.fixture(scope="module")
def docs(measured: DocRun) -> DocRun:
    """Every other `hplsim` line of docs/calibrate.md, in order, in the same directory."""
    commands = examples(DOC)[1]
    assert len(commands) >= 10
    for command in commands[len(MEASURED):]:
        _run_doc_command(measured, command)
    return measured


def check_blas_archive(path: Path, rows: int, repetitions: int, processes: int) -> pd.DataFrame:
    a = read_archive(path)
    meta = a.metadata
    assert METADATA_KEYS <= set(meta), METADATA_KEYS - set(meta)
    assert VERSION_KEYS <= set(meta["versions"])
    assert meta["status"] == "complete" and "abort_reason" not in meta
    assert meta["counts"] == {"planned": rows * repetitions * processes, "measured": rows * repetitions * processes}
    assert meta["versions"]["openblas"].startswith("OpenBLAS")
    assert meta["hplsim"]["version"] and meta["hplsim"]["git_commit"]
    assert meta["run"]["processes"] == processes
    kind = meta["kind"]
    calls = a.table(kind)
    assert list(calls.columns) == list(BLAS_COLUMNS)
    assert (calls.duration > 0).all() and (calls.duration < 60).all()
    assert (calls.function == kind).all()
    design = a.table("design")
    assert design.row.nunique() == rows and len(design) == rows * repetitions
    # every design row measured exactly once per repetition on every process
    key = ["m", "n", "k", "side"] if kind == "dgemm" else ["m", "n", "side"]
    planned = {rep: Counter(map(tuple, g[key].astype(str).values.tolist()))
               for rep, g in design.assign(k=design.k.astype("Int64")).groupby("repetition")}
    assert calls.groupby(["rank", "repetition"]).ngroups == processes * repetitions
    for (rank, rep), g in calls.assign(k=calls.k.astype("Int64")).groupby(["rank", "repetition"]):
        assert Counter(map(tuple, g[key].astype(str).values.tolist())) == planned[rep], (rank, rep)
    # and in the planned (shuffled) order
    first = calls[calls["rank"] == 0].sort_values("start")
    assert first.m.tolist() == design.m.tolist()
    assert set(a.names) >= {"metadata.yaml", "commands.json", "design.csv", "environment.json"}
    assert any(n.startswith("hosts/") and n.endswith("/cpuinfo") for n in a.names)
    assert all({"argv", "start", "end", "exit_code", "stdout", "stderr"} <= set(e) for e in a.log)
    assert all(e["exit_code"] == 0 for e in a.log)
    return calls


# ---------------------------------------------------------------- the acceptance commands

@measures
def test_dgemm_acceptance_archive(measured: DocRun) -> None:
    docs = measured
    assert docs.alone, "measured while other tests ran (tests/conftest.py runs exclusive tests first)"
    cores = len(os.sched_getaffinity(0))
    calls = check_blas_archive(docs.dir / "d.zip", 60, 1, cores)
    a = read_archive(docs.dir / "d.zip")
    assert a.metadata["run"]["cores"] == sorted(os.sched_getaffinity(0))  # all cores at once
    assert len(a.metadata["load_average"]["start"]) == 3
    assert set(calls.core) == set(os.sched_getaffinity(0))  # each process stayed on its core
    assert a.metadata["design"]["generator"] == "uniform-product" and a.metadata["seed"] == 1
    # the cores really ran at the same time (as HPL's ranks do)
    spans = calls.groupby("rank").start.agg(["min", "max"])
    assert spans["min"].max() < spans["max"].min()
    # plausible speed: within 0.1x - 2x of the same OpenBLAS's single-threaded dgemm
    big = calls[blas_flops(calls) >= 1e8]
    gflops = float((blas_flops(big) / big.duration / 1e9).median())
    ref = system_dgemm_gflops()
    assert 0.1 * ref <= gflops <= 2 * ref, (gflops, ref)
    # monitoring: samples, or an explanation of what is missing
    mon = a.metadata["monitoring"]
    if mon["frequency"] or mon["temperature"]:
        samples = a.table("monitoring")
        assert len(samples) >= 2 and set(samples.core.dropna().astype(int)) >= set(calls.core)
    else:
        assert mon["note"]
    if not mon["temperature"]:
        assert "temperature not exposed" in mon["note"]
    phases = [p["name"] for p in a.metadata["phases"]]
    assert phases[:3] == ["build", "system-info", "measure"] and "timed-calls" in phases


@measures
def test_mpi_acceptance_archive(measured: DocRun) -> None:
    docs = measured
    assert docs.alone, "measured while other tests ran (tests/conftest.py runs exclusive tests first)"
    a = read_archive(docs.dir / "m.zip")
    meta = a.metadata
    assert METADATA_KEYS <= set(meta) and meta["kind"] == "mpi" and meta["status"] == "complete"
    assert meta["versions"]["mpi_library"].startswith("Open MPI")
    res = a.table("mpi")
    assert list(res.columns) == list(MPI_COLUMNS)
    design = a.table("design")
    reps = meta["design"]["repetitions"]
    assert design.row.nunique() == 48 and len(res) == 48 * reps == meta["counts"]["measured"]
    for rep, g in res.groupby("repetition"):
        want = design[design.repetition == rep]
        assert g[["operation", "size"]].values.tolist() == want[["operation", "size"]].values.tolist()
    assert (res.duration > 0).all()
    assert set(res.operation) == {"send", "recv", "isend", "pingpong", "iprobe", "test", "wtime", "iprobe-late"}
    # Open MPI (ob1) reports a message that arrived during computation one probe late
    # (docs/validation.md, E17): one probe gap of computation, not zero, not two. The
    # program times its gaps with the clock it times the probes with, so the duration
    # counts gaps; a neighbour's load only adds time, and the fewest gaps seen is the count.
    late = res[res.operation == "iprobe-late"].duration / IPROBE_LATE_GAP
    assert 0.5 < late.min() < 1.5, late.describe()
    pp = res[res.operation == "pingpong"].groupby("size").duration.median()
    assert pp.index.max() > 10**7 and pp.iloc[-1] > 10 * pp.iloc[0]  # big messages take longer
    # a 10 MB+ message moves at a plausible shared-memory speed (0.1 to 100 GB/s)
    bw = (pp.index[-1] / (pp.iloc[-1] / 2))
    assert 1e8 < bw < 1e11
    # a small message's round trip is about a send and a receive each way: timed right
    # after the barrier between rows it read 25 µs on every row, the ranks' skew (E24),
    # a hundred times this run's own small sends and receives (timed with the partner
    # already waiting: no skew in them). Load only adds time, so the fastest of each is
    # compared; a shared 2-core CI host stretched two small round trips of three to 8-10 µs.
    small = res[res["size"] < 1000]
    one_way = (small[small.operation == "send"].duration.min() + small[small.operation == "recv"].duration.min())
    round_trip = small[small.operation == "pingpong"].duration.min()
    assert round_trip < 20 * one_way, (round_trip, one_way, pp.head())


def test_archive_show(docs: DocRun) -> None:
    text = docs.stdout["hplsim archive show d.zip"]
    assert "dgemm calibration, complete" in text and "Gflops" in text and "seed 1" in text
    assert "monitoring" in text and "commands" in text and "load average" in text
    import json

    summary = json.loads(docs.stdout["hplsim archive show m.zip --json"])
    assert summary["status"] == "complete" and summary["mpi"]["latency_s"] > 0
    assert summary["mpi"]["bandwidth_Bps"] > 0


def test_same_seed_same_design(docs: DocRun) -> None:
    plan = sequence(blas_design("dgemm", rows=60, seed=1), 1, 1)
    design = read_archive(docs.dir / "d.zip").table("design")
    assert design[["order", "repetition", "row", "m", "n", "k"]].values.tolist() == \
        plan[["order", "repetition", "row", "m", "n", "k"]].astype(int).values.tolist()
    assert design.row.tolist() != sorted(design.row)  # shuffled


def test_python_examples_read_the_doc_archive(docs: DocRun) -> None:
    """The reader's examples (this page's and docs/formats/archive.md's) on d.zip."""
    (here,) = run_python(DOC, docs.dir)
    (fmt,) = run_python(REPO / "docs" / "formats" / "archive.md", docs.dir)
    assert len(here["calls"]) == len(fmt["calls"]) > 0
    assert (fmt["calls"]["gflops"] > 0).all() and fmt["a"].metadata["kind"] == "dgemm"
    assert fmt["cpuinfo"] and fmt["a"].text(fmt["cpuinfo"][0]).strip()


def test_other_doc_examples(docs: DocRun) -> None:
    check_blas_archive(docs.dir / "t.zip", 12, 1, len(os.sched_getaffinity(0)))
    t = read_archive(docs.dir / "t.zip").table("dtrsm")
    assert set(t.side) == {"L", "R"} and t.k.isna().all()

    calls = check_blas_archive(docs.dir / "k.zip", 20, 2, 1)
    assert (calls.k == 128).all() and (calls.core == 0).all()

    e = read_archive(docs.dir / "e.zip")
    calls = check_blas_archive(docs.dir / "e.zip", 3, 1, len(os.sched_getaffinity(0)))
    assert e.metadata["run"]["init"] == "masked" and e.metadata["run"]["mask_bits"] == 20
    assert e.metadata["design"]["generator"] == "file"
    assert sorted(calls[calls["rank"] == 0].lda) == [128, 1024, 4096]
    assert docs.stdout["hplsim archive show e.zip --member design.csv"].startswith("order,repetition,row")

    h = read_archive(docs.dir / "h.zip")
    check_blas_archive(docs.dir / "h.zip", 8, 1, 2)
    assert h.metadata["run"]["launcher"] == "mpirun" and h.metadata["run"]["hosts"] == ["localhost"]
    assert any(e["argv"][0] == "mpirun" for e in h.log)

    hm = read_archive(docs.dir / "hm.zip")
    assert hm.metadata["status"] == "complete" and len(hm.table("mpi")) == 28
    assert "--host" in hm.metadata["run"]["argv"] and "localhost:2" in hm.metadata["run"]["argv"]

    p = read_archive(docs.dir / "p.zip")
    assert set(p.table("mpi").operation) == {"pingpong", "send"} and len(p.table("mpi")) == 60



def test_fitting_stage_reads_our_archives_and_dahu(docs: DocRun, dahu_dir: Path) -> None:
    from hplsim.models.readers import read_measurements

    ours = read_measurements([docs.dir / "d.zip", docs.dir / "m.zip"])
    assert len(ours.kernels) == read_archive(docs.dir / "d.zip").metadata["counts"]["measured"]
    assert len(ours.network) == read_archive(docs.dir / "m.zip").metadata["counts"]["measured"]
    # the network fit of our archive carries what this machine's MPI probe reports
    from hplsim.models.network import fit_network

    assert fit_network(ours.network).iprobe_reports == "progressed"
    # the published data has the same shape: kernel calls and MPI measurements
    dahu = read_measurements([dahu_dir / "mpi_calibration.csv"])
    assert set(dahu.network.operation) >= {"send", "recv", "isend", "pingpong"}
    head = pd.read_csv(dahu_dir / "dgemm_raw.csv", nrows=5)
    assert {"m", "n", "k", "cpu", "duration"} <= set(head.columns) <= set(BLAS_COLUMNS) | {"jobid", "expfile", "node"}


def test_network_fit_of_our_archive_writes_the_probe_semantics(docs: DocRun, tmp_path: Path) -> None:
    out = tmp_path / "net.yaml"
    r = run_cli("fit", docs.dir / "m.zip", "--network", "--bandwidth", "10GBps", "--latency", "1us", "-o", out)
    assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(out.read_text())
    assert doc["mpi"] == {"iprobe_reports": "progressed"} and "smpi/bw-factor" in doc["smpi"]
    assert "probes late (median): iprobe_reports progressed" in r.stdout + r.stderr


# ---------------------------------------------------------------- interruption

def _interrupt_when_measuring(argv: list[str], tmp: Path, sig: int, total: int) -> subprocess.CompletedProcess:
    """Start hplsim, wait until its progress bar shows measured rows, send `sig`."""
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.Popen([*HPLSIM, *argv, "--progress"], cwd=tmp, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = threading.Event()
    err: list[str] = []

    def watch() -> None:
        buf = ""
        while True:
            ch = proc.stderr.read(1)
            if not ch:
                err.append(buf)
                return
            buf += ch
            m = re.findall(rf"\b(\d+)/{total}\b", buf[-200:])
            if m and int(m[-1]) > 0:
                seen.set()
            if ch in "\r\n":
                err.append(buf)
                buf = ""

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        assert seen.wait(120), "no measurement seen"
        proc.send_signal(sig)
        proc.wait(timeout=120)
    finally:  # a hung run must not outlive the test (nor its tools, in their own sessions)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    t.join(timeout=10)  # the watcher alone reads stderr, to its end
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.read(), "".join(err))


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_dgemm_leaves_an_aborted_archive(tmp_path: Path, sig: int, code: int) -> None:
    cores = len(os.sched_getaffinity(0))
    res = _interrupt_when_measuring(["calibrate", "dgemm", "--rows", "300", "--seed", "9", "--warmup", "0",
                                     "--monitor-interval", "0.2", "--out", "i.zip"], tmp_path, sig, 300 * cores)
    assert res.returncode == code, res.stderr
    assert "partial archive i.zip (status aborted" in res.stderr
    a = read_archive(tmp_path / "i.zip")
    assert a.metadata["status"] == "aborted"
    assert a.metadata["abort_reason"] == f"interrupted by {signal.Signals(sig).name}"
    calls = a.table("dgemm")
    assert 0 < len(calls) < 300 * cores == a.metadata["counts"]["planned"]
    assert len(calls) == a.metadata["counts"]["measured"] and (calls.duration > 0).all()
    # what was measured is in the design, in order
    design = a.table("design")
    first = calls[calls["rank"] == 0].sort_values("start")
    assert first.m.tolist() == design.m.tolist()[: len(first)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.zip"]  # no temporary file left
    assert processes_mentioning(tmp_path) == []  # every measuring process stopped


def test_interrupted_mpi_leaves_an_aborted_archive(tmp_path: Path) -> None:
    # Long enough (10,000 rows up to 100 MB: tens of seconds) that the signal always lands
    # mid-run: 2,000 rows up to 10 MB once finished before it on a quiet machine.
    res = _interrupt_when_measuring(["calibrate", "mpi", "--rows", "2000", "--repetitions", "5", "--seed", "9",
                                     "--max-size", "1e8", "--out", "m.zip"], tmp_path, signal.SIGTERM, 10000)
    assert res.returncode == 143, res.stderr
    a = read_archive(tmp_path / "m.zip")
    assert a.metadata["status"] == "aborted" and 0 < len(a.table("mpi")) < 10000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.zip"]
    time.sleep(0.5)
    assert processes_mentioning(tmp_path) == []


def test_interrupt_before_measuring_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*a, **k):
        raise runner.Interrupted(signal.SIGINT)

    monkeypatch.setattr(runner, "build_calibration_tools", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.calibrate_blas(blas_design(rows=3, seed=0, anchors=[]), tmp_path / "x.zip", 0)
    assert list(tmp_path.iterdir()) == []


def test_failing_program_gives_aborted_archive_and_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fake-blas"
    fake.write_text("#!/bin/sh\necho 'function,m,n,k,side,lda,ldb,ldc,start,duration,host,cpu,core,rank,repetition'\n"
                    "echo 'dgemm,1,1,1,,1,1,1,1.0,1e-6,h,0,0,0,0'\necho 'out of luck' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(runner, "build_calibration_tools", lambda: {runner.BLAS_TOOL: fake})
    out = tmp_path / "f.zip"
    with pytest.raises(HplsimError, match=r"rank 0 \(core 0\) exited with code 3: out of luck"):
        runner.calibrate_blas(blas_design(rows=3, seed=0, anchors=[]), out, 0,
                              runner.BlasOptions(monitor_interval=0), launcher="local", cores=[0])
    a = read_archive(out)
    assert a.metadata["status"] == "aborted" and "out of luck" in a.metadata["abort_reason"]
    assert len(a.table("dgemm")) == 1
    assert any(e["exit_code"] == 3 and "out of luck" in e["stderr"] for e in a.log)


# ---------------------------------------------------------------- the other cores' load

SPIN_REPORT = re.compile(r"spin core (\d+): (\d+) polls in ([0-9.]+) s$")
two_cores = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--others spin needs a core besides core 0")


def spinners() -> list[int]:
    return [pid for pid in processes_mentioning("--spin") if pid != os.getpid()
            and "hplsim-calib-blas" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")]


@two_cores
def test_others_spin_polls_on_every_other_core_through_the_measurement(docs: DocRun) -> None:
    """docs/calibrate.md's `--cores 0 --others spin` example (s.zip)."""
    a = read_archive(docs.dir / "s.zip")
    check_blas_archive(docs.dir / "s.zip", rows=8, repetitions=1, processes=1)  # every command exited 0
    run = a.metadata["run"]
    others = sorted(set(os.sched_getaffinity(0)) - {0})
    assert run["others"] == "spin" and run["other_cores"] == others
    assert len(run["others_reports"]) == len(others)
    reports = [SPIN_REPORT.search(line) for line in run["others_reports"]]
    assert all(reports) and sorted(int(m[1]) for m in reports) == others
    # each spinner polled, and for at least as long as dgemm was timed
    timed = next(p for p in a.metadata["phases"] if p["name"] == "timed-calls")
    for m in reports:
        assert int(m[2]) > 1000 and float(m[3]) >= timed["end"] - timed["start"]
    assert f"cores {','.join(map(str, others))} spinning" in run_cli("archive", "show", docs.dir / "s.zip").stdout
    assert spinners() == []


@two_cores
def test_an_interrupted_calibration_stops_its_spinners(tmp_path: Path) -> None:
    res = _interrupt_when_measuring(["calibrate", "dgemm", "--rows", "300", "--seed", "9", "--warmup", "0", "--cores",
                                     "0", "--others", "spin", "--monitor-interval", "0", "--out", "i.zip"],
                                    tmp_path, signal.SIGTERM, 300)
    assert res.returncode == 143, res.stderr
    a = read_archive(tmp_path / "i.zip")
    assert a.metadata["status"] == "aborted" and len(a.metadata["run"]["others_reports"]) >= 1
    assert spinners() == []


def test_a_spinner_ends_with_its_parent(tmp_path: Path) -> None:
    """A runner killed outright (SIGKILL: no handler runs) must not leave a core spinning."""
    from hplsim.calibrate.tools import BLAS_TOOL, build_calibration_tools

    tool = build_calibration_tools()[BLAS_TOOL]
    parent = subprocess.run([sys.executable, "-c", "import subprocess, sys; "
                             f"p = subprocess.Popen([{str(tool)!r}, '--spin', '--core', '0']); "
                             "import time; time.sleep(0.5); print(p.pid, p.poll(), flush=True)"],
                            capture_output=True, text=True, timeout=60)
    pid_text, status = parent.stdout.split()
    pid = int(pid_text)
    assert status == "None", "the spinner was not running"  # it polls until told to stop
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid), "the spinner outlived its parent"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


# ---------------------------------------------------------------- bad input

BAD_INPUT = [
    (["calibrate", "dgemm", "--experiment", "missing.csv"], "experiment file missing.csv: no such file"),
    (["calibrate", "dgemm", "--experiment", "."], "is a directory"),
    (["calibrate", "dgemm", "--experiment", "zero.csv"], "zero.csv:3: n = 0 must be an integer >= 1"),
    (["calibrate", "dgemm", "--experiment", "garbage.csv"], "garbage.csv:2: m = 'abc' is not a number"),
    (["calibrate", "dgemm", "--rows", "0"], "--rows must be >= 1"),
    (["calibrate", "dgemm", "--max-side", "0"], "size limits must be >= 1"),
    (["calibrate", "dgemm", "--anchors", "0,1,1"], "sizes must be >= 1"),
    (["calibrate", "dgemm", "--anchors", "300000,300000,300000"], "more than the"),
    (["calibrate", "dtrsm", "--anchors", "10,10,X"], "expected M,N,L|R"),
    (["calibrate", "dgemm", "--init", "masked", "--mask-bits", "60"], "--mask-bits must be in 0..52"),
    (["calibrate", "dgemm", "--cores", "999"], "core 999 is not available"),
    (["calibrate", "dgemm", "--cores", "a-b"], "expected a list like"),
    (["calibrate", "dgemm", "--hostfile", "ghosts.txt"], "host 'no-such-host.invalid' is unknown"),
    (["calibrate", "dgemm", "--hostfile", "nofile.txt"], "hostfile nofile.txt: cannot read it"),
    (["calibrate", "dgemm", "--others", "spin"], "every core here measures; leave some out of --cores"),
    (["calibrate", "dgemm", "--others", "spin", "--launcher", "mpirun"], "--others spin needs the local launcher"),
    (["calibrate", "mpi", "--operations", "send,allreduce"], "unknown MPI operation 'allreduce'"),
    (["calibrate", "mpi", "--experiment", "ops.csv"], "ops.csv:3: unknown MPI operation 'bcast'"),
    (["calibrate", "mpi", "--max-size", "3e9"], "above 2^31-1 bytes"),
    (["calibrate", "mpi", "--min-size", "0"], "1 <= min <= max"),
    (["calibrate", "mpi", "--cores", "0"], "exactly two cores"),
    (["calibrate", "mpi", "--hostfile", "ghosts.txt"], "does not resolve"),
    (["archive", "show", "nothing.zip"], "nothing.zip: no such file"),
    (["archive", "show", "zero.csv"], "not a readable zip archive"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUT, ids=[" ".join(a[:3]) + f"-{i}" for i, (a, _) in enumerate(BAD_INPUT)])
def test_bad_input_is_one_line_before_anything_runs(tmp_path: Path, argv: list[str], message: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "zero.csv").write_text("m,n,k\n1,2,3\n4,0,5\n")
    (tmp_path / "garbage.csv").write_text("m,n,k\nabc,1,1\n")
    (tmp_path / "ghosts.txt").write_text("localhost slots=1\nno-such-host.invalid slots=4\n")
    (tmp_path / "ops.csv").write_text("operation,size\nsend,8\nbcast,8\n")
    before = set(tmp_path.iterdir())
    started: list[str] = []  # the calibration's run (build, system info, measurements) must not begin
    monkeypatch.setattr(runner, "_execute", lambda *a, **k: started.append("run") or pytest.fail("the run began"))
    res = run_cli(*argv, *(["--out", "x.zip"] if argv[0] == "calibrate" else []), cwd=tmp_path)
    assert_one_line_error(res, re.escape(message))
    assert set(tmp_path.iterdir()) == before and not started  # nothing written, nothing run


def test_metadata_yaml_is_plain(docs: DocRun) -> None:
    import zipfile

    with zipfile.ZipFile(docs.dir / "d.zip") as zf:
        meta = yaml.safe_load(zf.read("metadata.yaml"))
        env = zf.read("environment.json").decode()
    assert meta["command_line"][:3] == ["hplsim", "calibrate", "dgemm"]
    assert isinstance(meta["monotonic_offset"], float)
    assert "PATH" in env
    assert np.isfinite(meta["phases"][0]["start"])


def test_data_warnings_reach_the_metadata(tmp_path: Path) -> None:
    res = run_cli("calibrate", "dgemm", "--rows", "2", "--anchors", "none", "--max-product", "1e4", "--cores", "0",
                  "--warmup", "0", "--init", "constant", "--constant", "1e-310", "--seed", "1", "--out", "w.zip",
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    a = read_archive(tmp_path / "w.zip")
    assert a.metadata["status"] == "complete" and a.metadata["run"]["constant"] == 1e-310
    assert any("subnormal" in w for w in a.metadata["warnings"])


@pytest.mark.parametrize("core, flags, warned", [
    ("Prescott", {"sse2", "avx", "avx2", "avx512f"}, True),  # Debian's 0.3.21 on an AVX-512 Xeon
    ("SkylakeX", {"sse2", "avx", "avx2", "avx512f"}, False),
    ("Haswell", {"sse2", "avx", "avx2"}, False),
])
def test_a_blas_that_runs_older_kernels_than_the_cpu_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   core: str, flags: set[str], warned: bool) -> None:
    """An OpenBLAS older than the CPU model falls back to old kernels (Debian's 0.3.21 runs
    Prescott's on an AVX-512 Xeon: 15 Gflops per core where 75 are there). The calibration
    measures that BLAS, which HPL links too; the warning says why it is slow and what to set."""
    from hplsim.calibrate import metadata
    from hplsim.calibrate.tools import BLAS_TOOL
    from hplsim.errors import reset_warnings, warnings_issued

    fake = tmp_path / "blas"
    fake.write_text(f"#!/bin/sh\necho 'OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY (core: {core})'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(metadata, "cpu_flags", lambda: flags)
    reset_warnings()
    try:
        found = metadata.versions(metadata.CommandLog(), {BLAS_TOOL: fake}, with_mpi=False)
        issued = [w for w in warnings_issued() if "kernels on a CPU with" in w]
    finally:
        reset_warnings()
    assert found["openblas"].endswith(f"(core: {core})")
    assert issued == ([f"OpenBLAS runs its {core} kernels on a CPU with AVX-512: dgemm, and so HPL, runs here "
                       "well below the CPU; OPENBLAS_CORETYPE=SkylakeX selects the AVX-512 kernels of an "
                       "OpenBLAS built for several CPUs (DYNAMIC_ARCH)"] if warned else [])
