"""The sensitivity studies' sweep specs (examples/sensitivity, docs/sensitivity.md): they
plan what the page says, their variants build (fat-tree leaves = nodes, population
scales), and the page's commands run as written (slow)."""

from __future__ import annotations

import os

import pytest

from conftest import REPO
from docexamples import run_examples
from helpers import run_cli
from hplsim.sweep.spec import load_spec
from hplsim.sweep.variants import build_variants

SPECS = REPO / "examples" / "sensitivity"


@pytest.mark.parametrize("study, variants", [
    ("spatial", ["base", "spatial x0", "spatial x2"]),
    ("temporal", ["base", "N-0", "mixture"]),
    ("topology", ["fat-tree 1:1", "star", "1 of 2 top switches (2:1)", "tapering 4:1"]),
])
def test_specs_plan_and_build(tmp_path, study, variants):
    spec = load_spec(SPECS / f"{study}.yaml")
    built = build_variants(spec, tmp_path)
    names = [v.model_variation if study != "topology" else v.platform_variation for v in built]
    assert names == variants
    for v in built:
        assert v.model.model.population["dgemm"].noise_shape  # the mixture's shape is there
        if study == "topology":
            assert len(v.platform.hosts) == 8 and len(v.platform.slots) == 32
    r = run_cli("sweep", "run", SPECS / f"{study}.yaml", "--db", tmp_path / "s.sqlite", "--dry-run")
    assert r.returncode == 0, r.stderr
    # 3 NB x 2 DEPTH x 2 BCAST x 2 grids = 24 configurations, per variant, x 4 seeds
    assert f"{24 * len(variants) * 4} runs" in r.stdout + r.stderr


@pytest.mark.slow
def test_sensitivity_doc_commands_run(tmp_path):
    os.symlink(REPO / "examples", tmp_path / "examples")
    run_examples(REPO / "docs" / "sensitivity.md", tmp_path, slow=True)
    assert (tmp_path / "spatial.sqlite").exists()
