"""hplsim's prediction against the real HPL on this machine, by default: the closed loop of
`hplsim validate` (calibrate → fit → predict → run for real → compare) on one small
configuration, and the prediction must land within the error that loop supports at this
size. The full loop (34 configurations, N ≥ 5000, 21 minutes) is `test_closed_loop.py`,
marked slow."""

from __future__ import annotations

import json

import pytest

from helpers import require_tools, run_process

#: The tolerance on |predicted / real median − 1|, and where it comes from. At the sizes a
#: default test can afford (runs of half a second, `--quick` calibrations) one traced run
#: caught in a slow moment sets a dgemm law, and the docs' tiny loop has been measured at
#: +27 % and −25 % on an idle machine (docs/validation.md E35); at N ≥ 5000 the loop is
#: within 1–3 % median, 4–12 % max (E24, E25), and the median of a configuration's real
#: runs alone carries 4–5 % of noise at one second a run (E22). This test's loop while other
#: work kept 1.6–1.8 of the two cores busy (2026-12-05): +6.3, +0.9, +0.6 and +13.7 % as
#: written; −0.0, −12.5, −15.6 and +23.0 % with 2 s of real runs instead of 3, at load 7–9.
#: 30 % is E35's largest error rounded up: the loop at this size supports no less, and a
#: broken link of the chain (a kernel priced twice, or at zero, a calibration that measured
#: something else, a wrong unit) lands far outside it.
TOLERANCE_PCT = 30.0

#: one rank: the loop's calibrations and real runs need one core, so a simulation running on
#: the other core slows the calibration and the real runs alike (they alternate, and the
#: prediction compares with their ratio), where two ranks would share a core with it
CONFIG = ["-N", "3000", "--nb", "128", "-P", "1", "-Q", "1"]


@pytest.mark.exclusive  # its real runs and calibrations measure this machine
@pytest.mark.timeout(600)
def test_prediction_lands_within_the_closed_loops_tolerance_of_real_hpl(tmp_path):
    """Two rounds of real runs adding up to at least 3 s of HPL time (6 runs of half a
    second on an idle machine, 3-4 on a loaded one), with a calibration pass before, between
    and after them: the prediction is compared with the real median of the same minutes'
    machine, so a machine slower for everyone slows the model and the runs alike."""
    require_tools("mpirun", "smpirun")
    out = tmp_path / "loop"
    r = run_process("validate", *CONFIG, "--repeat", "2", "--min-seconds", "3", "--quick", "--seed", "1",
                    "--out", out, "--json", cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (row,) = doc["rows"]
    assert row["real_residual_check"] == "PASSED" and row["real_runs"] >= 2
    error = 100 * (row["predicted_gflops"] / row["real_gflops_median"] - 1)
    print(f"predicted {row['predicted_gflops']:.2f} Gflops, real median {row['real_gflops_median']:.2f} "
          f"[{row['real_gflops_min']:.2f} – {row['real_gflops_max']:.2f}] over {row['real_runs']} runs: "
          f"{error:+.1f} %; machine {row['machine_speed_pct']:+.1f} % from the calibration's, other processes "
          f"{row['other_load_max']:.2f} core(s)")
    assert abs(error) <= TOLERANCE_PCT, row
