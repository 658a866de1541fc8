"""validation.md E95 reads how full each CPU is while its ranks compute
(`docs/experiments/e95_occupancy.py`); this holds the measure to its definition on a trace
written by the real writer from records whose answer is worked out by hand."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hplsim.emulate.trace import RAW_RECORD, write_trace

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "e95_occupancy.py"


def load_script():
    spec = importlib.util.spec_from_file_location("e95_occupancy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_count_of_open_intervals_steps_at_each_start_and_end():
    e95 = load_script()
    dt, k = e95.cpu_profile(np.array([0.0, 1.0]), np.array([2.0, 3.0]))
    assert dt.tolist() == [1.0, 1.0, 1.0] and k.tolist() == [1, 2, 1]
    dt, k = e95.cpu_profile(np.array([0.0, 1.0]), np.array([1.0, 2.0]))  # one ends as the next starts
    assert k.max() == 1 and (dt * k).sum() == 2.0


def write_raw(raw: Path, kernels: dict[int, list[tuple[float, float]]], messages: dict[int, list[tuple[float, float]]]):
    raw.mkdir()
    (raw / "codes.tsv").write_text("table\tcode\tname\nkind\t0\tkernel\nkind\t1\tmpi\nkind\t2\tregion\n"
                                   "phase\t0\tnone\nphase\t4\tupdate\nmpi\t3\tMPI_Recv\nkernel\t0\tdgemm\n")
    for rank in kernels:
        rows = [(0.0, 10.0, -1, -1, -1, -1, 0, 2, 0)]  # the timed region
        rows += [(a, b, 8, 8, 8, 0, 0, 0, 4) for a, b in kernels[rank]]
        rows += [(a, b, 8, 99, 1, 0, 3, 1, 4) for a, b in messages.get(rank, [])]
        np.array(rows, dtype=RAW_RECORD).tofile(raw / f"rank-{rank:06d}.bin")


def test_occupancy_of_a_trace_worked_out_by_hand(tmp_path):
    """Four ranks on one host of two CPUs: CPU 0 holds ranks 0 and 2, CPU 1 ranks 1 and 3.
    Rank 2 computes only the first 5 s of rank 0's 10 s (waiting after it): CPU 0 has 10
    rank-seconds with both computing and 5 with one of two; CPU 1 has 20 with both."""
    write_raw(tmp_path / "raw", {0: [(0.0, 10.0)], 1: [(0.0, 10.0)], 2: [(0.0, 5.0)], 3: [(0.0, 10.0)]},
              {2: [(5.0, 10.0)]})
    write_trace(tmp_path / "raw", tmp_path / "t", {"config": {"swap": 1, "depth": 1, "bcast": 2}, "time_s": 10.0,
                                                   "gflops": 1.0}, 4, None)
    got = load_script().occupancy(tmp_path / "t", ranks_per_host=4, cpus=2)
    assert got["occupancy"] == pytest.approx((10 + 5 * 0.5 + 20) / 35)
    assert got["share_le_50"] == pytest.approx(5 / 35) and got["share_le_75"] == pytest.approx(5 / 35)
    assert got["bound"] == pytest.approx(35 / 32.5) and got["compute_s_per_rank"] == pytest.approx(35 / 4)
    # the same ranks on one CPU: four computing for 5 s, then three of four
    one = load_script().occupancy(tmp_path / "t", ranks_per_host=4, cpus=1)
    assert one["occupancy"] == pytest.approx((20 + 15 * 0.75) / 35) and one["share_le_50"] == 0
