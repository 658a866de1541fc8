"""HPL.dat: what we write, HPL reads back the same; what we read is checked line by line."""

from __future__ import annotations

import pytest

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig, HplParams
from hplsim.hpl.hpldat import format_hpl_dat, parse_hpl_dat


def test_round_trip_keeps_every_list():
    params = HplParams(
        ns=(1000, 2000), nbs=(64, 128), grids=((1, 2), (2, 2), (4, 1)), pmap=1, threshold=-1.0,
        pfacts=(0, 1, 2), nbmins=(2, 4), ndivs=(2, 3), rfacts=(2,), bcasts=(0, 3, 5), depths=(0, 1),
        swap=1, swap_threshold=32, l1_transposed=False, u_transposed=True, equil=False, align=4,
    )
    assert parse_hpl_dat(format_hpl_dat(params)) == params


def test_configs_follow_hpl_loop_order():
    params = HplParams(ns=(1000, 2000), nbs=(32,), grids=((1, 2), (2, 1)), bcasts=(0, 1))
    order = [(c.p, c.q, c.n, c.bcast) for c in params.configs()]
    # grids outermost, then N, NB, DEPTH, BCAST ... as in HPL_pddriver.c
    assert order == [(1, 2, 1000, 0), (1, 2, 1000, 1), (1, 2, 2000, 0), (1, 2, 2000, 1),
                     (2, 1, 1000, 0), (2, 1, 1000, 1), (2, 1, 2000, 0), (2, 1, 2000, 1)]


def test_one_hpl_dat_lists_the_values_of_many_configs():
    # the real runs' archive keeps one HPL.dat for all its configurations
    configs = [HplConfig(n=n, nb=64, p=p, q=2, bcast=b, swap=1) for n in (1000, 2000) for p in (1, 2) for b in (5, 0)]
    params = HplParams.from_configs(configs, threshold=-1.0)
    assert (params.ns, params.grids, params.bcasts, params.swap, params.threshold) == \
        ((1000, 2000), ((1, 2), (2, 2)), (5, 0), 1, -1.0)
    assert set(params.configs()) == set(configs)
    assert HplParams.from_config(configs[0]).configs() == configs[:1]


def test_label_is_hpls_own():
    assert HplConfig(n=1000, nb=32, depth=1, bcast=2, rfact=2, ndiv=2, pfact=1, nbmin=4).label() == "WR12R2C4"


@pytest.mark.parametrize("mutate, message", [
    (lambda lines: lines[:10], "missing line"),
    (lambda lines: lines[:5] + ["abc"] + lines[6:], "not an integer"),
    (lambda lines: lines[:22] + ["7"] + lines[23:], "unknown BCAST code 7"),
    (lambda lines: lines[:4] + ["0"] + lines[5:], "number of problem sizes"),
    (lambda lines: lines[:24] + ["-1"] + lines[25:], "DEPTH value -1 is below 0"),
])
def test_malformed_files_name_the_line(mutate, message):
    lines = format_hpl_dat(HplParams(ns=(1000,), nbs=(32,))).splitlines()
    with pytest.raises(HplsimError, match=message):
        parse_hpl_dat("\n".join(mutate(lines)), "HPL.dat")
