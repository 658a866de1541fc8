"""The dahu-2020 preset: Dahu as it ran the factorial experiment of January 2020 and the
cooling experiment's 'good' runs, after the cooling repair (about 14 % faster than the
March 2019 machine of the `dahu` preset; docs/presets.md, docs/validation.md E58).

The platform is the `dahu` preset's, unchanged: one description of the network for both
machine states. The CPUs differ: each CPU's dgemm is the 2019 published models'
coefficient-wise median law (mean and noise) scaled by that CPU's speed relative to the
other CPUs of the same calibration job in the calibrations of January 2020
(``reference/dahu/dgemm_calibration_history.csv``), median over those jobs. Only measured
figures go in: the 2020 median CPU's own level (1–2 % above the 2019 median law, E58) is
left out. Other kernels are the published ones.

``model_from(...)`` builds the shipped ``hplsim/data/dahu-2020/model.yaml``
(regenerate: ``python -m hplsim.presets.dahu2020``).
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

import yaml

from hplsim.presets import dahu

DATA = Path(__file__).resolve().parents[1] / "data" / "dahu-2020"
MODEL_FILE = DATA / "model.yaml"
#: one platform description for both machine states
PLATFORM_XML = dahu.PLATFORM_XML
RANKS_PER_NODE = dahu.RANKS_PER_NODE
#: the calibrations read: those of the factorial's month
SINCE_UNIX_S = 1577836800  # 2020-01-01T00:00:00Z
#: where a CPU's relative speed is read: HPL's trailing update at the factorial's size
#: (N = 250,000 on 32 x 32, NB = 128: M = N = 7,812, K = 128)
UPDATE_MNK = (7812, 7812, 128)
TERMS = ("intercept", "mnk", "mn", "mk", "nk")

MACHINE_STATE = ("Dahu in January 2020 (the factorial's machine, the cooling experiment's 'good' level): "
                 "the 2019 median CPU law scaled by each CPU's January 2020 calibrated speed")

PROVENANCE = {
    **dahu.PROVENANCE,
    "machine_state": MACHINE_STATE,
    "dgemm": "coefficient-wise median of dgemm_model_per_cpu.csv's per-CPU laws (mean and noise), "
    "times each CPU's relative speed: its time at HPL's update (7812 x 7812 x 128) under its "
    "dgemm_calibration_history.csv M-1 law over the median CPU's of the same job, median over "
    "the jobs started from 2020-01-01 (docs/validation.md E58)",
}


def relative_speeds(history_csv: Path, since_unix_s: int = SINCE_UNIX_S) -> dict[tuple[int, int], float]:
    """(node, cpu) -> the CPU's time at HPL's update over the median CPU's of the same
    calibration job, median over the jobs started at or after `since_unix_s`.

    The history keeps one M-1 law per CPU and job; its lack of fit across shapes is shared
    by the CPUs of a job (one experiment file per job), so their ratio is the CPUs' own
    difference, while the law's absolute level is not used."""
    m, n, k = UPDATE_MNK
    jobs: dict[str, dict[tuple[int, int], float]] = defaultdict(dict)
    with open(history_csv, newline="") as f:
        for row in csv.DictReader(f):
            if row["function"] != "dgemm" or float(row["start_time"]) < since_unix_s:
                continue
            t = float(row["intercept"]) + float(row["mnk"]) * m * n * k
            jobs[row["jobid"]][(int(row["node"]), int(row["cpu"]))] = t
    ratios: dict[tuple[int, int], list[float]] = defaultdict(list)
    for times in jobs.values():
        mid = statistics.median(times.values())
        for cpu, t in times.items():
            ratios[cpu].append(t / mid)
    return {cpu: statistics.median(r) for cpu, r in sorted(ratios.items())}


def _median_law(laws: list[dict]) -> dict:
    mean = {t: float(statistics.median([g["mean"].get(t, 0.0) for g in laws])) for t in TERMS}
    sigma = {t: float(statistics.median([g["noise"]["sigma"].get(t, 0.0) for g in laws])) for t in TERMS}
    return {"mean": mean, "sigma": sigma}


def model_from(published_model: Path, history_csv: Path) -> dict:
    """The dahu-2020 model document from the `dahu` preset's (published) model file and the
    calibration history: every CPU on the median law times its relative speed."""
    doc = yaml.safe_load(published_model.read_text())
    cpus = [c for h in doc["hosts"].values() for c in h["cpus"]]
    law = _median_law([c["kernels"]["dgemm"] for c in cpus])
    for c in cpus:
        c["kernels"]["dgemm"]["mean"] = dict(law["mean"])
        c["kernels"]["dgemm"]["noise"]["sigma"] = dict(law["sigma"])
    for (node, cpu), s in relative_speeds(history_csv).items():
        g = doc["hosts"][dahu.host_name(node)]["cpus"][cpu]["kernels"]["dgemm"]
        g["mean"] = {t: v * s for t, v in g["mean"].items()}
        g["noise"]["sigma"] = {t: v * s for t, v in g["noise"]["sigma"].items()}
    doc["description"] = "Dahu (Grid'5000) in January 2020: " + MACHINE_STATE.split(": ", 1)[1]
    doc["provenance"] = PROVENANCE
    return doc


if __name__ == "__main__":  # regenerate the shipped copy: python -m hplsim.presets.dahu2020 REFERENCE_DIR
    import sys

    DATA.mkdir(parents=True, exist_ok=True)
    with open(MODEL_FILE, "w") as f:
        yaml.safe_dump(model_from(dahu.MODEL_FILE, Path(sys.argv[1]) / "dgemm_calibration_history.csv"), f,
                       sort_keys=False)
