"""A population law of a kernel's coefficients, and clusters sampled from it.

The model file's ``population:`` section (docs/formats/model-file.md) describes how one
kernel's per-CPU coefficients vary: on the log scale, a CPU's coefficients in one run are

    y = center + b (the CPU, spatial) + d (the run, shared by every CPU) + e (the CPU that run)

with b ~ N(0, spatial), d ~ N(0, temporal.run), e ~ N(0, temporal.cpu). A run (a prediction)
draws d once and b, e for every CPU of every host the model does not name, each from its own
generator seeded by (run seed, kernel, host, CPU), so the same seed gives the same cluster
whatever else the run contains. `spatial_scale` multiplies b and `temporal_scale` d and e:
0 makes every CPU the centre (geometric mean) CPU, 2 doubles the spread.

Fitting lives in `population_fit`; this module holds the law, its checks and the draw.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from hplsim.models.modelfile import KERNEL_VARIABLES, Component, HostModel, KernelModel, ModelFile, Polynomial
from hplsim.models.modelfile import _Invalid, _only
from hplsim.models.modelfile import _law_to_dict as law_record

#: The coefficients a population may describe: ``mean.TERM`` / ``sigma.TERM`` of the kernel's law.
PARTS = ("mean", "sigma")
POPULATION_FAMILIES = ("none", "normal", "halfnormal", "mixture")
_SCALES = ("spatial_scale", "temporal_scale")
_FIELDS = {"coefficients", "scale", "center", "spatial", "temporal", "noise_family", "noise_shape",
           "cpus_per_host", *_SCALES, "fitted_on"}


#: A population section that cannot be used; the message starts with the field's path (the
#: model file reader's own error, so that it reports it like any other field).
PopulationError = _Invalid


@dataclass(frozen=True, eq=False)
class Population:
    kernel: str
    coefficients: tuple[str, ...]  # e.g. ("mean.intercept", "mean.mnk", "sigma.intercept", "sigma.mnk")
    center: np.ndarray  # mean of the log coefficients
    spatial: np.ndarray  # covariance between CPUs
    run: np.ndarray  # covariance of the run (day) effect shared by every CPU
    cpu: np.ndarray  # covariance of each CPU's own run-to-run variation
    noise_family: str = "halfnormal"
    cpus_per_host: int = 1
    spatial_scale: float = 1.0
    temporal_scale: float = 1.0
    fitted_on: dict[str, Any] = field(default_factory=dict)
    #: the within-run noise as a mixture in units of the drawn σ: (weight, shift, sd) per component
    noise_shape: tuple[tuple[float, float, float], ...] = ()

    def scaled(self, spatial: float | None = None, temporal: float | None = None) -> "Population":
        return replace(self, spatial_scale=self.spatial_scale if spatial is None else float(spatial),
                       temporal_scale=self.temporal_scale if temporal is None else float(temporal))

    def predictive_cov(self) -> np.ndarray:
        """Covariance of a new CPU's log coefficients in a new run, at the section's scales."""
        return self.spatial_scale ** 2 * self.spatial + self.temporal_scale ** 2 * (self.run + self.cpu)

    def kernel_model(self, y: np.ndarray) -> KernelModel:
        """The kernel law of log coefficients `y`."""
        values = dict(zip(self.coefficients, np.exp(y)))
        variables = KERNEL_VARIABLES[self.kernel]

        def poly(part: str) -> Polynomial:
            return Polynomial.from_mapping(variables, {c.split(".", 1)[1]: float(v) for c, v in values.items()
                                                       if c.startswith(part + ".")})

        if self.noise_family == "none":
            return KernelModel(self.kernel, poly("mean"))
        sigma = poly("sigma")
        if self.noise_family == "mixture":
            comps = tuple(Component(w, _times(sigma, shift), _times(sigma, sd)) for w, shift, sd in self.noise_shape)
            return KernelModel(self.kernel, poly("mean"), "mixture", components=comps)
        return KernelModel(self.kernel, poly("mean"), self.noise_family, sigma=sigma)

    def center_model(self) -> KernelModel:
        return self.kernel_model(self.center)


def _times(p: Polynomial, f: float) -> Polynomial:
    return Polynomial(p.variables, tuple((e, c * f) for e, c in p.terms))


# ----------------------------------------------------------------------------- reading


def _shape(raw: Any, where: str) -> tuple[tuple[float, float, float], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise PopulationError(f"{where}: expected a list of {{weight, shift, sigma}}")
    out = []
    for i, c in enumerate(raw):
        if not isinstance(c, Mapping) or set(c) != {"weight", "shift", "sigma"}:
            raise PopulationError(f"{where}[{i}]: expected a mapping with weight, shift, sigma")
        vals = []
        for k in ("weight", "shift", "sigma"):
            v = c[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise PopulationError(f"{where}[{i}].{k}: expected a number, got {v!r}")
            if k != "shift" and v < 0:
                raise PopulationError(f"{where}[{i}].{k}: negative value {v}")
            vals.append(float(v))
        out.append(tuple(vals))
    total = sum(c[0] for c in out)
    if not math.isclose(total, 1.0, rel_tol=1e-6, abs_tol=1e-6):
        raise PopulationError(f"{where}: weights sum to {total}, not 1")
    return tuple(out)


def _matrix(raw: Any, n: int, where: str) -> np.ndarray:
    try:
        m = np.array(raw, dtype=float)
    except (TypeError, ValueError):
        raise PopulationError(f"{where}: expected a {n}x{n} matrix of numbers") from None
    if m.shape != (n, n):
        raise PopulationError(f"{where}: expected a {n}x{n} matrix (one row per coefficient), got shape "
                              f"{'x'.join(map(str, m.shape)) or 'scalar'}")
    if not np.isfinite(m).all():
        raise PopulationError(f"{where}: entries must be finite")
    if not np.allclose(m, m.T, rtol=1e-9, atol=1e-15 * max(1.0, float(np.abs(m).max()))):
        raise PopulationError(f"{where}: not symmetric")
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        low = float(np.linalg.eigvalsh(m).min())
        raise PopulationError(f"{where}: not positive definite (smallest eigenvalue {low:.3g})") from None
    return m


def population_from_dict(kernel: str, raw: Any, where: str) -> Population:
    if kernel not in KERNEL_VARIABLES:
        raise PopulationError(f"{where}: unknown kernel {kernel!r}")
    if not isinstance(raw, Mapping):
        raise PopulationError(f"{where}: expected a mapping (coefficients, center, spatial, temporal, ...)")
    _only(raw, _FIELDS, where)
    if raw.get("scale", "log") != "log":
        raise PopulationError(f"{where}.scale: only 'log' is supported, got {raw.get('scale')!r}")
    coefs = raw.get("coefficients")
    if not isinstance(coefs, list) or not coefs or not all(isinstance(c, str) for c in coefs):
        raise PopulationError(f"{where}.coefficients: expected a list such as [mean.intercept, mean.mnk]")
    from hplsim.models.modelfile import parse_term

    for c in coefs:
        part, _, term = c.partition(".")
        if part not in PARTS or not term:
            raise PopulationError(f"{where}.coefficients: {c!r} is not mean.TERM or sigma.TERM")
        try:
            parse_term(term, KERNEL_VARIABLES[kernel])
        except ValueError as exc:
            raise PopulationError(f"{where}.coefficients: {exc}") from None
    if len(set(coefs)) != len(coefs):
        raise PopulationError(f"{where}.coefficients: a coefficient is listed twice")
    family = raw.get("noise_family", "halfnormal")
    if family not in POPULATION_FAMILIES:
        raise PopulationError(f"{where}.noise_family: {family!r} is not one of {', '.join(POPULATION_FAMILIES)}")
    if not any(c.startswith("mean.") for c in coefs):
        raise PopulationError(f"{where}.coefficients: no mean.TERM")
    if family != "none" and not any(c.startswith("sigma.") for c in coefs):
        raise PopulationError(f"{where}.coefficients: noise family {family} needs sigma.TERM coefficients")
    n = len(coefs)
    try:
        center = np.array(raw.get("center"), dtype=float)
    except (TypeError, ValueError):
        raise PopulationError(f"{where}.center: expected {n} numbers") from None
    if center.shape != (n,) or not np.isfinite(center).all():
        raise PopulationError(f"{where}.center: expected {n} finite numbers (log of each coefficient)")
    temporal = raw.get("temporal")
    if not isinstance(temporal, Mapping) or set(temporal) != {"run", "cpu"}:
        raise PopulationError(f"{where}.temporal: expected a mapping with 'run' and 'cpu' covariances")
    cpus = raw.get("cpus_per_host", 1)
    if isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1:
        raise PopulationError(f"{where}.cpus_per_host: expected a positive integer, got {cpus!r}")
    scales = {}
    for s in _SCALES:
        v = raw.get(s, 1.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise PopulationError(f"{where}.{s}: expected a number, got {v!r}")
        if v < 0:
            raise PopulationError(f"{where}.{s}: must be at least 0, got {v}")
        scales[s] = float(v)
    shape = _shape(raw.get("noise_shape"), f"{where}.noise_shape")
    if family == "mixture" and not shape:
        raise PopulationError(f"{where}.noise_shape: noise family mixture needs the mixture's components "
                              "(fit them from calls: docs/population.md)")
    fitted_on = raw.get("fitted_on") or {}
    if not isinstance(fitted_on, Mapping):
        raise PopulationError(f"{where}.fitted_on: expected a mapping")
    return Population(kernel, tuple(coefs), center, _matrix(raw.get("spatial"), n, f"{where}.spatial"),
                      _matrix(temporal["run"], n, f"{where}.temporal.run"),
                      _matrix(temporal["cpu"], n, f"{where}.temporal.cpu"),
                      family, cpus, fitted_on=dict(fitted_on), noise_shape=shape, **scales)


def _rows(m: np.ndarray) -> list[list[float]]:
    return [[float(f"{v:.10g}") for v in row] for row in m]


def population_to_dict(p: Population) -> dict[str, Any]:
    out: dict[str, Any] = {
        "coefficients": list(p.coefficients),
        "scale": "log",
        "center": [float(f"{v:.12g}") for v in p.center],
        "spatial": _rows(p.spatial),
        "temporal": {"run": _rows(p.run), "cpu": _rows(p.cpu)},
        "noise_family": p.noise_family,
        "cpus_per_host": p.cpus_per_host,
        "spatial_scale": p.spatial_scale,
        "temporal_scale": p.temporal_scale,
    }
    if p.noise_shape:
        out["noise_shape"] = [{"weight": w, "shift": m, "sigma": s} for w, m, s in p.noise_shape]
    if p.fitted_on:
        out["fitted_on"] = p.fitted_on
    return out


# ------------------------------------------------------------------------------- draws


def _generator(seed: int, *names: str) -> np.random.Generator:
    """A generator of its own per (seed, names): a host's draw does not depend on which
    other hosts the run has, nor on their order."""
    words = [seed % 2 ** 64]
    for name in names:
        words.append(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(words)))


def _chol(m: np.ndarray) -> np.ndarray:
    return np.linalg.cholesky(m)


@dataclass(frozen=True)
class ClusterDraw:
    """A model whose population hosts have been drawn, and what was drawn."""

    model: ModelFile
    hosts: list[dict[str, Any]]  # [{host, cpus: [{kernel: {mean, sigma}}]}]
    runs: dict[str, dict[str, float]]  # kernel -> the run effect (log scale, per coefficient)


def _names_kernel(entry: HostModel | None, kernel: str) -> bool:
    return entry is not None and (kernel in entry.kernels or any(kernel in c for c in entry.cpus))


def draw_cluster(model: ModelFile, hosts: list[str], seed: int) -> ClusterDraw:
    """Every host of `hosts` that the model does not name for a population's kernel gets
    that kernel drawn, per CPU. The returned model has no population left."""
    if not model.population:
        return ClusterDraw(model, [], {})
    new_hosts = dict(model.hosts)
    records: dict[str, list[dict[str, Any]]] = {}
    runs: dict[str, dict[str, float]] = {}
    for kernel, pop in sorted(model.population.items()):
        ls, lr, lc = _chol(pop.spatial), _chol(pop.run), _chol(pop.cpu)
        d = lr @ _generator(seed, kernel, "run").standard_normal(len(pop.center))
        runs[kernel] = {c: float(v) for c, v in zip(pop.coefficients, pop.temporal_scale * d)}
        for host in dict.fromkeys(hosts):
            entry = model.hosts.get(host)
            if _names_kernel(entry, kernel):
                continue
            laws = []
            for cpu in range(pop.cpus_per_host):
                g = _generator(seed, kernel, host, str(cpu))
                z_spatial, z_cpu = g.standard_normal(len(pop.center)), g.standard_normal(len(pop.center))
                y = pop.center + pop.spatial_scale * (ls @ z_spatial) + pop.temporal_scale * (d + lc @ z_cpu)
                laws.append(pop.kernel_model(y))
            base = new_hosts.get(host) or HostModel()
            ncpus = max(len(base.cpus), len(laws))
            cpus = [dict(base.cpus[c % len(base.cpus)]) if base.cpus else {} for c in range(ncpus)]
            for c in range(ncpus):
                cpus[c][kernel] = laws[c % len(laws)]
            new_hosts[host] = HostModel(dict(base.kernels), cpus)
            records.setdefault(host, [{} for _ in range(pop.cpus_per_host)])
            for c, law in enumerate(laws):
                records[host][c][kernel] = law_record(law)
    drawn = replace(model, hosts=new_hosts, population={})
    return ClusterDraw(drawn, [{"host": h, "cpus": cpus} for h, cpus in records.items()], runs)


def with_variability(model: ModelFile, spatial: float | None, temporal: float | None,
                     where: tuple[str, str] = ("--spatial-variability", "--temporal-variability")) -> ModelFile:
    """The model with its populations' spread scaled: 0 = every CPU the centre CPU, 1 = as
    fitted, 2 = twice the spread (standard deviations, on the log scale)."""
    from hplsim.errors import HplsimError

    if spatial is None and temporal is None:
        return model
    for value, name in zip((spatial, temporal), where):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise HplsimError(f"{name}: must be a number at least 0, got {value}")
    if not model.population:
        given = where[0] if spatial is not None else where[1]
        raise HplsimError(f"{given}: the model has no population section to draw hosts from "
                          "(fit one with hplsim fit --per population, docs/population.md)")
    return replace(model, population={k: p.scaled(spatial, temporal) for k, p in model.population.items()})


def with_noise_family(model: ModelFile, family: str, where: str) -> ModelFile:
    """The model with its populations' within-run noise family switched (none, normal,
    halfnormal, or mixture when the population holds a noise shape)."""
    from hplsim.errors import HplsimError

    if not model.population:
        raise HplsimError(f"{where}: the model has no population section (noise_family applies to its draws)")
    if family not in POPULATION_FAMILIES:
        raise HplsimError(f"{where}: {family!r} is not one of {', '.join(POPULATION_FAMILIES)}")
    for k, p in model.population.items():
        if family == "mixture" and not p.noise_shape:
            raise HplsimError(f"{where}: the population of {k} has no noise_shape (fit it with the calls: "
                              "docs/population.md)")
    return replace(model, population={k: replace(p, noise_family=family) for k, p in model.population.items()})
