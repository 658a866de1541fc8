"""E95: how full a CPU is while its ranks compute, in a trace, per class of configuration.

    python e95_occupancy.py RANKS_PER_HOST CPUS_PER_HOST TRACE_DIR [TRACE_DIR ...]

E94's lead: a socket shares one power budget among its cores, so a rank computing while
others of its CPU wait in MPI could run faster than the calibration's all-cores rate. If
that were what the emulation lacks on the ring rolls with look-ahead (−6 … −10 %), the
classes the emulation gets right with the all-cores rate (the binary exchange with
look-ahead, DEPTH 0) would have to compute with their CPU full, and the roll with
look-ahead with its CPU partly idle. This reads, per trace:

- `occupancy`: the compute-weighted mean fraction of a CPU's ranks that compute (1: every
  rank computes whenever one does; the calibration's condition);
- `share_le_75`, `share_le_50`: the share of compute time during which at most 75 % / 50 %
  of the CPU's ranks compute;
- `bound` = 1 / `occupancy`: the run's compute time divided by what it would be if each
  computing rank ran n/k times faster while k of its CPU's n ranks compute (the most a
  shared power budget could give: frequency proportional to power, a waiting core drawing
  nothing): a k-rank segment of length dt holds dt·k rank-seconds of work at the
  calibrated rate, done in dt·k·(k/n). It bounds the compute time alone, not the critical
  path.

Ranks are placed as the emulation places them: hosts filled in rank order,
RANKS_PER_HOST each; a host's local rank r on CPU r % CPUS_PER_HOST (runtime.c)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.emulate.trace import read_trace


def cpu_profile(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The step function k(t) of how many of the intervals are open: segment lengths and k."""
    t = np.concatenate([starts, ends])
    step = np.concatenate([np.ones(len(starts)), -np.ones(len(ends))])
    order = np.lexsort((step, t))  # at a tie, an end before a start
    t, step = t[order], step[order]
    k = np.cumsum(step)[:-1]
    return np.diff(t), k


def occupancy(trace_dir: Path, ranks_per_host: int, cpus: int) -> dict[str, float | str]:
    trace = read_trace(trace_dir, columns=["rank", "start_s", "end_s"], kinds=["kernel"])
    meta, kernels = trace.meta, trace.events
    rank = kernels["rank"].to_numpy()
    cpu_of = (rank // ranks_per_host) * cpus + (rank % ranks_per_host) % cpus
    per_cpu = ranks_per_host // cpus
    weight = 0.0
    weighted = 0.0
    low75 = low50 = 0.0
    for _, g in kernels.groupby(cpu_of):
        dt, k = cpu_profile(g.start_s.to_numpy(), g.end_s.to_numpy())
        busy = k > 0
        dt, k = dt[busy], k[busy]
        work = dt * k  # rank-seconds of computing in each segment
        frac = k / per_cpu
        weight += work.sum()
        weighted += (work * frac).sum()
        low75 += work[frac <= 0.75].sum()
        low50 += work[frac <= 0.5].sum()
    cfg = meta["config"]
    return {
        "trace": trace_dir.name,
        "swap": cfg.get("swap"), "depth": cfg.get("depth"), "bcast": cfg.get("bcast"),
        "gflops": meta.get("gflops"), "time_s": meta["time_s"],
        "compute_s_per_rank": weight / meta["ranks"],
        "occupancy": weighted / weight,
        "share_le_75": low75 / weight, "share_le_50": low50 / weight,
        "bound": weight / weighted,
    }


def main(argv: list[str]) -> None:
    ranks_per_host, cpus = int(argv[0]), int(argv[1])
    rows = [occupancy(Path(d), ranks_per_host, cpus) for d in argv[2:]]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.4g}"))


if __name__ == "__main__":
    main(sys.argv[1:])
