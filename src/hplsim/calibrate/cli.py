"""`hplsim calibrate dgemm|dtrsm|mpi` and `hplsim archive show`."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any, Callable

import click

from hplsim.calibrate import designs
from hplsim.clitypes import SEED
from hplsim.outputs import check_file
from hplsim.calibrate.archive import read_archive
from hplsim.calibrate.hosts import LAUNCHERS, parse_cores
from hplsim.calibrate.runner import (INIT_MODES, OTHERS, BlasOptions, CalibrationInterrupted, MpiOptions, RunResult,
                                     calibrate_blas, calibrate_mpi, default_out)
from hplsim.calibrate.summary import format_summary, summarise
from hplsim.errors import HplsimError


def _common(f: Callable) -> Callable:
    """Options every calibration takes (applied bottom-up, so listed in reverse)."""
    for opt in reversed([
        click.option("--seed", type=SEED, default=None,
                     help="Seed of every random choice (design, order, data). Default: drawn and recorded."),
        click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Archive to write (default: calibration-KIND-HOST-DATE.zip)."),
        click.option("--experiment", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Measure the rows of this CSV instead of generating a design."),
        click.option("--repetitions", type=int, default=None, help="Times each row is measured."),
        click.option("--no-shuffle", is_flag=True, help="Keep the design order (for order-effect studies)."),
        click.option("--cores", default=None, help="Local cores to use, e.g. 0-15 or 0,2 (default: all)."),
        click.option("--hostfile", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Run on these hosts with mpirun (lines 'host slots=N' or one line per slot)."),
        click.option("--launcher", type=click.Choice(LAUNCHERS), default="auto", show_default=True,
                     help="How processes start: local, mpirun, or srun (auto: srun inside a multi-node Slurm job)."),
        click.option("--monitor-interval", type=float, default=1.0, show_default=True,
                     help="Seconds between frequency/temperature samples (0: no monitoring)."),
        click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: on a terminal)."),
    ]):
        f = opt(f)
    return f


def _blas_options(f: Callable) -> Callable:
    for opt in reversed([
        click.option("--rows", type=int, default=60, show_default=True, help="Design points, anchors included."),
        click.option("--design", "generator", type=click.Choice(designs.BLAS_GENERATORS), default="uniform-product",
                     show_default=True, help="How sizes are drawn (docs/calibrate.md)."),
        click.option("--max-product", type=float, default=float(designs.DEFAULT_MAX_PRODUCT), show_default=True,
                     help="Largest M·N·K (dtrsm: M·N·order)."),
        click.option("--max-side", type=int, default=designs.DEFAULT_MAX_SIDE, show_default=True,
                     help="Largest M, N or K."),
        click.option("--k", "fixed_k", type=int, default=None, help="K of every row for --design fixed-k (HPL's NB)."),
        click.option("--anchors", default=None,
                     help="Fixed rows added to the design, 'M,N,K;…' (dtrsm 'M,N,SIDE;…'), or 'none'. "
                          "Default: 1,1,1;2048,2048,2048 (dtrsm 1,1,L;2048,2048,L;2048,2048,R)."),
        click.option("--init", type=click.Choice(INIT_MODES), default="random", show_default=True,
                     help="Matrix contents (their bits change power, frequency and speed)."),
        click.option("--mask-bits", type=int, default=12, show_default=True,
                     help="With --init masked: low mantissa bits set to 0."),
        click.option("--constant", type=float, default=1.0, show_default=True, help="With --init constant: the value."),
        click.option("--warmup", type=float, default=1.0, show_default=True,
                     help="Seconds of untimed dgemm on every core before measuring."),
        click.option("--warmup-passes", type=int, default=0, show_default=True,
                     help="Untimed passes over the whole sequence before measuring."),
        click.option("--others", type=click.Choice(OTHERS), default="idle", show_default=True,
                     help="What this host's cores outside --cores do meanwhile: idle, or spin (a polling "
                          "loop, as a rank waiting in MPI; a socket's power is shared, docs/calibrate.md)."),
    ]):
        f = opt(f)
    return f


def _parse_anchors(text: str | None, function: str) -> list[tuple[Any, ...]] | None:
    if text is None:
        return None
    if text.strip().lower() == "none":
        return []
    out: list[tuple[Any, ...]] = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        fields = [x.strip() for x in part.split(",")]
        try:
            if function == "dgemm":
                if len(fields) != 3:
                    raise ValueError
                sizes = tuple(int(x) for x in fields)
                out.append(sizes)
            else:
                if len(fields) != 3 or fields[2].upper() not in ("L", "R"):
                    raise ValueError
                sizes = (int(fields[0]), int(fields[1]))
                out.append((*sizes, fields[2].upper()))
        except ValueError:
            shape = "M,N,K" if function == "dgemm" else "M,N,L|R"
            raise HplsimError(f"--anchors: cannot read {part!r} (expected {shape})") from None
        if min(sizes) < 1:
            raise HplsimError(f"--anchors: sizes must be >= 1 in {part!r}")
        if max(sizes) > designs.BLAS_INT_MAX:
            raise HplsimError(f"--anchors: {part!r} does not fit a BLAS int")
    return out


def _seed(seed: int | None) -> int:
    if seed is None:
        return secrets.randbelow(2**31)
    if seed < 0:
        raise HplsimError(f"--seed must be >= 0, got {seed}")
    return seed


def _cores(text: str | None) -> list[int] | None:
    return parse_cores(text) if text is not None else None


def _finish(run: Callable[[], RunResult]) -> RunResult:
    try:
        return run()
    except CalibrationInterrupted as exc:
        r = exc.result
        click.echo(f"hplsim: {exc}: partial archive {r.path} (status aborted, {r.measured} of {r.planned} rows)",
                   err=True)
        # SystemExit, not click's Exit: click returns Exit's code instead of exiting when
        # run with standalone_mode=False, as hplsim's entry point does.
        raise SystemExit(128 + exc.signum) from None


def _report(r: RunResult) -> None:
    from hplsim.calibrate.summary import blas_flops

    text = f"wrote {r.path} ({r.kind}, {r.status}): {r.measured} of {r.planned} rows in {r.seconds:.1f} s"
    if r.kind in ("dgemm", "dtrsm") and not r.results.empty:
        flops = blas_flops(r.results)
        big = r.results[flops >= 1e6]
        if not big.empty:
            gf = (blas_flops(big) / big.duration / 1e9).median()
            text += f", median {gf:.1f} Gflops per core"
    click.echo(text)


def _run_blas(function: str, kw: dict[str, Any]) -> None:
    seed = _seed(kw["seed"])
    cores = _cores(kw["cores"])
    if kw["experiment"] is not None:
        design = designs.blas_design_from_file(kw["experiment"], function)
        design = designs.Design(design.kind, design.generator, seed, design.parameters, design.points)
    else:
        design = designs.blas_design(function, kw["generator"], kw["rows"], seed, kw["max_product"],
                                     kw["max_side"], kw["fixed_k"], _parse_anchors(kw["anchors"], function))
    opts = BlasOptions(init=kw["init"], mask_bits=kw["mask_bits"], constant=kw["constant"],
                       warmup_seconds=kw["warmup"], warmup_passes=kw["warmup_passes"], others=kw["others"],
                       repetitions=kw["repetitions"] or 1, shuffle=not kw["no_shuffle"],
                       monitor_interval=kw["monitor_interval"], progress=kw["progress"])
    out = check_file(kw["out"] or default_out(function), "the calibration archive (--out)")
    _report(_finish(lambda: calibrate_blas(design, out, seed, opts, kw["launcher"], kw["hostfile"], cores)))


@click.group("calibrate")
def calibrate() -> None:
    """Measure dgemm/dtrsm or MPI on this machine (or a hostfile's hosts) into an archive.

    \b
    hplsim calibrate dgemm --rows 60 --seed 1 --out d.zip
    hplsim calibrate mpi --rows 40 --seed 1 --out m.zip
    hplsim archive show d.zip
    """


@calibrate.command("dgemm")
@_blas_options
@click.option("--function", type=click.Choice(designs.BLAS_FUNCTIONS), default="dgemm", show_default=True,
              help="Kernel to measure (dtrsm is also `hplsim calibrate dtrsm`).")
@_common
def dgemm_command(function: str, **kw: Any) -> None:
    """Time dgemm (or dtrsm) calls on every core at once, one pinned process per core."""
    _run_blas(function, kw)


@calibrate.command("dtrsm")
@_blas_options
@_common
def dtrsm_command(**kw: Any) -> None:
    """Time dtrsm calls (HPL's second kernel) on every core at once."""
    _run_blas("dtrsm", kw)


@calibrate.command("mpi")
@click.option("--rows", type=int, default=40, show_default=True,
              help="Design points (operation, size), shared among the operations.")
@click.option("--operations", default=",".join(designs.MPI_OPERATIONS), show_default=True,
              help="Comma-separated operations to measure.")
@click.option("--min-size", type=int, default=1, show_default=True, help="Smallest message (bytes).")
@click.option("--max-size", type=float, default=1e9, show_default=True, help="Largest message (bytes).")
@_common
def mpi_command(rows: int, operations: str, min_size: int, max_size: float, **kw: Any) -> None:
    """Time MPI point-to-point operations between two ranks (this host, or the first two
    hosts of --hostfile)."""
    seed = _seed(kw["seed"])
    cores = _cores(kw["cores"])
    if kw["experiment"] is not None:
        design = designs.mpi_design_from_file(kw["experiment"])
        design = designs.Design(design.kind, design.generator, seed, design.parameters, design.points)
    else:
        if max_size != int(max_size):
            raise HplsimError(f"--max-size must be a whole number of bytes, got {max_size}")
        ops = [o.strip() for o in operations.split(",") if o.strip()]
        design = designs.mpi_design(rows, seed, ops, min_size, int(max_size))
    opts = MpiOptions(repetitions=kw["repetitions"] or 5, shuffle=not kw["no_shuffle"],
                      monitor_interval=kw["monitor_interval"], progress=kw["progress"])
    out = check_file(kw["out"] or default_out("mpi"), "the calibration archive (--out)")
    _report(_finish(lambda: calibrate_mpi(design, out, seed, opts, kw["launcher"], kw["hostfile"], cores)))


@click.group("archive")
def archive() -> None:
    """Inspect a calibration archive."""


@archive.command("show")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@click.option("--member", default=None, help="Print one member instead (e.g. metadata.yaml, results/dgemm.csv).")
def archive_show(path: Path, as_json: bool, member: str | None) -> None:
    """Summarise a calibration archive: run, headline numbers, completeness."""
    a = read_archive(path)
    if member is not None:
        click.echo(a.text(member), nl=False)
    elif as_json:
        click.echo(json.dumps(summarise(a), indent=1, default=str))
    else:
        click.echo(format_summary(summarise(a)))
