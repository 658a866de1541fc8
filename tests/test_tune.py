"""hplsim tune: a real (tiny) search end to end, resumed from its store, reproducible;
bad constraints refused before any simulation; the memory rule and the budget."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hplsim.hpl.hpldat import read_hpl_dat
from hplsim.tune.constraints import grids_of, make_space, memory_n, node_bytes, numroc, parse_budget, parse_memory
from hplsim.hpl.config import HplConfig
from hplsim.models.modelfile import load_model, model_from_dict, model_to_dict, save_model
from hplsim.presets import DEFAULT
from helpers import invoke, sigint_in_a_finaliser

# 2 ranks of a Dahu node, a few configurations, tiny N: a search of a few seconds; the Dahu
# model with a declared uncertainty (m.yaml, written by the fixture)
TINY = ["tune", "--platform", str(DEFAULT.platform), "--ranks-per-host", "32", "--model", "m.yaml", "--ranks", "2",
        "--memory-per-node", "64MB", "--budget", "10s",
        "--nb", "64,128", "--pfact", "1", "--rfact", "2", "--bcast", "1", "--depth", "0,1", "--swap", "0", "--jobs", "1",
        "--json"]


def _model(where):
    doc = model_to_dict(load_model(DEFAULT.model))
    doc["uncertainty"] = {"dgemm": {"rsd": 0.02}, "idamax": {"rsd": 0.5}}
    save_model(model_from_dict(doc), where / "m.yaml")


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    where = tmp_path_factory.mktemp("tune")
    _model(where)
    code, out, err = invoke([*TINY, "--seed", "5", "--db", "a.sqlite", "-o", "HPL.dat"], where)
    assert code == 0, err
    return where, json.loads(out)


def test_tune_recommends_with_interval_and_writes_hpl_dat(first):
    where, doc = first
    best = doc["best"]
    assert {"n", "nb", "p", "q", "pfact", "rfact", "bcast", "depth", "swap", "gflops", "interval"} <= set(best)
    lo, hi = best["interval"]
    assert 0 < lo <= best["gflops"] <= hi
    assert (best["p"], best["q"]) == (1, 2) and best["nb"] in (64, 128) and best["pfact"] == 1
    assert doc["top"][0] == best and len(doc["top"]) >= 2
    # the model part uses the kernels' measured shares: idamax's 50 % weighs next to nothing
    assert "3 seeds" in best["interval_sources"] and any("model uncertainty" in s for s in best["interval_sources"])
    assert not any("bound" in n for n in doc["notes"])
    sim = doc["simulated"]
    assert (sim["interval"][1] / sim["gflops"] - 1) < 0.2
    assert all(e["interval"][0] <= e["gflops"] <= e["interval"][1] for e in doc["top"])
    assert doc["sensitivity"] and {s["parameter"] for s in doc["sensitivity"]} <= {"nb", "depth"}
    search = doc["search"]
    assert 0 < search["spent_s"] <= search["budget_s"] == 10.0 and search["simulations"] > 0
    # the written HPL.dat is the recommendation, and it fits the memory rule
    dat = read_hpl_dat(where / "HPL.dat")
    assert dat.ns == (best["n"],) and dat.nbs == (best["nb"],) and dat.grids == ((best["p"], best["q"]),)
    assert dat.bcasts == (best["bcast"],) and dat.depths == (best["depth"],) and dat.threshold > 0
    hosts = ["dahu-0.grid5000.fr"] * 2
    assert node_bytes(best["n"], best["nb"], 1, 2, best["depth"], hosts) <= 0.8 * 64e6
    assert node_bytes(best["n"] + best["nb"], best["nb"], 1, 2, best["depth"], hosts) > 0.8 * 64e6


def test_tune_recommends_what_its_simulations_found_best_and_its_extrapolation_holds(first):
    """The real (tiny) search against its own store and against fresh simulations: the
    recommendation is the fastest configuration simulated at the largest size, its figure
    there is the mean of its stored seeds, every neighbour in the sensitivity table is one
    of those stored runs and no faster; and the Gflops it extrapolates to the memory's N,
    which it never simulated, hold: `hplsim predict` of the HPL.dat it wrote, at that N with
    the search's three seeds, lands inside the 90 % interval it printed."""
    import sqlite3
    import statistics

    where, doc = first
    best, simulated = doc["best"], doc["simulated"]
    n_top = doc["search"]["sizes"][-1]
    assert simulated["n"] == n_top < best["n"]  # the memory's N is extrapolated, not simulated
    keys = ("nb", "p", "q", "pfact", "rfact", "bcast", "depth", "swap")
    db = sqlite3.connect(where / "a.sqlite")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM runs WHERE n = ?", (n_top,))]
    assert rows and all(r["status"] == "ok" for r in rows)
    by_config: dict[tuple, dict[int, float]] = {}
    for r in rows:
        by_config.setdefault(tuple(r[k] for k in keys), {})[r["seed"]] = r["gflops"]
    mine = by_config.pop(tuple(best[k] for k in keys))
    assert len(mine) == simulated["seeds"] == 3 and by_config  # neighbours were simulated
    assert simulated["gflops"] == pytest.approx(statistics.mean(mine.values()))
    for other, seeds in by_config.items():
        for seed, gflops in seeds.items():
            assert gflops <= mine[seed], (other, seed)  # the same seed: the same pivots' draws
    for row in doc["sensitivity"]:
        changed = tuple(row["value"] if k == row["parameter"] else best[k] for k in keys)
        assert any(row["gflops"] == pytest.approx(g) for g in by_config[changed].values())
        assert row["change"] <= 0

    seeds = sorted(mine)
    fresh = []
    for seed in seeds:
        code, out, err = invoke(["predict", "--hpl-dat", "HPL.dat", "--platform", str(DEFAULT.platform),
                                 "--ranks-per-host", "32", "--model", "m.yaml", "--seed", str(seed), "--json"], where)
        assert code == 0, err
        (run,) = json.loads(out)
        assert run["n"] == best["n"]
        fresh.append(run["gflops"])
    lo, hi = best["interval"]
    assert lo <= statistics.mean(fresh) <= hi, (fresh, best)


def test_tune_resumes_from_its_store_and_is_reproducible(first, tmp_path):
    where, doc = first
    code, out, err = invoke([*TINY, "--seed", "5", "--db", "a.sqlite"], where)
    assert code == 0, err
    again = json.loads(out)
    assert again["search"]["simulations"] == 0 and again["search"]["reused"] > 0
    assert again["best"] == doc["best"] and again["top"] == doc["top"]
    # from scratch (another store), the same recommendation to the bit
    _model(tmp_path)
    code, out, err = invoke([*TINY, "--seed", "5", "--db", "b.sqlite"], tmp_path)
    assert code == 0, err
    fresh = json.loads(out)
    assert fresh["best"] == doc["best"] and fresh["sensitivity"] == doc["sensitivity"]


@pytest.mark.parametrize("args, message", [
    (["--memory-per-node", "100kB"], "smaller than one 64x64 block per rank"),
    (["--budget", "0"], "must be positive"),
    (["--budget", "soon"], "not a duration"),
    (["--budget", "1s"], "budget (1 s) is too small"),
    (["--memory-per-node", "lots"], "not a memory size"),
    (["--pfact", "3"], "--pfact 3 is not one of HPL's codes"),
    (["--bcast", "6"], "--bcast 6 is not one of HPL's codes"),
    (["--depth", "99"], "--depth 99 is out of range"),
    (["-P", "3", "-Q", "3"], "process grid 3x3 has 9 ranks, not the 2 to use"),
    (["--ranks", "5000"], "has only 1024 rank slots"),
    (["-N", "100000"], "the node would swap"),
    (["--nb", "0"], "--nb 0 is out of range"),
])
def test_bad_constraints_are_one_error_line(tmp_path, args, message):
    base = ["tune", "--preset", "dahu", "--ranks", "2", "--memory-per-node", "64MB", "--budget", "10s", "--jobs", "1"]
    code, out, err = invoke([*base, *args], tmp_path)
    assert code != 0 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hplsim: error:") and message in lines[0], err
    assert not list(tmp_path.iterdir())  # nothing written


def test_memory_rule_against_the_matrix_size():
    # numroc deals every row out once: the local matrices add up to HPL's N x (N+1)
    for n, nb, p in [(10000, 128, 7), (1000, 64, 1), (130, 64, 4), (5, 8, 3)]:
        assert numroc(n, nb, np.arange(p), p).sum() == n
    hosts = [f"h{r // 4}" for r in range(16)]
    n = memory_n(int(2e9), 128, 4, 4, 1, hosts)
    assert n % 128 == 0 and node_bytes(n, 128, 4, 4, 1, hosts) <= 2e9 < node_bytes(n + 128, 128, 4, 4, 1, hosts)
    # 4 nodes x 2 GB: the matrix alone, 8 N^2, stays below the total and above 90 % of it
    assert 0.9 * 8e9 < 8 * n * (n + 1) < 8e9
    assert memory_n(1000, 128, 4, 4, 1, hosts) == 0


def test_units_and_grids():
    assert parse_memory("192GB") == 192 * 10**9 and parse_memory("192GiB") == 192 * 2**30
    assert parse_budget("20m") == 1200 and parse_budget("1h30m") == 5400 and parse_budget("90") == 90
    assert grids_of(1024) == [(1, 1024), (2, 512), (4, 256), (8, 128), (16, 64), (32, 32)]
    assert grids_of(7) == [(1, 7)]
    space = make_space(4, HplConfig(n=1000), nbs=(64,), bcast=(1, 2))
    assert space.grids == ((1, 4), (2, 2)) and space.size == 2 * 1 * 3 * 3 * 2 * 3 * 3


def _factor(task, low: float, high: float) -> float:
    """A stand-in machine's speed against the cost law, different for every run (seeded by
    the run's hash): what the search reports must come from the runs, not from one constant."""
    return float(np.random.default_rng(int(task.hash[:8], 16)).uniform(low, high))


def test_budget_is_a_hard_cap_on_a_slower_machine(tmp_path, monkeypatch):
    """A machine 4-8x slower than the cost law, run by run: every run takes that multiple of
    its estimate, or is killed at its timeout (a stand-in for the simulation: the budget's
    bookkeeping is what is tested). The search stops early, warns, still recommends, spends
    at most the budget, and reports the measured/estimated ratio of the runs that finished."""
    from hplsim.sweep.tasks import Outcome
    from hplsim.tune import runner
    from hplsim.hpl.cost import estimate_s

    ran = []

    def slower(task, variant):
        c, took = task.config, _factor(task, 4.0, 8.0) * estimate_s(task.config)
        if task.timeout is not None and took > task.timeout:
            ran.append((c, task.timeout, False))
            return Outcome(task.hash, "failed", error="killed", sim_wall_s=task.timeout)
        ran.append((c, took, True))
        gflops = c.n ** 0.5 * (1 + c.depth) / (1 + abs(c.nb - 96) / 64) + task.seed % 3
        return Outcome(task.hash, "ok", gflops, 2 / 3 * c.n**3 / gflops / 1e9, took, 0)

    monkeypatch.setattr(runner, "run_task", slower)
    # the kernel shares' run is a real simulation beside the stand-in (it runs when the law
    # says what is left pays for it): its time would count without being in `ran`
    monkeypatch.setattr(runner.Runner, "shares", lambda self, config, seed: None)
    _model(tmp_path)
    code, out, err = invoke([*TINY, "--seed", "5", "--budget", "9s"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert "budget ran out" in err and doc["warnings"] and doc["best"]["gflops"] > 0
    search = doc["search"]
    assert search["spent_s"] == pytest.approx(sum(t for _, t, _ in ran))
    assert 8 < search["spent_s"] <= search["budget_s"] == 9
    assert search["failed"] == sum(not ok for *_, ok in ran) > 0
    finished = [(c, t) for c, t, ok in ran if ok]
    assert search["measured_over_estimated"] == pytest.approx(
        sum(t for _, t in finished) / sum(estimate_s(c) for c, _ in finished))


def test_a_machine_faster_than_the_cost_law_is_told_why_the_budget_was_not_spent(tmp_path, monkeypatch):
    """Every run takes 0.15-0.35 of its estimate (a stand-in for the simulation): the plan,
    made from the law, is the same as anywhere, the search spends a fraction of the budget,
    and says why, with the runs' own ratio (the 20-minute Dahu search here spent 432 of
    1,200 s)."""
    from hplsim.sweep.tasks import Outcome
    from hplsim.tune import runner
    from hplsim.hpl.cost import estimate_s

    ran = []

    def faster(task, variant):
        c = task.config
        ran.append((c, _factor(task, 0.15, 0.35) * estimate_s(c)))
        gflops = c.n ** 0.5 * (1 + c.depth) / (1 + abs(c.nb - 96) / 64) + task.seed % 3
        return Outcome(task.hash, "ok", gflops, 2 / 3 * c.n**3 / gflops / 1e9, ran[-1][1], 0)

    monkeypatch.setattr(runner, "run_task", faster)
    _model(tmp_path)
    code, out, err = invoke([*TINY, "--seed", "5", "--budget", "60s"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    search = doc["search"]
    ratio = sum(t for _, t in ran) / sum(estimate_s(c) for c, _ in ran)
    assert search["measured_over_estimated"] == pytest.approx(ratio)
    # the stand-in's runs, and one real run for the kernels' shares in the interval
    assert sum(t for _, t in ran) < search["spent_s"] < 0.5 * search["budget_s"]
    assert any(f"{ratio:.2f} times the cost law's estimate" in n for n in doc["notes"])


def test_the_first_rung_keeps_what_the_budget_pays_for_at_the_runners_prices():
    """The plan prices screened points as the anchor and without the runner's reserve per
    run; the first rung then keeps, in order, the points whose own costs fit (the anchor
    always): a plan of 911 points for 600 s was refused whole before (it wanted 672.6 s)."""
    from hplsim.tune.search import _affordable

    points = [{"i": i} for i in range(10)]
    cost = {i: 1.0 + (i % 3) for i in range(10)}  # 1, 2, 3, 1, 2, 3, …
    kept = _affordable(points, lambda p: cost[p["i"]], 7.5)
    assert [p["i"] for p in kept] == [0, 1, 2, 3]  # 1 + 2 + 3 + 1 = 7; + 2 would be 9
    assert [p["i"] for p in _affordable(points, lambda p: 5.0, 1.0)] == [0]  # the anchor, even over
    assert len(_affordable(points, lambda p: 0.1, 100.0)) == 10
    # a dear point is passed over, not a stop: the 2-hour Dahu search's second point (a long
    # broadcast on 1x1,024, 165 times the anchor) had left it screening the anchor alone
    dear = {**cost, 1: 50.0}
    assert [p["i"] for p in _affordable(points, lambda p: dear[p["i"]], 7.5)] == [0, 2, 3, 4]  # 1 + 3 + 1 + 2
    assert [p["i"] for p in _affordable(points, lambda p: cost[p["i"]], 100.0, most=2.0)] == [0, 1, 3, 4, 6, 7, 9]
    assert [p["i"] for p in _affordable(points, lambda p: cost[p["i"]], 100.0, limit=3)] == [0, 1, 2]


def test_no_size_is_below_one_block_per_process_row_and_column_of_the_anchors_grid():
    """Below N = NB x max(P, Q) of the anchor some of its own ranks hold no part of the matrix
    and a screening ranks grids by latency (T2: 4x256 kept at N = 568-2,272, beaten by 21.6 %
    at 4,544). Dahu's 20-minute plan screened at 1,736 before the floor; now its sizes go
    from 4,096 to the same N_top in equal ratios, and coinciding sizes are priced once (their
    runs come from the store)."""
    from hplsim.tune.search import _screen_cost, floor_n, make_plan, rung_sizes

    anchor = HplConfig(n=772_992, nb=128, p=32, q=32)
    space = make_space(1024, anchor, (64, 128, 256), None)
    assert floor_n(space, anchor, anchor.n) == 4096
    assert floor_n(space, HplConfig(n=772_992, nb=64, p=4, q=256), 772_992) == 64 * 256
    assert floor_n(space, HplConfig(n=772_992, nb=64, p=2, q=2), 772_992) == 2 * 256  # two blocks of the largest NB
    # never above the final N the user fixed (-N 2000: the search had run at 4,096), never
    # below two blocks of the largest NB
    assert floor_n(space, anchor, 2000) == 2000 and floor_n(space, anchor, 300) == 512
    small = make_plan(space, 2000, 1200, anchor)
    assert small is not None and max(small.sizes) == 2000
    for budget in (600, 1200, 7200, 36_000):
        plan = make_plan(space, anchor.n, budget, anchor)
        assert plan is not None and min(plan.sizes) >= 4096, (budget, plan)
        assert list(plan.sizes) == sorted(plan.sizes) and plan.estimate_s <= budget
    twenty = make_plan(space, anchor.n, 1200, anchor)
    assert twenty.sizes[0] == 4096 < twenty.sizes[1]
    # at the floor the four sizes coincide: one screening, priced once
    assert rung_sizes(4096, 4096) == (4096,) * 4
    assert _screen_cost(27, (4096,) * 4, anchor) == 27 * _screen_cost(1, (4096,), anchor)


# ------------------------------------------------------------- the cost law against runs
# The law's factors for the spread-roll swaps and the long broadcasts are measured against
# timed simulations by benchmarks/cost_factors.py (a timing, so a benchmark: with both cores
# busy the spread-roll's factor measured 1.76 against 2.5 quiet, 2026-12-06, and CI failed
# once on the long broadcast at 9.3x against 5.7x). Here only that the script runs.
@pytest.mark.slow
def test_the_cost_factors_benchmark_prints_each_factor_beside_the_laws():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "benchmarks" / "cost_factors.py"),
                          "--repeat", "1"], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if " / " in line]
    assert len(rows) == 4
    for row in rows:
        measured, law, ratio = float(row[-4]), float(row[-2]), float(row[-1])
        assert measured > 1.0 and law > 1.0 and ratio == pytest.approx(measured / law, abs=0.01)


def test_a_sensitivity_table_at_a_smaller_size_when_n_top_is_too_dear(tmp_path, monkeypatch):
    """When what is left of the budget does not pay for the neighbours at N_top (the 2-hour
    Dahu search: 4,756 s needed, 2,253 s left, no table), they run at the largest smaller
    size it pays for, and the table says which. A stand-in for the simulation and for the
    runner's prices (any neighbour at N_top dearer than what is left, any at a smaller size
    nearly free, whatever the cost law's level): its first run at N_top takes all but 1.1 s
    of the budget."""
    from hplsim.sweep.tasks import Outcome
    from hplsim.tune import runner

    spent, top = [0.0], {}

    def price(c):
        return 5.0 if c.n == 1920 else 0.01

    def dear_top(task, variant):
        c = task.config
        took = price(c)
        if c.n == 1920 and not top:  # N_top of this search (its plan's sizes: 256 … 1920)
            top[c] = took = 10.0 - spent[0] - 1.1
        spent[0] += took
        gflops = c.n ** 0.5 * (1 + c.depth) / (1 + abs(c.nb - 96) / 64) + task.seed % 3
        return Outcome(task.hash, "ok", gflops, 2 / 3 * c.n**3 / gflops / 1e9, took, 0)

    monkeypatch.setattr(runner, "run_task", dear_top)
    monkeypatch.setattr(runner, "estimate_s", price)
    monkeypatch.setattr(runner, "RESERVE_PER_RUN_S", 0.0)
    _model(tmp_path)
    code, out, err = invoke([*TINY, "--seed", "5"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["search"]["sizes"][-1] == 1920 and top
    table = doc["sensitivity"]
    assert table and len({s["n"] for s in table}) == 1 and table[0]["n"] < 1920
    assert f"the sensitivity table is at N={table[0]['n']}" in " ".join(doc["notes"])
    assert "did not pay for the sensitivity runs at N=1920" in err
    spent[0] = 0.0  # the same search again, for its text
    top.clear()
    code, text, _ = invoke([a for a in TINY if a != "--json"] + ["--seed", "5"], tmp_path)
    assert code == 0 and f"(N={table[0]['n']}, one seed each; below N_top=1920" in text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed one
def test_a_ctrl_c_that_a_finaliser_swallowed_still_stops_the_search(tmp_path, monkeypatch):
    """As the sweep (test_sweep_store.py): a Ctrl-C whose KeyboardInterrupt Python dropped
    inside a finaliser stops the search after the run it came in, exit 130, and the store
    records the search as interrupted. A stand-in for the simulation."""
    import sqlite3

    from hplsim.sweep.tasks import Outcome
    from hplsim.tune import runner

    calls = [0]

    def fake(task, variant):
        calls[0] += 1
        if calls[0] == 3:
            sigint_in_a_finaliser()
        c = task.config
        return Outcome(task.hash, "ok", 10.0 + c.nb / 64, 2 / 3 * c.n**3 / 1e10, 0.01, 0)

    monkeypatch.setattr(runner, "run_task", fake)
    _model(tmp_path)
    code, out, err = invoke([*TINY, "--seed", "5", "--db", "i.sqlite"], tmp_path)
    assert code == 130 and "hplsim: interrupted" in err, (code, err)  # click turns Ctrl-C into Abort
    db = sqlite3.connect(tmp_path / "i.sqlite")
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == calls[0] == 3
    assert [r[0] for r in db.execute("SELECT status FROM sweeps")] == ["interrupted"]


def test_neighbours_too_dear_to_simulate_are_listed_not_run(tmp_path, monkeypatch):
    """Around a 1x2 winner nothing is dear; a neighbour whose estimate is over 16 times the
    winner's (here: the long broadcasts, with the cost law's Q term made huge) is listed in
    `sensitivity_not_simulated` and a note, never run, and the others still make the table
    (the 20-minute Dahu search around 4x256 had lost its whole table to them)."""
    from hplsim.sweep.tasks import Outcome
    from hplsim.hpl import cost
    from hplsim.tune import runner

    monkeypatch.setattr(cost, "LONG_BCAST_PER_Q2", 1e4)
    ran = []

    def fake(task, variant):
        ran.append(task.config)
        c = task.config
        gflops = c.n ** 0.5 * (1 + c.depth) / (1 + abs(c.nb - 96) / 64) + task.seed % 3
        return Outcome(task.hash, "ok", gflops, 2 / 3 * c.n**3 / gflops / 1e9, 0.01, 0)

    monkeypatch.setattr(runner, "run_task", fake)
    _model(tmp_path)
    args = [a if a != "1" or i != TINY.index("--bcast") + 1 else "1,4,5" for i, a in enumerate(TINY)]
    code, out, err = invoke([*args, "--seed", "5", "--budget", "10m"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    skipped = doc["sensitivity_not_simulated"]
    assert sorted(d["value"] for d in skipped) == [4, 5]
    assert all(d["parameter"] == "bcast" and d["estimated_s"] > 0 for d in skipped)
    assert not any(c.bcast in (4, 5) and c.n == doc["simulated"]["n"] for c in ran)
    assert doc["sensitivity"] and any("not simulated" in n for n in doc["notes"])


def test_a_part_of_the_table_when_no_size_pays_for_all_of_it(tmp_path, monkeypatch):
    """When neither N_top nor a smaller size leaves room for every neighbour, the table has
    the rows the budget pays for at the size where it pays for the most (the 2-hour Dahu
    search ran 1 row of 16 at N_top), and the others are listed with reason "budget" (the
    20-minute Dahu search around 8x128 had printed no table at all). A stand-in for the
    simulation: its first run at N_top leaves room for one more run and the final seeds (the
    neighbours screened at N_top cost nothing more: they are in the store); at the first
    size, the same room pays for more rows."""
    from hplsim.sweep.tasks import Outcome
    from hplsim.tune import runner
    from hplsim.hpl.cost import estimate_s
    from hplsim.tune.runner import RESERVE_PER_RUN_S

    # a budget whose screening at the first size leaves some neighbours unscreened (with
    # more, the first size's screening covers every neighbour and its table is whole; with
    # less, none): the plan comes from the cost law, so the window moves with its level
    # (5-7 s with E77's law, 8-10 s with E76's, 7 s with E72's)
    BUDGET_S = 6.0
    spent, top = [0.0], {}

    def dear_top(task, variant):
        c = task.config
        took = estimate_s(c)
        if c.n == 1920 and not top:
            charge = estimate_s(c) + RESERVE_PER_RUN_S
            top[c] = took = BUDGET_S - spent[0] - RESERVE_PER_RUN_S - (1 + 2) * charge - 0.05
        spent[0] += took
        gflops = c.n ** 0.5 * (1 + c.depth) / (1 + abs(c.nb - 96) / 64) + task.seed % 3
        return Outcome(task.hash, "ok", gflops, 2 / 3 * c.n**3 / gflops / 1e9, took, 0)

    monkeypatch.setattr(runner, "run_task", dear_top)
    _model(tmp_path)
    args = [a if i != TINY.index("--bcast") + 1 else "0,1,2,3" for i, a in enumerate(TINY)]
    code, out, err = invoke([*args, "--seed", "5", "--budget", f"{BUDGET_S:g}s"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert top and doc["search"]["sizes"][-1] == 1920
    rows, missing = doc["sensitivity"], doc["sensitivity_not_simulated"]
    (n,) = {r["n"] for r in rows}
    assert n == doc["search"]["sizes"][0] < 1920, (rows, missing, err)
    assert missing and {(m["reason"], m["n"]) for m in missing} == {("budget", n)}
    assert f"the table has {len(rows)} of its {len(rows) + len(missing)} rows, at N={n}" in err
    # more rows there than N_top would have had, and the note says how many
    note = next(t for t in doc["notes"] if t.startswith(f"the sensitivity table is at N={n}"))
    assert int(note.rsplit("N=1920: ", 1)[1].rstrip(")")) < len(rows)
    assert doc["simulated"]["seeds"] == 3  # the final seeds' share was kept


def test_the_plan_is_the_searchs_first_size_and_simulates_nothing(tmp_path, monkeypatch):
    """`--plan` prints what the search will screen, without running anything; the search
    with the same inputs then screens exactly those configurations (a stand-in for the
    simulation: what is compared is what gets run)."""
    from hplsim.sweep.tasks import Outcome
    from hplsim.tune import runner

    ran = []

    def fake(task, variant):
        ran.append(task.config)
        c = task.config
        gflops = c.n ** 0.5 * (1 + c.depth) / (1 + abs(c.nb - 96) / 64) + c.bcast + task.seed % 3
        return Outcome(task.hash, "ok", gflops, 2 / 3 * c.n**3 / gflops / 1e9, 0.01, 0)

    monkeypatch.setattr(runner, "run_task", fake)
    _model(tmp_path)
    wide = [a for i, a in enumerate(TINY) if TINY[i - 1] not in ("--pfact", "--rfact", "--bcast")
            and a not in ("--pfact", "--rfact", "--bcast")]
    args = [*wide, "--seed", "3", "--budget", "20s"]
    code, out, err = invoke([*args, "--plan", "-o", "HPL.dat"], tmp_path)
    assert code == 0, err
    assert not ran and not (tmp_path / "HPL.dat").exists() and "no HPL.dat is written" in err
    plan = json.loads(out)["plan"]
    assert plan["space_size"] == 2 * 3 * 3 * 6 * 2 and 1 < plan["screened"] < plan["space_size"]
    assert len(plan["first_rung"]) == plan["screened"] and plan["estimated_s"] <= plan["budget_s"]
    keys = ("nb", "p", "q", "pfact", "rfact", "bcast", "depth", "swap")
    planned = {tuple(e[k] for k in keys) for e in plan["first_rung"]}

    code, out, err = invoke(args, tmp_path)
    assert code == 0, err
    n0 = plan["sizes"][0]
    screened = {tuple(getattr(c, k) for k in keys) for c in ran if c.n == n0}
    search = json.loads(out)["search"]
    assert screened == planned and search["screened"] == plan["screened"]
    assert search["estimated_s"] == pytest.approx(plan["estimated_s"])  # one estimate, printed by both


def test_the_partial_table_goes_where_the_budget_pays_for_the_most_rows_the_largest_on_a_tie():
    from hplsim.tune.search import _key, _most, _rows_paid

    space = make_space(2, HplConfig(n=1 << 20), (64, 128), None, depth=(0, 1), pfact=(1,), rfact=(2,),
                       bcast=(1,), swap=(0,))
    winner = {"grid": (1, 2), "nb": 64, "pfact": 1, "rfact": 2, "bcast": 1, "depth": 1, "swap": 0}
    around = [("nb", {**winner, "nb": 128}), ("depth", {**winner, "depth": 0})]
    scores = {n: {_key(winner): 1.0} for n in (256, 512, 1024)}

    class Priced:  # a run costs its N in ms
        def charge(self, runs):
            return sum(c.n / 1000 for c, _ in runs)

    def _most_rows(*args):  # where search() puts the partial table
        return _most(_rows_paid(*args))

    # 1.1 s pays for both rows at 256 and 512, for one at 1,024: 512 (the largest of the most)
    assert _most_rows(space, Priced(), around, winner, scores, [256, 512, 1024], 1, 1.1) == 512
    assert _most_rows(space, Priced(), around, winner, scores, [256, 512, 1024], 1, 5.0) == 1024
    assert _most_rows(space, Priced(), around, winner, scores, [256, 512, 1024], 1, 0.6) == 256


def test_without_the_final_seeds_the_figure_still_comes_from_the_law(tmp_path, monkeypatch):
    """The 2-hour Dahu search ran out of budget before its final seeds; the fallback kept
    only the winner's run at N_top, so the Gflops(N) law lost its sizes and the figure stayed
    at N_top (21,744) while the recommendation's N was 770,432. The winner's smaller sizes
    are already in the store: they cost nothing and must stay. Here the final seeds are made
    unaffordable (a stand-in for the budget's bookkeeping), everything else is real."""
    from hplsim.tune import runner

    real_run = runner.Runner.run

    def no_other_seed(self, runs):
        if any(s != 5 for _, s in self._missing(runs)):
            raise runner.BudgetSpent("the final seeds are not affordable here")
        return real_run(self, runs)

    monkeypatch.setattr(runner.Runner, "run", no_other_seed)
    _model(tmp_path)
    code, out, err = invoke([*TINY, "--seed", "5"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert "the interval has one seed only" in err
    assert doc["simulated"]["seeds"] == 1 and doc["best"]["n"] > doc["simulated"]["n"]
    assert not any("no Gflops(N) law" in n for n in doc["notes"])
    assert doc["best"]["source"].startswith("extrapolated from")
