"""Variants of a model file for the lab notebook's what-ifs (validation.md E41, E42).

Usage: python model_variants.py nonoise|median|slowall MODEL.yaml OUT.yaml
       python model_variants.py jan2020 MODEL.yaml OUT.yaml HISTORY.csv
       python model_variants.py scaled MODEL.yaml OUT.yaml NODE:CPU=FACTOR[,...]
       python model_variants.py hostmean MODEL.yaml OUT.yaml
       python model_variants.py piecenomk MODEL.yaml OUT.yaml NB
       python model_variants.py shrunk MODEL.yaml OUT.yaml F
  nonoise: every kernel's `noise:` set to `family: none` (E41)
  median:  every CPU's dgemm on the coefficient-wise median of the file's per-CPU dgemm
           laws, mean and noise (E42: no slow or noisy CPU; other kernels unchanged)
  slowall: every CPU's other kernels (all but dgemm), mean and noise, scaled by the CPU's
           dgemm time at HPL's update over the median CPU's (E59: a throttled CPU is slow
           at everything, the file slows only its dgemm)
  jan2020: the median law scaled, mean and noise, by each CPU's speed relative to the
           others in the calibrations of January 2020 (dgemm_calibration_history.csv), the
           factorial's month (E58)
  scaled:  the named CPUs' dgemm, mean and noise, times FACTOR; NODE (1-based, as the
           history's) or CPU (0, 1) may be `*` (E61: `*:0=1.055` slows every CPU 0)
  hostmean: each host's CPUs on the coefficient-wise mean of their dgemm laws, mean and
           noise (E62: the nodes keep their speeds, a node's two CPUs no longer differ, so
           the even and the odd process columns, whose ranks sit on CPU 0 and CPU 1 of
           every node, run at one pace)
  piecenomk: every dgemm law gains a piece claiming HPL's update pieces (n = NB columns,
           k = NB) on the same law without its `mk` term, mean and noise (E63: the far
           bound, a piece paying nothing per call for its m x k operand; Dahu's own
           thin calls paid about the law's full charge)
  shrunk:  each CPU's dgemm, mean and noise, scaled so that its time at HPL's update over
           the median CPU's, r, becomes 1 + F (r - 1): F = 1 the file, F = 0 every CPU at
           the median CPU's speed there (E96: the CPUs' spread as the calibrations measured
           it, all cores in dgemm, against a smaller one)
"""
import sys

import numpy as np
import pandas as pd
import yaml

TERMS = ("intercept", "mnk", "mn", "mk", "nk")


def nonoise(x):
    if isinstance(x, list):
        return [nonoise(v) for v in x]
    if isinstance(x, dict):
        return {k: ({"family": "none"} if k == "noise" else nonoise(v)) for k, v in x.items()}
    return x


def _pool(laws: list[dict], reduce) -> None:
    """Set every law of `laws` (mean and noise) to `reduce` of them, coefficient-wise."""
    mean = {t: float(reduce([g["mean"].get(t, 0.0) for g in laws])) for t in TERMS}
    sigma = {t: float(reduce([g["noise"]["sigma"].get(t, 0.0) for g in laws])) for t in TERMS}
    for g in laws:
        g["mean"], g["noise"]["sigma"] = dict(mean), dict(sigma)


def median(doc: dict) -> dict:
    _pool([c["kernels"]["dgemm"] for h in doc["hosts"].values() for c in h["cpus"]], np.median)
    return doc


# HPL's update at N = 250,000 on 32 x 32 (M = N = N / 32, K = NB): where the relative speeds are read
UPDATE = (7812, 7812, 128)


def relative_speeds(history: str, since: str = "2020-01-01", until: str = "2100-01-01") -> dict[tuple[int, int], float]:
    """(node, cpu) -> the CPU's time at HPL's update over the median CPU's in the same
    calibration job (one experiment file per job), median over the jobs from `since` to `until`.
    The history keeps an M-1 law per CPU and job; its lack of fit across shapes (E42 item 3)
    is shared by the CPUs of a job, so their ratio is the CPUs' own difference."""
    h = pd.read_csv(history)
    when = pd.to_datetime(h.start_time, unit="s")
    h = h[(h.function == "dgemm") & (when >= since) & (when < until)]
    m, n, k = UPDATE
    t = h.intercept + h.mnk * m * n * k
    rel = t / t.groupby(h.jobid).transform("median")
    return {(int(node), int(cpu)): float(v) for (node, cpu), v in rel.groupby([h.node, h.cpu]).median().items()}


def _scale(law: dict, s: float) -> dict:
    """`law` (mean and noise) times `s`."""
    return {**law, "mean": {t: v * s for t, v in law["mean"].items()},
            "noise": {**law["noise"], "sigma": {t: v * s for t, v in law["noise"]["sigma"].items()}}}


def _update_time(law: dict) -> float:
    # summed by hand, as for E59's run: the model reader's sum differs in the last bits
    m, n, k = UPDATE
    x = {"intercept": 1, "mnk": m * n * k, "mn": m * n, "mk": m * k, "nk": n * k}
    return sum(c * x[t] for t, c in law["mean"].items())


def _relative_cpus(doc: dict) -> list[tuple[dict, float]]:
    """Each CPU of the file, with its dgemm time at HPL's update over the median CPU's."""
    cpus = [c for h in doc["hosts"].values() for c in h["cpus"]]
    times = [_update_time(c["kernels"]["dgemm"]) for c in cpus]
    mid = float(np.median(times))
    return [(c, t / mid) for c, t in zip(cpus, times)]


def slowall(doc: dict) -> dict:
    others = {k: g for k, g in doc["default"]["kernels"].items() if k != "dgemm"}
    for c, r in _relative_cpus(doc):
        c["kernels"].update({name: _scale(g, r) for name, g in others.items()})
    return doc


def jan2020(doc: dict, history: str) -> dict:
    from hplsim.presets.dahu import host_name

    doc = median(doc)
    for (node, cpu), s in relative_speeds(history).items():
        kernels = doc["hosts"][host_name(node)]["cpus"][cpu]["kernels"]
        kernels["dgemm"] = _scale(kernels["dgemm"], s)
    return doc


def scaled(doc: dict, spec: str) -> dict:
    from hplsim.presets.dahu import host_name

    for item in spec.split(","):
        where, factor = item.split("=")
        node, cpu = where.split(":")
        nodes = range(1, len(doc["hosts"]) + 1) if node == "*" else [int(node)]
        for i in nodes:
            cpus = doc["hosts"][host_name(i)]["cpus"]
            for c in (range(len(cpus)) if cpu == "*" else [int(cpu)]):
                cpus[c]["kernels"]["dgemm"] = _scale(cpus[c]["kernels"]["dgemm"], float(factor))
    return doc


def hostmean(doc: dict) -> dict:
    for host in doc["hosts"].values():
        _pool([c["kernels"]["dgemm"] for c in host["cpus"]], np.mean)
    return doc


def shrunk(doc: dict, f: float) -> dict:
    for c, r in _relative_cpus(doc):
        c["kernels"]["dgemm"] = _scale(c["kernels"]["dgemm"], (1 + f * (r - 1)) / r)
    return doc


def piecenomk(doc: dict, nb: int) -> dict:
    when = [f"n <= {nb}", f"n >= {nb}", f"k >= {nb}"]
    laws = [doc["default"]["kernels"]["dgemm"]] + [
        c["kernels"]["dgemm"] for h in doc.get("hosts", {}).values() for c in h["cpus"] if "dgemm" in c["kernels"]]
    def drop(terms: dict) -> dict:
        return {t: v for t, v in terms.items() if t != "mk"}

    for law in laws:
        law["pieces"] = [{"when": list(when), "mean": drop(law["mean"]),
                          "noise": {**law["noise"], "sigma": drop(law["noise"]["sigma"])}}]
    return doc


if __name__ == "__main__":
    kind, src, out = sys.argv[1:4]
    variant = {"nonoise": nonoise, "median": median, "slowall": slowall,
               "jan2020": lambda d: jan2020(d, sys.argv[4]), "scaled": lambda d: scaled(d, sys.argv[4]),
               "hostmean": hostmean, "piecenomk": lambda d: piecenomk(d, int(sys.argv[4])),
               "shrunk": lambda d: shrunk(d, float(sys.argv[4]))}[kind]
    with open(src) as f:
        doc = yaml.safe_load(f)
    with open(out, "w") as f:
        yaml.safe_dump(variant(doc), f, sort_keys=False)
