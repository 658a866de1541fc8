"""E91: RingRong's per-message "intercepts" are the benchmark's own wait for a partner busy
in dgemm. SMPI runs the benchmark's structure (docs/experiments/e73_ringrong.c) on the Dahu
platform *without* any per-message cost, and the authors' notebook's estimator
(docs/experiments/e91_notebook_estimator.py) is applied to the simulated durations.

Reference: the machine's fits as the notebook printed them (Ezibenroc/calibration_analysis,
dahu/mpi/remote_calibration.ipynb @ d359ae6, cell 45, the remote ping-pong: 2.200e-6 +
4.799e-11 x below 8 kB; 3.473e-4 - 1.301e-9 x to 15.8 kB; 2.895e-4 + 2.450e-9 x to 64 kB;
3.523e-4 + 5.058e-10 x to 6 MB), evaluated at the simulated sizes."""

from __future__ import annotations

import subprocess

import pytest

from helpers import EXPERIMENTS, load_benchmark
from hplsim.presets import dahu

#: the machine's remote ping-pong (send + receive), s, at the program's sizes (cell 45)
MACHINE_PAIR = {1000: 2.248e-6, 4000: 2.392e-6, 12000: 3.317e-4, 24000: 3.483e-4, 48000: 4.071e-4,
                128000: 4.170e-4, 1000000: 8.581e-4}


def _estimator():
    return load_benchmark("e91_notebook_estimator.py", "e91_notebook_estimator", EXPERIMENTS).notebook_means


@pytest.fixture(scope="module")
def simulate(tmp_path_factory):
    """The structure's simulated durations, summarised as the notebook does, for
    `all_busy` (b455639: the reply's receive busy-waits too) or not (dff63df)."""
    work = tmp_path_factory.mktemp("ringrong")
    subprocess.run(["smpicc", "-O2", "-o", str(work / "rr"), str(EXPERIMENTS / "e73_ringrong.c")], check=True,
                   capture_output=True)
    (work / "noicpt.xml").write_text(dahu.loaded_platform_xml(dahu.PUBLISHED_PLATFORM_XML.read_text(),
                                                              intercepts=False))
    (work / "hostfile").write_text("dahu-0.grid5000.fr\n" * 32 + "dahu-1.grid5000.fr\n" * 32)
    means = _estimator()

    def run(all_busy: int) -> dict[int, dict[str, float]]:
        out = work / f"busy-{all_busy}"
        out.mkdir(exist_ok=True)
        done = subprocess.run(["smpirun", "-np", "64", "-platform", str(work / "noicpt.xml"), "-hostfile",
                               str(work / "hostfile"), "--cfg=smpi/wtime:0", "--cfg=smpi/simulate-computation:no",
                               "--log=root.thres:error", str(work / "rr"), "216e-6", "1", str(all_busy)],
                              cwd=out, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return means(str(out))

    return run


def test_the_data_s_version_makes_the_machines_intercepts_without_any(simulate):
    """b455639, Open MPI's probe between nodes (E39): the small round trips are two calls'
    overheads (a receive starts after a successful probe, an eager send returns at once),
    and from the eager threshold on every send waits for its busy partner's next probe: the
    notebook's round trip within 0.5 µs of the machine's below 8 kB and within 10 % from
    12 kB to 1 MB, the 8 kB jump included; no receive waits."""
    sim = simulate(1)
    for size, machine in MACHINE_PAIR.items():
        if size < 8000:
            assert sim[size]["pair"] == pytest.approx(machine, abs=0.5e-6), size
        else:
            assert sim[size]["pair"] == pytest.approx(machine, rel=0.10), size
    assert max(sim[s]["pair"] for s in (1000, 4000)) < 3e-6 < 2.5e-4 < min(sim[s]["pair"] for s in (12000, 24000))
    assert all(sim[s]["recv"] < 0.4 * sim[s]["send"] for s in (12000, 24000, 48000, 128000))


def test_the_later_version_waits_on_the_small_messages_which_the_machine_did_not(simulate):
    """dff63df (E73's reading): the reply's plain receive waits for the busy partner's dgemm
    whatever the size, 60 times the machine's small round trip."""
    sim = simulate(0)
    assert min(sim[s]["pair"] for s in (1000, 4000)) > 60 * MACHINE_PAIR[4000]
