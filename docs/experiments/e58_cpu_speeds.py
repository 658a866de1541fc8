"""E58: Dahu's CPUs in January 2020, the factorial's month, against the 2019 models.

Usage: python e58_cpu_speeds.py DATA_DIR   (the folder holding dahu/)

1. Each CPU's speed relative to the others (model_variants.relative_speeds: its time at
   HPL's update over the median CPU's of the same calibration job): spread, extremes, and
   how stable it is (Nov-Dec 2019 against January 2020).
2. The 2020 median CPU against the 2019 models' median law, through node 5, whose calls of
   January 2020 dgemm_raw.csv holds: node 5's calls against its own 2019 laws, divided by
   node 5's standing among the 2020 CPUs. (The history's own absolute level is not used:
   its M-1 law's lack of fit across shapes, E42 item 3, shifts it.)
"""
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.models.modelfile import load_model
from hplsim.presets import dahu

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_variants import UPDATE, relative_speeds  # noqa: E402


def main(data: Path) -> None:
    history = data / "dgemm_calibration_history.csv"
    jan, autumn = relative_speeds(history), relative_speeds(history, "2019-11-01", "2020-01-01")
    v = pd.Series(jan)
    print(f"1. {len(v)} CPUs, January 2020: sd {v.std():.3f}, min {v.min():.3f} {tuple(map(int, v.idxmin()))}, "
          f"max {v.max():.3f} {tuple(map(int, v.idxmax()))}; above 1.05: {sorted(k for k in jan if jan[k] > 1.05)}")
    keys = sorted(jan)
    print(f"   correlation with Nov-Dec 2019: {np.corrcoef([jan[k] for k in keys], [autumn[k] for k in keys])[0, 1]:.3f}")

    # the 2019 laws as the preset runs them (the model file converted from dgemm_model_per_cpu.csv)
    model = load_model(dahu.MODEL_FILE)
    law = {(node, cpu): model.resolve(dahu.host_name(node), cpu)["dgemm"].mean for node, cpu in keys}
    update = dict(zip("mnk", UPDATE))
    t2019 = {key: float(f(update)) for key, f in law.items()}
    median_2019 = float(np.median(list(t2019.values())))
    raw = pd.read_csv(data / "dgemm_raw.csv")
    raw = raw[raw.m * raw.n * raw.k > 1e9]
    for cpu in (0, 1):
        calls = raw[raw.cpu == cpu]  # all of node 5's
        against_2019 = float(np.median(calls.duration / law[(5, cpu)]({"m": calls.m, "n": calls.n, "k": calls.k})))
        standing_2019 = t2019[(5, cpu)] / median_2019
        print(f"2. node 5 CPU {cpu}: January 2020 calls / its 2019 law {against_2019:.3f} "
              f"({len(calls)} calls over 1e9 multiply-adds); its 2019 law / the 2019 median {standing_2019:.3f}; "
              f"its January 2020 standing {jan[(5, cpu)]:.3f} -> the 2020 median CPU = "
              f"{against_2019 * standing_2019 / jan[(5, cpu)]:.3f} x the 2019 median law")


if __name__ == "__main__":
    main(Path(sys.argv[1]) / "dahu")
