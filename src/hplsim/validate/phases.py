"""A prediction against real runs phase by phase: HPL's own per-phase times
(``HPL_DETAILED_TIMING``, `hplsim run-real --phases` and `hplsim predict --phases`) side by
side, so that a closed-loop error names the phase it comes from (lab notebook E99).

HPL reports each phase as the largest time any process spent in it, with two decimals; the
real side is each phase's median over the runs of a configuration, with their range.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from hplsim.hpl.output import PHASES
from hplsim.predict import Prediction
from hplsim.real.run import RealResult

COLUMNS = ["config", "phase", "real_s", "real_min_s", "real_max_s", "emulated_s", "difference_s", "difference_pct"]


def phase_table(real: Sequence[RealResult], predicted: Sequence[Prediction]) -> pd.DataFrame:
    """One row per configuration and phase (HPL's time as the phase ``total``), the
    configurations paired in order; both sides must have been run with phases.

    >>> from hplsim.hpl.config import HplConfig
    >>> from hplsim.real.run import RealRun
    >>> c = HplConfig(n=1000, nb=64, p=1, q=2)
    >>> ph = dict.fromkeys(PHASES, 0.0) | {"update": 1.0}
    >>> runs = [RealRun(c, r, r, t, 0.0, None, "SKIPPED", t, 0.0, None, phases=ph | {"update": u})
    ...         for r, (t, u) in enumerate([(1.2, 1.0), (1.4, 1.2)])]
    >>> pred = Prediction(c, 1, 0.0, 1.1, 0.0, 0, "p", "", "m", "", phases=ph | {"update": 0.9})
    >>> row = phase_table([RealResult(c, runs)], [pred]).set_index("phase").loc["update"]
    >>> float(row.real_s), float(row.emulated_s), round(float(row.difference_pct), 1)
    (1.1, 0.9, -18.2)
    """
    if len(real) != len(predicted):
        raise ValueError(f"{len(real)} real configurations against {len(predicted)} predictions")
    rows = []
    for res, pred in zip(real, predicted):
        if res.config != pred.config:
            raise ValueError(f"{res.config.label()} N={res.config.n} paired with {pred.config.label()} "
                             f"N={pred.config.n}")
        if res.phases is None or pred.phases is None:
            raise ValueError(f"{res.config.label()} N={res.config.n}: run without phases")
        name = f"{res.config.label()} N={res.config.n} NB={res.config.nb} {res.config.p}x{res.config.q}"
        # the real side's medians are RealResult's own (its `phases` and `time_s`)
        sides = {phase: (res.phases[phase], [r.phases[phase] for r in res.runs], pred.phases[phase])
                 for phase in PHASES}
        sides["total"] = (res.time_s, [r.time_s for r in res.runs], pred.time_s)
        for phase, (median, values, emulated) in sides.items():
            rows.append([name, phase, median, min(values), max(values), emulated, emulated - median,
                         100.0 * (emulated / median - 1.0) if median > 0 else float("nan")])
    return pd.DataFrame(rows, columns=COLUMNS)
