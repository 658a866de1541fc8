#!/usr/bin/env python3
"""Simulation cost: wall time and memory (peak PSS) of the emulation for N x P×Q, and a
fitted growth law wall ≈ a · N^α · (P·Q)^β.

Scenario (so that figures compare across versions): a one-switch cluster of 1,024 hosts,
one rank per host, 12.5 GB/s links, 1 µs latency; NB=128, PFACT 1, RFACT 2, BCAST 1,
DEPTH 1, SWAP 0; dgemm = the `default` row of the published Dahu per-CPU model with its
noise, other kernels from the published other_kernels.csv (the built-in model's default
entry). Runs one simulation at a time; repeat to see the machine's noise.

    .venv/bin/python benchmarks/emulation_scaling.py [--quick] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import spread, write_json  # noqa: E402

from hplsim.emulate.memory import hugepage_mount  # noqa: E402
from hplsim.hpl.config import HplConfig  # noqa: E402
from hplsim.models.modelfile import ModelFile, load_model, save_model  # noqa: E402
from hplsim.platform.spec import spec_from_dict  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.presets import DEFAULT  # noqa: E402

# The authors' published implementation (HPL 2.2 fork) built against SimGrid 3.32 and
# measured on this machine (issue 2): wall seconds and PSS MB.
REFERENCE = {(50000, 4): (19.6, 166), (50000, 8): (61.9, 228), (50000, 16): (167, 572), (20000, 32): (155, 778)}

FULL = [(n, g) for n in (20000, 50000, 100000) for g in (4, 8, 16)] + [(20000, 32)]
QUICK = [(20000, 4), (50000, 4), (20000, 8), (50000, 8)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a few small points only")
    ap.add_argument("--points", nargs="+", help="N:G pairs, e.g. 50000:4 (G x G grid)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", help="write the measurements to this JSON file")
    args = ap.parse_args()
    points = [tuple(map(int, p.split(":"))) for p in args.points] if args.points else (QUICK if args.quick else FULL)

    platform = spec_from_dict({"name": "star-1024", "nodes": 1024, "cores_per_node": 1,
                               "network": {"bandwidth": "12.5GBps", "latency": "1us"}}).platform()
    tmp = Path(tempfile.mkdtemp(prefix="hplsim-scaling-"))
    save_model(ModelFile(default=load_model(DEFAULT.model).default, description="Dahu default row"), tmp / "m.yaml")
    model = ModelSource.from_path(tmp / "m.yaml", "dahu default")
    print(f"huge pages: {hugepage_mount() or 'not available (4 KiB pages)'}")
    print(f"{'N':>7} {'grid':>6} {'wall s':>22} {'PSS MB':>16} {'Gflops':>9} {'ref wall':>9} {'ref/ours':>9}",
          flush=True)
    rows = []
    for n, g in points:
        config = HplConfig(n=n, nb=128, p=g, q=g, pfact=1, rfact=2, bcast=1, depth=1, swap=0)
        walls, mems, gflops = [], [], None
        for _ in range(args.repeat):
            r = predict(config, platform, model, seed=1)
            walls.append(r.sim_wall_s)
            mems.append(r.sim_memory_bytes / 1e6)
            gflops = r.gflops
        ref = REFERENCE.get((n, g))
        ratio = f"{ref[0] / float(np.median(walls)):.2f}x" if ref else ""
        print(f"{n:>7} {g:>3}x{g:<2} {spread(walls):>22} {spread(mems):>16} {gflops:>9.0f} "
              f"{(str(ref[0]) if ref else ''):>9} {ratio:>9}", flush=True)
        rows.append(dict(n=n, p=g, q=g, wall_s=walls, pss_mb=mems, gflops=gflops,
                         reference_wall_s=ref[0] if ref else None, reference_pss_mb=ref[1] if ref else None))
    if len(rows) >= 3:
        x = np.array([[1.0, np.log(r["n"]), np.log(r["p"] * r["q"])] for r in rows])
        y = np.log([float(np.median(r["wall_s"])) for r in rows])
        (log_a, alpha, beta), *_ = np.linalg.lstsq(x, y, rcond=None)
        print(f"growth law: wall ≈ {np.exp(log_a):.3g} · N^{alpha:.2f} · (P·Q)^{beta:.2f} s")
        per = [float(np.median(r["wall_s"])) / (r["n"] * r["p"] * r["q"]) for r in rows]
        print(f"wall / (N·P·Q): {min(per):.2e} … {max(per):.2e} s (prototype: ≈ 5.3e-6)")
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
