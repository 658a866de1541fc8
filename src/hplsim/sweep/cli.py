"""``hplsim sweep``: run a spec into a results store, or read a store.

    hplsim sweep SPEC.yaml --db results.sqlite [--executor local|dask://HOST:PORT|slurm] [--jobs N]
    hplsim sweep show results.sqlite [--json] [--csv FILE] [--plot DIR]

``sweep SPEC`` is short for ``sweep run SPEC``: the group routes a first argument that is
not one of its commands to ``run``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hplsim.clitypes import RANKS_PER_HOST, TIMEOUT, RunByDefault
from hplsim.errors import HplsimError
from hplsim.hpl.options import INTS


@click.group("sweep", cls=RunByDefault, invoke_without_command=True)
@click.pass_context
def sweep(ctx: click.Context) -> None:
    """Run many predictions (tuning, what-if) into a results store, and read it.

    \b
      hplsim sweep SPEC.yaml --db results.sqlite [--executor ...] [--jobs N]
      hplsim sweep HPL.dat --db results.sqlite
      hplsim sweep show results.sqlite [--json] [--csv FILE] [--plot DIR]

    Re-running a sweep runs only what the store does not hold yet. See docs/sweep.md.
    """
    if ctx.invoked_subcommand is None:  # bare `hplsim sweep`: the help, not an error
        click.echo(ctx.get_help())


def _slurm_parameters(opts: dict) -> dict:
    params: dict = {}
    if opts["slurm_partition"]:
        params["slurm_partition"] = opts["slurm_partition"]
    if opts["slurm_time"]:
        params["timeout_min"] = opts["slurm_time"]
    if opts["slurm_mem"]:
        params["mem_gb"] = opts["slurm_mem"]
    extra = {}
    for item in opts["slurm_option"]:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise HplsimError(f"--slurm-option {item!r}: expected KEY=VALUE (an sbatch option without --)")
        extra[key.strip()] = value.strip()
    if extra:
        params["slurm_additional_parameters"] = extra
    return params


@sweep.command("run")
@click.argument("spec_path", metavar="SPEC", type=click.Path(path_type=Path))
@click.option("--db", type=click.Path(path_type=Path), default=Path("results.sqlite"), show_default=True,
              help="Results store (SQLite); created if missing, resumed if present.")
@click.option("--executor", default="local", show_default=True,
              help="local (process pool), dask://HOST:PORT (a running Dask scheduler), slurm (job arrays "
                   "via submitit), or submitit-local.")
@click.option("-j", "--jobs", type=int,
              help="local: simulations at once (default: one per core, fewer if memory is short); "
                   "slurm: array jobs running at once; submitit-local: local jobs.")
@click.option("--retry-failed", is_flag=True, help="Also run again the runs stored as failed.")
@click.option("--platform", "platform_path", type=click.Path(path_type=Path),
              help="Base platform (YAML spec or SimGrid XML), replacing the spec's.")
@click.option("--ranks-per-host", type=RANKS_PER_HOST, help="Rank slots per host of an XML platform.")
@click.option("--model", "model_path", type=click.Path(path_type=Path), help="Base model file, replacing the spec's.")
@click.option("--seeds", type=INTS, help="Seeds (replications), e.g. 1,2,3, replacing the spec's.")
@click.option("--timeout", type=TIMEOUT, help="Kill one simulation after this many seconds (default: 24 h).")
@click.option("--dry-run", is_flag=True, help="Plan only: count the runs, report invalid combinations, run nothing.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Progress bar with ETA on stderr.")
@click.option("--chunk", type=int, help="slurm / submitit-local: runs per array job.")
@click.option("--slurm-partition", help="slurm: partition.")
@click.option("--slurm-time", type=int, help="slurm: time limit of an array job, minutes.")
@click.option("--slurm-mem", type=float, help="slurm: memory per array job, GB.")
@click.option("--slurm-option", multiple=True, metavar="KEY=VALUE",
              help="slurm: any other sbatch option, e.g. account=myproject (repeatable).")
def run_command(**opts) -> None:
    """Run a sweep spec (YAML, or an HPL.dat with lists) into a results store."""
    from hplsim.sweep.executors import make_executor
    from hplsim.sweep.run import run_sweep, work_dir
    from hplsim.sweep.spec import load_spec

    spec = load_spec(opts["spec_path"]).with_overrides(
        opts["platform_path"], opts["ranks_per_host"], opts["model_path"], opts["seeds"], opts["timeout"])
    if opts["seeds"] is not None and any(not 0 <= s < 2**64 for s in opts["seeds"]):
        raise HplsimError("--seeds must be in 0 .. 2**64-1 (the emulation's seeds are unsigned 64-bit integers)")
    db = opts["db"]
    if not opts["dry_run"]:
        from hplsim.outputs import check_file

        check_file(db, "the results store (--db)")
    if opts["dry_run"]:
        _dry_run(spec, db)
        return
    executor = make_executor(opts["executor"], opts["jobs"], work_dir(db), opts["chunk"], _slurm_parameters(opts))
    result = run_sweep(spec, db, executor, opts["retry_failed"], opts["progress"])
    if result.failed:
        sys.exit(1)


def _dry_run(spec, db: Path) -> None:
    from hplsim.sweep.plan import make_plan
    from hplsim.sweep.run import report_invalid
    from hplsim.sweep.store import ResultStore

    from hplsim.processes import run_dir

    with run_dir("plan") as tmp:  # derived files: not kept
        plan = make_plan(spec, tmp, spec.timeout)
    report_invalid(plan.invalid, lambda m: click.echo(m, err=True))
    stored: dict[str, str] = {}
    if db.exists():
        with ResultStore(db, create=False) as store:
            stored = store.statuses(t.hash for t in plan.tasks)
    ok = sum(1 for s in stored.values() if s == "ok")
    click.echo(f"{len(plan.tasks)} runs planned, {len(plan.invalid)} invalid combinations skipped, "
               f"{ok} already stored, {len(stored) - ok} failed before, "
               f"{len(plan.tasks) - len(stored)} to run")
    for v in plan.variants:
        click.echo(f"  variant {v.platform_variation} / {v.model_variation}: {len(v.platform.slots)} rank slots, "
                   f"platform {v.platform_digest[:12]}, model {v.model.digest[:12]}" + (f"; {v.note}" if v.note else ""))
    from hplsim.hpl import cost

    todo = [t for t in plan.tasks if stored.get(t.hash) != "ok"]
    for t in todo:  # the cost law's estimate of each run left to do (docs/predict.md)
        click.echo(f"  run {t.config.label()} N={t.config.n} NB={t.config.nb} {t.config.p}x{t.config.q} "
                   f"seed {t.seed} variant {t.variant}: {cost.estimate_text(t.config)}")
    if todo:
        click.echo(f"estimated: {cost.duration_text(sum(cost.estimate_s(t.config) for t in todo))} of simulation "
                   f"in all, up to {cost.memory_text(max(cost.estimate_memory_bytes(t.config) for t in todo))} per run")


@sweep.command("show")
@click.argument("db", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print every stored run as a JSON list.")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), help="Write every stored run to this CSV file.")
@click.option("--plot", "plot_dir", type=click.Path(path_type=Path),
              help="Write PNG plots here (Gflops vs N, heat-maps, what-if bars).")
@click.option("--top", type=int, default=10, show_default=True, help="Best configurations to list.")
@click.option("--failed", is_flag=True, help="List the failed runs with their errors.")
def show_command(db: Path, as_json: bool, csv_path: Path | None, plot_dir: Path | None, top: int,
                 failed: bool) -> None:
    """The best configurations (with their spread across seeds) and the what-if
    comparison of a results store; or every run as JSON / CSV."""
    from hplsim.sweep.show import failures, frame, summary, write_csv
    from hplsim.sweep.store import ResultStore

    from hplsim.outputs import check_dir, check_file

    if csv_path:
        check_file(csv_path, "the CSV (--csv)")
    if plot_dir:
        check_dir(plot_dir, "the plots (--plot)")
    with ResultStore(db, create=False) as store:
        runs = store.runs()
    if csv_path:
        write_csv(runs, csv_path)
        click.echo(f"wrote {len(runs)} runs to {csv_path}", err=True)
    df = frame(runs)
    if plot_dir:
        from hplsim.sweep.plots import write_plots

        written = write_plots(df, plot_dir)
        click.echo(f"wrote {len(written)} plots to {plot_dir}" if written else "no successful run to plot", err=True)
    if as_json:
        json.dump(runs, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif failed:
        click.echo(failures(df))
    else:
        click.echo(summary(df, str(db), top))
