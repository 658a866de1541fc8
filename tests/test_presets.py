"""The Dahu preset: the shipped files are exactly the conversion of the published data, and
in a real emulation every rank gets its own host's and CPU's model."""

from __future__ import annotations

import pytest

from hplsim.models.modelfile import load_model, model_to_dict
from hplsim.presets import DEFAULT, dahu
from helpers import run_cli


def test_shipped_model_is_the_conversion_of_the_published_csv(dahu_dir):
    assert model_to_dict(dahu.convert(dahu_dir)) == model_to_dict(load_model(dahu.MODEL_FILE))
    assert dahu.PUBLISHED_PLATFORM_XML.read_text() == (dahu_dir / "dahu_platform.xml").read_text()


def test_the_preset_platform_is_the_published_one_with_the_loaded_network():
    """E52: the preset runs the published platform with Dahu's network measured under load,
    derived by one function (its rates: tests/test_loaded_network.py)."""
    assert DEFAULT.platform == dahu.PLATFORM_XML
    assert dahu.PLATFORM_XML.read_text() == dahu.loaded_platform_xml(dahu.PUBLISHED_PLATFORM_XML.read_text())


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


def test_stampede_shipped_model_is_the_published_laws():
    assert model_to_dict(stampede.model()) == model_to_dict(load_model(stampede.MODEL_FILE))


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
