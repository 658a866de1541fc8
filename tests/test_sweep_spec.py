"""Sweep specs, plans and variants: parsing, expansion, invalid combinations, what-if
transformations, run keys. No simulation runs here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.models.modelfile import load_model
from hplsim.platform.spec import load_platform
from hplsim.predict import ModelSource
from hplsim.presets import DEFAULT
from hplsim.sweep.plan import make_plan
from hplsim.sweep.spec import grids_for, load_spec
from hplsim.sweep.tasks import config_hash, config_key
from hplsim.sweep.variants import host_dgemm_time, scale_hosts, slowest_hosts

ACCEPTANCE = """\
hpl:
  n: [2000, 3000]
  nb: [64]
  grids: [[1, 2], [2, 1]]
  bcast: [0, 1]
"""


def spec_file(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_acceptance_spec_plans_eight_runs_with_hpl_defaults(tmp_path):
    plan = make_plan(load_spec(spec_file(tmp_path, ACCEPTANCE)), tmp_path / "work", None)
    assert len(plan.tasks) == 8 and not plan.invalid
    defaults = HplConfig(n=1000)
    for t in plan.tasks:
        assert t.config.nb == 64 and t.seed == 0
        assert (t.config.depth, t.config.pfact, t.config.swap) == (defaults.depth, defaults.pfact, defaults.swap)
    assert {(t.config.p, t.config.q) for t in plan.tasks} == {(1, 2), (2, 1)}
    # the built-in platform and model, with the digests `hplsim predict` reports
    variant = plan.variants[0]
    assert variant.platform.label == "builtin:dahu"
    assert variant.model.digest == ModelSource.from_path(DEFAULT.model).digest
    assert variant.platform_digest == DEFAULT.load_platform().digest()
    assert not (tmp_path / "work").exists()  # nothing derived, nothing written


def test_ranges_names_ranks_and_seeds(tmp_path):
    spec = load_spec(spec_file(tmp_path, """
        hpl:
          N: {from: 1000, to: 5000, step: 1000}
          NB: {from: 32, to: 256, factor: 2}
          ranks: 16
          bcast: [1ring, 2RINGM, 5]
          swap: spread-roll
          equil: [true, false]
        seeds: {from: 1, to: 3, step: 1}
    """))
    assert spec.axes["n"] == (1000, 2000, 3000, 4000, 5000)
    assert spec.axes["nb"] == (32, 64, 128, 256)
    assert spec.axes["bcast"] == (0, 3, 5)
    assert spec.axes["swap"] == (1,)
    assert spec.seeds == (1, 2, 3)
    assert grids_for(16) == [(1, 16), (2, 8), (4, 4)]
    plan = make_plan(spec, tmp_path, None)
    assert len(plan.tasks) == 5 * 4 * 3 * 3 * 2 * 3 and not plan.invalid  # 3 grids, 3 bcasts, 2 equils, 3 seeds
    assert {(t.config.p, t.config.q) for t in plan.tasks} == {(1, 16), (2, 8), (4, 4)}


def test_grids_all_means_the_whole_platform(tmp_path):
    spec = load_spec(spec_file(tmp_path, "hpl: {n: 40000, nb: 128, grids: all}\n"))
    plan = make_plan(spec, tmp_path, None)
    assert {(t.config.p, t.config.q) for t in plan.tasks} == set(grids_for(1024))
    assert all(t.config.ranks == 1024 for t in plan.tasks)


def test_invalid_combinations_are_counted_and_skipped(tmp_path):
    spec = load_spec(spec_file(tmp_path, """
        hpl:
          n: [100, 2000]
          nb: [64, 256]
          grids: [[1, 2], [64, 64]]
    """))
    plan = make_plan(spec, tmp_path, None)
    # 2 N x 2 NB x 2 grids = 8: NB=256 > N=100 on both grids (2), 64x64 > 1024 slots (3 more)
    assert len(plan.tasks) == 3
    assert len(plan.invalid) == 5
    reasons = " ".join(i.reason for i in plan.invalid)
    assert "NB (256) must not exceed N (100)" in reasons and "rank slots" in reasons


def test_hpl_dat_is_a_spec(tmp_path):
    from hplsim.hpl.config import HplParams
    from hplsim.hpl.hpldat import write_hpl_dat

    write_hpl_dat(HplParams(ns=(2000, 3000), nbs=(64,), grids=((1, 2), (2, 1)), bcasts=(0, 1)), tmp_path / "HPL.dat")
    spec = load_spec(tmp_path / "HPL.dat")
    plan = make_plan(spec, tmp_path, None)
    yaml_plan = make_plan(load_spec(spec_file(tmp_path, ACCEPTANCE)), tmp_path, None)
    assert sorted(t.hash for t in plan.tasks) == sorted(t.hash for t in yaml_plan.tasks)


@pytest.mark.parametrize("text, message", [
    ("hpl: [1, 2]\n", "hpl: expected a mapping"),
    ("hpl: {nb: 64}\n", "the problem size n is required"),
    ("hpl: {n: 2000, nbs: [64]}\n", "unknown parameter(s) nbs"),
    ("hpl: {n: [2000, x]}\n", "hpl.n[1]: 'x' is not an integer"),
    ("hpl: {n: 2000, bcast: [ring]}\n", "unknown BCAST 'ring'"),
    ("hpl: {n: 2000, bcast: [1, 7]}\n", "hpl.bcast[1]: BCAST must be in [0, 5], got 7"),
    ("hpl: {n: 2000, ndiv: 1}\n", "hpl.ndiv: NDIV must be >= 2, got 1"),
    ("hpl: {n: 2000, equil: 1}\n", "hpl.equil: 1 is not true/false"),
    ("hpl: {n: {from: 5, to: 1, step: 1}}\n", "range 'to' (1) is below 'from' (5)"),
    ("hpl: {n: {from: 1, to: 5}}\n", "exactly one of 'step' and 'factor'"),
    ("hpl: {n: 2000, grids: [[1, 2, 3]]}\n", "hpl.grids[0]: a grid is [P, Q]"),
    ("hpl: {n: 2000}\nseed: [1]\n", "unknown field(s) seed"),
    ("hpl: {n: 2000}\nplatform: nowhere.yaml\n", "does not exist"),
    ("hpl: {n: 2000}\nplatform: {variations: [{bandwidth: -1}]}\n",
     "platform.variations[0].bandwidth: expected a positive factor (2: twice as fast) or an absolute value with "
     "its unit (25GBps), got -1"),
    ("hpl: {n: 2000}\nplatform: {variations: [{topology: fat-tree}]}\n",
     "platform.variations[0].fat_tree: expected SimGrid's topo_parameters, e.g. \"2;4,8;1,2;1,2\" (a fat-tree "
     "needs 'fat_tree'), got nothing"),
    ("hpl: {n: 2000}\nplatform: {variations: [{fat_tree: '2;2,2;1,2;1,1'}]}\n",
     "platform.variations[0].topology: expected fat-tree or fat-tree-star ('fat_tree' goes with those topologies), "
     "got nothing"),
    ("hpl: {n: 2000}\nmodel: {variations: [{drop_slowest: 150}]}\n",
     "model.variations[0].drop_slowest: expected a percentage of hosts, in (0, 100), got 150"),
    ("hpl: {n: 2000}\nmodel: {variations: [{drop_slowest: {hosts: 0}}]}\n",
     "model.variations[0].drop_slowest.hosts: expected a positive integer, got 0"),
    ("hpl: {n: 2000}\nmodel: {variations: [{speed: {'dahu-1*': '2'}}]}\n",
     "model.variations[0].speed.dahu-1*: expected a positive speed factor (2: kernels take half the time), got '2'"),
    ("hpl: {n: 2000}\nmodel: {variations: [{}, {}]}\n",
     "model.variations: expected variations with distinct names, got two variations named 'base'"),
    ("hpl: {n: 2000}\nplatform: {variations: null}\n",
     "platform.variations: expected a non-empty list of variations (use {} for the unchanged one), got nothing"),
    ("hpl: {n: 2000}\nplatform: 5\n", "platform: expected a platform file, a list of variations, or a mapping of "
                                      "path, ranks_per_host, variations, got int"),
    ("hpl: {n: 2000}\nseeds: [1, -1]\n", "seeds[1]: expected an integer in 0 .. 2**64-1 (the emulation's seeds "
                                         "are unsigned 64-bit), got -1"),
    ("hpl: {n: [2000\n", "not valid YAML at line"),
    ("hpl: {n: 2000}\nplatform: {variations: [{iprobe_reports: late}]}\n",
     "platform.variations[0].iprobe_reports: expected one of arrived, progressed, progressed-between-nodes, got 'late'"),
])
def test_malformed_specs_say_where(tmp_path, text, message):
    with pytest.raises(HplsimError) as err:
        load_spec(spec_file(tmp_path, text))
    assert message in str(err.value)
    assert "sweep spec" in str(err.value)


def test_run_key_covers_everything_a_result_depends_on():
    c = HplConfig(n=2000, nb=64, p=1, q=2)
    base = config_hash(config_key(c, 1, "p" * 64, "m" * 64, "0.1.0"))
    assert base == config_hash(config_key(HplConfig(n=2000, nb=64, p=1, q=2), 1, "p" * 64, "m" * 64, "0.1.0"))
    others = [
        config_key(HplConfig(n=2000, nb=64, p=1, q=2, bcast=0), 1, "p" * 64, "m" * 64, "0.1.0"),
        config_key(c, 2, "p" * 64, "m" * 64, "0.1.0"),
        config_key(c, 1, "q" * 64, "m" * 64, "0.1.0"),
        config_key(c, 1, "p" * 64, "n" * 64, "0.1.0"),
        config_key(c, 1, "p" * 64, "m" * 64, "0.2.0"),
    ]
    assert len({base, *map(config_hash, others)}) == 6


# ------------------------------------------------------------------------------ variants


def test_platform_variations_on_the_builtin_xml(tmp_path):
    spec = load_spec(spec_file(tmp_path, """
        hpl: {n: 2000, nb: 64, grids: [[1, 2]]}
        platform:
          ranks_per_host: 1
          variations:
            - {}
            - {name: fast, bandwidth: 2, latency: 0.5}
            - {name: abs, bandwidth: 25GBps}
            - {nodes: 4}
            - {name: ft, nodes: 4, topology: fat-tree, fat_tree: "2;2,2;1,2;1,1"}
    """))
    plan = make_plan(spec, tmp_path / "work", None)
    v = {x.platform_variation: x for x in plan.variants}
    assert len({x.platform_digest for x in plan.variants}) == 5
    assert 'bw="25000000000.0Bps"' in v["fast"].platform.xml and 'lat="5e-08s"' in v["fast"].platform.xml
    assert 'bw="25000000000.0Bps"' in v["abs"].platform.xml
    assert len(v["nodes=4"].platform.slots) == 4 and len(v["base"].platform.slots) == 32
    assert 'topology="FAT_TREE"' in v["ft"].platform.xml
    assert len(list((tmp_path / "work" / "platforms").glob("*.xml"))) == 4  # derived ones, for reading
    with pytest.raises(HplsimError, match="has 8 leaves but the cluster has 4 nodes"):
        make_plan(load_spec(spec_file(tmp_path, """
            hpl: {n: 2000}
            platform: {variations: [{nodes: 4, topology: fat-tree, fat_tree: "2;4,2;1,2;1,1"}]}
        """)), tmp_path / "work", None)


def test_mpi_probe_semantics_as_a_what_if(tmp_path):
    """Another MPI library as a variation: on the built-in XML (where SimGrid has no place
    for it) and on a spec; a different semantics is a different platform digest."""
    spec = load_spec(spec_file(tmp_path, """
        hpl: {n: 2000, nb: 64, grids: [[1, 2]]}
        platform:
          ranks_per_host: 1
          variations: [{}, {iprobe_reports: progressed}, {bandwidth: 2}]
    """))
    plan = make_plan(spec, tmp_path / "work", None)
    v = {x.platform_variation: x for x in plan.variants}
    # the preset's own semantics (E39), kept by a variation that does not change it
    assert v["base"].platform.iprobe_reports == "progressed-between-nodes"
    assert v["bandwidth x2"].platform.iprobe_reports == "progressed-between-nodes"
    assert v["iprobe_reports=progressed"].platform.iprobe_reports == "progressed"
    assert v["base"].platform.xml == v["iprobe_reports=progressed"].platform.xml
    assert v["base"].platform_digest != v["iprobe_reports=progressed"].platform_digest


def test_variation_lists_as_shorthand(tmp_path):
    spec = load_spec(spec_file(tmp_path, """
        hpl: {n: 2000}
        platform: [{}, {bandwidth: 2}]
        model: [{}, {noise: false}]
    """))
    assert [v.name for v in spec.platform_variations] == ["base", "bandwidth x2"]
    assert [v.name for v in spec.model_variations] == ["base", "noise off"]
    assert spec.platform_path is None and spec.model_path is None


def test_platform_variations_on_a_platform_spec(tmp_path):
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump({
        "nodes": 4, "cores_per_node": 2, "network": {"bandwidth": "10GBps", "latency": "2us"}}))
    spec = load_spec(spec_file(tmp_path, """
        hpl: {n: 2000, nb: 64, grids: all}
        platform:
          path: cluster.yaml
          variations: [{}, {bandwidth: 0.5}, {nodes: 8},
                       {name: tree, topology: fat-tree, fat_tree: "2;2,2;1,2;1,1"},
                       {name: star, topology: fat-tree-star, fat_tree: "2;2,2;1,2;1,1"}]
    """))
    plan = make_plan(spec, tmp_path / "work", None)
    v = {x.platform_variation: x for x in plan.variants}
    assert 'bw="5000000000.0Bps"' in v["bandwidth x0.5"].platform.xml
    assert len(v["nodes=8"].platform.slots) == 16
    # the fat-tree's hosts on a star with its route latencies (E90): another platform
    assert 'FAT_TREE' in v["tree"].platform.xml and 'FAT_TREE' not in v["star"].platform.xml
    assert '<prop id="hplsim/fat-tree-latencies" value="2;2,2;1,2;1,1"/>' in v["star"].platform.xml
    with pytest.raises(HplsimError, match="fat-tree-star takes a platform spec"):
        make_plan(load_spec(spec_file(tmp_path, """
            hpl: {n: 2000}
            platform: {variations: [{nodes: 4, topology: fat-tree-star, fat_tree: "2;2,2;1,2;1,1"}]}
        """)), tmp_path / "work2", None)
    # grids: all = every P <= Q with P*Q = the variant's slots
    assert {(t.config.p, t.config.q) for t in plan.tasks if t.variant == 2} == {(1, 16), (2, 8), (4, 4)}
    assert {(t.config.p, t.config.q) for t in plan.tasks if t.variant == 0} == {(1, 8), (2, 4)}


def test_speed_scaling_divides_the_durations_of_the_matched_hosts():
    model = load_model(DEFAULT.model)
    host = "dahu-3.grid5000.fr"
    scaled = scale_hosts(model, {host: 2.0})
    for cpu in range(model.cpus_of(host)):
        before, after = model.resolve(host, cpu), scaled.resolve(host, cpu)
        assert set(before) == set(after)
        for k in before:
            sizes = {v: 512 for v in before[k].variables}
            assert after[k].predict(sizes) == pytest.approx(before[k].predict(sizes) / 2)
    other = "dahu-4.grid5000.fr"
    assert scaled.resolve(other, 0)["dgemm"] is model.resolve(other, 0)["dgemm"]


def test_drop_slowest_removes_the_slowest_hosts_slots(tmp_path):
    model = load_model(DEFAULT.model)
    hosts = [f"dahu-{i}.grid5000.fr" for i in range(32)]
    times = {h: host_dgemm_time(model, h) for h in hosts}
    slowest = max(times, key=times.get)
    assert slowest_hosts(model, hosts, None, 1) == [slowest]
    assert len(slowest_hosts(model, hosts, 10, None)) == 3  # round(3.2)

    spec = load_spec(spec_file(tmp_path, f"""
        hpl: {{n: 2000, nb: 64, grids: [[1, 2]]}}
        platform: {{ranks_per_host: 1}}
        model:
          variations:
            - {{}}
            - {{name: slow-first, speed: {{"dahu-0.*": 0.25}}}}
            - {{name: drop, drop_slowest: {{hosts: 1}}}}
            - {{name: both, speed: {{"dahu-0.*": 0.25}}, drop_slowest: {{hosts: 1}}}}
            - {{noise: false}}
    """))
    plan = make_plan(spec, tmp_path / "work", None)
    v = {x.model_variation: x for x in plan.variants}
    assert slowest not in v["drop"].platform.slots and len(v["drop"].platform.slots) == 31
    assert v["drop"].model.digest == v["base"].model.digest
    assert v["both"].platform.slots[0] == "dahu-1.grid5000.fr"  # dahu-0, made 4x slower, is dropped
    assert v["slow-first"].model.digest != v["base"].model.digest
    # a derived model is a file named by its digest, which `hplsim predict --model` can use
    derived = tmp_path / "work" / "models" / f"{v['slow-first'].model.digest[:16]}.yaml"
    assert ModelSource.from_path(derived).digest == v["slow-first"].model.digest
    assert v["noise off"].model.model.default.kernels["dgemm"].family == "none"
    with pytest.raises(HplsimError, match="matches no host"):
        make_plan(load_spec(spec_file(tmp_path, """
            hpl: {n: 2000}
            model: {variations: [{speed: {"node-*": 2}}]}
        """)), tmp_path / "work", None)
