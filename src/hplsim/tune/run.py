"""The tune stage: constraints checked, platform and model loaded, the search run, the
result as one plain dictionary (the JSON of ``hplsim tune --json``) and the HPL.dat."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hplsim import __version__
from hplsim.errors import HplsimError, Interrupted
from hplsim.hpl.config import HplConfig, HplParams
from hplsim.hpl.hpldat import format_hpl_dat
from hplsim.outputs import check_file, write_text
from hplsim.processes import noted_interrupts, run_dir
from hplsim.tune.constraints import Space, make_space, memory_n, node_bytes


@dataclass
class TuneRequest:
    budget_s: float
    seed: int = 0
    preset: str | None = None
    platform_path: Path | None = None
    model_path: Path | None = None
    ranks_per_host: int | None = None
    ranks: int | None = None
    memory: int | None = None  # bytes per node
    memory_fraction: float = 0.8
    n: int | None = None  # fixed by the user
    fixed: dict = field(default_factory=dict)  # make_space's restrictions
    dat: HplParams | None = None  # an HPL.dat given as the base
    base_changes: dict = field(default_factory=dict)  # NBMIN, NDIV, PMAP, swap threshold given
    db: Path | None = None
    executor: str = "local"
    jobs: int | None = None
    output: Path | None = None
    plan_only: bool = False  # describe the search, simulate nothing (--plan)
    say: Callable[[str], None] = lambda m: None


def _sources(req: TuneRequest):
    from hplsim.platform.spec import load_platform
    from hplsim.predict import ModelSource
    from hplsim.presets import DEFAULT, get_preset

    preset = get_preset(req.preset) if req.preset else None
    source = preset or DEFAULT
    platform = (load_platform(req.platform_path, req.ranks_per_host) if req.platform_path
                else source.load_platform(req.ranks_per_host))
    model = (ModelSource.from_path(req.model_path) if req.model_path
             else ModelSource.from_path(source.model, f"builtin:{source.name}"))
    # the preset's HPL parameters (N is chosen later; large enough for any preset's NB)
    anchor = source.config(1 << 20) if (preset or not req.platform_path) else None
    return platform, model, anchor


def _anchor(space: Space, preset_config: HplConfig | None) -> HplConfig:
    """The configuration the search always screens and plans its costs with: the preset's
    (or the HPL.dat's) values where the space has them."""
    c = preset_config or space.base
    grid = (c.p, c.q) if (c.p, c.q) in space.grids else space.grids[len(space.grids) // 2]
    nb = c.nb if c.nb in space.nbs else sorted(space.nbs)[len(space.nbs) // 2]
    choices = {k: (getattr(c, k) if getattr(c, k) in v else v[len(v) // 2]) for k, v in space.choices.items()}
    return HplConfig(**{**space.base.as_dict(), "n": max(nb, 1000), "p": grid[0], "q": grid[1], "nb": nb, **choices})


def run_tune(req: TuneRequest) -> dict:
    from hplsim.predict import check_inputs
    from hplsim.sweep.executors import make_executor
    from hplsim.sweep.variants import Variant
    from hplsim.tune.runner import Runner, open_store
    from hplsim.tune.search import checked_plan, describe_plan, search

    if req.output is not None:
        check_file(req.output, "the HPL.dat (-o)")
    if req.db is not None:
        check_file(req.db, "the results store (--db)")
    platform, model, preset_config = _sources(req)
    slots = len(platform.slots)
    ranks = req.ranks or slots
    if ranks > slots:
        raise HplsimError(f"--ranks {ranks}: the platform {platform.label} has only {slots} rank slots")
    hosts = platform.slots[:ranks]
    base = req.dat.configs()[0] if req.dat is not None else (preset_config or HplConfig(n=1 << 20))
    base = HplConfig(**{**base.as_dict(), **req.base_changes})
    space = make_space(ranks, base, req.fixed.get("nbs"), req.fixed.get("grids"),
                       **{k: req.fixed.get(k) for k in ("pfact", "rfact", "bcast", "depth", "swap")})
    anchor = _anchor(space, req.dat.configs()[0] if req.dat is not None else preset_config)
    nodes = len(set(hosts))
    limit = int(req.memory * req.memory_fraction) if req.memory is not None else None

    def n_for(point: dict) -> int:
        if req.n is not None:
            return req.n
        p, q = point["grid"]
        return memory_n(limit, point["nb"], p, q, point["depth"], hosts, space.base.pmap)

    if limit is not None:
        smallest = min(space.nbs)
        for p, q in space.grids:  # a block per rank must fit, else nothing can run
            if node_bytes(smallest, smallest, p, q, 0, hosts, space.base.pmap) > limit:
                per_node = max(hosts.count(h) for h in set(hosts))
                raise HplsimError(
                    f"--memory-per-node {req.memory / 1e9:.4g} GB x {req.memory_fraction:g} is smaller than one "
                    f"{smallest}x{smallest} block per rank ({per_node} ranks per node): nothing fits")
    if req.n is not None:
        if req.n < max(space.nbs) and len(space.nbs) == 1:
            raise HplsimError(f"-N {req.n} is smaller than NB {space.nbs[0]}")
        if limit is not None:
            worst = max(node_bytes(req.n, nb, p, q, d, hosts, space.base.pmap)
                        for nb in space.nbs for p, q in space.grids for d in space.choices["depth"])
            if worst > limit:
                raise HplsimError(f"-N {req.n} needs {worst / 1e9:.4g} GB on the most loaded node, more than "
                                  f"{req.memory_fraction:g} x {req.memory / 1e9:.4g} GB: the node would swap")
    anchor_point = {"grid": (anchor.p, anchor.q), "nb": anchor.nb, "depth": anchor.depth}
    n_plan = n_for(anchor_point)
    if n_plan < 1:
        raise HplsimError("no problem size fits the memory with the anchor configuration")
    check_inputs(HplConfig(**{**anchor.as_dict(), "n": anchor.nb}), platform, model.model)
    plan = checked_plan(space, n_plan, req.budget_s, anchor)
    about = {"platform": platform.label, "platform_digest": platform.digest(), "model": model.label,
             "model_digest": model.digest, "ranks": ranks, "nodes": nodes, "seed": req.seed,
             "hplsim_version": __version__}
    if req.plan_only:
        return {"plan": describe_plan(space, plan, anchor, req.seed, req.budget_s),
                "anchor": {**anchor.as_dict(), "n": n_plan}, **about}

    variant = Variant(platform, model, "base", "base", platform.digest())
    executor = None
    with run_dir("tune") as scratch:
        if not (req.executor == "local" and req.jobs == 1):
            workdir = Path(f"{req.db}.files") if req.db else scratch
            executor = make_executor(req.executor, req.jobs, workdir)
            executor.check()
        with open_store(req.db, scratch) as store:
            runner = Runner(variant, store, executor, req.budget_s)
            runner.sweep_id = store.begin_sweep(f"hplsim tune (seed {req.seed})", "", getattr(executor, "name", "serial"))
            status = "interrupted"
            try:
                req.say(f"{ranks} ranks on {nodes} node(s) of {platform.label}, model {model.label}; "
                        f"{space.size} configurations in the search space; budget {req.budget_s:.0f} s")
                with noted_interrupts() as runner.signals:
                    outcome = search(space, runner, plan, n_for, req.seed, anchor, req.say)
                status = "done"
            except (KeyboardInterrupt, Interrupted):
                raise
            except BaseException:
                status = "error"
                raise
            finally:
                from hplsim.sweep.store import SweepCounts

                store.end_sweep(runner.sweep_id, SweepCounts(runner.ran + runner.failed + runner.reused,
                                                            runner.reused, 0, runner.ran, runner.failed), status)
    ratio = runner.law_ratio
    if ratio is not None and ratio < 0.5 and runner.spent_s < 0.6 * req.budget_s:
        outcome.notes.append(
            f"the simulations took {ratio:.2f} times the cost law's estimate on this machine, and the search "
            f"spent {runner.spent_s:.0f} of {req.budget_s:.0f} s: its plan comes from the law, not from the "
            "measured times, so that the same inputs give the same recommendation on any machine; a larger "
            "--budget buys larger sizes here")
    # every HPL parameter in each entry: the searched ones and the fixed rest
    fixed = {k: v for k, v in space.base.as_dict().items()}
    outcome.top = [{**fixed, **e} for e in outcome.top]
    outcome.best = outcome.top[0]
    best = outcome.best
    memory_rule = (f"fixed by -N {req.n}" if req.n is not None else
                   f"{req.memory_fraction:g} x {req.memory / 1e9:.4g} GB per node; the largest multiple of NB "
                   f"whose most loaded node holds its share of the N x (N+1) matrix, DEPTH+1 panels and the "
                   f"row-swap space within it: N = {best['n']} "
                   f"({node_bytes(best['n'], best['nb'], best['p'], best['q'], best['depth'], hosts, space.base.pmap) / 1e9:.4g} GB "
                   "on the most loaded node)")
    by_param: dict[str, float] = {}
    for s in outcome.sensitivity:
        if abs(s["change"]) > abs(by_param.get(s["parameter"], 0.0)):
            by_param[s["parameter"]] = s["change"]
    noise = None
    if outcome.interval is not None and outcome.interval.seed_sd is not None and outcome.simulated["gflops"] > 0:
        noise = 100 * outcome.interval.seed_sd / outcome.simulated["gflops"]
    result = {
        "best": best,
        "top": outcome.top,
        "sensitivity": outcome.sensitivity,
        "sensitivity_by_parameter": dict(sorted(by_param.items(), key=lambda kv: -abs(kv[1]))),
        "sensitivity_not_simulated": outcome.not_simulated,
        "noise_sd_pct": noise,
        "simulated": outcome.simulated,
        "law": outcome.law.to_dict() if outcome.law else None,
        "memory_rule": memory_rule,
        "search": {
            "method": "successive halving over N (1/3 kept per size), then one parameter at a time around the winner",
            "sizes": list(outcome.plan.sizes), "screened": outcome.plan.screened,
            "simulations": runner.ran, "failed": runner.failed, "reused": runner.reused,
            "estimated_s": outcome.plan.estimate_s, "spent_s": runner.spent_s, "budget_s": req.budget_s,
            "space_size": space.size, "measured_over_estimated": runner.law_ratio,
            "summary": (f"{runner.ran} simulations ({runner.reused} reused from the store, {runner.failed} failed) "
                        f"in {runner.spent_s:.0f} s of the {req.budget_s:.0f} s budget; {outcome.plan.screened} of "
                        f"{space.size} configurations screened at N={outcome.plan.sizes[0]}, sizes "
                        f"{', '.join(map(str, outcome.plan.sizes))}"
                        + ("" if runner.law_ratio is None else
                           f"; the runs took {runner.law_ratio:.2f} times the cost law's estimate")),
        },
        **about, "notes": outcome.notes,
    }
    if req.output is not None:
        config = HplConfig(**{k: best[k] for k in space.base.as_dict()})
        write_text(req.output, format_hpl_dat(HplParams.from_config(config)), "the HPL.dat (-o)")
        result["hpl_dat"] = str(req.output)
    return result
