"""The examples of docs/tune.md run as written (the 1,024-rank one with -m slow)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from docexamples import run_examples
from hplsim.hpl.hpldat import read_hpl_dat


def test_tune_doc_examples_run(tmp_path):
    tuned, predicted, planned = run_examples(REPO / "docs" / "tune.md", tmp_path)
    assert "Recommendation: N=" in tuned.stdout and "Sensitivity" in tuned.stdout
    assert read_hpl_dat(tmp_path / "HPL.dat").grids == ((1, 2),)
    assert "90 % interval, WR12R2C2 N=2000 NB=64 2x2: [" in predicted.stdout and "(3 seeds)" in predicted.stdout
    assert "configurations at N=6632" in planned.stdout and "Nothing simulated (--plan)." in planned.stdout


@pytest.mark.slow
def test_tune_doc_examples_dahu(tmp_path):
    _, _, dahu, _ = run_examples(REPO / "docs" / "tune.md", tmp_path, slow=True)
    doc = json.loads(dahu.stdout)
    best = doc["best"]
    assert best["p"] * best["q"] == 1024 and best["interval"][0] <= best["gflops"] <= best["interval"][1]
    assert doc["search"]["spent_s"] <= doc["search"]["budget_s"] == 1200
    assert doc["sensitivity"] and len(doc["top"]) > 1
