"""The examples of docs/population.md run as written (on the published Dahu history), and
say what the document says they say; the example model of the sensitivity specs is what
the documented command writes."""

from __future__ import annotations

import json
import os

import yaml

from conftest import REPO
from docexamples import run_examples
from helpers import assert_same_document


def test_population_doc_examples_run(tmp_path, dahu_dir):
    for name in ("dgemm_calibration_history.csv", "dgemm_raw.csv"):
        os.symlink(dahu_dir / name, tmp_path / name)
    os.symlink(REPO / "src" / "hplsim" / "data" / "dahu" / "model.yaml", tmp_path / "dahu-model.yaml")
    results = run_examples(REPO / "docs" / "population.md", tmp_path)
    assert len(results) == 4
    fit, fit_mix, as_json, flat = results
    text = (REPO / "docs" / "population.md").read_text()
    for line in fit.stderr.splitlines()[:7]:  # the law and the held-out check, as the page shows them
        assert line in text, line
    pop = yaml.safe_load((tmp_path / "pop-mix.yaml").read_text())["population"]["dgemm"]
    assert len(pop["noise_shape"]) == 3 and pop["noise_family"] == "halfnormal"
    run = json.loads(as_json.stdout)[0]
    assert run["sampled_hosts"][0]["host"] == "dahu-0.grid5000.fr" and run["gflops"] > 0
    assert "WR" in flat.stdout
    # examples/sensitivity/dahu-population.yaml is the second command's output
    shipped = yaml.safe_load((REPO / "examples" / "sensitivity" / "dahu-population.yaml").read_text())
    fresh = yaml.safe_load((tmp_path / "pop-mix.yaml").read_text())
    for doc in (shipped, fresh):
        doc.pop("provenance")
        doc.pop("description")
    assert_same_document(shipped, fresh)
