"""The search: successive halving over problem sizes, a one-at-a-time refinement that is
also the sensitivity table, and a final stage that gives the recommendation its interval.

1. Screening (successive halving, Jamieson & Talwalkar 2016; Hyperband's inner loop): m0
   configurations, every process grid equally represented and the rest drawn at random
   (seeded), plus the preset's own configuration, are simulated at N_top/8; the best third
   goes on to N_top/4, its best third to N_top/2, its best third to N_top (from the smallest
   size searched instead of N_top/8 when that is below it: `floor_n`). Cheap small runs
   eliminate the clearly bad; the expensive sizes are spent on the few that remain.
2. Refinement and sensitivity: around the winner at N_top, every other value of each
   parameter one at a time (NB and the grid: the neighbouring values). The best of these
   becomes the recommendation; their changes are the sensitivity table.
3. Final: the recommendation at N_top with more seeds (the noise part of its interval) and
   at the smaller sizes (the Gflops(N) law, law.py), extrapolated to the memory-derived N.

The plan (sizes, how many configurations) is made from estimated costs only (cost.py), so
the same inputs and seed give the same search and the same recommendation; the measured
times only enforce the budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from statistics import fmean, stdev

import numpy as np

from hplsim.errors import HplsimError, warn
from hplsim.hpl.config import HplConfig
from hplsim.tune.constraints import SEARCHED, Space
from hplsim.hpl.cost import estimate_s
from hplsim.models.intervals import Interval, combine, model_rsd, t_half, z_half
from hplsim.tune.law import Law, compute_coefficients, fit_law
from hplsim.tune.runner import BudgetSpent, Runner, run_charge

ETA = 3  # successive halving keeps the best 1/ETA at each size
#: ordered parameters along which the refinement keeps stepping while Gflops improves
LINE = ("grid", "nb")
RUNGS = 4  # N_top/8, /4, /2, N_top
FINAL_SEEDS = 3  # seeds of the recommendation at N_top
MIN_SCREENED_PER_GRID = 2
#: the first rung draws this many times the planned points, to replace those it passes over
OVERDRAW = 2
#: a neighbour of the winner dearer than this many times the winner's run is not simulated
DEAR_NEIGHBOUR = 16
#: the share of the budget the refinement and final stages may take (the screening gets the rest)
LATE_SHARE = 0.5
N_ROUND = 8


@dataclass
class Plan:
    sizes: tuple[int, ...]  # the rungs' N, smallest first; the last is N_top
    screened: int  # configurations at the first rung
    estimate_s: float


@dataclass
class TuneOutcome:
    best: dict
    top: list[dict]
    sensitivity: list[dict]
    plan: Plan
    law: Law | None
    notes: list[str] = field(default_factory=list)
    interval: Interval | None = None
    n_final: int = 0
    simulated: dict = field(default_factory=dict)
    not_simulated: list[dict] = field(default_factory=list)  # neighbours too dear to simulate


def _round(n: float) -> int:
    return max(N_ROUND, int(n) // N_ROUND * N_ROUND)


def rung_sizes(n_top: int, floor: int) -> tuple[int, ...]:
    """RUNGS sizes in equal ratios from N_top/8 to N_top (/8, /4, /2, N_top), or from `floor`
    when N_top/8 is below it; with a small budget (N_top at the floor) they coincide, and the
    halving goes on on the same runs, reused from the store.

    >>> rung_sizes(66_384, 4_096), rung_sizes(13_912, 4_096), rung_sizes(4_096, 4_096)
    ((8296, 16592, 33192, 66384), (4096, 6152, 9248, 13912), (4096, 4096, 4096, 4096))
    """
    first = max(floor, n_top / 2 ** (RUNGS - 1))
    ratio = (n_top / first) ** (1 / (RUNGS - 1)) if n_top > first else 1.0
    return tuple(max(floor, _round(first * ratio ** r)) for r in range(RUNGS - 1)) + (max(floor, _round(n_top)),)


def floor_n(space: Space, anchor: HplConfig, n_final: int) -> int:
    """The smallest size searched: two blocks of the space's largest NB (every configuration
    runs at every size), and at least one block of the anchor's NB for each process row and
    column of the anchor's grid, unless the final N itself is smaller. Below that some of the
    anchor's own ranks hold no part of the matrix, and a screening there ranks the grids by
    latency: at N = 568–2,272 on 1,024 ranks it kept 4x256, which lost to 8x128 by 21.6 % at
    4,544 (docs/validation-records.md, tune's note T2)."""
    blocks = _round(2 * max(space.nbs))
    return max(blocks, min(_round(anchor.nb * max(anchor.p, anchor.q)), _round(n_final)))


def neighbours(space: Space, point: dict) -> list[tuple[str, dict]]:
    """One parameter changed at a time: every other value of a code, the adjacent values of
    NB and of the grid (in the space's order)."""
    out = []
    for name in SEARCHED:
        values = list(space.values(name))
        if len(values) < 2:
            continue
        i = values.index(point[name])
        others = [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)] if name in ("nb", "grid") \
            else [v for v in values if v != point[name]]
        out += [(name, {**point, name: v}) for v in others]
    return out


def _screen_cost(m0: int, sizes: tuple[int, ...], ref: HplConfig) -> float:
    """A rung at the size of the one before it runs nothing: its points' runs are in the store."""
    total, m, before = 0.0, m0, None
    for n in sizes:
        total += m * estimate_s(_at(ref, n)) if n != before else 0.0
        m, before = max(1, math.ceil(m / ETA)), n
    return total


def _late_cost(space: Space, sizes: tuple[int, ...], ref: HplConfig) -> float:
    n_top = sizes[-1]
    oat = len(neighbours(space, _point_of(ref, space))) + sum(max(0, len(space.values(k)) - 3) for k in LINE)
    # the final seeds, and one run for the kernels' shares (the model part of the interval)
    return ((oat + FINAL_SEEDS) * estimate_s(_at(ref, n_top))
            + sum(estimate_s(_at(ref, n)) for n in sizes[:-1]))


def _at(c: HplConfig, n: int) -> HplConfig:
    return HplConfig(**{**c.as_dict(), "n": n, "nb": min(c.nb, n)})


def _point_of(c: HplConfig, space: Space) -> dict:
    """The space's point nearest the configuration (its own values where the space has them)."""
    point = {}
    for name in SEARCHED:
        values = space.values(name)
        own = (c.p, c.q) if name == "grid" else getattr(c, name)
        point[name] = own if own in values else values[len(values) // 2]
    return point


def make_plan(space: Space, n_final: int, budget_s: float, ref: HplConfig) -> Plan | None:
    """The largest N_top (at most n_final) whose refinement and final stages fit in
    LATE_SHARE of the budget while the screening of MIN_SCREENED_PER_GRID configurations
    per grid fits in the rest; then as many screened configurations as the rest pays for."""
    minimum = min(space.size, MIN_SCREENED_PER_GRID * len(space.grids))
    n_top = _round(n_final)
    smallest = floor_n(space, ref, n_final)
    n_top = max(n_top, smallest)
    while True:
        sizes = rung_sizes(n_top, smallest)
        late = _late_cost(space, sizes, ref)
        if late <= LATE_SHARE * budget_s and late + _screen_cost(minimum, sizes, ref) <= budget_s:
            break
        if n_top <= smallest:
            return None
        n_top = max(smallest, _round(n_top * 0.8))
    m0 = minimum
    while m0 < space.size and late + _screen_cost(m0 + 1, sizes, ref) <= budget_s:
        m0 += 1
    return Plan(sizes, m0, late + _screen_cost(m0, sizes, ref))


def _affordable(points: list, cost, allowance: float, most: float = math.inf,
                limit: int | None = None, first_always: bool = True) -> list:
    """Points, in order, whose costs add up to at most `allowance`, at most `limit` of them:
    the first point (the anchor) always, unless not `first_always`; a point is passed over
    when it costs more than `most` by itself or no longer fits, and the next ones are still
    considered."""
    kept, total = [], 0.0
    for point in points:
        if limit is not None and len(kept) >= limit:
            break
        c = cost(point)
        if (kept or not first_always) and (c > most or total + c > allowance):
            continue
        kept.append(point)
        total += c
    return kept


def first_rung(space: Space, m0: int, anchor: dict, seed: int) -> list[dict]:
    """m0 points: the anchor, then round-robin over the grids, each grid's points drawn at
    random (seeded) from the rest of the space."""
    if m0 >= space.size:
        return space.points()
    rng = np.random.default_rng(seed)
    rest = {k: space.values(k) for k in SEARCHED if k != "grid"}
    chosen = [anchor]
    seen = {_key(anchor)}
    attempts = 0
    while len(chosen) < m0 and attempts < 100 * m0:
        for g in space.grids:
            if len(chosen) >= m0:
                break
            point = {"grid": g, **{k: v[int(rng.integers(len(v)))] for k, v in rest.items()}}
            attempts += 1
            if _key(point) in seen:
                continue
            seen.add(_key(point))
            chosen.append(point)
    return chosen


def _key(point: dict) -> tuple:
    return tuple(point[k] for k in SEARCHED)


def _describe(point: dict) -> dict:
    p, q = point["grid"]
    return {"p": p, "q": q, **{k: point[k] for k in SEARCHED if k != "grid"}}


def checked_plan(space: Space, n_plan: int, budget_s: float, anchor: HplConfig) -> Plan:
    """The plan, or one error saying what budget the smallest useful search needs."""
    plan = make_plan(space, n_plan, budget_s, anchor)
    if plan is None:
        floor = floor_n(space, anchor, n_plan)
        smallest = rung_sizes(floor, floor)
        need = _late_cost(space, smallest, anchor) / LATE_SHARE
        raise HplsimError(f"the budget ({budget_s:.0f} s) is too small for the smallest useful search on "
                          f"{anchor.ranks} ranks (about {need:.0f} s: N up to {smallest[-1]}); "
                          "raise --budget or fix more parameters")
    return plan


def screening(space: Space, plan: Plan, anchor_config: HplConfig, seed: int,
              left_s: float) -> tuple[list[dict], Plan]:
    """The first rung's points, in order, and the plan with their count: what the search
    screens with `left_s` of the budget left (`hplsim tune --plan` shows it unrun)."""
    sizes = plan.sizes
    anchor = _point_of(anchor_config, space)
    # Twice the planned points are drawn: those dearer than a screened configuration's fair
    # share are passed over (a long broadcast on 1x1,024 costs 165 times the anchor, and
    # taking it, or stopping at it, left the 2-hour Dahu search with the anchor alone).
    alive = first_rung(space, min(space.size, OVERDRAW * plan.screened), anchor, seed)
    # The plan priced every screened point as the anchor, without the runner's reserve per
    # run; the runner charges each point its own estimate (a long broadcast costs more) and
    # the reserve, and refuses a batch that does not fit (911 points planned for 600 s of
    # which it wanted 672.6 s: "the budget ran out before the first simulations"). Keep the
    # points the budget pays for, once the later rungs' planned share is set aside.
    allowance = left_s - _later_s(space, sizes, plan.screened, anchor_config)
    minimum = min(space.size, MIN_SCREENED_PER_GRID * len(space.grids))
    alive = _affordable(alive, lambda pt: _first_cost(space, pt, sizes[0]),
                        allowance, most=allowance / minimum, limit=plan.screened)
    # what the outputs report: the points kept at their own prices, the rest as the plan prices it
    first_s = sum(_first_cost(space, pt, sizes[0]) for pt in alive)
    return alive, replace(plan, screened=len(alive),
                          estimate_s=first_s + _later_s(space, sizes, len(alive), anchor_config))


def _later_s(space: Space, sizes: tuple[int, ...], m0: int, ref: HplConfig) -> float:
    """The estimate of everything after the first rung when m0 points are screened: the
    later rungs' survivors, unknown before the runs, priced as `ref`, as make_plan does."""
    return _screen_cost(m0, sizes, ref) - m0 * estimate_s(_at(ref, sizes[0])) + _late_cost(space, sizes, ref)


def _first_cost(space: Space, point: dict, n: int) -> float:
    """What the runner charges for `point` at the first rung (nothing when its NB is over N:
    it does not run there)."""
    return run_charge(space.config(point, n)) if point["nb"] <= n else 0.0


def describe_plan(space: Space, plan: Plan, anchor_config: HplConfig, seed: int, budget_s: float) -> dict:
    """What a search with this plan will simulate and its estimated cost, simulating
    nothing (`hplsim tune --plan`)."""
    alive, plan = screening(space, plan, anchor_config, seed, budget_s)
    first = [{**_describe(pt), "n": plan.sizes[0], "estimated_s": _first_cost(space, pt, plan.sizes[0])}
             for pt in alive]
    later_s = _later_s(space, plan.sizes, len(alive), anchor_config)
    return {
        "sizes": list(plan.sizes), "screened": plan.screened, "space_size": space.size,
        "kept_per_size": f"1/{ETA}", "final_seeds": FINAL_SEEDS, "budget_s": budget_s,
        "first_rung_estimated_s": plan.estimate_s - later_s, "later_estimated_s": later_s,
        "estimated_s": plan.estimate_s, "first_rung": first,
    }


def search(space: Space, runner: Runner, plan: Plan, n_for, seed: int, anchor_config: HplConfig,
           say=lambda m: None) -> TuneOutcome:
    """`plan`: from `checked_plan`; `n_for(point)`: the final N of a point (the memory
    rule, or the user's -N)."""
    sizes = plan.sizes
    notes: list[str] = []

    # 1. successive halving
    alive, plan = screening(space, plan, anchor_config, seed, runner.budget_s - runner.spent_s)
    say(f"plan: {len(alive)} configurations at N={sizes[0]}, the best third at each of N="
        f"{', '.join(map(str, sizes[1:]))}; estimated {plan.estimate_s:.0f} s of simulation")
    scores: dict[int, dict[tuple, float]] = {}
    reached = 0
    try:
        for r, n in enumerate(sizes):
            configs = {_key(pt): space.config(pt, n) for pt in alive if min(pt["nb"], n) == pt["nb"]}
            results = runner.run([(c, seed) for c in configs.values()])
            scores[n] = {k: results[(c, seed)].gflops for k, c in configs.items() if (c, seed) in results}
            if not scores[n]:
                break
            reached = r
            ranked = sorted(scores[n], key=lambda k: -scores[n][k])
            count = len(scores[n])
            say(f"N={n}: {count} configuration{'s' if count > 1 else ''} simulated, "
                f"best {scores[n][ranked[0]]:.4g} Gflops")
            if r < len(sizes) - 1:
                keep = max(1, math.ceil(len(ranked) / ETA))
                alive = [dict(zip(SEARCHED, k)) for k in ranked[:keep]]
    except BudgetSpent as exc:
        if not scores:
            raise HplsimError(f"tune: the budget ran out before the first simulations ({exc})") from None
        warn(f"tune: the budget ran out during the screening ({exc}); the recommendation comes from N="
             f"{sizes[reached]}")
        notes.append(f"budget ran out during the screening at N={sizes[reached + 1] if reached + 1 < len(sizes) else sizes[-1]}")
    if not scores or not any(scores.values()):
        raise HplsimError("tune: no simulation succeeded" + (f" (first failure: {runner.log[0]})" if runner.log else ""))
    n_top = sizes[reached]
    top_scores = scores[n_top]
    winner = dict(zip(SEARCHED, max(top_scores, key=lambda k: top_scores[k])))

    # 2. one parameter at a time around the winner: refinement and sensitivity
    around, dear = _split_dear(space, neighbours(space, winner), winner, n_top)
    if dear:
        notes.append("not simulated around the winner, each over "
                     f"{DEAR_NEIGHBOUR:g} times its cost at N={n_top}: " + ", ".join(
                         f"{d['parameter']} {d['value']} (about {d['estimated_s']:.0f} s)" for d in dear))
    sens_n, sens_scores = n_top, top_scores
    try:
        configs = [(name, pt, space.config(pt, n_top)) for name, pt in around if pt["nb"] <= n_top]
        results = runner.run([(c, seed) for _, _, c in configs])
        for name, pt, c in configs:
            if (c, seed) in results:
                top_scores[_key(pt)] = results[(c, seed)].gflops
    except BudgetSpent as exc:
        final_reserve = runner.charge([(space.config(winner, n_top), seed + i) for i in range(1, FINAL_SEEDS)])
        if final_reserve > runner.left_s:
            final_reserve = 0.0  # the final seeds will not run anyway: the table comes first
        smaller = _sensitivity_below(space, runner, around, winner, scores, sizes[:reached], seed, final_reserve)
        if smaller is None:
            rows = _rows_paid(space, runner, around, winner, scores, sizes[:reached + 1], seed,
                              runner.left_s - final_reserve)
            part_n = _most(rows)
            part_scores = top_scores if part_n == n_top else dict(scores[part_n])
            paid, unpaid = _sensitivity_part(space, runner, around, part_n, seed,
                                             runner.left_s - final_reserve, part_scores)
            dear += unpaid
            warn(f"tune: the budget did not pay for all the sensitivity runs ({exc}); the table has "
                 f"{len(paid)} of its {len(paid) + len(unpaid)} rows, at N={part_n}")
            if unpaid:
                notes.append(f"the sensitivity table lacks {len(unpaid)} of its rows: the budget did not pay "
                             "for them (sensitivity_not_simulated)")
            if part_n != n_top:
                notes.append(f"the sensitivity table is at N={part_n}, where the budget paid for the most of its "
                             f"rows ({len(paid)}; at N={n_top}: {rows[n_top]})")
                sens_n, sens_scores = part_n, part_scores
            around = paid
        else:
            sens_n, sens_scores = smaller
            warn(f"tune: the budget did not pay for the sensitivity runs at N={n_top} ({exc}); "
                 f"the sensitivity table is at N={sens_n}")
            notes.append(f"the sensitivity table is at N={sens_n}: the budget did not pay for its "
                         f"{len(around)} runs at N={n_top}")
    best = dict(zip(SEARCHED, max(top_scores, key=lambda k: top_scores[k])))
    if sens_n == n_top:  # a smaller size's neighbours do not compete with N_top's figures
        best = _line_search(space, runner, winner, best, top_scores, n_top, seed)
    if best != winner:
        changed = next(k for k in SEARCHED if best[k] != winner[k])
        notes.append(f"the one-at-a-time refinement changed {changed} of the screening's winner "
                     f"({winner[changed]} -> {best[changed]}); the sensitivity table is around the screening's "
                     "winner")
    base_g = sens_scores[_key(winner)]
    sensitivity = []
    for name, pt in around:
        g = sens_scores.get(_key(pt))
        if g is not None:
            sensitivity.append({"parameter": name, "value": _value(pt[name]), "n": sens_n, "gflops": g,
                                "change": g / base_g - 1.0})

    # 3. final: seeds at N_top, the smaller sizes for the law
    # (the first sizes may coincide: one point each, or the law's degrees of freedom are false)
    best_runs = list(dict.fromkeys([(space.config(best, n), seed) for n in sizes[:reached + 1]]
                                   + [(space.config(best, n_top), seed + i) for i in range(1, FINAL_SEEDS)]))
    try:
        final = runner.run(best_runs)
    except BudgetSpent as exc:
        warn(f"tune: the budget ran out before the final runs ({exc}); the interval has one seed only")
        # the winner's runs the search already made cost nothing, and without them there is no law
        final = runner.run(runner.stored(best_runs) + [(space.config(best, n_top), seed)])
    at_top = [final[(c, s)] for c, s in best_runs if c.n == n_top and (c, s) in final]
    best_config = space.config(best, n_top)
    a = compute_coefficients(runner.variant.model.model, runner.variant.platform.slots[:best_config.ranks],
                             best_config.nb)
    done = [(c, s) for c, s in best_runs if (c, s) in final]
    law = fit_law([c.n for c, _ in done], [final[r].time_s for r in done], a) if a else None
    shares = runner.shares(space.config(best, n_top), seed)
    rsd = model_rsd(runner.variant.model.model, shares)
    if runner.variant.model.model.uncertainty and shares is None:
        notes.append("the model part of the interval uses the bound max rsd (no run left for the kernels' shares)")
    n_final = n_for(best)
    g_top = [r.gflops for r in at_top]
    sd = stdev(g_top) if len(g_top) >= 2 else None
    mean_top = fmean(g_top)
    simulated = {"n": n_top, "gflops": mean_top, "seeds": len(g_top),
                 "interval": None}
    top_interval = combine(mean_top, [t_half(sd or 0.0, len(g_top)), z_half(rsd, mean_top)], len(g_top), sd, rsd)
    simulated["interval"] = [top_interval.low, top_interval.high]
    if n_final <= n_top or law is None:
        if n_final > n_top:
            notes.append(f"no Gflops(N) law (too few sizes, or a model without a polynomial dgemm law to give "
                         f"its compute term): the figure is at the largest simulated N={n_top}, not at N={n_final}")
        final_interval = top_interval
        source = f"simulated at N={n_top} ({len(g_top)} seeds)"
    else:
        g, lo, hi = law.gflops_interval(n_final)
        law_half = g * math.log(hi / g)  # the law's own interval, as a relative (log) half-width
        final_interval = combine(g, [law_half, t_half(sd or 0.0, len(g_top)) * g / mean_top, z_half(rsd, g)],
                                 len(g_top), sd, rsd)
        source = (f"extrapolated from N={min(law.sizes)}..{max(law.sizes)} to N={n_final} (x{n_final / n_top:.3g}) "
                  f"by the law {law.to_dict()['form']}; the compute term is {100 * law.compute_share(n_top):.2g} % "
                  f"of the time at N={n_top}, {100 * law.compute_share(n_final):.2g} % at N={n_final}")
    sources = final_interval.sources + ([f"the Gflops(N) law ({law.dof} degrees of freedom)"]
                                        if n_final > n_top and law is not None else [])
    best_entry = {**_describe(best), "n": n_final, "gflops": final_interval.central,
                  "interval": [final_interval.low, final_interval.high], "interval_sources": sources,
                  "source": source}
    top = [best_entry]
    for k in sorted(top_scores, key=lambda k: -top_scores[k]):
        if k == _key(best) or len(top) >= 10:
            continue
        ratio = top_scores[k] / top_scores[_key(best)]
        g = final_interval.central * ratio
        rel = math.log(final_interval.high / final_interval.central) if final_interval.central > 0 else 0.0
        # the recommendation's relative width, and one seed's noise for this configuration's ratio
        iv = combine(g, [g * rel, t_half(sd or 0.0, len(g_top)) / mean_top * g], 1, None, rsd)
        top.append({**_describe(dict(zip(SEARCHED, k))), "n": n_final, "gflops": g,
                    "interval": [iv.low, iv.high], "gflops_at_n_top": top_scores[k],
                    "source": f"the recommendation's figure x {ratio:.4f} (its ratio at N={n_top}, one seed)"})
    return TuneOutcome(best_entry, top, sensitivity, plan, law, notes, final_interval, n_final, simulated, dear)


def _not_simulated(name: str, pt: dict, config: HplConfig, reason: str) -> dict:
    """An entry of `sensitivity_not_simulated`."""
    return {"parameter": name, "value": _value(pt[name]), "n": config.n, "reason": reason,
            "estimated_s": estimate_s(config)}


def _split_dear(space: Space, around: list, winner: dict, n: int) -> tuple[list, list[dict]]:
    """The neighbours worth simulating, and those whose run at `n` would cost more than
    DEAR_NEIGHBOUR times the winner's (a long broadcast on a 4x256 grid: 33 times a ring's,
    hpl/cost.py), listed with their estimate instead: one such run would take the share
    of every other neighbour, and the table would then have no row at all (the 20-minute
    Dahu search: 17 neighbours priced 1,975 s, 1,074 s left, no table)."""
    cost = estimate_s(space.config(winner, n))
    keep, dear = [], []
    for name, pt in around:
        config = space.config(pt, n) if pt["nb"] <= n else None
        if config is not None and estimate_s(config) > DEAR_NEIGHBOUR * cost:
            dear.append(_not_simulated(name, pt, config, "cost"))
        else:
            keep.append((name, pt))
    return keep, dear


def _sensitivity_part(space: Space, runner: Runner, around: list, n: int, seed: int, allowance: float,
                      scores: dict[tuple, float]) -> tuple[list, list[dict]]:
    """A part of the table rather than none: the neighbours at `n` whose runs fit in
    `allowance`, in order, run (their Gflops into `scores`); the others listed as not
    simulated (reason "budget")."""
    runs, runnable, paid = _paid(space, runner, around, n, seed, allowance)
    results = runner.run([runs[_key(pt)] for _, pt in paid]) if paid else {}
    for _, pt in paid:
        if runs[_key(pt)] in results:
            scores[_key(pt)] = results[runs[_key(pt)]].gflops
    unpaid = [_not_simulated(name, pt, runs[_key(pt)][0], "budget") for name, pt in runnable if (name, pt) not in paid]
    return paid, unpaid


def _paid(space: Space, runner: Runner, around: list, n: int, seed: int,
          allowance: float) -> tuple[dict, list, list]:
    """The neighbours' runs at `n` by point, those that run at `n` (NB <= n), and those of
    them, in order, that `allowance` pays for (stored runs are free)."""
    runs = {_key(pt): (space.config(pt, n), seed) for _, pt in around if pt["nb"] <= n}
    runnable = [(name, pt) for name, pt in around if _key(pt) in runs]
    paid = _affordable(runnable, lambda item: runner.charge([runs[_key(item[1])]]), allowance,
                       first_always=False)
    return runs, runnable, paid


def _rows_paid(space: Space, runner: Runner, around: list, winner: dict, scores: dict[int, dict],
               sizes: list[int], seed: int, allowance: float) -> dict[int, int]:
    """How many rows of the table `allowance` pays for at each size where the winner was
    simulated: the 2-hour Dahu search, with 526 s left for its table, ran 1 row of 16 at
    N_top = 21,744 where N = 2,712 paid for 10."""
    return {n: len(_paid(space, runner, around, n, seed, allowance)[2])
            for n in sizes if _key(winner) in scores.get(n, {})}


def _most(rows: dict[int, int]) -> int:
    """The size with the most rows, the largest on a tie."""
    return max(rows, key=lambda n: (rows[n], n))


def _sensitivity_below(space: Space, runner: Runner, around: list, winner: dict, scores: dict[int, dict],
                       sizes: list[int], seed: int, reserve_s: float) -> tuple[int, dict[tuple, float]] | None:
    """The neighbours at the largest smaller size the budget still pays for, `reserve_s`
    left for the final runs: (that N, its Gflops by point, the winner's own included).
    A table at a smaller N says less about N_top than one at N_top, and more than none
    (a 2-hour Dahu search priced its neighbours as the preset's configuration and found
    them twice as dear: NB 64, long broadcasts)."""
    for n in reversed(sizes):
        own = scores.get(n, {}).get(_key(winner))
        if own is None:
            continue
        configs = [(pt, space.config(pt, n)) for _, pt in around if pt["nb"] <= n]
        runs = [(c, seed) for _, c in configs]
        if runner.charge(runs) + reserve_s > runner.left_s:
            continue
        results = runner.run(runs)
        out = {_key(pt): results[(c, seed)].gflops for pt, c in configs if (c, seed) in results}
        out[_key(winner)] = own
        return n, out
    return None


def _line_search(space: Space, runner: Runner, winner: dict, best: dict, scores: dict[tuple, float], n: int,
                 seed: int) -> dict:
    """When the best neighbour moved the grid or NB, keep stepping that way while Gflops
    improves: the screening at small N misjudges what favours large N (a squarer grid,
    a larger NB), and the neighbours only look one step away."""
    for name in LINE:
        if best[name] == winner[name]:
            continue
        values = list(space.values(name))
        step = 1 if values.index(best[name]) > values.index(winner[name]) else -1
        while 0 <= values.index(best[name]) + step < len(values):
            nxt = {**best, name: values[values.index(best[name]) + step]}
            if nxt["nb"] > n:
                break
            config = space.config(nxt, n)
            try:
                result = runner.run([(config, seed)]).get((config, seed))
            except BudgetSpent:
                break
            if result is None:
                break
            scores[_key(nxt)] = result.gflops
            if result.gflops <= scores[_key(best)]:
                break
            best = nxt
    return best


def _value(v):
    return f"{v[0]}x{v[1]}" if isinstance(v, tuple) else v
