"""Command-line values shared by several subcommands, checked by click before any work:
a value out of range is one ``hplsim: error:`` line naming the option, never a silent
wrap (a seed is an unsigned 64-bit integer in the emulation's runtime) or a value ignored."""

from __future__ import annotations

import click

#: the emulation's runtime and the calibration tools read seeds as unsigned 64-bit integers
SEED = click.IntRange(0, 2**64 - 1)
#: scikit-learn's and scipy's generators take 32-bit seeds
SEED32 = click.IntRange(0, 2**32 - 1)
class _Seconds(click.FloatRange):
    """A positive, finite number of seconds (FloatRange lets NaN through: every comparison
    with NaN is false)."""

    def convert(self, value, param, ctx):  # type: ignore[override]
        seconds = super().convert(value, param, ctx)
        if seconds != seconds:
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return seconds


#: seconds a run may take: 0 or less would kill every run at once
TIMEOUT = _Seconds(min=0.0, min_open=True, max=1e9)
#: rank slots per host
RANKS_PER_HOST = click.IntRange(min=1, max=1 << 20)


class RunByDefault(click.Group):
    """A group whose first argument, when it is not one of its commands (nor --help), is
    given to its ``run`` command: ``hplsim sweep SPEC`` is ``hplsim sweep run SPEC`` and
    ``hplsim check HISTORY`` is ``hplsim check run HISTORY``, while ``sweep show`` and
    ``check add`` stay commands of their own."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)

