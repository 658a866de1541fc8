"""HPL's own per-phase times (`hplsim predict --phases`, HPL_DETAILED_TIMING): the timers
read the simulated clock after the rank's pending compute, the timing build simulates the
same run, and the reader takes HPL's lines as HPL prints them."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hplsim.hpl.config import HplConfig
from hplsim.errors import HplsimError
from hplsim.hpl.output import PHASES, expect_phases, parse_phases
from hplsim.models.modelfile import HostModel, KernelModel, ModelFile, Polynomial, save_model
from hplsim.platform.spec import load_platform, spec_from_dict
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT
from helpers import require_tools, run_cli

REPO = Path(__file__).resolve().parents[1]

# HPL prints each phase with two decimals
ROUNDING = 0.005
# SimGrid 3.32 charges each MPI_Wtime 10 ns unless the platform says otherwise (its
# smpi/wtime flag's default), and settles events to its timing precision (precision/timing
# 1e-9 s): the two runs below can differ by a few of those.
SIMGRID_WTIME_DEFAULT = 1e-8
SIMGRID_TIMING_PRECISION = 1e-9

# What HPL 2.0's HPL_pdtest prints after a test built with -DHPL_DETAILED_TIMING: a block per
# test, a phase that took no time left out (here pfact of the second test).
HPL_TEXT = """\
WR11C2R4        2000   128     1     2               0.23              2.327e+01
--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV-
Max aggregated wall time rfact . . . :               0.69
+ Max aggregated wall time pfact . . :               0.65
+ Max aggregated wall time mxswp . . :               0.53
Max aggregated wall time update  . . :              20.00
+ Max aggregated wall time laswp . . :               2.62
Max aggregated wall time up tr sv  . :               0.12
================================================================================
WR11C2R4        4000   128     1     2               1.50              2.845e+01
--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV--VVV-
Max aggregated wall time rfact . . . :               1.25
+ Max aggregated wall time mxswp . . :               0.02
Max aggregated wall time update  . . :              12.00
"""


def test_reader_takes_each_tests_block_in_order():
    blocks = parse_phases(HPL_TEXT)
    assert blocks == [
        {"rfact": 0.69, "pfact": 0.65, "mxswp": 0.53, "update": 20.0, "laswp": 2.62, "up_tr_sv": 0.12},
        {"rfact": 1.25, "pfact": 0.0, "mxswp": 0.02, "update": 12.0, "laswp": 0.0, "up_tr_sv": 0.0},
    ]
    assert parse_phases("WR11C2R4 2000 128 1 2 0.23 2.327e+01\n") == []
    # a block whose phases all took no time: HPL prints its rule and no phase line
    rule = HPL_TEXT.splitlines()[1]
    assert parse_phases(f"{rule}\n{'=' * 80}\n") == [dict.fromkeys(PHASES, 0.0)]
    # a run's output must hold exactly one block: a plain build's holds none
    with pytest.raises(HplsimError, match="printed 2 blocks"):
        expect_phases(HPL_TEXT)
    with pytest.raises(HplsimError, match="printed 0 blocks"):
        expect_phases(HPL_TEXT.replace(rule, ""))


def dgemm_only(tmp_path, rate_flops: float) -> ModelSource:
    mean = Polynomial.from_mapping(("m", "n", "k"), {"mnk": 2.0 / rate_flops})
    path = tmp_path / "dgemm-only.yaml"
    save_model(ModelFile(default=HostModel(kernels={"dgemm": KernelModel("dgemm", mean)})), path)
    return ModelSource.from_path(path)


@pytest.mark.parametrize("depth", [0, 1])
def test_on_one_process_the_phases_are_the_whole_run(tmp_path, depth):
    """One process, dgemm the only kernel that costs: HPL's time is its panel factorizations,
    its updates and the solve, nothing else. A timer that read the clock before the rank's
    pending compute was injected would miss it and the sum would fall short."""
    platform = spec_from_dict({"nodes": 1, "cores_per_node": 1,
                               "network": {"bandwidth": "12.5GBps", "latency": "1us"}}).platform()
    config = HplConfig(n=4000, nb=64, p=1, q=1, depth=depth)
    p = predict(config, platform, dgemm_only(tmp_path, 1e10), seed=1, phases=True)
    ph = p.phases
    assert ph["update"] > 0.8 * p.time_s  # the trailing updates carry most of 2/3 N^3
    assert ph["rfact"] > 0  # the recursive factorization's own dgemm calls
    assert ph["rfact"] + ph["update"] + ph["up_tr_sv"] == pytest.approx(p.time_s, abs=3 * ROUNDING)
    # 2/3 N^3 + lower-order flops at the model's rate
    assert p.time_s == pytest.approx(2 / 3 * config.n ** 3 / 1e10, rel=0.02)


@pytest.fixture(scope="module")
def dahu_runs():
    """4 x 4 Dahu ranks, the spread-roll with look-ahead and a ring broadcast (issue 55's
    class): the plain build and the timing build."""
    platform = spec_from_dict({"nodes": 2, "cores_per_node": 8,
                               "network": {"bandwidth": "12.5GBps", "latency": "1us"}}).platform()
    model = ModelSource.from_path(DEFAULT.model, "builtin:dahu")
    config = HplConfig(n=12000, nb=128, p=4, q=4, bcast=2, depth=1, swap=1)
    return platform, predict(config, platform, model, seed=1), predict(config, platform, model, seed=1, phases=True)


def test_the_timing_build_simulates_the_same_run(dahu_runs):
    """The timers' MPI_Wtime calls are free (smpi/wtime 0 in the timing run): the two runs
    differ by the one charge HPL's own end-of-run reading pays on the platform."""
    platform, plain, timed = dahu_runs
    charge = float(platform.config.get("smpi/wtime", SIMGRID_WTIME_DEFAULT))
    assert plain.phases is None and set(timed.phases) == set(PHASES)
    assert plain.time_s - timed.time_s == pytest.approx(charge, abs=5 * SIMGRID_TIMING_PRECISION)


def test_phases_nest_as_hpl_times_them(dahu_runs):
    _, _, timed = dahu_runs
    ph = timed.phases
    assert 0 < ph["mxswp"] <= ph["pfact"] + ROUNDING  # the pivot exchanges are part of the panel's factorization
    assert ph["pfact"] <= ph["rfact"] + ROUNDING
    assert 0 < ph["laswp"] <= ph["update"] + ROUNDING  # the row swaps are part of the update
    for name in PHASES:
        assert ph[name] <= timed.time_s + ROUNDING


def test_cli_prints_and_writes_the_phases(tmp_path):
    out = run_cli("predict", "-N", "3000", "--nb", "64", "-P", "2", "-Q", "2", "--seed", "1", "--phases")
    assert out.returncode == 0, out.stderr
    assert "HPL's phases" in out.stdout and "+ laswp" in out.stdout
    out = run_cli("predict", "-N", "3000", "--nb", "64", "-P", "2", "-Q", "2", "--seed", "1", "--phases", "--json")
    doc = json.loads(out.stdout)[0]
    assert set(doc["phases"]) == set(PHASES) and doc["phases"]["update"] > 0


# ------------------------------------------------------------ against real runs (benchmarks/phases_vs_real.py)

REAL_CONFIG = HplConfig(n=1200, nb=64, p=1, q=2, depth=1)


@pytest.fixture(scope="module")
def real_phases(tmp_path_factory):
    from hplsim.real.run import run_real

    require_tools("mpirun", "mpicc")
    out = tmp_path_factory.mktemp("real") / "real.zip"
    run_real([REAL_CONFIG], out=out, repeat=2, phases=True)
    return out


def hand_model(tmp_path) -> Path:
    from hplsim.hpl.kernels import traced

    kernels = {k: {"mean": {"intercept": 1e-6}} for k in traced()}
    kernels["dgemm"] = {"mean": {"mnk": 2e-11}}
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump({"format": "hplsim-model", "version": 1, "default": {"kernels": kernels}}))
    return path


def test_the_benchmark_holds_each_phase_against_the_real_runs(real_phases, tmp_path):
    from hplsim.calibrate.archive import read_archive
    from hplsim.real.run import read_results
    from hplsim.validate.phases import phase_table

    spec = tmp_path / "p.yaml"
    spec.write_text(yaml.safe_dump({"nodes": 1, "cores_per_node": 2,
                                    "network": {"bandwidth": "10GBps", "latency": "1us"}}))
    model = hand_model(tmp_path)
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "phases_vs_real.py"), str(real_phases),
                        "--model", str(model), "--platform", str(spec), "--seed", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if "WR11C2R4 N=1200 NB=64 1x2" in line]
    assert [line.split()[4] for line in lines] == [*PHASES, "total"]
    # the figures are the archive's runs and the prediction, paired phase by phase
    real = read_results(real_phases, [REAL_CONFIG], 2)
    pred = predict(REAL_CONFIG, load_platform(spec), ModelSource.from_path(model), seed=1, phases=True)
    t = phase_table(real, [pred]).set_index("phase")
    assert t.loc["update", "real_s"] == statistics.median(run.phases["update"] for run in real[0].runs)
    assert t.loc["total", "emulated_s"] == pred.time_s
    assert t.loc["update", "emulated_s"] == pred.phases["update"]
    assert f"{t.loc['total', 'emulated_s']:.3f}".rstrip("0") in lines[-1]
    # an archive made without --phases is one error line
    plain = tmp_path / "plain.zip"
    from hplsim.real.run import run_real

    run_real([REAL_CONFIG], out=plain)
    assert read_archive(plain).status == "complete"
    bad = subprocess.run([sys.executable, str(REPO / "benchmarks" / "phases_vs_real.py"), str(plain),
                          "--model", str(model), "--platform", str(spec)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and bad.stderr.startswith("hplsim: error:") and "--phases" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
