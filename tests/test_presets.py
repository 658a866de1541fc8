"""The Dahu preset: the shipped files are exactly the conversion of the published data, and
in a real emulation every rank gets its own host's and CPU's model."""

from __future__ import annotations

import os
import subprocess
import sys

from hplsim.models.modelfile import load_model, model_to_dict
from hplsim.presets import DEFAULT, dahu


def test_shipped_model_is_the_conversion_of_the_published_csv(dahu_dir):
    assert model_to_dict(dahu.convert(dahu_dir)) == model_to_dict(load_model(dahu.MODEL_FILE))
    assert dahu.PLATFORM_XML.read_text() == (dahu_dir / "dahu_platform.xml").read_text()


def test_every_rank_gets_its_cpu_model(tmp_path):
    """64 ranks on two Dahu nodes: ranks 0-31 on dahu-0, 32-63 on dahu-1; even local
    ranks on CPU 0, odd on CPU 1 (as in the real runs)."""
    env = {**os.environ, "HPLSIM_REPORT_MAPPING": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "hplsim.cli", "predict", "-N", "2000", "--nb", "64", "-P", "8", "-Q", "8",
         "--keep", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=300,
    )
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
