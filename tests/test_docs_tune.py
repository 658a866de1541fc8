"""The examples of docs/tune.md run as written (the 1,024-rank one with -m slow)."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO
from docexamples import run_examples
from helpers import run_cli
from hplsim.hpl.hpldat import read_hpl_dat


def test_tune_doc_examples_run(tmp_path):
    tuned, predicted, planned = run_examples(REPO / "docs" / "tune.md", tmp_path)
    assert "Recommendation: N=" in tuned.stdout and "Sensitivity" in tuned.stdout
    assert read_hpl_dat(tmp_path / "HPL.dat").grids == ((1, 2),)
    assert "90 % interval, WR12R2C2 N=2000 NB=64 2x2: [" in predicted.stdout and "(3 seeds)" in predicted.stdout
    assert "configurations at N=8296" in planned.stdout and "Nothing simulated (--plan)." in planned.stdout
    # the page's account of that plan is the plan the command prints
    page = (REPO / "docs" / "tune.md").read_text()
    screened, n, estimate = re.search(r"it lists (\d+) configurations at N = ([\d,]+) and an estimate of "
                                      r"about ([\d,]+) s", page).groups()
    assert f"{screened} of " in planned.stdout and f"configurations at N={n.replace(',', '')}," in planned.stdout
    assert f"estimated {estimate.replace(',', '')} s of the 7200 s budget" in planned.stdout


@pytest.mark.parametrize("budget, sizes", [("20m", ("4,096", "13,912")), ("2h", ("8,296", "66,384"))])
def test_the_pages_dahu_plans_are_the_plans(budget, sizes):
    """docs/tune.md says at which sizes the Dahu plans screen and end: the plans --plan prints."""
    page = " ".join((REPO / "docs" / "tune.md").read_text().split())
    first, top = sizes
    said = re.search(rf"`--budget {budget}` the plan screens (?:(\d+) configurations )?at N = {first}", page)
    assert said and f"N_top = {top}" in page
    result = run_cli("tune", "--preset", "dahu", "--memory-per-node", "192GB", "--budget", budget, "--seed", "1",
                     "--plan", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)["plan"]
    assert plan["sizes"][0] == int(first.replace(",", "")) and plan["sizes"][-1] == int(top.replace(",", ""))
    if said[1]:
        assert len(plan["first_rung"]) == int(said[1])


@pytest.mark.slow
def test_tune_doc_examples_dahu(tmp_path):
    _, _, dahu, _ = run_examples(REPO / "docs" / "tune.md", tmp_path, slow=True)
    doc = json.loads(dahu.stdout)
    best = doc["best"]
    assert best["p"] * best["q"] == 1024 and best["interval"][0] <= best["gflops"] <= best["interval"][1]
    assert doc["search"]["spent_s"] <= doc["search"]["budget_s"] == 1200
    assert doc["sensitivity"] and len(doc["top"]) > 1
