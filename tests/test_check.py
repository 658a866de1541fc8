"""hplsim check: Chew's test against independent computations and textbook cases, its
error rates on simulated series, and the command on real and synthetic histories."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hplsim.check.chew import DegenerateReference, band, chew_test
from hplsim.check.history import append_runs, read_history, summarise_calls
from hplsim.check.verdicts import NOT_ENOUGH, NOT_TESTABLE, OK, REGRESSION, evaluate

RHO = -0.7


def bivariate(n: int, seed: int) -> np.ndarray:
    cov = np.array([[1.0, RHO], [RHO, 1.0]])
    return np.random.default_rng(seed).multivariate_normal([0.0, 0.0], cov, size=n)


def test_textbook_bivariate_case():
    ref = bivariate(500, seed=1)
    mu, sd = ref.mean(axis=0), ref.std(axis=0, ddof=1)
    along = mu + np.array([2, 2]) * sd     # against the correlation: outside the ellipse
    across = mu + np.array([2, -2]) * sd   # along the correlation: inside
    g = 0.995
    assert chew_test(ref, along, g).alarm
    assert not chew_test(ref, across, g).alarm
    for point in (along, across):  # each coordinate alone is within its 1-D band
        for j in range(2):
            assert not chew_test(ref[:, j], point[j:j + 1], g).alarm
            lo, hi = band(ref[:, j], 1, g)
            assert lo < point[j] < hi
    # the mean of five points at the same place: the region shrinks (r=5) and flags it
    five = np.repeat(across[None, :], 5, axis=0)
    assert chew_test(ref, five, g).alarm
    assert chew_test(ref, five, g).threshold == chew_test(ref, across, g).threshold


def test_statistic_matches_an_independent_computation():
    rng = np.random.default_rng(7)
    for p, n, r in ((1, 12, 1), (2, 40, 3), (3, 30, 5), (5, 200, 2)):
        a = rng.normal(size=(p, p))
        ref = rng.normal(size=(n, p)) @ a + rng.normal(size=p) * 1e3
        new = rng.normal(size=(r, p)) @ a
        res = chew_test(ref, new, 0.99)
        # Hotelling's two-sample form with the plain inverse of the raw covariance
        centred = ref - ref.sum(axis=0) / n
        s = centred.T @ centred / (n - 1)
        diff = new.sum(axis=0) / r - ref.sum(axis=0) / n
        t2 = (n * r / (n + r)) * diff @ np.linalg.inv(s) @ diff
        expected = t2 * (n - p) / (p * (n - 1))
        assert res.statistic == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert res.threshold == pytest.approx(stats.f.ppf(0.99, p, n - p), rel=1e-12)


def _null_series(seed: int, shift: np.ndarray | None = None, n: int = 30, r: int = 5):
    rng = np.random.default_rng(seed)
    cov = np.array([[1.0, 0.5, -0.3], [0.5, 1.0, -0.6], [-0.3, -0.6, 1.0]])
    ref = rng.multivariate_normal(np.zeros(3), cov, size=n)
    new = rng.multivariate_normal(np.zeros(3) if shift is None else shift, cov, size=r)
    return ref, new


def test_false_alarm_rate_is_calibrated():
    gamma, trials = 0.99, 2000
    alarms = sum(chew_test(*_null_series(seed), gamma).alarm for seed in range(trials))
    lo, hi = stats.binom.interval(0.99, trials, 1 - gamma)
    assert lo <= alarms <= hi, (alarms, lo, hi)


def test_a_three_sigma_shift_is_detected():
    gamma, trials = 0.99, 400
    shift = np.array([3.0, 0.0, 0.0])  # 3 standard deviations on the first metric
    multi = one_d = 0
    for seed in range(trials):
        ref, new = _null_series(10_000 + seed, shift)
        multi += chew_test(ref, new, gamma).alarm
        one_d += chew_test(ref[:, 0], new[:, 0], gamma).alarm
    assert multi / trials >= 0.95 and one_d / trials >= 0.95


def test_degenerate_references_are_refused():
    ref = np.column_stack([np.ones(20), np.arange(20.0)])
    with pytest.raises(DegenerateReference, match="constant"):
        chew_test(ref, np.array([1.0, 3.0]), 0.99)
    with pytest.raises(DegenerateReference, match="reference points"):
        chew_test(np.ones((2, 3)), np.ones(3), 0.99)
    with pytest.raises(DegenerateReference, match="NaN"):
        chew_test(np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 4.0], [2.0, 2.5]]), np.array([1.0, 1.0]), 0.9)


# ----------------------------------------------------------------- histories, verdicts


def _history(runs_per_series: int = 20, regress_last: bool = False, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for host in ("n-1", "n-2"):
        for cpu in (0, 1):
            for i in range(runs_per_series):
                slow = 1.10 if (regress_last and host == "n-2" and cpu == 1 and i == runs_per_series - 1) else 1.0
                mnk = 7e-11 * (1 + 0.005 * rng.standard_normal()) * slow
                rows.append({"host": host, "cpu": cpu, "run_id": f"job{i}", "start_time": 1.6e9 + 86400 * i,
                             "source": "synthetic", "intercept": 2e-6 * (1 + 0.05 * rng.standard_normal()),
                             "mnk": mnk, "avg_gflops": 2 / mnk / 1e9 * (1 + 0.002 * rng.standard_normal())})
    return pd.DataFrame(rows)


def test_verdicts_on_a_synthetic_regression():
    verdicts = {(v.host, v.cpu): v for v in evaluate(_history(regress_last=True), ["intercept", "mnk", "avg_gflops"],
                                                    window=5, gamma=0.9999)}
    assert verdicts[("n-2", 1)].verdict == REGRESSION
    assert "mnk" in verdicts[("n-2", 1)].message or "avg_gflops" in verdicts[("n-2", 1)].message
    assert all(v.verdict == OK for k, v in verdicts.items() if k != ("n-2", 1))


def test_not_enough_history_is_never_passing_and_degenerate_series_are_named():
    short = _history(runs_per_series=8)
    assert {v.verdict for v in evaluate(short, ["intercept", "mnk"], 5, 0.99)} == {NOT_ENOUGH}
    one = _history(runs_per_series=1)
    assert {v.verdict for v in evaluate(one, ["mnk"], 1, 0.99)} == {NOT_ENOUGH}
    flat = _history()
    flat["intercept"] = 1e-6
    v = evaluate(flat, ["intercept", "mnk"], 5, 0.99)
    assert {x.verdict for x in v} == {NOT_TESTABLE} and "constant" in v[0].message
    holes = _history()
    holes.loc[holes.index[::3], "mnk"] = np.nan
    assert all("missing values left out" in x.message for x in evaluate(holes, ["mnk"], 5, 0.99))


def test_changelog_resets_the_reference_and_outliers_are_left_out():
    from hplsim.check.verdicts import ChangelogEntry

    h = _history(regress_last=True)
    change = ChangelogEntry(1.6e9 + 86400 * 15.5, "n-2", "new BIOS")
    v = {(x.host, x.cpu): x for x in evaluate(h, ["mnk"], 1, 0.9999, [change])}
    assert v[("n-2", 1)].verdict == NOT_ENOUGH and v[("n-1", 0)].verdict == OK
    v = {(x.host, x.cpu): x for x in evaluate(h, ["mnk"], 1, 0.9999, outliers={("n-2", 1, "job19")})}
    assert v[("n-2", 1)].verdict == OK and v[("n-2", 1)].last_run == "job18"


def test_summary_of_calls_recovers_the_linear_model():
    rng = np.random.default_rng(3)
    m, n, k = (rng.integers(64, 2048, 3000) for _ in range(3))
    mnk = m * n * k
    calls = pd.DataFrame({"m": m, "n": n, "k": k,
                          "duration": 2e-6 + 7e-11 * mnk + (1e-7 + 1e-12 * mnk) * rng.standard_normal(3000)})
    s = summarise_calls(calls)
    assert s["mnk"] == pytest.approx(7e-11, rel=0.01)
    assert s["mnk_residual"] == pytest.approx(1e-12, rel=0.15)
    assert s["avg_gflops"] == pytest.approx(np.mean(2 * mnk / calls.duration / 1e9))


# ------------------------------------------------------------------------------- CLI


def hplsim(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hplsim.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_real_dahu_history_end_to_end(dahu_dir, tmp_path):
    start = time.perf_counter()
    out = hplsim("check", dahu_dir / "dgemm_calibration_history.csv", "--json")
    elapsed = time.perf_counter() - start
    assert out.returncode in (0, 1), out.stderr
    verdicts = json.loads(out.stdout)
    assert len(verdicts) == 64  # 32 nodes x 2 CPUs
    assert sum(v["runs"] for v in verdicts) == 1456 and all(v["runs"] >= 18 for v in verdicts)
    flagged = [f"{v['host']}/cpu{v['cpu']}: {v['verdict']}" for v in verdicts if v["verdict"] != OK]
    print(f"Dahu history: {len(verdicts)} series in {elapsed:.1f} s; not ok: {flagged or 'none'}")
    assert out.returncode == (1 if any(v["verdict"] == REGRESSION for v in verdicts) else 0)
    assert elapsed < 30


def test_cli_history_file_add_regression_exit_code_and_plots(tmp_path):
    history = tmp_path / "history.sqlite"
    good = _history()
    assert append_runs(history, good) == (len(good), 0)
    assert append_runs(history, good.iloc[:3]) == (0, 3)  # adding twice changes nothing
    back = read_history(history)
    assert len(back) == len(good) and set(back.columns) >= {"intercept", "mnk", "avg_gflops"}
    ok = hplsim("check", history, "--json")
    assert ok.returncode == 0, ok.stderr
    bad = _history(regress_last=True)
    history2 = tmp_path / "h2.sqlite"
    append_runs(history2, bad)
    (tmp_path / "changelog.csv").write_text("date,host,reason\n2020-09-01,all,maintenance\n")
    out = hplsim("check", history2, "--plot", tmp_path / "plots")
    assert out.returncode == 1 and "regression" in out.stdout
    assert (tmp_path / "plots" / "overview.png").stat().st_size > 0
    assert (tmp_path / "plots" / "n-2-cpu1.png").exists()
    for args, fragment in (([tmp_path / "nope.sqlite"], "does not exist"),
                           ([history2, "--metrics", "speed"], "not in the history"),
                           ([history2, "--since", "yesterday"], "neither a date"),
                           ([history2, "--gamma", "1.5"], "gamma")):
        out = hplsim("check", *args)
        assert out.returncode == 2 and "Traceback" not in out.stderr and fragment in out.stderr, out.stderr


def test_archives_are_summarised_into_the_history(tmp_path):
    """A real calibration archive of this machine, added twice: one run per (host, CPU)."""
    out = hplsim("calibrate", "dgemm", "--rows", "24", "--seed", "3", "--out", tmp_path / "a.zip")
    assert out.returncode == 0, out.stderr
    history = tmp_path / "h.sqlite"
    first = hplsim("check", "add", history, tmp_path / "a.zip")
    assert first.returncode == 0 and "added" in first.stdout, first.stderr
    again = hplsim("check", "add", history, tmp_path / "a.zip")
    assert "0 run(s) added" in again.stdout and "already present" in again.stdout
    runs = read_history(history)
    assert len(runs) >= 1 and (runs["mnk"] > 0).all() and (runs["avg_gflops"] > 0).all()
    verdicts = json.loads(hplsim("check", history, "--json").stdout)
    assert {v["verdict"] for v in verdicts} == {NOT_ENOUGH}
