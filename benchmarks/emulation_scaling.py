#!/usr/bin/env python3
"""Simulation cost: wall time and memory of the emulation, per scenario, and fitted growth laws.

Scenarios (--scenario, default star):

  star      a one-switch cluster of 1,024 hosts, one rank per host, 12.5 GB/s links, 1 µs
            latency; NB=128, PFACT 1, RFACT 2, BCAST 1, DEPTH 1, SWAP 0; the built-in Dahu
            model's default entry. Points N x G×G (--quick: a few small ones). Law:
            wall ≈ a · N^α · (P·Q)^β. The authors' implementation (measured here, issue 2)
            is printed beside it where known.
  dahu      the Dahu preset (published platform and per-CPU models, the validation runs'
            HPL parameters) on 1,024 ranks at N = 50k, 100k, 250k, 500k. Law: wall ≈ a · N^α.
  stampede  the Stampede preset (NB = 1024, its TOP500 run's parameters), on its full
            77×78 grid by default, at N = 50k, 100k, 200k; the law over N is extrapolated
            to the TOP500 run's N = 3,875,000. On 77×78 each panel costs minutes (38-177 s
            at N = 4,096 here): P = 77 is odd, and the fat-tree's routing then puts every
            flow into one max-min system (lab notebook E44); a grid whose P is a multiple
            of 16 (--grid 64x94) runs several times faster.

Each point runs once per mode of --exchanges (default: modelled, the default of predict; give
`--exchanges modelled messages` for the two side by side, docs/predict.md "Modelled
exchanges"). Beside wall and memory each row prints the messages the simulation sent
through SimGrid's network model, the wall per such message (µs), the panels simulated per
second, and, for a mode run beside `messages`, its Gflops relative to that reference.

Besides wall time and PSS, every run reports the kernel-side cost of folding: the
simulation's own page tables (VmPTE), the system-wide PageTables delta of /proc/meminfo
over the run, the number of memory mappings of the simulation process (/proc/PID/maps),
and the kernel memory those mappings take (the vm_area_struct slab delta of
/proc/slabinfo when readable, else mappings x 200 B). All peaks, sampled every few seconds.
`total` = PSS + VmPTE + mapping memory.

    .venv/bin/python benchmarks/emulation_scaling.py --scenario dahu [--sizes 50000 100000] [--json out.json]
    .venv/bin/python benchmarks/emulation_scaling.py --scenario stampede --grid 77x78 --sizes 50000 100000 200000

The big scenarios take from minutes (dahu 50k) to hours (dahu 500k): run them on a quiet
machine, one at a time. Check the script with a tiny run: --scenario stampede --grid 4x4
--sizes 8192 16384.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_main, spread, write_json  # noqa: E402

from hplsim.emulate.memory import hugepage_mount, max_map_count  # noqa: E402
from hplsim.emulate.preloads import allocator  # noqa: E402
from hplsim.emulate.smpirun import _descendants  # noqa: E402  (the simulation's processes)
from hplsim.hpl.config import HplConfig  # noqa: E402
from hplsim.hpl.cost import estimate_memory_bytes, estimate_s  # noqa: E402  (the law tune, sweep, predict use)
from hplsim.models.modelfile import ModelFile, load_model, save_model  # noqa: E402
from hplsim.platform.spec import load_platform, spec_from_dict  # noqa: E402
from hplsim.predict import EXCHANGES, ModelSource, predict  # noqa: E402
from hplsim.presets import DEFAULT, get_preset  # noqa: E402
from hplsim.presets.stampede import TOP500_GFLOPS, TOP500_N  # noqa: E402

# The authors' published implementation (HPL 2.2 fork) built against SimGrid 3.32 and
# measured on this machine (issue 2): wall seconds and PSS MB.
REFERENCE = {(50000, 4): (19.6, 166), (50000, 8): (61.9, 228), (50000, 16): (167, 572), (20000, 32): (155, 778)}

STAR_FULL = [(n, g) for n in (20000, 50000, 100000) for g in (4, 8, 16)] + [(20000, 32)]
STAR_QUICK = [(20000, 4), (50000, 4), (20000, 8), (50000, 8)]
SIZES = {"dahu": [50000, 100000, 250000, 500000], "stampede": [50000, 100000, 200000]}
VMA_BYTES = 200  # sizeof(struct vm_area_struct) on x86-64 Linux 6.x, rounded up: the fallback estimate


# ------------------------------------------------------------------- kernel-side memory


def _meminfo_kb(key: str) -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def _vma_slab_bytes() -> int | None:
    try:
        with open("/proc/slabinfo") as f:
            for line in f:
                fields = line.split()
                if fields and fields[0] == "vm_area_struct":
                    return int(fields[2]) * int(fields[3])  # num_objs x objsize
    except (OSError, ValueError, IndexError):
        pass
    return None


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _map_count(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return 0


@dataclass
class KernelSide:
    """Peaks of the simulation's page tables and mappings while a run lasts."""

    interval: float = 2.0
    vm_pte_kb: int = 0
    pagetables_delta_kb: int = 0
    mappings: int = 0
    vma_slab_delta: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> "KernelSide":
        self._base_pt = _meminfo_kb("PageTables")
        self._base_slab = _vma_slab_bytes()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        kids = [p for p in _descendants(os.getpid()) if p != os.getpid()]
        self.vm_pte_kb = max(self.vm_pte_kb, sum(_status_kb(p, "VmPTE") for p in kids))
        self.pagetables_delta_kb = max(self.pagetables_delta_kb, _meminfo_kb("PageTables") - self._base_pt)
        self.mappings = max(self.mappings, max((_map_count(p) for p in kids), default=0))
        slab = _vma_slab_bytes()
        if slab is not None and self._base_slab is not None:
            self.vma_slab_delta = max(self.vma_slab_delta or 0, slab - self._base_slab)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mapping_bytes(self) -> int:
        return self.vma_slab_delta if self.vma_slab_delta is not None else self.mappings * VMA_BYTES


# ------------------------------------------------------------------------- scenarios


@dataclass
class Point:
    config: HplConfig
    platform: object
    model: ModelSource


def star_points(args) -> list[Point]:
    pairs = [tuple(map(int, p.split(":"))) for p in args.points] if args.points else (
        STAR_QUICK if args.quick else STAR_FULL)
    platform = spec_from_dict({"name": "star-1024", "nodes": 1024, "cores_per_node": 1,
                               "network": {"bandwidth": "12.5GBps", "latency": "1us"}}).platform()
    tmp = Path(tempfile.mkdtemp(prefix="hplsim-scaling-"))
    save_model(ModelFile(default=load_model(DEFAULT.model).default, description="Dahu default row"), tmp / "m.yaml")
    model = ModelSource.from_path(tmp / "m.yaml", "dahu default")
    return [Point(HplConfig(n=n, nb=128, p=g, q=g, pfact=1, rfact=2, bcast=1, depth=1, swap=0), platform, model)
            for n, g in pairs]


def preset_points(name: str, sizes: list[int], grid: str | None) -> list[Point]:
    preset = get_preset(name)
    platform = load_platform(preset.platform, preset.ranks_per_host)
    model = ModelSource.from_path(preset.model, f"builtin:{name}")
    points = []
    for n in sizes:
        config = preset.config(n)
        if grid:
            p, q = map(int, grid.lower().split("x"))
            config = HplConfig(**{**config.as_dict(), "p": p, "q": q})
        points.append(Point(config, platform, model))
    return points


def fit_power(xs: np.ndarray, ys: list[float]) -> tuple[float, np.ndarray]:
    """log y = log a + Σ e_i log x_i: returns (a, exponents)."""
    x = np.column_stack([np.ones(len(ys)), np.log(xs)])
    coef, *_ = np.linalg.lstsq(x, np.log(ys), rcond=None)
    return float(np.exp(coef[0])), coef[1:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=("star", "dahu", "stampede"), default="star")
    ap.add_argument("--quick", action="store_true", help="star: a few small points only")
    ap.add_argument("--points", nargs="+", help="star: N:G pairs, e.g. 50000:4 (G x G grid)")
    ap.add_argument("--sizes", nargs="+", type=int, help="dahu/stampede: the matrix orders N")
    ap.add_argument("--grid", help="dahu/stampede: PxQ instead of the preset's grid (e.g. 16x16)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--sample-every", type=float, default=2.0, help="seconds between memory samples")
    ap.add_argument("--json", help="write the measurements to this JSON file")
    ap.add_argument("--exchanges", nargs="+", choices=EXCHANGES, default=["modelled"],
                    help="the pivot search's exchanges: run each point under each of these modes")
    args = ap.parse_args()

    if args.scenario == "star":
        points = star_points(args)
    else:
        points = preset_points(args.scenario, args.sizes or SIZES[args.scenario], args.grid)

    print(f"scenario {args.scenario}; huge pages: {hugepage_mount() or 'not available (4 KiB pages)'}; "
          f"allocator: {allocator() or 'glibc'}; "
          f"vm.max_map_count {max_map_count():,}; VMA memory from "
          f"{'/proc/slabinfo' if _vma_slab_bytes() is not None else f'mappings x {VMA_BYTES} B (slabinfo unreadable)'}")
    head = (f"{'N':>8} {'grid':>7} {'exchanges':>9} {'wall s':>20} {'PSS MB':>14} {'VmPTE MB':>9} {'PT Δ MB':>8} "
            f"{'maps':>9} {'maps MB':>8} {'total MB':>9} {'Gflops':>10} {'vs msgs':>8} {'messages':>11} "
            f"{'µs/msg':>7} {'panels/s':>8} {'ref wall':>9} {'ref/ours':>9} {'est/wall':>8} {'est/PSS':>7}")
    print(head, flush=True)
    rows = []
    for pt in points:
        c = pt.config
        reference_gflops = None
        # the reference first, so that every other mode's row can say how far it lands
        for mode in sorted(args.exchanges, key=lambda m: m != "messages"):
            walls, pss, sides, gflops, sent = [], [], [], None, 0
            for _ in range(args.repeat):
                with KernelSide(args.sample_every) as side:
                    r = predict(c, pt.platform, pt.model, seed=1, exchanges=mode)
                walls.append(r.sim_wall_s)
                pss.append(r.sim_memory_bytes / 1e6)
                sides.append(side)
                gflops = r.gflops
                sent = r.exchanges["simulated_messages"]
            if mode == "messages":
                reference_gflops = gflops
            worst = max(sides, key=lambda s: s.mapping_bytes + s.vm_pte_kb * 1024)
            total = max(pss) + (worst.vm_pte_kb * 1024 + worst.mapping_bytes) / 1e6
            ref = REFERENCE.get((c.n, c.p)) if args.scenario == "star" and c.p == c.q else None
            wall = float(np.median(walls))
            ratio = f"{ref[0] / wall:.2f}x" if ref else ""
            vs = f"{100 * (gflops / reference_gflops - 1):+.3f}%" if reference_gflops and mode != "messages" else ""
            panels = -(-c.n // c.nb)
            print(f"{c.n:>8} {f'{c.p}x{c.q}':>7} {mode:>9} {spread(walls):>20} {spread(pss):>14} "
                  f"{worst.vm_pte_kb / 1024:>9.1f} {worst.pagetables_delta_kb / 1024:>8.1f} {worst.mappings:>9,} "
                  f"{worst.mapping_bytes / 1e6:>8.1f} {total:>9.1f} {gflops:>10.6g} {vs:>8} {sent:>11,} "
                  f"{1e6 * wall / max(sent, 1):>7.1f} {panels / wall:>8.2f} {(str(ref[0]) if ref else ''):>9} "
                  f"{ratio:>9} {estimate_s(c) / wall:>8.2f} {estimate_memory_bytes(c) / 1e6 / max(pss):>7.2f}",
                  flush=True)
            rows.append(dict(n=c.n, nb=c.nb, p=c.p, q=c.q, exchanges=mode, wall_s=walls, pss_mb=pss, gflops=gflops,
                             gflops_vs_messages=(gflops / reference_gflops - 1) if vs else None,
                             simulated_messages=sent, panels_per_s=panels / wall,
                             vm_pte_mb=worst.vm_pte_kb / 1024, pagetables_delta_mb=worst.pagetables_delta_kb / 1024,
                             mappings=worst.mappings, mapping_mb=worst.mapping_bytes / 1e6, total_mb=total,
                             reference_wall_s=ref[0] if ref else None, reference_pss_mb=ref[1] if ref else None,
                             estimate_wall_s=estimate_s(c), estimate_pss_mb=estimate_memory_bytes(c) / 1e6))
    for mode in args.exchanges:
        report_laws(args.scenario, [r for r in rows if r["exchanges"] == mode], mode)
    write_json(args.json, rows)


def report_laws(scenario: str, rows: list[dict], mode: str) -> None:
    print(f"exchanges {mode}:")
    walls = [float(np.median(r["wall_s"])) for r in rows]
    if scenario == "star":
        if len(rows) >= 3:
            a, (alpha, beta) = fit_power(np.array([[r["n"], r["p"] * r["q"]] for r in rows], float), walls)
            print(f"growth law: wall ≈ {a:.3g} · N^{alpha:.2f} · (P·Q)^{beta:.2f} s")
            per = [w / (r["n"] * r["p"] * r["q"]) for w, r in zip(walls, rows)]
            print(f"wall / (N·P·Q): {min(per):.2e} … {max(per):.2e} s (prototype: ≈ 5.3e-6)")
        return
    if len({(r["p"], r["q"]) for r in rows}) != 1 or len({r["n"] for r in rows}) < 2:
        return  # a law over N needs one grid and two sizes
    ns = np.array([[r["n"]] for r in rows], float)
    a, (alpha,) = fit_power(ns, walls)
    b, (gamma,) = fit_power(ns, [r["total_mb"] for r in rows])
    print(f"growth law at {rows[0]['p']}x{rows[0]['q']}: wall ≈ {a:.3g} · N^{alpha:.2f} s; "
          f"memory (total) ≈ {b:.3g} · N^{gamma:.2f} MB")
    target = {"dahu": 500000, "stampede": TOP500_N}[scenario]
    if max(r["n"] for r in rows) < target:
        print(f"extrapolated to N = {target:,}: wall ≈ {a * target ** alpha / 3600:.2f} h, "
              f"memory ≈ {b * target ** gamma / 1e3:.2f} GB (an extrapolation, not a measurement)")
    if scenario == "stampede" and (rows[0]["p"], rows[0]["q"]) == (77, 78):
        print(f"TOP500 (June 2013, Intel's HPL): {TOP500_GFLOPS:,.0f} Gflops at N = {TOP500_N:,}")


if __name__ == "__main__":
    run_main(main)
