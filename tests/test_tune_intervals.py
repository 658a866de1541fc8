"""Prediction intervals: Student's interval covers new draws at its level; the Gflops(N)
law recovers a known law and covers its extrapolation; predict's interval combines the
seeds and the model's declared uncertainty as docs/tune.md says."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hplsim.errors import HplsimError
from hplsim.models.modelfile import load_model, model_to_dict, model_from_dict, save_model
from hplsim.presets import DEFAULT
from hplsim.models.intervals import LEVEL, interval, model_rsd
from hplsim.tune.law import compute_coefficients, fit_law, hpl_flops
from helpers import invoke


def test_seed_interval_covers_one_more_run_at_its_level():
    rng = np.random.default_rng(1)
    hits = 0
    trials = 4000
    for _ in range(trials):
        draws = rng.normal(100.0, 3.0, size=4)
        iv = interval(draws[:3])
        hits += iv.low <= draws[3] <= iv.high
    assert abs(hits / trials - LEVEL) < 0.02


def test_law_recovers_a_known_law_and_covers_its_extrapolation():
    a, b, c = 2e-11, 3e-8, 1e-5  # seconds: compute (from the model), N^2 communication, per-panel latency
    rng = np.random.default_rng(7)
    sizes = [1000, 2000, 4000, 8000] * 3
    covered = 0
    for _ in range(200):
        times = [(a * n**3 + b * n**2 + c * n) * rng.lognormal(0, 0.01) for n in sizes]
        law = fit_law(sizes, times, (a, a))
        g, lo, hi = law.gflops_interval(64000)
        truth = hpl_flops(64000) / (a * 64000**3 + b * 64000**2 + c * 64000) / 1e9
        covered += lo <= truth <= hi
    assert abs(g / truth - 1) < 0.02
    assert covered / 200 >= 0.85
    # the slowest rank's compute term widens the interval towards it
    slow = fit_law(sizes, times, (a, 1.1 * a))
    assert slow.gflops_interval(64000)[1] < lo and slow.gflops(64000) == pytest.approx(g)


def test_compute_term_from_the_dgemm_law():
    model = load_model(DEFAULT.model)
    hosts = ["dahu-0.grid5000.fr"] * 4
    mean, slowest = compute_coefficients(model, hosts, 128)
    laws = [model.resolve(hosts[0], cpu)["dgemm"].mean.to_mapping() for cpu in (0, 1)]
    per_rank = [law["mnk"] + law["mn"] / 128 for law in laws]
    assert mean == pytest.approx(sum(per_rank) / 2 / (3 * 4)) and slowest == pytest.approx(max(per_rank) / 12)
    # about 29 Gflops per Dahu core: the asymptote of the law
    assert 25 < 2 / (3 * 4 * mean) / 1e9 < 35


def test_model_file_carries_uncertainty(tmp_path):
    model = load_model(DEFAULT.model)
    doc = model_to_dict(model)
    doc["uncertainty"] = {"dgemm": {"rsd": 0.05}, "dtrsm": {"rsd": 0.1}}
    m = model_from_dict(doc)
    save_model(m, tmp_path / "m.yaml")
    again = load_model(tmp_path / "m.yaml")
    assert again.uncertainty == {"dgemm": 0.05, "dtrsm": 0.1}
    assert model_rsd(again) == 0.1  # without the shares: the bound max rsd
    assert model_rsd(again, {"dgemm": 0.8, "dtrsm": 0.05}) == pytest.approx(0.8 * 0.05 + 0.05 * 0.1)
    for bad in ({"dgemm": {"rsd": 1.5}}, {"dgemm": {"rsd": -0.1}}, {"nosuch": {"rsd": 0.1}},
                {"dgemm": {"sd": 0.1}}, {"dgemm": 0.1}):
        with pytest.raises(HplsimError, match="uncertainty"):
            model_from_dict({**doc, "uncertainty": bad})


def test_predict_interval_from_the_model_and_from_seeds(tmp_path):
    doc = model_to_dict(load_model(DEFAULT.model))
    doc["uncertainty"] = {"dgemm": {"rsd": 0.05}}
    save_model(model_from_dict(doc), tmp_path / "m.yaml")
    run = ["predict", "--platform", str(DEFAULT.platform), "--ranks-per-host", "32", "-N", "2000", "--nb", "64",
           "-P", "2", "-Q", "2", "--json"]
    code, out, err = invoke([*run, "--model", "m.yaml", "--breakdown", "--seed", "2"], tmp_path)
    assert code == 0, err
    (one,) = json.loads(out)
    share = one["breakdown"]["kernels"]["dgemm"]["seconds"] / (one["breakdown"]["ranks"] * one["time_s"])
    assert 0.2 < share < 1
    half = (one["interval"][1] - one["interval"][0]) / 2
    assert half / one["gflops"] == pytest.approx(1.6449 * 0.05 * share, rel=1e-3)
    # replicates: the mean of the seeds' runs, each the run that seed alone gives
    code, out, err = invoke([*run, "--seed", "1", "--replicates", "3"], tmp_path)
    assert code == 0, err
    (rep,) = json.loads(out)
    assert rep["seeds"] == [1, 2, 3] and rep["gflops"] == pytest.approx(np.mean(rep["gflops_runs"]))
    code, out, err = invoke([*run, "--seed", "2"], tmp_path)
    assert json.loads(out)[0]["gflops"] == rep["gflops_runs"][1]
    iv = interval(rep["gflops_runs"])
    assert rep["interval"] == [iv.low, iv.high] and iv.low < rep["gflops"] < iv.high
    assert rep["interval_sources"] == ["3 seeds"]
