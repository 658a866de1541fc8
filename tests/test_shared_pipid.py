"""HPL_pipid's answer shared by all ranks (csrc/kernel-models/pipid.c, docs/validation.md
E72): the first rank to turn a panel's pivots into row moves computes them with HPL's own
function, the others copy that answer when their inputs are the same entry by entry. It
costs no simulated time, so every run must land on the same bits as the reference
(HPLSIM_SHARED_PIPID=off: every rank computes its own), under both swap algorithms (the
binary exchange calls it from HPL_pdlaswp00*, the spread-roll from HPL_pdlaswp01*), both
layouts of U, and a last panel narrower than NB."""

from __future__ import annotations

import pytest

from hplsim.hpl.config import HplConfig
from hplsim.platform.spec import load_platform
from hplsim.predict import ModelSource, predict
from hplsim.presets import DEFAULT


def _times(monkeypatch, config: HplConfig) -> dict[str, float]:
    platform = load_platform(DEFAULT.platform, DEFAULT.ranks_per_host)
    model = ModelSource.from_path(DEFAULT.model)
    out = {}
    for shared in ("off", "on"):
        monkeypatch.setenv("HPLSIM_SHARED_PIPID", shared)
        out[shared] = predict(config, platform, model, seed=5).time_s
    return out


@pytest.mark.parametrize("swap", [0, 1])
@pytest.mark.parametrize("u_transposed", [True, False])
def test_shared_pivot_moves_give_the_same_run(monkeypatch, swap, u_transposed):
    # N = 2,000 with NB = 48: 41 full panels and one of 32 rows; 4 process rows, so most
    # pivots move rows between ranks; look-ahead keeps two panels in flight
    config = HplConfig(n=2000, nb=48, p=4, q=3, swap=swap, depth=1, bcast=1,
                       u_transposed=u_transposed)
    times = _times(monkeypatch, config)
    assert times["on"] == times["off"], times

