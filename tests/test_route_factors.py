"""Per-route network factors (csrc/kernel-models/netlaws.c, lab notebook E84): a platform's
root zone may give transfers within a host (the loopback) and between hosts their own
latency and bandwidth factors, which SimGrid 3.32's smpi/lat-factor and smpi/bw-factor
cannot (one law for every route). The runtime installs them as SimGrid's factor callbacks;
the modelled exchanges price with the same laws.

References: SMPI's own clock on one message (a small MPI program, tests/csrc/flows.c, built
with the runtime's netlaws.c), the message-level pivot exchange of the same run, and the
measured rates the Dahu writer puts in (RingRong, docs/validation.md E84)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import spec_from_dict
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT, dahu
from test_loaded_network import _seconds, flows  # noqa: F401  (the fixture: flows.c with the runtime's factors)


#: the exchange's messages (NB = 32: 256-544 bytes) cross a breakpoint, and the two routes'
#: laws differ in every piece, so a message priced with the other route's law shows
PER_ROUTE = {
    "hplsim/lat-factor": "0:1.13;300:1.5;8133:3.0",
    "hplsim/bw-factor": "0:0.47;300:0.6;8133:0.68",
    "hplsim/loopback-lat-factor": "0:4.0;300:9.0;8133:2.0",
    "hplsim/loopback-bw-factor": "0:0.2;300:0.9;8133:0.3",
}
OVERHEADS = {
    "smpi/os": "0:1.5e-7:1e-10;8133:0:0",
    "smpi/or": "0:1.2e-6:8e-11;8133:0:0",
    "smpi/async-small-thresh": "8133",
    "smpi/send-is-detached-thresh": "8133",
}


def _with_zone_props(xml: str, props: dict[str, str]) -> str:
    zone = re.search(r'<zone id="[^"]*" routing="[^"]*">', xml).group(0)
    lines = "".join(f'\n    <prop id="{k}" value="{v}"/>' for k, v in props.items())
    return xml.replace(zone, zone + lines, 1)


SPEC = {"nodes": 4, "cores_per_node": 2,
        "network": {"bandwidth": "12.5GBps", "latency": "1us", "loopback_bandwidth": "20GBps",
                    "loopback_latency": "0.2us"}}


def platform(props: dict[str, str], smpi: dict[str, str] = OVERHEADS):
    """The platform spec's way: the per-route factors among its smpi: options."""
    return spec_from_dict({**SPEC, "smpi": {**smpi, **props}}).platform()


def xml_platform(props: dict[str, str], smpi: dict[str, str] = OVERHEADS):
    """A SimGrid XML's way, past the spec's checks: the properties on the root zone."""
    base = spec_from_dict({**SPEC, "smpi": smpi}).platform()
    return replace(base, xml=_with_zone_props(base.xml, props))


@pytest.fixture(scope="module")
def model() -> ModelSource:
    return ModelSource.from_path(DEFAULT.model, "builtin:dahu")


def test_the_modelled_exchange_prices_each_route_with_its_own_laws(model):
    """One process column over two ranks a node, no look-ahead: each pivot exchange sends
    messages within a node and between nodes. The same laws given as per-route factors and
    as smpi/ options run to the same bits (the callbacks are SimGrid's own path); with laws
    that differ by route, the model lands on SimGrid's messages as closely as it does with
    one law (what is left is the exchange's two flows a node sharing its link), where a
    loopback priced with the remote law is off by half a microsecond a message."""
    config = HplConfig(n=1200, nb=32, p=8, q=1, depth=0)
    same = {**PER_ROUTE, "hplsim/loopback-lat-factor": PER_ROUTE["hplsim/lat-factor"],
            "hplsim/loopback-bw-factor": PER_ROUTE["hplsim/bw-factor"]}
    one_law = {**OVERHEADS, "smpi/lat-factor": PER_ROUTE["hplsim/lat-factor"],
               "smpi/bw-factor": PER_ROUTE["hplsim/bw-factor"]}
    runs = {name: predict(config, plat, model, seed=1, timeout=300, exchanges="checked")
            for name, plat in (("per route", platform(PER_ROUTE)), ("same", platform(same)),
                               ("smpi", spec_from_dict({**SPEC, "smpi": one_law}).platform()))}
    assert (runs["same"].time_s, runs["same"].exchanges) == (runs["smpi"].time_s, runs["smpi"].exchanges)
    assert runs["per route"].time_s != runs["same"].time_s
    e, reference = runs["per route"].exchanges, runs["smpi"].exchanges
    assert e["checked"] == 1200 * 8 and e["winners_differ"] == 0
    assert e["model_minus_messages_abs_max_s"] <= 1.2 * reference["model_minus_messages_abs_max_s"] < 2e-7
    assert abs(e["model_minus_messages_mean_s"]) < 1e-8


def test_the_spec_writes_them_on_the_root_zone():
    xml = platform(PER_ROUTE).xml
    zone = xml[xml.index('<zone id="world"'):]
    assert all(f'<prop id="{k}" value="{v}"/>' in zone for k, v in PER_ROUTE.items())
    assert "hplsim/" not in xml[:xml.index('<zone id="world"')]


def test_part_of_the_per_route_factors_is_refused(model):
    props = {k: v for k, v in PER_ROUTE.items() if "loopback" not in k}
    with pytest.raises(HplsimError, match="all four per-route factors"):
        platform(props)
    with pytest.raises(HplsimError, match="2 of the 4 per-route factors"):
        predict(HplConfig(n=200, nb=32, p=2, q=1), xml_platform(props), model, seed=1, timeout=120)


def test_per_route_factors_beside_smpi_factors_are_refused(model):
    """SimGrid refuses factor callbacks when smpi/lat-factor or smpi/bw-factor is set: the
    spec says so on load, a SimGrid XML in one line from the run."""
    smpi = {**OVERHEADS, "smpi/lat-factor": "0:1.2"}
    with pytest.raises(HplsimError, match="not beside them"):
        platform(PER_ROUTE, smpi)
    with pytest.raises(HplsimError, match="per-route factors.*lat"):
        predict(HplConfig(n=200, nb=32, p=2, q=1), xml_platform(PER_ROUTE, smpi), model, seed=1, timeout=120)


def _one_way(flows: Path, platform: Path, same_node: bool, size: int, tmp: Path) -> float:
    """One message's time, from test_loaded_network's runner of flows.c."""
    (seconds,) = _seconds(flows, platform, 1, same_node, size, tmp)
    return seconds


@pytest.mark.parametrize("intercepts", [True, False])
def test_dahus_pieces_above_6_mb_run_at_the_measured_rate_within_a_node_only(flows, tmp_path, intercepts):
    """`loaded_platform_xml(large_pieces=True)`, without E53's intercepts (the presets'
    platform since E91) and with them (E53's): a 7-16 MB message within a node runs at RingRong's
    rate (1.888 GB/s, no intercept); below 6 MB within a node, and between nodes at every
    size, each message takes the same platform's time without the pieces to the bit (E85:
    SimGrid 3.32 cannot give the remote route's measured cap by size)."""
    published = dahu.PUBLISHED_PLATFORM_XML.read_text()
    large, base = tmp_path / "large.xml", tmp_path / "base.xml"
    large.write_text(dahu.loaded_platform_xml(published, intercepts=intercepts, large_pieces=True))
    base.write_text(dahu.loaded_platform_xml(published, intercepts=intercepts, large_pieces=False))
    if not intercepts:
        assert large.read_text() == dahu.PLATFORM_XML.read_text()
    a, b = (_one_way(flows, large, True, size, tmp_path) for size in (7_000_000, 16_000_000))
    assert 9_000_000 / (b - a) == pytest.approx(1.888e9, rel=0.002)
    assert 16_000_016 / b == pytest.approx(1.888e9, rel=0.002)  # no intercept: the 16-byte envelope only
    for same_node, size in [(True, 4_000), (True, 100_000), (True, 5_000_000),
                            (False, 4_000), (False, 5_000_000), (False, 7_000_000), (False, 16_000_000)]:
        assert _one_way(flows, large, same_node, size, tmp_path) == _one_way(flows, base, same_node, size,
                                                                             tmp_path), (same_node, size)


def test_a_simgrid_xml_is_checked_before_the_run(tmp_path):
    """The spec's rules hold for a SimGrid XML too, named by file, before SimGrid starts."""
    from hplsim.platform.spec import load_platform

    path = tmp_path / "p.xml"
    path.write_text(xml_platform({k: v for k, v in PER_ROUTE.items() if "loopback" not in k}).xml)
    with pytest.raises(HplsimError, match=r"p.xml: root zone: expected all four per-route factors"):
        load_platform(path)
    path.write_text(xml_platform({**PER_ROUTE, "hplsim/bw-factor": "0:0.5;8133"}).xml)
    with pytest.raises(HplsimError, match=r"p.xml: root zone hplsim/bw-factor: expected a ';'-separated list"):
        load_platform(path)
    path.write_text(xml_platform(PER_ROUTE, {**OVERHEADS, "smpi/bw-factor": "0:0.5"}).xml)
    with pytest.raises(HplsimError, match="not beside them"):
        load_platform(path)
    path.write_text(xml_platform(PER_ROUTE).xml)
    assert len(load_platform(path).slots) == 8


def test_a_bandwidth_factor_of_zero_is_refused_on_load():
    """SimGrid aborts on it ("Bandwidth factor cannot be 0"): the spec names the option."""
    with pytest.raises(HplsimError, match="hplsim/loopback-bw-factor: expected positive bandwidth factors"):
        platform({**PER_ROUTE, "hplsim/loopback-bw-factor": "0:0.5;6000000:0"})
    with pytest.raises(HplsimError, match="smpi/bw-factor: expected positive bandwidth factors"):
        spec_from_dict({**SPEC, "smpi": {"smpi/bw-factor": "0:0"}})
