"""`hplsim check HISTORY …` (test the latest calibrations of every series) and `hplsim check
add HISTORY SOURCE…` (append calibration archives or other histories to a history file)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hplsim.check.metrics import DEFAULT_METRICS
from hplsim.calibrate.hostnames import DAHU_HOST_FORMAT
from hplsim.clitypes import RunByDefault
from hplsim.errors import HplsimError, with_warnings
from hplsim.outputs import check_dir


@click.group("check", cls=RunByDefault, invoke_without_command=True)
@click.pass_context
def check(ctx: click.Context) -> None:
    """Non-regression tests on a calibration history (Chew's prediction region).

    \b
    hplsim check HISTORY [--metrics intercept,mnk,avg_gflops] [--window 5] [--gamma 0.9999]
                 [--since DATE] [--until DATE] [--changelog CSV] [--outliers CSV]
                 [--json] [--replay] [--plot DIR]
    hplsim check add HISTORY ARCHIVE_OR_HISTORY…

    HISTORY: our history file (SQLite) or a CSV (the published Dahu history). Exit code 1
    when a series regresses, 0 otherwise. See docs/check.md (hplsim check run --help for
    every option).
    """
    if ctx.invoked_subcommand is None:  # bare `hplsim check`: the help, not an error
        click.echo(ctx.get_help())


def _cell(t) -> str:
    if t is None:
        return ""
    if t.statistic is None:
        return f"{t.n:>3}  {'-':>17}"
    return f"{t.n:>3} {t.statistic:8.2f} / {t.threshold:6.2f}"


def format_table(verdicts, window: int) -> str:
    rs = sorted({1, window})
    w = max([16, *(len(v.name) + 2 for v in verdicts)])
    head = f"{'series':<{w}}{'verdict':<19}{'runs':>5}  {'last run':<17}" + "".join(
        f"  {f'r={r}: n   t / F(γ)':>23}" for r in rs) + "  note"
    lines = [head, "-" * len(head)]
    for v in verdicts:
        cells = "".join(f"  {_cell(next((t for t in v.tests if t.r == r), None)):>23}" for r in rs)
        lines.append(f"{v.name:<{w}}{v.verdict:<19}{v.runs:>5}  {(v.last_date or ''):<17}{cells}  {v.message}")
    return "\n".join(lines)


def _summary(verdicts, gamma: float, window: int) -> str:
    from hplsim.check.verdicts import PRECEDENCE

    counts = [(k, sum(v.verdict == k for v in verdicts)) for k in reversed(PRECEDENCE)]
    rs = f"r = 1 and {window}" if window > 1 else "r = 1"
    return f"{len(verdicts)} series: " + ", ".join(f"{c} {k}" for k, c in counts if c) + f" (γ = {gamma}, {rs})"


HOST_FORMAT = click.option(
    "--host-format", default=DAHU_HOST_FORMAT, show_default=True,
    help="Host of a node number, for a CSV history in the Dahu layout (node, jobid): the rule of `hplsim fit` "
         "and of the built-in platform (Dahu node i+1 is dahu-i.grid5000.fr).")


@check.command("run", hidden=True)
@click.argument("history", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--metrics", default=",".join(DEFAULT_METRICS), show_default=True,
              help="Comma-separated metrics of the multivariate test (the verdict).")
@click.option("--window", type=int, default=5, show_default=True,
              help="r: the mean of the last r runs is tested, and the last run alone.")
@click.option("--gamma", type=float, default=0.9999, show_default=True, help="Confidence of the prediction region.")
@click.option("--since", help="Leave out runs before this date (YYYY-MM-DD[THH:MM], UTC, or Unix time).")
@click.option("--until", help="Leave out runs after this date: the check as it would have run then.")
@click.option("--changelog", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="CSV date,host,reason: known changes; a series' reference restarts at them (host 'all').")
@click.option("--outliers", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="CSV host,cpu,run_id[,reason]: runs to leave out (empty cpu: every CPU).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of per-series verdicts.")
@click.option("--replay", is_flag=True,
              help="Also test every past run against the runs before it and list the alarms (when).")
@click.option("--plot", type=click.Path(path_type=Path, file_okay=False),
              help="Write one control chart per series and overview.png to this folder.")
@HOST_FORMAT
def run(history: Path, metrics: str, window: int, gamma: float, since: str | None, until: str | None,
        changelog: Path | None, outliers: Path | None, as_json: bool, replay: bool, plot: Path | None,
        host_format: str) -> None:
    """Test the latest runs of every series of HISTORY."""
    from hplsim.calibrate.history import read_history
    from hplsim.check.logs import parse_time, read_changelog, read_outliers
    from hplsim.check.verdicts import REGRESSION, evaluate

    names = [m.strip() for m in metrics.split(",") if m.strip()]
    if not names:
        raise HplsimError("--metrics is empty")
    start = parse_time(since, "--since") if since else None
    end = parse_time(until, "--until") if until else None
    if start is not None and end is not None and end < start:
        raise HplsimError("--until is before --since")
    log = read_changelog(changelog) if changelog else []
    skip = read_outliers(outliers) if outliers else []
    if plot:
        check_dir(plot, "the charts (--plot)")
    data = read_history(history, host_format)
    if data.empty:
        raise HplsimError(f"{history}: no calibration run in the history")
    replays: dict | None = {} if plot else None
    verdicts = evaluate(data, names, window, gamma, log, start, end, skip, replay=replay, replays=replays)
    if plot:
        _plots(plot, replays, gamma, log)
    if as_json:
        json.dump(with_warnings([v.to_dict() for v in verdicts]), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        click.echo(format_table(verdicts, window))
        click.echo(_summary(verdicts, gamma, window))
        if replay:
            past = [(v.name, a) for v in verdicts for a in v.alarms or []]
            click.echo(f"\nReplay (each run against the runs before it): {len(past)} alarm(s)")
            for name, a in sorted(past, key=lambda x: (x[1]["time"], x[0])):
                click.echo(f"  {a['date']}  {name:<16}{a['verdict']:<12}{a['run_id']:<12}{a['message']}")
        if plot:
            click.echo(f"charts: {plot}/")
    if any(v.verdict == REGRESSION for v in verdicts):
        sys.exit(1)


def _plots(folder: Path, replays: dict, gamma: float, log) -> None:
    from hplsim.check.plots import control_chart, overview

    check_dir(folder, "the charts (--plot)")
    for s, frame in replays.values():
        control_chart(s, frame, gamma, log, folder / f"{s.host}-cpu{s.cpu}.png")
    overview({name: frame for name, (_, frame) in replays.items()}, folder / "overview.png")


@check.command("add")
@click.argument("history", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, dir_okay=False))
@HOST_FORMAT
def add(history: Path, sources: tuple[Path, ...], host_format: str) -> None:
    """Append runs to HISTORY (an SQLite file, created if needed), all at once or not at all.

    Each SOURCE is a dgemm calibration archive (.zip: one run per host and CPU, summarised
    by the M-1/N-2 fit, mean Gflops, mean frequency and temperature when monitored) or
    another history (CSV or SQLite). Runs already present are skipped.
    """
    import zipfile

    import pandas as pd

    from hplsim.calibrate.history import read_history
    from hplsim.calibrate.run_summary import summarise_archive
    from hplsim.check.history import append_runs

    frames = [summarise_archive(s) if zipfile.is_zipfile(s) else read_history(s, host_format) for s in sources]
    runs = pd.concat([f for f in frames if not f.empty], ignore_index=True) if any(
        not f.empty for f in frames) else None
    if runs is None:
        raise HplsimError("no run in " + ", ".join(map(str, sources)))
    added, present = append_runs(history, runs)
    click.echo(f"{history}: {added} run(s) added" + (f", {present} already present" if present else ""))
