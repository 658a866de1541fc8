"""validation.md E61 slows chosen CPUs of the median model (`docs/experiments/model_variants.py
scaled`) to test whether the spread-roll's stall with look-ahead grows with the CPUs'
spread; this holds the variant to its definition: the named CPUs' dgemm law, mean and
noise, times the factor, every other law untouched."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hplsim.models.modelfile import load_model
from hplsim.presets import dahu

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "model_variants.py"


@pytest.mark.parametrize("spec, slowed", [
    ("6:0=1.108", {("dahu-5.grid5000.fr", 0): 1.108}),
    ("6:*=1.1,2:1=0.9", {("dahu-5.grid5000.fr", 0): 1.1, ("dahu-5.grid5000.fr", 1): 1.1,
                         ("dahu-1.grid5000.fr", 1): 0.9}),
    ("*:0=1.055", {(f"dahu-{i}.grid5000.fr", 0): 1.055 for i in range(32)}),
])
def test_scaled_multiplies_the_named_cpus_dgemm_and_nothing_else(tmp_path, spec, slowed):
    out = tmp_path / "scaled.yaml"
    subprocess.run([sys.executable, str(SCRIPT), "scaled", str(dahu.MODEL_FILE), str(out), spec],
                   check=True, timeout=300)
    load_model(out)  # a valid model file
    base, new = yaml.safe_load(dahu.MODEL_FILE.read_text()), yaml.safe_load(out.read_text())
    assert new["default"] == base["default"] and new["hosts"].keys() == base["hosts"].keys()
    for host, v in base["hosts"].items():
        for i, cpu in enumerate(v["cpus"]):
            got = new["hosts"][host]["cpus"][i]["kernels"]
            assert {k: g for k, g in got.items() if k != "dgemm"} == {k: g for k, g in cpu["kernels"].items() if k != "dgemm"}
            factor = slowed.get((host, i), 1.0)
            law = cpu["kernels"]["dgemm"]
            for term, c in law["mean"].items():
                assert got["dgemm"]["mean"][term] == pytest.approx(c * factor, rel=1e-12)
            for term, c in law["noise"]["sigma"].items():
                assert got["dgemm"]["noise"]["sigma"][term] == pytest.approx(c * factor, rel=1e-12)
            assert got["dgemm"]["noise"]["family"] == law["noise"]["family"]
