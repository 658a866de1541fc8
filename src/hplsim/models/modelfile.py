"""The model file: kernel duration models per host and CPU (format in docs/formats/model-file.md).

One reader (`load_model`), one writer (`save_model`). Everything the emulation needs is
checked here, with the path of the offending field in the message, so that a bad model
file never reaches the simulator.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import yaml

from hplsim import formats
from hplsim.errors import HplsimError
from hplsim.formats import Field, Record
from hplsim.hpl.kernels import condition_variables, kernel_variables

FORMAT_NAME = "hplsim-model"
FORMAT_VERSION = 1

#: Size variables of each modelled kernel, in the order the C runtime passes them (from the
#: table of kernels, `hplsim.hpl.kernels`, where dtrsm's k is explained).
KERNEL_VARIABLES: dict[str, tuple[str, ...]] = kernel_variables()

#: What a piece's conditions may name: the sizes, then what the table adds (the row swaps'
#: leading dimension, in the runtime's free third slot).
CONDITION_VARIABLES: dict[str, tuple[str, ...]] = condition_variables()

#: seconds: a coefficient larger than this makes the smallest call last longer than any HPL run
MAX_COEFFICIENT = 1e6
NOISE_FAMILIES = ("none", "normal", "halfnormal", "mixture")
HALFNORMAL_MEAN = math.sqrt(2.0 / math.pi)
HALFNORMAL_SD = math.sqrt(1.0 - 2.0 / math.pi)

Exponents = tuple[int, ...]


def parse_term(term: str, variables: tuple[str, ...]) -> Exponents:
    """``"mnk"`` / ``"m*n*k"`` / ``"m1*n"`` / ``"nn"`` / ``"intercept"`` -> exponent per variable."""
    exps = [0] * len(variables)
    if term in ("intercept", "1"):
        return tuple(exps)
    factors = term.split("*") if "*" in term else list(term)
    for factor in factors:
        if factor not in variables:
            raise ValueError(f"unknown size variable {factor!r} in term {term!r} (variables: {', '.join(variables)})")
        exps[variables.index(factor)] += 1
    return tuple(exps)


def term_name(exps: Exponents, variables: tuple[str, ...]) -> str:
    if not any(exps):
        return "intercept"
    parts = [v for v, e in zip(variables, exps) for _ in range(e)]
    return "".join(parts) if all(len(v) == 1 for v in parts) else "*".join(parts)


def _shape(sizes: Mapping[str, Any], variables: tuple[str, ...]) -> tuple[int, ...]:
    return np.broadcast(*[np.asarray(sizes[v], dtype=float) for v in variables]).shape


@dataclass(frozen=True)
class Polynomial:
    """Σ coef · Π size^exp, over the kernel's size variables."""

    variables: tuple[str, ...]
    terms: tuple[tuple[Exponents, float], ...] = ()

    @classmethod
    def from_mapping(cls, variables: tuple[str, ...], mapping: Mapping[str, float]) -> "Polynomial":
        merged: dict[Exponents, float] = {}
        for name, coef in mapping.items():
            exps = parse_term(str(name), variables)
            merged[exps] = merged.get(exps, 0.0) + float(coef)
        return cls(variables, tuple(merged.items()))

    def to_mapping(self) -> dict[str, float]:
        return {term_name(e, self.variables): float(c) for e, c in self.terms}

    def __call__(self, sizes: Mapping[str, Any]) -> np.ndarray:
        total = np.zeros(_shape(sizes, self.variables))
        for exps, coef in self.terms:
            value = np.full_like(total, coef, dtype=float)
            for var, e in zip(self.variables, exps):
                if e:
                    value = value * np.asarray(sizes[var], dtype=float) ** e
            total = total + value
        return total

    @property
    def degree(self) -> int:
        return max((sum(e) for e, _ in self.terms), default=0)


@dataclass(frozen=True)
class Component:
    """One normal component of a mixture: its weight, mean shift and σ polynomials."""

    weight: float
    shift: Polynomial
    sigma: Polynomial


_OPERATORS = (">=", "<=", ">", "<")


@dataclass(frozen=True)
class Condition:
    """A comparison between two sizes (or a size and a number), ``n > m``, ``m >= 1000``,
    ``n <= 2*m``: held as L(sizes) > 0 (strict) or >= 0, L linear in the sizes; or a
    divisibility, ``ld % 512 == 0``: L(sizes) is a multiple of `modulus` (then const = 0)."""

    text: str
    coefs: tuple[float, ...]  # one per condition variable of the kernel
    const: float
    strict: bool
    modulus: int = 0

    @classmethod
    def parse(cls, text: str, variables: tuple[str, ...]) -> "Condition":
        text = str(text).strip()
        divisible = _DIVISIBLE.fullmatch(text)
        if divisible:
            var, modulus = divisible.group(1), int(divisible.group(2))
            if var not in variables:
                raise ValueError(f"condition {text!r}: {var!r} is not one of {', '.join(variables)}")
            if modulus < 2:
                raise ValueError(f"condition {text!r}: the modulus must be at least 2")
            coefs = tuple(1.0 if v == var else 0.0 for v in variables)
            return cls(f"{var} % {modulus} == 0", coefs, 0.0, False, modulus)
        for op in _OPERATORS:
            if op in text:
                left, right = (part.strip() for part in text.split(op, 1))
                break
        else:
            raise ValueError(f"condition {text!r}: expected A > B, A >= B, A < B, A <= B or V % K == 0")
        a, b = _linear(left, variables, text), _linear(right, variables, text)
        if op in ("<", "<="):
            a, b = b, a
        coefs = tuple(x - y for x, y in zip(a[0], b[0]))
        if not any(coefs):
            raise ValueError(f"condition {text!r} does not depend on the sizes")
        return cls(" ".join(f"{left} {op} {right}".split()), coefs, a[1] - b[1], op in (">", "<"))

    def holds(self, sizes: Mapping[str, Any], variables: tuple[str, ...]) -> np.ndarray:
        for c, v in zip(self.coefs, variables):
            if c and v not in sizes:
                raise HplsimError(f"condition {self.text!r} needs each call's {v}, which these calls do not carry")
        value = self.const + sum(c * np.asarray(sizes[v], dtype=float) for c, v in zip(self.coefs, variables) if c)
        if self.modulus:
            return np.asarray(np.mod(value, self.modulus) == 0)
        return np.asarray(value > 0 if self.strict else value >= 0)


_DIVISIBLE = re.compile(r"\s*([A-Za-z_]\w*)\s*%\s*(\d+)\s*==\s*0\s*")


def _linear(side: str, variables: tuple[str, ...], text: str) -> tuple[list[float], float]:
    """``m`` / ``2*m`` / ``1000`` -> (coefficient per variable, constant)."""
    coefs = [0.0] * len(variables)
    factor, _, var = side.rpartition("*") if "*" in side else ("1", "", side)
    try:
        if var in variables:
            coefs[variables.index(var)] = float(factor)
            return coefs, 0.0
        if "*" not in side:
            value = float(side)
            if math.isfinite(value):
                return coefs, value
    except ValueError:
        pass
    raise ValueError(f"condition {text!r}: {side!r} is neither a size ({', '.join(variables)}), a number, "
                     "nor a number times a size")


@dataclass(frozen=True)
class Piece:
    """The law of the calls whose sizes satisfy every condition."""

    when: tuple[Condition, ...]
    model: "KernelModel"

    def holds(self, sizes: Mapping[str, Any]) -> np.ndarray:
        out = np.ones(_shape(sizes, self.model.variables), bool)
        for c in self.when:
            out = out & c.holds(sizes, CONDITION_VARIABLES[self.model.kernel])
        return out


@dataclass(frozen=True)
class KernelModel:
    """Duration of one call: mean(sizes) + noise, clamped at 0.

    noise families: ``none``; ``normal`` (N(0, σ²)); ``halfnormal`` (|Z|σ' shifted to mean 0,
    standard deviation σ — the reference data's family); ``mixture`` (component c with
    probability weight_c, then N(shift_c, σ_c²)). σ, shifts: polynomials in the same sizes.

    pieces: other laws for the calls whose sizes meet their conditions (the first piece that
    holds wins; the fields above are the law of the calls no piece claims).
    """

    kernel: str
    mean: Polynomial
    family: str = "none"
    sigma: Polynomial | None = None
    components: tuple[Component, ...] = ()
    pieces: tuple[Piece, ...] = ()

    @property
    def variables(self) -> tuple[str, ...]:
        return KERNEL_VARIABLES[self.kernel]

    def base(self) -> "KernelModel":
        """The law of the calls no piece claims, as a model of its own."""
        return KernelModel(self.kernel, self.mean, self.family, self.sigma, self.components)

    def _by_piece(self, sizes: Mapping[str, Any], law) -> np.ndarray:
        out = np.array(law(self.base()), dtype=float)
        if not self.pieces:
            return out
        shape = _shape(sizes, self.variables)
        out = np.broadcast_to(out, shape).copy()
        free = np.ones(shape, bool)
        for piece in self.pieces:
            mine = piece.holds(sizes) & free
            if mine.any():
                out[mine] = np.broadcast_to(law(piece.model), shape)[mine]
            free &= ~mine
        return out

    def predict(self, sizes: Mapping[str, Any]) -> np.ndarray:
        """Expected duration (mean of the noise is 0 for every family but a mixture's)."""
        if self.pieces:
            return self._by_piece(sizes, lambda m: m.predict(sizes))
        mu = self.mean(sizes)
        if self.family == "mixture":
            mu = mu + sum(c.weight * c.shift(sizes) for c in self.components)
        return mu

    def sample(self, sizes: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
        """Random durations with the same law as the emulation's runtime (negative -> 0)."""
        if self.pieces:
            return self._by_piece(sizes, lambda m: m.sample(sizes, rng))
        mu = np.asarray(self.mean(sizes), dtype=float)
        shape = mu.shape
        if self.family == "none":
            out = mu.copy()
        elif self.family == "normal":
            out = mu + self.sigma(sizes) * rng.standard_normal(shape)
        elif self.family == "halfnormal":
            z = np.abs(rng.standard_normal(shape))
            out = mu + self.sigma(sizes) * (z - HALFNORMAL_MEAN) / HALFNORMAL_SD
        else:
            weights = np.array([c.weight for c in self.components])
            pick = rng.choice(len(self.components), size=shape, p=weights / weights.sum())
            out = mu.copy()
            z = rng.standard_normal(shape)
            for i, comp in enumerate(self.components):
                sel = pick == i
                shift = np.broadcast_to(comp.shift(sizes), shape)[sel]
                sig = np.broadcast_to(comp.sigma(sizes), shape)[sel]
                out[sel] = mu[sel] + shift + sig * z[sel]
        return np.maximum(out, 0.0)


@dataclass
class HostModel:
    """Kernels shared by the host's CPUs, and per-CPU overrides (a rank's CPU is its
    local rank modulo the number of CPUs listed)."""

    kernels: dict[str, KernelModel] = field(default_factory=dict)
    cpus: list[dict[str, KernelModel]] = field(default_factory=list)


@dataclass
class ModelFile:
    default: HostModel | None = None
    hosts: dict[str, HostModel] = field(default_factory=dict)
    description: str = ""
    provenance: Any = None
    #: kernel -> population law (models/population.py): hosts the file does not name for that
    #: kernel get it drawn per run (`draw_cluster`) before the runtime table is written.
    population: dict[str, Any] = field(default_factory=dict)
    #: kernel -> relative standard deviation of its mean law's scale (how uncertain the law
    #: is; the emulation ignores it, prediction intervals use it: models/intervals.py)
    uncertainty: dict[str, float] = field(default_factory=dict)

    def resolve(self, host: str, cpu: int) -> dict[str, KernelModel]:
        """Kernels of a rank on `host` running on its CPU `cpu` (CPU > host > default)."""
        entry = self.hosts.get(host)
        if entry is None and self.default is None:
            raise HplsimError(f"host {host!r} is not in the model file, which has no 'default' entry")
        return self._resolve(entry, cpu)

    def _resolve(self, entry: HostModel | None, cpu: int) -> dict[str, KernelModel]:
        kernels: dict[str, KernelModel] = {}
        for level in (self.default, entry):
            if level is not None:
                kernels.update(level.kernels)
                if level.cpus:
                    kernels.update(level.cpus[cpu % len(level.cpus)])
        return kernels

    def cpus_of(self, host: str) -> int:
        """CPUs a host's ranks are spread over (1 when the model does not distinguish them)."""
        levels = (self.default, self.hosts.get(host))
        return max([1] + [len(level.cpus) for level in levels if level is not None])

    def without_noise(self) -> "ModelFile":
        """The deterministic variant: every kernel at its expected duration."""

        def expected(m: KernelModel) -> KernelModel:
            return KernelModel(m.kernel, Polynomial.from_mapping(m.variables, _sum_maps(
                m.mean.to_mapping(),
                *[{t: c.weight * v for t, v in c.shift.to_mapping().items()} for c in m.components],
            )), pieces=tuple(Piece(p.when, expected(p.model)) for p in m.pieces))

        def strip(kernels: dict[str, KernelModel]) -> dict[str, KernelModel]:
            return {k: expected(m) for k, m in kernels.items()}

        def host(h: HostModel | None) -> HostModel | None:
            return None if h is None else HostModel(strip(h.kernels), [strip(c) for c in h.cpus])

        population = {k: replace(p, noise_family="none") for k, p in self.population.items()}
        return ModelFile(host(self.default), {n: host(h) for n, h in self.hosts.items()},
                         (self.description + " (noise removed)").strip(), self.provenance, population,
                         dict(self.uncertainty))

    def check_hosts(self, hosts: list[str]) -> None:
        if self.default is None:
            missing = sorted(set(hosts) - set(self.hosts))
            if missing:
                more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
                raise HplsimError(
                    f"host(s) {', '.join(missing[:3])}{more} not in the model file, which has no 'default' entry"
                )


# ----------------------------------------------------------------------------- reading


class _Invalid(Exception):
    """A bad part of the population section (`models.population` raises it with its path)."""


_TERMS = "a mapping of term -> coefficient (e.g. mnk: 1.1e-11, intercept: 2e-6)"
_COEFFICIENT = formats.number(what="a finite number")


def _number(value: Any, where: str, nonnegative: bool) -> float:
    try:
        number = _COEFFICIENT(value)
    except formats.Invalid as exc:
        raise formats.FieldError(where, exc.expected, value) from None
    if nonnegative and number < 0:
        raise formats.FieldError(where, "a finite number >= 0", value)
    return number


def _only(raw: Mapping, allowed: set[str], where: str) -> None:
    """The population section's unknown fields (`models.population`)."""
    unknown = set(raw) - allowed
    if unknown:
        raise _Invalid(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")


def _poly(raw: Any, kernel: str, where: str, kind: str) -> Polynomial:
    if not isinstance(raw, Mapping):
        raise formats.FieldError(where, _TERMS, shown_as=formats.kind_of(raw))
    variables = KERNEL_VARIABLES[kernel]
    coefs: dict[str, float] = {}
    for term, value in raw.items():
        try:
            parse_term(str(term), variables)
        except ValueError as exc:
            raise formats.FieldError(f"{where}.{term}", f"a term of {kernel}'s sizes {', '.join(variables)} "
                                     "(e.g. mnk, mn, intercept)", shown_as=str(exc)) from None
        coefs[str(term)] = _number(value, f"{where}.{term}", nonnegative=False)
        if abs(coefs[str(term)]) > MAX_COEFFICIENT:
            raise formats.FieldError(f"{where}.{term}", f"a plausible coefficient, at most {MAX_COEFFICIENT:g} s in "
                                     "size (sizes are at least 1: a single call would last longer)",
                                     shown_as=f"{coefs[str(term)]:g} s")
    poly = Polynomial.from_mapping(variables, coefs)
    if kind in ("mean", "sigma"):
        # Cross terms of a polynomial fit may be negative (the published Dahu models have
        # some); the constant and the leading (highest-degree) terms may not, or large
        # calls would get negative durations. Where the value still dips below 0 the
        # runtime clamps it.
        for exps, coef in poly.terms:
            if coef < 0 and (not any(exps) or sum(exps) == poly.degree):
                raise formats.FieldError(f"{where}.{term_name(exps, variables)}", "a coefficient >= 0 (the constant "
                                         "and the leading terms: large calls would take negative time)", coef)
    return poly


_ANY = Field(lambda v: v, "")  # a part read by its own function below
#: The parts of the model file (docs/formats/model-file.md), declared once; polynomials are
#: free mappings of term -> coefficient (`_poly`). Noise and mixture components keep their
#: old leniency: fields beyond the declared ones are ignored, not refused.
NOISE = Record({
    "family": Field(formats.one_of(NOISE_FAMILIES), "one of " + ", ".join(NOISE_FAMILIES), "none",
                    null_is_absent=False),
    "sigma": _ANY,
    "components": _ANY,
}, name="a mapping with 'family' (and 'sigma', or 'components' for a mixture)", extra=True)
COMPONENT = Record({
    "weight": Field(formats.number(minimum=0, what="a finite number >= 0"), "a finite number >= 0", required=True),
    "shift": Field(lambda v: v, _TERMS, {}, null_is_absent=False),
    "sigma": _ANY,
}, name="a mapping with weight, shift, sigma", optional=False, extra=True)
KERNEL = Record({"mean": _ANY, "noise": _ANY, "pieces": _ANY},
                name="a mapping with 'mean' (and optionally 'noise', 'pieces')", optional=False)
PIECE = Record({"when": _ANY, "mean": _ANY, "noise": _ANY},
               name="a mapping with 'when', 'mean' (and optionally 'noise')", optional=False)
HOST = Record({"kernels": _ANY, "cpus": _ANY}, name="a mapping with 'kernels' and/or 'cpus'", optional=False)
CPU = Record({"kernels": _ANY}, name="a mapping with 'kernels'", optional=False, extra=True)
UNCERTAINTY = Record({
    "rsd": Field(formats.number(minimum=0, what="a relative standard deviation in [0, 1)"),
                 "a relative standard deviation in [0, 1)", required=True),
}, name="a mapping with 'rsd'", optional=False)
MODEL = Record({
    "format": Field(formats.exactly(FORMAT_NAME), repr(FORMAT_NAME), required=True),
    "version": Field(formats.exactly(FORMAT_VERSION, f"{FORMAT_VERSION} (the version this hplsim reads)"),
                     f"{FORMAT_VERSION} (the version this hplsim reads)", required=True),
    "description": _ANY, "provenance": _ANY, "default": _ANY, "hosts": _ANY, "population": _ANY,
    "uncertainty": _ANY,
}, name="a mapping", optional=False)


def _kernel(name: str, raw: Any, where: str) -> KernelModel:
    if name not in KERNEL_VARIABLES:
        raise formats.FieldError(where, f"a kernel among {', '.join(sorted(KERNEL_VARIABLES))}",
                                 shown_as=f"unknown kernel {name!r}")
    doc = formats.check(KERNEL, raw, where)
    base = _law(name, doc, where)
    pieces_raw = doc["pieces"] or []
    if not isinstance(pieces_raw, list):
        raise formats.FieldError(f"{where}.pieces", "a list of {when, mean, noise}", shown_as=formats.kind_of(pieces_raw))
    pieces = []
    for i, p in enumerate(pieces_raw):
        pw = f"{where}.pieces[{i}]"
        piece = formats.check(PIECE, p, pw)
        when_raw = piece["when"]
        texts = when_raw if isinstance(when_raw, list) else [when_raw]
        if not texts or any(not isinstance(t, str) for t in texts):
            raise formats.FieldError(f"{pw}.when", "a condition (\"n > m\") or a list of them", when_raw,
                                     shown_as="nothing" if when_raw is None else None)
        try:
            when = tuple(Condition.parse(t, CONDITION_VARIABLES[name]) for t in texts)
        except ValueError as exc:
            raise formats.FieldError(f"{pw}.when", "a condition on the sizes (\"n > m\", \"ld % 512 == 0\")",
                                     shown_as=str(exc)) from None
        pieces.append(Piece(when, _law(name, piece, pw)))
    return replace(base, pieces=tuple(pieces)) if pieces else base


def _law(name: str, raw: Mapping, where: str) -> KernelModel:
    """The mean and noise of one law (a kernel's, or one of its pieces')."""
    mean = _poly(raw.get("mean"), name, f"{where}.mean", "mean")
    noise = formats.check(NOISE, raw.get("noise"), f"{where}.noise")
    family = noise["family"]
    if family == "none":
        return KernelModel(name, mean)
    if family in ("normal", "halfnormal"):
        sigma = _poly(noise["sigma"], name, f"{where}.noise.sigma", "sigma")
        return KernelModel(name, mean, family, sigma=sigma)
    comps_raw = noise["components"]
    if not isinstance(comps_raw, list) or not comps_raw:
        raise formats.FieldError(f"{where}.noise.components", "a non-empty list of components (weight, shift, "
                                 "sigma) for a mixture", comps_raw, shown_as=None if comps_raw else formats.kind_of(comps_raw))
    comps = []
    for i, c in enumerate(comps_raw):
        cw = f"{where}.noise.components[{i}]"
        comp = formats.check(COMPONENT, c, cw)
        shift = _poly(comp["shift"], name, f"{cw}.shift", "shift")
        sigma = _poly(comp["sigma"], name, f"{cw}.sigma", "sigma")
        comps.append(Component(comp["weight"], shift, sigma))
    total = sum(c.weight for c in comps)
    if not math.isclose(total, 1.0, rel_tol=1e-6, abs_tol=1e-6):
        raise formats.FieldError(f"{where}.noise.components", "weights that sum to 1",
                                 shown_as=f"weights sum to {total}")
    return KernelModel(name, mean, "mixture", components=tuple(comps))


def _kernels(raw: Any, where: str) -> dict[str, KernelModel]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise formats.FieldError(where, "a mapping of kernel name -> model", shown_as=formats.kind_of(raw))
    return {str(k): _kernel(str(k), v, f"{where}.{k}") for k, v in raw.items()}


def _host(raw: Any, where: str) -> HostModel:
    doc = formats.check(HOST, raw, where)
    cpus_raw = doc["cpus"] or []
    if not isinstance(cpus_raw, list):
        raise formats.FieldError(f"{where}.cpus", "a list (one entry per CPU)", shown_as=formats.kind_of(cpus_raw))
    cpus = [_kernels(formats.check(CPU, c, f"{where}.cpus[{i}]")["kernels"], f"{where}.cpus[{i}].kernels")
            for i, c in enumerate(cpus_raw)]
    return HostModel(_kernels(doc["kernels"], f"{where}.kernels"), cpus)


def model_from_dict(doc: Any, source: str = "<model>") -> ModelFile:
    where = f"model file {source}"
    try:
        top = formats.check(MODEL, doc)
        default = _host(top["default"], "default") if top["default"] is not None else None
        hosts_raw = top["hosts"] or {}
        if not isinstance(hosts_raw, Mapping):
            raise formats.FieldError("hosts", "a mapping of host name -> model", shown_as=formats.kind_of(hosts_raw))
        hosts = {str(h): _host(v, f"hosts.{h}") for h, v in hosts_raw.items()}
        if default is None and not hosts:
            raise formats.FieldError("", "a 'default' entry or at least one host",
                                     shown_as="neither a 'default' entry nor any host")
        population = _population(top["population"])
        uncertainty = _uncertainty(top["uncertainty"])
    except formats.FieldError as exc:
        raise exc.at(where) from None
    except _Invalid as exc:
        raise HplsimError(f"{where}: {exc}") from None
    return ModelFile(default, hosts, str(doc.get("description") or ""), doc.get("provenance"), population,
                     uncertainty)


def _uncertainty(raw: Any) -> dict[str, float]:
    """``{dgemm: {rsd: 0.02}}``: each kernel's relative standard deviation, in [0, 1)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise formats.FieldError("uncertainty", "a mapping of kernel name -> {rsd: value}", shown_as=formats.kind_of(raw))
    out = {}
    for k, v in raw.items():
        where = f"uncertainty.{k}"
        if str(k) not in KERNEL_VARIABLES:
            raise formats.FieldError(where, f"a kernel among {', '.join(sorted(KERNEL_VARIABLES))}",
                                     shown_as=f"unknown kernel {k!r}")
        rsd = formats.check(UNCERTAINTY, v, where)["rsd"]
        if rsd >= 1:
            raise formats.FieldError(f"{where}.rsd", "a relative standard deviation in [0, 1)", v["rsd"])
        out[str(k)] = rsd
    return out


def _population(raw: Any) -> dict[str, Any]:
    from hplsim.models.population import population_from_dict

    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not raw:
        raise formats.FieldError("population", "a non-empty mapping of kernel name -> population law", raw,
                                 shown_as=None if isinstance(raw, Mapping) else formats.kind_of(raw))
    return {str(k): population_from_dict(str(k), v, f"population.{k}") for k, v in raw.items()}


def load_model(path: Path) -> ModelFile:
    path = Path(path)
    doc = formats.parse_yaml(formats.read_text(path, "model file"), f"model file {path}", "YAML/JSON")
    return model_from_dict(doc, str(path))


# ----------------------------------------------------------------------------- writing


def _kernel_to_dict(m: KernelModel) -> dict:
    out = _law_to_dict(m)
    if m.pieces:
        out["pieces"] = [{"when": [c.text for c in p.when] if len(p.when) > 1 else p.when[0].text,
                          **_law_to_dict(p.model)} for p in m.pieces]
    return out


def _law_to_dict(m: KernelModel) -> dict:
    out: dict[str, Any] = {"mean": m.mean.to_mapping()}
    if m.family in ("normal", "halfnormal"):
        out["noise"] = {"family": m.family, "sigma": m.sigma.to_mapping()}
    elif m.family == "mixture":
        out["noise"] = {
            "family": "mixture",
            "components": [
                {"weight": c.weight, "shift": c.shift.to_mapping(), "sigma": c.sigma.to_mapping()}
                for c in m.components
            ],
        }
    return out


def _host_to_dict(h: HostModel) -> dict:
    out: dict[str, Any] = {}
    if h.kernels:
        out["kernels"] = {k: _kernel_to_dict(v) for k, v in h.kernels.items()}
    if h.cpus:
        out["cpus"] = [{"kernels": {k: _kernel_to_dict(v) for k, v in cpu.items()}} for cpu in h.cpus]
    return out


def model_to_dict(model: ModelFile) -> dict:
    doc: dict[str, Any] = {"format": FORMAT_NAME, "version": FORMAT_VERSION}
    if model.description:
        doc["description"] = model.description
    if model.provenance is not None:
        doc["provenance"] = model.provenance
    if model.default is not None:
        doc["default"] = _host_to_dict(model.default)
    if model.hosts:
        doc["hosts"] = {h: _host_to_dict(v) for h, v in model.hosts.items()}
    if model.population:
        from hplsim.models.population import population_to_dict

        doc["population"] = {k: population_to_dict(p) for k, p in model.population.items()}
    if model.uncertainty:
        doc["uncertainty"] = {k: {"rsd": float(v)} for k, v in model.uncertainty.items()}
    return doc


def save_model(model: ModelFile, path: Path) -> None:
    """Write atomically (temp file + rename): a reader never sees half a model."""
    from hplsim.outputs import write_text

    write_text(path, yaml.safe_dump(model_to_dict(model), sort_keys=False, width=100), "the model file")


# ----------------------------------------------------------- the emulation runtime's table

#: 2: a kernel's record holds pieces (conditions, then components)
#: 3: a condition's last field is its kind: 0 (>= 0), 1 (> 0), 2 (a multiple of the constant)
RUNTIME_TABLE_VERSION = 3
_FAMILY_CODE = {"none": 0, "normal": 1, "halfnormal": 2}
_SLOTS = 3


def _poly_rt(poly: Polynomial | None) -> str:
    if poly is None:
        return "0"
    items = []
    for exps, coef in poly.terms:
        padded = list(exps) + [0] * (_SLOTS - len(exps))
        items.append(" ".join(str(e) for e in padded) + f" {coef:.17g}")
    return " ".join([str(len(items)), *items])


def _kernel_rt(cpu: int, m: KernelModel) -> str:
    # the pieces in order, then the calls no piece claims (a piece without conditions)
    laws = [(p.when, p.model) for p in m.pieces] + [((), m.base())]
    lines = [f"kernel {cpu} {m.kernel} {len(laws)}"]
    for when, law in laws:
        conds = " ".join(" ".join(f"{c:.17g}" for c in (*cond.coefs, *[0.0] * (_SLOTS - len(cond.coefs)),
                                                           cond.modulus or cond.const))
                         + f" {2 if cond.modulus else int(cond.strict)}" for cond in when)
        lines.append(f"piece {len(when)}" + (f" {conds}" if when else ""))
        lines.append(_law_rt(law))
    return "\n".join(lines)


def _law_rt(m: KernelModel) -> str:
    if m.family == "mixture":
        comps = []
        for c in m.components:
            # The runtime draws one normal per component: its mean is mean + shift.
            merged = Polynomial.from_mapping(m.variables, _sum_maps(m.mean.to_mapping(), c.shift.to_mapping()))
            comps.append(f"comp 1 {c.weight:.17g} {_poly_rt(merged)} {_poly_rt(c.sigma)}")
    else:
        comps = [f"comp {_FAMILY_CODE[m.family]} 1 {_poly_rt(m.mean)} {_poly_rt(m.sigma)}"]
    return "\n".join([str(len(comps)), *comps])


def _sum_maps(*maps: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for m in maps:
        for k, v in m.items():
            out[k] = out.get(k, 0.0) + v
    return out


def write_runtime_table(model: ModelFile, hosts: list[str], path: Path) -> None:
    """The model resolved per (host, CPU) for the C runtime (see csrc/kernel-models/README.md).

    Only the hosts the run uses are written; ``*`` stands for every other host. A model
    with a population is drawn first (`population.draw_cluster`).
    """
    if model.population:
        raise ValueError("a model with a population must be drawn (draw_cluster) before its runtime table is written")
    lines = [f"hplsim-runtime-model {RUNTIME_TABLE_VERSION}"]
    entries: list[tuple[str, HostModel | None]] = [(h, model.hosts[h]) for h in dict.fromkeys(hosts) if h in model.hosts]
    if model.default is not None:
        entries.append(("*", None))
    for name, entry in entries:
        ncpus = max([1] + [len(level.cpus) for level in (model.default, entry) if level is not None])
        lines.append(f"host {name} {ncpus}")
        for cpu in range(ncpus):
            resolved = model._resolve(entry, cpu)
            lines.extend(_kernel_rt(cpu, resolved[k]) for k in sorted(resolved))
    lines.append("end")
    Path(path).write_text("\n".join(lines) + "\n")
