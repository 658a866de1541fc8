"""``hplsim build``: every C program hplsim runs, built once and cached — the emulated and
the real HPL (`hplsim.hpl.build`) and the calibration tools (`hplsim.calibrate.tools`).
A command of its own so that neither of those imports the other."""

from __future__ import annotations

import click

from hplsim.calibrate.tools import build_calibration_tools
from hplsim.hpl.build import EMULATED, REAL, hpl_binary


@click.command("build")
@click.option("--only", type=click.Choice(["emulated", "real", "calibration"]), multiple=True,
              help="Build only these (default: all).")
def build_command(only: tuple[str, ...]) -> None:
    """Build (or find in the cache) the emulated HPL, the real HPL and the calibration tools."""
    wanted = set(only) or {"emulated", "real", "calibration"}
    if "emulated" in wanted:
        click.echo(f"emulated HPL: {hpl_binary(EMULATED)}")
    if "real" in wanted:
        click.echo(f"real HPL:     {hpl_binary(REAL)}")
    if "calibration" in wanted:
        for name, path in build_calibration_tools().items():
            click.echo(f"{name}: {path}")
