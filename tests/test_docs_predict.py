"""The examples of docs/predict.md and README.md run as written."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from docexamples import examples, run_examples


def test_predict_doc_examples_run(tmp_path):
    results = run_examples(REPO / "docs" / "predict.md", tmp_path)
    assert len(results) >= 4
    assert json.loads(results[0].stdout)[0]["gflops"] > 0
    assert len(json.loads((tmp_path / "results.json").read_text())) == 4  # 2 N x 2 grids of HPL.dat
    assert "compute (modelled kernels)" in results[3].stdout
    assert "panel probes:" in results[3].stdout and "busy-waits turned into receives" in results[3].stdout
    assert "HPL's phases" in results[4].stdout and "+ laswp" in results[4].stdout


def test_readme_shows_the_two_commands():
    text = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci in text
    assert "./bootstrap && .venv/bin/hplsim predict" in text


@pytest.mark.slow
def test_slow_predict_doc_examples_run(tmp_path):
    run_examples(REPO / "docs" / "predict.md", tmp_path, slow=True)
    assert examples(REPO / "docs" / "predict.md")[1]
