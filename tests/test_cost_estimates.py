"""A run's cost is known before it is paid: `sweep --dry-run` lists each run with the cost
law's estimate of its wall time and memory, and `predict` says it in one line when the
estimate exceeds a minute (hplsim.hpl.cost, the law `tune` plans with)."""

from __future__ import annotations

import re

from helpers import run_cli, run_process

from hplsim.hpl import cost
from hplsim.hpl.config import HplConfig

SPEC = """\
hpl: {n: [2000, 40000], nb: [64, 128], grids: [[2, 2], [32, 32]], depth: [0, 1]}
seeds: [1, 2]
"""


def test_tune_reads_the_same_law():
    """One law, declared once: tune plans with hplsim.hpl.cost's estimate itself."""
    from hplsim.tune import runner, search

    assert runner.estimate_s is cost.estimate_s and search.estimate_s is cost.estimate_s


def test_the_dry_run_lists_each_run_with_its_estimate(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    r = run_cli("sweep", "spec.yaml", "--db", "r.sqlite", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("32 runs planned")
    runs = [line for line in lines if line.startswith("  run ")]
    assert len(runs) == 32
    seen = set()
    for line in runs:
        m = re.fullmatch(r"  run (\w+) N=(\d+) NB=(\d+) (\d+)x(\d+) seed (\d+) variant 0: (.+)", line)
        assert m, line
        label, n, nb, p, q, seed, estimate = m.groups()
        depth = int(label[2])  # HPL's label: W R <depth> <bcast> ...
        config = HplConfig(n=int(n), nb=int(nb), p=int(p), q=int(q), depth=depth)
        assert config.label() == label
        assert estimate == cost.estimate_text(config)
        seen.add((config.n, config.nb, config.p, depth, int(seed)))
    assert len(seen) == 32
    # the dearest run: the most ranks at the largest N and the smallest NB, look-ahead or not
    dear = HplConfig(n=40_000, nb=64, p=32, q=32, depth=1)
    assert re.fullmatch(r"about \d+(\.\d)? min, \d+ MB", cost.estimate_text(dear))
    total = sum(cost.estimate_s(HplConfig(n=n, nb=nb, p=p, q=p, depth=d)) for n, nb, p, d, _ in seen)
    assert lines[-1] == (f"estimated: {cost.duration_text(total)} of simulation in all, up to "
                         f"{cost.memory_text(cost.estimate_memory_bytes(dear))} per run")
    assert not (tmp_path / "r.sqlite").exists()


def test_memory_grows_with_ranks_and_slightly_with_n():
    small, big = HplConfig(n=20_000, nb=128, p=4, q=4), HplConfig(n=20_000, nb=128, p=32, q=32)
    assert cost.estimate_memory_bytes(small) < 50e6 < 250e6 < cost.estimate_memory_bytes(big) < 400e6
    larger_n = HplConfig(n=500_000, nb=128, p=32, q=32)
    assert 1.5 < cost.estimate_memory_bytes(larger_n) / cost.estimate_memory_bytes(big) < 2


def test_predict_says_the_cost_of_a_long_run_before_it_starts(tmp_path):
    """The Dahu preset at N = 100,000: minutes by the law; killed by its --timeout at once."""
    config = HplConfig(n=100_000, nb=128, p=32, q=32)
    assert cost.estimate_s(config) > cost.WORTH_SAYING_S
    r = run_process("predict", "--preset", "dahu", "-N", "100000", "--seed", "1", "--timeout", "1", cwd=tmp_path,
                    timeout=120)
    note = [line for line in r.stderr.splitlines() if "estimated simulation cost" in line]
    assert len(note) == 1
    assert re.fullmatch(r"hplsim: estimated simulation cost: about \d+ min and \d+ MB "
                        r"\(docs/predict\.md, Cost of a simulation\)", note[0])
    lines = r.stderr.splitlines()
    # before the run (which the timeout ended): only the preset's machine state comes first
    assert lines[0].startswith("hplsim: preset dahu: ") and lines[1] == note[0]
    assert r.returncode != 0


def test_predict_says_nothing_of_a_short_run(tmp_path):
    r = run_cli("predict", "-N", "600", "--nb", "64", "-P", "2", "-Q", "2", "--seed", "1", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "estimated" not in r.stderr
