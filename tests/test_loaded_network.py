"""Dahu's network under load (docs/validation.md E51), as SMPI runs it: the derived
platform's transfers, timed in simulated time by a small MPI program (tests/csrc/flows.c),
move at the rates the authors' 2020 calibration measured, and a node's link is still
shared among many flows. Rates are slopes between two message sizes, so latencies, the
barrier and MPI_Wtime's own cost cancel."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

import pytest

from hplsim.presets import dahu

FLOWS_C = Path(__file__).parent / "csrc" / "flows.c"
LINK = 12.5e9  # B/s, Omni-Path 100 Gb/s: the published cluster's bw
SIZES = (2_000_000, 16_000_000)  # B: HPL's panels at N = 62,500-500,000


@pytest.fixture(scope="module")
def flows(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("flows") / "flows"
    subprocess.run(["smpicc", "-O2", "-o", str(out), str(FLOWS_C)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def platforms() -> dict[str, Path]:
    """The shipped files: the preset's is `loaded_platform_xml` of the published one
    (tests/test_presets.py)."""
    return {"published": dahu.PUBLISHED_PLATFORM_XML, "loaded": dahu.PLATFORM_XML}


def _seconds(flows: Path, platform: Path, k: int, same_node: bool, size: int, tmp: Path) -> list[float]:
    """k senders on dahu-0, k receivers on dahu-0 (same_node) or dahu-1; each receive's time."""
    hosts = ["dahu-0.grid5000.fr"] * k + [("dahu-0" if same_node else "dahu-1") + ".grid5000.fr"] * k
    (tmp / "hostfile").write_text("\n".join(hosts) + "\n")
    out = subprocess.run(["smpirun", "-np", str(2 * k), "-platform", str(platform), "-hostfile", str(tmp / "hostfile"),
                          "--log=root.thres:error", str(flows), str(size)],
                         capture_output=True, text=True, timeout=120, cwd=tmp)
    assert out.returncode == 0, out.stderr
    times = [float(line.split()[2]) for line in out.stdout.splitlines() if line.startswith("recv ")]
    assert len(times) == k
    return times


def _rate(flows: Path, platform: Path, k: int, same_node: bool, tmp: Path) -> float:
    """The flows' rate (B/s) when k run at once: each receiver's slope between the two
    sizes, which must agree."""
    small, large = (_seconds(flows, platform, k, same_node, s, tmp) for s in SIZES)
    rates = [(SIZES[1] - SIZES[0]) / (b - a) for a, b in zip(small, large)]
    assert max(rates) == pytest.approx(min(rates), rel=0.005)
    return sum(rates) / k


def _bw_factor(platform: Path) -> float:
    """SMPI's bandwidth factor for MB-sized messages, read from the platform."""
    value = next(line for line in platform.read_text().splitlines() if "smpi/bw-factor" in line)
    return float(value.split('value="')[1].rstrip('"/> ').split(";")[-1].split(":")[1])


def test_the_loaded_platform_changes_only_the_loopback_and_the_per_flow_cap(platforms):
    published = platforms["published"].read_text().splitlines()
    loaded = platforms["loaded"].read_text().splitlines()
    changed = [line for line in difflib.ndiff(published, loaded) if line[:1] in "+-"]
    assert len([c for c in changed if c.startswith("-")]) == 1  # the cluster's line
    added = [c for c in changed if c.startswith("+")]
    assert len(added) == 2 and any("network/TCP-gamma" in c for c in added)
    assert any("loopback_bw=" in c for c in added)


def test_within_a_node_one_transfer_moves_at_the_loaded_rate(flows, platforms, tmp_path):
    """E51: 3.30e-10 s/B one way under load, against the idle ping-pong's 18 GB/s."""
    loaded = _rate(flows, platforms["loaded"], 1, True, tmp_path)
    assert loaded == pytest.approx(1 / dahu.LOADED_LOOPBACK_S_PER_BYTE, rel=0.005)
    idle = _rate(flows, platforms["published"], 1, True, tmp_path)
    assert idle > 5 * loaded


def test_between_nodes_one_flow_is_capped_and_many_still_share_the_link(flows, platforms, tmp_path):
    """One flow at the loaded 0.316 of the link; two flows each keep that rate (the cap is
    per flow, not a share of the link); eight share the link's 12.5 GB/s as before. A
    bandwidth factor of 0.316 would have given the eight flows 0.316 of their share."""
    xml = platforms["loaded"]
    one = _rate(flows, xml, 1, False, tmp_path)
    assert one == pytest.approx(dahu.LOADED_REMOTE_SHARE * LINK, rel=0.005)
    assert _rate(flows, xml, 2, False, tmp_path) == pytest.approx(one, rel=0.005)
    assert _rate(flows, xml, 8, False, tmp_path) == pytest.approx(LINK * _bw_factor(xml) / 8, rel=0.005)
    # the published platform: one flow takes the whole link
    assert _rate(flows, platforms["published"], 1, False, tmp_path) == pytest.approx(
        LINK * _bw_factor(platforms["published"]), rel=0.005)
