"""The single entry point. Each subcommand lives in the module of its stage and is
imported only when used, so ``hplsim --help`` stays fast."""

from __future__ import annotations

import importlib
import sqlite3
import sys

import click

from hplsim import __version__
from hplsim.errors import HplsimError, Interrupted, reset_warnings

# name -> (module, attribute, one-line help); the order is the pipeline's order.
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "calibrate": ("hplsim.calibrate.cli", "calibrate", "Measure dgemm/dtrsm or MPI on this machine."),
    "archive": ("hplsim.calibrate.cli", "archive", "Inspect a calibration or run archive."),
    "fit": ("hplsim.models.cli", "fit", "Fit kernel or network models from measurements."),
    "platform": ("hplsim.platform.cli", "platform", "Turn a platform spec into SimGrid XML + hostfile."),
    "predict": ("hplsim.predict", "predict_command", "Predict HPL's performance by emulating it on SimGrid/SMPI."),
    "sweep": ("hplsim.sweep.cli", "sweep", "Run many predictions (tuning, what-if) into a results store."),
    "tune": ("hplsim.tune.cli", "tune", "Recommend the HPL.dat to run: a search under a budget, with intervals."),
    "run-real": ("hplsim.real.cli", "run_real", "Run the real HPL on this machine or an allocation."),
    "validate": ("hplsim.validate.cli", "validate", "Calibrate, fit, predict and run for real; compare."),
    "check": ("hplsim.check.cli", "check", "Non-regression tests on calibration history."),
    "report": ("hplsim.report.build", "report_command", "One HTML page of traces, sweeps, models, checks, validations."),
    "build": ("hplsim.builds", "build_command", "Build the emulated and real HPL and the C tools."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in SUBCOMMANDS:
            return None
        module, attr, _ = SUBCOMMANDS[name]
        # every subcommand's dependencies are required ones: a failing import is a bug and
        # is reported as one (run's last resort), never as an absent feature
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, _, help_) in SUBCOMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="hplsim")
def cli() -> None:
    """hplsim: predict High-Performance Linpack on a simulated cluster."""
    reset_warnings()


def main(argv: list[str] | None = None) -> None:
    """The `hplsim` program: signals handled, stale temporary folders cleaned, then `run`."""
    from hplsim.processes import clean_stale_dirs, handle_signals

    handle_signals()
    clean_stale_dirs()
    run(argv)


def run(argv: list[str] | None = None) -> None:
    """One command: every error becomes one ``hplsim: error:`` line and an exit code."""
    try:
        cli.main(args=argv, prog_name="hplsim", standalone_mode=False)
    except HplsimError as exc:
        click.echo(f"hplsim: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:  # click's form of a Ctrl-C (KeyboardInterrupt) inside a command
        click.echo("hplsim: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"hplsim: error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("hplsim: interrupted", err=True)
        sys.exit(130)
    except Interrupted as exc:
        click.echo(f"hplsim: interrupted by {exc}", err=True)
        sys.exit(128 + exc.signum)
    except BrokenPipeError:
        sys.exit(1)
    except sqlite3.Error as exc:  # a SQLite file no reader's check could foresee (disk full, damaged)
        click.echo(f"hplsim: error: SQLite: {' '.join(str(exc).split())}", err=True)
        sys.exit(2)
    except OSError as exc:  # a file or a folder the checks before the work could not foresee
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"hplsim: error: {exc.strerror or exc}{where}", err=True)
        sys.exit(1)
    except Exception as exc:  # a bug: still one line (HPLSIM_DEBUG=1 shows the traceback)
        import os

        if os.environ.get("HPLSIM_DEBUG"):
            raise
        message = " ".join(str(exc).split())
        click.echo(f"hplsim: error: internal error ({type(exc).__name__}: {message}); "
                   "rerun with HPLSIM_DEBUG=1 and report the traceback", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
