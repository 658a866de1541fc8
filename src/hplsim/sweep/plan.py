"""From a spec to the list of runs: variants x grids x HPL combinations x seeds.

Impossible combinations (NB > N, P·Q larger than the platform's rank slots, a model that
does not cover the platform's hosts) are not runs: they are collected with their reason,
so that the sweep can report and skip them with a count instead of failing one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.predict import check_inputs
from hplsim.sweep.spec import SweepSpec, grids_for, hpl_combinations
from hplsim.sweep.tasks import Task, config_hash, config_key
from hplsim.sweep.variants import Variant, build_variants


@dataclass
class Invalid:
    description: str  # the HPL parameters, and the variants when not all of them
    reason: str


@dataclass
class Plan:
    variants: list[Variant]
    tasks: list[Task]  # one per distinct run (by hash), in the spec's order
    invalid: list[Invalid] = field(default_factory=list)  # one per combination and reason (seeds not counted)
    duplicates: int = 0  # runs listed twice (e.g. two variations that change nothing)


def _describe(values: dict, spec: SweepSpec) -> str:
    """The parameters that tell this combination apart: P, Q, N, NB and the swept ones."""
    shown = {k: v for k, v in values.items() if k in ("p", "q", "n", "nb") or len(spec.axes.get(k, ())) > 1}
    return " ".join(f"{k.upper()}={v}" for k, v in shown.items())


def _invalid_list(found: dict[tuple[str, str], list[str]], variants: int) -> list[Invalid]:
    """One entry per combination and reason; the variants named only when it is not all."""
    out = []
    for (description, reason), names in found.items():
        if len(names) < variants:
            shown = ", ".join(names[:2]) + (f" and {len(names) - 2} more" if len(names) > 2 else "")
            description = f"{description} on {shown}"
        out.append(Invalid(description, reason))
    return out


def make_plan(spec: SweepSpec, workdir: Path, timeout: float | None) -> Plan:
    variants = build_variants(spec, workdir)
    combos = hpl_combinations(spec)
    plan = Plan(variants, [])
    seen: set[str] = set()
    invalid: dict[tuple[str, str], list[str]] = {}
    for index, variant in enumerate(variants):
        grids = list(spec.grids)
        for r in spec.ranks:  # None: the whole platform (its rank slots)
            grids += [g for g in grids_for(r or len(variant.platform.slots)) if g not in grids]
        for p, q in grids:
            for combo in combos:
                values = {"p": p, "q": q, **combo}
                try:
                    config = HplConfig(**values)
                    check_inputs(config, variant.platform, variant.model.model)
                except HplsimError as exc:
                    names = invalid.setdefault((_describe(values, spec), str(exc)), [])
                    names.append(f"{variant.platform_variation} / {variant.model_variation}")
                    continue
                for seed in spec.seeds:
                    key = config_key(config, seed, variant.platform_digest, variant.model.digest)
                    h = config_hash(key)
                    if h in seen:
                        plan.duplicates += 1
                        continue
                    seen.add(h)
                    plan.tasks.append(Task(config, seed, index, key, h, timeout))
    plan.invalid = _invalid_list(invalid, len(variants))
    return plan
