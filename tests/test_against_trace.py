"""The split of a closed-loop error (validate/against_trace.py, benchmarks/trace_vs_model.py):
on a real traced run and on a simulated one, with a model whose totals are known by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from hplsim.emulate.trace import TraceRequest, read_trace
from hplsim.hpl.config import HplConfig
from hplsim.hpl.kernels import traced
from hplsim.models.modelfile import load_model
from hplsim.platform.spec import spec_from_dict
from hplsim.predict import ModelSource, predict
from hplsim.real.run import run_real
from hplsim.validate.against_trace import gaps, kernel_totals, modelled, rank_totals, read_traced, simulated_calls

REPO = Path(__file__).resolve().parents[1]
CONFIG = HplConfig(n=1200, nb=64, p=1, q=2, depth=1)
DGEMM_PER_FLOP = 2e-11  # the hand-made model: dgemm 2e-11 s per m·n·k, every other call 1 µs
OTHER_CALL = 1e-6


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("traced") / "t.zip"
    run_real([CONFIG], trace=True, out=out, repeat=2)
    return out


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    kernels = {k: {"mean": {"intercept": OTHER_CALL}} for k in traced()}
    kernels["dgemm"] = {"mean": {"mnk": DGEMM_PER_FLOP}}
    path = tmp_path_factory.mktemp("model") / "model.yaml"
    path.write_text(yaml.safe_dump({"format": "hplsim-model", "version": 1, "default": {"kernels": kernels}}))
    return path


def test_the_model_prices_the_very_calls_of_the_real_run(traced_run, model_path):
    real = read_traced(traced_run)
    real.calls["model"] = modelled(real.calls, load_model(model_path))
    dgemm = real.calls["function"] == "dgemm"
    assert dgemm.sum() > 10 and (~dgemm).sum() > 100
    d = real.calls[dgemm]
    np.testing.assert_allclose(real.calls.loc[dgemm, "model"].sum(), DGEMM_PER_FLOP * (d.m * d.n * d.k).sum(), rtol=1e-12)
    np.testing.assert_allclose(real.calls.loc[~dgemm, "model"], OTHER_CALL, rtol=1e-12)
    kt = kernel_totals(real.calls, ["run"])
    assert set(kt["run"]) == {0, 1}
    assert kt["calls"].sum() == len(real.calls)
    row = kt[(kt.run == 0) & (kt.function == "dgemm")].iloc[0]
    assert row.error_pct == pytest.approx(100 * (row.model / row.measured - 1))


def test_calls_and_the_time_between_them_tile_each_ranks_region(traced_run, model_path):
    real = read_traced(traced_run)
    real.calls["model"] = modelled(real.calls, load_model(model_path))
    totals = rank_totals(real.calls, real.regions)
    assert len(totals) == 4  # 2 runs x 2 ranks
    assert (totals["between"] > 0).all() and (totals["between"] < totals["region"]).all()
    g = gaps(real.calls, real.regions).groupby(["run", "rank"])["seconds"].sum()
    np.testing.assert_allclose(g.to_numpy(), totals.set_index(["run", "rank"]).loc[g.index, "between"], atol=1e-9)
    # the real run's clock never runs backwards between two calls of one rank
    assert gaps(real.calls, real.regions)["seconds"].min() >= -1e-9


def test_a_simulated_trace_reads_the_same_way(model_path, tmp_path):
    platform = spec_from_dict({"nodes": 1, "cores_per_node": 2,
                               "network": {"bandwidth": "10GBps", "latency": "1us"}}).platform()
    source = ModelSource.from_path(model_path)
    pred = predict(CONFIG, platform, source, seed=1, trace=TraceRequest(tmp_path / "tr"))
    trace = read_trace(tmp_path / "tr")
    calls, regions = simulated_calls(trace.events, trace.meta)
    totals = rank_totals(calls, regions)
    assert totals["region"].max() == pytest.approx(pred.time_s, rel=1e-9)
    # the emulation's calls last what the model says (no noise in this model)
    dgemm = trace.events[(trace.events.kind == "kernel") & (trace.events.name == "dgemm")]
    np.testing.assert_allclose((dgemm.end_s - dgemm.start_s).sum(),
                               DGEMM_PER_FLOP * (dgemm.m.astype(float) * dgemm.n * dgemm.k).sum(), rtol=1e-6)
    g = gaps(calls, regions).groupby("rank")["seconds"].sum()
    np.testing.assert_allclose(g.to_numpy(), totals["between"].to_numpy(), atol=1e-9)


def test_the_benchmark_prints_both_sides(traced_run, model_path, tmp_path):
    spec = tmp_path / "p.yaml"
    spec.write_text(yaml.safe_dump({"nodes": 1, "cores_per_node": 2,
                                    "network": {"bandwidth": "10GBps", "latency": "1us"}}))
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "trace_vs_model.py"), str(traced_run),
                        "--model", str(model_path), "--platform", str(spec)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "real runs (s)" in r.stdout and "predictions (s)" in r.stdout
    assert "N=1200 NB=64 1x2 d1 b1: " in r.stdout and "real - predicted" in r.stdout
    bad = subprocess.run([sys.executable, str(REPO / "benchmarks" / "trace_vs_model.py"), str(model_path),
                          "--model", str(model_path)], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and bad.stderr.startswith("hplsim: error:") and "Traceback" not in bad.stderr
