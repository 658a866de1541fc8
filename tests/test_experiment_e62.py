"""validation.md E62 gives each Dahu node's two CPUs the mean of their dgemm laws
(`docs/experiments/model_variants.py hostmean`) to run the even and the odd process
columns at one pace; this holds the variant to its definition: per node, both CPUs'
dgemm mean and noise are the coefficient-wise mean of the node's, every other law untouched."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hplsim.models.modelfile import load_model
from hplsim.presets import dahu

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "model_variants.py"


def test_hostmean_gives_a_nodes_cpus_the_mean_of_their_dgemm_laws(tmp_path):
    out = tmp_path / "hostmean.yaml"
    subprocess.run([sys.executable, str(SCRIPT), "hostmean", str(dahu.MODEL_FILE), str(out)],
                   check=True, timeout=300)
    load_model(out)  # a valid model file
    base, new = yaml.safe_load(dahu.MODEL_FILE.read_text()), yaml.safe_load(out.read_text())
    assert new["default"] == base["default"] and new["hosts"].keys() == base["hosts"].keys()
    differed = 0
    for host, v in base["hosts"].items():
        laws = [c["kernels"]["dgemm"] for c in v["cpus"]]
        differed += laws[0]["mean"] != laws[1]["mean"]
        for i, cpu in enumerate(v["cpus"]):
            got = new["hosts"][host]["cpus"][i]["kernels"]
            assert {k: g for k, g in got.items() if k != "dgemm"} == {k: g for k, g in cpu["kernels"].items() if k != "dgemm"}
            for part in ("mean", "sigma"):
                def of(law):
                    return law["mean"] if part == "mean" else law["noise"]["sigma"]
                for term in of(laws[0]):
                    want = sum(of(g)[term] for g in laws) / len(laws)
                    assert of(got["dgemm"])[term] == pytest.approx(want, rel=1e-12)
            assert got["dgemm"]["noise"]["family"] == cpu["kernels"]["dgemm"]["noise"]["family"]
    assert differed > 0  # the preset's CPUs of a node differ, so the test can fail
