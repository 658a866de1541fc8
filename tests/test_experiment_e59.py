"""validation.md E59 slows the 2019 model's slow CPUs at every kernel, not only dgemm
(`docs/experiments/model_variants.py slowall`); this holds the variant to what E59 says
it is: each CPU's other kernels times its dgemm time at HPL's update over the median CPU's."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from hplsim.models.modelfile import load_model
from hplsim.presets import dahu

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "model_variants.py"
UPDATE = {"intercept": 1, "mnk": 7812 * 7812 * 128, "mn": 7812 * 7812, "mk": 7812 * 128, "nk": 7812 * 128}


def test_slowall_slows_every_kernel_of_a_slow_cpu_as_much_as_its_dgemm(tmp_path):
    out = tmp_path / "slowall.yaml"
    subprocess.run([sys.executable, str(SCRIPT), "slowall", str(dahu.MODEL_FILE), str(out)], check=True, timeout=300)
    load_model(out)  # a valid model file
    base, new = yaml.safe_load(dahu.MODEL_FILE.read_text()), yaml.safe_load(out.read_text())

    def update(law: dict) -> float:
        return sum(c * UPDATE[t] for t, c in law["mean"].items())

    times = {(h, i): update(c["kernels"]["dgemm"]) for h, v in base["hosts"].items() for i, c in enumerate(v["cpus"])}
    mid = float(np.median(list(times.values())))
    slowest = max(times, key=times.get)
    assert slowest == ("dahu-14.grid5000.fr", 0) and times[slowest] / mid == pytest.approx(1.217, abs=0.001)
    others = [k for k in base["default"]["kernels"] if k != "dgemm"]
    assert len(others) == 12
    for (host, i), t in times.items():
        kernels = new["hosts"][host]["cpus"][i]["kernels"]
        assert kernels["dgemm"] == base["hosts"][host]["cpus"][i]["kernels"]["dgemm"]
        for k in others:
            was = base["default"]["kernels"][k]
            for term, v in was["mean"].items():
                assert kernels[k]["mean"][term] == pytest.approx(v * t / mid, rel=1e-12)
            for term, v in was["noise"]["sigma"].items():
                assert kernels[k]["noise"]["sigma"][term] == pytest.approx(v * t / mid, rel=1e-12)
    assert new["default"] == base["default"]
