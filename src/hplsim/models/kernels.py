"""Kernel models per host or per CPU (M_H), chosen by the selection rule, exported to the
model file.

    calls = read_measurements(["dgemm_raw.csv"]).kernels
    fits = fit_kernels(calls, "dgemm", option="auto", per="cpu")
    save_model(to_model_file([fits]), "model.yaml")
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.models.kernel_fit import KernelFit, fit_kernel
from hplsim.models.modelfile import (
    CONDITION_VARIABLES, KERNEL_VARIABLES, Condition, HostModel, KernelModel, ModelFile, Piece,
)
from hplsim.models.selection import (
    ALL_OPTIONS, DEFAULT_FOLDS, DEFAULT_TOLERANCE, choose, compare, parse_option, pooled_table,
)

PER_LEVELS = ("auto", "none", "host", "cpu")
POOLED = "all"


@dataclass
class KernelFits:
    """One kernel fitted on every group (host or CPU) and on all calls pooled."""

    kernel: str
    per: str  # none | host | cpu
    option: tuple[str, str]
    reason: str  # why this option
    pooled: KernelFit  # all calls: the model file's `default` entry
    groups: dict[tuple[str, int | None], KernelFit] = field(default_factory=dict)  # (host, cpu or None)
    host_pooled: dict[str, KernelFit] = field(default_factory=dict)  # per host, for CPUs not measured
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)  # group label -> selection table
    summary: pd.DataFrame | None = None  # the groups' tables summed: what the rule looked at

    def group_label(self, key: tuple[str, int | None]) -> str:
        return key[0] if key[1] is None else f"{key[0]} cpu{key[1]}"


def parse_pieces(texts: Sequence[str]) -> dict[str, list[tuple[Condition, ...]]]:
    """``--piece 'dgemm: n > m'`` (conditions joined by ``,``, all of which must hold) ->
    {kernel: [conditions of each piece, in the order given]}."""
    out: dict[str, list[tuple[Condition, ...]]] = {}
    for text in texts:
        kernel, sep, rest = str(text).partition(":")
        kernel = kernel.strip()
        if not sep or not rest.strip():
            raise HplsimError(f"--piece {text!r}: expected KERNEL: CONDITION[, CONDITION …], e.g. 'dgemm: n > m'")
        if kernel not in KERNEL_VARIABLES:
            raise HplsimError(f"--piece {text!r}: unknown kernel {kernel!r} (known: {', '.join(sorted(KERNEL_VARIABLES))})")
        try:
            conds = tuple(Condition.parse(c, CONDITION_VARIABLES[kernel]) for c in rest.split(","))
        except ValueError as exc:
            raise HplsimError(f"--piece {text!r}: {exc}") from None
        out.setdefault(kernel, []).append(conds)
    return out


def fit_pieced(calls: pd.DataFrame, kernel: str, mean: str, noise: str, pieces: Sequence[tuple[Condition, ...]],
               *, seed: int = 0, what: str = "data") -> KernelFit:
    """`fit_kernel`, with a law of its own for the calls of each piece (the first piece
    whose conditions all hold claims a call, as in the emulation); the calls no piece
    claims make the base law. Every piece, and the base, must have calls to fit."""
    if not pieces:
        return fit_kernel(calls, kernel, mean, noise, seed=seed, what=what)
    variables = CONDITION_VARIABLES[kernel]
    sizes = {v: calls[v].to_numpy(dtype=float) for v in variables if v in calls}
    free = np.ones(len(calls), bool)
    fitted: list[tuple[tuple[Condition, ...], KernelFit]] = []
    for conds in pieces:
        text = ", ".join(c.text for c in conds)
        mine = free.copy()
        for c in conds:
            mine &= c.holds(sizes, variables)
        if not mine.any():
            raise HplsimError(f"{what}: no call where {text} (outside the pieces before it): nothing to fit that "
                              "piece on")
        fitted.append((conds, fit_kernel(calls[mine], kernel, mean, noise, seed=seed, what=f"{what} where {text}")))
        free &= ~mine
    if not free.any():
        raise HplsimError(f"{what}: every call falls in a piece; the kernel's own law needs the calls outside them")
    base = fit_kernel(calls[free], kernel, mean, noise, seed=seed, what=f"{what} outside the pieces")
    model = replace(base.model, pieces=tuple(Piece(conds, f.model) for conds, f in fitted))
    return replace(base, model=model, pieces=tuple((", ".join(c.text for c in conds), f) for conds, f in fitted))


def resolve_per(calls: pd.DataFrame, per: str) -> str:
    """``auto``: the finest level the data identify (cpu, else host, else none)."""
    if per not in PER_LEVELS:
        raise HplsimError(f"--per must be one of {', '.join(PER_LEVELS)}, got {per!r}")
    has_host = "host" in calls and calls["host"].notna().all()
    has_cpu = has_host and "cpu" in calls and calls["cpu"].notna().all()
    if per == "auto":
        return "cpu" if has_cpu else "host" if has_host else "none"
    if per in ("host", "cpu") and not has_host:
        raise HplsimError(f"--per {per}: the data do not say on which host each call ran "
                          "(no host or node column); use --per none")
    if per == "cpu" and not has_cpu:
        raise HplsimError("--per cpu: the data do not say on which CPU each call ran (no cpu column); use --per host")
    return per


def _groups(calls: pd.DataFrame, per: str) -> dict[tuple[str, int | None], pd.DataFrame]:
    if per == "none":
        return {}
    if per == "host":
        return {(str(h), None): g for h, g in calls.groupby("host", sort=True)}
    cpu = calls["cpu"].to_numpy(dtype=float)
    if (cpu < 0).any() or (cpu != np.round(cpu)).any():
        raise HplsimError("the cpu column must hold the CPU (socket) index within the host: 0, 1, ...")
    calls = calls.assign(cpu=cpu.astype(int))
    return {(str(h), int(c)): g for (h, c), g in calls.groupby(["host", "cpu"], sort=True)}


def fit_kernels(
    calls: pd.DataFrame,
    kernel: str,
    *,
    option: str | tuple[str, str] | None = "auto",
    per: str = "auto",
    criterion: str = "crps",
    tolerance: float = DEFAULT_TOLERANCE,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    compare_options: bool = False,
    pieces: Sequence[tuple[Condition, ...]] = (),
) -> KernelFits:
    """Fit `kernel` on its calls, per host or CPU and pooled.

    option: ``auto`` (the selection rule over every M × N option, on the groups'
    cross-validated errors summed), or ("M2", "N2") / ``"M2,N2"``. With a fixed option,
    `compare_options` still computes the comparison table (for the report).
    pieces: conditions on the sizes whose calls get a law of their own (`fit_pieced`), in
    every group; the option is chosen on the calls as a whole.
    """
    chosen = parse_option(option) if isinstance(option, str) else option
    if "kernel" in calls and calls["kernel"].notna().any():
        mine = calls[calls["kernel"] == kernel]
        if mine.empty:
            found = ", ".join(sorted(set(calls["kernel"].dropna().astype(str))))
            raise HplsimError(f"no {kernel} calls in the data (kernels found: {found})")
    else:
        mine = calls
    if mine.empty:
        raise HplsimError(f"no {kernel} calls in the data")
    per = resolve_per(mine, per)
    groups = _groups(mine, per)
    label = {key: (key[0] if key[1] is None else f"{key[0]} cpu{key[1]}") for key in groups}

    tables: dict[str, pd.DataFrame] = {}
    summary = None
    if chosen is None or compare_options:
        subsets = {label[k]: g for k, g in groups.items()} or {POOLED: mine}
        for name, g in subsets.items():
            tables[name] = compare(g, kernel, ALL_OPTIONS, folds=folds, seed=seed, what=f"{kernel} on {name}")
        summary = pooled_table(tables)
    if chosen is None:
        assert summary is not None
        pick = choose(summary, criterion, tolerance)
        chosen, reason = pick.option, pick.reason
    else:
        reason = "given by the user"

    mean, noise = chosen
    pooled = fit_pieced(mine, kernel, mean, noise, pieces, seed=seed, what=f"{kernel} (all calls)")
    fitted = {key: fit_pieced(g, kernel, mean, noise, pieces, seed=seed, what=f"{kernel} on {label[key]}")
              for key, g in groups.items()}
    host_pooled: dict[str, KernelFit] = {}
    if per == "cpu":
        for host, g in mine.groupby("host", sort=True):
            cpus = {c for (h, c) in groups if h == str(host)}
            if cpus != set(range(max(cpus) + 1)):  # a CPU index not measured: fall back to the host's fit
                host_pooled[str(host)] = fit_pieced(g, kernel, mean, noise, pieces, seed=seed,
                                                    what=f"{kernel} on {host}")
    return KernelFits(kernel, per, chosen, reason, pooled, fitted, host_pooled, tables, summary)


def _start_from(base: ModelFile | None, kernels: Sequence[str]) -> tuple[HostModel, dict[str, HostModel]]:
    """A copy of `base`'s default and hosts (empty without a base) in which `kernels` are
    left to the new fit: dropped from every CPU of the default (a new pooled law must not
    be shadowed by old per-CPU ones) and from every host (hosts the new fit does not cover
    fall back to the new default), so that a kernel's laws all come from one calibration."""
    default = HostModel(dict(base.default.kernels), [dict(c) for c in base.default.cpus]) if base and base.default \
        else HostModel()
    hosts: dict[str, HostModel] = {}
    if base:
        for h, hm in base.hosts.items():
            hosts[h] = HostModel(dict(hm.kernels), [dict(c) for c in hm.cpus])
    for kernel in kernels:
        for cpu in default.cpus:
            cpu.pop(kernel, None)
        for h in hosts.values():
            h.kernels.pop(kernel, None)
            for cpu in h.cpus:
                cpu.pop(kernel, None)
    return default, hosts


def _model_file(default: HostModel, hosts: dict[str, HostModel], description: str, provenance: Any) -> ModelFile:
    hosts = {h: v for h, v in hosts.items() if v.kernels or any(v.cpus)}
    return ModelFile(default=default, hosts=hosts, description=description, provenance=provenance)


def to_model_file(fits: list[KernelFits], base: ModelFile | None = None, description: str = "",
                  provenance: Any = None) -> ModelFile:
    """The model file: `default` = the pooled fits; hosts (and their CPUs) = the group fits.

    With `base`, start from that model: the fitted kernels replace its entries (in its
    default and in every host the fit covers), the other kernels are kept.
    """
    default, hosts = _start_from(base, [kf.kernel for kf in fits])
    for kf in fits:
        default.kernels[kf.kernel] = kf.pooled.model
        if kf.per == "host":
            for (host, _), f in kf.groups.items():
                hosts.setdefault(host, HostModel()).kernels[kf.kernel] = f.model
        elif kf.per == "cpu":
            for host in sorted({h for h, _ in kf.groups}):
                entry = hosts.setdefault(host, HostModel())
                ncpu = max(c for h, c in kf.groups if h == host) + 1
                while len(entry.cpus) < ncpu:
                    entry.cpus.append({})
                for c in range(ncpu):
                    f = kf.groups.get((host, c)) or kf.host_pooled[host]
                    entry.cpus[c][kf.kernel] = f.model
    return _model_file(default, hosts, description, provenance)


def pooled_model_file(models: dict[str, KernelModel], base: ModelFile | None = None, description: str = "",
                      provenance: Any = None) -> ModelFile:
    """The model file of laws pooled over every host and CPU (`hplsim fit --method
    time-share`): `models` in the `default` entry, replacing those kernels everywhere in
    `base`, whose other kernels are kept."""
    default, hosts = _start_from(base, list(models))
    default.kernels.update(models)
    return _model_file(default, hosts, description, provenance)
