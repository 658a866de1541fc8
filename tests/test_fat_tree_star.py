"""A fat-tree's latencies on a star (topology `fat-tree-star`, lab notebook E90): the same
hosts, each on its own link, no switch links, and each route's latency the fat-tree's (2
links within a leaf, 4 between leaves of a two-level tree), through the per-route factors'
callbacks (csrc/kernel-models/netlaws.c).

References: SMPI's own clock on one message over SimGrid's FAT_TREE (tests/csrc/flows.c
built with the runtime's netlaws.c), and the message-level pivot exchange of the same run
against the modelled one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import load_platform, spec_from_dict
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT
from helpers import run_cli
from test_loaded_network import flows  # noqa: F401  (the fixture: flows.c with the runtime's factors)

#: 16 hosts under 4 leaf switches of 4, two core switches: latencies of 2 and 4 links
TREE = "2;4,4;1,2;1,1"
LAWS = {"smpi/lat-factor": "0:1.13;300:1.5;8133:3.0", "smpi/bw-factor": "0:0.47;8133:0.68",
        "smpi/send-is-detached-thresh": "8133", "smpi/async-small-thresh": "8133"}


def spec(topology: str, smpi: dict[str, str] = LAWS, **net):
    return spec_from_dict({"nodes": 16, "host_prefix": "h", "smpi": smpi,
                           "network": {"topology": topology, "fat_tree": TREE, "bandwidth": "7GBps",
                                       "latency": "5.2us", **net}})


def _one_way(flows: Path, topology: str, src: int, dst: int, size: int, tmp: Path) -> float:
    """One message's time from host h<src> to h<dst>, in SMPI's simulated seconds."""
    xml = tmp / f"{topology}.xml"
    xml.write_text(spec(topology).to_xml())
    (tmp / "hostfile").write_text(f"h{src}\nh{dst}\n")
    out = subprocess.run(["smpirun", "-np", "2", "-platform", str(xml), "-hostfile", str(tmp / "hostfile"),
                          "--cfg=smpi/simulate-computation:no", "--log=root.thres:error", str(flows), str(size)],
                         capture_output=True, text=True, timeout=120, cwd=tmp)
    assert out.returncode == 0, out.stderr
    (line,) = [line for line in out.stdout.splitlines() if line.startswith("recv ")]
    return float(line.split()[2])


@pytest.mark.parametrize("src,dst", [(0, 3), (5, 6), (0, 4), (3, 12), (9, 2)])
@pytest.mark.parametrize("size", [20_000, 1_000_000])
def test_one_message_takes_the_fat_trees_time(flows, tmp_path, src, dst, size):
    """Within a leaf (0-3, 5-6) and between leaves (0-4, 3-12, 9-2), 20 kB and 1 MB (sent
    after the receiver's clock starts: a smaller, detached message may leave before it): a
    lone message takes SimGrid's fat-tree time to a part in 10^12, where the plain star
    misses every route between leaves by the latency of two links."""
    tree = _one_way(flows, "fat-tree", src, dst, size, tmp_path)
    assert _one_way(flows, "fat-tree-star", src, dst, size, tmp_path) == pytest.approx(tree, rel=1e-12)
    star = _one_way(flows, "star", src, dst, size, tmp_path)
    same_leaf = src // 4 == dst // 4
    factor = 3.0  # smpi/lat-factor above 8,133 B
    assert tree - star == pytest.approx(0 if same_leaf else 2 * 5.2e-6 * factor, abs=1e-12)


@pytest.fixture(scope="module")
def model() -> ModelSource:
    return ModelSource.from_path(DEFAULT.model, "builtin:dahu")


def test_the_modelled_exchange_prices_the_fat_trees_latencies(model):
    """HPL on 16 hosts, one process column spanning the four leaves: every pivot exchange
    crosses leaves. The modelled exchange lands on the reduced star's messages as closely
    as on the fat-tree's own (E67's envelope), and the run is the fat-tree's within the
    contention the fat-tree's shared switch links add to the row swaps' 400 kB messages
    (measured: -0.7 %), where the plain star is 37 % faster."""
    config = HplConfig(n=1600, nb=32, p=16, q=1, depth=0)
    runs = {t: predict(config, spec(t).platform(), model, seed=1, timeout=300, exchanges="checked")
            for t in ("fat-tree", "fat-tree-star", "star")}
    e, reference = runs["fat-tree-star"].exchanges, runs["fat-tree"].exchanges
    assert e["checked"] == 1600 * 16 and e["winners_differ"] == 0
    assert e["model_minus_messages_abs_max_s"] <= reference["model_minus_messages_abs_max_s"] < 1e-6
    tree, reduced, star = (runs[t].time_s for t in ("fat-tree", "fat-tree-star", "star"))
    assert abs(reduced / tree - 1) < 0.01
    assert abs(star / tree - 1) > 20 * abs(reduced / tree - 1)


def test_the_spec_writes_a_star_with_the_laws_as_per_route_factors():
    xml = spec("fat-tree-star").to_xml()
    assert "FAT_TREE" not in xml and "smpi/lat-factor" not in xml and "smpi/bw-factor" not in xml
    zone = xml[xml.index('<zone id="world"'):]
    for prop, value in [("hplsim/fat-tree-latencies", TREE), ("hplsim/lat-factor", LAWS["smpi/lat-factor"]),
                        ("hplsim/loopback-lat-factor", LAWS["smpi/lat-factor"]),
                        ("hplsim/bw-factor", LAWS["smpi/bw-factor"])]:
        assert f'<prop id="{prop}" value="{value}"/>' in zone


def test_bad_fat_tree_latencies_are_refused_before_the_run(tmp_path):
    with pytest.raises(HplsimError, match="fat_tree"):
        spec("fat-tree-star", fat_tree=None)
    xml = spec("fat-tree-star").to_xml()
    path = tmp_path / "p.xml"
    path.write_text(xml.replace(TREE, "2;4,4;1,2"))
    with pytest.raises(HplsimError, match=r"p.xml: root zone hplsim/fat-tree-latencies: fat_tree"):
        load_platform(path)
    path.write_text(xml.replace(TREE, "2;4,2;1,2;1,1"))
    with pytest.raises(HplsimError, match=r"places 8 hosts under its switches, but the platform has 16"):
        load_platform(path)
    bare = "\n".join(line for line in xml.splitlines() if "factor" not in line)
    path.write_text(bare)
    with pytest.raises(HplsimError, match="acts through the four per-route factors"):
        load_platform(path)


def test_predict_runs_a_fat_tree_preset_as_a_star_and_refuses_other_platforms(tmp_path):
    """Stampede's preset on 20 of its nodes (one leaf) and on 40 (two leaves, a process
    row across both): within a leaf no link is shared between two nodes' flows in either
    network, so the star gives the fat-tree's Gflops exactly; across leaves both run and
    are labelled. A platform that is not a fat-tree spec gets one error line."""

    def gflops(grid: list[str], star: bool) -> tuple[float, str]:
        out = run_cli("predict", "--preset", "stampede", "-N", "3072", *grid, "--seed", "1", "--json",
                      *(["--fat-tree-as-star"] if star else []))
        assert out.returncode == 0, out.stderr
        (run,) = json.loads(out.stdout)
        return run["gflops"], run["platform"]

    one_leaf = ["-P", "4", "-Q", "5"]
    assert gflops(one_leaf, True) == (gflops(one_leaf, False)[0], "builtin:stampede:star")
    two_leaves = ["-P", "2", "-Q", "20"]
    assert gflops(two_leaves, True)[1] == "builtin:stampede:star"
    for platform, why in [(["--preset", "dahu"], "is a SimGrid XML"),
                          (["--platform", str(tmp_path / "star.yaml")], "has topology star, not fat-tree")]:
        (tmp_path / "star.yaml").write_text("nodes: 4\nnetwork: {bandwidth: 1GBps, latency: 1us}\n")
        out = run_cli("predict", *platform, "-N", "1000", "-P", "2", "-Q", "2", "--fat-tree-as-star")
        lines = out.stderr.strip().splitlines()
        assert out.returncode != 0 and lines[-1].startswith("hplsim: error: --fat-tree-as-star:") and why in lines[-1]
        assert "Traceback" not in out.stderr
