"""`hplsim check HISTORY …` (test the latest calibrations) and `hplsim check add HISTORY
ARCHIVE…` (append calibration archives to a history file)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hplsim.check.history import read_history, summarise_archive, append_runs
from hplsim.check.verdicts import (
    IMPROVEMENT, NOT_ENOUGH, NOT_TESTABLE, OK, REGRESSION, evaluate, parse_time, read_changelog, read_outliers, select,
)
from hplsim.errors import HplsimError

DEFAULT_METRICS = "intercept,mnk,avg_gflops"


class _CheckGroup(click.Group):
    """`hplsim check FILE …` runs the test; `hplsim check add …` appends."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("check", cls=_CheckGroup)
def check() -> None:
    """Non-regression tests on a calibration history (Chew's prediction region).

    \b
    hplsim check HISTORY [--metrics …] [--window 5] [--gamma 0.9999] [--json] [--plot DIR]
    hplsim check add HISTORY ARCHIVE…
    HISTORY: our history file (SQLite) or the published Dahu history CSV.
    """


def _format_table(verdicts) -> str:
    head = f"{'series':<24}{'verdict':<20}{'runs':>5}{'ref':>5}  {'r=1: t / F':>18}  {'r=w: t / F':>18}  note"
    lines = [head, "-" * len(head)]
    for v in verdicts:
        cells = []
        for r in (1, max((t.r for t in v.tests), default=1)):
            t = next((t for t in v.tests if t.r == r), None)
            cells.append(f"{t.statistic:8.2f} / {t.threshold:7.2f}" if t and t.statistic is not None else "")
        n = v.tests[0].n if v.tests else ""
        lines.append(f"{v.host + '/cpu' + str(v.cpu):<24}{v.verdict:<20}{v.runs:>5}{n:>5}  {cells[0]:>18}  "
                     f"{cells[1]:>18}  {v.message}")
    return "\n".join(lines)


@check.command("run", hidden=True)
@click.argument("history", type=click.Path(path_type=Path))
@click.option("--since", help="Only runs from this date on (YYYY-MM-DD or Unix time).")
@click.option("--metrics", default=DEFAULT_METRICS, show_default=True,
              help="Comma-separated metrics of the multivariate test.")
@click.option("--window", type=int, default=5, show_default=True, help="r: the last r runs are tested (and r=1).")
@click.option("--gamma", type=float, default=0.9999, show_default=True, help="Confidence of the prediction region.")
@click.option("--changelog", type=click.Path(path_type=Path),
              help="CSV date,host,reason: known changes; the reference restarts after them (host 'all': every series).")
@click.option("--outliers", type=click.Path(path_type=Path), help="CSV host,cpu,run_id[,reason]: runs to leave out.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of per-series verdicts.")
@click.option("--plot", type=click.Path(path_type=Path), help="Write control charts and an overview heat-map here.")
def run(history: Path, since, metrics: str, window: int, gamma: float, changelog, outliers, as_json: bool,
        plot: Path | None) -> None:
    data = read_history(history)
    names = [m.strip() for m in metrics.split(",") if m.strip()]
    if not names:
        raise HplsimError("--metrics is empty")
    missing = [m for m in names if m not in data.columns]
    if missing:
        known = sorted(c for c in data.columns if c not in ("host", "cpu", "run_id", "start_time", "source"))
        raise HplsimError(f"metric(s) {', '.join(missing)} not in the history (has: {', '.join(known)})")
    log = read_changelog(changelog) if changelog else []
    skip = read_outliers(outliers) if outliers else set()
    start = parse_time(since, "--since") if since else None
    verdicts = evaluate(data, names, window, gamma, log, start, skip)
    if plot:
        _plots(plot, data, names, gamma, log, start, skip)
    if as_json:
        json.dump([v.to_dict() for v in verdicts], sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        click.echo(_format_table(verdicts))
        counts = {k: sum(v.verdict == k for v in verdicts) for k in (OK, REGRESSION, IMPROVEMENT, NOT_ENOUGH,
                                                                       NOT_TESTABLE)}
        click.echo(", ".join(f"{c} {k}" for k, c in counts.items() if c) + f" (γ = {gamma}, window {window})")
    if any(v.verdict == REGRESSION for v in verdicts):
        sys.exit(1)


def _plots(folder: Path, data, metrics, gamma, log, start, skip) -> None:
    from hplsim.check.plots import control_chart, overview

    folder.mkdir(parents=True, exist_ok=True)
    rolls = []
    for (host, cpu), group in select(data, start, skip).groupby(["host", "cpu"], sort=True):
        if group.dropna(subset=metrics).empty:
            continue
        rolls.append(control_chart(group, metrics, gamma, log, folder / f"{host}-cpu{cpu}.png"))
    overview(rolls, folder / "overview.png")


@check.command("add")
@click.argument("history", type=click.Path(path_type=Path))
@click.argument("archives", nargs=-1, required=True, type=click.Path(path_type=Path))
def add(history: Path, archives: tuple[Path, ...]) -> None:
    """Summarise dgemm calibration archives (per host and CPU: M-1/N-2 fit, mean Gflops,
    mean frequency and temperature when monitored) and append them to HISTORY at once."""
    import pandas as pd

    runs = pd.concat([summarise_archive(a) for a in archives], ignore_index=True)
    added, present = append_runs(history, runs)
    click.echo(f"{history}: {added} run(s) added" + (f", {present} already present" if present else ""))
