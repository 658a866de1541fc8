"""``hplsim tune``: recommend the HPL.dat to run, with its predicted Gflops and a 90 %
interval, under the user's constraints (docs/tune.md).

    hplsim tune --preset dahu --memory-per-node 192GB --budget 20m --seed 1 [--json] [-o HPL.dat]
    hplsim tune --platform my.yaml --model model.yaml --memory-per-node 64GiB --budget 2h --nb 128,256
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hplsim.clitypes import RANKS_PER_HOST, SEED
from hplsim.errors import HplsimError, warn, with_warnings
from hplsim.hpl.config import BCAST_NAMES, FACT_NAMES, SWAP_NAMES, HplConfig, HplParams
from hplsim.hpl.hpldat import read_hpl_dat
from hplsim.hpl.options import OPTION_PARAMETERS, hpl_options
from hplsim.presets import PRESETS
from hplsim.hpl.parameters import PARAMETER
from hplsim.tune.constraints import DEFAULT_CHOICES, DEFAULT_MEMORY_FRACTION, parse_budget, parse_memory

_FRACTION = click.FloatRange(0.0, 1.0, min_open=True, max_open=True)
#: the parameters tune chooses (N from the memory rule, the grid, NB and the codes)
_SEARCHED = {"n", "nb", "p", "q", *DEFAULT_CHOICES}


def _restrictions(opts: dict) -> tuple[dict, HplParams | None]:
    """The searched parameters the user fixed (lists restrict the search), from the options
    or an HPL.dat (every list in it)."""
    dat = read_hpl_dat(opts["hpl_dat"]) if opts["hpl_dat"] else None
    fixed: dict = {}
    if dat is not None:
        fixed = {"nbs": dat.nbs, "grids": dat.grids, **{k: dat.values(k) for k in DEFAULT_CHOICES}}
    if opts["nb"] is not None:
        fixed["nbs"] = opts["nb"]
    for key in DEFAULT_CHOICES:
        if opts[key] is not None:
            fixed[key] = opts[key] if PARAMETER[key].listed else (opts[key],)
    if opts["p"] is not None or opts["q"] is not None:
        if opts["p"] is None or opts["q"] is None or len(opts["p"]) != len(opts["q"]):
            raise HplsimError("-P and -Q fix the process grids together: give both, with as many values")
        fixed["grids"] = tuple(zip(opts["p"], opts["q"]))
    return fixed, dat


def _base_changes(opts: dict) -> dict:
    """The parameters tune does not search (NBMIN, NDIV, PMAP, swap threshold …), when
    given; the others come from the HPL.dat, else the preset, else HPL's defaults."""
    changes = {}
    for p in OPTION_PARAMETERS:
        if p.name in _SEARCHED or opts[p.name] is None:
            continue
        if p.listed:
            if len(opts[p.name]) != 1:
                raise HplsimError(f"{p.option}: tune does not search it; give one value")
            changes[p.name] = opts[p.name][0]
        else:
            changes[p.name] = opts[p.name]
    if changes:
        HplConfig(n=1000, **changes)  # HPL's ranges, checked now
    return changes


@click.command("tune")
@hpl_options
@click.option("--preset", type=click.Choice(sorted(PRESETS)), help="A built-in platform + model.")
@click.option("--platform", "platform_path", type=click.Path(path_type=Path), help="Platform: YAML spec or SimGrid XML.")
@click.option("--ranks-per-host", type=RANKS_PER_HOST, help="Rank slots per host of an XML platform.")
@click.option("--model", "model_path", type=click.Path(path_type=Path), help="Model file.")
@click.option("--ranks", type=click.IntRange(min=1), help="Ranks to use (default: every rank slot of the platform).")
@click.option("--memory-per-node", "memory", help="Memory of each node, e.g. 192GB (10^9 B) or 192GiB (2^30 B).")
@click.option("--memory-fraction", type=_FRACTION, default=DEFAULT_MEMORY_FRACTION, show_default=True,
              help="Share of each node's memory HPL may use (the rest: OS, MPI, the binary).")
@click.option("--budget", required=True,
              help="Simulation wall time to spend, a hard cap: 20m, 2h, 1h30m, 600s.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the search and of the simulations.")
@click.option("--db", type=click.Path(path_type=Path),
              help="Results store (SQLite) to resume from and add to (default: a temporary one).")
@click.option("--executor", default="local", show_default=True,
              help="local, dask://HOST:PORT, slurm or submitit-local (as hplsim sweep).")
@click.option("-j", "--jobs", type=click.IntRange(min=1),
              help="Simulations at once (local); 1 runs them in this process.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the recommendation as an HPL.dat here.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Print what the search would simulate and its estimated cost; simulate nothing.")
def tune(**opts) -> None:
    """Search the HPL parameters for the best Gflops on a platform and model, under a
    budget of simulation time; print the top configurations with 90 % intervals and the
    sensitivity around the best, and write the best as an HPL.dat (-o).

    The HPL options restrict the search: a list gives the values searched, one value fixes
    the parameter (-N: one size, instead of the memory rule). See docs/tune.md.
    """
    from hplsim.tune.run import TuneRequest, run_tune

    budget = parse_budget(opts["budget"])
    memory = parse_memory(opts["memory"]) if opts["memory"] is not None else None
    if memory is None and opts["n"] is None:
        raise HplsimError("give --memory-per-node (the problem size N is derived from it) or fix N with -N")
    if opts["n"] is not None and len(opts["n"]) != 1:
        raise HplsimError("-N: give one problem size (tune chooses the rest)")
    if opts["preset"] and (opts["platform_path"] or opts["model_path"]):
        raise HplsimError("--preset is a platform and a model: give either --preset or --platform/--model")
    fixed, dat = _restrictions(opts)
    if opts["plan_only"] and opts["output"] is not None:
        warn("tune --plan simulates nothing: no HPL.dat is written (-o)")
        opts["output"] = None
    request = TuneRequest(
        preset=opts["preset"], platform_path=opts["platform_path"], model_path=opts["model_path"],
        ranks_per_host=opts["ranks_per_host"], ranks=opts["ranks"], memory=memory,
        memory_fraction=opts["memory_fraction"], budget_s=budget, seed=opts["seed"],
        n=opts["n"][0] if opts["n"] else None, fixed=fixed, dat=dat, db=opts["db"], executor=opts["executor"],
        jobs=opts["jobs"], base_changes=_base_changes(opts), output=opts["output"], plan_only=opts["plan_only"],
        say=(lambda m: None) if opts["as_json"] else (lambda m: click.echo(f"hplsim: {m}", err=True)))
    result = run_tune(request)
    if opts["as_json"]:
        json.dump(with_warnings(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        click.echo(format_plan(result) if opts["plan_only"] else format_text(result))


def _codes(e: dict) -> str:
    return (f"PFACT {FACT_NAMES[e['pfact']]}, RFACT {FACT_NAMES[e['rfact']]}, BCAST {BCAST_NAMES[e['bcast']]}, "
            f"DEPTH {e['depth']}, SWAP {SWAP_NAMES[e['swap']]}")


def format_text(r: dict) -> str:
    b = r["best"]
    lines = [f"Recommendation: N={b['n']} NB={b['nb']} P x Q = {b['p']} x {b['q']}, {_codes(b)}",
             f"  predicted {b['gflops']:.5g} Gflops, 90 % interval [{b['interval'][0]:.5g}, {b['interval'][1]:.5g}]",
             f"  ({b['source']})"]
    sim = r["simulated"]
    lines.append(f"  at the largest simulated N={sim['n']}: {sim['gflops']:.5g} Gflops, 90 % interval "
                 f"[{sim['interval'][0]:.5g}, {sim['interval'][1]:.5g}] ({sim['seeds']} seeds)")
    lines.append(f"  N from memory: {r['memory_rule']}")
    head = f"{'#':>3} {'Gflops':>10} {'90 % interval':>23} {'NB':>5} {'P':>4} {'Q':>5} {'PF':>3} {'RF':>3} " \
           f"{'BC':>3} {'DEP':>4} {'SW':>3}"
    lines += ["", f"Top configurations (N={b['n']}):", head, "-" * len(head)]
    for i, e in enumerate(r["top"], 1):
        iv = f"[{e['interval'][0]:.5g}, {e['interval'][1]:.5g}]"
        lines.append(f"{i:>3} {e['gflops']:>10.5g} {iv:>23} {e['nb']:>5} {e['p']:>4} {e['q']:>5} {e['pfact']:>3} "
                     f"{e['rfact']:>3} {e['bcast']:>3} {e['depth']:>4} {e['swap']:>3}")
    if r["sensitivity"]:
        noise = r["noise_sd_pct"]
        at = r["sensitivity"][0]["n"]
        sd_there = f"the seeds' sd there: {'-' if noise is None else f'{noise:.2g} %'}" if at == sim["n"] else \
            f"below N_top={sim['n']}: the budget did not pay for it there"
        lines += ["", f"Sensitivity around the screening's winner (N={at}, one seed each; {sd_there}):",
                  f"{'parameter':>10} {'value':>10} {'Gflops':>10} {'change':>8}"]
        for s in r["sensitivity"]:
            lines.append(f"{s['parameter']:>10} {str(s['value']):>10} {s['gflops']:>10.5g} {100 * s['change']:>+7.1f}%")
        lines.append("  by parameter (largest change): " + ", ".join(
            f"{k} {100 * v:+.1f} %" for k, v in r["sensitivity_by_parameter"].items()))
    lines += ["", "Search: " + r["search"]["summary"]]
    lines += [f"note: {n}" for n in r["notes"]]
    if r.get("hpl_dat"):
        lines.append(f"wrote {r['hpl_dat']}")
    return "\n".join(lines)


def format_plan(r: dict) -> str:
    p = r["plan"]
    a = r["anchor"]
    sizes = p["sizes"]
    lines = [f"Plan on {r['ranks']} ranks ({r['nodes']} nodes of {r['platform']}, model {r['model']}), seed {r['seed']}:",
             f"  {p['screened']} of {p['space_size']} configurations at N={sizes[0]}, then the best "
             f"{p['kept_per_size']} at each of N={', '.join(map(str, sizes[1:]))}; around the winner, one "
             f"parameter at a time; the recommendation with {p['final_seeds']} seeds",
             f"  estimated {p['estimated_s']:.0f} s of the {p['budget_s']:.0f} s budget "
             f"(first size {p['first_rung_estimated_s']:.0f} s, the rest {p['later_estimated_s']:.0f} s)",
             f"  the anchor: NB={a['nb']} P x Q = {a['p']} x {a['q']}, {_codes(a)}; N from memory {a['n']}",
             "", f"Configurations screened at N={sizes[0]}:",
             f"{'#':>3} {'NB':>5} {'P':>4} {'Q':>5} {'PF':>3} {'RF':>3} {'BC':>3} {'DEP':>4} {'SW':>3} {'est. s':>8}"]
    for i, e in enumerate(p["first_rung"], 1):
        lines.append(f"{i:>3} {e['nb']:>5} {e['p']:>4} {e['q']:>5} {e['pfact']:>3} {e['rfact']:>3} {e['bcast']:>3} "
                     f"{e['depth']:>4} {e['swap']:>3} {e['estimated_s']:>8.1f}")
    lines.append("Nothing simulated (--plan).")
    return "\n".join(lines)
