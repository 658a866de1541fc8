"""The examples of docs/check.md run as written (on the published Dahu history)."""

from __future__ import annotations

import os

from conftest import REPO
from docexamples import run_examples


def test_check_doc_examples_run(tmp_path, dahu_dir):
    os.symlink(dahu_dir / "dgemm_calibration_history.csv", tmp_path / "dgemm_calibration_history.csv")
    results = run_examples(REPO / "docs" / "check.md", tmp_path)
    assert len(results) == 5
    assert (tmp_path / "charts" / "overview.png").exists()
    assert (tmp_path / "history.sqlite").exists()
