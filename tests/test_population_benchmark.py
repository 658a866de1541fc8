"""benchmarks/population_dahu.py --merge (issue 24): parts run as separate processes (a
seed each, each half of the 128-node point) put together — their table, the comparison
with the real 2019-03 runs read from the shared data, the cost of the spread — and the
parts that are not one experiment refused."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hplsim.errors import HplsimError
from helpers import load_benchmark

pb = load_benchmark("population_dahu.py", "population_benchmark")


@pytest.fixture(scope="module")
def real() -> pd.DataFrame:
    return pb.reality(pb.reference_dir(None))


def part(tmp_path: Path, name: str, sampled=(), big=None, digest="d1", nodes=32) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"model": "m.yaml", "model_digest": digest, "nodes": nodes, "ranks_per_node": 32,
                                "sampled": [{"n": n, "seed": s, "gflops": g, "sim_wall_s": 1.0}
                                            for n, s, g in sampled], "big": big}))
    return str(path)


def half(gflops=None, gflops_spatial0=None) -> dict:
    return {"nodes": 128, "ranks": 4096, "n": 100000, "seed": 1, "slowest_node": "dahu-14",
            "slowest_dgemm_s": 0.03, "slowest_vs_median": 0.072, "gflops": gflops, "gflops_spatial0": gflops_spatial0}


def test_parts_merge_into_one_experiment(tmp_path, real, capsys):
    mean = real.loc[100000, "mean"]  # the 2019-03 runs' mean (17,826 Gflops)
    a = part(tmp_path, "a.json", [(100000, 1, mean * 1.05), (100000, 2, mean * 1.10)], half(gflops=60000.0))
    b = part(tmp_path, "b.json", [(100000, 2, mean * 1.10), (100000, 3, mean * 0.98)], half(gflops_spatial0=62000.0))
    out = pb.merge([a, b], real)
    text = capsys.readouterr().out
    assert [(s["n"], s["seed"]) for s in out["sampled"]] == [(100000, 1), (100000, 2), (100000, 3)]  # seed 2 once
    (versus,) = out["versus_reality"]
    assert versus["inside"] and versus["sampled_min"] == pytest.approx(mean * 0.98)
    assert "3 seeds" in text and "inside the spread" in text
    assert out["big"]["cost_of_spread"] == pytest.approx(1 - 60000 / 62000)
    assert "cost of the spread between nodes: 3.2 %" in text
    # every seed above the real runs: outside, by the distance to the nearest seed
    c = part(tmp_path, "c.json", [(100000, 4, mean * 1.1)])
    out = pb.merge([c], real)
    assert not out["versus_reality"][0]["inside"]
    assert "outside, -10.0 % from the nearest seed" in capsys.readouterr().out  # (real − seed) / real
    assert out["big"] is None
    # files of older versions do not record the cluster's size: they are the defaults' (32 x 32)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({k: v for k, v in json.loads(Path(c).read_text()).items()
                               if k not in ("nodes", "ranks_per_node")}))
    out = pb.merge([str(old), a], real)
    assert out["nodes"] == 32 and len(out["versus_reality"]) == 1


@pytest.mark.parametrize("case, words", [
    ("digest", "differ in model_digest"),
    ("nodes", "differ in nodes"),
    ("conflict", "N=100000 seed 1 has two different results"),
    ("cluster", "part 2 differ in nodes, N or seed"),
    ("missing", "not a JSON file of this benchmark"),
    ("other", "not a JSON file of this benchmark"),
])
def test_parts_of_different_experiments_are_refused(tmp_path, real, case, words):
    a = part(tmp_path, "a.json", [(100000, 1, 20000.0)], half(gflops=1.0))
    b = {"digest": lambda: part(tmp_path, "b.json", digest="d2"),
         "nodes": lambda: part(tmp_path, "b.json", nodes=128),
         "conflict": lambda: part(tmp_path, "b.json", [(100000, 1, 20001.0)]),
         "cluster": lambda: part(tmp_path, "b.json", big={**half(gflops_spatial0=2.0), "seed": 2}),
         "missing": lambda: str(tmp_path / "nothing.json"),
         "other": lambda: (tmp_path / "o.json").write_text('{"gflops": 1}') and str(tmp_path / "o.json")}[case]()
    with pytest.raises(HplsimError, match=words):
        pb.merge([a, b], real)
