"""Dahu's network under load (docs/validation.md E51, E53, E91), as SMPI runs it: the
derived platform's transfers, timed in simulated time by a small MPI program
(tests/csrc/flows.c), move at the rates the authors' 2020 calibration measured, and a node's
link is still shared among many flows; E53's platform (`intercepts=True`, which the presets
left in E91) makes a message above the eager threshold pay the calibration's per-message
cost. Rates are slopes between two message sizes, so latencies, the barrier and
MPI_Wtime's own cost cancel; per-message costs are differences between two platforms.
Above 6 MB within a node the presets run the calibration's pieces: tests/test_route_factors.py."""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

import pytest

from hplsim.presets import dahu

FLOWS_C = Path(__file__).parent / "csrc" / "flows.c"
CSRC = Path(__file__).resolve().parents[1] / "csrc" / "kernel-models"
LINK = 12.5e9  # B/s, Omni-Path 100 Gb/s: the published cluster's bw
SIZES = (2_000_000, 16_000_000)  # B: HPL's panels at N = 62,500-500,000
WITHIN_6_MB = (1_000_000, 5_000_000)  # B: within a node, below the pieces from 6 MB (E85)


@pytest.fixture(scope="module")
def flows(tmp_path_factory) -> Path:
    """flows.c with the runtime's per-route factors, as the emulated HPL installs them: the
    presets' platform gives its laws as the root zone's hplsim/ properties (E85), which
    plain SMPI would ignore (and run SimGrid's default factors instead)."""
    out = tmp_path_factory.mktemp("flows")
    obj = out / "simgrid_config.o"
    subprocess.run(["smpicc", "-O2", "-c", str(CSRC / "simgrid_config.cpp"), "-o", str(obj)], check=True,
                   capture_output=True)
    subprocess.run(["smpicc", "-O2", "-DHPLSIM_NETLAWS", f"-I{CSRC}", "-o", str(out / "flows"), str(FLOWS_C),
                    str(CSRC / "netlaws.c"), str(CSRC / "fatal.c"), str(obj), "-lstdc++", "-lm"],
                   check=True, capture_output=True)
    return out / "flows"


@pytest.fixture(scope="module")
def platforms() -> dict[str, Path]:
    """The shipped files: the preset's is `loaded_platform_xml` of the published one
    (tests/test_presets.py)."""
    return {"published": dahu.PUBLISHED_PLATFORM_XML, "loaded": dahu.PLATFORM_XML}


def _seconds(flows: Path, platform: Path, k: int, same_node: bool, size: int, tmp: Path) -> list[float]:
    """k senders on dahu-0, k receivers on dahu-0 (same_node) or dahu-1; each receive's time.
    SMPI's computation benchmarking is off, so the times are exact: two platforms' times
    can be subtracted, and a busy host cannot move a slope (with it on, the microseconds of
    real time between the calls counted as simulated time and moved one by 0.7 %)."""
    hosts = ["dahu-0.grid5000.fr"] * k + [("dahu-0" if same_node else "dahu-1") + ".grid5000.fr"] * k
    (tmp / "hostfile").write_text("\n".join(hosts) + "\n")
    out = subprocess.run(["smpirun", "-np", str(2 * k), "-platform", str(platform), "-hostfile", str(tmp / "hostfile"),
                          "--cfg=smpi/simulate-computation:no", "--log=root.thres:error", str(flows), str(size)],
                         capture_output=True, text=True, timeout=120, cwd=tmp)
    assert out.returncode == 0, out.stderr
    times = [float(line.split()[2]) for line in out.stdout.splitlines() if line.startswith("recv ")]
    assert len(times) == k
    return times


def _rate(flows: Path, platform: Path, k: int, same_node: bool, tmp: Path, sizes: tuple[int, int] = SIZES) -> float:
    """The flows' rate (B/s) when k run at once: each receiver's slope between the two
    sizes, which must agree."""
    small, large = (_seconds(flows, platform, k, same_node, s, tmp) for s in sizes)
    rates = [(sizes[1] - sizes[0]) / (b - a) for a, b in zip(small, large)]
    assert max(rates) == pytest.approx(min(rates), rel=0.005)
    return sum(rates) / k


def _factors(platform: Path, option: str) -> dict[int, float]:
    """The piecewise factor `option` (smpi/bw-factor, smpi/lat-factor, or a route's
    hplsim/bw-factor) of the platform, by the message size each piece starts at."""
    value = next(line for line in platform.read_text().splitlines() if f'"{option}"' in line)
    pieces = (piece.split(":") for piece in value.split('value="')[1].rstrip('"/> ').split(";"))
    return {int(start): float(factor) for start, factor in pieces}


def _bw_factor(platform: Path, option: str = "smpi/bw-factor") -> float:
    """The bandwidth factor for MB-sized messages, read from the platform."""
    factors = _factors(platform, option)
    return factors[max(factors)]


def test_the_loaded_platform_changes_only_the_loopback_the_per_flow_cap_and_the_large_loopback_pieces(platforms):
    """Between nodes the presets keep the published laws (as one route's factors); within a
    node the same laws below 6 MB, then the measured pieces; the loopback at the loaded rate;
    no per-message cost (E91)."""
    published = platforms["published"].read_text().splitlines()
    loaded = platforms["loaded"].read_text().splitlines()
    changed = [line for line in difflib.ndiff(published, loaded) if line[:1] in "+-"]
    removed = [c for c in changed if c.startswith("-")]
    assert len(removed) == 3  # the cluster's line, the two SMPI factors (now per route)
    added = [c for c in changed if c.startswith("+")]
    assert len(added) == 6 and any("network/TCP-gamma" in c for c in added)
    cluster = [c for c in added if "<cluster" in c]
    assert len(cluster) == 1 and 'loopback_bw="3.07GBps"' in cluster[0] and 'loopback_lat="0.0us"' in cluster[0]
    for option in ("lat-factor", "bw-factor"):
        law = _factors(platforms["published"], f"smpi/{option}")
        assert _factors(platforms["loaded"], f"hplsim/{option}") == law
        within = _factors(platforms["loaded"], f"hplsim/loopback-{option}")
        assert {k: v for k, v in within.items() if k < 6_000_000} == law
        assert min(k for k in within if k not in law) == 6_000_000


def test_within_a_node_one_transfer_moves_at_the_loaded_rate(flows, platforms, tmp_path):
    """E51: 3.30e-10 s/B one way under load (below the pieces from 6 MB), against the idle
    ping-pong's 18 GB/s."""
    loaded = _rate(flows, platforms["loaded"], 1, True, tmp_path, WITHIN_6_MB)
    assert loaded == pytest.approx(1 / dahu.LOADED_LOOPBACK_S_PER_BYTE, rel=0.005)
    idle = _rate(flows, platforms["published"], 1, True, tmp_path, WITHIN_6_MB)
    assert idle > 5 * loaded


def test_between_nodes_one_flow_is_capped_and_many_still_share_the_link(flows, platforms, tmp_path):
    """One flow at the loaded 0.316 of the link; two flows each keep that rate (the cap is
    per flow, not a share of the link); eight share the link's 12.5 GB/s as before. A
    bandwidth factor of 0.316 would have given the eight flows 0.316 of their share."""
    xml = platforms["loaded"]
    one = _rate(flows, xml, 1, False, tmp_path)
    assert one == pytest.approx(dahu.LOADED_REMOTE_SHARE * LINK, rel=0.005)
    assert _rate(flows, xml, 2, False, tmp_path) == pytest.approx(one, rel=0.005)
    assert _rate(flows, xml, 8, False, tmp_path) == pytest.approx(LINK * _bw_factor(xml, "hplsim/bw-factor") / 8,
                                                                   rel=0.005)
    # the published platform: one flow takes the whole link
    assert _rate(flows, platforms["published"], 1, False, tmp_path) == pytest.approx(
        LINK * _bw_factor(platforms["published"]), rel=0.005)


def test_e53s_platform_makes_a_message_above_the_eager_threshold_pay_the_loaded_per_message_cost(flows, platforms,
                                                                                                  tmp_path):
    """E53 (left in E91): against the same platform without the intercepts, a message from
    8 kB on takes the loaded per-message cost more (between nodes, less the published
    latency it replaces); one below the threshold takes the same time."""
    published = platforms["published"].read_text()
    e53, without = tmp_path / "e53.xml", tmp_path / "without.xml"
    e53.write_text(dahu.loaded_platform_xml(published, intercepts=True, large_pieces=False))
    without.write_text(dahu.loaded_platform_xml(published, intercepts=False, large_pieces=False))

    def extra(size: int, same_node: bool) -> float:
        return (_seconds(flows, e53, 1, same_node, size, tmp_path)[0]
                - _seconds(flows, without, 1, same_node, size, tmp_path)[0])

    route = 0.2e-6  # 2 x the cluster's 0.1 us
    published_factor = _factors(platforms["published"], "smpi/lat-factor")
    for size, start in ((12_000, 8133), (1_000_000, 63305)):
        assert extra(size, False) == pytest.approx(
            dahu.LOADED_REMOTE_INTERCEPTS[start] - route * published_factor[start], rel=1e-3)
    assert extra(1_000_000, True) == pytest.approx(dahu.LOADED_LOOPBACK_INTERCEPT, rel=1e-3)
    for same_node in (True, False):
        assert abs(extra(4_000, same_node)) < 0.1e-6
