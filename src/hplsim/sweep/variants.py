"""What-if variants: the base platform and model transformed by the spec's variations.

A variant is a (platform, model) pair that `predict` runs as is. Transformations:

- platform: bandwidth / latency / loopback bandwidth (factor or absolute), node count,
  topology (star / fat-tree / fat-tree-star, the last on a spec only), sharing policy — on a platform spec (YAML) by changing its
  fields, on a SimGrid XML by editing the attributes of its ``<cluster>`` / ``<link>``
  elements (node count and topology only for an XML with a single cluster);
- model: per-host speed factors (kernel durations divided by the factor, noise included),
  noise off, and dropping the slowest hosts (by expected dgemm duration at a reference
  size): their rank slots are removed from the platform, the model is unchanged.

A derived model or platform is written into the sweep's work area (``<db>.files/``) under
a name made of its digest, so that any stored run can be re-run with ``hplsim predict``
and so that its digest (part of every run's key) is that of a file one can read.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
import re
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


from hplsim.errors import HplsimError
from hplsim.formats import parse_yaml, read_text
from hplsim.models.modelfile import Component, HostModel, KernelModel, ModelFile, Piece, Polynomial, save_model
from hplsim.models.population import with_noise_family, with_variability
from hplsim.platform.spec import (Platform, PlatformSpec, bandwidth, duration, fat_tree_leaves, platform_from_xml,
                                  spec_from_dict)
from hplsim.predict import ModelSource
from hplsim.presets import DEFAULT
from hplsim.sweep.spec import ModelVariation, PlatformVariation, SweepSpec

#: dgemm sizes (M, N, K) at which hosts are ranked for "drop the slowest": a trailing
#: update of HPL with NB = 128, where almost all of HPL's time goes.
REFERENCE_DGEMM = {"m": 2048, "n": 2048, "k": 128}


@dataclass(frozen=True)
class Variant:
    """One platform x model combination, ready to run, with what identifies it."""

    platform: Platform
    model: ModelSource
    platform_variation: str
    model_variation: str
    platform_digest: str
    note: str = ""  # e.g. which hosts were dropped

    @property
    def label(self) -> str:
        return f"{self.platform.label} [{self.platform_variation}] / {self.model.label} [{self.model_variation}]"


# ------------------------------------------------------------------------------- base


@dataclass(frozen=True)
class _BasePlatform:
    """The base platform and what is needed to vary it: its YAML spec or XML text."""

    platform: Platform
    spec: PlatformSpec | None
    xml: str | None
    ranks_per_host: int | None


def _base_platform(spec: SweepSpec) -> _BasePlatform:
    if spec.platform_path is None:
        rph = spec.ranks_per_host or DEFAULT.ranks_per_host
        platform = DEFAULT.load_platform(rph)  # the same label, semantics and digest as `hplsim predict`
        return _BasePlatform(platform, None, platform.xml, rph)
    path = spec.platform_path
    text = read_text(path, "platform file")
    if text.lstrip().startswith("<"):
        platform = platform_from_xml(text, str(path), spec.ranks_per_host)
        platform.label = str(path)
        return _BasePlatform(platform, None, text, spec.ranks_per_host)
    pspec = spec_from_dict(parse_yaml(text, f"platform spec {path}"), str(path))
    if spec.ranks_per_host is not None:
        pspec.ranks_per_node = spec.ranks_per_host
    return _BasePlatform(pspec.platform(str(path)), pspec, None, spec.ranks_per_host)


def _base_model(spec: SweepSpec) -> ModelSource:
    if spec.model_path is None:
        return ModelSource.from_path(DEFAULT.model, f"builtin:{DEFAULT.name}")
    return ModelSource.from_path(spec.model_path, str(spec.model_path))


# --------------------------------------------------------------------------- platform


def _scaled(value: float, change: float | str, convert, what: str) -> float:
    """A factor multiplies bandwidths and latencies alike (latency x0.5 = half the latency)."""
    return convert(change, what) if isinstance(change, str) else value * change


def _vary_spec(base: PlatformSpec, v: PlatformVariation, where: str) -> PlatformSpec:
    s = dataclasses.replace(base, smpi=dict(base.smpi))
    if v.bandwidth is not None:
        s.bandwidth = _scaled(s.bandwidth, v.bandwidth, bandwidth, f"{where}.bandwidth")
        if s.backbone_bandwidth is not None and not isinstance(v.bandwidth, str):
            s.backbone_bandwidth *= v.bandwidth
        if s.limiter_bandwidth is not None and not isinstance(v.bandwidth, str):
            s.limiter_bandwidth *= v.bandwidth
    if v.latency is not None:
        s.latency = _scaled(s.latency, v.latency, duration, f"{where}.latency")
    if v.loopback_bandwidth is not None:
        if s.loopback_bandwidth is None and not isinstance(v.loopback_bandwidth, str):
            raise HplsimError(f"{where}: the platform has no loopback_bandwidth to scale; give an absolute value")
        s.loopback_bandwidth = _scaled(s.loopback_bandwidth or 0.0, v.loopback_bandwidth, bandwidth,
                                       f"{where}.loopback_bandwidth")
    if v.nodes is not None:
        s.nodes = v.nodes
    if v.topology is not None:
        s.topology, s.fat_tree = v.topology, v.fat_tree
    if v.sharing_policy is not None:
        s.sharing_policy = v.sharing_policy
    if s.topology in ("fat-tree", "fat-tree-star") and fat_tree_leaves(s.fat_tree or "", where) != s.nodes:
        raise HplsimError(f"{where}: fat_tree {s.fat_tree!r} has {fat_tree_leaves(s.fat_tree or '', where)} "
                          f"leaves but the platform has {s.nodes} nodes")
    return s


_ATTR = r'(\s{name}\s*=\s*)(["\'])(.*?)\2'


def _edit(tag: str, name: str, change) -> str:
    """Tag text with attribute `name` set to change(old value or None) (None: removed)."""
    pattern = re.compile(_ATTR.format(name=re.escape(name)))
    m = pattern.search(tag)
    new = change(m.group(3) if m else None)
    if m:
        return tag[:m.start()] + ("" if new is None else f'{m.group(1)}"{new}"') + tag[m.end():]
    if new is None:
        return tag
    end = len(tag) - (2 if tag.endswith("/>") else 1)
    return f'{tag[:end]} {name}="{new}"{tag[end:]}'


def _vary_xml(xml: str, v: PlatformVariation, where: str) -> str:
    def bw(attr_change):
        return lambda old: None if old is None else f"{_scaled(bandwidth(old, where, bare=True), attr_change, bandwidth, where)!r}Bps"

    def lat(attr_change):
        return lambda old: None if old is None else f"{_scaled(duration(old, where, bare=True), attr_change, duration, where)!r}s"

    if v.topology == "fat-tree-star":
        raise HplsimError(f"{where}: topology fat-tree-star takes a platform spec (YAML) as its base: it writes the "
                          "SMPI factors as per-route factors, which a SimGrid XML's edit does not")
    clusters = re.findall(r"<cluster\b[^>]*>", xml)
    if (v.nodes is not None or v.topology is not None) and (len(clusters) != 1 or re.search(r"<host\b", xml)):
        raise HplsimError(f"{where}: changing the node count or topology of a SimGrid XML needs a platform "
                          "with a single <cluster> (use a platform spec for other layouts)")

    def cluster(m: re.Match) -> str:
        tag = m.group(0)
        if v.bandwidth is not None:
            for attr in ("bw", "bb_bw", "limiter_link"):
                tag = _edit(tag, attr, bw(v.bandwidth))
        if v.latency is not None:
            for attr in ("lat", "bb_lat"):
                tag = _edit(tag, attr, lat(v.latency))
        if v.loopback_bandwidth is not None:
            if not re.search(_ATTR.format(name="loopback_bw"), tag) and not isinstance(v.loopback_bandwidth, str):
                raise HplsimError(f"{where}: the platform has no loopback_bw to scale; give an absolute value")
            tag = _edit(tag, "loopback_bw", lambda old: f"{_scaled(bandwidth(old or 0, where, bare=True), v.loopback_bandwidth, bandwidth, where)!r}Bps")
        if v.nodes is not None:
            tag = _edit(tag, "radical", lambda old: f"0-{v.nodes - 1}")
        if v.topology == "fat-tree":
            tag = _edit(tag, "topology", lambda old: "FAT_TREE")
            tag = _edit(tag, "topo_parameters", lambda old: v.fat_tree)
        elif v.topology == "star":
            tag = _edit(tag, "topology", lambda old: None)
            tag = _edit(tag, "topo_parameters", lambda old: None)
        if v.sharing_policy is not None:
            tag = _edit(tag, "sharing_policy", lambda old: v.sharing_policy)
        return tag

    def link(m: re.Match) -> str:
        tag = m.group(0)
        if v.bandwidth is not None:
            tag = _edit(tag, "bandwidth", bw(v.bandwidth))
        if v.latency is not None:
            tag = _edit(tag, "latency", lat(v.latency))
        if v.sharing_policy is not None:
            tag = _edit(tag, "sharing_policy", lambda old: v.sharing_policy)
        return tag

    out = re.sub(r"<cluster\b[^>]*>", cluster, xml)
    out = re.sub(r"<(?:link|backbone)\b[^>]*>", link, out)
    if v.topology == "fat-tree":
        radical = re.search(r'radical\s*=\s*"([^"]*)"', re.findall(r"<cluster\b[^>]*>", out)[0])
        count = len(_expand(radical.group(1))) if radical else 0
        if fat_tree_leaves(v.fat_tree or "", where) != count:
            raise HplsimError(f"{where}: fat_tree {v.fat_tree!r} has {fat_tree_leaves(v.fat_tree or '', where)} "
                              f"leaves but the cluster has {count} nodes")
    return out


def _expand(radical: str) -> list[str]:
    out: list[str] = []
    for part in radical.split(","):
        lo, _, hi = part.partition("-")
        out += [str(i) for i in range(int(lo), int(hi or lo) + 1)] if part.strip() else []
    return out


def vary_platform(base: _BasePlatform, v: PlatformVariation, where: str) -> Platform:
    if v.is_base:
        return base.platform
    if base.spec is not None:
        p = _vary_spec(base.spec, v, where).platform(base.platform.label)
    else:
        p = platform_from_xml(_vary_xml(base.xml or "", v, where), base.platform.label, base.ranks_per_host)
    p.label = base.platform.label
    # not in SimGrid's XML: set on the platform itself, the base's unless the variation says
    return dataclasses.replace(p, iprobe_reports=v.iprobe_reports or base.platform.iprobe_reports)


# ------------------------------------------------------------------------------ model


def _scale_poly(poly: Polynomial | None, f: float) -> Polynomial | None:
    return None if poly is None else Polynomial(poly.variables, tuple((e, c * f) for e, c in poly.terms))


def scale_kernel(m: KernelModel, f: float) -> KernelModel:
    """Durations (mean and noise alike) multiplied by `f`."""
    comps = tuple(Component(c.weight, _scale_poly(c.shift, f), _scale_poly(c.sigma, f)) for c in m.components)
    pieces = tuple(Piece(p.when, scale_kernel(p.model, f)) for p in m.pieces)
    return KernelModel(m.kernel, _scale_poly(m.mean, f), m.family, _scale_poly(m.sigma, f), comps, pieces)


def speed_factors(hosts: list[str], patterns: tuple[tuple[str, float], ...]) -> dict[str, float]:
    """host -> speed factor of the last pattern matching it (hosts nothing matches: absent)."""
    out: dict[str, float] = {}
    for host in hosts:
        for pattern, factor in patterns:
            if fnmatch.fnmatchcase(host, pattern):
                out[host] = factor
    return out


def scale_hosts(model: ModelFile, factors: dict[str, float]) -> ModelFile:
    """Each listed host gets its own entry: its resolved kernels (default merged in, per
    CPU) with durations divided by its speed factor. Other hosts are unchanged."""
    hosts = dict(model.hosts)
    for host, speed in factors.items():
        ncpus = model.cpus_of(host)
        cpus = [{k: scale_kernel(m, 1.0 / speed) for k, m in model.resolve(host, c).items()} for c in range(ncpus)]
        hosts[host] = HostModel(kernels=cpus[0]) if ncpus == 1 else HostModel(cpus=cpus)
    return dataclasses.replace(model, hosts=hosts)


def host_dgemm_time(model: ModelFile, host: str) -> float:
    """Expected dgemm duration at the reference size on the host's slowest CPU."""
    times = [0.0]
    for cpu in range(model.cpus_of(host)):
        kernel = model.resolve(host, cpu).get("dgemm")
        if kernel is not None:
            times.append(float(kernel.predict(REFERENCE_DGEMM)))
    return max(times)


def slowest_hosts(model: ModelFile, hosts: list[str], percent: float | None, count: int | None) -> list[str]:
    """The `count` (or round(percent % of hosts), at least 1) slowest hosts, slowest first."""
    k = count if count is not None else max(1, round((percent or 0.0) / 100.0 * len(hosts)))
    if k >= len(hosts):
        raise HplsimError(f"dropping {k} of {len(hosts)} hosts would leave none")
    ranked = sorted(hosts, key=lambda h: -host_dgemm_time(model, h))  # stable: ties keep host order
    return ranked[:k]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _store_model(model: ModelFile, workdir: Path, label: str) -> ModelSource:
    """Write a derived model under its own digest (atomic, so that concurrent sweeps can)."""
    models = workdir / "models"
    tmp = models / f".derived-{os.getpid()}-{uuid.uuid4().hex}.yaml"
    with _derived_file(tmp):
        models.mkdir(parents=True, exist_ok=True)
        save_model(model, tmp)
        digest = _digest(tmp)
        final = models / f"{digest[:16]}.yaml"
        tmp.replace(final)
    return ModelSource(model, label, digest)


@contextmanager
def _derived_file(tmp: Path) -> Iterator[None]:
    """A derived file's temporary copy never stays behind (a full disk, an interruption),
    and a failure to write it is one error naming it."""
    try:
        yield
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise HplsimError(f"cannot write the sweep's derived file {tmp.parent}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _store_platform(platform: Platform, workdir: Path) -> None:
    """The derived platform's XML and hostfile, for reading and for re-running by hand."""
    platforms = workdir / "platforms"
    stem = platforms / platform.digest()[:16]
    for suffix, text in ((".xml", platform.xml), (".hosts", "\n".join(platform.slots) + "\n")):
        tmp = stem.with_name(f".{stem.name}{suffix}.{os.getpid()}-{uuid.uuid4().hex}.tmp")
        with _derived_file(tmp):
            platforms.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text)
            tmp.replace(stem.with_suffix(suffix))


def vary_model(base: ModelSource, platform: Platform, v: ModelVariation, workdir: Path,
               where: str) -> tuple[ModelSource, Platform, str]:
    """The varied model, the platform (fewer slots when hosts are dropped) and a note."""
    if v.is_base:
        return base, platform, ""
    model = base.model
    hosts = platform.hosts
    if v.speed:
        factors = speed_factors(hosts, v.speed)
        unmatched = [p for p, _ in v.speed if not any(fnmatch.fnmatchcase(h, p) for h in hosts)]
        if unmatched:
            raise HplsimError(f"{where}.speed: pattern {unmatched[0]!r} matches no host of the platform "
                              f"(e.g. {hosts[0]})")
        model = scale_hosts(model, factors)
    if not v.noise:
        model = model.without_noise()
    if v.noise_family is not None:
        model = with_noise_family(model, v.noise_family, f"{where}.noise_family")
    varied = v.spatial_variability is not None or v.temporal_variability is not None or v.noise_family is not None
    if v.spatial_variability is not None or v.temporal_variability is not None:
        model = with_variability(model, v.spatial_variability, v.temporal_variability,
                                 (f"{where}.spatial_variability", f"{where}.temporal_variability"))
    note = ""
    if v.drop_percent is not None or v.drop_hosts is not None:
        dropped = slowest_hosts(model, hosts, v.drop_percent, v.drop_hosts)
        gone = set(dropped)
        platform = dataclasses.replace(platform, slots=[s for s in platform.slots if s not in gone], config=dict(platform.config))
        note = f"dropped {len(dropped)} slowest host(s): {', '.join(dropped)}"
        _store_platform(platform, workdir)
    source = _store_model(model, workdir, base.label) if (v.speed or not v.noise or varied) else base
    return source, platform, note


# ---------------------------------------------------------------------------- all of it


def build_variants(spec: SweepSpec, workdir: Path) -> list[Variant]:
    """Every platform variation x model variation of the spec, in the spec's order."""
    base_platform = _base_platform(spec)
    base_model = _base_model(spec)
    out = []
    for i, pv in enumerate(spec.platform_variations):
        where = f"sweep spec {spec.source}: platform.variations[{i}] ({pv.name})"
        platform = vary_platform(base_platform, pv, where)
        if not pv.is_base:
            _store_platform(platform, workdir)
        for j, mv in enumerate(spec.model_variations):
            mwhere = f"sweep spec {spec.source}: model.variations[{j}] ({mv.name})"
            model, varied, note = vary_model(base_model, platform, mv, workdir, mwhere)
            out.append(Variant(varied, model, pv.name, mv.name, varied.digest(), note))
    return out
