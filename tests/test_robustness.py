"""The shared mechanisms of issue 20 (docs/errors.md): the writer rule, warnings on stderr
and in --json, children and temporary folders that go with hplsim, lists of configurations
that keep what finished, and the small inconsistencies (memory of short runs, node names,
thin fits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from hplsim import processes
from hplsim.errors import HplsimError, reset_warnings, warn, warnings_issued, with_warnings
from hplsim.outputs import atomic, check_dir, check_file, write_or_fallback, write_text
from helpers import invoke, run_cli


def _model(tmp_path: Path, kernels: dict) -> Path:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump({"format": "hplsim-model", "version": 1, "default": {"kernels": kernels}}))
    return path


# ------------------------------------------------------------------ the writer rule

def test_destinations_are_created_alike_and_checked(tmp_path):
    assert check_file(tmp_path / "a" / "b" / "x.json", "x") == tmp_path / "a" / "b" / "x.json"
    assert (tmp_path / "a" / "b").is_dir()
    assert check_dir(tmp_path / "c" / "d", "d").is_dir()
    (tmp_path / "f").write_text("")
    with pytest.raises(HplsimError, match="f is a file, not a folder"):
        check_file(tmp_path / "f" / "x.json", "x")
    with pytest.raises(HplsimError, match="it is a folder"):
        check_file(tmp_path / "c", "x")
    with pytest.raises(HplsimError, match="cannot write x into"):
        check_dir("/proc/hplsim-nowhere", "x")  # read-only even for root
    assert not [p for p in tmp_path.rglob("*") if ".hplsim-probe-" in p.name]


def test_an_atomic_write_leaves_the_old_file_or_the_new_never_half(tmp_path):
    path = tmp_path / "out.txt"
    write_text(path, "old\n", "x")
    with pytest.raises(RuntimeError):
        with atomic(path, "x") as tmp:
            tmp.write_text("half")
            raise RuntimeError("failed midway")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_finished_work_that_cannot_go_where_asked_goes_next_door(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    reset_warnings()
    target = tmp_path / "gone" / "calibration.zip"
    written = []

    def writer(path: Path) -> None:
        if path == target:  # the folder vanished after the check
            raise FileNotFoundError(2, "No such file or directory")
        path.write_bytes(b"data")
        written.append(path)

    where = write_or_fallback(target, writer, "the calibration archive")
    assert where == tmp_path / "calibration.zip" and where.read_bytes() == b"data"
    err = capsys.readouterr().err
    assert err.startswith("hplsim: warning: could not write the calibration archive to")
    assert f"saved it to {where} instead" in err
    assert warnings_issued() and "saved it to" in warnings_issued()[0]


def test_warnings_are_printed_once_and_carried_by_json(capsys):
    reset_warnings()
    warn("first   thing")
    warn("first thing")
    warn("second")
    assert capsys.readouterr().err == "hplsim: warning: first thing\nhplsim: warning: second\n"
    assert with_warnings({"a": 1}) == {"a": 1, "warnings": ["first thing", "second"]}
    assert with_warnings([{"a": 1}, {"b": 2}])[1]["warnings"] == ["first thing", "second"]


# ----------------------------------------------------- children and temporary folders

def test_stale_folders_of_dead_processes_are_removed_live_ones_kept(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"hplsim-run-{dead.pid}-abc"
    stale.mkdir()
    (stale / "HPL.dat").write_text("x")
    live = tmp_path / f"hplsim-run-{os.getpid()}-abc"
    live.mkdir()
    other = tmp_path / "hplsim-run-notapid"
    other.mkdir()
    assert processes.clean_stale_dirs(tmp_path) == [stale]
    assert not stale.exists() and live.exists() and other.exists()


def test_a_folder_whose_owner_is_a_zombie_is_stale(tmp_path):
    """A killed sweep's workers are zombies until reaped (test_kill's sweep-KILL failed once
    on a loaded machine: the next start kept their folders)."""
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        for _ in range(100):  # it exits, and nobody reaps it yet
            if processes._zombie(child):
                break
            time.sleep(0.01)
        assert processes._zombie(child) and processes._alive(child)
        left = tmp_path / f"hplsim-run-{child}-abcd"
        left.mkdir()
        assert processes.clean_stale_dirs(tmp_path) == [left]
    finally:
        os.waitpid(child, 0)


def test_a_run_dir_goes_however_the_block_ends(tmp_path):
    with pytest.raises(KeyError):
        with processes.run_dir("run", tmp_path) as folder:
            assert folder.name.startswith(f"hplsim-run-{os.getpid()}-")
            (folder / "x").write_text("x")
            raise KeyError
    assert not list(tmp_path.iterdir())


def test_a_child_gets_sigterm_when_its_parent_dies(tmp_path):
    """A Python parent starts `sleep` through processes.popen, then is SIGKILLed. The sleep
    would outlast the minute given to it to go (which only guards against a hang)."""
    script = ("import sys, time; from hplsim.processes import popen; "
              "p = popen(['sleep', '600']); print(p.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        pytest.fail("the child outlived its parent")


# ------------------------------------------------------------------------- predict

SMALL = ["-N", "1000", "--nb", "64", "-P", "1", "-Q", "2"]


def test_predict_warns_about_a_missing_dtrsm_on_stderr_and_in_json(tmp_path):
    model = _model(tmp_path, {"dgemm": {"mean": {"mnk": 2.0 / 30e9}}})
    code, out, err = invoke(["predict", *SMALL, "--model", str(model), "--json", "-o", "out.json"], tmp_path)
    assert code == 0, err
    assert err.count("hplsim: warning: the model has no dtrsm law") == 1
    doc = json.loads(out)
    assert any("no dtrsm law" in w for w in doc[0]["warnings"])
    assert json.loads((tmp_path / "out.json").read_text())[0]["warnings"] == doc[0]["warnings"]


def test_a_kernel_whose_law_is_negative_where_hpl_calls_it_is_named(tmp_path):
    model = _model(tmp_path, {"dgemm": {"mean": {"mnk": 2.0 / 30e9}},
                              "dtrsm": {"mean": {"mnk": 1e-11, "mn": -1.0}}})
    code, out, err = invoke(["predict", *SMALL, "--model", str(model), "--json"], tmp_path)
    assert code == 0, err
    assert "hplsim: warning: dtrsm: every call cost 0 s" in err
    assert any(w.startswith("dtrsm: every call cost 0 s") for w in json.loads(out)[0]["warnings"])


def test_an_absurd_time_is_printed_short_and_warned_about(tmp_path):
    model = _model(tmp_path, {"dgemm": {"mean": {"intercept": 1e6, "mnk": 1e-11}}, "dtrsm": {"mean": {"mnk": 1e-11}}})
    code, out, err = invoke(["predict", *SMALL, "--model", str(model)], tmp_path)
    assert code == 0, err
    assert "is beyond any real HPL run" in err
    row = out.splitlines()[2].split()
    assert "e+" in row[5] and len(row[5]) < 12  # 1.23e+10, not eleven digits and four decimals


def test_a_list_keeps_what_finished_and_fails_for_the_rest(tmp_path):
    """-N 1000,400000 --timeout 8 on 8x8: the small one is printed and stored, then the error."""
    # the cost law (hpl/cost.py) prices them at about 1 s and 123 s: the limit is far from
    # both (2x4 at N = 400,000, once minutes, finished within 8 s on a quiet machine since
    # the modelled pivot exchange, E67)
    r = run_cli("predict", "-N", "1000,400000", "--nb", "128", "-P", "8", "-Q", "8", "--timeout", "8", "-o", "out.json",
                cwd=tmp_path)
    assert r.returncode == 2
    errors = [line for line in r.stderr.splitlines() if line.startswith("hplsim: error:")]
    assert errors == ["hplsim: error: 1 of 2 configurations failed (1 printed and stored); first: "
                      "WR11C2R4 N=400000 NB=128 8x8: simulation did not finish within 8 s (hung or too large); killed"]
    assert "configuration 2/2 failed" in r.stderr and "Traceback" not in r.stderr
    assert [d["n"] for d in json.loads((tmp_path / "out.json").read_text())] == [1000]
    assert " 1000 " in r.stdout and "400000" not in r.stdout


def test_a_short_run_reports_its_memory(tmp_path):
    """Too short for the PSS sampler (a few of its periods): the kernel's peak RSS of the
    simulation, not 0 (the issue saw 0.0-0.2 MB where about 20 MB are used)."""
    code, out, err = invoke(["predict", "-N", "200", "--nb", "32", "-P", "1", "-Q", "2", "--json"], tmp_path)
    assert code == 0, err
    assert json.loads(out)[0]["sim_memory_bytes"] > 5e6


# ----------------------------------------------------------------------- fit, check

def test_fit_warns_on_a_thin_sample(tmp_path):
    rows = "".join(f"dgemm,{64 * i},{48 * i},64,{1e-11 * 64 * 48 * 64 * i * i + 1e-6 * (1 + (i % 3) / 10)},h,0\n"
                   for i in range(1, 13))
    (tmp_path / "d.csv").write_text("function,m,n,k,duration,host,cpu\n" + rows)
    code, out, err = invoke(["fit", "d.csv", "-o", "m.yaml", "--option", "M1,N0", "--json"], tmp_path)
    assert code == 0, err
    assert "hplsim: warning: dgemm: 12 calls for a" in err and "fewer than 10 calls per parameter" in err
    assert any("12 calls" in w for w in json.loads(out)["warnings"])


def test_fit_warns_when_the_network_was_measured_on_a_few_small_sizes(tmp_path):
    rows = "".join(f"send,{s},{1e-6 + s * 1e-10}\n" for s in (8, 16) * 10)
    (tmp_path / "m.csv").write_text("operation,size,duration\n" + rows)
    code, out, err = invoke(["fit", "m.csv", "--network", "-o", "n.yaml", "--json"], tmp_path)
    assert code == 0, err
    assert "hplsim: warning: the MPI measurements cover 2 message size(s) from 8 to 16 B" in err
    assert json.loads(out)["warnings"]


def test_check_counts_a_duplicated_run_once(tmp_path):
    head = "host,cpu,run_id,start_time,intercept,mnk,avg_gflops\n"
    rows = "".join(f"h,0,{i},{1574848720 + 86400 * i},{2e-6 + i * 1e-9},{7.9e-11 + i * 1e-14},{25 + 0.01 * i}\n"
                   for i in range(8))
    (tmp_path / "once.csv").write_text(head + rows)
    (tmp_path / "twice.csv").write_text(head + rows + rows)
    once = invoke(["check", "once.csv", "--json"], tmp_path)
    twice = invoke(["check", "twice.csv", "--json"], tmp_path)
    assert "hplsim: warning: history twice.csv: 8 duplicated row(s)" in twice[2]
    a, b = json.loads(once[1]), json.loads(twice[1])
    assert [v["runs"] for v in a] == [v["runs"] for v in b] == [8]
    assert b[0]["warnings"] and not a[0]["warnings"]


def test_check_names_dahu_nodes_as_the_platform_does(dahu_dir):
    from hplsim.calibrate.history import read_history
    from hplsim.platform.spec import load_platform
    from hplsim.presets import DEFAULT

    hosts = set(read_history(dahu_dir / "dgemm_calibration_history.csv")["host"])
    assert hosts == set(load_platform(DEFAULT.platform).hosts)


def test_root_tempdir_is_left_clean():
    assert not list(Path(tempfile.gettempdir()).glob(f"hplsim-*-{os.getpid()}-*"))


def test_the_kernel_report_taken_on_every_run_changes_nothing(tmp_path, monkeypatch):
    """predict asks the runtime for its per-kernel report on every run (to name kernels that
    cost nothing): the prediction is the same bit for bit as without the report."""
    import hplsim.predict

    with_report = json.loads(invoke(["predict", *SMALL, "--seed", "3", "--json"], tmp_path)[1])[0]
    monkeypatch.setattr(hplsim.predict, "KERNEL_REPORT", False)
    without = json.loads(invoke(["predict", *SMALL, "--seed", "3", "--json"], tmp_path)[1])[0]
    assert with_report["time_s"] == without["time_s"] and with_report["gflops"] == without["gflops"]


def test_write_json_takes_numpy_scalars_and_refuses_other_objects(tmp_path):
    """numpy's scalars are written as the numbers they hold (dahu_validation.py lost an
    hour-long run's --json to an int64 from pandas); anything else json cannot write is
    still a TypeError, and no file is left behind."""
    import json

    import numpy as np

    from hplsim.outputs import write_json

    path = write_json(tmp_path / "a.json", {"n": np.int64(250000), "g": np.float64(20718.5), "ok": np.bool_(True),
                                            "rows": [np.int32(3)]}, "test")
    assert json.loads(path.read_text()) == {"n": 250000, "g": 20718.5, "ok": True, "rows": [3]}
    with pytest.raises(TypeError):
        write_json(tmp_path / "b.json", {"a": np.array([1, 2])}, "test")
    with pytest.raises(TypeError):
        write_json(tmp_path / "c.json", {"a": object()}, "test")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_folder_whose_pid_now_belongs_to_a_newer_process_is_stale(tmp_path):
    """Pids wrap (pid_max is 32,768 here): a folder left by a killed hplsim whose pid a newer
    process took was kept for ever (the sweep's SIGKILL test failed on it once). The folder
    is stale when the process with its pid started after the folder was last changed."""
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        reused = tmp_path / f"hplsim-run-{sleeper.pid}-old"
        reused.mkdir()
        hour_ago = time.time() - 3600
        os.utime(reused, (hour_ago, hour_ago))
        own = tmp_path / f"hplsim-run-{sleeper.pid}-new"  # made after its process started
        own.mkdir()
        assert processes.clean_stale_dirs(tmp_path) == [reused]
        assert own.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_few_calls_clamped_to_zero_by_their_noise_are_not_a_negative_law():
    """A kernel called a few times, every call clamped to 0 s, is not named: a positive law
    whose noise drew below 0 does that (the Dahu daxpy's draws are negative 28 % of the
    time, and `tune` warned on a run that called it once); from 8 calls on, it is named
    (the end-to-end case above: a negative dtrsm law)."""
    from hplsim.models.modelfile import load_model
    from hplsim.predict import MIN_CALLS_ZERO_COST, zero_cost_kernels
    from hplsim.presets import DEFAULT

    model = load_model(DEFAULT.model)
    host = next(iter(model.hosts)) if model.hosts else "any"
    split = {"kernels": {"daxpy": {"calls": MIN_CALLS_ZERO_COST - 1, "seconds": 0.0},
                         "dscal": {"calls": MIN_CALLS_ZERO_COST, "seconds": 0.0},
                         "idamax": {"calls": 500, "seconds": 1e-4}}}
    assert zero_cost_kernels(split, model, [host]) == ["dscal"]


def _samples_taken(monkeypatch, run_s: float, sample_cpu_s: float) -> int:
    """How many PSS samples the monitor takes of a stand-in process of `run_s` seconds when
    each sample costs `sample_cpu_s` of CPU."""
    from hplsim.emulate import smpirun

    def pss(pid: int) -> int:
        end = time.thread_time() + sample_cpu_s
        while time.thread_time() < end:
            pass
        return 1 << 20

    monkeypatch.setattr(smpirun, "_pss_bytes", pss)
    proc = subprocess.Popen(["sh", "-c", f"sleep {run_s} & wait"])
    monitor = smpirun._PssMonitor(proc.pid)
    monitor.start()
    proc.wait()
    monitor.stop.set()
    monitor.join()
    return monitor.samples


def test_a_short_run_is_sampled_often_enough_whatever_a_sample_costs(monkeypatch):
    """A 1,024-rank run of 2-3 s took two PSS samples (each costs milliseconds of CPU, and
    sampling is kept to 1 % of a core), so its memory fell back to the tree's RSS, which
    counts the ranks' shared code once per rank (818 MB for about 100; E76). In a run's
    first seconds the monitor samples at least every EARLY_MAX_WAIT_S: here a stand-in
    process of 2.5 s and samples that cost 50 ms of CPU each (the 1 % rule alone: one)."""
    samples = _samples_taken(monkeypatch, run_s=2.5, sample_cpu_s=0.05)
    assert samples >= 3, samples


def test_a_run_of_half_a_second_is_sampled_at_least_three_times(monkeypatch):
    """A 64-rank run of 0.5 s (tests/test_mechanisms.py's folded panels on a quiet machine)
    took two samples of a few milliseconds each, 0.4 s apart under the 1 % rule, and its
    memory fell back to the RSS: 192 MB for a PSS of 42. Here a stand-in process of 0.5 s
    and samples of 4 ms of CPU."""
    samples = _samples_taken(monkeypatch, run_s=0.5, sample_cpu_s=0.004)
    assert samples >= 3, samples
