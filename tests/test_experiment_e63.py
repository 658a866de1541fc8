"""validation.md E63 brackets what HPL's update pieces (n = k = NB) cost per call with a
variant of the Dahu laws (`docs/experiments/model_variants.py piecenomk`) where those calls
pay no `mk` term; this holds the variant to its definition through the model reader the
emulation uses: the pieces lose exactly the law's m·k charge, every other call keeps its
price, on every CPU."""

import subprocess
import sys
from pathlib import Path

import pytest

from hplsim.models.modelfile import load_model
from hplsim.presets import dahu

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "experiments" / "model_variants.py"


def test_piecenomk_drops_the_mk_charge_of_update_pieces_only(tmp_path):
    out = tmp_path / "nomk.yaml"
    subprocess.run([sys.executable, str(SCRIPT), "piecenomk", str(dahu.MODEL_FILE), str(out), "128"],
                   check=True, timeout=300)
    base, new = load_model(dahu.MODEL_FILE), load_model(out)
    piece = {"m": 7812, "n": 128, "k": 128}
    others = [{"m": 7812, "n": 7812, "k": 128}, {"m": 7812, "n": 64, "k": 64},   # big update, panel
              {"m": 7812, "n": 129, "k": 128}, {"m": 7812, "n": 128, "k": 127}]
    hosts = [dahu.host_name(i) for i in (1, 25, 32)]  # first, the slowest CPU 0 (E62), last
    checked = 0
    for host in hosts:
        for cpu in range(base.cpus_of(host)):
            b, n = base.resolve(host, cpu)["dgemm"], new.resolve(host, cpu)["dgemm"]
            mk = b.mean.to_mapping()["mk"] * piece["m"] * piece["k"]
            assert mk > 0
            assert float(n.predict(piece)) == pytest.approx(float(b.predict(piece)) - mk, rel=1e-12)
            for sizes in others:
                assert float(n.predict(sizes)) == float(b.predict(sizes))
            for kernel in ("dtrsm", "dgemv"):
                assert new.resolve(host, cpu)[kernel] == base.resolve(host, cpu)[kernel]
            checked += 1
    assert checked >= 6
