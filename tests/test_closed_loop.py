"""The closed loop on this machine meets its accuracy target (docs/validate.md,
benchmarks/validate_local.py): calibrate → fit → predict → run the real HPL → compare, on
`hplsim validate`'s default set of 34 configurations; for N ≥ 5000, median |error| ≤ 3 %
and max ≤ 8 %.

Slow: about 21 minutes on two idle cores (`--repeat 3`), and it needs them idle — the
real runs measure the machine, so another job running at the same time makes the real
runs, not the predictions, wander (the summary's `load` and `machine_probe` say whether
it did). Run it alone: ``.venv/bin/python -m pytest -m slow tests/test_closed_loop.py``.
The default suite runs the same loop on one small configuration, against the tolerance the
loop supports at that size (`test_accuracy_local.py`).
"""

from __future__ import annotations

import json

import pytest

from helpers import run_process

#: issue 5's target, stated here as well as in the code so that a change of the code's
#: constants cannot loosen what this test asks
MEDIAN_PCT, MAX_PCT, MIN_N = 3.0, 8.0, 5000


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_local_closed_loop_meets_its_accuracy_target(tmp_path):
    out = tmp_path / "validation"
    r = run_process("validate", "--out", out, "--repeat", "3", "--seed", "0", timeout=3600)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["target"] == {"median_abs_error_pct": MEDIAN_PCT, "max_abs_error_pct": MAX_PCT, "min_n": MIN_N}
    target = summary[f"summary_n_ge_{MIN_N}"]
    print(f"closed loop: {target['configurations']} configurations, median |error| "
          f"{target['median_abs_error_pct']:.2f} %, max {target['max_abs_error_pct']:.2f} %, "
          f"real runs' spread median {target['median_spread_pct']:.1f} %; load {summary['load']}")
    assert target["configurations"] == len(summary["rows"]) == 34
    assert all(row["predicted_gflops"] > 0 for row in summary["rows"])
    assert target["median_abs_error_pct"] <= MEDIAN_PCT, target
    assert target["max_abs_error_pct"] <= MAX_PCT, target
