"""validation.md E42 and validation-records.md R7 (E6) cite what docs/experiments/e42_noise_memory.py
prints from the Dahu data; these tests hold the script to those statements."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "e42_noise_memory.py"


@pytest.fixture(scope="module")
def out(dahu_dir: Path) -> str:
    return subprocess.run([sys.executable, str(SCRIPT), str(dahu_dir)], check=True,
                          capture_output=True, text=True).stdout


def test_dgemm_call_noise_has_no_memory_beyond_the_next_call(out):
    rows = [line.split() for line in out.splitlines() if re.match(r"\s*19600\d\d\s+[01]\s+8720\s", line)]
    assert len(rows) == 6
    for row in rows:
        big_sd = float(row[4].rstrip("%"))
        lags = [float(v) for v in row[5:]]
        assert 0.7 < big_sd < 1.4
        assert 0.09 < lags[0] < 0.24           # lag 1: a little memory
        assert all(abs(a) < 0.036 for a in lags[4:])  # lags 10 ... 1000: none


def test_the_2019_models_noisy_cpus_are_ordinary_in_the_factorials_months(out):
    table = out.split("(2)")[1].split("median of the 64")[0].splitlines()[2:10]
    for line in table:  # the 8 noisiest CPUs of the 2019 model
        node, _, mean19, noise19, mean20, noise20 = line.split()
        assert 13 <= int(node) <= 16
        assert float(noise19) >= 0.04 and float(mean19) >= 1.06
        assert float(noise20) < 0.04 and 0.97 < float(mean20) < 1.07


def test_the_linear_laws_residual_is_several_times_the_fixed_shape_spread(out):
    linear = [float(m) for m in re.findall(r"linear law's sd / mean\s+([\d.]+)%", out)]
    assert len(linear) == 6 and min(linear) > 2.5 and max(linear) < 7.5
