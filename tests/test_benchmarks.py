"""Every benchmark script imports and answers --help: a benchmark is run by hand, rarely,
so nothing else would notice that a module it imports has moved (benchmarks/tune_real.py
failed at import for a whole stop after the real/ split)."""

from __future__ import annotations

import runpy
import sys

import pytest

from conftest import REPO

SCRIPTS = sorted(p for p in (REPO / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 8


def run_script(script, args: list[str], monkeypatch) -> object:
    """The script as `python SCRIPT ARGS` runs it, in this process: its exit code."""
    monkeypatch.setattr(sys, "argv", [str(script), *args])
    monkeypatch.syspath_prepend(str(script.parent))
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(script), run_name="__main__")
    return exit_.value.code


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_answers_help(script, monkeypatch, capsys):
    assert run_script(script, ["--help"], monkeypatch) in (0, None)
    assert "usage:" in capsys.readouterr().out


def test_tune_real_refuses_a_bad_budget_before_measuring(tmp_path, monkeypatch, capsys):
    """One error line and no output folder: the budget was read after an hour of calibration
    and real runs, and a typo ended the run there with a traceback."""
    script = REPO / "benchmarks" / "tune_real.py"
    out = tmp_path / "out"
    assert run_script(script, ["--budget", "nonsense", "--out", str(out)], monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hplsim: error: --budget 'nonsense' is not a duration like 20m, 2h, 1h30m or 600s"]
    assert not out.exists()


def test_simgrid_versions_refuses_a_prefix_without_simgrid(tmp_path, monkeypatch, capsys):
    """A --simgrid folder without smpirun/smpicc: one error line, before any build or run
    (the comparison would otherwise time the same SimGrid twice)."""
    script = REPO / "benchmarks" / "simgrid_versions.py"
    (tmp_path / "bin").mkdir()
    assert run_script(script, ["--simgrid", str(tmp_path), "--work", str(tmp_path / "w")], monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"hplsim: error: --simgrid {tmp_path}: no bin/smpirun and bin/smpicc there"]
    assert not (tmp_path / "w").exists()


def test_suite_time_reads_the_conftest_timeline_and_refuses_a_bad_repeat(tmp_path, monkeypatch, capsys):
    """benchmarks/suite_time.py reads the lines tests/conftest.py writes with
    HPLSIM_TEST_TIMELINE (worker, waited from, started, ended, exclusive, test)."""
    script = REPO / "benchmarks" / "suite_time.py"
    assert run_script(script, ["--repeat", "0"], monkeypatch) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["hplsim: error: --repeat must be at least 1"]
    monkeypatch.syspath_prepend(str(script.parent))
    from suite_time import read_timeline

    import conftest

    item = type("Item", (), {"nodeid": "tests/test_x.py::test_y[a\tb]"})()
    monkeypatch.setenv("HPLSIM_TEST_TIMELINE", str(tmp_path / "t.tsv"))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    conftest._timeline(item, True, 10.0, 12.5)
    ((worker, asked, started, ended, exclusive, nodeid),) = read_timeline(tmp_path / "t.tsv")
    assert (worker, asked, started, exclusive, nodeid) == ("gw1", 10.0, 12.5, True, "tests/test_x.py::test_y[a\tb]")
    assert ended >= started


def test_the_cost_law_is_what_cost_law_py_fits_on_the_committed_runs(monkeypatch):
    """hpl/cost.py declares the wall law's five constants; benchmarks/cost_law.py fits them on
    the timed runs committed in benchmarks/results/: the two must agree to the digits
    declared, so that a refit is published with its runs (or not at all)."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import numpy as np
    from cost_law import _runs, fit_wall

    from hplsim.hpl import cost

    results = REPO / "benchmarks" / "results"
    runs = _runs([results / f"emulation_scaling-{name}.json" for name in ("star", "dahu", "dahu-small")])
    overhead, per_rank, log_a, alpha, beta = fit_wall(runs)
    assert round(overhead, 2) == cost.OVERHEAD_S and round(per_rank, 5) == cost.PER_RANK_S
    assert float(f"{np.exp(log_a):.3g}") == cost.COEFFICIENT
    assert (round(alpha, 2), round(beta, 2)) == (cost.N_EXPONENT, cost.RANK_EXPONENT)
