"""hplsim validate: the closed loop end to end on a tiny configuration (table, CSV, plot),
reuse of its artefacts, the design drawn from HPL's shapes, bad input; and the examples of
docs/validate.md run as written."""

from __future__ import annotations

import json
import re
import statistics
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO
from docexamples import examples, run_examples
from helpers import Result, assert_one_line_error, require_tools, run_cli
from hplsim.calibrate.archive import read_archive
from hplsim.calibrate.hpl_designs import default_configs, hpl_blas_design, hpl_leading_dimension, trace_configs
from hplsim.hpl.config import HplConfig
from hplsim.models.modelfile import load_model
from hplsim.models.local_platform import local_platform_spec
from hplsim.real.run import available_cores

DOC = REPO / "docs" / "validate.md"

#: the docs' validation runs two ranks: a machine with one core cannot run it at all (the
#: README's set-up does not add cores); a missing OpenMPI or SimGrid is a failure instead
two_cores = pytest.mark.skipif(len(available_cores()) < 2, reason="needs 2 cores")


@pytest.fixture
def needs_tools():
    """OpenMPI and SimGrid are part of the README's set-up: without them these tests fail,
    naming it."""
    require_tools("mpirun", "smpirun")


# the examples of docs/validate.md run once (a minute of calibration and real runs on both
# cores); the tests below read what they wrote


@pytest.fixture(scope="module")
def doc_run(tmp_path_factory) -> tuple[Path, dict[str, Result]]:
    """Each `hplsim` line of docs/validate.md, run in order in one folder: the folder and
    each command's result."""
    require_tools("mpirun", "smpirun")
    where = tmp_path_factory.mktemp("validate-doc")
    results = run_examples(DOC, where)
    commands = examples(DOC)[1]
    assert len(results) == len(commands) >= 6  # each ran and exited 0
    return where, dict(zip(commands, results))


def _result(doc_run: tuple[Path, dict[str, Result]], *words: str) -> Result:
    (found,) = [r for command, r in doc_run[1].items() if all(w in command.split() for w in words)]
    return found


@two_cores
def test_validate_tiny_end_to_end(doc_run):
    """The docs' validation: two configurations, two rounds of real runs (--repeat 2)."""
    out = doc_run[0] / "tiny"
    (r,) = [r for command, r in doc_run[1].items() if "validate" in command and "--reuse" not in command]
    # the table: one line per configuration, predicted and real Gflops, error
    assert "predicted" in r.stdout and "real median" in r.stdout
    assert "WR11C2R4 N=2000 NB=64 1x2" in r.stdout and "WR11C2R4 N=2000 NB=64 2x1" in r.stdout
    assert re.search(r"median \|error\| [\d.]+ %", r.stdout)
    for name in ("validation.csv", "validation.png", "validation.md", "summary.json", "model.yaml",
                 "platform.yaml", "predictions.json", "real.zip", "calibration/pass-0/dgemm.zip",
                 "calibration/pass-0/dtrsm.zip", "calibration/pass-1/dgemm.zip", "calibration/pass-1/dtrsm.zip",
                 "calibration/mpi.zip", "calibration/pass-0/trace.zip", "calibration/pass-1/trace.zip",
                 "calibration/pass-2/trace.zip"):
        assert (out / name).exists(), name
    assert (out / "validation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(out / "validation.csv")
    assert len(table) == 2
    assert {"predicted_gflops", "real_gflops_median", "real_gflops_min", "real_gflops_max", "error_pct",
            "spread_pct"} <= set(table.columns)
    assert (table["predicted_gflops"] > 0).all() and (table["real_gflops_median"] > 0).all()
    assert (table["real_residual_check"] == "PASSED").all()
    row = table.iloc[0]
    assert row["error_pct"] == pytest.approx(100 * (row["predicted_gflops"] / row["real_gflops_median"] - 1))
    model = load_model(out / "model.yaml")
    kernels = set(model.default.kernels)
    assert {"dgemm", "dtrsm", "idamax", "dscal", "HPL_dlaswp00N"} <= kernels
    spec = yaml.safe_load((out / "platform.yaml").read_text())
    assert spec["nodes"] == 1 and spec["cores_per_node"] == 2 and "smpi/bw-factor" in spec["smpi"]
    # measured, not assumed: this machine's Open MPI reports a message one probe late
    assert spec["mpi"] == {"iprobe_reports": "progressed"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["configurations"] == 2
    # the calibration in R + 1 passes: before the first round of real runs, between the
    # rounds, after the last; the models fitted on all of them
    real_runs = read_archive(out / "real.zip").table("hpl")
    ends = real_runs["start"] + real_runs["wall_s"]

    def when(i: int) -> tuple[float, float]:
        meta = [read_archive(out / "calibration" / f"pass-{i}" / f"{f}.zip").metadata for f in ("dgemm", "trace")]
        return (datetime.fromisoformat(meta[0]["start_time"]).timestamp(),
                datetime.fromisoformat(meta[1]["end_time"]).timestamp())

    # --min-seconds 0: each configuration runs exactly R = 2 times, once per round (without
    # it, short runs repeat up to 3R times: test_real.py); the option reaches run-real
    runs = {(1, 2): 2, (2, 1): 2}
    assert list(real_runs.groupby("repetition").size()) == [2, 2]
    assert table.set_index(["p", "q"])["real_runs"].to_dict() == runs
    rounds = [(real_runs["start"][real_runs["repetition"] == r].min(), ends[real_runs["repetition"] == r].max())
              for r in (0, 1)]
    assert when(0)[1] <= rounds[0][0]
    assert rounds[0][1] <= when(1)[0] and when(1)[1] <= rounds[1][0]
    assert rounds[1][1] <= when(2)[0]
    assert not (out / "calibration" / "pass-3").exists()
    fitted_on = yaml.safe_load((out / "model.yaml").read_text())["provenance"]["dgemm_dtrsm"]
    # as given: validate ran with --out tiny, relative to its folder
    assert sorted(fitted_on) == sorted(f"tiny/calibration/pass-{i}/{f}.zip"
                                       for i in (0, 1, 2) for f in ("dgemm", "dtrsm"))
    traced_on = yaml.safe_load((out / "model.yaml").read_text())["provenance"]["other_kernels"]
    assert traced_on == [f"tiny/calibration/pass-{i}/trace.zip" for i in (0, 1, 2)]
    # the machine's drift: the calibration's dgemm calls, first pass against last, shape by
    # shape (recomputed from the archives: how far the machine drifted depends on its load)
    drift = summary["calibration_drift"]

    def dgemm_per_shape(i: int) -> pd.Series:
        calls = read_archive(out / "calibration" / f"pass-{i}" / "dgemm.zip").table("dgemm")
        return calls[calls["function"] == "dgemm"].groupby(["m", "n", "k"])["duration"].median()

    ratio = (dgemm_per_shape(2) / dgemm_per_shape(0)).dropna()
    assert drift["kernel"] == "dgemm" and drift["shapes"] == len(ratio) >= 10
    assert drift["median_pct"] == pytest.approx(100 * (ratio.median() - 1))
    assert "machine drift" in r.stdout
    # the machine probe: around the calibration (the reference) and around every real run;
    # each configuration's speed is the median of its runs' probes against the reference
    probe = summary["machine_probe"]
    assert len(probe["calibration"]) == 2 + 2 + 2 and probe["runs"] == len(real_runs)  # --quick: one probe each side
    assert probe["reference"] == pytest.approx(statistics.median(probe["calibration"])) and probe["reference"] > 0
    speed = ((real_runs["probe_before_gflops"] + real_runs["probe_after_gflops"]) / 2 / probe["reference"])
    speed_pct = (100 * (speed.groupby([real_runs["p"], real_runs["q"]]).median() - 1)).to_dict()
    assert table["machine_speed_pct"].notna().all()
    assert table.set_index(["p", "q"])["machine_speed_pct"].to_dict() == pytest.approx(speed_pct)
    assert "machine probe" in r.stdout

    # --reuse: nothing is measured again, the same real runs are read back
    r2 = _result(doc_run, "validate", "--reuse", "--json")
    assert "calibrating" not in r2.stderr and "running the real HPL" not in r2.stderr
    assert "pass 3/3" not in r2.stderr
    doc = json.loads(r2.stdout)
    assert [row["real_gflops_median"] for row in doc["rows"]] == list(table["real_gflops_median"])
    assert [row["machine_speed_pct"] for row in doc["rows"]] == list(table["machine_speed_pct"])


def test_calibration_drift_compares_the_same_call_shapes(tmp_path):
    from hplsim.report.validation import calibration_drift

    shapes = [(64 * i, 128, 64) for i in range(1, 9)]
    rows = lambda scale: "kernel,m,n,k,duration\n" + "".join(  # noqa: E731
        f"dgemm,{m},{n},{k},{scale * (1e-9 * m * n * k + r * 1e-7)}\n" for m, n, k in shapes for r in range(3))
    (tmp_path / "before.csv").write_text(rows(1.0))
    (tmp_path / "after.csv").write_text(rows(1.1) + "dgemm,999,999,999,1.0\n")  # a shape not in both: ignored
    d = calibration_drift(tmp_path / "before.csv", tmp_path / "after.csv")
    assert d["shapes"] == 8
    assert d["median_pct"] == pytest.approx(10.0) and d["q25_pct"] == pytest.approx(10.0)


def test_steady_runs_are_judged_against_the_calibrated_machine():
    """A real run met the calibrated machine when the probes around it were within
    STEADY_PCT of the calibration's; the steady summary judges each configuration on those
    runs only and leaves out configurations without one."""
    from hplsim.real.run import RealResult, RealRun
    from hplsim.report.validation import STEADY_PCT, Report, Row, format_summary, format_table

    assert STEADY_PCT == 3.0
    c, d = HplConfig(n=5000, nb=64, p=2, q=1), HplConfig(n=10000, nb=64, p=2, q=1)

    def run(config, gflops, before, after):
        return RealRun(config, 0, 0, 1.0, gflops, 1e-3, "PASSED", 1.0, 0.0, 0.1, 0.0, before, after)

    # reference 50 Gflops/core: a run at −20 %, one at −1 % (49 and 50 around it), one at +2.5 %
    row = Row(c, 71.0, 1.0, 0.1, RealResult(c, [run(c, 60.0, 40.0, 40.0), run(c, 70.0, 49.0, 50.0),
                                                run(c, 72.0, 51.0, 51.5)]), reference=50.0)
    assert row.machine_pct == pytest.approx(-1.0)
    assert [r.gflops for r in row.steady_runs] == [70.0, 72.0]
    assert row.error_pct == pytest.approx(100 * (71 / 70 - 1))
    assert row.steady_error_pct == pytest.approx(0.0)
    slow = Row(d, 80.0, 1.0, 0.1, RealResult(d, [run(d, 60.0, 40.0, 41.0)]), reference=50.0)
    assert slow.steady_runs == [] and slow.steady_error_pct is None
    unknown = Row(d, 80.0, 1.0, 0.1, RealResult(d, [run(d, 60.0, None, None)]), reference=50.0)
    assert unknown.machine_pct is None and unknown.steady_runs == []

    report = Report([row, slow], Path("."))
    assert report.summary(5000)["configurations"] == 2
    steady = report.summary(5000, steady_only=True)
    assert steady["configurations"] == 1 and steady["runs"] == 2 and steady["max_abs_error_pct"] == 0.0
    assert "judged on the runs that met the calibrated machine" in format_summary(report)
    assert "-1.0%" in format_table([row]) and "-19.0%" in format_table([slow])


@two_cores
def test_validate_refuses_bad_input(tmp_path, needs_tools):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    r = run_cli("validate", "-N", 2000, "--out", tmp_path / "full", cwd=tmp_path)
    assert_one_line_error(r, "not empty")
    r = run_cli("validate", "-N", 2000, "-P", 4, "-Q", 4, "--out", tmp_path / "v", cwd=tmp_path)
    assert_one_line_error(r, "16 ranks")
    r = run_cli("validate", "-N", 2000, "--model", tmp_path / "nope.yaml", "--out", tmp_path / "w", cwd=tmp_path)
    assert_one_line_error(r, "no such file")


def test_default_set():
    configs = default_configs()
    assert len(configs) == 34 and len(set(configs)) == 34
    assert {(c.p, c.q) for c in configs} == {(1, 2), (2, 1)}
    assert {c.n for c in configs} == {5000, 10000, 15000}
    assert {c.nb for c in configs} == {64, 128, 256}
    assert {c.bcast for c in configs} == {1, 2} and {c.depth for c in configs} == {0, 1}
    assert all(c.bcast == 1 for c in configs if c.q == 1)  # a broadcast among one process


def test_design_follows_hpl_shapes():
    configs = [HplConfig(n=5000, nb=128, p=1, q=2), HplConfig(n=5000, nb=64, p=2, q=1)]
    d = hpl_blas_design(configs, "dgemm", 60, seed=3).points
    assert len(d) == 60
    assert set(d["k"]) <= {128, 64, 32, 16, 8, 4}
    assert d["m"].max() <= 5000 and (d["m"] >= 1).all() and (d["n"] >= 1).all()
    assert (d["lda"] >= d["m"]).all() and (d["ldc"] >= d["m"]).all()
    assert ((d["n"] == d["k"]).sum()) >= 30  # chunks and panel recursion
    again = hpl_blas_design(configs, "dgemm", 60, seed=3).points
    pd.testing.assert_frame_equal(d, again)
    assert (d["ldb"] >= d["k"]).all()
    t = hpl_blas_design(configs, "dtrsm", 30, seed=3).points
    left, right = t[t["side"] == "L"], t[t["side"] == "R"]
    assert len(left) + len(right) == 30 and not left.empty and not right.empty
    assert set(left["m"]) == {128}  # the update's solve at P = 1: order NB on the left
    assert set(right["n"]) <= {128, 64, 32, 16, 8, 4}  # P = 2 (order NB) and the panel: on the right


def test_trace_configs_are_smaller_and_distinct():
    """One traced run per (grid, NB, variant) below every validated N, and one more at the
    size below it where process row 0's leading dimension is a multiple of the L1 set span
    (E25: there HPL's row swaps take 1.6x as long)."""
    from hplsim.calibrate.hpl_designs import aliased_size

    configs = default_configs()
    traced = trace_configs(configs, span_doubles=512)
    keys = {(c.p, c.q, c.nb, c.depth) for c in configs}
    assert all(2500 <= c.n <= 4000 for c in traced)  # below every validated N (5000)
    plain = [c for c in traced if c.n == 4000]
    aliased = [c for c in traced if c.n != 4000]
    assert len(plain) == len(keys) and {(c.p, c.q, c.nb, c.depth) for c in aliased} == keys
    assert all(hpl_leading_dimension(c.n, c.nb, c.p, c.align) % 512 == 0 for c in aliased)
    assert not any(hpl_leading_dimension(c.n, c.nb, c.p, c.align) % 512 == 0 for c in plain)
    # P = 2: 1536 rows each at 3072 (2048 is a power of two: HPL makes it 2056); P = 1: ld = N
    assert aliased_size(HplConfig(n=5000, nb=256, p=2, q=1), 4000, 512) == 3072
    assert aliased_size(HplConfig(n=5000, nb=256, p=1, q=2), 4000, 512) == 3584
    assert aliased_size(HplConfig(n=5000, nb=256, p=1, q=2), 1000, 512) is None
    assert trace_configs(configs, 1200)[0].n == 1200


def test_row_swaps_on_an_aliased_leading_dimension_get_their_own_law():
    """Synthetic row swaps that take 1.65x as long where ld is a multiple of 512 (what
    HPL's dlaswp01T/06T do on this machine, E25): one law misses that class by a third;
    with the piece both classes' totals come back within 1 %, and calls without an ld
    (an older trace) fall to the base law."""
    from hplsim.models.time_share import MIN_SWAP_PIECE_CALLS, fit_pieces, fit_time_share, row_swap_pieces

    rng = np.random.default_rng(7)
    rows = []
    for ld in (2440, 2504, 2560, 1536, 3072):
        for m in (100, 200, 370):
            for n in range(200, 4800, 400):
                slow = 1.65 if ld % 512 == 0 else 1.0
                rows.append((m, n, ld, slow * (4e-9 * m * n + 2e-6) * rng.lognormal(0, 0.02)))
    calls = pd.DataFrame(rows, columns=["m", "n", "ld", "duration"])
    aliased = calls["ld"] % 512 == 0

    def errors(model, c=calls):
        pred = model.predict({v: c[v].to_numpy(float) for v in ("m", "n", "ld")})
        sel = c["ld"] % 512 == 0
        return [100 * (pred[s].sum() / c["duration"][s].sum() - 1) for s in (sel, ~sel)]

    one, _ = fit_time_share(calls, "HPL_dlaswp01T")
    assert max(abs(e) for e in errors(one)) > 15
    two, summary = fit_pieces(calls, "HPL_dlaswp01T", row_swap_pieces(512), min_calls=MIN_SWAP_PIECE_CALLS)
    assert [p.when[0].text for p in two.pieces] == ["ld % 512 == 0"] and summary.pieces[0]["calls"] == aliased.sum()
    assert max(abs(e) for e in errors(two)) < 1
    base = two.predict({"m": np.array([370.0]), "n": np.array([4200.0]), "ld": np.array([np.nan])})
    assert base[0] == pytest.approx(two.base().predict({"m": 370.0, "n": 4200.0}))
    # a trace without ld: no piece
    assert fit_pieces(calls.drop(columns="ld"), "HPL_dlaswp01T", row_swap_pieces(512))[0].pieces == ()


def test_local_platform_spec_loads():
    from hplsim.platform.spec import spec_from_dict

    spec = spec_from_dict(local_platform_spec(2, {"smpi/bw-factor": "0:1.0"}))
    assert spec.nodes == 1 and spec.cores_per_node == 2 and spec.loopback_bandwidth == 10e9
    assert len(spec.platform().slots) == 2


# ----------------------------------------------------------------------- the docs


@two_cores
def test_docs_examples_run(doc_run):
    where = doc_run[0]
    assert (where / "tiny" / "validation.csv").exists()
    assert (where / "real.zip").exists()
    # hplsim fit --method time-share refits validate's models from its archives, law for law
    refit = load_model(where / "refit.yaml").default.kernels
    assert refit == load_model(where / "tiny" / "model.yaml").default.kernels


def test_design_uses_hpl_leading_dimension_and_covers_every_update_shape():
    """The calibration's operands have the leading dimension HPL gives process 0 (its rows
    rounded up to ALIGN, never a power of two: HPL_pdtest), and every configuration's
    trailing-update shape (ld, K = NB) gets update points, not only those a random draw
    happens to pick (E20)."""
    from hplsim.calibrate.hpl_designs import _local, hpl_leading_dimension

    assert _local(5000, 64, 2) == 2504 and _local(5000, 256, 2) == 2560 and _local(5000, 64, 1) == 5000
    assert hpl_leading_dimension(5000, 64, 2, 8) == 2504  # not 2560: 40 blocks of 64 overstate rank 0
    assert hpl_leading_dimension(1024, 64, 1, 8) == 1032  # 1024 is a power of two
    assert hpl_leading_dimension(5000, 256, 2, 8) == 2560
    configs = default_configs()
    d = hpl_blas_design(configs, "dgemm", 150, seed=0).points
    updates = d[d["n"] > d["k"]].groupby(["lda", "k"]).size()
    wanted = {(hpl_leading_dimension(c.n, c.nb, c.p, c.align), c.nb) for c in configs}
    assert len(wanted) == 16 and all(updates.get(key, 0) >= 3 for key in wanted), updates
    assert (d["lda"] >= d["m"]).all()


def test_fit_pieces_gives_wide_calls_their_own_law():
    """Synthetic calls whose wide shapes run 10 % slower per flop than tall ones of the same
    m·n·k: one polynomial misses one class or the other by several %; with the wide piece
    both totals come back within 1 %."""
    from hplsim.models.time_share import DGEMM_PIECES, fit_pieces, fit_time_share

    rng = np.random.default_rng(4)
    rows = []
    for _ in range(3):
        for m in (500, 1000, 1500, 2000, 3000, 4000):
            for n in (500, 1000, 1500, 2000, 3000, 4000):
                if m == n:
                    continue
                k = 64
                rate = 2.2e-11 if n > m else 2.0e-11
                rows.append((m, n, k, (rate * m * n * k + 3e-10 * m * n) * rng.lognormal(0, 0.01)))
    calls = pd.DataFrame(rows, columns=["m", "n", "k", "duration"])
    wide = calls["n"] > calls["m"]

    def errors(model):
        pred = model.predict({v: calls[v].to_numpy(float) for v in "mnk"})
        return [100 * (pred[sel].sum() / calls["duration"][sel].sum() - 1) for sel in (wide, ~wide)]

    one, _ = fit_time_share(calls, "dgemm")
    assert max(abs(e) for e in errors(one)) > 2
    two, summary = fit_pieces(calls, "dgemm", DGEMM_PIECES)
    assert [p.when[0].text for p in two.pieces] == ["n > m"] and summary.pieces[0]["calls"] == wide.sum()
    assert max(abs(e) for e in errors(two)) < 0.5
    # too few calls of a class: no piece, one law for all
    few = pd.concat([calls[~wide], calls[wide].head(5)])
    assert fit_pieces(few, "dgemm", DGEMM_PIECES)[0].pieces == ()


def test_one_disturbed_pass_does_not_move_the_fitted_law():
    """Six calibration passes of the same dtrsm calls, one of them with three calls
    stalled for a quarter second (what the thirteenth validate run met, E23): the law
    follows the five undisturbed passes within 1 %, where matching the total of all
    calls made every call about a third too long. Without groups, the factor is the
    total's (one group)."""
    from hplsim.models.time_share import fit_time_share

    rng = np.random.default_rng(7)
    rows = []
    for p in range(6):
        for m in (64, 128, 256, 1024, 2048, 4096):
            for n in (64, 128, 256):
                t = 4e-11 * m * n * n + 1e-9 * m * n
                rows.append((f"pass-{p}/dtrsm.zip", m, n, n, t * rng.lognormal(0, 0.02)))
    calls = pd.DataFrame(rows, columns=["source", "m", "n", "k", "duration"])
    clean = calls.copy()
    stalled = calls.index[(calls["source"] == "pass-1/dtrsm.zip")][:3]
    calls.loc[stalled, "duration"] += 0.25
    assert calls["duration"].sum() / clean["duration"].sum() > 1.3

    sizes = {v: np.array([1024.0, 256.0]) if v == "m" else np.array([128.0, 256.0]) for v in "mnk"}
    truth = 4e-11 * sizes["m"] * sizes["n"] ** 2 + 1e-9 * sizes["m"] * sizes["n"]
    model, summary = fit_time_share(calls, "dtrsm")
    assert np.allclose(model.predict(sizes) / truth, 1, atol=0.03), model.predict(sizes) / truth
    assert len(summary.group_factors) == 6 and max(summary.group_factors) > 3 and summary.factor < 1.02
    # one group (nothing tells the passes apart): the factor matches the total, as before
    whole, s1 = fit_time_share(calls.drop(columns="source"), "dtrsm")
    assert s1.group_factors == [s1.factor] and s1.factor > 1.25
    assert (whole.predict(sizes) / truth > 1.2).all()


def test_the_level_follows_hpls_own_calls_when_traced_runs_are_given():
    """Three calibration passes of dgemm at the law, and six traced HPL runs whose calls
    all take 15 % longer (what HPL's calls did among the other ranks' work on an AVX-512
    VM, E31), one of them stalled: the law's level is the traced runs' (within 1 %), not
    the passes' that outweigh the undisturbed ones 4 to 1; without the traced runs, the passes'."""
    from hplsim.models.time_share import fit_time_share

    rng = np.random.default_rng(3)
    rows = []
    law = lambda m, n, k: 2e-11 * m * n * k + 3e-10 * m * n  # noqa: E731
    for p in range(3):  # ten repetitions of each shape
        for m in (1000, 2000, 4000, 8000):
            for n in (1000, 2000, 4000, 8000):
                for _ in range(10):
                    rows.append((f"pass-{p}/dgemm.zip", np.nan, m, n, 128, law(m, n, 128) * rng.lognormal(0, 0.01)))
    for r in range(6):  # HPL's calls: the same shapes, once each
        for m in (1000, 2000, 4000, 8000):
            for n in (1000, 2000, 4000, 8000):
                slow = 1.15 * (3.0 if r == 4 else 1.0)
                rows.append(("trace.zip:kernels", float(r), m, n, 128, slow * law(m, n, 128) * rng.lognormal(0, 0.01)))
    calls = pd.DataFrame(rows, columns=["source", "run", "m", "n", "k", "duration"])
    traced = calls["run"].notna()
    assert calls["duration"][~traced].sum() > 4 * calls["duration"][traced & (calls["run"] != 4)].sum()
    sizes = {"m": np.array([6000.0]), "n": np.array([6000.0]), "k": np.array([128.0])}
    truth = law(6000, 6000, 128)
    model, summary = fit_time_share(calls, "dgemm")
    assert model.predict(sizes)[0] / truth == pytest.approx(1.15, rel=0.01)
    assert len(summary.group_factors) == 9  # every group's ratio still feeds the uncertainty
    alone, _ = fit_time_share(calls[~traced], "dgemm")
    assert alone.predict(sizes)[0] / truth == pytest.approx(1.0, rel=0.01)
