"""hplsim predict on real simulations: every algorithm variant runs, results are
reproducible, the physics is right, and bad input is refused cleanly."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from hplsim.emulate import memory
from hplsim.errors import HplsimError
from hplsim.hpl.build import EMULATED, hpl_binary, preload_library
from hplsim.hpl.config import HplConfig
from hplsim.models.modelfile import KernelModel, ModelFile, HostModel, Polynomial, load_model, save_model
from hplsim.platform.spec import load_platform, spec_from_dict
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT, get_preset
from helpers import assert_one_line_error, run_cli



def star(nodes: int, **network) -> dict:
    return {"format": "hplsim-platform", "nodes": nodes, "cores_per_node": 1,
            "network": {"bandwidth": "12.5GBps", "latency": "1us", **network}}


@pytest.fixture(scope="module")
def dahu_model() -> ModelSource:
    return ModelSource.from_path(DEFAULT.model, "builtin:dahu")


def linear_dgemm_model(rate_flops: float) -> ModelFile:
    """dgemm only: 2·m·n·k flops at `rate_flops`; every other kernel costs nothing."""
    mean = Polynomial.from_mapping(("m", "n", "k"), {"mnk": 2.0 / rate_flops})
    return ModelFile(default=HostModel(kernels={"dgemm": KernelModel("dgemm", mean)}))


def source(model: ModelFile, tmp_path: Path, name: str = "model.yaml") -> ModelSource:
    path = tmp_path / name
    save_model(model, path)
    return ModelSource.from_path(path)


# ----------------------------------------------------------------- every variant completes

VARIANTS = [dict(bcast=b, swap=s, depth=d) for b, s, d in itertools.product(range(6), range(3), range(2))]
VARIANTS += [dict(pfact=pf, rfact=rf) for pf, rf in itertools.product(range(3), range(3))]


# 4 x 4 by default, where every broadcast is a real ring or tree; 2 x 2 (a broadcast reaches
# one other process: each variant's degenerate case) with -m slow
@pytest.mark.parametrize("grid", [pytest.param((2, 2), marks=pytest.mark.slow), (4, 4)])
def test_every_algorithm_variant_completes(grid, dahu_model, tmp_path):
    platform = spec_from_dict(star(16)).platform()
    p, q = grid
    # N = 600, NB = 32: 19 panels, the last one partial, dealt unevenly over 2 or 4 process
    # rows and columns (several panels each: the look-ahead has a next one); every process
    # column starts with more than 64 columns and ends with fewer, so SWAP 2 takes both of
    # its branches. (A simulation of 16 ranks costs mostly its start: N = 1,200 took 60 %
    # more CPU for the same paths.)
    configs = [HplConfig(n=600, nb=32, p=p, q=q, swap_threshold=64, **variant) for variant in VARIANTS]
    # one simulation per core at a time (each is one single-threaded process): the same runs, sooner
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda c: predict(c, platform, dahu_model, seed=3, timeout=120), configs))
    for variant, config, result in zip(VARIANTS, configs, results):
        assert math.isfinite(result.gflops) and result.gflops > 0, variant
        assert result.time_s > 0
        # the time HPL reports and the Gflops it derives agree
        n = config.n
        assert result.gflops == pytest.approx((2 / 3 * n**3 + 1.5 * n**2) / result.time_s / 1e9, rel=1e-9)


# ----------------------------------------------------------------------- reproducibility


def test_same_seed_same_bits_other_seed_differs(dahu_model):
    platform = spec_from_dict(star(4)).platform()
    config = HplConfig(n=3000, nb=64, p=2, q=2)
    a = predict(config, platform, dahu_model, seed=11)
    b = predict(config, platform, dahu_model, seed=11)
    c = predict(config, platform, dahu_model, seed=12)
    assert (a.time_s, a.gflops) == (b.time_s, b.gflops)
    assert a.time_s != c.time_s


def test_preloaded_libraries_change_no_simulated_time(dahu_model, monkeypatch):
    """The libraries preloaded into the simulation (emulate.preloads: the free thread clock
    of csrc/sim-preload, jemalloc) only make it faster: the prediction is the same to the bit
    with SMPI's real clock and with glibc's allocator."""
    import hplsim.emulate.smpirun as smpirun
    from hplsim.emulate.preloads import allocator

    assert allocator() == "libjemalloc.so.2"  # ./bootstrap installs libjemalloc2
    seen: list[str] = []
    real_popen = smpirun.popen

    def recording_popen(*args, **kwargs):
        seen.append(kwargs["env"].get("LD_PRELOAD", ""))
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(smpirun, "popen", recording_popen)
    platform = spec_from_dict(star(16)).platform()
    config = HplConfig(n=5000, nb=64, p=4, q=4, bcast=1, depth=1)
    fast = predict(config, platform, dahu_model, seed=3)
    monkeypatch.setenv("HPLSIM_THREAD_CLOCK", "real")
    real_clock = predict(config, platform, dahu_model, seed=3)
    monkeypatch.setenv("HPLSIM_ALLOCATOR", "glibc")
    neither = predict(config, platform, dahu_model, seed=3)
    assert (fast.time_s, fast.gflops) == (real_clock.time_s, real_clock.gflops) == (neither.time_s, neither.gflops)
    assert [s.split() for s in seen] == [[str(preload_library(hpl_binary(EMULATED, quiet=True))), "libjemalloc.so.2"],
                                         ["libjemalloc.so.2"], []]


def test_preloaded_thread_clock_reads_zero_and_leaves_other_clocks(tmp_path):
    lib = preload_library(hpl_binary(EMULATED, quiet=True))
    code = ("import time\n"
            "t = time.monotonic_ns(); x = sum(range(3_000_000))\n"
            "print(time.thread_time_ns(), time.monotonic_ns() - t, time.process_time_ns() > 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"LD_PRELOAD": str(lib), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    thread_ns, elapsed_ns, process_ok = out.stdout.split()
    assert int(thread_ns) == 0 and int(elapsed_ns) > 0 and process_ok == "True"


def test_noise_free_model_ignores_seed(tmp_path):
    platform = spec_from_dict(star(4)).platform()
    model = source(linear_dgemm_model(20e9), tmp_path)
    config = HplConfig(n=2000, nb=64, p=2, q=2)
    a = predict(config, platform, model, seed=1)
    b = predict(config, platform, model, seed=2)
    # pivots still move with the seed, but with nothing but dgemm costing time and a
    # network the same for every row, the time may differ only through pivot traffic
    assert a.time_s == pytest.approx(b.time_s, rel=0.02)


# -------------------------------------------------------------------------------- physics


def test_ideal_network_approaches_the_dgemm_bound(tmp_path):
    rate = 10e9
    fast = star(4, bandwidth="1e15Bps", latency="0s", loopback_bandwidth="1e15Bps", loopback_latency="0s")
    fast["smpi"] = {"smpi/bw-factor": "0:1", "smpi/lat-factor": "0:1"}
    platform = spec_from_dict(fast).platform()
    model = source(linear_dgemm_model(rate), tmp_path)
    n, p, q = 20000, 2, 2
    result = predict(HplConfig(n=n, nb=128, p=p, q=q), platform, model)
    ideal = (2 / 3 * n**3) / (p * q * rate)
    assert result.time_s >= ideal
    assert result.time_s <= 1.10 * ideal, (result.time_s, ideal)


def test_slower_network_never_helps_and_faster_dgemm_does(tmp_path, dahu_model):
    config = HplConfig(n=4000, nb=64, p=2, q=4)
    base = spec_from_dict(star(8)).platform()
    slow = spec_from_dict(star(8, bandwidth="1.25GBps", latency="10us")).platform()
    g_base = predict(config, base, dahu_model, seed=5).gflops
    g_slow = predict(config, slow, dahu_model, seed=5).gflops
    assert g_slow <= g_base

    model = load_model(DEFAULT.model)
    dgemm = model.default.kernels["dgemm"]
    half = {k: v / 2 for k, v in dgemm.mean.to_mapping().items()}
    faster = ModelFile(default=HostModel(kernels={
        **model.default.kernels,
        "dgemm": KernelModel("dgemm", Polynomial.from_mapping(("m", "n", "k"), half)),
    }))
    slower = ModelFile(default=HostModel(kernels={
        **model.default.kernels,
        "dgemm": KernelModel("dgemm", dgemm.mean),
    }))
    g_1x = predict(config, base, source(slower, tmp_path, "a.yaml"), seed=5).gflops
    g_2x = predict(config, base, source(faster, tmp_path, "b.yaml"), seed=5).gflops
    assert g_2x > g_1x


# ------------------------------------------------------------------- CLI and bad input


def test_cli_json_interface(tmp_path):
    out = run_cli("predict", "-N", "4000", "--nb", "64", "-P", "2", "-Q", "2", "--bcast", "1",
                  "--depth", "1", "--seed", "7", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert isinstance(doc, list) and len(doc) == 1
    row = doc[0]
    for key in ("n", "nb", "p", "q", "pfact", "rfact", "bcast", "depth", "swap", "seed", "gflops",
                "time_s", "sim_wall_s", "sim_memory_bytes"):
        assert key in row
    assert (row["n"], row["nb"], row["p"], row["q"], row["bcast"], row["depth"], row["seed"]) == (
        4000, 64, 2, 2, 1, 1, 7)
    assert row["gflops"] > 0 and row["sim_memory_bytes"] > 0 and row["sim_wall_s"] > 0


def test_cli_hpl_dat_lists_give_one_result_per_combination(tmp_path):
    from hplsim.hpl.config import HplParams
    from hplsim.hpl.hpldat import write_hpl_dat

    write_hpl_dat(HplParams(ns=(1000, 1500), nbs=(32,), grids=((1, 2), (2, 1)), bcasts=(0, 1)), tmp_path / "HPL.dat")
    out = run_cli("predict", "--hpl-dat", tmp_path / "HPL.dat", "--json", "-o", tmp_path / "r.json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert len(doc) == 8
    assert {(r["n"], r["p"], r["q"], r["bcast"]) for r in doc} == {
        (n, p, q, b) for n in (1000, 1500) for p, q in ((1, 2), (2, 1)) for b in (0, 1)}
    assert json.loads((tmp_path / "r.json").read_text()) == doc


def _assert_clean_error(out, fragment: str) -> None:
    assert_one_line_error(out, "(?i)" + re.escape(fragment), code=None)


def test_bad_inputs_are_refused_in_one_line(tmp_path):
    spec = tmp_path / "small.yaml"
    spec.write_text(yaml.safe_dump(star(2)))
    bad_dat = tmp_path / "bad.dat"
    bad_dat.write_text("HPL\nx\nout\n6\n1\n1000\n1\nabc\n")
    unknown_bcast = tmp_path / "bcast.dat"
    from hplsim.hpl.config import HplParams
    from hplsim.hpl.hpldat import format_hpl_dat

    unknown_bcast.write_text(format_hpl_dat(HplParams(ns=(1000,), nbs=(32,))).replace(
        "1            BCASTs", "7            BCASTs"))

    model = yaml.safe_load(Path(DEFAULT.model).read_text())
    missing = dict(model)
    missing["default"] = {"kernels": {"dgemm": {"noise": {"family": "none"}}}}
    negative = yaml.safe_load(Path(DEFAULT.model).read_text())
    negative["default"]["kernels"]["dgemm"]["mean"]["mnk"] = -1e-11
    text = yaml.safe_load(Path(DEFAULT.model).read_text())
    text["default"]["kernels"]["dgemm"]["mean"]["mnk"] = "fast"
    hostless = {"format": "hplsim-model", "version": 1,
                "hosts": {"node-0": {"kernels": {"dgemm": {"mean": {"mnk": 1e-10}}}}}}
    files = {}
    for name, doc in (("missing", missing), ("negative", negative), ("text", text), ("hostless", hostless)):
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(doc))

    base = ["predict", "--nb", "32", "-o", tmp_path / "out.json"]
    cases = [
        ([*base, "-N", "1000", "-P", "2", "-Q", "2", "--platform", spec], "only 2 rank slots"),
        ([*base, "-N", "100", "--nb", "200", "-P", "1", "-Q", "1"], "NB (200) must not exceed N"),
        ([*base, "-N", "0", "-P", "1", "-Q", "1"], "N must be"),
        ([*base, "-N", "-5", "-P", "1", "-Q", "1"], "N must be"),
        (["predict", "--hpl-dat", bad_dat, "-o", tmp_path / "out.json"], "malformed HPL.dat"),
        (["predict", "--hpl-dat", unknown_bcast, "-o", tmp_path / "out.json"], "unknown BCAST code 7"),
        ([*base, "-N", "1000", "--bcast", "9"], "BCAST"),
        ([*base, "-N", "1000", "--model", files["missing"]], "default.kernels.dgemm.mean: expected a mapping of term"),
        ([*base, "-N", "1000", "--model", files["negative"]], "default.kernels.dgemm.mean.mnk: expected a coefficient >= 0"),
        ([*base, "-N", "1000", "--model", files["text"]], "default.kernels.dgemm.mean.mnk: expected a finite number, got 'fast'"),
        ([*base, "-N", "1000", "-P", "1", "-Q", "2", "--platform", spec, "--model", files["hostless"]],
         "not in the model file"),
        ([*base, "-N", "1000", "--platform", tmp_path / "nope.yaml"], "cannot read platform file"),
        ([*base, "-N", "1000", "--model", tmp_path / "nope.yaml"], "cannot read model file"),
    ]
    for args, fragment in cases:
        out = run_cli(*args)
        _assert_clean_error(out, fragment)
        assert not (tmp_path / "out.json").exists(), args


def test_a_simulation_over_its_time_limit_is_killed(tmp_path):
    # 8x8 at N = 60,000 takes seconds (3.4 s at N = 50,000 on the star, E67), 4x4 at
    # N = 12,000 no longer did since the modelled pivot exchange (0.4 s)
    out = run_cli("predict", "-N", "60000", "--nb", "64", "-P", "8", "-Q", "8", "--timeout", "0.5",
                  "-o", tmp_path / "out.json")
    _assert_clean_error(out, "did not finish within 0.5 s")
    assert not (tmp_path / "out.json").exists()


def test_breakdown_splits_each_ranks_time(tmp_path, dahu_model):
    """The breakdown against references it does not compute itself: the dgemm seconds of a
    linear dgemm law are HPL's dgemm flops over the rate (LU's 2/3 N³, less the panels'
    share that dtrsm and the level-2 kernels do); a rank's modelled compute does not depend
    on the network, so a slower network moves only the time outside the kernels; a single
    rank waits for no one, so its whole time is compute."""
    n, nb, rate = 3000, 64, 10e9
    linear = source(linear_dgemm_model(rate), tmp_path)
    one = predict(HplConfig(n=n, nb=nb, p=1, q=1), spec_from_dict(star(1)).platform(), linear, seed=2,
                  breakdown=True)
    b = one.breakdown
    assert b["ranks"] == 1 and {k for k, v in b["kernels"].items() if v["seconds"] > 0} == {"dgemm"}
    dgemm_flops = b["kernels"]["dgemm"]["seconds"] * rate  # the law: 2·m·n·k flops at `rate`
    # LU of HPL's N x (N+1) matrix: 2/3 N³ + N² flops, of which the panels' level-2 work and
    # the solves with each panel's NB x NB triangle (about N²·NB in all) are not dgemm's
    lu = 2 / 3 * n**3 + n**2
    assert lu - n**2 * nb <= dgemm_flops <= lu, dgemm_flops / lu
    assert b["compute_s"]["max"] == pytest.approx(one.time_s, rel=1e-6)
    assert b["mpi_s"]["max"] == pytest.approx(0, abs=1e-6 * one.time_s)

    config = HplConfig(n=n, nb=nb, p=2, q=2)
    fast = predict(config, spec_from_dict(star(4)).platform(), linear, seed=2, breakdown=True)
    slow = predict(config, spec_from_dict(star(4, bandwidth="125MBps", latency="100us")).platform(), linear,
                   seed=2, breakdown=True)
    assert fast.breakdown["ranks"] == 4
    # the same flops on any network (not the same calls: while a message is awaited HPL
    # updates in chunks between its probes); over four ranks they add up to LU's dgemm flops
    dgemm = [r.breakdown["kernels"]["dgemm"] for r in (fast, slow)]
    assert dgemm[0]["seconds"] == pytest.approx(dgemm[1]["seconds"], rel=1e-9)
    assert lu - n**2 * nb <= dgemm[0]["seconds"] * rate <= lu
    assert slow.time_s > 1.2 * fast.time_s
    grew = slow.breakdown["mpi_s"]["min"] - fast.breakdown["mpi_s"]["min"]
    assert 0.5 * (slow.time_s - fast.time_s) < grew <= slow.time_s - fast.time_s + 1e-9
    with_dahu = predict(config, spec_from_dict(star(4)).platform(), dahu_model, seed=2, breakdown=True)
    assert next(iter(with_dahu.breakdown["kernels"])) == "dgemm"  # sorted by time, dgemm dominates LU
    assert with_dahu.breakdown["kernels"]["idamax"]["calls"] > 0
    same = predict(config, spec_from_dict(star(4)).platform(), dahu_model, seed=2)
    assert same.time_s == with_dahu.time_s  # asking for the breakdown does not change the run


def test_a_run_over_the_mapping_limit_is_refused_before_it_starts(monkeypatch, dahu_model):
    """The matrix and the panels cost a few mappings per rank whatever N: Dahu at
    N=500,000 (1,024 ranks) fits under Linux's default limit; 6,006 ranks (Stampede's
    grid) do not, and are refused up front with the sysctl to run and the kernel memory
    the mappings cost."""
    dahu = get_preset("dahu")
    huge = {"smpi/shared-malloc-blocksize": str(memory.HUGE_PAGE)}
    monkeypatch.setattr(memory, "max_map_count", lambda: 65530)
    memory.check_mapping_budget(dahu.config(500000), huge)
    stampede = HplConfig(n=3875000, nb=1024, p=77, q=78, bcast=5, depth=0)
    with pytest.raises(HplsimError, match=r"N=3875000 on 77x78 needs about 18\d,\d{3} memory mappings .*"
                                          r"\(about 4\d MB of kernel memory\).*"
                                          r"vm\.max_map_count = 65,530\): raise it \(sysctl -w vm\.max_map_count=\d+\)"):
        memory.check_mapping_budget(stampede, huge)
    monkeypatch.setattr(memory, "max_map_count", lambda: 1048576)
    memory.check_mapping_budget(stampede, huge)

    # predict checks it before launching anything: a tiny limit refuses even a small run
    monkeypatch.setattr(memory, "max_map_count", lambda: 50)
    with pytest.raises(HplsimError, match="memory mappings"):
        predict(HplConfig(n=2000, nb=64, p=2, q=2), load_platform(dahu.platform, dahu.ranks_per_host), dahu_model)


def test_folded_buffers_still_need_addresses():
    """Folding costs no memory, but every rank's matrix is an address range of the one
    simulation process (128 TiB of user space): Stampede's TOP500 run (N = 3,875,000,
    114 TiB) fits, N = 4,200,000 on the same grid does not and is refused up front."""
    huge = {"smpi/shared-malloc-blocksize": str(memory.HUGE_PAGE)}
    stampede = HplConfig(n=3875000, nb=1024, p=77, q=78, bcast=5, depth=0)
    assert 2**40 * 110 < memory.virtual_bytes(stampede) < memory.ADDRESS_MARGIN * memory.ADDRESS_SPACE
    memory.check_mapping_budget(stampede, huge)
    with pytest.raises(HplsimError, match=r"N=4200000 on 77x78 is beyond what memory folding can serve on this "
                                          r"machine: .* TiB of addresses"):
        memory.check_mapping_budget(HplConfig(n=4200000, nb=1024, p=77, q=78, bcast=5, depth=0), huge)
