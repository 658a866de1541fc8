"""The examples of docs/presets.md run as written."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from docexamples import run_examples


def test_presets_doc_examples_run(tmp_path):
    results = run_examples(REPO / "docs" / "presets.md", tmp_path)
    assert len(results) == 2 and "WC05C2R4" in results[0].stdout  # Stampede's T/V: column-major, depth 0, longM
    assert "platform: builtin:stampede:star" in results[1].stdout


@pytest.mark.slow
def test_slow_presets_doc_examples_run(tmp_path):
    results = run_examples(REPO / "docs" / "presets.md", tmp_path, slow=True)
    full = json.loads(results[1].stdout)[0]
    assert (full["p"], full["q"], full["nb"]) == (77, 78, 1024) and full["gflops"] > 0
