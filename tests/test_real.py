"""hplsim run-real: the real HPL on this machine — result, archive, HPL's output read back,
failures as errors (crash, FAILED residual), bad input refused before anything runs."""

from __future__ import annotations

import json
import statistics
import textwrap
import time
from pathlib import Path

import pytest

from helpers import assert_one_line_error, require_tools, run_cli, system_dgemm_gflops
from hplsim.calibrate.archive import read_archive
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.hpl.output import parse_hpl_output
from hplsim.real.run import Launch, RealRunError, available_cores, check_configs, read_results, run_real

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _openmpi():
    """OpenMPI is part of the README's set-up: without it these tests fail, naming it."""
    require_tools("mpirun", "mpicc")


two_cores = pytest.mark.skipif(len(available_cores()) < 2, reason="needs 2 cores")


# ------------------------------------------------------------------ the acceptance interface


@two_cores
@pytest.mark.exclusive  # its Gflops against this machine's dgemm
def test_run_real_n2000_passes_with_plausible_gflops(tmp_path):
    r = run_cli("run-real", "-N", 2000, "--nb", 64, "-P", 1, "-Q", 2, "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    obj = doc[0] if isinstance(doc, list) else doc
    if isinstance(doc, list):
        assert len(doc) == 1
    assert obj["residual_check"] == "PASSED"
    assert obj["time_s"] > 0
    rate = system_dgemm_gflops(1500)
    # HPL at N = 2000 on 2 ranks: well below 2 x dgemm's rate, but not absurdly so (shared machine)
    assert 0.1 * 2 * rate <= obj["gflops"] <= 2 * 2 * rate, (obj["gflops"], rate)
    # HPL's own definition: Gflops = (2/3 N^3 + 3/2 N^2) / time. HPL prints the time with 2 decimals
    # (here ~0.1 s, so rounding alone moves it by up to 5 %) and the rate with 4 significant digits:
    # the rate must lie in the interval the rounded time allows.
    flops = 2 / 3 * 2000**3 + 1.5 * 2000**2
    t = obj["time_s"]
    low, high = flops / (t + 0.005) / 1e9, flops / max(t - 0.005, 1e-9) / 1e9
    assert low * (1 - 1e-3) <= obj["gflops"] <= high * (1 + 1e-3), (obj["gflops"], t, low, high)
    assert (obj["n"], obj["nb"], obj["p"], obj["q"]) == (2000, 64, 1, 2)


@two_cores
def test_run_real_repeat_archive(tmp_path):
    out = tmp_path / "real.zip"
    r = run_cli("run-real", "-N", 1000, "--nb", "32,64", "-P", 1, "-Q", 2, "--repeat", 2, "--out", out,
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "WR11C2R4" in r.stdout and "PASSED" in r.stdout
    a = read_archive(out)
    assert a.kind == "hpl" and a.status == "complete"
    table = a.table("hpl")
    assert len(table) == 4
    assert set(table["nb"]) == {32, 64} and set(table["repetition"]) == {0, 1}
    assert (table["residual_check"] == "PASSED").all()
    assert list(table["order"]) == [0, 1, 2, 3]
    assert any(name.startswith("runs/") for name in a.names)
    assert "HPL.dat" in a.names and "environment.json" in a.names
    assert a.metadata["run"]["launcher"] == "local"
    assert "--bind-to" in a.metadata["run"]["argv_example"]
    assert a.log and a.log[0]["argv"][0] == "mpirun"
    # the archive's reader (validate --reuse) gives back every run, and nothing for more
    # repetitions or another configuration than it holds
    configs = [HplConfig(n=1000, nb=nb, p=1, q=2) for nb in (32, 64)]
    results = read_results(out, configs, 2)
    assert results is not None and [len(res.runs) for res in results] == [2, 2]
    by_order = table.set_index("order")
    for res in results:
        for run in res.runs:
            assert run.config == res.config and by_order.loc[run.order, "nb"] == res.config.nb
            assert run.gflops == by_order.loc[run.order, "gflops"] and run.residual_check == "PASSED"
    assert read_results(out, configs, 3) is None
    assert read_results(out, [HplConfig(n=1000, nb=128, p=1, q=2)], 1) is None


@two_cores
def test_run_real_probe_columns(tmp_path):
    """--probe from the command line: a probe before the first run and after each, a chain
    (one run's after is the next one's before), in the archive and the JSON alike (their
    rates against an independent dgemm: the slow test below)."""
    r = run_cli("run-real", "-N", 400, "--nb", 32, "-P", 1, "-Q", 2, "--repeat", 2, "--probe", "--out",
                tmp_path / "p.zip", "--json", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    a = read_archive(tmp_path / "p.zip")
    t = a.table("hpl").sort_values("order")
    before, after = t["probe_before_gflops"].to_numpy(), t["probe_after_gflops"].to_numpy()
    assert len(t) == 2 and before[1] == after[0] and (before > 0).all() and (after > 0).all()
    assert a.metadata["probe"]["cores"] == available_cores()[:2]
    assert [x["probe_after_gflops"] for x in json.loads(r.stdout)[0]["runs"]] == list(after)


# slow: a measurement of this machine, run alone (the other worker waits); the probe's
# columns and their chain are also checked by test_validate.py's closed loop
@two_cores
@pytest.mark.slow
@pytest.mark.exclusive  # its probes against this machine's dgemm
def test_run_real_probe_brackets_every_run(tmp_path):
    """--probe measures the machine's dgemm speed before the first run and after each: a
    chain (one run's after is the next one's before), at a rate an independent dgemm
    (the linked OpenBLAS's, one core, measured just before and just after: the shared machine's speed
    moves with its load) confirms; without --probe the columns stay empty."""
    out = tmp_path / "real.zip"
    reference = [system_dgemm_gflops(1500)]
    r = run_cli("run-real", "-N", 1000, "--nb", 64, "-P", 1, "-Q", 2, "--repeat", 3, "--probe", "--out", out,
                "--json", "-q", cwd=tmp_path)
    reference.append(system_dgemm_gflops(1500))
    assert r.returncode == 0, r.stderr
    a = read_archive(out)
    t = a.table("hpl").sort_values("order")
    before, after = t["probe_before_gflops"].to_numpy(), t["probe_after_gflops"].to_numpy()
    assert len(t) == 3 and list(before[1:]) == list(after[:-1])
    probes = [*before, after[-1]]
    assert all(0.4 * min(reference) < x < 1.3 * max(reference) for x in probes), (probes, reference)
    assert a.metadata["probe"]["cores"] == available_cores()[:2] and a.metadata["probe"]["k"] == 128
    runs = json.loads(r.stdout)[0]["runs"]
    assert [x["probe_after_gflops"] for x in runs] == list(after)

    plain = tmp_path / "plain.zip"
    assert run_cli("run-real", "-N", 600, "--nb", 32, "-P", 1, "-Q", 2, "--out", plain, cwd=tmp_path).returncode == 0
    p = read_archive(plain)
    assert p.table("hpl")["probe_before_gflops"].isna().all() and p.metadata["probe"] is None


def test_run_real_calls_between_rounds_after_each_round_but_the_last(tmp_path):
    """validate measures its calibration between the rounds of repetitions: the hook sees
    every run of round r finished and none of round r + 1 started."""
    seen: list[tuple[int, float]] = []
    configs = [HplConfig(n=400, nb=32), HplConfig(n=500, nb=32)]
    done = run_real(configs, repeat=3, shuffle=True, seed=3, out=tmp_path / "r.zip",
                    between_rounds=lambda r: seen.append((r, time.time())))
    assert [r for r, _ in seen] == [0, 1]
    runs = sorted((run for res in done.results for run in res.runs), key=lambda x: x.order)
    for r, t in seen:
        assert all(x.start + x.wall_s <= t for x in runs if x.repetition <= r)
        assert all(x.start >= t for x in runs if x.repetition > r)


def test_min_seconds_repeats_short_configurations_in_the_later_rounds(tmp_path):
    """A configuration whose first run is short runs again until its runs add up to
    --min-seconds of HPL time (capped at 3 x --repeat), the extra runs in rounds 2 … R;
    the round's hook still sees every run of round r finished before r + 1 starts."""
    seen: list[tuple[int, float]] = []
    configs = [HplConfig(n=400, nb=32), HplConfig(n=500, nb=32)]
    done = run_real(configs, repeat=2, shuffle=True, seed=1, out=tmp_path / "r.zip", min_seconds=3600,
                    between_rounds=lambda r: seen.append((r, time.time())))
    runs = sorted((run for res in done.results for run in res.runs), key=lambda x: x.order)
    assert [len(res.runs) for res in done.results] == [6, 6]  # 3 x --repeat: N = 400 takes milliseconds
    assert [sum(x.repetition == r for x in runs) for r in range(2)] == [2, 10]
    assert [x.order for x in runs] == list(range(12))
    assert len(seen) == 1
    for r, t in seen:
        assert all(x.start + x.wall_s <= t for x in runs if x.repetition <= r)
        assert all(x.start >= t for x in runs if x.repetition > r)
    meta = read_archive(tmp_path / "r.zip").metadata
    assert meta["counts"] == {"planned": 12, "measured": 12} and meta["hpl"]["min_seconds"] == 3600
    # a configuration long enough keeps --repeat runs; 0 asks for exactly --repeat
    plain = run_real(configs, repeat=1, min_seconds=0)
    assert [len(res.runs) for res in plain.results] == [1, 1]
    assert_one_line_error(run_cli("run-real", "-N", 400, "--min-seconds", -1, cwd=tmp_path), "--min-seconds")


def test_extra_runs_are_spread_evenly_over_the_later_rounds():
    from hplsim.real.run import _spread_extra_runs

    per_round = [[1, 1, 1, 1] for _ in range(5)]
    planned = _spread_extra_runs(per_round, [1.1, 7.7, 24.0, 0.001], min_seconds=10)
    totals = [sum(r[i] for r in per_round) for i in range(4)]
    assert totals == [10, 5, 5, 15] and planned == 35  # ceil(10 / 1.1); at least 5; 5; at most 15
    assert per_round[0] == [1, 1, 1, 1]  # the first round measured the times
    for i in range(4):  # evenly: the later rounds' counts differ by one at most
        later = [r[i] for r in per_round[1:]]
        assert max(later) - min(later) <= 1 and min(later) >= 1, (i, later)
    one = [[1, 1]]
    assert _spread_extra_runs(one, [0.5, 0.5], 10) == 2  # one round: no later round to put them in


@two_cores
def test_run_real_probe_is_local_only(tmp_path):
    (tmp_path / "hosts").write_text("localhost slots=2\n")
    assert_one_line_error(run_cli("run-real", "-N", 600, "--nb", 32, "-P", 1, "-Q", 2, "--hostfile", "hosts",
                                  "--probe", cwd=tmp_path), "--probe runs on this host only")


@two_cores
def test_run_real_reads_an_hpl_dat_and_threshold(tmp_path):
    from hplsim.hpl.config import HplParams
    from hplsim.hpl.hpldat import write_hpl_dat

    write_hpl_dat(HplParams(ns=(800,), nbs=(32,), grids=((2, 1),), threshold=-1.0), tmp_path / "HPL.dat")
    r = run_cli("run-real", "--hpl-dat", tmp_path / "HPL.dat", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)[0]
    assert obj["residual_check"] == "SKIPPED" and (obj["p"], obj["q"]) == (2, 1)


@two_cores
def test_traced_run_records_kernel_calls(tmp_path):
    done = run_real([HplConfig(n=600, nb=32, p=1, q=2)], trace=True, out=tmp_path / "t.zip")
    calls = done.kernels
    assert calls is not None and not calls.empty
    assert {"dgemm", "dtrsm", "idamax", "HPL_pdgesv"} <= set(calls["function"])
    assert set(calls["rank"]) == {0, 1}
    assert (calls["duration"] >= 0).all()
    region = calls[calls["function"] == "HPL_pdgesv"]["duration"]
    kernel_time = calls[calls["function"] != "HPL_pdgesv"].groupby("rank")["duration"].sum()
    assert (kernel_time <= region.max() * 1.01).all()  # calls are inside the timed region
    # the row swaps carry the leading dimension of the rows they walk (E25): at P = 1, N
    swaps = calls[calls["function"] == "HPL_dlaswp00N"]
    assert not swaps.empty and (swaps["ld"] == 600).all()
    assert calls[calls["function"] == "dgemm"]["ld"].isna().all()
    assert read_archive(tmp_path / "t.zip").has_table("kernels")
    # the same from the command line; --trace without --out is refused
    r = run_cli("run-real", "-N", 600, "--nb", 32, "-P", 1, "-Q", 2, "--trace", "--out", tmp_path / "c.zip",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "dgemm" in set(read_archive(tmp_path / "c.zip").table("kernels")["function"])
    assert_one_line_error(run_cli("run-real", "-N", 600, "--trace", cwd=tmp_path), "--trace needs --out")


# ------------------------------------------------------------------ failures are errors


def fake_hpl(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "fake-xhpl"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


FAKE_OUTPUT = textwrap.dedent("""\
    T/V                N    NB     P     Q               Time                 Gflops
    --------------------------------------------------------------------------------
    WR11C2R4         500    32     1     1               0.01              {gflops}
    --------------------------------------------------------------------------------
    ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=        {resid} ...... {verdict}
    """)


def test_failed_residual_is_an_error_not_a_number(tmp_path):
    text = FAKE_OUTPUT.format(gflops="1.000e+01", resid="123.4567890", verdict="FAILED")
    binary = fake_hpl(tmp_path, f"cat <<'EOF'\n{text}EOF\n")
    with pytest.raises(RealRunError, match="residual check FAILED"):
        run_real([HplConfig(n=500, nb=32)], binary=binary, out=tmp_path / "a.zip")
    a = read_archive(tmp_path / "a.zip")
    assert a.status == "aborted" and "FAILED" in a.metadata["abort_reason"]
    assert len(a.table("hpl")) == 0


def test_crash_is_an_error(tmp_path):
    binary = fake_hpl(tmp_path, "echo 'HPL ERROR from process # 0: out of memory' >&2\nexit 3\n")
    with pytest.raises(RealRunError, match="crashed .*out of memory"):
        run_real([HplConfig(n=500, nb=32)], binary=binary)
    binary = fake_hpl(tmp_path, "printf -- '-----\\nSomething was unable to start\\n-----\\n' >&2\nexit 1\n")
    with pytest.raises(RealRunError, match="unable to start"):
        run_real([HplConfig(n=500, nb=32)], binary=binary)


def test_wrong_or_missing_result_is_an_error(tmp_path):
    binary = fake_hpl(tmp_path, "echo 'no result here'\n")
    with pytest.raises(HplsimError, match="no result"):
        run_real([HplConfig(n=500, nb=32)], binary=binary)
    text = FAKE_OUTPUT.format(gflops="1.000e+01", resid="0.0012345", verdict="PASSED")
    binary = fake_hpl(tmp_path, f"cat <<'EOF'\n{text}EOF\n")
    with pytest.raises(HplsimError, match="expected WR11C2R4 N=600"):
        run_real([HplConfig(n=600, nb=32)], binary=binary)
    done = run_real([HplConfig(n=500, nb=32)], binary=binary, repeat=2)
    assert done.results[0].gflops == 10.0 and done.results[0].residual_check == "PASSED"


def test_timeout_is_an_error(tmp_path):
    binary = fake_hpl(tmp_path, "sleep 30\n")
    with pytest.raises(RealRunError, match="timed out"):
        run_real([HplConfig(n=500, nb=32)], binary=binary, timeout=1)


# ------------------------------------------------------------------ bad input, before anything runs


def test_too_many_ranks(tmp_path):
    cores = len(available_cores())
    p = cores + 1
    r = run_cli("run-real", "-N", 1000, "-P", p, "-Q", 1, cwd=tmp_path)
    assert_one_line_error(r, rf"P x Q = {p} x 1 = {p} ranks, but this host's {cores} cores allow only {cores}")


def test_matrix_too_large_for_memory(tmp_path):
    r = run_cli("run-real", "-N", 2_000_000, "-P", 1, "-Q", 1, cwd=tmp_path)
    assert_one_line_error(r, r"N = 2000000 needs .* GB for the matrix .* lower N")


def test_missing_mpirun(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no mpirun there
    r = run_cli("run-real", "-N", 1000, "-P", 1, "-Q", 1, cwd=tmp_path)
    assert_one_line_error(r, "mpirun not found")


def test_bad_hostfile_and_options(tmp_path):
    assert_one_line_error(run_cli("run-real", "-N", 1000, "--hostfile", tmp_path / "none", cwd=tmp_path),
                          "hostfile")
    (tmp_path / "hosts").write_text("localhost slots=1\n")
    assert_one_line_error(run_cli("run-real", "-N", 1000, "-P", 1, "-Q", 2, "--hostfile", tmp_path / "hosts",
                                  cwd=tmp_path), "2 ranks, but 1 slots of .*hosts allow only 1")
    assert_one_line_error(run_cli("run-real", "-N", 1000, "--repeat", 0, cwd=tmp_path), "--repeat")
    assert_one_line_error(run_cli("run-real", "--nb", 64, cwd=tmp_path), "problem size")
    assert_one_line_error(run_cli("run-real", "-N", 100, "--nb", 200, cwd=tmp_path), "NB")


@two_cores
def test_hostfile_run(tmp_path):
    (tmp_path / "hosts").write_text("localhost slots=2\n")
    r = run_cli("run-real", "-N", 600, "--nb", 32, "-P", 1, "-Q", 2, "--hostfile", "hosts", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["residual_check"] == "PASSED"
    assert not list(tmp_path.glob(".hplsim-real-*"))  # the shared run directory is cleaned up


def test_check_configs_counts_slots_of_a_hostfile(tmp_path):
    launch = Launch("mpirun", 4, ["a", "b"], tmp_path / "h", local_slots=0)
    check_configs([HplConfig(n=10**6, nb=64, p=2, q=2)], launch)  # remote hosts: memory not checked here
    with pytest.raises(HplsimError, match="allow only 4"):
        check_configs([HplConfig(n=1000, nb=64, p=4, q=2)], launch)
    assert "--hostfile" in launch.argv(4, Path("xhpl"))


# ------------------------------------------------------------------ HPL's output


def test_parse_hpl_output():
    text = (FAKE_OUTPUT.format(gflops="2.327e+01", resid="0.0036790", verdict="PASSED")
            + "================\n"
            + FAKE_OUTPUT.format(gflops="3.000e+00", resid="99.0", verdict="FAILED").replace("WR11C2R4", "WC00L2L8")
            + "WR12R3R16       1000    64     2     1               1.50              4.445e-01\n")
    res = parse_hpl_output(text)
    assert [r.label for r in res] == ["WR11C2R4", "WC00L2L8", "WR12R3R16"]
    assert res[0].gflops == 23.27 and res[0].time_s == 0.01 and res[0].residual_check == "PASSED"
    assert res[0].residual == pytest.approx(0.003679)
    assert res[1].residual_check == "FAILED"
    assert res[2].residual_check == "SKIPPED" and (res[2].n, res[2].nb, res[2].p, res[2].q) == (1000, 64, 2, 1)
    assert res[0].matches(HplConfig(n=500, nb=32))


@two_cores
def test_run_real_phases_are_hpls_own_and_archived(tmp_path):
    """--phases runs HPL's timing build: each run's six phase times are HPL's lines, they
    nest as HPL times them, they go into the archive and come back with its reader."""
    from hplsim.hpl.output import PHASES, parse_phases

    out = tmp_path / "real.zip"
    r = run_cli("run-real", "-N", 3000, "--nb", 64, "-P", 1, "-Q", 2, "--depth", 0, "--repeat", 2, "--phases",
                "--out", out, "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)[0]
    a = read_archive(out)
    outputs = [a.text(name) for name in sorted(a.names) if name.startswith("runs/")]
    assert [run["phases"] for run in obj["runs"]] == [parse_phases(text)[0] for text in outputs]
    for run in obj["runs"]:
        ph = run["phases"]
        assert set(ph) == set(PHASES)
        # how the time splits depends on what else the machine runs; how the phases nest does not
        assert ph["update"] > 0 and ph["rfact"] > 0
        assert ph["laswp"] <= ph["update"] + 0.005 and ph["mxswp"] <= ph["pfact"] + 0.005
        assert ph["pfact"] <= ph["rfact"] + 0.005
        assert all(ph[name] <= run["time_s"] + 0.005 for name in PHASES)
    assert obj["phases"] == {name: statistics.median(run["phases"][name] for run in obj["runs"]) for name in PHASES}
    table = a.table("hpl")
    assert list(table["phase_update_s"]) == [run["phases"]["update"] for run in obj["runs"]]
    back = read_results(out, [HplConfig(n=3000, nb=64, p=1, q=2, depth=0)], 2)
    assert back is not None and [run.phases for run in back[0].runs] == [run["phases"] for run in obj["runs"]]
    # a run without --phases leaves the columns empty, and its reader gives no phases
    plain = tmp_path / "plain.zip"
    assert run_cli("run-real", "-N", 1000, "--nb", 64, "-P", 1, "-Q", 2, "--out", plain, cwd=tmp_path).returncode == 0
    assert read_archive(plain).table("hpl")["phase_update_s"].isna().all()
    assert read_results(plain, [HplConfig(n=1000, nb=64, p=1, q=2)], 1)[0].runs[0].phases is None


def test_run_real_phases_refuses_the_traced_build(tmp_path):
    r = run_cli("run-real", "-N", 1000, "--nb", 64, "-P", 1, "-Q", 2, "--phases", "--trace", "--out",
                tmp_path / "x.zip", cwd=tmp_path)
    assert_one_line_error(r, "--phases")
