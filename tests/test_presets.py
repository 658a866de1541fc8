"""The Dahu preset: the shipped model holds the published figures (each checked against the
CSVs here, by the test's own arithmetic), the published platform ships byte for byte, and in
a real emulation every rank gets its own host's and CPU's model."""

from __future__ import annotations

import pytest

from hplsim.models.modelfile import load_model
from hplsim.presets import DEFAULT, dahu
from helpers import run_cli


SHAPES = [(7812, 7812, 128), (2000, 128, 128), (128, 5000, 64)]


def test_every_cpus_dgemm_is_its_published_law(dahu_dir):
    """dgemm_model_per_cpu.csv, row by row: the CPU (global index 2 * node + 0/1) of host
    dahu-(node - 1) has mu and sigma = intercept + mnk MNK + mn MN + mk MK + nk NK."""
    import csv

    model = load_model(dahu.MODEL_FILE)
    with open(dahu_dir / "dgemm_model_per_cpu.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 65
    for r in rows:
        law = (model.default.kernels if r["cpu"] == "default"
               else model.hosts[f"dahu-{int(r['node']) - 1}.grid5000.fr"].cpus[int(r["cpu"]) - 2 * int(r["node"])])["dgemm"]
        assert law.family == "halfnormal"
        for m, n, k in SHAPES:
            x = {"intercept": 1, "mnk": m * n * k, "mn": m * n, "mk": m * k, "nk": n * k}
            sizes = {"m": m, "n": n, "k": k}
            assert float(law.mean(sizes)) == pytest.approx(sum(float(r[f"mu_{t}"]) * v for t, v in x.items()), rel=1e-12)
            assert float(law.sigma(sizes)) == pytest.approx(sum(float(r[f"sigma_{t}"]) * v for t, v in x.items()),
                                                            rel=1e-12)


def test_other_kernels_are_the_published_constants(dahu_dir):
    """other_kernels.csv: duration = size x mu (mean) and size x sigma; size 0 costs nothing
    (absent from the model); dtrsm's size is M*M*N on the left (HPL's only side here)."""
    import csv

    kernels = load_model(dahu.MODEL_FILE).default.kernels
    sizes = {"m": 300, "n": 70, "k": 300, "m0": 300, "m1": 40}
    size_of = {"M*M*N if side is left else M*N*N": 300 * 300 * 70, "M*N": 300 * 70, "N": 70, "1": 1, "M1*N": 40 * 70}
    with open(dahu_dir / "other_kernels.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["size"] == "0":
                assert r["kernel"] not in kernels
                continue
            law = kernels[r["kernel"]]
            assert float(law.mean(sizes)) == pytest.approx(float(r["mu"]) * size_of[r["size"]], rel=1e-12), r["kernel"]
            assert float(law.sigma(sizes)) == pytest.approx(float(r["sigma"]) * size_of[r["size"]], rel=1e-12)


def test_the_published_platform_ships_as_published(dahu_dir):
    assert dahu.PUBLISHED_PLATFORM_XML.read_bytes() == (dahu_dir / "dahu_platform.xml").read_bytes()


def test_the_preset_runs_the_loaded_platform():
    """E52, E91: the preset runs the published platform with Dahu's network measured under
    load (its rates, measured in SMPI against the figures of E51 and E85:
    tests/test_loaded_network.py, tests/test_route_factors.py), and the shipped copy is
    exactly its derivation, without E53's intercepts."""
    assert DEFAULT.platform == dahu.PLATFORM_XML
    published = dahu.PUBLISHED_PLATFORM_XML.read_text()
    assert dahu.PLATFORM_XML.read_text() == dahu.loaded_platform_xml(published, **dahu.PRESET_NETWORK)
    assert dahu.PRESET_NETWORK["intercepts"] is False and dahu.PRESET_NETWORK["large_pieces"] is True


def test_every_rank_gets_its_cpu_model(tmp_path, monkeypatch):
    """64 ranks on two Dahu nodes: ranks 0-31 on dahu-0, 32-63 on dahu-1; even local
    ranks on CPU 0, odd on CPU 1 (as in the real runs)."""
    monkeypatch.setenv("HPLSIM_REPORT_MAPPING", "1")
    out = run_cli("predict", "-N", "2000", "--nb", "64", "-P", "8", "-Q", "8", "--keep", tmp_path / "run")
    assert out.returncode == 0, out.stderr
    stderr = (next((tmp_path / "run").iterdir()) / "stderr.txt").read_text()
    rows = [line.split()[1:] for line in stderr.splitlines() if line.startswith("HPLSIM_MAPPING")]
    assert len(rows) == 64
    for rank, host, local, cpu in rows:
        rank, local, cpu = int(rank), int(local), int(cpu)
        assert host == dahu.host_name(rank // 32 + 1)
        assert local == rank % 32 and cpu == rank % 2


def test_preset_config_is_the_validation_runs():
    c = DEFAULT.config(50000)
    assert (c.n, c.nb, c.p, c.q, c.pfact, c.nbmin, c.ndiv, c.rfact, c.bcast, c.depth, c.swap) == (
        50000, 128, 32, 32, 1, 2, 2, 2, 2, 1, 0)
    assert c.l1_transposed and c.u_transposed and c.equil and c.align == 8 and c.pmap == 0


# ------------------------------------------------------------------------------ Stampede

from hplsim.platform.spec import load_platform  # noqa: E402
from hplsim.predict import ModelSource, predict  # noqa: E402
from hplsim.presets import get_preset, stampede  # noqa: E402
from hplsim.hpl.config import HplConfig  # noqa: E402


def test_stampede_offload_rule_at_its_boundaries():
    kernels = load_model(stampede.MODEL_FILE).resolve("host-0.stampede.tacc.utexas.edu", 0)
    dgemm, dtrsm = kernels["dgemm"], kernels["dtrsm"]

    def rate(model, m, n, k):
        return float(model.predict({"m": m, "n": n, "k": k})) / (m * n * k)

    assert rate(dgemm, 1281, 1281, 257) == pytest.approx(1.981e-12)  # offloaded to the Xeon Phi
    for m, n, k in [(1280, 4096, 1024), (4096, 1280, 1024), (4096, 4096, 256)]:
        assert rate(dgemm, m, n, k) == pytest.approx(1.029e-11)  # stays on the CPUs
    # dtrsm: k is the order of the triangle (m for HPL's left-side update, m = NB)
    assert rate(dtrsm, 1024, 513, 1024) == pytest.approx(1.954e-12)
    assert rate(dtrsm, 1024, 512, 1024) == pytest.approx(9.882e-12)
    assert rate(dtrsm, 512, 4096, 512) == pytest.approx(9.882e-12)


def test_stampede_preset_is_the_top500_run():
    preset = get_preset("stampede")
    c = preset.config(3_875_000)
    assert (c.n, c.nb, c.p, c.q, c.pmap, c.pfact, c.nbmin, c.ndiv, c.rfact, c.bcast, c.depth, c.swap) == (
        3_875_000, 1024, 77, 78, 1, 2, 4, 2, 1, 5, 0, 0)
    assert not (c.l1_transposed or c.u_transposed or c.equil) and c.align == 8
    platform = load_platform(preset.platform, preset.ranks_per_host)
    assert len(platform.slots) == 6400 and len(set(platform.slots)) == 6400  # one rank per node
    assert 'topo_parameters="2;20,320;1,8;1,2"' in platform.xml
    assert 'bw="7000000000.0Bps"' in platform.xml  # 56 Gbit/s


def test_stampede_one_node_runs_at_the_accelerator_rate():
    """One rank, no communication: HPL's trailing updates (M, N > 1280, K = NB = 1024) run on
    the Xeon Phi, so the run beats the CPUs' dgemm rate (2/1.029e-11 = 194 Gflop/s), which a
    model without the offload pieces cannot, and stays under the Phi's (2/1.981e-12 = 1,010)."""
    preset = get_preset("stampede")
    config = HplConfig(**{**preset.config(8192).as_dict(), "p": 1, "q": 1})
    platform = load_platform(preset.platform, preset.ranks_per_host)
    result = predict(config, platform, ModelSource.from_path(preset.model), seed=1)
    assert 2 / 1.029e-11 / 1e9 < result.gflops < 2 / 1.981e-12 / 1e9
