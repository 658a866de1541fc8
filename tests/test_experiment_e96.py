"""validation.md E96 moves every CPU of the dahu-2020 model toward the median CPU's speed
(`docs/experiments/model_variants.py shrunk F`) to measure how much of the ring rolls'
gap with look-ahead the CPUs' spread carries; this holds the variant to its definition,
computed here independently: a CPU whose time at HPL's update (7,812 x 7,812 x 128, the
law's own terms) is r times the median CPU's gets r' = 1 + F (r - 1), its dgemm law (mean
and noise) scaled as a whole, every other law untouched."""

import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hplsim.models.modelfile import load_model
from hplsim.presets import dahu2020

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "model_variants.py"
M, N, K = 7812, 7812, 128


def _update_s(law: dict) -> float:
    x = {"intercept": 1, "mnk": M * N * K, "mn": M * N, "mk": M * K, "nk": N * K}
    return sum(c * x[t] for t, c in law["mean"].items())


def _cpus(doc: dict) -> list[tuple[str, int, dict]]:
    return [(host, i, cpu["kernels"]) for host, v in doc["hosts"].items() for i, cpu in enumerate(v["cpus"])]


@pytest.mark.parametrize("f", [0.0, 0.5, 1.0])
def test_shrunk_moves_each_cpu_toward_the_median_by_the_factor(tmp_path, f):
    out = tmp_path / "shrunk.yaml"
    subprocess.run([sys.executable, str(SCRIPT), "shrunk", str(dahu2020.MODEL_FILE), str(out), str(f)],
                   check=True, timeout=300)
    load_model(out)  # a valid model file
    base, new = yaml.safe_load(dahu2020.MODEL_FILE.read_text()), yaml.safe_load(out.read_text())
    assert new["default"] == base["default"] and new["hosts"].keys() == base["hosts"].keys()
    times = [_update_s(k["dgemm"]) for _, _, k in _cpus(base)]
    mid = statistics.median(times)
    assert max(times) / mid > 1.1 and min(times) / mid < 0.95  # the preset's spread is there to shrink
    for (host, i, old), (_, _, got), t in zip(_cpus(base), _cpus(new), times):
        assert {k: g for k, g in got.items() if k != "dgemm"} == {k: g for k, g in old.items() if k != "dgemm"}
        r = t / mid
        assert _update_s(got["dgemm"]) / mid == pytest.approx(1 + f * (r - 1), rel=1e-12), (host, i)
        s = (1 + f * (r - 1)) / r
        for term, c in old["dgemm"]["mean"].items():
            assert got["dgemm"]["mean"][term] == pytest.approx(c * s, rel=1e-12)
        for term, c in old["dgemm"]["noise"]["sigma"].items():
            assert got["dgemm"]["noise"]["sigma"][term] == pytest.approx(c * s, rel=1e-12)
        assert got["dgemm"]["noise"]["family"] == old["dgemm"]["noise"]["family"]
