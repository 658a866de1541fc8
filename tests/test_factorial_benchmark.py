"""benchmarks/factorial.py (issue 18): its arithmetic against the factorial's data (the
authors' own figures come out of the CSV), its selection of configurations, its bad-input
rule, and a real run at a tiny size that a second invocation resumes through the store.

The real runs here are N = 4,000 on 2x2 (~0.3 s of simulation each), the Dahu preset
otherwise; the benchmark's N = 250,000 on 32x32 is for the lead's machine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hplsim.errors import HplsimError
from hplsim.sweep.store import ResultStore
from helpers import load_benchmark, run_cli

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "factorial.py"
VALIDATION = REPO / "benchmarks" / "dahu_validation.py"


fb = load_benchmark("factorial.py", "factorial_benchmark")


def script(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def in_process(*args: object, cwd: Path, capfd, monkeypatch) -> subprocess.CompletedProcess:
    """The script's entry point (`run_main(main)`, what `__main__` runs) in this process:
    its exit code, stdout and stderr (its pool's workers' too: file descriptors 1 and 2) as
    `script` gives them, without a new interpreter (a second and a half of imports each).
    pytest's signal handlers stay; warnings are issued afresh, as in a new command."""
    import hplsim.errors
    import hplsim.processes

    monkeypatch.setattr(hplsim.processes, "handle_signals", lambda: None)
    monkeypatch.chdir(cwd)
    hplsim.errors.reset_warnings()
    capfd.readouterr()
    with pytest.raises(SystemExit) as exc:
        fb.run_main(lambda: fb.main(list(map(str, args))))
    out = capfd.readouterr()
    code = exc.value.code
    return subprocess.CompletedProcess(args, code if isinstance(code, int) else 1, out.out, out.err)


@pytest.fixture(scope="module")
def data(dahu_dir):
    return fb.load_factorial(dahu_dir)


def test_the_data_hold_36_configurations_of_eight_real_runs(data):
    assert sorted(data) == [(b, d, s) for b in range(6) for d in range(2) for s in range(3)]
    assert {m.real_runs for m in data.values()} == {8}
    assert fb.REFERENCE == (2, 1, 0) and round(data[fb.REFERENCE].real_mean) == 23945  # issue 18's reference


def test_the_authors_figures_come_out_of_the_data(data):
    """Issue 18's anchor, measured relatively on the 36 configurations: 32 within 5 %,
    worst 8.9 %, Spearman 0.90."""
    real = {k: m.real_mean for k, m in data.items()}
    authors = {k: m.authors for k, m in data.items()}
    s = fb.summarise(authors, real, sorted(data))
    assert s.count == 36 and s.within == 32
    assert round(100 * abs(s.worst_error), 1) == 8.9 and s.worst == (2, 1, 2)
    assert round(s.spearman, 2) == 0.90


def test_the_relative_error_of_issue_18s_table(data):
    """hplsim's figures quoted in issue 18 (reference 21,242; 0,128,0,0: 19,317; 5,128,1,1:
    17,877) against the real means: -7.7 % and -11.0 %."""
    real = {k: m.real_mean for k, m in data.items()}
    pred = {(2, 1, 0): 21242.0, (0, 0, 0): 19317.0, (5, 1, 1): 17877.0}
    assert round(100 * fb.relative_error(pred, real, (0, 0, 0)), 1) == -7.7
    assert round(100 * fb.relative_error(pred, real, (5, 1, 1)), 1) == -11.0
    s = fb.summarise(pred, real, sorted(pred))
    assert (s.within, s.worst, s.count) == (1, (5, 1, 1), 3)
    assert s.spearman == pytest.approx(1.0)  # the three are ranked as the machine ranks them


def test_a_perfect_prediction_up_to_a_factor(data):
    real = {k: m.real_mean for k, m in data.items()}
    s = fb.summarise({k: 0.87 * v for k, v in real.items()}, real, sorted(real))
    assert (s.within, s.count) == (36, 36)
    assert abs(s.worst_error) < 1e-12 and s.spearman == pytest.approx(1.0)
    assert fb.summarise(real, real, [(2, 1, 0), (0, 0, 0)]).spearman is None  # too few to rank


def test_selection(data):
    assert len(fb.select(data)) == 36
    assert fb.select(data, bcast=[0, 2], depth=[0], swap=[0, 1]) == [(0, 0, 0), (0, 0, 1), (2, 0, 0), (2, 0, 1)]
    assert fb.select(data, swap=[2]) == [(b, d, 2) for b in range(6) for d in range(2)]
    configs = [fb.parse_config("5,1,1"), fb.parse_config("2,128,1,0"), fb.parse_config("5,1,1")]
    assert fb.select(data, configs=configs) == [(2, 1, 0), (5, 1, 1)]
    assert fb.simulated_as((3, 0, 2), True) == (3, 0, 1)
    assert fb.simulated_as((3, 0, 2), False) == (3, 0, 2)
    with pytest.raises(HplsimError, match="BCAST 0, 1, 2, 3, 4, 5 only"):
        fb.select(data, bcast=[6])
    with pytest.raises(HplsimError, match="not a configuration"):
        fb.select(data, configs=[(2, 3, 0)])
    with pytest.raises(HplsimError, match="does not combine"):
        fb.select(data, bcast=[2], configs=[(2, 1, 0)])
    with pytest.raises(HplsimError, match="NB 128 only"):
        fb.parse_config("2,256,1,0")


def test_help_lists_every_option(tmp_path, capfd, monkeypatch):
    out = in_process("--help", cwd=tmp_path, capfd=capfd, monkeypatch=monkeypatch)
    assert out.returncode == 0
    for option in ("--bcast", "--depth", "--swap", "--configs", "--n", "--seed", "--jobs", "--grid", "--store",
                   "--json", "--dry-run", "--swap2-as-swap1", "--retry-failed", "--data", "--model", "--platform"):
        assert option in out.stdout, option


def test_dry_run_lists_the_selection_and_the_reference(tmp_path, capfd, monkeypatch):
    store = tmp_path / "s.sqlite"
    out = in_process("--dry-run", "--bcast", "0", "5", "--depth", "0", "--swap", "2", "--swap2-as-swap1",
                     "--store", store, cwd=tmp_path, capfd=capfd, monkeypatch=monkeypatch)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "3 runs: 0 stored, 3 to run, 0 failed before"
    # the factorial's own machine state by default (docs/presets.md)
    assert ("hplsim predict --preset dahu-2020 -N 250000 --bcast 5 --depth 0 --swap 1 --seed 1 "
            "(= the run of 5,128,0,1)") in lines[1]
    assert lines[2].startswith("2,128,1,0  ref")
    assert not store.exists()


BAD = [
    (["--bcast", "7"], "BCAST"),
    (["--configs", "2,1"], "BCAST,DEPTH,SWAP"),
    (["--configs", "2,256,1,0"], "NB 128 only"),
    (["--configs", "2,1,0", "--depth", "1"], "does not combine"),
    (["--jobs", "0"], "--jobs"),
    (["--grid", "32"], "PxQ"),
    (["--grid", "64x32"], "rank slots"),
    (["-N", "100"], "NB (128) must not exceed N (100)"),
    (["--seed", "-1"], "--seed"),
    (["--frobnicate"], "unrecognized arguments"),
    (["--n", "many"], "invalid int value"),
    (["--data", "/nonexistent"], "reference data not found"),
]


@pytest.mark.parametrize("args,fragment", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_error_line(args, fragment, tmp_path, monkeypatch, capsys):
    import hplsim.processes

    monkeypatch.setattr(hplsim.processes, "handle_signals", lambda: None)  # leave pytest's signals alone
    with pytest.raises(SystemExit) as exc:
        fb.run_main(lambda: fb.main([*args, "--store", str(tmp_path / "s.sqlite"), "--dry-run"]))
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code != 0
    assert len(err) == 1 and err[0].startswith("hplsim: error: ") and fragment in err[0], err
    assert not (tmp_path / "s.sqlite").exists()


def test_a_store_that_is_not_one_is_refused_in_one_line(tmp_path, capfd, monkeypatch):
    (tmp_path / "notes.txt").write_text("not a database\n")
    # in process: a traceback would be an exception other than SystemExit, failing the test
    out = in_process("--n", "4000", "--grid", "2x2", "--configs", "2,1,0", "--store", tmp_path / "notes.txt",
                     cwd=tmp_path, capfd=capfd, monkeypatch=monkeypatch)
    assert out.returncode != 0
    errors = [line for line in out.stderr.splitlines() if line.startswith("hplsim: error:")]
    assert len(errors) == 1 and "not an hplsim results store" in errors[0] and "Traceback" not in out.stderr


def test_a_real_run_is_resumed_through_the_store(tmp_path):
    # the runs as a program: a pool started in this process would leave multiprocessing's
    # helper process behind it, for the tests that check nothing outlives a command
    store, first, second = tmp_path / "s.sqlite", tmp_path / "first.json", tmp_path / "second.json"
    out = script("--n", "4000", "--grid", "2x2", "--configs", "0,0,0", "5,1,1", "--store", store,
                 "--json", first, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "3 runs, 0 already stored; 3 to run, 2 at a time" in out.stderr
    doc = json.loads(first.read_text())
    rows = {(r["bcast"], r["depth"], r["swap"]): r for r in doc["configurations"]}
    assert sorted(rows) == [(0, 0, 0), (2, 1, 0), (5, 1, 1)] and not rows[(2, 1, 0)]["selected"]
    for r in rows.values():
        assert r["status"] == "ok" and r["hplsim_gflops"] > 0 and r["sim_wall_s"] > 0 and r["sim_memory_bytes"] > 0
    assert rows[(2, 1, 0)]["rel_error"] == 0
    assert doc["summary"]["hplsim"]["configurations"] == 2

    # The figure is `hplsim predict`'s, to the bit (its command line, in this process).
    pred = run_cli("predict", "--preset", "dahu-2020", "-N", "4000", "-P", "2", "-Q", "2", "--bcast", "5",
                   "--depth", "1", "--swap", "1", "--seed", "1", "--json", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    assert json.loads(pred.stdout)[0]["gflops"] == rows[(5, 1, 1)]["hplsim_gflops"]

    # More configurations: only the new run runs; SWAP 2 may borrow SWAP 1's run.
    out = script("--n", "4000", "--grid", "2x2", "--configs", "0,0,0", "5,1,1", "5,1,2", "1,0,1",
                 "--swap2-as-swap1", "--store", store, "--json", second, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "4 runs, 3 already stored; 1 to run" in out.stderr
    again = {(r["bcast"], r["depth"], r["swap"]): r for r in json.loads(second.read_text())["configurations"]}
    for k in rows:
        assert again[k]["hplsim_gflops"] == rows[k]["hplsim_gflops"]
    assert again[(5, 1, 2)]["hplsim_gflops"] == rows[(5, 1, 1)]["hplsim_gflops"]
    assert again[(5, 1, 2)]["simulated_as"] == "5,128,1,1"
    assert "5,128,1,2" in out.stdout and "(= run 5,128,1,1)" in out.stdout
    with ResultStore(store, create=False) as s:
        assert len(s.runs()) == 4 and [w["status"] for w in s.sweeps()] == ["done", "done"]


# ------------------------------------------------------------- benchmarks/dahu_validation.py

def test_the_n_sweep_errors_of_issue_18s_table(dahu_dir):
    """Issue 18's hplsim figures against the 2019-03 means: +10.8, +4.9, +5.9, +1.3 %; the
    authors' D2_het on the same N: +1.7, -4.0, -0.7, -0.8 % (mean |error| 1.8 %)."""
    dv = load_benchmark("dahu_validation.py", "dahu_validation_benchmark")
    real, d2 = dv.reality(dahu_dir), dv.paper(dahu_dir, "D2_het")
    rows = [{"n": n, "gflops": g} for n, g in ((50000, 14181), (75000, 17402), (100000, 18878), (250000, 21242))]
    s = dv.summarise(rows + [{"n": 50000, "gflops": 14181}], real, d2)  # a second seed, same figure
    assert [round(s["errors_pct"][n], 1) for n in s["n"]] == [10.8, 4.9, 5.9, 1.3]
    assert (s["worst_n"], s["within_5pct"]) == (50000, 2)
    assert s["mean_abs_error_pct"] == pytest.approx((10.8 + 4.9 + 5.9 + 1.3) / 4, abs=0.05)
    assert round(s["paper_d2_mean_abs_error_pct"], 1) == 1.8
    assert dv.summarise([{"n": 2048, "gflops": 123.0}], real, d2) is None  # no real run at that N


def test_the_n_sweep_dry_run_and_a_bad_option(tmp_path):
    out = subprocess.run([sys.executable, str(VALIDATION), "--dry-run", "--store", str(tmp_path / "v.sqlite")],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    # both presets by default, each at the four N
    assert [tuple(line.split()[:2]) for line in out.stdout.splitlines()[:-1]] == \
        [(p, f"N={n}") for p in ("dahu", "dahu-2020") for n in (50000, 100000, 250000, 500000)]
    assert out.stdout.splitlines()[-1].startswith("8 runs: 0 stored, 8 to run")
    assert not (tmp_path / "v.sqlite").exists()
    bad = subprocess.run([sys.executable, str(VALIDATION), "--jobs", "0"], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines() == ["hplsim: error: --jobs must be at least 1, got 0"]


def test_the_n_sweep_on_another_platform_is_a_what_if_keyed_apart(tmp_path):
    """--platform replaces the preset's platform (E51's loaded network): its runs are other
    runs than the preset's (the file's digest keys them), and a missing file is one error line."""
    from hplsim.presets import dahu
    from hplsim.sweep.plan import make_plan

    dv = load_benchmark("dahu_validation.py", "dahu_validation_benchmark")
    xml = tmp_path / "lo3.xml"
    published = dahu.PUBLISHED_PLATFORM_XML.read_text()
    xml.write_text(published.replace('loopback_bw="18.348422228142724GBps"', 'loopback_bw="3.07GBps"'))
    assert xml.read_text() != published
    specs = [dv.sweep_spec([50000], [1], ["stochastic"], "arrived", "b", x) for x in (None, xml)]
    plans = [make_plan(spec, tmp_path / f"w{i}", spec.timeout) for i, spec in enumerate(specs)]
    (preset_task,), (what_if_task,) = (p.tasks for p in plans)
    assert preset_task.hash != what_if_task.hash
    assert preset_task.config == what_if_task.config and preset_task.seed == what_if_task.seed
    bad = subprocess.run([sys.executable, str(VALIDATION), "--dry-run", "--preset", "dahu", "--platform",
                          str(tmp_path / "none.xml")],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines() == [f"hplsim: error: --platform {tmp_path / 'none.xml'}: no such file"]


def test_the_n_sweep_against_the_2020_machine(dahu_dir, tmp_path):
    """--machine compares the same runs with the cooling experiment's means (data README:
    'bad' 21,067 and 'good' 23,802 at N = 250,000, the good one 14 % above 2019-03's 20,964)
    and the authors' prediction for them; --model keys the runs apart; a missing file is one
    error line."""
    from hplsim.presets import dahu
    from hplsim.sweep.plan import make_plan

    dv = load_benchmark("dahu_validation.py", "dahu_validation_benchmark")
    good, bad = dv.reality(dahu_dir, "cooling-good"), dv.reality(dahu_dir, "cooling-bad")
    assert (round(bad[250000]), round(good[250000])) == (21067, 23802)
    assert good[250000] / dv.reality(dahu_dir)[250000] == pytest.approx(1.135, abs=0.001)
    assert list(good.index) == list(bad.index) and len(good) == 13 and (good > bad).all()
    name, theirs = dv.authors(dahu_dir, "cooling-good")
    assert name == "authors" and list(theirs.index) == list(good.index)
    assert dv.authors(dahu_dir)[0] == "D2_het"
    s = dv.summarise([{"n": 50000, "gflops": good[50000] * 1.06}, {"n": 250000, "gflops": good[250000]}], good, theirs)
    assert [round(s["errors_pct"][n], 1) for n in s["n"]] == [6.0, 0.0] and s["within_5pct"] == 1

    median = tmp_path / "median.yaml"
    subprocess.run([sys.executable, str(REPO / "docs" / "experiments" / "model_variants.py"), "median",
                    str(dahu.PUBLISHED_PLATFORM_XML.parent / "model.yaml"), str(median)], check=True, timeout=600)
    specs = [dv.sweep_spec([50000], [1], ["stochastic"], "arrived", "b", None, m) for m in (None, median)]
    (preset_task,), (what_if_task,) = (make_plan(spec, tmp_path / f"w{i}", spec.timeout).tasks
                                       for i, spec in enumerate(specs))
    assert preset_task.hash != what_if_task.hash and preset_task.config == what_if_task.config
    out = subprocess.run([sys.executable, str(VALIDATION), "--dry-run", "--preset", "dahu", "--machine", "cooling-good",
                          "--model", str(median),
                          "-N", "50000", "--store", str(tmp_path / "v.sqlite")],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].startswith("1 runs: 0 stored, 1 to run")
    bad_run = subprocess.run([sys.executable, str(VALIDATION), "--dry-run", "--preset", "dahu", "--model",
                              str(tmp_path / "none.yaml")],
                             capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert bad_run.returncode != 0
    assert bad_run.stderr.strip().splitlines() == [f"hplsim: error: --model {tmp_path / 'none.yaml'}: no such file"]


def _live_with(token: str, wait_s: float = 10.0) -> list[str]:
    """Processes whose environment holds `token` (every descendant of the command, in any
    process group or session) that are not zombies (an orphan's zombie may wait for a
    container's init to reap it), after giving them `wait_s` to end."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        live = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if token.encode() not in (proc / "environ").read_bytes():
                    continue
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                live.append(proc.name)
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.2)


# slow: four simulations at N = 12,000, twice, in real processes; the same pool's SIGTERM and
# resume are tested on `hplsim sweep` by test_kill.py and test_sweep_run.py
@pytest.mark.slow
def test_an_interrupted_run_keeps_what_finished_and_resumes(tmp_path):
    """SIGTERM after the first of four runs: a Ctrl-C, as for `hplsim sweep` (a batch
    system's stop; exit 130), one line saying so, the finished run stored and the sweep
    marked interrupted, no simulation left running; the same command then runs only the
    rest. Runs of another build in the store are reported."""
    import os
    import signal
    import sqlite3
    import uuid

    store = tmp_path / "s.sqlite"
    args = [sys.executable, str(SCRIPT), "--n", "12000", "--grid", "2x2", "--configs", "0,0,0", "1,0,0", "3,0,0",
            "--jobs", "1", "--store", str(store)]
    token = f"HPLSIM_TEST_TOKEN={uuid.uuid4().hex}"
    env = {**os.environ, token.split("=")[0]: token.split("=")[1]}
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "[1/4]" in line:
            assert len(_live_with(token, wait_s=0)) >= 2  # the coordinator and its worker at least
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, "".join(seen) + rest
    assert "stopped after 1 of 4 runs" in rest and rest.strip().splitlines()[-1] == "hplsim: interrupted"
    assert _live_with(token) == []  # the pool and its simulations are gone with it
    with ResultStore(store, create=False) as s:
        assert len(s.runs()) == 1 and [w["status"] for w in s.sweeps()] == ["interrupted"]

    out = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "4 runs, 1 already stored; 3 to run" in out.stderr and "another build" not in out.stderr

    with sqlite3.connect(store) as db:  # as if the runs had been made before a change to the emulation's C code
        db.execute("UPDATE sweeps SET spec = replace(spec, 'build: hpl-emulated-', 'build: hpl-emulated-old')")
    out = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "hplsim: warning: 4 stored run(s) were made by another build" in out.stderr


def test_another_model_and_platform_are_what_ifs_keyed_apart(tmp_path, capfd, monkeypatch):
    """--model/--platform replace the preset's files (E42's median CPUs, E41's link-free
    platform): the dry run names them in each command, and their runs are other runs than
    the preset's in the store (the files' digests key them)."""
    import shutil

    from hplsim.presets import get_preset

    preset = get_preset("dahu")
    model = tmp_path / "median.yaml"
    shutil.copy(preset.model, model)
    with model.open("a") as f:
        f.write("# a copy that differs\n")
    store = tmp_path / "s.sqlite"
    plain = in_process("--dry-run", "--configs", "2,0,0", "--store", store, cwd=tmp_path, capfd=capfd,
                       monkeypatch=monkeypatch)
    what_if = in_process("--dry-run", "--configs", "2,0,0", "--model", model, "--store", store, cwd=tmp_path,
                         capfd=capfd, monkeypatch=monkeypatch)
    assert plain.returncode == what_if.returncode == 0, what_if.stderr
    assert f"hplsim predict --preset dahu-2020 --model {model} -N 250000 --bcast 2 --depth 0 --swap 0" in what_if.stdout
    assert "--model" not in plain.stdout
    spec = fb.sweep_spec(250000, (32, 32), 1, [(2, 0, 0)], "b")
    spec_m = fb.sweep_spec(250000, (32, 32), 1, [(2, 0, 0)], "b", model=model)
    t, t_m = (fb.plan_runs(s, [(2, 0, 0)], tmp_path / "w") for s in (spec, spec_m))
    assert t[(2, 0, 0)].hash != t_m[(2, 0, 0)].hash
    bad = in_process("--dry-run", "--model", tmp_path / "none.yaml", "--store", store, cwd=tmp_path, capfd=capfd,
                     monkeypatch=monkeypatch)
    errors = [line for line in bad.stderr.splitlines() if line.startswith("hplsim: error:")]
    assert bad.returncode != 0 and len(errors) == 1 and "--model" in errors[0] and "no such file" in errors[0]


# slow: two processes with four simulations between them at N = 8,000
@pytest.mark.slow
def test_two_processes_on_one_store_run_each_configuration_once(tmp_path):
    """Both given the same configurations at once: each run is claimed in the store by the
    process that starts it, the other waits for its outcome instead of running it again
    (without the claims both ran all four), and both then print the same figures."""
    store = tmp_path / "s.sqlite"
    args = ["--n", "8000", "--grid", "2x2", "--configs", "0,0,0", "1,0,0", "3,0,0", "--jobs", "1", "--store", str(store)]
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), *args, "--json", str(tmp_path / f"{i}.json")], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    ran = [line for _, err in outs for line in err.splitlines() if re.search(r"factorial: \[\d+/\d+\]", line)]
    assert len(ran) == 4, "\n".join(ran)
    figures = [{(r["bcast"], r["depth"], r["swap"]): r["hplsim_gflops"] for r in json.loads((tmp_path / f"{i}.json")
                                                                                            .read_text())["configurations"]}
               for i in range(2)]
    assert figures[0] == figures[1] and len(figures[0]) == 4 and all(v > 0 for v in figures[0].values())
    with ResultStore(store, create=False) as s:
        assert len(s.runs()) == 4 and [w["status"] for w in s.sweeps()] == ["done", "done"]
