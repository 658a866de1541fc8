#!/usr/bin/env python3
"""The cost law's factors (`hplsim.hpl.cost`) against timed simulations: the spread-roll
swaps on 16x4 (with and without look-ahead, and the mixed swap) over the binary exchange,
and the long broadcast on 2x32 over the 1-ring.

Each configuration runs --repeat times, interleaved, on the Dahu preset; a run's cost is
the CPU time of its simulation, and the same grid's fixed cost (N = 128: launch, ranks,
set-up) is taken off both sides of a factor. The base's cost beyond the fixed one is about
0.25 s at these sizes (at N = 1,400 and 2,048 it was 0.09-0.14 s, and the fixed run's own
spread moved a factor by a quarter). Printed per factor: the measured one, from the least
CPU time of each configuration (another process on the machine only adds CPU time), its
spread over the repeats taken one by one, the law's, and measured / law. A law off by more
than half again is what broke tune's searches (a run killed at 2.8x its price, a table left
without room at 3x: cost.py). Run it on a quiet machine: with both cores of this one busy
the spread-roll's factor measured 1.76 against 2.5 quiet (2026-12-06), which is why this is
a benchmark and not a test.

    .venv/bin/python benchmarks/cost_factors.py
    .venv/bin/python benchmarks/cost_factors.py --repeat 5
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, run_main, spread  # noqa: E402

from hplsim.hpl.config import HplConfig  # noqa: E402

GRID = dict(nb=64, bcast=0)
RUNS = {
    "fixed 16x4": HplConfig(n=128, p=16, q=4, depth=1, swap=0, **GRID),
    "binary exchange": HplConfig(n=2800, p=16, q=4, depth=1, swap=0, **GRID),
    "spread-roll": HplConfig(n=2800, p=16, q=4, depth=1, swap=1, **GRID),
    "mixed": HplConfig(n=2800, p=16, q=4, depth=1, swap=2, **GRID),
    "binary exchange, no look-ahead": HplConfig(n=2800, p=16, q=4, depth=0, swap=0, **GRID),
    "spread-roll, no look-ahead": HplConfig(n=2800, p=16, q=4, depth=0, swap=1, **GRID),
    "fixed 2x32": HplConfig(n=128, p=2, q=32, depth=1, swap=0, **GRID),
    "1-ring": HplConfig(n=6144, p=2, q=32, depth=1, swap=0, **GRID),
    "long": HplConfig(n=6144, nb=64, p=2, q=32, depth=1, swap=0, bcast=4),
}
#: (factor, over, fixed cost)
FACTORS = (("spread-roll", "binary exchange", "fixed 16x4"),
           ("mixed", "binary exchange", "fixed 16x4"),
           ("spread-roll, no look-ahead", "binary exchange, no look-ahead", "fixed 16x4"),
           ("long", "1-ring", "fixed 2x32"))


def timed(repeat: int) -> dict[str, list[float]]:
    """Each run's CPU seconds, `repeat` times, interleaved."""
    from hplsim.platform.spec import load_platform
    from hplsim.predict import ModelSource, predict
    from hplsim.presets import DEFAULT

    platform = load_platform(DEFAULT.platform)
    model = ModelSource.from_path(DEFAULT.model, "builtin:dahu")

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    took: dict[str, list[float]] = {name: [] for name in RUNS}
    for _ in range(repeat):
        for name, config in RUNS.items():
            before = children_cpu()
            predict(config, platform, model, seed=1)
            took[name].append(children_cpu() - before)
    return took


def law_factor(name: str, over: str) -> float:
    """The law's factor: its estimates beyond its own fixed costs."""
    from hplsim.hpl.cost import OVERHEAD_S, PER_RANK_S, estimate_s

    def beyond(c: HplConfig) -> float:
        return estimate_s(c) - OVERHEAD_S - PER_RANK_S * c.ranks

    return beyond(RUNS[name]) / beyond(RUNS[over])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each configuration (default 3)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    took = timed(args.repeat)
    least = {name: min(t) for name, t in took.items()}
    print(f"CPU seconds, least of {args.repeat}; machine {machine()}")
    print(f"{'factor':<60} {'measured':>9} {'each repeat':>20} {'law':>6} {'measured/law':>13}")
    for name, over, fixed in FACTORS:
        measured = (least[name] - least[fixed]) / (least[over] - least[fixed])
        each = [(a - f) / (b - f) for a, b, f in zip(took[name], took[over], took[fixed])]
        law = law_factor(name, over)
        print(f"{name + ' / ' + over:<60} {measured:>9.2f} {spread(each):>20} {law:>6.2f} {measured / law:>13.2f}")
    return 0


if __name__ == "__main__":
    run_main(main)
