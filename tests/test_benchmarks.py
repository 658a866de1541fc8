"""Every benchmark script imports and answers --help: a benchmark is run by hand, rarely,
so nothing else would notice that a module it imports has moved (benchmarks/tune_real.py
failed at import for a whole stop after the real/ split)."""

from __future__ import annotations

import runpy
import sys

import pytest

from conftest import REPO

SCRIPTS = sorted(p for p in (REPO / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 8


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_benchmark_answers_help(script, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    monkeypatch.syspath_prepend(str(script.parent))
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(script), run_name="__main__")
    assert exit_.value.code in (0, None)
    assert "usage:" in capsys.readouterr().out
