"""hplsim.quantiles gives the same bits as scipy.stats, without its import cost."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from scipy import stats

from hplsim import quantiles


def test_same_bits_as_scipy_stats():
    rng = np.random.default_rng(7)
    for _ in range(500):
        q = float(rng.uniform(0.5, 0.9999))
        d1, d2 = int(rng.integers(1, 60)), int(rng.integers(1, 5000))
        x = float(rng.uniform(0, 30))
        assert quantiles.norm_ppf(q) == float(stats.norm.ppf(q))
        assert quantiles.t_ppf(q, d2) == float(stats.t.ppf(q, d2))
        assert quantiles.chi2_ppf(q, d1) == float(stats.chi2.ppf(q, d1))
        assert quantiles.f_ppf(q, d1, d2) == float(stats.f.ppf(q, d1, d2))
        assert quantiles.f_sf(x, d1, d2) == float(stats.f.sf(x, d1, d2))


def test_the_written_out_quantile_is_scipys():
    from hplsim.models import intervals

    assert quantiles.NORM_PPF_95 == float(stats.norm.ppf(0.95)) == quantiles.norm_ppf(0.95)
    assert intervals.Z == quantiles.norm_ppf(0.5 + intervals.LEVEL / 2)


def test_a_prediction_imports_no_scipy():
    code = ("import sys; from hplsim.models import intervals; intervals.interval([1.0], 0.02); "
            "print(any(m.startswith('scipy') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_hplsim_commands_do_not_import_scipy_stats():
    """What the module is for: the modules that need a quantile leave scipy.stats unloaded."""
    code = ("import sys; import hplsim.models.intervals, hplsim.check.chew, hplsim.tune.law, "
            "hplsim.models.population_fit, hplsim.sweep.show; "
            "hplsim.models.intervals.t_half(1.0, 3); hplsim.check.chew.threshold(0.99, 3, 20); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
