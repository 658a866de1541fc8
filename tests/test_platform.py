"""Platform specs become SimGrid XML that SimGrid accepts; XML platforms give their hosts."""

from __future__ import annotations

import pytest

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import SPEC, bandwidth, duration, load_platform, spec_from_dict, xml_hosts
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT


def test_units():
    assert bandwidth("12.5GBps", "bw") == 12.5e9
    assert bandwidth("100Gbps", "bw") == 12.5e9
    assert duration("1us", "lat") == 1e-6
    assert duration(0, "lat") == 0.0
    with pytest.raises(HplsimError, match="unknown unit"):
        bandwidth("3 furlongs", "bw")


def test_star_and_fat_tree_run_and_place_ranks(tmp_path):
    model = ModelSource.from_path(DEFAULT.model)
    config = HplConfig(n=2000, nb=64, p=2, q=4)
    star = spec_from_dict({"nodes": 4, "cores_per_node": 2, "network": {"loopback_bandwidth": "20GBps"}})
    assert star.slots()[:4] == ["node-0", "node-0", "node-1", "node-1"]
    tree = spec_from_dict({"nodes": 8, "network": {"topology": "fat-tree", "fat_tree": "2;4,2;1,2;1,1",
                                                      "sharing_policy": "FATPIPE"}})
    assert 'topology="FAT_TREE"' in tree.to_xml()
    for spec in (star, tree):
        assert predict(config, spec.platform(), model, seed=1).gflops > 0
    cyclic = spec_from_dict({"nodes": 2, "cores_per_node": 2, "placement": "cyclic"})
    assert cyclic.slots() == ["node-0", "node-1", "node-0", "node-1"]


@pytest.mark.parametrize("doc, message", [
    ({"cores_per_node": 2}, "nodes: expected a positive integer (the field is required), got nothing"),
    ({"nodes": 0}, "nodes: expected a positive integer, got 0"),
    ({"nodes": True}, "nodes: expected a positive integer, got True"),
    ({"nodes": 2, "network": {"topology": "ring"}}, "network.topology: expected one of star, fat-tree, fat-tree-star, got 'ring'"),
    ({"nodes": 2, "network": {"topology": "fat-tree"}},
     "network.fat_tree: expected SimGrid's topo_parameters (a fat-tree needs 'fat_tree'), got nothing"),
    ({"nodes": 2, "network": {"sharing_policy": "WIDE"}},
     "network.sharing_policy: expected one of SHARED, SPLITDUPLEX, FATPIPE, got 'WIDE'"),
    ({"nodes": 2, "network": {"latency": "-1us"}}, "network.latency: expected a time that is not negative, got '-1us'"),
    ({"nodes": 2, "network": {"bandwidth": 10}}, "network.bandwidth: expected a bandwidth with its unit, e.g. "
                                                 "12.5GBps (bytes/s) or 100Gbps (bits/s), got 10, which has no unit"),
    ({"nodes": 2, "smpi": {"smpi/bw-factor": "1"}}, "smpi.smpi/bw-factor: expected a ';'-separated list of "
                                                    "size:factor, got '1'"),
    ({"nodes": 2, "smpi": {"smpi/os": "0:1e-6"}}, "smpi.smpi/os: expected a ';'-separated list of "
                                                  "size:offset:per_byte, got '0:1e-6'"),
    ({"nodes": 2, "colour": "blue"}, "expected only the fields format, version, name, nodes, cores_per_node, "
                                     "ranks_per_node, placement, host_prefix, host_suffix, network, smpi, mpi, "
                                     "got unknown field(s) colour"),
    ({"nodes": 2, "mpi": {"iprobe_reports": "eventually"}},
     "mpi.iprobe_reports: expected one of arrived, progressed, progressed-between-nodes, got 'eventually'"),
    ({"nodes": 2, "mpi": {"eager_limit": 4096}}, "mpi: expected only the fields iprobe_reports, "
                                                 "got unknown field(s) eager_limit"),
    ({"nodes": 2, "mpi": "openmpi"}, "mpi: expected a mapping of MPI behaviours, got str"),
    ({"nodes": 4, "network": {"topology": "fat-tree", "fat_tree": "2;4,4;1,2;1,2"}},
     "network.fat_tree: expected a fat-tree whose leaves (the product of its down counts) are the platform's 4 "
     "nodes, got '2;4,4;1,2;1,2', which has 16 leaves"),
    ([1, 2], "expected a mapping of platform fields at the top level, got list"),
])
def test_bad_specs(doc, message):
    """One line: the file, the field's path, what was expected, what was found."""
    with pytest.raises(HplsimError) as err:
        spec_from_dict(doc, "p.yaml")
    assert str(err.value) == f"platform spec p.yaml: {message}"


def test_spec_defaults_and_nulls_read_as_before():
    spec = spec_from_dict({"nodes": 2, "cores_per_node": None, "network": None, "smpi": None, "mpi": {}})
    assert (spec.cores_per_node, spec.bandwidth, spec.latency, spec.smpi, spec.iprobe_reports) == \
        (1, 12.5e9, 1e-6, {}, "arrived")
    assert spec.loopback_bandwidth is None and spec.fat_tree is None and spec.name == "cluster"
    # a null where the spec never gave a default stays an error, as it was
    for doc in ({"nodes": 2, "network": {"bandwidth": None}}, {"nodes": 2, "placement": None},
                {"nodes": 2, "format": None}):
        with pytest.raises(HplsimError):
            spec_from_dict(doc)


def test_the_format_page_shows_every_declared_field():
    from pathlib import Path

    from hplsim import formats

    page = (Path(__file__).resolve().parents[1] / "docs" / "formats" / "platform.md").read_text()
    example = page.split("```yaml", 1)[1].split("```", 1)[0]
    missing = [path for path, _, _ in formats.described(SPEC) if f"{path.split('.')[-1]}:" not in example]
    assert missing == []


def test_iprobe_semantics_is_part_of_the_platform():
    plain = spec_from_dict({"nodes": 1, "cores_per_node": 2})
    ompi = spec_from_dict({"nodes": 1, "cores_per_node": 2, "mpi": {"iprobe_reports": "progressed"}})
    assert plain.platform().iprobe_reports == "arrived" and ompi.platform().iprobe_reports == "progressed"
    # results stores key on the digest: a different MPI behaviour is a different platform,
    # and platforms without the block keep the digest they had before it existed
    assert plain.platform().digest() != ompi.platform().digest()
    explicit = spec_from_dict({"nodes": 1, "cores_per_node": 2, "mpi": {"iprobe_reports": "arrived"}})
    assert explicit.platform().digest() == plain.platform().digest()


def test_published_dahu_xml_hosts():
    hosts = xml_hosts(DEFAULT.platform.read_text(), "dahu")
    assert len(hosts) == 32 and hosts[0] == ("dahu-0.grid5000.fr", 32)
    platform = load_platform(DEFAULT.platform)
    assert len(platform.slots) == 1024 and platform.slots[31] == platform.slots[0] != platform.slots[32]
    assert platform.config == {}  # the file's own <config> block carries its SMPI options


def test_platform_command_writes_xml_and_hostfile(tmp_path):
    import yaml

    from helpers import run_cli

    spec = tmp_path / "p.yaml"
    spec.write_text(yaml.safe_dump({"nodes": 3, "cores_per_node": 2}))
    out = run_cli("platform", spec, "-o", tmp_path / "o")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "o" / "hostfile").read_text().split() == ["node-0", "node-0", "node-1", "node-1",
                                                                 "node-2", "node-2"]
    assert xml_hosts((tmp_path / "o" / "platform.xml").read_text(), "x") == [(f"node-{i}", 2) for i in range(3)]
    assert "note" not in out.stdout
    # the probe semantics has no place in SimGrid's XML: say so rather than lose it silently
    spec.write_text(yaml.safe_dump({"nodes": 3, "cores_per_node": 2, "mpi": {"iprobe_reports": "progressed"}}))
    out = run_cli("platform", spec, "-o", tmp_path / "o")
    assert out.returncode == 0 and "iprobe_reports: progressed is not in the XML" in out.stdout


def test_the_documented_spec_example_loads():
    """docs/formats/platform.md's example is a valid spec, as written."""
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).resolve().parents[1] / "docs" / "formats" / "platform.md").read_text()
    doc = yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S).group(1))
    spec = spec_from_dict(doc, "platform.md")
    assert spec.nodes == 16 and spec.topology == "star" and spec.smpi["smpi/async-small-thresh"] == "8133"
    assert spec.platform().iprobe_reports == "progressed"
