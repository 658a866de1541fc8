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

import yaml

from hplsim.errors import HplsimError

FORMAT_NAME = "hplsim-platform"
SHARING_POLICIES = ("SHARED", "SPLITDUPLEX", "FATPIPE")
TOPOLOGIES = ("star", "fat-tree")
PLACEMENTS = ("block", "cyclic")

_UNIT_RE = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
_BW_UNITS = {"Bps": 1.0, "kBps": 1e3, "KBps": 1e3, "MBps": 1e6, "GBps": 1e9, "TBps": 1e12,
             "KiBps": 2**10, "MiBps": 2**20, "GiBps": 2**30, "TiBps": 2**40,
             "bps": 0.125, "kbps": 125.0, "Kbps": 125.0, "Mbps": 1.25e5, "Gbps": 1.25e8, "Tbps": 1.25e11}
_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0, "h": 3600.0}


def parse_quantity(value: Any, units: dict[str, float], what: str, bare: bool = False) -> float:
    """``"12.5GBps"`` -> 1.25e10 (bytes/s), ``"1us"`` -> 1e-6 (s).

    A number without a unit is refused (is 10 a bandwidth in B/s, in Gbps, or a factor as
    in a sweep's variations?), except 0 and where SimGrid's own XML is read (`bare`:
    SimGrid takes it in B/s or s)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number, unit = float(value), ""
    else:
        m = _UNIT_RE.match(str(value))
        if not m:
            raise HplsimError(f"platform: {what} {value!r} is not a quantity like 12.5GBps or 1us")
        number, unit = float(m.group(1)), m.group(2)
    if unit and unit not in units:
        raise HplsimError(f"platform: unknown unit {unit!r} in {what} {value!r} (known: {', '.join(units)})")
    if not unit and number != 0 and not bare:
        example = "12.5GBps (bytes/s) or 100Gbps (bits/s)" if "Bps" in units else "1us or 0.5ms"
        raise HplsimError(f"platform: {what} {value!r} has no unit: write it with one, e.g. {example}")
    result = number * units.get(unit, 1.0)
    if not math.isfinite(result):
        raise HplsimError(f"platform: {what} {value!r} is not finite")
    if result < 0:
        raise HplsimError(f"platform: {what} must not be negative, got {value!r}")
    return result


def bandwidth(value: Any, what: str, bare: bool = False) -> float:
    """Bytes per second; `what` names the field in an error.

    >>> bandwidth("12.5GBps", "network.bandwidth"), bandwidth("100Gbps", "network.bandwidth")
    (12500000000.0, 12500000000.0)
    >>> bandwidth("10", "network.bandwidth")
    Traceback (most recent call last):
    hplsim.errors.HplsimError: platform: network.bandwidth '10' has no unit: write it with one, e.g. 12.5GBps (bytes/s) or 100Gbps (bits/s)
    """
    return parse_quantity(value, _BW_UNITS, what, bare)


def duration(value: Any, what: str, bare: bool = False) -> float:
    """Seconds.

    >>> duration("1us", "network.latency"), duration("0.5ms", "network.latency")
    (1e-06, 0.0005)
    """
    return parse_quantity(value, _TIME_UNITS, what, bare)


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
        cluster = "    <cluster " + " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items()) + "/>"
        lines = [
            '<?xml version="1.0"?>',
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
            '<platform version="4.1">',
        ]
        if self.smpi:
            lines.append('  <config id="General">')
            lines += [f"    <prop id={quoteattr(k)} value={quoteattr(str(v))}/>" for k, v in self.smpi.items()]
            lines.append("  </config>")
        lines += ['  <zone id="world" routing="Full">', cluster, "  </zone>", "</platform>"]
        return "\n".join(lines) + "\n"

    def platform(self, label: str = "") -> Platform:
        return Platform(self.to_xml(), self.slots(), {}, label or self.name, self.iprobe_reports)


# SimGrid crashes (segfault) on a malformed piecewise option: check them here.
_PIECEWISE_ARITY = {"smpi/bw-factor": 2, "smpi/lat-factor": 2, "smpi/os": 3, "smpi/or": 3, "smpi/ois": 3}


def check_smpi_option(key: str, value: str, source: str) -> None:
    arity = _PIECEWISE_ARITY.get(key)
    if arity is None:
        return
    shape = "size:factor" if arity == 2 else "size:offset:per_byte"
    for entry in value.split(";"):
        parts = entry.split(":")
        try:
            ok = len(parts) == arity and all(math.isfinite(float(x)) for x in parts)
        except ValueError:
            ok = False
        if not ok:
            raise HplsimError(f"platform {source}: {key} must be a ';'-separated list of {shape}, got {value!r}")


_SPEC_FIELDS = {
    "format", "version", "name", "nodes", "cores_per_node", "ranks_per_node", "placement",
    "host_prefix", "host_suffix", "network", "smpi", "mpi",
}
_MPI_FIELDS = {"iprobe_reports"}
#: arrived: MPI_Iprobe reports any message already sent (SMPI's own semantics);
#: progressed: only a message that had arrived by the rank's previous MPI call (Open MPI's ob1)
IPROBE_REPORTS = ("arrived", "progressed")
_NETWORK_FIELDS = {
    "topology", "bandwidth", "latency", "sharing_policy", "loopback_bandwidth", "loopback_latency",
    "backbone_bandwidth", "backbone_latency", "limiter_bandwidth", "fat_tree",
}


def _positive_int(doc: Mapping, key: str, default: int | None = None) -> int | None:
    value = doc.get(key)
    if value is None:  # absent, or written as null: the default
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HplsimError(f"platform: {key} must be a positive integer, got {value!r}")
    return value


def _section(doc: Mapping, key: str, fields: set[str], source: str) -> Mapping:
    """A sub-mapping of the spec (network, mpi), its fields checked."""
    section = doc.get(key) or {}
    if not isinstance(section, Mapping):
        raise HplsimError(f"platform spec {source}: '{key}' must be a mapping")
    unknown = set(section) - fields
    if unknown:
        raise HplsimError(f"platform spec {source}: unknown {key} field(s) {', '.join(sorted(map(str, unknown)))}")
    return section


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
    hplsim.errors.HplsimError: platform spec <spec>: unknown field(s) cores
    """
    if not isinstance(doc, Mapping):
        raise HplsimError(f"platform spec {source}: top level must be a mapping")
    if doc.get("format", FORMAT_NAME) != FORMAT_NAME:
        raise HplsimError(f"platform spec {source}: 'format' must be {FORMAT_NAME!r}")
    unknown = set(doc) - _SPEC_FIELDS
    if unknown:
        raise HplsimError(f"platform spec {source}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    if doc.get("nodes") is None:
        raise HplsimError(f"platform spec {source}: 'nodes' is required")
    net = _section(doc, "network", _NETWORK_FIELDS, source)
    topology = net.get("topology", "star")
    if topology not in TOPOLOGIES:
        raise HplsimError(f"platform spec {source}: topology must be one of {', '.join(TOPOLOGIES)}")
    if topology == "fat-tree" and not net.get("fat_tree"):
        raise HplsimError(f"platform spec {source}: a fat-tree needs 'fat_tree' (SimGrid topo_parameters)")
    policy = str(net.get("sharing_policy", "SPLITDUPLEX")).upper()
    if policy not in SHARING_POLICIES:
        raise HplsimError(f"platform spec {source}: sharing_policy must be one of {', '.join(SHARING_POLICIES)}")
    placement = doc.get("placement", "block")
    if placement not in PLACEMENTS:
        raise HplsimError(f"platform spec {source}: placement must be one of {', '.join(PLACEMENTS)}")
    smpi = doc.get("smpi") or {}
    if not isinstance(smpi, Mapping):
        raise HplsimError(f"platform spec {source}: 'smpi' must be a mapping of SimGrid options")

    for key, value in smpi.items():
        if not str(key).isprintable() or not str(value).isprintable() or value is None:
            raise HplsimError(f"platform spec {source}: smpi option {key!r}: {value!r} is not a printable value")
        check_smpi_option(str(key), str(value), source)
    mpi = _section(doc, "mpi", _MPI_FIELDS, source)
    iprobe_reports = str(mpi.get("iprobe_reports", "arrived"))
    if iprobe_reports not in IPROBE_REPORTS:
        raise HplsimError(f"platform spec {source}: mpi: iprobe_reports must be one of {', '.join(IPROBE_REPORTS)}")

    def opt(key: str, conv) -> float | None:
        return conv(net[key], key) if net.get(key) is not None else None

    for key in ("name", "host_prefix", "host_suffix"):
        text = str(doc.get(key, ""))
        if not text.isprintable() or any(c in text for c in "<>&\"'"):
            raise HplsimError(f"platform spec {source}: {key} {text!r} may hold only printable characters "
                              "other than < > & \" '")
    spec = PlatformSpec(
        nodes=_positive_int(doc, "nodes"),
        cores_per_node=_positive_int(doc, "cores_per_node", 1),
        ranks_per_node=_positive_int(doc, "ranks_per_node"),
        placement=placement,
        host_prefix=str(doc.get("host_prefix", "node-")),
        host_suffix=str(doc.get("host_suffix", "")),
        topology=topology,
        bandwidth=bandwidth(net.get("bandwidth", "12.5GBps"), "bandwidth"),
        latency=duration(net.get("latency", "1us"), "latency"),
        sharing_policy=policy,
        loopback_bandwidth=opt("loopback_bandwidth", bandwidth),
        loopback_latency=opt("loopback_latency", duration),
        backbone_bandwidth=opt("backbone_bandwidth", bandwidth),
        backbone_latency=opt("backbone_latency", duration),
        limiter_bandwidth=opt("limiter_bandwidth", bandwidth),
        fat_tree=str(net["fat_tree"]) if net.get("fat_tree") else None,
        smpi={str(k): str(v) for k, v in smpi.items()},
        name=str(doc.get("name", "cluster")),
        iprobe_reports=iprobe_reports,
    )
    for key in ("bandwidth", "loopback_bandwidth", "backbone_bandwidth", "limiter_bandwidth"):
        value = getattr(spec, key)
        if value is not None and value <= 0:
            raise HplsimError(f"platform spec {source}: {key} must be positive, got {net.get(key)!r}")
    if spec.topology == "fat-tree":
        leaves = fat_tree_leaves(spec.fat_tree or "", f"platform spec {source}")
        if leaves != spec.nodes:
            raise HplsimError(f"platform spec {source}: fat_tree {spec.fat_tree!r} has {leaves} leaves "
                              f"(the product of its down counts) but the platform has {spec.nodes} nodes")
    return spec


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
    return hosts


#: attributes of SimGrid XML elements that hold a bandwidth, or a latency
_XML_BANDWIDTHS = {"link": ("bandwidth",), "cluster": ("bw", "bb_bw", "loopback_bw", "limiter_link"),
                   "backbone": ("bandwidth",)}
_XML_LATENCIES = {"link": ("latency",), "cluster": ("lat", "bb_lat", "loopback_lat"), "backbone": ("latency",)}


def _check_xml_links(root: ET.Element, source: str) -> None:
    """A zero or negative bandwidth, or a negative latency, makes SimGrid abort with its own
    words ("The Impossible Did Happen"): name the element instead."""
    for el in root.iter():
        name = f"<{el.tag} id={el.get('id', '?')!r}>"
        for attr in _XML_BANDWIDTHS.get(el.tag, ()):
            if el.get(attr) is not None:
                value = bandwidth(el.get(attr), f"{name} {attr}", bare=True)
                if value <= 0:
                    raise HplsimError(f"platform {source}: {name} {attr}={el.get(attr)!r}: a bandwidth must be positive")
        for attr in _XML_LATENCIES.get(el.tag, ()):
            if el.get(attr) is not None:
                duration(el.get(attr), f"{name} {attr}", bare=True)


def platform_from_xml(xml_text: str, source: str, ranks_per_host: int | None = None) -> Platform:
    hosts = xml_hosts(xml_text, source)
    slots = [name for name, cores in hosts for _ in range(ranks_per_host or cores)]
    return Platform(xml_text, slots, {}, Path(source).name)


def load_platform(path: Path, ranks_per_host: int | None = None) -> Platform:
    """A platform from a YAML spec or a SimGrid XML file (decided by content)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise HplsimError(f"cannot read platform file {path}: {exc.strerror}") from None
    if text.lstrip().startswith("<"):
        return platform_from_xml(text, str(path), ranks_per_host)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise HplsimError(f"platform spec {path}: not valid YAML") from None
    spec = spec_from_dict(doc, str(path))
    if ranks_per_host is not None:
        spec.ranks_per_node = ranks_per_host
    return spec.platform(path.stem)
