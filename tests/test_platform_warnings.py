"""An implausible network value (a bandwidth under 1 MB/s or over 10 TB/s, a latency over 1 s)
in an XML or YAML platform gives one warning naming the element and the unit SimGrid read it
in, before the run: most likely a missed or mistyped unit (``bw="12.5"`` is 12.5 B/s)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hplsim.errors import reset_warnings
from hplsim.platform.spec import load_platform

XML = """<?xml version="1.0"?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="c" prefix="n-" suffix="" radical="0-1" speed="1Gf" core="2" {attrs}/>
  </zone>
</platform>
"""

LINKS_XML = """<?xml version="1.0"?>
<platform version="4.1">
  <zone id="world" routing="Full">
    <host id="a" speed="1Gf"/>
    <host id="b" speed="1Gf"/>
    <link id="ab" bandwidth="{bw}" latency="{lat}"/>
    <route src="a" dst="b"><link_ctn id="ab"/></route>
  </zone>
</platform>
"""


@pytest.fixture(autouse=True)
def _fresh_warnings():
    reset_warnings()  # a warning is printed once per command: each test is a command
    yield
    reset_warnings()


def _warnings(tmp_path, name: str, text: str, capsys) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    load_platform(path)
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("hplsim: warning: ") for line in err), err
    return [line.removeprefix("hplsim: warning: ") for line in err]


@pytest.mark.parametrize("attrs, expected", [
    ('bw="12.5" lat="1us"', '<cluster id="c"> bw="12.5" has no unit: SimGrid reads 12.5 B/s (implausible: under 1 MB/s)'),
    ('bw="500kBps" lat="1us"', '<cluster id="c"> bw="500kBps" is 500000 B/s (implausible: under 1 MB/s)'),
    ('bw="20TBps" lat="1us"', '<cluster id="c"> bw="20TBps" is 2e+13 B/s (implausible: over 10 TB/s)'),
    ('bw="10GBps" lat="5"', '<cluster id="c"> lat="5" has no unit: SimGrid reads 5 s (implausible: over 1 s)'),
    ('bw="10GBps" lat="2s"', '<cluster id="c"> lat="2s" is 2 s (implausible: over 1 s)'),
    ('bw="10GBps" lat="1us" loopback_bw="0.5MBps"',
     '<cluster id="c"> loopback_bw="0.5MBps" is 500000 B/s (implausible: under 1 MB/s)'),
])
def test_an_implausible_xml_cluster_value_is_named(tmp_path, capsys, attrs, expected):
    path = tmp_path / "p.xml"
    assert _warnings(tmp_path, "p.xml", XML.format(attrs=attrs), capsys) == [f"platform {path}: {expected}"]


def test_each_implausible_value_of_a_link_has_its_warning(tmp_path, capsys):
    got = _warnings(tmp_path, "links.xml", LINKS_XML.format(bw="100", lat="3"), capsys)
    where = f"platform {tmp_path / 'links.xml'}: <link id=\"ab\">"
    assert got == [f'{where} bandwidth="100" has no unit: SimGrid reads 100 B/s (implausible: under 1 MB/s)',
                   f'{where} latency="3" has no unit: SimGrid reads 3 s (implausible: over 1 s)']


@pytest.mark.parametrize("attrs", [
    'bw="10GBps" lat="1us"',
    'bw="125000000" lat="0.000001"',  # no units, but plausible in B/s and s: SimGrid's own convention
    'bw="1MBps" lat="1s" loopback_bw="10TBps" loopback_lat="0"',  # the limits themselves
])
def test_plausible_xml_values_give_no_warning(tmp_path, capsys, attrs):
    assert _warnings(tmp_path, "p.xml", XML.format(attrs=attrs), capsys) == []


def _spec(network: dict) -> str:
    import yaml
    return yaml.safe_dump({"format": "hplsim-platform", "nodes": 2, "network": network})


@pytest.mark.parametrize("network, expected", [
    ({"bandwidth": "100kBps"}, 'network.bandwidth="100kBps" is 100000 B/s (implausible: under 1 MB/s)'),
    ({"bandwidth": "800Kbps"}, 'network.bandwidth="800Kbps" is 100000 B/s (implausible: under 1 MB/s)'),
    ({"latency": "2s"}, 'network.latency="2s" is 2 s (implausible: over 1 s)'),
    ({"loopback_bandwidth": "20TBps"}, 'network.loopback_bandwidth="20TBps" is 2e+13 B/s (implausible: over 10 TB/s)'),
    ({"backbone_latency": "1500ms", "backbone_bandwidth": "10GBps"},
     'network.backbone_latency="1500ms" is 1.5 s (implausible: over 1 s)'),
])
def test_an_implausible_yaml_value_is_named(tmp_path, capsys, network, expected):
    got = _warnings(tmp_path, "p.yaml", _spec(network), capsys)
    assert got == [f"platform spec {tmp_path / 'p.yaml'}: {expected}"]


def test_plausible_yaml_values_give_no_warning(tmp_path, capsys):
    network = {"bandwidth": "10Gbps", "latency": "1us", "loopback_bandwidth": "20GBps", "loopback_latency": "0",
               "backbone_bandwidth": "1MBps", "backbone_latency": "1s"}
    assert _warnings(tmp_path, "p.yaml", _spec(network), capsys) == []


def test_the_builtin_platforms_give_no_warning(capsys):
    from hplsim.presets import PRESETS
    for preset in PRESETS.values():
        preset.load_platform()
    assert capsys.readouterr().err == ""


def test_predict_warns_before_the_run(tmp_path):
    """The interface the issue names: `hplsim predict --platform p.xml` with a unitless bandwidth."""
    path = tmp_path / "p.xml"
    path.write_text(XML.format(attrs='bw="12.5" lat="1us"'))
    out = subprocess.run([sys.executable, "-m", "hplsim.cli", "predict", "--platform", str(path), "-N", "400",
                          "--nb", "32", "-P", "2", "-Q", "2", "--seed", "1", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    warning = (f'platform {path}: <cluster id="c"> bw="12.5" has no unit: SimGrid reads 12.5 B/s '
               "(implausible: under 1 MB/s)")
    err = out.stderr.splitlines()
    assert err.count(f"hplsim: warning: {warning}") == 1
    # the run went ahead, at the speed SimGrid was told
    result = json.loads(out.stdout)
    assert warning in result[0]["warnings"]
    assert result[0]["gflops"] < 1e-3
