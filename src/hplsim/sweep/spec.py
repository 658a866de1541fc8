"""The sweep spec: what to run, read from YAML (format in docs/sweep.md) or from an HPL.dat.

Parsing only checks and normalises; nothing is expanded or written here (see `plan`).
Every problem is reported with the path of the offending field, e.g.
``sweep spec s.yaml: hpl.nb[1]: 'x' is not an integer``. The top level, the platform and
model sections and their variations are declared once (`SPEC`, `PLATFORM_SECTION`,
`PLATFORM_VARIATION`, `MODEL_SECTION`, `MODEL_VARIATION`) and read by `hplsim.formats`:
``sweep spec s.yaml: model.variations[0].speed: expected a positive speed factor …, got 0``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping


from hplsim import formats
from hplsim.errors import HplsimError
from hplsim.formats import Field, Invalid, Record
from hplsim.hpl.config import HplParams
from hplsim.hpl.hpldat import read_hpl_dat
from hplsim.hpl.parameters import LOOP_ORDER, PARAMETER, SINGLE
from hplsim.platform.spec import IPROBE_REPORTS, SHARING_POLICIES, TOPOLOGIES

#: HPL parameters a spec may list, in the order the sweep loops over them (HPL's own
#: loop order first, then what HPL.dat only takes one value of); the grid is apart.
HPL_AXES = (*(p.name for p in LOOP_ORDER if p.list_field != "grids"), *(p.name for p in SINGLE))
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
        return all(getattr(self, f) is None for f in PLATFORM_VARIATION.fields if f != "name")


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


def _file(raw: Any) -> str:
    if not isinstance(raw, str) or not raw:
        raise Invalid("a file path")
    return raw


def _existing(raw: str, base: Path, source: str, where: str) -> Path:
    path = Path(raw).expanduser()
    path = path if path.is_absolute() else base / path  # relative to the spec's directory
    if not path.exists():
        raise formats.error(f"sweep spec {source}", where, "an existing file (a relative path starts at the spec's "
                            "folder)", shown_as=f"{raw!r} ({path} does not exist)")
    return path


_FACTOR = "a positive factor (2: twice as fast) or an absolute value with its unit (25GBps)"


def _factor_or_quantity(raw: Any) -> float | str:
    if isinstance(raw, str):
        return raw  # an absolute quantity with its unit, checked when the platform is built
    return formats.number(positive=True, strings=False, what=_FACTOR)(raw)


def _fat_tree(raw: Any) -> str:
    if not raw:
        raise Invalid("SimGrid's topo_parameters, e.g. \"2;4,8;1,2;1,2\"")
    return str(raw)


def _variation_list(raw: Any) -> list:
    if not isinstance(raw, list) or not raw:
        raise Invalid("a non-empty list of variations (use {} for the unchanged one)",
                      got=None if isinstance(raw, list) else "nothing" if raw is None else type(raw).__name__)
    return raw


#: One what-if on the platform (docs/sweep.md), declared once. Fields in the order of a
#: variation's default name.
PLATFORM_VARIATION = Record({
    "name": Field(str, "a name"),
    "bandwidth": Field(_factor_or_quantity, _FACTOR),
    "latency": Field(_factor_or_quantity, _FACTOR),
    "loopback_bandwidth": Field(_factor_or_quantity, _FACTOR),
    "nodes": Field(formats.integer(1, floats=True), "a positive integer"),
    "topology": Field(formats.one_of(TOPOLOGIES), "one of " + ", ".join(TOPOLOGIES)),
    "fat_tree": Field(_fat_tree, "SimGrid's topo_parameters"),
    "sharing_policy": Field(formats.one_of(SHARING_POLICIES, str.upper), "one of " + ", ".join(SHARING_POLICIES)),
    "iprobe_reports": Field(formats.one_of(IPROBE_REPORTS), "one of " + ", ".join(IPROBE_REPORTS)),
}, name="a mapping of what-ifs on the platform")

NOISE_FAMILIES = ("none", "normal", "halfnormal", "mixture")
_SPEED = "a positive speed factor (2: kernels take half the time)"
_PERCENT = "a percentage of hosts, in (0, 100)"


def _speed(raw: Any) -> tuple[tuple[str, float], ...]:
    """One factor for every host, or glob pattern -> factor."""
    factor = formats.number(positive=True, strings=False, what=_SPEED)
    if not isinstance(raw, Mapping):
        return (("*", factor(raw)),)
    out = []
    for pattern, value in raw.items():
        try:
            out.append((str(pattern), factor(value)))
        except Invalid as exc:
            raise Invalid(exc.expected, at=pattern) from None
    return tuple(out)


def _percent(raw: Any) -> float:
    value = formats.number(strings=False, what=_PERCENT)(raw)
    if not 0 < value < 100:
        raise Invalid(_PERCENT)
    return value


def _drop(raw: Any) -> tuple[float | None, int | None]:
    """(percent, None) or (None, hosts): ``10``, ``{percent: 10}`` or ``{hosts: 2}``."""
    if not isinstance(raw, Mapping):
        return _percent(raw), None
    if set(map(str, raw)) - {"percent", "hosts"} or len(raw) != 1:
        raise Invalid("either {percent: P} or {hosts: N}", got=formats.shown(dict(raw)))
    key = next(iter(raw))
    try:
        if key == "hosts":
            return None, formats.integer(1, floats=True)(raw[key])
        return _percent(raw[key]), None
    except Invalid as exc:
        raise Invalid(exc.expected, at=key) from None


def _bool(raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise Invalid("true or false")
    return raw


#: One what-if on the kernels (docs/sweep.md), declared once.
MODEL_VARIATION = Record({
    "name": Field(str, "a name"),
    "speed": Field(_speed, _SPEED + ", or a mapping of host pattern -> factor"),
    "drop_slowest": Field(_drop, _PERCENT + ", or {hosts: N}"),
    "noise": Field(_bool, "true or false"),
    "spatial_variability": Field(formats.number(minimum=0, strings=False), "a finite number >= 0"),
    "temporal_variability": Field(formats.number(minimum=0, strings=False), "a finite number >= 0"),
    "noise_family": Field(formats.one_of(NOISE_FAMILIES), "one of " + ", ".join(NOISE_FAMILIES)),
}, name="a mapping of what-ifs on the kernels")

#: The spec's platform: and model: sections in their mapping form (a path alone, or a list
#: of variations alone, is a shorthand for one of these).
PLATFORM_SECTION = Record({
    "path": Field(_file, "a file path"),
    "ranks_per_host": Field(formats.integer(1, floats=True), "a positive integer"),
    "variations": Field(_variation_list, "a list of variations", null_is_absent=False),
}, name="a platform file, a list of variations, or a mapping of path, ranks_per_host, variations",
    optional=False)
MODEL_SECTION = Record({
    "path": Field(_file, "a file path"),
    "variations": Field(_variation_list, "a list of variations", null_is_absent=False),
}, name="a model file, a list of variations, or a mapping of path, variations", optional=False)

_ANY = Field(lambda v: v, "")  # read by its own code below (hpl:, ranks, seeds) or as a section
#: The spec's top level (docs/sweep.md).
SPEC = Record({
    "name": Field(lambda v: v, "a name"),
    "description": Field(lambda v: v, "any text"),
    "hpl": _ANY, "ranks": _ANY, "seeds": _ANY, "platform": _ANY, "model": _ANY,
    "timeout": Field(formats.number(positive=True, strings=False, what="a positive number of seconds"),
                     "a positive number of seconds", unit="s"),
}, name="a mapping with at least 'hpl'", optional=False)
SEED = formats.integer(0, 2**64 - 1, floats=True,
                       what="an integer in 0 .. 2**64-1 (the emulation's seeds are unsigned 64-bit)")


def _variation_name(fields: Mapping[str, Any]) -> str:
    """A readable default name, e.g. ``bandwidth x2, nodes=64``."""
    parts = []
    for k, v in fields.items():
        parts.append(f"{k} x{v:g}" if isinstance(v, float) else f"{k}={v}")
    return ", ".join(parts) or "base"


def _platform_variation(raw: Any, source: str, where: str) -> PlatformVariation:
    d = formats.read(PLATFORM_VARIATION, raw, f"sweep spec {source}", where)
    fields = {k: v for k, v in d.items() if k != "name" and v is not None}
    if d["topology"] in ("fat-tree", "fat-tree-star") and d["fat_tree"] is None:
        raise formats.error(f"sweep spec {source}", f"{where}.fat_tree", "SimGrid's topo_parameters, e.g. "
                            "\"2;4,8;1,2;1,2\" (a fat-tree needs 'fat_tree')", shown_as="nothing")
    if d["fat_tree"] is not None and d["topology"] not in ("fat-tree", "fat-tree-star"):
        raise formats.error(f"sweep spec {source}", f"{where}.topology", "fat-tree or fat-tree-star ('fat_tree' goes "
                            "with those topologies)", d["topology"], shown_as=None if d["topology"] else "nothing")
    name = d["name"] if d["name"] is not None else _variation_name(fields)
    return PlatformVariation(name=name, **fields)


def _model_variation(raw: Any, source: str, where: str) -> ModelVariation:
    d = formats.read(MODEL_VARIATION, raw, f"sweep spec {source}", where)
    speed = d["speed"] or ()
    described: dict[str, Any] = {}
    if speed:
        described["speed"] = ", ".join(f"{p} x{v:g}" for p, v in speed)
    drop_percent, drop_hosts = d["drop_slowest"] or (None, None)
    if d["drop_slowest"] is not None:
        described["drop"] = (f"{drop_hosts} slowest host{'s' if drop_hosts > 1 else ''}" if drop_hosts
                             else f"{drop_percent:g}% slowest hosts")
    noise = True if d["noise"] is None else d["noise"]
    if not noise:
        described["noise"] = "off"
    scales = {key: d[key] for key in ("spatial_variability", "temporal_variability") if d[key] is not None}
    for key, value in scales.items():
        described[key.split("_")[0]] = f"x{value:g}"
    family = d["noise_family"]
    if family is not None:
        described["noise"] = family
    name = d["name"] if d["name"] is not None else (
        "; ".join(f"{k} {v}" for k, v in described.items()) or "base")
    return ModelVariation(name, tuple(speed), drop_percent, drop_hosts, noise, noise_family=family, **scales)


def _variations(raw: list, source: str, where: str, parse) -> tuple:
    out = [parse(v, source, f"{where}[{i}]") for i, v in enumerate(raw)]
    names = [v.name for v in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise formats.error(f"sweep spec {source}", where, "variations with distinct names",
                            shown_as=f"two variations named {dup!r}")
    return tuple(out)


def _section(raw: Any, record: Record, source: str, where: str) -> dict[str, Any]:
    """The platform: or model: section in its mapping form, shorthands expanded."""
    if isinstance(raw, list):  # the variations of the built-in one
        raw = {"variations": raw}
    return formats.read(record, raw, f"sweep spec {source}", where)


# -------------------------------------------------------------------------------- spec


def parse_spec(doc: Any, source: str = "<spec>", base: Path = Path("."), text: str = "") -> SweepSpec:
    top = formats.read(SPEC, doc, f"sweep spec {source}")
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
        raw_seeds = doc["seeds"]
        listed = _values(raw_seeds, source, "seeds")
        checked = []
        for i, value in enumerate(listed):
            try:
                checked.append(SEED(value))
            except Invalid as exc:
                raise formats.error(f"sweep spec {source}", f"seeds[{i}]" if isinstance(raw_seeds, list) else "seeds",
                                    exc.expected, value) from None
        seeds = tuple(dict.fromkeys(checked))

    platform_path, ranks_per_host, pvars = None, None, (PlatformVariation(),)
    raw = doc.get("platform")
    if raw is not None:
        p = _section({"path": raw} if isinstance(raw, str) else raw, PLATFORM_SECTION, source, "platform")
        if p["path"] is not None:
            platform_path = _existing(p["path"], base, source, "platform" if isinstance(raw, str) else "platform.path")
        ranks_per_host = p["ranks_per_host"]
        if p["variations"] is not None:
            pvars = _variations(p["variations"], source, "platform.variations", _platform_variation)

    model_path, mvars = None, (ModelVariation(),)
    raw = doc.get("model")
    if raw is not None:
        m = _section({"path": raw} if isinstance(raw, str) else raw, MODEL_SECTION, source, "model")
        if m["path"] is not None:
            model_path = _existing(m["path"], base, source, "model" if isinstance(raw, str) else "model.path")
        if m["variations"] is not None:
            mvars = _variations(m["variations"], source, "model.variations", _model_variation)

    return SweepSpec(source, text, axes, grids, ranks, seeds, platform_path, ranks_per_host, pvars,
                     model_path, mvars, top["timeout"], str(doc.get("name") or ""))


def spec_from_params(params: HplParams, source: str, text: str) -> SweepSpec:
    """An HPL.dat's lists as a spec: every combination, HPL's pairing of Ps and Qs."""
    axes = {name: params.values(name) for name in HPL_AXES}
    return SweepSpec(source, text, axes, tuple(dict.fromkeys(params.grids)), ())


def is_hpl_dat(path: Path, text: str) -> bool:
    return path.suffix.lower() == ".dat" or text.lstrip().startswith("HPLinpack")


def load_spec(path: Path) -> SweepSpec:
    """A sweep spec from a YAML file or an HPL.dat (decided by suffix or first line)."""
    path = Path(path)
    text = formats.read_text(path, "sweep spec")
    if is_hpl_dat(path, text):
        return spec_from_params(read_hpl_dat(path), str(path), text)
    doc = formats.parse_yaml(text, f"sweep spec {path}")
    return parse_spec(doc, str(path), path.resolve().parent, text)


def hpl_combinations(spec: SweepSpec) -> list[dict[str, Any]]:
    """Every combination of the listed HPL values (without the grid), in loop order."""
    names = [a for a in HPL_AXES if a in spec.axes]
    return [dict(zip(names, values)) for values in itertools.product(*(spec.axes[a] for a in names))]
