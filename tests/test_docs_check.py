"""The examples of docs/check.md run as written (on the published Dahu history), and say
what the document says they say."""

from __future__ import annotations

import json
import os

import pytest

from conftest import REPO
from docexamples import run_examples


def test_check_doc_examples_run(tmp_path, dahu_dir):
    os.symlink(dahu_dir / "dgemm_calibration_history.csv", tmp_path / "dgemm_calibration_history.csv")
    results = run_examples(REPO / "docs" / "check.md", tmp_path)
    assert len(results) == 7
    table, as_json, december, replay, _, added, ours = (r.stdout for r in results)
    assert "64 series: 64 ok (γ = 0.9999, r = 1 and 5)" in table
    assert "intercept_residual (regression)" in table.split("dahu-1.grid5000.fr/cpu0")[1].splitlines()[0]
    assert {v["verdict"] for v in json.loads(as_json)} == {"ok"}
    assert "64 series: 64 not enough history" in december
    # the outlier log removed a run of dahu-12.grid5000.fr/cpu0 and both CPUs' of dahu-5.grid5000.fr on 2019-12-30
    assert "Replay (each run against the runs before it): 0 alarm(s)" in replay
    assert "outlier log: 1 run(s) left out" in replay.split("dahu-5.grid5000.fr/cpu1")[1].splitlines()[0]
    assert not (tmp_path / "charts").exists()  # the charts' example is a slow one
    assert "run(s) added" in added and (tmp_path / "history.sqlite").exists()
    assert "not enough history" in ours


@pytest.mark.slow
def test_check_doc_charts_example_runs(tmp_path, dahu_dir):
    """The slow example: one control chart per series of the Dahu history and the
    overview, and the same verdicts and replay as without --plot."""
    os.symlink(dahu_dir / "dgemm_calibration_history.csv", tmp_path / "dgemm_calibration_history.csv")
    results = run_examples(REPO / "docs" / "check.md", tmp_path, slow=True)
    assert len(results) == 8
    replay, charts = results[3].stdout, results[4].stdout
    assert charts == replay + "charts: charts/\n"
    pngs = sorted(p.name for p in (tmp_path / "charts").iterdir())
    assert len(pngs) == 65 and "overview.png" in pngs and "dahu-14.grid5000.fr-cpu1.png" in pngs
    assert all((tmp_path / "charts" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
