"""The dahu-2020 preset (docs/presets.md, validation.md E58): Dahu's CPUs as calibrated in
January 2020 on the dahu preset's platform. Each figure of its model is recomputed here
from the reference CSVs by other arithmetic than the module's, and the CLI says which
machine state a preset describes."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from datetime import datetime, timezone

import numpy as np
import pytest

from hplsim.models.modelfile import load_model
from hplsim.presets import PRESETS, dahu, dahu2020, get_preset
from helpers import run_cli

M, N, K = 7812, 7812, 128  # HPL's update at N = 250,000 on 32 x 32 (where the speeds are read)


def _update(law) -> float:
    return float(law.mean({"m": M, "n": N, "k": K}))


@pytest.fixture(scope="module")
def model():
    return load_model(dahu2020.MODEL_FILE)


@pytest.fixture(scope="module")
def median_law(dahu_dir):
    """The coefficient-wise median of dgemm_model_per_cpu.csv's 64 CPU laws, as a function."""
    with open(dahu_dir / "dgemm_model_per_cpu.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["cpu"] != "default"]
    assert len(rows) == 64
    med = {t: float(np.median([float(r[f"mu_{t}"]) for r in rows])) for t in ("intercept", "mnk", "mn", "mk", "nk")}
    return lambda m, n, k: (med["intercept"] + med["mnk"] * m * n * k + med["mn"] * m * n + med["mk"] * m * k
                            + med["nk"] * n * k)


def test_the_median_cpu_law_is_the_published_models_median(model, median_law):
    """Every CPU's law is the coefficient-wise median of the published 64 CPU laws, times one
    factor: the law at two shapes gives the same ratio to the median law."""
    at = median_law
    for host in model.hosts.values():
        for cpu in host.cpus:
            law = cpu["dgemm"]
            big = float(law.mean({"m": M, "n": N, "k": K})) / at(M, N, K)
            thin = float(law.mean({"m": 2000, "n": 128, "k": 128})) / at(2000, 128, 128)
            assert big == pytest.approx(thin, rel=1e-9)


def test_each_cpu_runs_at_its_january_2020_calibrated_speed(dahu_dir, model, median_law):
    """A CPU's update time over the median CPU law's is its time over the job's median CPU in
    the January 2020 calibrations (dgemm_calibration_history.csv), median over the jobs."""
    start = datetime(2020, 1, 1, tzinfo=timezone.utc).timestamp()
    jobs = defaultdict(dict)
    with open(dahu_dir / "dgemm_calibration_history.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["function"] == "dgemm" and float(r["start_time"]) >= start:
                jobs[r["jobid"]][(int(r["node"]), int(r["cpu"]))] = float(r["intercept"]) + float(r["mnk"]) * M * N * K
    assert len(jobs) >= 5
    per_cpu = defaultdict(list)
    for times in jobs.values():
        mid = np.median(list(times.values()))
        for key, t in times.items():
            per_cpu[key].append(t / mid)
    expected = {key: float(np.median(v)) for key, v in per_cpu.items()}
    assert len(expected) == 64
    base = median_law(M, N, K)
    for (node, cpu), ratio in expected.items():  # the history's cpu is the node's CPU 0 or 1
        law = model.hosts[dahu.host_name(node)].cpus[cpu]["dgemm"]
        assert _update(law) / base == pytest.approx(ratio, rel=1e-9), (node, cpu)
    # the spread E58 reports: the slowest CPU 10.8 % above the median, the fastest 6.1 % below
    assert max(expected.values()) == pytest.approx(1.108, abs=0.001)
    assert min(expected.values()) == pytest.approx(0.939, abs=0.001)


def test_one_platform_and_the_same_hpl_parameters_for_both_states():
    old, new = get_preset("dahu"), get_preset("dahu-2020")
    assert new.platform == old.platform and new.ranks_per_host == old.ranks_per_host
    assert new.iprobe_reports == old.iprobe_reports
    assert new.config(250000) == old.config(250000)
    assert new.model != old.model


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_predict_says_which_machine_state_a_preset_describes(name):
    """Two presets describe one cluster in two states: `predict --preset` names the state on
    stderr, and --json's stdout stays one JSON document."""
    n, grid = (2000, ["-P", "2", "-Q", "2"]) if name != "stampede" else (4096, ["-P", "1", "-Q", "2"])
    out = run_cli("predict", "--preset", name, "-N", str(n), *grid, "--seed", "1", "--json")
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stderr.splitlines() if ln.startswith(f"hplsim: preset {name}: "))
    assert line.removeprefix(f"hplsim: preset {name}: ") == get_preset(name).machine_state
    doc = json.loads(out.stdout)
    assert doc[0]["platform"] == f"builtin:{name}" and doc[0]["gflops"] > 0
