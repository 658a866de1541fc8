"""Platforms: a small YAML spec (format in docs/formats/platform.md) or an existing SimGrid
XML file, resolved into what a run needs: the XML, the host of every rank slot and the
SMPI configuration.

One reader (`load_platform`) and one writer (`PlatformSpec.to_xml`) for the spec.
"""

from __future__ import annotations

import hashlib
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping
from xml.sax.saxutils import quoteattr


from hplsim import formats
from hplsim.errors import HplsimError, warn
from hplsim.formats import Field, Invalid, Record

FORMAT_NAME = "hplsim-platform"
SHARING_POLICIES = ("SHARED", "SPLITDUPLEX", "FATPIPE")
#: "fat-tree-star": the fat-tree's hosts on a star (each host's own link) whose routes take the
#: fat-tree's latencies (docs/formats/platform.md; lab notebook E90)
TOPOLOGIES = ("star", "fat-tree", "fat-tree-star")
PLACEMENTS = ("block", "cyclic")

_UNIT_RE = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class Quantity:
    """A physical quantity of the spec: its name in errors, an example, its units (factor
    to bytes/s or seconds)."""

    kind: str
    example: str
    units: Mapping[str, float]


BANDWIDTH = Quantity("bandwidth", "12.5GBps (bytes/s) or 100Gbps (bits/s)", {
    "Bps": 1.0, "kBps": 1e3, "KBps": 1e3, "MBps": 1e6, "GBps": 1e9, "TBps": 1e12,
    "KiBps": 2**10, "MiBps": 2**20, "GiBps": 2**30, "TiBps": 2**40,
    "bps": 0.125, "kbps": 125.0, "Kbps": 125.0, "Mbps": 1.25e5, "Gbps": 1.25e8, "Tbps": 1.25e11})
TIME = Quantity("time", "1us or 0.5ms", {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0,
                                         "h": 3600.0})


def _quantity(value: Any, q: Quantity, bare: bool = False) -> float:
    """A non-negative finite quantity in bytes/s or seconds, or `formats.Invalid`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number, unit = float(value), ""
    else:
        m = _UNIT_RE.match(str(value))
        if not m:
            raise Invalid(f"a {q.kind} like {q.example}")
        number, unit = float(m.group(1)), m.group(2)
    if unit and unit not in q.units:
        raise Invalid(f"a unit among {', '.join(q.units)}", got=f"unknown unit {unit!r} in {value!r}")
    if not unit and number != 0 and not bare:
        raise Invalid(f"a {q.kind} with its unit, e.g. {q.example}", got=f"{value!r}, which has no unit")
    result = number * q.units.get(unit, 1.0)
    if not math.isfinite(result):
        raise Invalid(f"a finite {q.kind}")
    if result < 0:
        raise Invalid(f"a {q.kind} that is not negative")
    return result


def parse_quantity(value: Any, q: Quantity, what: str, bare: bool = False) -> float:
    """``"12.5GBps"`` -> 1.25e10 (bytes/s), ``"1us"`` -> 1e-6 (s); `what` names the value
    (the option, or the file and field) in an error.

    A number without a unit is refused (is 10 a bandwidth in B/s, in Gbps, or a factor as
    in a sweep's variations?), except 0 and where SimGrid's own XML is read (`bare`:
    SimGrid takes it in B/s or s)."""
    try:
        return _quantity(value, q, bare)
    except Invalid as exc:
        raise formats.error(what, "", exc.expected, value, shown_as=exc.got) from None


def quantity_field(q: Quantity, positive: bool = False) -> formats.Converter:
    """A spec field's converter: a quantity with its unit (> 0 when `positive`)."""

    def convert(value: Any) -> float:
        result = _quantity(value, q)
        if positive and result <= 0:
            raise Invalid(f"a positive {q.kind}")
        return result

    return convert


def bandwidth(value: Any, what: str, bare: bool = False) -> float:
    """Bytes per second; `what` names the field in an error.

    >>> bandwidth("12.5GBps", "network.bandwidth"), bandwidth("100Gbps", "network.bandwidth")
    (12500000000.0, 12500000000.0)
    >>> bandwidth("10", "--bandwidth")
    Traceback (most recent call last):
    hplsim.errors.HplsimError: --bandwidth: expected a bandwidth with its unit, e.g. 12.5GBps (bytes/s) or 100Gbps (bits/s), got '10', which has no unit
    """
    return parse_quantity(value, BANDWIDTH, what, bare)


def duration(value: Any, what: str, bare: bool = False) -> float:
    """Seconds.

    >>> duration("1us", "network.latency"), duration("0.5ms", "network.latency")
    (1e-06, 0.0005)
    """
    return parse_quantity(value, TIME, what, bare)


#: What a network value may be without a word: outside, it is most likely a unit missed or
#: mistyped (``bw="12.5"`` is 12.5 B/s to SimGrid). (kind: lowest, highest, unit, their words)
#: Host speeds are not checked: kernel durations are injected in seconds, so a host's speed
#: cancels out (Dahu's own file says speed="1").
PLAUSIBLE = {
    "bandwidth": (1e6, 1e13, "B/s", "under 1 MB/s", "over 10 TB/s"),
    "time": (0.0, 1.0, "s", "", "over 1 s"),
}


def implausible(value: float, kind: str) -> str | None:
    """Why a bandwidth (B/s) or a latency (s) is implausible, or None.

    >>> implausible(12.5, "bandwidth"), implausible(12.5e9, "bandwidth"), implausible(2.0, "time")
    ('under 1 MB/s', None, 'over 1 s')
    """
    low, high, _, under, over = PLAUSIBLE[kind]
    if 0 < value < low:
        return under
    if value > high:
        return over
    return None


def _warn_implausible(where: str, raw: Any, value: float, q: Quantity, bare: bool) -> None:
    """One warning for a value outside PLAUSIBLE, saying the unit SimGrid took it in."""
    why = implausible(value, q.kind)
    if why is None:
        return
    unit = PLAUSIBLE[q.kind][2]
    no_unit = bare and isinstance(raw, str) and not _UNIT_RE.match(raw).group(2)
    read = f"has no unit: SimGrid reads {value:g} {unit}" if no_unit else f"is {value:g} {unit}"
    warn(f"{where}={_quoted(raw)} {read} (implausible: {why})")


def _quoted(raw: Any) -> str:
    return f'"{raw}"' if isinstance(raw, str) else str(raw)


@dataclass
class Platform:
    """A platform ready to run on: SimGrid XML text, the host of each rank slot (rank i
    runs on ``slots[i]``), SMPI options to pass on the command line, and a label."""

    xml: str
    slots: list[str]
    config: dict[str, str] = field(default_factory=dict)
    label: str = ""
    # What MPI_Iprobe reports (the spec's mpi: iprobe_reports; docs/formats/platform.md).
    iprobe_reports: str = "arrived"

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(self.slots))

    def digest(self) -> str:
        h = hashlib.sha256(self.xml.encode())
        h.update("\n".join(self.slots).encode())
        h.update(repr(sorted(self.config.items())).encode())
        if self.iprobe_reports != "arrived":  # the default leaves digests of older platforms unchanged
            h.update(f"iprobe_reports={self.iprobe_reports}".encode())
        return h.hexdigest()


@dataclass
class PlatformSpec:
    nodes: int
    cores_per_node: int = 1
    ranks_per_node: int | None = None
    placement: str = "block"
    host_prefix: str = "node-"
    host_suffix: str = ""
    topology: str = "star"
    bandwidth: float = 12.5e9
    latency: float = 1e-6
    sharing_policy: str = "SPLITDUPLEX"
    loopback_bandwidth: float | None = None
    loopback_latency: float | None = None
    backbone_bandwidth: float | None = None
    backbone_latency: float | None = None
    limiter_bandwidth: float | None = None
    fat_tree: str | None = None
    smpi: dict[str, str] = field(default_factory=dict)
    name: str = "cluster"
    iprobe_reports: str = "arrived"

    def host_names(self) -> list[str]:
        return [f"{self.host_prefix}{i}{self.host_suffix}" for i in range(self.nodes)]

    def slots(self) -> list[str]:
        per = self.ranks_per_node or self.cores_per_node
        hosts = self.host_names()
        if self.placement == "block":
            return [h for h in hosts for _ in range(per)]
        return [hosts[i % len(hosts)] for i in range(per * len(hosts))]

    def to_xml(self) -> str:
        attrs = {
            "id": self.name,
            "prefix": self.host_prefix,
            "suffix": self.host_suffix,
            "radical": f"0-{self.nodes - 1}",
            "speed": "1Gf",  # kernel durations are injected in seconds: speed cancels out
            "core": str(self.cores_per_node),
            "bw": f"{self.bandwidth!r}Bps",
            "lat": f"{self.latency!r}s",
            "sharing_policy": self.sharing_policy,
        }
        if self.loopback_bandwidth is not None:
            attrs["loopback_bw"] = f"{self.loopback_bandwidth!r}Bps"
        if self.loopback_latency is not None:
            attrs["loopback_lat"] = f"{self.loopback_latency!r}s"
        if self.backbone_bandwidth is not None:
            attrs["bb_bw"] = f"{self.backbone_bandwidth!r}Bps"
            attrs["bb_lat"] = f"{(self.backbone_latency or 0.0)!r}s"
        if self.limiter_bandwidth is not None:
            attrs["limiter_link"] = f"{self.limiter_bandwidth!r}Bps"
        if self.topology == "fat-tree":
            attrs["topology"] = "FAT_TREE"
            attrs["topo_parameters"] = str(self.fat_tree)
        smpi = self.smpi
        if self.topology == "fat-tree-star":
            smpi = star_of_fat_tree(smpi, str(self.fat_tree))
        cluster = "    <cluster " + " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items()) + "/>"
        lines = [
            '<?xml version="1.0"?>',
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
            '<platform version="4.1">',
        ]
        # the per-route factors are the root zone's properties, read by hplsim's runtime
        # (csrc/kernel-models/netlaws.c); SimGrid refuses options it does not know
        config = {k: v for k, v in smpi.items() if k not in ZONE_PROPERTIES}
        if config:
            lines.append('  <config id="General">')
            lines += [f"    <prop id={quoteattr(k)} value={quoteattr(str(v))}/>" for k, v in config.items()]
            lines.append("  </config>")
        lines.append('  <zone id="world" routing="Full">')
        lines += [f"    <prop id={quoteattr(k)} value={quoteattr(str(v))}/>" for k, v in smpi.items()
                  if k in ZONE_PROPERTIES]
        lines += [cluster, "  </zone>", "</platform>"]
        return "\n".join(lines) + "\n"

    def platform(self, label: str = "") -> Platform:
        return Platform(self.to_xml(), self.slots(), {}, label or self.name, self.iprobe_reports)


#: per-route factors (docs/formats/platform.md): between two hosts, then within one
ROUTE_FACTORS = ("hplsim/lat-factor", "hplsim/bw-factor", "hplsim/loopback-lat-factor", "hplsim/loopback-bw-factor")
#: the fat-tree whose route latencies a star takes (topology fat-tree-star): a root zone
#: property read by hplsim's runtime through the per-route factors' callbacks
FAT_TREE_LATENCIES = "hplsim/fat-tree-latencies"
ZONE_PROPERTIES = (*ROUTE_FACTORS, FAT_TREE_LATENCIES)


def star_of_fat_tree(smpi: dict[str, str], fat_tree: str) -> dict[str, str]:
    """The SimGrid options of a star that takes `fat_tree`'s route latencies: the latency's
    multiple acts through the per-route factors' callbacks, which SimGrid takes only in place
    of smpi/lat-factor and smpi/bw-factor, so those laws (1 when absent) become the per-route
    factors of both routes.

    >>> star_of_fat_tree({"smpi/bw-factor": "0:0.795"}, "2;20,320;1,8;1,2")["hplsim/bw-factor"]
    '0:0.795'
    >>> star_of_fat_tree({}, "2;20,320;1,8;1,2")["hplsim/loopback-lat-factor"]
    '0:1'
    """
    out = {k: v for k, v in smpi.items() if k not in ("smpi/lat-factor", "smpi/bw-factor")}
    if not any(k in smpi for k in ROUTE_FACTORS):
        for kind in ("lat", "bw"):
            law = smpi.get(f"smpi/{kind}-factor", "0:1")
            out[f"hplsim/{kind}-factor"] = out[f"hplsim/loopback-{kind}-factor"] = law
    out[FAT_TREE_LATENCIES] = fat_tree
    return out
# SimGrid crashes (segfault) on a malformed piecewise option: check them here.
_PIECEWISE_ARITY = {"smpi/bw-factor": 2, "smpi/lat-factor": 2, "smpi/os": 3, "smpi/or": 3, "smpi/ois": 3,
                    **{name: 2 for name in ROUTE_FACTORS}}


def _smpi_options(value: Any) -> dict[str, str]:
    """The spec's smpi: mapping (SimGrid option -> value), each value printable and, for the
    piecewise options, well formed."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise Invalid("a mapping of SimGrid options", got=type(value).__name__)
    for key, option in value.items():
        if not str(key).isprintable() or not str(option).isprintable() or option is None:
            raise Invalid("a printable value", at=key)
        arity = _PIECEWISE_ARITY.get(str(key))
        if arity is not None and not _piecewise_ok(str(option), arity):
            shape = "size:factor" if arity == 2 else "size:offset:per_byte"
            raise Invalid(f"a ';'-separated list of {shape}", at=key)
        if str(key).endswith("bw-factor") and any(float(p.split(":")[1]) <= 0 for p in str(option).split(";")):
            # SimGrid aborts on a bandwidth factor of 0 ("Bandwidth factor cannot be 0")
            raise Invalid("positive bandwidth factors", got=str(option), at=key)
    given = [name for name in ROUTE_FACTORS if name in value]
    if given and len(given) != len(ROUTE_FACTORS):
        raise Invalid("all four per-route factors (" + ", ".join(ROUTE_FACTORS) + ") or none",
                      got=", ".join(given))
    if given and ({"smpi/lat-factor", "smpi/bw-factor"} & set(value)):
        raise Invalid("per-route factors in place of smpi/lat-factor and smpi/bw-factor, not beside them",
                      got="both")
    return {str(k): str(v) for k, v in value.items()}


def _piecewise_ok(value: str, arity: int) -> bool:
    for entry in value.split(";"):
        parts = entry.split(":")
        try:
            if len(parts) != arity or not all(math.isfinite(float(x)) for x in parts):
                return False
        except ValueError:
            return False
    return True


#: arrived: MPI_Iprobe reports any message already sent (SMPI's own semantics);
#: progressed: only a message that had arrived by the rank's previous MPI call (Open MPI's ob1);
#: progressed-between-nodes: progressed for a message from another node, arrived for one
#: from the same node (Open MPI's cm over PSM2, Omni-Path: docs/validation.md E39)
IPROBE_REPORTS = ("arrived", "progressed", "progressed-between-nodes")
_XML_SAFE = "<>&\"'"


def _present(convert: formats.Converter) -> formats.Converter:
    """An optional field given as null, 0 or '' is absent (the spec always read it so)."""
    return lambda value: convert(value) if value else None


def _bandwidth_field(default: float | None) -> Field:
    return Field(quantity_field(BANDWIDTH, positive=True), "a positive bandwidth with its unit", default,
                 unit="B/s", null_is_absent=default is None)


def _latency_field(default: float | None) -> Field:
    return Field(quantity_field(TIME), "a non-negative time with its unit", default, unit="s",
                 null_is_absent=default is None)


def _named(default: str, doc: str) -> Field:
    return Field(formats.text(_XML_SAFE, "printable text without < > & \" '"), "printable text without < > & \" '",
                 default, doc=doc, null_is_absent=False)


#: The platform spec (docs/formats/platform.md), declared once: every field, its type, unit
#: and default. `null_is_absent=False`: the field's null is refused (only optional
#: quantities and counts take null for their default).
SPEC = Record({
    "format": Field(formats.exactly(FORMAT_NAME), repr(FORMAT_NAME), FORMAT_NAME, null_is_absent=False),
    "version": Field(lambda v: v, "any value (not read)"),
    "name": _named("cluster", "the SimGrid cluster's id"),
    "nodes": Field(formats.integer(1), "a positive integer", required=True),
    "cores_per_node": Field(formats.integer(1), "a positive integer", 1),
    "ranks_per_node": Field(formats.integer(1), "a positive integer", None),
    "placement": Field(formats.one_of(PLACEMENTS), "one of " + ", ".join(PLACEMENTS), "block", null_is_absent=False),
    "host_prefix": _named("node-", "host names are prefix + index + suffix"),
    "host_suffix": _named("", "host names are prefix + index + suffix"),
    "network": Record({
        "topology": Field(formats.one_of(TOPOLOGIES), "one of " + ", ".join(TOPOLOGIES), "star",
                          null_is_absent=False),
        "bandwidth": _bandwidth_field(12.5e9),
        "latency": _latency_field(1e-6),
        "sharing_policy": Field(formats.one_of(SHARING_POLICIES, str.upper), "one of " + ", ".join(SHARING_POLICIES),
                                "SPLITDUPLEX", null_is_absent=False),
        "loopback_bandwidth": _bandwidth_field(None),
        "loopback_latency": _latency_field(None),
        "backbone_bandwidth": _bandwidth_field(None),
        "backbone_latency": _latency_field(None),
        "limiter_bandwidth": _bandwidth_field(None),
        "fat_tree": Field(_present(str), "SimGrid's FAT_TREE topo_parameters", None),
    }, name="a mapping of network fields"),
    "smpi": Field(_smpi_options, "a mapping of SimGrid options", {}),
    "mpi": Record({
        "iprobe_reports": Field(formats.one_of(IPROBE_REPORTS), "one of " + ", ".join(IPROBE_REPORTS), "arrived",
                                null_is_absent=False),
    }, name="a mapping of MPI behaviours"),
}, name="a mapping of platform fields", optional=False)


def fat_tree_leaves(params: str, where: str) -> int:
    """Leaves of SimGrid's FAT_TREE ``levels;down,..;up,..;links,..`` (the product of the
    down counts), the string checked as SimGrid would (which aborts on a bad one)."""
    parts = str(params).split(";")
    try:
        if len(parts) != 4:
            raise ValueError
        levels = int(parts[0])
        lists = [[int(x) for x in p.split(",")] for p in parts[1:]]
        if levels < 1 or any(len(x) != levels for x in lists) or any(v < 1 for x in lists for v in x):
            raise ValueError
    except ValueError:
        raise HplsimError(f"{where}: fat_tree {params!r} is not SimGrid's \"levels;down,..;up,..;links,..\" "
                          "(positive integers, one per level in each list)") from None
    return math.prod(lists[0])


def spec_from_dict(doc: Any, source: str = "<spec>") -> PlatformSpec:
    """A platform spec from its YAML document (docs/formats/platform.md); `source` names
    it in errors. Its `platform()` is what `predict` runs on: SimGrid's XML and the host
    of every rank slot.

    >>> spec = spec_from_dict({"nodes": 2, "cores_per_node": 2,
    ...                        "network": {"bandwidth": "10GBps", "latency": "1us"}})
    >>> spec.slots()
    ['node-0', 'node-0', 'node-1', 'node-1']
    >>> spec_from_dict({"nodes": 2, "cores": 2})
    Traceback (most recent call last):
    hplsim.errors.HplsimError: platform spec <spec>: expected only the fields format, version, name, nodes, cores_per_node, ranks_per_node, placement, host_prefix, host_suffix, network, smpi, mpi, got unknown field(s) cores
    """
    where = f"platform spec {source}"
    d = formats.read(SPEC, doc, where)
    net = d["network"]
    raw_net = doc.get("network") if isinstance(doc, Mapping) else None
    for key, value in net.items():
        q = BANDWIDTH if key.endswith("bandwidth") else TIME if key.endswith("latency") else None
        if q is not None and value is not None and isinstance(raw_net, Mapping) and key in raw_net:
            _warn_implausible(f"{where}: network.{key}", raw_net[key], value, q, bare=False)
    if net["topology"] in ("fat-tree", "fat-tree-star"):
        if not net["fat_tree"]:
            raise formats.error(where, "network.fat_tree", "SimGrid's topo_parameters (a fat-tree needs 'fat_tree')",
                                shown_as="nothing")
        leaves = fat_tree_leaves(net["fat_tree"], where)
        if leaves != d["nodes"]:
            raise formats.error(where, "network.fat_tree", f"a fat-tree whose leaves (the product of its down "
                                f"counts) are the platform's {d['nodes']} nodes", net["fat_tree"],
                                shown_as=f"{net['fat_tree']!r}, which has {leaves} leaves")
    return PlatformSpec(
        nodes=d["nodes"], cores_per_node=d["cores_per_node"], ranks_per_node=d["ranks_per_node"],
        placement=d["placement"], host_prefix=d["host_prefix"], host_suffix=d["host_suffix"],
        topology=net["topology"], bandwidth=net["bandwidth"], latency=net["latency"],
        sharing_policy=net["sharing_policy"], loopback_bandwidth=net["loopback_bandwidth"],
        loopback_latency=net["loopback_latency"], backbone_bandwidth=net["backbone_bandwidth"],
        backbone_latency=net["backbone_latency"], limiter_bandwidth=net["limiter_bandwidth"],
        fat_tree=net["fat_tree"], smpi=d["smpi"], name=d["name"], iprobe_reports=d["mpi"]["iprobe_reports"],
    )


# ------------------------------------------------------------------ existing SimGrid XML


MAX_HOSTS = 1 << 20


def _cores(el: ET.Element, source: str) -> int:
    text = el.get("core", "1")
    try:
        cores = int(text)
    except ValueError:
        cores = 0
    if not 1 <= cores <= MAX_HOSTS:
        raise HplsimError(f"platform {source}: <{el.tag} id={el.get('id', '?')!r}> core={text!r} "
                          "is not a positive integer")
    return cores


def _expand_radical(radical: str, source: str = "<xml>") -> list[str]:
    out: list[str] = []
    for part in radical.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = part.split("-", 1)
            try:
                first, last = int(lo), int(hi)
            except ValueError:
                raise HplsimError(f"platform {source}: radical {radical!r}: {part!r} is not a range like 0-31") from None
            if last < first or last - first >= MAX_HOSTS:
                raise HplsimError(f"platform {source}: radical {radical!r}: range {part!r} is empty or too large")
            out += [str(i) for i in range(first, last + 1)]
        elif part:
            out.append(part)
    return out


def xml_hosts(xml_text: str, source: str) -> list[tuple[str, int]]:
    """(host name, core count) of every host of a SimGrid platform, in file order."""
    try:
        # SimGrid files carry a DOCTYPE that ElementTree does not resolve: drop it.
        root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", xml_text, count=1))
    except ET.ParseError as exc:
        raise HplsimError(f"platform {source}: not valid XML ({exc})") from None
    hosts: list[tuple[str, int]] = []
    for el in root.iter():
        if el.tag == "host":
            hosts.append((el.get("id", ""), _cores(el, source)))
        elif el.tag in ("cluster", "cabinet"):
            cores = _cores(el, source)
            radicals = _expand_radical(el.get("radical", ""), source)
            if el.get("topology", "").upper() == "FAT_TREE":
                where = f"platform {source}: <{el.tag} id={el.get('id', '?')!r}>"
                leaves = fat_tree_leaves(el.get("topo_parameters", ""), where)
                if leaves != len(radicals):
                    raise HplsimError(f"{where}: its fat-tree has {leaves} leaves (the product of the down counts of "
                                      f"{el.get('topo_parameters')!r}) but its radical names {len(radicals)} hosts")
            for r in radicals:
                hosts.append((f"{el.get('prefix', '')}{r}{el.get('suffix', '')}", cores))
    if not hosts:
        raise HplsimError(f"platform {source}: no host found")
    _check_xml_links(root, source)
    _check_xml_route_factors(root, source)
    tree = _root_zone_props(root).get(FAT_TREE_LATENCIES)
    placed = None if tree is None else fat_tree_leaves(tree, "")
    if placed is not None and placed != len(hosts):
        raise HplsimError(f"platform {source}: root zone {FAT_TREE_LATENCIES} {tree!r} places "
                          f"{placed} hosts under its switches, but the platform has {len(hosts)}")
    return hosts


def _root_zone_props(root: ET.Element) -> dict[str, str]:
    zone = next((el for el in root if el.tag in ("zone", "AS")), None)
    return {el.get("id", ""): el.get("value", "") for el in (zone if zone is not None else ()) if el.tag == "prop"}


def _check_xml_route_factors(root: ET.Element, source: str) -> None:
    """The per-route factors (the root zone's hplsim/ properties) with the spec's rules,
    before the runtime would stop the simulation on them."""
    props = _root_zone_props(root)
    config = {el.get("id", ""): el.get("value", "") for c in root if c.tag == "config" for el in c if el.tag == "prop"}
    given = {k: v for k, v in props.items() if k in ROUTE_FACTORS}
    if FAT_TREE_LATENCIES in props:
        if not given:
            raise HplsimError(f"platform {source}: root zone: {FAT_TREE_LATENCIES} acts through the four per-route "
                              f"factors ({', '.join(ROUTE_FACTORS)}): give them too")
        fat_tree_leaves(props[FAT_TREE_LATENCIES], f"platform {source}: root zone {FAT_TREE_LATENCIES}")
    if not given:
        return
    options = {**given, **{k: v for k, v in config.items() if k in ("smpi/lat-factor", "smpi/bw-factor")}}
    try:
        _smpi_options(options)
    except Invalid as exc:
        path = "root zone" if exc.at is None else f"root zone {exc.at}"
        raise formats.error(f"platform {source}", path, exc.expected, options.get(exc.at),
                            shown_as=exc.got) from None


#: attributes of SimGrid XML elements that hold a bandwidth, or a latency
_XML_BANDWIDTHS = {"link": ("bandwidth",), "cluster": ("bw", "bb_bw", "loopback_bw", "limiter_link"),
                   "backbone": ("bandwidth",)}
_XML_LATENCIES = {"link": ("latency",), "cluster": ("lat", "bb_lat", "loopback_lat"), "backbone": ("latency",)}


def _check_xml_links(root: ET.Element, source: str) -> None:
    """A zero or negative bandwidth, or a negative latency, makes SimGrid abort with its own
    words ("The Impossible Did Happen"): name the element instead. An implausible value
    (PLAUSIBLE) is a warning."""
    for el in root.iter():
        name = f"<{el.tag} id={el.get('id', '?')!r}>"
        shown = f'<{el.tag} id="{el.get("id", "?")}">'
        for attr in _XML_BANDWIDTHS.get(el.tag, ()):
            if el.get(attr) is not None:
                value = bandwidth(el.get(attr), f"platform {source}: {name} {attr}", bare=True)
                if value <= 0:
                    raise HplsimError(f"platform {source}: {name} {attr}={el.get(attr)!r}: a bandwidth must be positive")
                _warn_implausible(f"platform {source}: {shown} {attr}", el.get(attr), value, BANDWIDTH, bare=True)
        for attr in _XML_LATENCIES.get(el.tag, ()):
            if el.get(attr) is not None:
                value = duration(el.get(attr), f"platform {source}: {name} {attr}", bare=True)
                _warn_implausible(f"platform {source}: {shown} {attr}", el.get(attr), value, TIME, bare=True)


def platform_from_xml(xml_text: str, source: str, ranks_per_host: int | None = None) -> Platform:
    hosts = xml_hosts(xml_text, source)
    slots = [name for name, cores in hosts for _ in range(ranks_per_host or cores)]
    return Platform(xml_text, slots, {}, Path(source).name)


def load_platform(path: Path, ranks_per_host: int | None = None, fat_tree_as_star: bool = False) -> Platform:
    """A platform from a YAML spec or a SimGrid XML file (decided by content).
    `fat_tree_as_star`: a fat-tree spec's hosts on a star with its routes' latencies
    (topology fat-tree-star), for speed; any other platform is refused."""
    path = Path(path)
    text = formats.read_text(path, "platform file")
    if text.lstrip().startswith("<"):
        if fat_tree_as_star:
            raise HplsimError(f"--fat-tree-as-star: platform {path} is a SimGrid XML; it takes a platform spec "
                              "(YAML) whose topology is fat-tree")
        return platform_from_xml(text, str(path), ranks_per_host)
    spec = spec_from_dict(formats.parse_yaml(text, f"platform spec {path}"), str(path))
    if fat_tree_as_star:
        if spec.topology != "fat-tree":
            raise HplsimError(f"--fat-tree-as-star: platform spec {path} has topology {spec.topology}, not fat-tree")
        spec.topology = "fat-tree-star"
    if ranks_per_host is not None:
        spec.ranks_per_node = ranks_per_host
    return spec.platform(path.stem)
