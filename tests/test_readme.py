"""README.md is a user's page: its quick start runs as written and prints what it says, and
its figures come from tables rendered from benchmarks/results/ (test_results_tables.py),
never from its prose."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from conftest import REPO
from docexamples import FENCE, examples, run_examples
from hplsim.hpl.config import HplParams
from hplsim.hpl.hpldat import write_hpl_dat

README = REPO / "README.md"


def _prose(text: str) -> str:
    """The README without its code blocks and its rendered tables."""
    text = FENCE.sub("", text)
    return re.sub(r"<!-- table: .*?<!-- end table -->", "", text, flags=re.S)


def test_readme_is_short_and_keeps_its_two_commands():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    assert "```sh\n./bootstrap && .venv/bin/hplsim predict\n```" in text
    assert "```sh\n./bootstrap && .venv/bin/python -m pytest\n```" in text
    assert (REPO / ".ci" / "run").read_text().strip().splitlines()[-1] == "./bootstrap && .venv/bin/python -m pytest"
    for section in ("## Quick start", "## How far to trust it", "## What it costs", "## The pipeline",
                    "## Documentation"):
        assert section in text


def test_readme_prose_holds_no_experiment_figures():
    """Measured figures live in the rendered tables; the prose may name sizes, not results."""
    prose = _prose(README.read_text())
    assert not re.search(r"\d\s*%", prose), re.findall(r".{30}\d\s*%.{10}", prose)
    assert not re.search(r"\bE\d{1,3}\b", prose)
    assert not re.search(r"\d\s*(Gflops|GB|MB|min\b|s\b|µs)", prose), re.findall(r".{20}\d\s*(?:Gflops|MB|GB)", prose)


def test_readme_quick_start_runs(tmp_path):
    """The three paths, as pasted: a preset, an HPL.dat, and calibrate → fit → platform →
    predict on this machine (tiny sizes: the shape of each output, not its accuracy)."""
    # the user's HPL.dat: two NBs on a 2x4 grid, small enough for the default suite
    write_hpl_dat(HplParams(ns=(4000,), nbs=(64, 128), grids=((2, 4),)), tmp_path / "HPL.dat")
    out = run_examples(README, tmp_path)
    preset, hpldat, dgemm, mpi, fit, net, platform, mine = out
    assert re.search(r"^WR\w+ +10000 +128 +4 +4 +[\d.]+ +[\d.]+ ", preset.stdout, re.M), preset.stdout
    runs = json.loads((tmp_path / "results.json").read_text())
    assert sorted(r["nb"] for r in runs) == [64, 128] and all(r["p"] * r["q"] == 8 and r["gflops"] > 0 for r in runs)
    assert (tmp_path / "dgemm.zip").stat().st_size > 0 and (tmp_path / "mpi.zip").stat().st_size > 0
    model = yaml.safe_load((tmp_path / "model.yaml").read_text())
    assert "dgemm" in model["default"]["kernels"]
    calibrated = yaml.safe_load((tmp_path / "my-cluster-calibrated.yaml").read_text())
    assert calibrated["nodes"] == 4 and "smpi/os" in calibrated["smpi"]
    assert "4 hosts (node-0 … node-3), 8 rank slots" in platform.stdout
    assert re.search(r"^WR\w+ +4000 +128 +2 +4 +[\d.]+ +[\d.]+ ", mine.stdout, re.M), mine.stdout
    assert "platform: my-cluster-calibrated; model: model.yaml" in mine.stdout


@pytest.mark.slow
def test_readme_slow_examples_run(tmp_path):
    assert any("slow" in c for c in examples(README)[1])
    out = run_examples(README, tmp_path, slow=True)
    assert "Gflops" in out[1].stdout
