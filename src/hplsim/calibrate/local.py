"""Calibrations of this machine for `hplsim validate`: dgemm and dtrsm with the calls HPL
makes for the configurations at hand (`hpl_designs.hpl_blas_design`), one pinned process on
each core HPL uses, all at once; MPI between two local ranks. How much each measures is
`CalibrationSettings` (`quick()`: a first look, the tests)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hplsim.calibrate.designs import mpi_design
from hplsim.calibrate.hpl_designs import hpl_blas_design
from hplsim.calibrate.runner import BlasOptions, MpiOptions, calibrate_blas, calibrate_mpi
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig


@dataclass
class CalibrationSettings:
    """How much to measure (the defaults of `hplsim validate`; `quick()` for tests)."""

    dgemm_rows: int = 150
    dtrsm_rows: int = 60
    blas_repetitions: int = 3
    mpi_rows: int = 64  # 8 per operation
    mpi_repetitions: int = 5
    mpi_max_size: int = 10**8
    warmup_seconds: float = 1.0
    trace_n: int | None = None  # default: from the configurations (below the smallest N)
    pad_bytes: int = 0  # the calibration tool's offset slack per operand (its minimum: 2 MB)
    #: machine probes (hplsim.real.probe) right before, and again right after, the first
    #: kernel calibration pass of `hplsim validate`; their median with the later passes' is
    #: the reference the real runs' machine is compared with
    reference_probes: int = 3

    @classmethod
    def quick(cls) -> "CalibrationSettings":
        return cls(dgemm_rows=30, dtrsm_rows=15, blas_repetitions=1, mpi_rows=32, mpi_repetitions=3,
                   mpi_max_size=10**7, warmup_seconds=0.2, reference_probes=1)


def calibrate_blas_for(configs: Sequence[HplConfig], outdir: Path, cores: list[int], seed: int,
                       settings: CalibrationSettings,
                       functions: Sequence[str] = ("dgemm", "dtrsm")) -> dict[str, Path]:
    """dgemm.zip and dtrsm.zip (or `functions`' only) in `outdir`, measured on `cores` at once."""
    # pad_bytes 0 (the tool's minimum slack, 2 MB): HPL's many small calls work on the panel
    # it just touched, in cache; calls that start cold would be several times slower
    opts = BlasOptions(warmup_seconds=settings.warmup_seconds, repetitions=settings.blas_repetitions,
                       monitor_interval=1.0, progress=False, pad_bytes=settings.pad_bytes)
    out = {}
    rows_of = {"dgemm": settings.dgemm_rows, "dtrsm": settings.dtrsm_rows}
    for function, rows in ((f, rows_of[f]) for f in functions):
        design = hpl_blas_design(configs, function, rows, seed)
        out[function] = calibrate_blas(design, outdir / f"{function}.zip", seed, opts, "local", None, cores).path
    return out


def calibrate_network(out: Path, cores: list[int], seed: int, settings: CalibrationSettings) -> Path:
    if len(cores) < 2:
        raise HplsimError("an MPI calibration between two local ranks needs two cores")
    design = mpi_design(settings.mpi_rows, seed, max_size=settings.mpi_max_size)
    opts = MpiOptions(repetitions=settings.mpi_repetitions, progress=False)
    return calibrate_mpi(design, out, seed, opts, "local", None, cores[:2]).path
