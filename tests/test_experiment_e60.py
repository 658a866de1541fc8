"""validation.md E60 writes Dahu's <cluster> out host by host to slow the links of its
throttled nodes (`docs/experiments/platform_variants.py`); this holds the variants to what
E60 says they are: `explicit` is the platform SimGrid builds from the cluster (the same
prediction), `slownodes` divides a node's loopback and private link by its slower CPU's
dgemm slowdown over the median CPU."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import load_platform
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT, dahu

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "platform_variants.py"


def _variant(*args: object) -> None:
    subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], check=True, timeout=300)


def _links(xml: str) -> dict[str, float]:
    return {m[0]: float(m[1]) for m in re.findall(r'<link id="([^"]+)" bandwidth="([^"]+)Bps"', xml)}


def _gflops(xml: Path) -> float:
    # 4 nodes x 4 ranks, one process row per node as on Dahu: the row's broadcasts on the
    # loopback, the column's swaps on the private links
    config = HplConfig(n=3000, nb=64, p=4, q=4, bcast=2, depth=1, swap=0)
    return predict(config, load_platform(xml), ModelSource.from_path(DEFAULT.model), seed=1).gflops


def test_explicit_is_the_cluster_and_slower_links_cost_time(tmp_path):
    # E52's platform (Dahu's loaded network without E53's cost), cut to 4 nodes of 4 cores
    xml = dahu.loaded_platform_xml(dahu.PUBLISHED_PLATFORM_XML.read_text(), intercepts=False)
    xml = re.sub(r'radical="[^"]*"', 'radical="0-3"', re.sub(r'core="\d+"', 'core="4"', xml))
    (tmp_path / "cluster.xml").write_text(xml)
    _variant("explicit", tmp_path / "cluster.xml", tmp_path / "explicit.xml")
    explicit = (tmp_path / "explicit.xml").read_text()
    assert explicit.count("<route ") == 16 and explicit.count("<host ") == 4
    cluster, written = _gflops(tmp_path / "cluster.xml"), _gflops(tmp_path / "explicit.xml")
    assert written == pytest.approx(cluster, rel=1e-9)
    # the same host, 1.5x slower at its copies and its NIC, slows the run
    slow = re.sub(r'(id="l(o?)2" bandwidth=")([^"]+)Bps', lambda m: f"{m[1]}{float(m[3]) / 1.5!r}Bps", explicit)
    (tmp_path / "slow.xml").write_text(slow)
    assert _gflops(tmp_path / "slow.xml") < cluster * 0.995


def test_slownodes_divides_a_throttled_nodes_links_by_its_slower_cpus_slowdown(tmp_path):
    out = tmp_path / "slow.xml"
    _variant("slownodes", dahu.PLATFORM_XML, dahu.MODEL_FILE, out)
    _variant("explicit", dahu.PLATFORM_XML, tmp_path / "explicit.xml")
    slow, base = _links(out.read_text()), _links((tmp_path / "explicit.xml").read_text())
    assert len(base) == 64 and base["l0"] == 12.5e9 and base["lo0"] == pytest.approx(3.07e9)
    model = yaml.safe_load(dahu.MODEL_FILE.read_text())
    m, n, k = 7812, 7812, 128
    x = {"intercept": 1, "mnk": m * n * k, "mn": m * n, "mk": m * k, "nk": n * k}
    times = {h: [sum(c * x[t] for t, c in cpu["kernels"]["dgemm"]["mean"].items()) for cpu in v["cpus"]]
             for h, v in model["hosts"].items()}
    mid = sorted(t for ts in times.values() for t in ts)
    mid = (mid[31] + mid[32]) / 2
    for i in range(32):
        s = max(1.0, max(times[dahu.host_name(i + 1)]) / mid)
        for link in (f"l{i}", f"lo{i}"):
            assert slow[link] == pytest.approx(base[link] / s, rel=1e-12)
    # node 15 (dahu-14), whose CPU 0 is the slowest (E59), the most
    assert max(slow, key=lambda link: base[link] / slow[link]) in ("l14", "lo14")
    assert base["l14"] / slow["l14"] == pytest.approx(1.217, abs=0.001)
    # the loopbacks alone: the private links as they were
    _variant("slownodes", dahu.PLATFORM_XML, dahu.MODEL_FILE, tmp_path / "lo.xml", "loopback")
    lo = _links((tmp_path / "lo.xml").read_text())
    assert all(lo[f"l{i}"] == base[f"l{i}"] and lo[f"lo{i}"] == slow[f"lo{i}"] for i in range(32))
