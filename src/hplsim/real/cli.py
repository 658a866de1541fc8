"""``hplsim run-real``: the real HPL, with the same parameters as ``hplsim predict``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hplsim.clitypes import SEED, TIMEOUT
from hplsim.outputs import check_file
from hplsim.errors import HplsimError, with_warnings
from hplsim.hpl.hpldat import read_hpl_dat
from hplsim.hpl.output import format_phases, text_table
from hplsim.hpl.options import hpl_options, params_from_options
from hplsim.real import run as real_run
from hplsim.real.run import DEFAULT_THRESHOLD, DEFAULT_TIMEOUT_S, LAUNCHERS, MAX_REPEAT_FACTOR, Launch, RealResult


_TABLE = [("T/V", "<10"), ("N", ">8"), ("NB", ">6"), ("P", ">4"), ("Q", ">4"), ("Time (s)", ">11.2f"),
          ("Gflops", ">11.4g"), ("min – max", ">20"), ("runs", ">6"), ("  residual", "")]


def format_results(results: list[RealResult]) -> str:
    return text_table(_TABLE, [[r.config.label(), r.config.n, r.config.nb, r.config.p, r.config.q, r.time_s, r.gflops,
                                f"{r.gflops_min:.4g} – {r.gflops_max:.4g}" if len(r.runs) > 1 else "",
                                len(r.runs), f"  {r.residual_check}"] for r in results])


@click.command("run-real")
@hpl_options
@click.option("--repeat", type=int, default=1, show_default=True,
              help="Run every configuration this many times (interleaved); report the median and min–max.")
@click.option("--min-seconds", type=float, default=0.0, show_default=True,
              help="A configuration whose first run is short runs more times, until its runs add up to this "
                   f"many seconds of HPL time (at most {MAX_REPEAT_FACTOR} x --repeat; the extra runs go to rounds 2 … "
                   "--repeat).")
@click.option("--shuffle/--no-shuffle", default=False, show_default=True,
              help="Shuffle the configurations within each repetition (seeded by --seed).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of --shuffle.")
@click.option("--threshold", type=float, default=None,
              help=f"Residual check threshold (default: the HPL.dat's, else {DEFAULT_THRESHOLD:g}); "
                   "not positive: HPL skips the check.")
@click.option("--hostfile", type=click.Path(dir_okay=False, path_type=Path),
              help="Run on these hosts with mpirun ('host slots=N' lines); the run directory must be shared.")
@click.option("--launcher", type=click.Choice(LAUNCHERS), default="auto", show_default=True,
              help="local (this host's cores), mpirun (with --hostfile), srun (inside a Slurm allocation); "
                   "auto: srun inside an allocation, mpirun with a hostfile, else local.")
@click.option("--oversubscribe", is_flag=True,
              help="Allow more ranks than cores (unpinned): for testing only, the timings mean nothing.")
@click.option("--timeout", type=TIMEOUT, default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Kill a run lasting longer than this (seconds): an error.")
@click.option("--out", "-o", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write an archive (zip: results, HPL's outputs, metadata; docs/formats/archive.md).")
@click.option("--trace", is_flag=True,
              help="Run the traced HPL: every kernel call the emulation models is timed and archived "
                   "(results/kernels.csv; needs --out, local runs only).")
@click.option("--probe", is_flag=True,
              help="Measure the machine's dgemm speed (a fixed 0.6 s workload on the ranks' cores) before "
                   "the first run and after every run, and archive it with each run: which runs met a slow "
                   "machine (local runs only; docs/validate.md).")
@click.option("--phases", is_flag=True,
              help="Run HPL built with its own per-phase timers (-DHPL_DETAILED_TIMING) and report each phase's "
                   "median time, to hold against `hplsim predict --phases` (docs/validate.md).")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list, one object per configuration (gflops and time_s are medians).")
@click.option("--quiet", "-q", is_flag=True, help="No progress messages on stderr.")
def run_real(**opts) -> None:
    """Run the real HPL (same HPL 2.0 source as the emulation, mpicc + OpenBLAS, one pinned
    rank per core) and report HPL's Gflops, time and residual check.

    \b
    hplsim run-real -N 2000 --nb 64 -P 1 -Q 2 --json
    hplsim run-real -N 5000,10000 --nb 128 -P 1,2 -Q 2,1 --repeat 3 --out real.zip
    hplsim run-real --hpl-dat HPL.dat --hostfile hosts.txt
    """
    base = read_hpl_dat(opts["hpl_dat"]) if opts["hpl_dat"] else None
    params = params_from_options(base, opts)
    threshold = opts["threshold"] if opts["threshold"] is not None else (
        base.threshold if base is not None else DEFAULT_THRESHOLD)
    if params.output != "stdout":
        click.echo(f"hplsim: note: the HPL.dat's output goes to {params.output}; run-real reads HPL's stdout",
                   err=True)
    if opts["trace"] and opts["out"] is None:
        raise HplsimError("--trace needs --out: the kernel calls go to the archive")
    launch = Launch.choose(opts["launcher"], opts["hostfile"], opts["oversubscribe"])
    if opts["timeout"] is not None and opts["timeout"] <= 0:
        raise HplsimError("--timeout must be positive")
    say = None if opts["quiet"] else (lambda msg: click.echo(f"hplsim: {msg}", err=True))
    configs = params.configs()
    if opts["out"] is not None:
        check_file(opts["out"], "the run archive (--out)")
    probe = None
    if opts["probe"]:
        from hplsim.real.probe import MachineProbe

        if launch.kind != "local":
            raise HplsimError("--probe runs on this host only (it measures this host's cores)")
        probe = MachineProbe(real_run.available_cores()[:max(c.ranks for c in configs)], opts["seed"])
    done = real_run.run_real(configs, launch, repeat=opts["repeat"], out=opts["out"], threshold=threshold,
                             timeout=opts["timeout"], shuffle=opts["shuffle"], seed=opts["seed"], progress=say,
                             trace=opts["trace"], probe=probe, min_seconds=opts["min_seconds"],
                             phases=opts["phases"])
    if opts["as_json"]:
        json.dump(with_warnings([r.to_dict() for r in done.results]), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        click.echo(format_results(done.results))
        for r in done.results:
            if r.phases is not None:
                click.echo(format_phases(r.config, r.time_s, r.phases, f"median of {len(r.runs)} run(s)"))
    if done.archive is not None and say:
        say(f"wrote {done.archive}")
