"""The examples of docs/sweep.md run as written."""

from __future__ import annotations

import json

from conftest import REPO
from docexamples import run_examples, run_python


def test_sweep_doc_examples_run(tmp_path):
    results = run_examples(REPO / "docs" / "sweep.md", tmp_path)
    assert len(results) == 10
    first, again, show, as_json, export, whatif, whatif_show, dat, dry, submitit = results
    assert "32 ok, 0 failed" in first.stderr and "nothing to run" in again.stderr
    assert "Best configurations" in show.stdout and "sd" in show.stdout
    runs = json.loads(as_json.stdout)
    assert len(runs) == 32 and all(r["gflops"] > 0 for r in runs)
    assert len(list((tmp_path / "plots").glob("*.png"))) == 4
    assert len((tmp_path / "runs.csv").read_text().splitlines()) == 33
    assert "12 ok, 0 failed" in whatif.stderr and "What if" in whatif_show.stdout
    assert "dropped 3 slowest host(s)" in whatif.stderr and "dropped 1 slowest host(s): dahu-1." in whatif.stderr
    table = whatif_show.stdout.split("What if")[1].splitlines()
    assert table[3].split()[:2] == ["base", "base"]  # the reference first
    slow_net = next(line for line in table if line.split()[:3] == ["1", "GbE", "base"])
    assert float(slow_net.split("%")[0].split()[-1]) < -50  # 100x less bandwidth: far slower
    assert "16 ok, 0 failed" in dat.stderr
    assert "330 runs planned" in dry.stdout
    assert "8 ok, 0 failed" in submitit.stderr
    assert not (tmp_path / "machine.sqlite").exists()
    # the results store's Python example (docs/formats/results-store.md) on this store
    (store,) = run_python(REPO / "docs" / "formats" / "results-store.md", tmp_path)
    assert len(store["runs"]) == 32 and store["best"]["gflops"] == max(r["gflops"] for r in runs)
