"""``hplsim validate``: the command line of the closed loop (`hplsim.validate.loop`)."""

from __future__ import annotations

import json
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path

import click

from hplsim.calibrate.hpl_designs import default_configs
from hplsim.calibrate.local import CalibrationSettings
from hplsim.clitypes import SEED32, TIMEOUT
from hplsim.errors import HplsimError, with_warnings
from hplsim.hpl.hpldat import read_hpl_dat
from hplsim.hpl.options import any_hpl_option, hpl_options, params_from_options
from hplsim.outputs import check_dir
from hplsim.real.run import DEFAULT_TIMEOUT_S, MAX_REPEAT_FACTOR
from hplsim.report.validation import format_summary, format_table
from hplsim.validate.loop import DEFAULT_MIN_SECONDS, validate_local


@click.command("validate")
@hpl_options
@click.option("--repeat", type=int, default=3, show_default=True,
              help="Rounds of real runs: every configuration runs at least this many times.")
@click.option("--min-seconds", type=float, default=DEFAULT_MIN_SECONDS, show_default=True,
              help="A configuration whose runs are short runs more times, until they add up to this many seconds "
                   f"of HPL time (at most {MAX_REPEAT_FACTOR} x --repeat; 0: exactly --repeat).")
@click.option("--out", "-o", "outdir", type=click.Path(file_okay=False, path_type=Path),
              help="Output directory (default: validation-HOST-DATE).")
@click.option("--quick", is_flag=True, help="Small calibrations (a first look, tests): fewer and smaller measurements.")
@click.option("--model", "model_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Use this model file instead of calibrating and fitting the kernels.")
@click.option("--platform", "platform_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Use this platform spec instead of calibrating MPI (one node, as many slots as ranks).")
@click.option("--trace-n", type=int, help="Problem size of the traced HPL run that calibrates the small kernels "
                                          "(default: below the smallest N, see docs/validate.md).")
@click.option("--reuse", is_flag=True, help="Reuse the artefacts already in --out (calibrations, model, platform, "
                                            "real runs of the same configurations).")
@click.option("--seed", type=SEED32, default=0, show_default=True, help="Seed of designs, orders and the emulation.")
@click.option("--timeout", type=TIMEOUT, default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Kill a simulation or a real run lasting longer than this (seconds).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows and the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress messages.")
def validate(**opts) -> None:
    """Calibrate this machine, fit the models, predict HPL, run the real HPL, compare.

    Without HPL parameters, runs the default set (34 configurations, N = 5000–15000, about
    20 minutes on 2 cores at --repeat 3, 29 at --repeat 5; see docs/validate.md). With them (-N, --nb, -P/-Q, …, or
    --hpl-dat), validates every combination, as HPL.dat would run them.

    \b
    hplsim validate --out validation/
    hplsim validate -N 2000 --nb 64 -P 1,2 -Q 2,1 --repeat 2 --min-seconds 0 --quick --out tiny/
    """
    if any_hpl_option(opts):
        base = read_hpl_dat(opts["hpl_dat"]) if opts["hpl_dat"] else None
        configs = params_from_options(base, opts).configs()
    else:
        configs = default_configs()
    settings = CalibrationSettings.quick() if opts["quick"] else CalibrationSettings()
    if opts["trace_n"] is not None:
        if opts["trace_n"] < 1:
            raise HplsimError("--trace-n must be positive")
        settings = replace(settings, trace_n=opts["trace_n"])
    for name in ("model_path", "platform_path"):
        if opts[name] is not None and not Path(opts[name]).is_file():
            raise HplsimError(f"--{name.split('_')[0]} {opts[name]}: no such file")
    outdir = opts["outdir"] or Path(f"validation-{socket.gethostname()}-{time.strftime('%Y%m%d-%H%M%S')}")
    if outdir.is_dir() and any(outdir.iterdir()) and not opts["reuse"]:
        raise HplsimError(f"{outdir} is not empty: choose another --out, or --reuse its artefacts")
    check_dir(outdir, "the validation (--out)")
    say = None if opts["quiet"] else (lambda msg: click.echo(f"hplsim: {msg}", err=True))
    report = validate_local(configs, outdir, opts["repeat"], opts["seed"], settings, opts["model_path"],
                            opts["platform_path"], opts["reuse"], opts["timeout"], say, opts["min_seconds"])
    if opts["as_json"]:
        json.dump(with_warnings(report.to_dict()), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        click.echo(format_table(report.rows))
        click.echo(format_summary(report))
        click.echo(f"wrote {report.files['csv']}, {report.files['plot']}, {report.files['markdown']}")
