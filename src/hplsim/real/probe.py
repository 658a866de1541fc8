"""The machine's speed at one moment: a fixed dgemm workload run on every core HPL uses,
at once, as HPL's ranks run. Measured around every real run and around the calibration,
it tells whether a real run met the machine the models were fitted on (lab notebook E19:
on a shared VM the speed wanders by ±5 % over minutes, with dips of 30 % lasting
seconds, and a run's Gflops follow it).

    probe = MachineProbe(cores=[0, 1], seed=0)
    probe.measure()        # Gflops per core, e.g. 47.3

The workload is fixed (not derived from the configurations) so that every measurement of
a validation, and of two validations, is comparable. It is timed by the calibration's own
program (`hplsim-calib-blas`: fresh random offsets, operands larger than the cache), so it
sees the machine the way the calibration does. About 0.2 s of warm-up and 0.2 s of
measurement, 0.6 s in all.
"""

from __future__ import annotations

import io
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from hplsim.errors import HplsimError
from hplsim.processes import popen, run_dir

PROBE_SHAPE = (2048, 2048, 128)  # m, n, k: a mid-sized update; k = 128 sits among HPL's NBs
PROBE_CALLS = 8  # per core
PROBE_TIMEOUT_S = 120.0
#: the same calls, untimed, first, as the calibration does: three probes of ~170 ran at 28
#: Gflops/core against 50, each the first of a series (E20); 15 s of idleness alone did not
#: reproduce it, so this is a precaution, and the reference is a median of six anyway
PROBE_WARMUP_S = 0.2


@dataclass
class MachineProbe:
    cores: Sequence[int]
    seed: int = 0
    calls: int = PROBE_CALLS

    def __post_init__(self) -> None:
        if not self.cores:
            raise HplsimError("the machine probe needs at least one core")
        self._tool: Path | None = None

    def describe(self) -> dict[str, object]:
        m, n, k = PROBE_SHAPE
        return {"function": "dgemm", "m": m, "n": n, "k": k, "calls_per_core": self.calls,
                "warmup_seconds": PROBE_WARMUP_S,
                "cores": list(self.cores), "seed": self.seed,
                "value": "Gflops per core: the cores' total flops over their summed call durations, "
                         "averaged over cores"}

    def measure(self) -> float:
        """Gflops per core of the fixed workload, run on all cores at once."""
        from hplsim.calibrate.tools import BLAS_TOOL, build_calibration_tools

        if self._tool is None:
            self._tool = build_calibration_tools()[BLAS_TOOL]
        m, n, k = PROBE_SHAPE
        with run_dir("probe") as tmp:
            design = tmp / "probe.csv"
            design.write_text("function,m,n,k\n" + f"dgemm,{m},{n},{k}\n" * self.calls)
            procs = [popen([str(self._tool), "--core", str(c), "--rank", str(i),
                            "--seed", str(self.seed), "--warmup-seconds", str(PROBE_WARMUP_S), str(design)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for i, c in enumerate(self.cores)]
            try:
                outs = self._collect(procs)
            except BaseException:
                for q in procs:
                    q.kill()
                    q.wait()
                raise
        rates = []
        for out in outs:
            calls = pd.read_csv(io.StringIO(out))
            if len(calls) != self.calls or not (calls["duration"] > 0).all():
                raise HplsimError(f"the machine probe returned {len(calls)} of {self.calls} timings")
            rates.append(2.0 * m * n * k * len(calls) / calls["duration"].sum() / 1e9)
        return sum(rates) / len(rates)

    @staticmethod
    def _collect(procs: list[subprocess.Popen]) -> list[str]:
        outs = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=PROBE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise HplsimError(f"the machine probe did not finish in {PROBE_TIMEOUT_S:.0f} s")
            if p.returncode != 0:
                last = (err.strip().splitlines() or ["no message"])[-1]
                raise HplsimError(f"the machine probe failed (exit {p.returncode}): {last}")
            outs.append(out)
        return outs
