"""validation.md E92 reads the two machine states of Dahu from the real runs and fits the gap
between a sweep of predictions and its state's runs on panels and flops
(`docs/experiments/e92_states.py`, E38's method). This holds the fit to a gap of known shape
and the reading to the reference data it quotes."""

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from conftest import REFERENCE as REFERENCES
from helpers import EXPERIMENTS, load_benchmark

REFERENCE = REFERENCES / "dahu"


def _script():
    return load_benchmark("e92_states.py", "e92_states", EXPERIMENTS)


def _store(path: Path, rows: list[tuple[int, float, float]]) -> Path:
    with sqlite3.connect(path) as c:
        c.execute("create table runs (n integer, gflops real, time_s real, status text, seed integer)")
        c.executemany("insert into runs values (?, ?, ?, 'ok', 1)", rows)
    return path


@pytest.mark.parametrize("per_panel, per_flop", [(2e-3, 0.0), (0.0, 7e-16)])
def test_the_fit_finds_the_shape_of_a_known_gap(tmp_path, capsys, per_panel, per_flop):
    e92 = _script()
    real = e92.real_means(REFERENCE, "good")
    rows = []
    for n in (50_000, 100_000, 150_000, 200_000, 500_000):
        flops = 2 / 3 * n**3 + 2 * n**2
        t_real = flops / (real[n] * 1e9)
        t_sim = t_real - per_panel * n / e92.NB - per_flop * flops
        rows.append((n, flops / t_sim / 1e9, t_sim))
    e92.gap_fits(REFERENCE, _store(tmp_path / "s.sqlite", rows), "good")
    both = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("both:")][0]
    panel_ms = float(both.split("ms/panel")[0].split()[-1])
    flop_s = float(both.split("s/flop")[0].split()[-1])
    assert panel_ms == pytest.approx(per_panel * 1e3, abs=1e-3)
    assert flop_s == pytest.approx(per_flop, abs=1e-18)


def test_the_cooling_faults_state_moved_at_small_n_only():
    """E92's reading: the 'bad' state's dates differ by 14 % at N = 50,000 and by at most
    2 % from 125,000 on; the 'good' state's dates by under 2 % at 50,000."""
    means = _script().dates_table(REFERENCE)
    march = (means[("bad", "2019-03-15")] + means[("bad", "2019-03-18")]) / 2
    october = means[("bad", "2019-10-30")]
    drop = 1 - october / march
    assert drop[50_000] == pytest.approx(0.143, abs=0.005)
    assert drop[75_000] > 0.05
    assert np.all(np.abs(drop[drop.index >= 125_000]) < 0.02)
    good = 1 - means[("good", "2020-10-30")] / means[("good", "2018-10-10")]
    assert abs(good[50_000]) < 0.02
