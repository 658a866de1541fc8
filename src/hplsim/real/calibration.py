"""The calibrate → fit half of `hplsim validate`: measure this machine's kernels and MPI
on the cores HPL will use, and turn the measurements into a model file and a platform spec.

- dgemm and dtrsm: the calibration tool (`hplsim.calibrate.runner.calibrate_blas`), one
  pinned process per core, all cores at once, with a design drawn from the shapes HPL
  calls for the configurations at hand (`hpl_blas_design`); fitted M-2 (polynomial in
  the sizes), which captures the cost of the short and thin calls (panel recursion,
  update chunks while a broadcast is pending) as well as the flop rate.
- the other kernels (idamax, dscal, dger, dgemv, dtrsv, daxpy, dswap, HPL's dlaswp*,
  dlacpy, dlatcpy): timed call by call inside a small real HPL run (the traced binary,
  `hplsim.real.trace`), at a problem size below the validated ones, and fitted per
  kernel. Those calls work on the panel and the rows HPL just touched: a standalone
  benchmark would have to recreate that cache state, the traced run has it.
- MPI between two local ranks: the calibration tool (`calibrate_mpi`), fitted into SMPI
  options (`hplsim.models.network`) relative to the loopback link of a one-node platform.
"""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig

#: reference link of the one-node platform: bw-factor and lat-factor are relative to it
LOOPBACK_BANDWIDTH = 10e9
LOOPBACK_LATENCY = 1e-6
#: kernels fitted from the traced HPL run (everything the emulation models but dgemm/dtrsm)
TRACED_KERNELS = ("dgemv", "dger", "dtrsv", "daxpy", "dscal", "dswap", "idamax", "HPL_dlacpy", "HPL_dlatcpy",
                  "HPL_dlaswp00N", "HPL_dlaswp10N", "HPL_dlaswp01N", "HPL_dlaswp01T", "HPL_dlaswp02N",
                  "HPL_dlaswp03N", "HPL_dlaswp03T", "HPL_dlaswp04N", "HPL_dlaswp04T", "HPL_dlaswp05N",
                  "HPL_dlaswp05T", "HPL_dlaswp06N", "HPL_dlaswp06T")


# ------------------------------------------------------------------ designs from HPL's shapes


def _local(n: int, nb: int, procs: int) -> int:
    """Rows (or columns) of an N-matrix a process holds at most, block-cyclic in NB."""
    blocks = math.ceil(n / nb)
    return min(n, math.ceil(blocks / procs) * nb)


def hpl_blas_design(configs: Sequence[HplConfig], function: str, rows: int, seed: int):
    """A dgemm or dtrsm design covering the calls HPL makes for `configs`.

    dgemm, three families in equal shares: the trailing update (K = NB, M up to the
    local rows, N up to the local columns, with M·N uniform so the time axis is covered
    evenly); update chunks (K = NB, N = NB: what a process updates between two polls of
    a pending broadcast); the panel recursion (K = N = a recursion width NB/2^j, M up to
    the local rows). A and C have HPL's leading dimension (the local rows of the whole
    matrix: C is a block of the matrix, A a panel of it), so that strides, TLB and
    cache behave as in HPL. dtrsm: side L, order NB or a recursion width, N up to the
    local columns (update, chunks), plus small solves of the panel recursion.
    """
    from hplsim.calibrate.designs import Design, _blas_frame

    if not configs:
        raise HplsimError("no configuration to draw a design from")
    rng = np.random.default_rng([int(seed), 7])
    shapes = []
    for c in configs:
        widths = []
        w = c.nb
        while w >= max(c.nbmin, 1) and w >= 1:
            widths.append(w)
            if w < 2 * c.ndiv:
                break
            w //= c.ndiv
        shapes.append((_local(c.n, c.nb, c.p), _local(c.n, c.nb, c.q), c.nb, widths,
                       math.ceil(_local(c.n, c.nb, c.p) / c.align) * c.align))
    points: list[dict[str, Any]] = []
    families = 3
    for i in range(rows):
        mp, nq, nb, widths, ld = shapes[rng.integers(len(shapes))]
        family = i % families
        if function == "dgemm":
            if family == 0:
                target = rng.uniform(0, 1) * mp * nq  # M·N uniform: the time axis covered evenly
                m = int(rng.integers(max(1, math.ceil(target / nq)), mp + 1))
                n = int(np.clip(round(target / m), 1, nq))
                points.append(dict(function="dgemm", m=m, n=n, k=nb, side="", lda=ld, ldc=ld, anchor=False))
            elif family == 1:
                m = int(rng.integers(1, mp + 1))
                points.append(dict(function="dgemm", m=m, n=min(nb, nq), k=nb, side="", lda=ld, ldc=ld,
                                   anchor=False))
            else:
                w = int(widths[rng.integers(len(widths))]) if len(widths) > 1 else nb
                m = int(rng.integers(1, mp + 1))
                points.append(dict(function="dgemm", m=m, n=w, k=w, side="", lda=ld, ldc=ld, anchor=False))
        else:
            if family == 0:
                n = int(rng.integers(1, nq + 1))
                points.append(dict(function="dtrsm", m=nb, n=n, side="L", anchor=False))
            elif family == 1:
                points.append(dict(function="dtrsm", m=nb, n=min(nb, nq), side="L", anchor=False))
            else:
                w = int(widths[rng.integers(len(widths))])
                n = int(rng.integers(1, max(w, 1) + 1)) if rng.uniform() < 0.5 else w
                points.append(dict(function="dtrsm", m=w, n=n, side="L", anchor=False))
    frame = _blas_frame(points)
    params = {"function": function, "configurations": len(configs),
              "shapes": [dict(local_rows=s[0], local_columns=s[1], nb=s[2], widths=s[3], ld=s[4]) for s in shapes],
              "families": "update (K=NB), update chunks (N=K=NB), panel recursion (N=K=width)"
              if function == "dgemm" else "update (order NB), chunks (order NB, N=NB), panel (order=width)"}
    return Design("blas", "hpl-shapes", seed, params, frame)


# ------------------------------------------------------------------ kernels


@dataclass
class CalibrationSettings:
    """How much to measure (the defaults of `hplsim validate`; `quick()` for tests)."""

    dgemm_rows: int = 90
    dtrsm_rows: int = 45
    blas_repetitions: int = 2
    mpi_rows: int = 60
    mpi_repetitions: int = 5
    mpi_max_size: int = 10**8
    warmup_seconds: float = 1.0
    trace_n: int | None = None  # default: from the configurations (below the smallest N)

    @classmethod
    def quick(cls) -> "CalibrationSettings":
        return cls(dgemm_rows=30, dtrsm_rows=15, blas_repetitions=1, mpi_rows=24, mpi_repetitions=3,
                   mpi_max_size=10**7, warmup_seconds=0.2)


def calibrate_blas_for(configs: Sequence[HplConfig], outdir: Path, cores: list[int], seed: int,
                       settings: CalibrationSettings) -> dict[str, Path]:
    """dgemm.zip and dtrsm.zip in `outdir`, measured on `cores` at once."""
    from hplsim.calibrate.runner import BlasOptions, calibrate_blas

    opts = BlasOptions(warmup_seconds=settings.warmup_seconds, repetitions=settings.blas_repetitions,
                       monitor_interval=1.0, progress=False)
    out = {}
    for function, rows in (("dgemm", settings.dgemm_rows), ("dtrsm", settings.dtrsm_rows)):
        design = hpl_blas_design(configs, function, rows, seed)
        out[function] = calibrate_blas(design, outdir / f"{function}.zip", seed, opts, "local", None, cores).path
    return out


def trace_configs(configs: Sequence[HplConfig], n: int | None = None) -> list[HplConfig]:
    """The configurations of the traced run: each distinct (grid, NB, variant) of
    `configs`, at a problem size `n` (default: half the smallest N, at least 4·NB) so that
    the kernels are not calibrated on the runs they will predict."""
    from dataclasses import replace

    seen: dict[tuple, HplConfig] = {}
    for c in configs:
        key = (c.p, c.q, c.nb, c.pfact, c.rfact, c.nbmin, c.ndiv, c.swap, c.swap_threshold, c.l1_transposed,
               c.u_transposed, c.pmap, c.depth)
        seen.setdefault(key, c)
    smallest = min(c.n for c in configs)
    out = []
    for c in seen.values():
        size = n if n is not None else max(smallest // 2, 4 * c.nb)
        out.append(replace(c, n=max(size, c.nb)))
    return out


def trace_kernels(configs: Sequence[HplConfig], out: Path, launch, progress: Callable[[str], None] | None = None,
                  n: int | None = None) -> Path:
    """Run the traced HPL on `trace_configs(configs, n)`; the archive (kind hpl, with
    results/kernels.csv) is `out`."""
    from hplsim.real.run import run_real

    done = run_real(trace_configs(configs, n), launch, repeat=1, out=out, trace=True, progress=progress,
                    keep_outputs=True)
    assert done.archive is not None
    return done.archive


def _calls_from_trace(archive: Path) -> pd.DataFrame:
    from hplsim.models.readers import read_measurements

    meas = read_measurements([archive])
    calls = meas.kernels
    return calls[calls["kernel"].isin(TRACED_KERNELS)]


def fit_models(blas_archives: Sequence[Path], trace_archive: Path | None, out: Path,
               blas_option: str = "M2,N0", traced_option: str = "M2,N0", seed: int = 0) -> dict[str, Any]:
    """The model file `out`: dgemm/dtrsm from the calibration archives, the other kernels
    from the traced run; pooled over cores (`default` entry: one host, one socket here).
    Returns a summary (per kernel: calls, option, R², coefficients)."""
    from hplsim import __version__
    from hplsim.models.kernels import fit_kernels, to_model_file
    from hplsim.models.modelfile import save_model
    from hplsim.models.readers import read_measurements

    fits = []
    summary: dict[str, Any] = {}

    def fit(calls: pd.DataFrame, kernel: str, option: str):
        mean, noise = option.split(",")
        for m in dict.fromkeys((mean, "M1", "M0")):
            try:
                kf = fit_kernels(calls, kernel, option=f"{m},{noise}", per="none", seed=seed)
            except HplsimError:
                # the sizes do not determine every term (dtrsm on one side only: its MN and NK
                # terms coincide; a kernel HPL calls with a single M): one degree less
                continue
            if not kf.pooled.dropped or m == "M0":
                return kf
            # a leading term came out negative and was dropped: the rest would make a
            # polynomial whose leading terms may be negative; one degree less instead
        raise HplsimError(f"cannot fit {kernel} on its {len(calls)} traced calls")

    blas = read_measurements(list(blas_archives)).kernels
    for kernel in ("dgemm", "dtrsm"):
        calls = blas[blas["kernel"] == kernel]
        if calls.empty:
            raise HplsimError(f"no {kernel} calls in the calibration archives")
        fits.append(fit(calls, kernel, blas_option))
    if trace_archive is not None:
        traced = _calls_from_trace(trace_archive)
        for kernel in TRACED_KERNELS:
            calls = traced[traced["kernel"] == kernel]
            if len(calls) < 3:
                continue  # HPL does not call it in these configurations (e.g. dlaswp01 at P = 1)
            fits.append(fit(calls, kernel, traced_option))
    for kf in fits:
        summary[kf.kernel] = {"calls": kf.pooled.n, "option": f"{kf.option[0]},{kf.option[1]}",
                              "r2": kf.pooled.r2, "mean": kf.pooled.coefficients}
    provenance = {
        "tool": f"hplsim {__version__} validate",
        "dgemm_dtrsm": [str(p) for p in blas_archives],
        "other_kernels": str(trace_archive) if trace_archive else None,
        "note": "dgemm/dtrsm: calibration tool on the cores HPL uses, design from HPL's call shapes; other "
                "kernels: calls timed inside a traced real HPL run at a smaller N (docs/validate.md)",
    }
    model = to_model_file(fits, description=f"kernel models of {socket.gethostname()} for hplsim validate",
                          provenance=provenance)
    save_model(model, out)
    return summary


# ------------------------------------------------------------------ network


def calibrate_network(out: Path, cores: list[int], seed: int, settings: CalibrationSettings) -> Path:
    from hplsim.calibrate.designs import mpi_design
    from hplsim.calibrate.runner import MpiOptions, calibrate_mpi

    if len(cores) < 2:
        raise HplsimError("an MPI calibration between two local ranks needs two cores")
    design = mpi_design(settings.mpi_rows, seed, max_size=settings.mpi_max_size)
    opts = MpiOptions(repetitions=settings.mpi_repetitions, progress=False)
    return calibrate_mpi(design, out, seed, opts, "local", None, cores[:2]).path


def fit_network_options(mpi_archive: Path, seed: int = 0) -> tuple[dict[str, str], list[str]]:
    """SMPI options for messages between two ranks of this host, relative to the loopback
    link of `local_platform_spec`."""
    from hplsim.models.network import fit_network, smpi_options
    from hplsim.models.readers import read_measurements

    meas = read_measurements([mpi_archive])
    fit = fit_network(meas.network, seed=seed)
    options, notes = smpi_options(fit, LOOPBACK_BANDWIDTH, LOOPBACK_LATENCY)
    return options, [*fit.threshold_reasons, *notes]


def local_platform_spec(cores: int, smpi: dict[str, str] | None = None, name: str | None = None) -> dict[str, Any]:
    """This machine as a platform spec: one node with `cores` rank slots; ranks talk through
    the node's loopback link, whose factors and overheads come from the MPI calibration."""
    return {
        "format": "hplsim-platform",
        "name": name or f"{socket.gethostname()}-local",
        "nodes": 1,
        "cores_per_node": cores,
        "host_prefix": "local-",
        "network": {
            "topology": "star",
            "bandwidth": f"{LOOPBACK_BANDWIDTH:g}Bps",
            "latency": f"{LOOPBACK_LATENCY * 1e6:g}us",
            "loopback_bandwidth": f"{LOOPBACK_BANDWIDTH:g}Bps",
            "loopback_latency": f"{LOOPBACK_LATENCY * 1e6:g}us",
        },
        "smpi": dict(smpi or {}),
    }
