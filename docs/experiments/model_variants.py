"""Variants of a model file for the lab notebook's what-ifs (validation.md E41, E42).

Usage: python model_variants.py nonoise|median MODEL.yaml OUT.yaml
  nonoise: every kernel's `noise:` set to `family: none` (E41)
  median:  every CPU's dgemm on the coefficient-wise median of the file's per-CPU dgemm
           laws, mean and noise (E42: no slow or noisy CPU; other kernels unchanged)
"""
import sys

import numpy as np
import yaml

TERMS = ("intercept", "mnk", "mn", "mk", "nk")


def nonoise(x):
    if isinstance(x, list):
        return [nonoise(v) for v in x]
    if isinstance(x, dict):
        return {k: ({"family": "none"} if k == "noise" else nonoise(v)) for k, v in x.items()}
    return x


def median(doc: dict) -> dict:
    laws = [c["kernels"]["dgemm"] for h in doc["hosts"].values() for c in h["cpus"]]
    mean = {t: float(np.median([g["mean"].get(t, 0.0) for g in laws])) for t in TERMS}
    sigma = {t: float(np.median([g["noise"]["sigma"].get(t, 0.0) for g in laws])) for t in TERMS}
    for g in laws:
        g["mean"], g["noise"]["sigma"] = dict(mean), dict(sigma)
    return doc


if __name__ == "__main__":
    kind, src, out = sys.argv[1:4]
    variant = {"nonoise": nonoise, "median": median}[kind]
    with open(src) as f:
        doc = yaml.safe_load(f)
    with open(out, "w") as f:
        yaml.safe_dump(variant(doc), f, sort_keys=False)
