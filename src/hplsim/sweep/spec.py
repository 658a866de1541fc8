"""The sweep spec: what to run, read from YAML (format in docs/sweep.md) or from an HPL.dat.

Parsing only checks and normalises; nothing is expanded or written here (see `plan`).
Every problem is reported with the path of the offending field, e.g.
``sweep spec s.yaml: hpl.nb[1]: 'x' is not an integer``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplParams
from hplsim.hpl.hpldat import read_hpl_dat
from hplsim.hpl.parameters import LOOP_ORDER, PARAMETER, SINGLE
from hplsim.platform.spec import IPROBE_REPORTS

#: HPL parameters a spec may list, in the order the sweep loops over them (HPL's own
#: loop order first, then what HPL.dat only takes one value of); the grid is apart.
HPL_AXES = (*(p.name for p in LOOP_ORDER if p.list_field != "grids"), *(p.name for p in SINGLE))
_TOP_FIELDS = {"name", "description", "hpl", "ranks", "seeds", "platform", "model", "timeout"}
_PLATFORM_FIELDS = {"path", "ranks_per_host", "variations"}
_PLATFORM_VARIATION_FIELDS = {"name", "bandwidth", "latency", "loopback_bandwidth", "nodes", "topology",
                              "fat_tree", "sharing_policy", "iprobe_reports"}
_MODEL_FIELDS = {"path", "variations"}
_MODEL_VARIATION_FIELDS = {"name", "speed", "drop_slowest", "noise", "spatial_variability", "temporal_variability",
                           "noise_family"}
MAX_VALUES = 10_000  # per list: a typo in a range should fail here, not fill the disk


class SpecError(HplsimError):
    pass


def _fail(source: str, where: str, what: str) -> SpecError:
    return SpecError(f"sweep spec {source}: {where}: {what}" if where else f"sweep spec {source}: {what}")


@dataclass(frozen=True)
class PlatformVariation:
    """One what-if on the platform. Numbers are factors (``bandwidth: 2`` = twice as fast),
    strings with a unit are absolute values (``bandwidth: 25GBps``)."""

    name: str = "base"
    bandwidth: float | str | None = None
    latency: float | str | None = None
    loopback_bandwidth: float | str | None = None
    nodes: int | None = None
    topology: str | None = None
    fat_tree: str | None = None
    sharing_policy: str | None = None
    iprobe_reports: str | None = None  # what MPI_Iprobe reports (docs/formats/platform.md)

    @property
    def is_base(self) -> bool:
        return all(getattr(self, f) is None for f in _PLATFORM_VARIATION_FIELDS - {"name"})


@dataclass(frozen=True)
class ModelVariation:
    """One what-if on the kernels: per-host speed factors (glob pattern -> factor, the last
    matching pattern wins; 2 = kernels take half the time), dropping the slowest hosts
    (``percent`` of the platform's hosts or a number of ``hosts``), noise off."""

    name: str = "base"
    speed: tuple[tuple[str, float], ...] = ()
    drop_percent: float | None = None
    drop_hosts: int | None = None
    noise: bool = True
    spatial_variability: float | None = None  # a population model's spread scales (docs/population.md)
    temporal_variability: float | None = None
    noise_family: str | None = None  # a population model's within-run noise family

    @property
    def is_base(self) -> bool:
        return (not self.speed and self.drop_percent is None and self.drop_hosts is None and self.noise
                and self.spatial_variability is None and self.temporal_variability is None
                and self.noise_family is None)


@dataclass(frozen=True)
class SweepSpec:
    """A normalised spec: value lists per HPL axis, grids (explicit pairs and/or "all
    grids with P·Q = r" for r in `ranks`, None meaning the platform's slot count), seeds,
    the base platform and model (None: the built-in default) and their variations."""

    source: str
    text: str
    axes: dict[str, tuple] = field(default_factory=dict)
    grids: tuple[tuple[int, int], ...] = ()
    ranks: tuple[int | None, ...] = ()
    seeds: tuple[int, ...] = (0,)
    platform_path: Path | None = None
    ranks_per_host: int | None = None
    platform_variations: tuple[PlatformVariation, ...] = (PlatformVariation(),)
    model_path: Path | None = None
    model_variations: tuple[ModelVariation, ...] = (ModelVariation(),)
    timeout: float | None = None
    name: str = ""

    def with_overrides(self, platform: Path | None = None, ranks_per_host: int | None = None,
                       model: Path | None = None, seeds: tuple[int, ...] | None = None,
                       timeout: float | None = None) -> "SweepSpec":
        """The command line's --platform/--model/--seeds/--timeout replace the spec's."""
        changes: dict[str, Any] = {}
        if platform is not None:
            changes["platform_path"] = Path(platform)
        if ranks_per_host is not None:
            changes["ranks_per_host"] = ranks_per_host
        if model is not None:
            changes["model_path"] = Path(model)
        if seeds is not None:
            changes["seeds"] = tuple(seeds)
        if timeout is not None:
            changes["timeout"] = timeout
        return dataclasses.replace(self, **changes)


# ------------------------------------------------------------------------------ values


def _int(value: Any, source: str, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        raise _fail(source, where, f"{value!r} is not an integer")
    value = int(value)
    if minimum is not None and value < minimum:
        raise _fail(source, where, f"{value} is below {minimum}")
    return value


def _number(value: Any, source: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(source, where, f"{value!r} is not a number")
    return float(value)


def _range(doc: Mapping, source: str, where: str) -> list[int]:
    """``{from: 1000, to: 5000, step: 1000}`` (arithmetic) or ``{from: 1000, to: 8000,
    factor: 2}`` (geometric); both ends included when reached."""
    unknown = set(doc) - {"from", "to", "step", "factor"}
    if unknown:
        raise _fail(source, where, f"unknown range field(s) {', '.join(sorted(map(str, unknown)))} "
                                   "(a range is {from: A, to: B, step: S} or {from: A, to: B, factor: F})")
    if "from" not in doc or "to" not in doc:
        raise _fail(source, where, "a range needs 'from' and 'to'")
    lo, hi = _int(doc["from"], source, f"{where}.from"), _int(doc["to"], source, f"{where}.to")
    if hi < lo:
        raise _fail(source, where, f"range 'to' ({hi}) is below 'from' ({lo})")
    if ("step" in doc) == ("factor" in doc):
        raise _fail(source, where, "a range needs exactly one of 'step' and 'factor'")
    values: list[int] = []
    if "step" in doc:
        step = _int(doc["step"], source, f"{where}.step", minimum=1)
        count = (hi - lo) // step + 1
        if count > MAX_VALUES:
            raise _fail(source, where, f"range gives {count} values (at most {MAX_VALUES})")
        values = list(range(lo, hi + 1, step))
    else:
        factor = _number(doc["factor"], source, f"{where}.factor")
        if factor <= 1 or lo < 1:
            raise _fail(source, where, "a geometric range needs factor > 1 and from >= 1")
        x = float(lo)
        while round(x) <= hi:
            if not values or round(x) != values[-1]:
                values.append(round(x))
            x *= factor
    return values


def _values(raw: Any, source: str, where: str) -> list[Any]:
    """A scalar, a list, or a range mapping -> list of raw values."""
    if isinstance(raw, Mapping):
        return _range(raw, source, where)
    if isinstance(raw, list):
        if not raw:
            raise _fail(source, where, "empty list")
        if len(raw) > MAX_VALUES:
            raise _fail(source, where, f"{len(raw)} values (at most {MAX_VALUES})")
        return raw
    if raw is None:
        raise _fail(source, where, "no value")
    return [raw]


def _axis(name: str, raw: Any, source: str) -> tuple:
    where = f"hpl.{name}"
    parameter = PARAMETER[name]
    out = []
    for i, v in enumerate(_values(raw, source, where)):
        w = f"{where}[{i}]" if isinstance(raw, list) else where
        if parameter.type is bool:
            if not isinstance(v, bool):
                raise _fail(source, w, f"{v!r} is not true/false")
        elif isinstance(v, str) and parameter.codes:
            # codes may also be given by HPL's names (case-insensitive), e.g. bcast: [1ring, 2ringM]
            codes = {label.lower(): code for code, label in parameter.codes.items()}
            if v.lower() not in codes:
                raise _fail(source, w, f"unknown {name.upper()} {v!r} (known: {parameter.codes_text()})")
            v = codes[v.lower()]
        else:
            v = _int(v, source, w)
        try:
            parameter.check(v)
        except HplsimError as exc:
            raise _fail(source, w, str(exc)) from None
        out.append(v)
    return tuple(dict.fromkeys(out))  # duplicates would only run the same thing twice


def _grid(raw: Any, source: str, where: str) -> tuple[int, int]:
    if isinstance(raw, str) and "x" in raw.lower():
        parts: Any = raw.lower().split("x")
        try:
            parts = [int(p) for p in parts]
        except ValueError:
            raise _fail(source, where, f"{raw!r} is not a grid like [2, 4] or '2x4'") from None
    elif isinstance(raw, list):
        parts = raw
    else:
        raise _fail(source, where, f"{raw!r} is not a grid like [2, 4] or '2x4'")
    if len(parts) != 2:
        raise _fail(source, where, f"a grid is [P, Q], got {raw!r}")
    return _int(parts[0], source, f"{where}.P", 1), _int(parts[1], source, f"{where}.Q", 1)


def grids_for(ranks: int) -> list[tuple[int, int]]:
    """Every P x Q with P <= Q and P·Q = ranks (HPL prefers P <= Q)."""
    return [(p, ranks // p) for p in range(1, math.isqrt(ranks) + 1) if ranks % p == 0]


def _ranks(raw: Any, source: str, where: str) -> tuple[int | None, ...]:
    if raw == "all":
        return (None,)
    return tuple(dict.fromkeys(_int(v, source, where, 1) for v in _values(raw, source, where)))


def _mapping(raw: Any, source: str, where: str, allowed: set[str]) -> Mapping:
    if not isinstance(raw, Mapping):
        raise _fail(source, where, "expected a mapping")
    unknown = set(map(str, raw)) - allowed
    if unknown:
        raise _fail(source, where, f"unknown field(s) {', '.join(sorted(unknown))} "
                                   f"(known: {', '.join(sorted(allowed))})")
    return raw


def _path(raw: Any, base: Path, source: str, where: str) -> Path:
    if not isinstance(raw, str) or not raw:
        raise _fail(source, where, f"{raw!r} is not a file path")
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else base / path  # relative to the spec's directory
    if not path.exists():
        raise _fail(source, where, f"file {path} does not exist")
    return path


def _factor_or_quantity(raw: Any, source: str, where: str) -> float | str:
    if isinstance(raw, str):
        return raw  # an absolute quantity with its unit, checked when the platform is built
    value = _number(raw, source, where)
    if value <= 0:
        raise _fail(source, where, f"a factor must be positive, got {raw!r}")
    return value


def _variation_name(fields: Mapping[str, Any]) -> str:
    """A readable default name, e.g. ``bandwidth x2, nodes=64``."""
    parts = []
    for k, v in fields.items():
        parts.append(f"{k} x{v:g}" if isinstance(v, float) else f"{k}={v}")
    return ", ".join(parts) or "base"


def _platform_variation(raw: Any, source: str, where: str) -> PlatformVariation:
    doc = _mapping(raw or {}, source, where, _PLATFORM_VARIATION_FIELDS)
    fields: dict[str, Any] = {}
    for key in ("bandwidth", "latency", "loopback_bandwidth"):
        if doc.get(key) is not None:
            fields[key] = _factor_or_quantity(doc[key], source, f"{where}.{key}")
    if doc.get("nodes") is not None:
        fields["nodes"] = _int(doc["nodes"], source, f"{where}.nodes", 1)
    if doc.get("topology") is not None:
        if doc["topology"] not in ("star", "fat-tree"):
            raise _fail(source, f"{where}.topology", f"{doc['topology']!r} is not star or fat-tree")
        fields["topology"] = doc["topology"]
        if doc["topology"] == "fat-tree":
            if not doc.get("fat_tree"):
                raise _fail(source, where, "a fat-tree needs 'fat_tree' (SimGrid's topo_parameters, "
                                           "e.g. \"2;4,8;1,2;1,2\")")
    if doc.get("fat_tree") is not None:
        if doc.get("topology") != "fat-tree":
            raise _fail(source, where, "'fat_tree' goes with topology: fat-tree")
        fields["fat_tree"] = str(doc["fat_tree"])
    if doc.get("sharing_policy") is not None:
        policy = str(doc["sharing_policy"]).upper()
        if policy not in ("SHARED", "SPLITDUPLEX", "FATPIPE"):
            raise _fail(source, f"{where}.sharing_policy", f"{doc['sharing_policy']!r} is not SHARED, "
                                                            "SPLITDUPLEX or FATPIPE")
        fields["sharing_policy"] = policy
    if doc.get("iprobe_reports") is not None:
        if doc["iprobe_reports"] not in IPROBE_REPORTS:
            raise _fail(source, f"{where}.iprobe_reports", f"{doc['iprobe_reports']!r} is not "
                                                            f"{' or '.join(IPROBE_REPORTS)}")
        fields["iprobe_reports"] = doc["iprobe_reports"]
    name = str(doc["name"]) if doc.get("name") is not None else _variation_name(fields)
    return PlatformVariation(name=name, **fields)


def _model_variation(raw: Any, source: str, where: str) -> ModelVariation:
    doc = _mapping(raw or {}, source, where, _MODEL_VARIATION_FIELDS)
    speed: list[tuple[str, float]] = []
    described: dict[str, Any] = {}
    if doc.get("speed") is not None:
        raw_speed = doc["speed"]
        items = raw_speed.items() if isinstance(raw_speed, Mapping) else [("*", raw_speed)]
        for pattern, factor in items:
            value = _number(factor, source, f"{where}.speed.{pattern}")
            if value <= 0:
                raise _fail(source, f"{where}.speed.{pattern}", f"a speed factor must be positive, got {factor!r}")
            speed.append((str(pattern), value))
        described["speed"] = ", ".join(f"{p} x{v:g}" for p, v in speed)
    drop_percent = drop_hosts = None
    if doc.get("drop_slowest") is not None:
        d = doc["drop_slowest"]
        w = f"{where}.drop_slowest"
        if isinstance(d, Mapping):
            d = _mapping(d, source, w, {"percent", "hosts"})
            if len(d) != 1:
                raise _fail(source, w, "give either 'percent' or 'hosts'")
            if "hosts" in d:
                drop_hosts = _int(d["hosts"], source, f"{w}.hosts", 1)
            else:
                d = d["percent"]
        if drop_hosts is None:
            drop_percent = _number(d, source, w)
            if not 0 < drop_percent < 100:
                raise _fail(source, w, f"a percentage of hosts must be in (0, 100), got {d!r}")
        described["drop"] = (f"{drop_hosts} slowest host{'s' if drop_hosts > 1 else ''}" if drop_hosts
                             else f"{drop_percent:g}% slowest hosts")
    noise = True
    if doc.get("noise") is not None:
        if not isinstance(doc["noise"], bool):
            raise _fail(source, f"{where}.noise", "expected true or false")
        noise = doc["noise"]
        if not noise:
            described["noise"] = "off"
    scales: dict[str, float] = {}
    for key in ("spatial_variability", "temporal_variability"):
        if doc.get(key) is not None:
            value = _number(doc[key], source, f"{where}.{key}")
            if value < 0:
                raise _fail(source, f"{where}.{key}", f"must be at least 0, got {doc[key]!r}")
            scales[key] = value
            described[key.split("_")[0]] = f"x{value:g}"
    family = None
    if doc.get("noise_family") is not None:
        family = str(doc["noise_family"])
        if family not in ("none", "normal", "halfnormal", "mixture"):
            raise _fail(source, f"{where}.noise_family", f"{family!r} is not none, normal, halfnormal or mixture")
        described["noise"] = family
    name = str(doc["name"]) if doc.get("name") is not None else (
        "; ".join(f"{k} {v}" for k, v in described.items()) or "base")
    return ModelVariation(name, tuple(speed), drop_percent, drop_hosts, noise, noise_family=family, **scales)


def _variations(raw: Any, source: str, where: str, parse) -> tuple:
    if not isinstance(raw, list) or not raw:
        raise _fail(source, where, "expected a non-empty list of variations (use {} for the unchanged one)")
    out = [parse(v, source, f"{where}[{i}]") for i, v in enumerate(raw)]
    names = [v.name for v in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise _fail(source, where, f"two variations are named {dup!r}: give them distinct names")
    return tuple(out)


# -------------------------------------------------------------------------------- spec


def parse_spec(doc: Any, source: str = "<spec>", base: Path = Path("."), text: str = "") -> SweepSpec:
    if not isinstance(doc, Mapping):
        raise _fail(source, "", "the top level must be a mapping with at least 'hpl'")
    unknown = set(map(str, doc)) - _TOP_FIELDS
    if unknown:
        raise _fail(source, "", f"unknown field(s) {', '.join(sorted(unknown))} "
                                f"(known: {', '.join(sorted(_TOP_FIELDS))})")
    hpl = doc.get("hpl")
    if not isinstance(hpl, Mapping) or not hpl:
        raise _fail(source, "hpl", "expected a mapping of HPL parameters (at least n)")
    hpl = {str(k).lower(): v for k, v in hpl.items()}  # N, NB, BCAST ... as in HPL.dat
    allowed = set(HPL_AXES) | {"grids", "ranks"}
    unknown = set(hpl) - allowed
    if unknown:
        raise _fail(source, "hpl", f"unknown parameter(s) {', '.join(sorted(unknown))} "
                                   f"(known: {', '.join(sorted(allowed))})")
    if "n" not in hpl:
        raise _fail(source, "hpl", "the problem size n is required")
    axes = {name: _axis(name, hpl[name], source) for name in HPL_AXES if name in hpl}

    if "ranks" in hpl and "ranks" in doc:
        raise _fail(source, "ranks", "give ranks either at the top level or under hpl, not both")
    ranks_raw = hpl.get("ranks", doc.get("ranks"))
    grids_raw = hpl.get("grids")
    grids: tuple[tuple[int, int], ...] = ()
    ranks: tuple[int | None, ...] = ()
    if grids_raw == "all":
        ranks = _ranks(ranks_raw, source, "ranks") if ranks_raw is not None else (None,)
    else:
        if grids_raw is not None:
            if not isinstance(grids_raw, list) or not grids_raw:
                raise _fail(source, "hpl.grids", "expected a list of [P, Q] pairs, or 'all'")
            grids = tuple(dict.fromkeys(_grid(g, source, f"hpl.grids[{i}]") for i, g in enumerate(grids_raw)))
        if ranks_raw is not None:
            ranks = _ranks(ranks_raw, source, "ranks")
    if not grids and not ranks:
        grids = ((1, 1),)

    seeds = (0,)
    if doc.get("seeds") is not None:
        seeds = tuple(dict.fromkeys(_int(s, source, "seeds", 0) for s in _values(doc["seeds"], source, "seeds")))
        if any(s >= 2**64 for s in seeds):
            raise _fail(source, "seeds", "a seed must be below 2**64 (the emulation's seeds are unsigned 64-bit)")

    platform_path, ranks_per_host, pvars = None, None, (PlatformVariation(),)
    raw = doc.get("platform")
    if isinstance(raw, list):  # shorthand: the variations of the built-in platform
        raw = {"variations": raw}
    if isinstance(raw, str):
        platform_path = _path(raw, base, source, "platform")
    elif raw is not None:
        p = _mapping(raw, source, "platform", _PLATFORM_FIELDS)
        if p.get("path") is not None:
            platform_path = _path(p["path"], base, source, "platform.path")
        if p.get("ranks_per_host") is not None:
            ranks_per_host = _int(p["ranks_per_host"], source, "platform.ranks_per_host", 1)
        if "variations" in p:
            pvars = _variations(p["variations"], source, "platform.variations", _platform_variation)

    model_path, mvars = None, (ModelVariation(),)
    raw = doc.get("model")
    if isinstance(raw, list):  # shorthand: the variations of the built-in model
        raw = {"variations": raw}
    if isinstance(raw, str):
        model_path = _path(raw, base, source, "model")
    elif raw is not None:
        m = _mapping(raw, source, "model", _MODEL_FIELDS)
        if m.get("path") is not None:
            model_path = _path(m["path"], base, source, "model.path")
        if "variations" in m:
            mvars = _variations(m["variations"], source, "model.variations", _model_variation)

    timeout = None
    if doc.get("timeout") is not None:
        timeout = _number(doc["timeout"], source, "timeout")
        if timeout <= 0:
            raise _fail(source, "timeout", "must be positive (seconds)")
    return SweepSpec(source, text, axes, grids, ranks, seeds, platform_path, ranks_per_host, pvars,
                     model_path, mvars, timeout, str(doc.get("name") or ""))


def spec_from_params(params: HplParams, source: str, text: str) -> SweepSpec:
    """An HPL.dat's lists as a spec: every combination, HPL's pairing of Ps and Qs."""
    axes = {name: params.values(name) for name in HPL_AXES}
    return SweepSpec(source, text, axes, tuple(dict.fromkeys(params.grids)), ())


def is_hpl_dat(path: Path, text: str) -> bool:
    return path.suffix.lower() == ".dat" or text.lstrip().startswith("HPLinpack")


def load_spec(path: Path) -> SweepSpec:
    """A sweep spec from a YAML file or an HPL.dat (decided by suffix or first line)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise HplsimError(f"cannot read sweep spec {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise HplsimError(f"sweep spec {path}: not a text file") from None
    if is_hpl_dat(path, text):
        return spec_from_params(read_hpl_dat(path), str(path), text)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise HplsimError(f"sweep spec {path}: not valid YAML{where}") from None
    return parse_spec(doc, str(path), path.resolve().parent, text)


def hpl_combinations(spec: SweepSpec) -> list[dict[str, Any]]:
    """Every combination of the listed HPL values (without the grid), in loop order."""
    names = [a for a in HPL_AXES if a in spec.axes]
    return [dict(zip(names, values)) for values in itertools.product(*(spec.axes[a] for a in names))]
