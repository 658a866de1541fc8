"""What a simulation will cost before it runs, declared once: `tune` plans its search with
it, `sweep --dry-run` lists it per run, `predict` says it when it exceeds a minute, and the
benchmarks print how far it lands from their measured runs.

Wall time: a growth law, wall ≈ a · N^α · (P·Q)^β s at NB = 128 on this kind of machine,
scaled by 128/NB (SMPI's cost is per event, and HPL's events come per panel: N/NB panels),
plus the launch of smpirun and the creation of the simulated ranks, whatever N (3.65 s for
the Dahu preset's 1,024 ranks at N = 1,024, 2026-12-05; 12–17 s had been measured on the
loaded shared machine at load 10 on 2026-11-27, and the plans made with that figure left
four fifths of a 20-minute budget unspent).

The law plans the search (it is deterministic: the same inputs give the same plan on any
machine, hence the same recommendation); the budget itself is enforced on the measured
times (tune/search.py), so a machine slower than the law's only ends the search earlier,
with a warning.

Memory (peak PSS of the simulation): SimGrid's core, a share per simulated rank (its stack,
its copy of HPL's globals, its unfolded buffers), and a term in ranks x N (HPL's per-rank
index arrays grow with N); the matrix and the panels are folded (docs/predict.md, Memory).
It lives in `hpl`, below `predict`, `sweep` and `tune`, which all read it.
"""

from __future__ import annotations

from hplsim.hpl.config import HplConfig

#: Refitted after each rank parsed only its own host's part of the model table (lab notebook
#: E77; before it E75, E76, E70, E72), all five terms at once by `benchmarks/cost_law.py`
#: (least squares on the logarithm of the wall) on the runs committed in
#: benchmarks/results/emulation_scaling-{star,dahu,dahu-small}.json, on one core, quiet,
#: 2026-12-06 (the star runs again after the memory sampler's fix, load 0.6): the star
#: scenario's seven points (4x4 … 32x32, N = 20,000 and 50,000) and the
#: Dahu preset at 1,024 ranks, N = 1,024 to 500,000 (2.14 s … 935 s; the four large Dahu
#: sizes are E75's, a start-up change does not move them). tests/test_benchmarks.py checks
#: these constants against that fit. The law before (3.26e-8 · N^1.12 · (P·Q)^1.37, 0.30 s
#: and 1.18 ms a rank, E76) overpriced the small 1,024-rank runs by a third once a rank no
#: longer parsed the whole table.
COEFFICIENT = 3.92e-8
N_EXPONENT = 1.12
RANK_EXPONENT = 1.34
REFERENCE_NB = 128
#: seconds: smpirun's launch, reading the platform, HPL's set-up
OVERHEAD_S = 0.23
#: seconds per rank: creating and starting the simulated ranks (about 0.7 s for 1,024 ranks)
PER_RANK_S = 0.00066
#: HPL's long broadcasts (BCAST 4 long, 5 longM: a spread then a roll along the process
#: row, Q - 1 steps, each polled by the ranks waiting for it) cost more as Q grows, about
#: as Q squared: on the Dahu preset (N = 4,096, NB 64, DEPTH 1, SWAP 0; 2026-11-27, one core
#: to itself) 1.5-1.6x BCAST 0's wall time at 8x32, 8.9-9.7x at 2x128, 31x at 4x256 (287 s
#: against 9.4 s); at N = 1,024: 1.0x at 32x8, 1.9-2.1x at 8x32. A flat factor of 4 had
#: killed the long-broadcast neighbours of a 4x256 optimum at their share of the budget.
#: Those ratios were measured with the pivot search's messages; the modelled exchange (E67)
#: made the rest of a run about twice as cheap to simulate, not the roll, and the factor
#: (1.5 + Q²/2048 then) underpriced the long broadcasts 2-3 times. Refitted 2026-12-05 on
#: CPU time beyond the grid's fixed cost (N = 128), NB 64, DEPTH 1: 1.13x at 8x8 (N = 2,048),
#: 5.1x at 2x32 and 4.7x at 8x32 (2,048), 40x at 2x128 (2,048), 155x at 4x256 (N = 1,024):
#: 1 + Q²/300 is within 1.45 of each, overpricing the largest (benchmarks/cost_factors.py measures
#: 2x32 against it). The probe counts (E70) made the rings' polling cheaper, not the roll:
#: measured again the same way (one run each, N = 2,048, NB 64, DEPTH 1, 2026-12-05):
#: 1.66x at 8x8, 7.49x at 2x32, 5.37x at 8x32, 63.8x at 2x128; 1 + Q²/220 is within 1.33
#: of each (4x256, minutes a run, not measured again: it had 155x, the law now says 299x).
LONG_BCAST_BASE = 1.0
LONG_BCAST_PER_Q2 = 1 / 220
#: HPL's spread-roll row swap (SWAP 1) under look-ahead probes for the next panel at each
#: of its steps along the process column, and every failed probe is a simulation event:
#: on the Dahu preset (N = 1,400 at 8x8 and 16x16, 2,712 at 32x32, NB 64, DEPTH 1, BCAST 0;
#: 2026-11-27) it made 2.4, 4.7 and 9.1 times the binary exchange's probes and took 0.9,
#: 2.75 and 4.7 times its wall time (1.1 / 1.2 s, 8.8 / 3.2 s, 149 / 31.7 s): about
#: 1 + 0.12 P of the wall (the probes' ratio, 1 + 0.25 P, had been taken first, and priced
#: an 8x128 winner's neighbours at three times a ring's: the 20-minute search then found no
#: room for its sensitivity table). The tune's 2-hour Dahu search had killed such a run at
#: its share of the budget (133 s) although it was the best configuration simulated at that
#: size. DEPTH 0 (no probe between the steps) stayed near the binary exchange with the pivot
#: messages; with the modelled exchange (E67) the rest of the run is cheaper and the roll's
#: P - 1 serial messages show: 1.08, 1.37, 2.06-2.40 and 2.76x at P = 4, 8, 16, 32 (N = 1,400,
#: NB 64, BCAST 0, CPU time beyond the grid's fixed cost, 2026-12-05), about 1 + 0.07 P
#: (SPREAD_ROLL_PER_ROW_NO_LOOKAHEAD; it had been priced as the binary exchange). With
#: look-ahead the same runs gave 1.26, 1.36, 2.46-2.73 and 3.40x: 1 + 0.12 P overprices
#: them by up to 1.45, and is kept (large grids, where it was measured, matter). SWAP 2 (mix) is
#: the spread-roll on the panels whose local trailing columns exceed its threshold, a share
#: f = 1 - threshold·Q/N of them, the binary exchange on the others. Its extra wall goes as
#: f squared: measured 1.16x the binary exchange at 16x16, N = 1,400 (f = 0.27; f squared
#: gives 1.14x, f 1.52x) and 1.19x at 32x32, N = 2,712 (f = 0.25; 1.23x, 1.94x). It had been
#: priced as the binary exchange, and a 32x32 run at N = 10,872 (f = 0.81), NB 64, was
#: killed at 2.8 times that estimate by the 2-hour Dahu search (f squared: 3.5x).
SPREAD_ROLL_PER_ROW = 0.12
SPREAD_ROLL_PER_ROW_NO_LOOKAHEAD = 0.07


def estimate_s(config: HplConfig) -> float:
    """Estimated wall time of one simulation of `config`, in seconds."""
    law = COEFFICIENT * config.n ** N_EXPONENT * config.ranks ** RANK_EXPONENT * REFERENCE_NB / config.nb
    if config.bcast in (4, 5):
        law *= LONG_BCAST_BASE + LONG_BCAST_PER_Q2 * config.q ** 2
    if config.swap in (1, 2):
        rolled = 1.0 if config.swap == 1 else max(0.0, 1 - config.swap_threshold * config.q / config.n) ** 2
        per_row = SPREAD_ROLL_PER_ROW if config.depth >= 1 else SPREAD_ROLL_PER_ROW_NO_LOOKAHEAD
        law *= 1 + per_row * config.p * rolled
    return OVERHEAD_S + PER_RANK_S * config.ranks + law


#: bytes, fitted on docs/predict.md's figures (huge pages on, modelled exchange): 43 MB at
#: 4x4 (N = 20,000-100,000), 55-61 MB at 8x8, 100-125 MB at 16x16, 294-335 MB at 32x32
#: (N = 20,000), and the Dahu preset's 1,024 ranks at 323 MB (N = 50,000) and 525 MB
#: (N = 500,000), whence the N term; within 15 % of each but Stampede's 6,006 ranks at
#: N = 4,096 (2.17 GB measured, 1.58 GB by the law). Kept as a bound after E75, which took
#: each rank's copy of the code out of the PSS: on its fifteen runs the law is 1.3-2.4 times
#: the measured peak (4.8 times at N = 1,024), and the linear form fitted to them lands
#: below some runs by a third (`benchmarks/cost_law.py`): an estimate that plans parallel
#: runs must not be short.
MEMORY_BASE = 39e6
MEMORY_PER_RANK = 0.255e6
MEMORY_PER_RANK_N = 0.44


def estimate_memory_bytes(config: HplConfig) -> float:
    """Estimated peak memory (PSS) of one simulation of `config`, in bytes.

    >>> round(estimate_memory_bytes(HplConfig(n=50_000, nb=128, p=32, q=32)) / 1e6)
    323
    """
    return MEMORY_BASE + MEMORY_PER_RANK * config.ranks + MEMORY_PER_RANK_N * config.ranks * config.n


#: `predict` says what a run will cost when its estimate exceeds this (seconds)
WORTH_SAYING_S = 60.0


def duration_text(seconds: float) -> str:
    """An estimate's duration, to its precision and no more.

    >>> duration_text(4.2), duration_text(725), duration_text(8300)
    ('4.2 s', '12 min', '2.3 h')
    """
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def memory_text(nbytes: float) -> str:
    return f"{nbytes / 1e9:.1f} GB" if nbytes >= 1e9 else f"{nbytes / 1e6:.0f} MB"


def estimate_text(config: HplConfig) -> str:
    """One run's estimate, as the sweep's dry run lists it.

    >>> estimate_text(HplConfig(n=50_000, nb=128, p=32, q=32))
    'about 5.9 min, 323 MB'
    """
    wall = estimate_s(config)
    shown = f"{wall / 60:.1f} min" if 60 <= wall < 600 else duration_text(wall)
    return f"about {shown}, {memory_text(estimate_memory_bytes(config))}"
