"""Variants of a one-cluster SimGrid platform for the lab notebook's what-ifs (validation.md E60).

Usage: python platform_variants.py explicit PLATFORM.xml OUT.xml
       python platform_variants.py slownodes PLATFORM.xml MODEL.yaml OUT.xml [both|loopback|nic]
       python platform_variants.py sharedloopback PLATFORM.xml OUT.xml AGGREGATE CAP
  explicit:  the <cluster> written out host by host (a Full zone with each host's private
             split-duplex link and FATPIPE loopback, and every route): the platform
             SimGrid 3.32 builds from the cluster, in a form whose hosts can differ
  slownodes: `explicit`, with each node's loopback (its ranks' shared-memory copies) and
             private link (Omni-Path's PSM2 drives the NIC from the CPU) divided by the
             node's slowdown: its slower CPU's dgemm time at HPL's update over the median
             CPU's in MODEL.yaml, where above 1 (E60: a throttled node is slow at its MPI
             processing too; an upper bound, since a copy is memory-bound and PSM2 moves
             large messages with the NIC's DMA engines); `loopback` or `nic` slows only those
  sharedloopback: `explicit`, with each node's intra-node transfers through two links, a
             SHARED one of bandwidth AGGREGATE (the node's copy bandwidth, shared by every
             transfer within the node) and a FATPIPE one of bandwidth CAP (what one
             transfer alone gets); both with SimGrid units, e.g. 9.2GBps 18.3GBps (E68)
"""
import re
import sys
import xml.etree.ElementTree as ET

import numpy as np
import yaml

import model_variants
from hplsim.platform.spec import bandwidth, xml_hosts


def _cluster(xml_text: str) -> tuple[str, ET.Element]:
    """The <config> block, verbatim, and the one <cluster> element."""
    config = re.search(r"<config\b.*?</config>", xml_text, re.S)
    root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", xml_text, count=1))
    clusters = list(root.iter("cluster"))
    if len(clusters) != 1 or clusters[0].get("topology") or clusters[0].get("bb_bw"):
        raise SystemExit("platform_variants: one flat <cluster> without backbone expected")
    return (config.group(0) if config else ""), clusters[0]


def write(xml_text: str, slowdown: dict[str, float], links: str = "both",
          shared_loopback: tuple[float, float] | None = None) -> str:
    """The cluster of `xml_text` host by host, each host's `links` (both, loopback or nic)
    divided by slowdown[host] (default 1); with `shared_loopback` (aggregate, cap in B/s)
    each host's loopback is a SHARED link at the aggregate followed by a FATPIPE at the cap."""
    config, c = _cluster(xml_text)
    names = [name for name, _ in xml_hosts(xml_text, "platform_variants")]
    bw, lo = (bandwidth(c.get(k), f"<cluster> {k}", bare=True) for k in ("bw", "loopback_bw"))
    lines = ['<?xml version="1.0"?>', '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', config, '  <zone id="world" routing="Full">']
    for i, h in enumerate(names):
        s = slowdown.get(h, 1.0)
        nic, loop = (s if links in ("both", "nic") else 1.0), (s if links in ("both", "loopback") else 1.0)
        lines.append(f'    <host id="{h}" speed="{c.get("speed")}" core="{c.get("core", "1")}"/>')
        lines.append(f'    <link id="l{i}" bandwidth="{bw / nic!r}Bps" latency="{c.get("lat", "0")}" '
                     'sharing_policy="SPLITDUPLEX"/>')
        if shared_loopback:
            lines.append(f'    <link id="lo{i}" bandwidth="{shared_loopback[0]!r}Bps" '
                         f'latency="{c.get("loopback_lat", "0")}" sharing_policy="SHARED"/>')
            lines.append(f'    <link id="cap{i}" bandwidth="{shared_loopback[1]!r}Bps" latency="0" '
                         'sharing_policy="FATPIPE"/>')
        else:
            lines.append(f'    <link id="lo{i}" bandwidth="{lo / loop!r}Bps" latency="{c.get("loopback_lat", "0")}" '
                         'sharing_policy="FATPIPE"/>')
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            own = f'<link_ctn id="lo{i}"/>' + (f'<link_ctn id="cap{i}"/>' if shared_loopback else "")
            route = (own if i == j else
                     f'<link_ctn id="l{i}" direction="UP"/><link_ctn id="l{j}" direction="DOWN"/>')
            lines.append(f'    <route src="{a}" dst="{b}" symmetrical="NO">{route}</route>')
    return "\n".join(lines + ["  </zone>", "</platform>", ""])


def slowdowns(model: dict) -> dict[str, float]:
    """host -> its slower CPU's dgemm time at HPL's update over the median CPU's, where above 1."""
    times = {h: [model_variants._update_time(c["kernels"]["dgemm"]) for c in v["cpus"]]
             for h, v in model["hosts"].items()}
    mid = float(np.median([t for ts in times.values() for t in ts]))
    return {h: max(ts) / mid for h, ts in times.items() if max(ts) > mid}


if __name__ == "__main__":
    kind, src = sys.argv[1:3]
    with open(src) as f:
        text = f.read()
    links, shared = "both", None
    if kind == "explicit":
        out, slow = sys.argv[3], {}
    elif kind == "sharedloopback":
        out, slow = sys.argv[3], {}
        shared = (bandwidth(sys.argv[4], "AGGREGATE", bare=True), bandwidth(sys.argv[5], "CAP", bare=True))
    else:
        with open(sys.argv[3]) as f:
            slow = slowdowns(yaml.safe_load(f))
        out = sys.argv[4]
        links = sys.argv[5] if len(sys.argv) > 5 else "both"
        if links not in ("both", "loopback", "nic"):
            raise SystemExit(f"platform_variants: links {links!r}: both, loopback or nic")
    with open(out, "w") as f:
        f.write(write(text, slow, links, shared))
