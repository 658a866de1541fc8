"""The one table of HPL parameters (`hplsim.hpl.parameters`) and what is derived from it:
the config's fields and checks, HPL.dat's lines, the options, the sweep spec, the docs."""

from __future__ import annotations

import dataclasses

import click
import pytest
from click.testing import CliRunner

from conftest import REPO
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig, HplParams
from hplsim.hpl.hpldat import format_hpl_dat, parse_hpl_dat
from hplsim.hpl.options import HPL_OPTION_KEYS, OPTION_PARAMETERS, _option, hpl_options, params_from_options
from hplsim.hpl.parameters import LOOP_ORDER, PARAMETER, PARAMETERS, SINGLE, docs_block
from hplsim.sweep.spec import HPL_AXES, parse_spec


def test_config_fields_are_the_tables_in_its_order_with_its_types_and_defaults():
    fields = dataclasses.fields(HplConfig)
    assert [f.name for f in fields] == [p.name for p in PARAMETERS]
    for f, p in zip(fields, PARAMETERS):
        assert f.type == p.type.__name__, f.name
        if p.default is None:
            assert f.default is dataclasses.MISSING
        else:
            assert f.default == p.default and type(f.default) is p.type, f.name


def test_params_have_one_field_per_parameter_plus_the_threshold_and_output():
    fields = {f.name: f for f in dataclasses.fields(HplParams)}
    assert set(fields) == {p.list_field for p in PARAMETERS} | {"threshold", "output"}
    defaults = HplParams(ns=(1000,))
    for p in PARAMETERS:
        if p.name != "n":
            assert defaults.values(p.name) == (p.default,), p.name
    # one config from the defaults: the config's own defaults
    assert defaults.configs() == [HplConfig(n=1000)]


def test_hpl_dat_has_each_parameter_on_its_line_and_no_line_twice():
    params = HplParams(ns=(1000, 2000), nbs=(64,), grids=((1, 2), (2, 2)), bcasts=(0, 5), swap_threshold=33,
                       align=5, equil=False)
    lines = format_hpl_dat(params).splitlines()
    assert len(lines) == 31  # HPL.dat's fixed layout, read by line number
    declared = [p.line for p in PARAMETERS] + [p.line - 1 for p in PARAMETERS if p.count]
    assert len(declared) == len(set(declared))
    for p in PARAMETERS:
        words = lines[p.line - 1].split()
        shown = [str(p.true_code if v else 1 - p.true_code) if p.type is bool else str(v)
                 for v in params.values(p.name)]
        assert words[:len(shown)] == shown and lines[p.line - 1].endswith(p.comment), p.name


@pytest.mark.parametrize("p", PARAMETERS, ids=lambda p: p.name)
def test_config_and_reader_refuse_the_same_values(p):
    lo, hi = p.bounds
    bad = [v for v in ((lo - 1) if lo is not None else None, (hi + 1) if hi is not None else None) if v is not None]
    if p.type is bool:
        bad = [2]
    assert bad, "every parameter has a bound"
    for value in bad:
        with pytest.raises(HplsimError, match=p.label):
            HplConfig(**{"n": 1000, "nb": 64, p.name: value})
        lines = format_hpl_dat(HplParams(ns=(1000,), nbs=(64,))).splitlines()
        lines[p.line - 1] = str(value)
        with pytest.raises(HplsimError, match=f"line {p.line}: .*{p.label}"):
            parse_hpl_dat("\n".join(lines), "HPL.dat")


def test_loop_order_is_hpls_driver_order():
    # the grids outermost, then N, NB, DEPTH, BCAST, RFACT, PFACT, NBMIN, NDIV (HPL_pddriver.c)
    assert [p.name for p in LOOP_ORDER] == ["p", "q", "n", "nb", "depth", "bcast", "rfact", "pfact", "nbmin", "ndiv"]
    assert {p.name for p in SINGLE} | {p.name for p in LOOP_ORDER} == set(PARAMETER)


def test_every_parameter_is_a_sweep_field_and_checked_there():
    assert set(HPL_AXES) | {"p", "q"} == set(PARAMETER)  # P and Q: the spec's grids
    for p in PARAMETERS:
        if p.name in HPL_AXES and p.type is int:
            lo, hi = p.bounds
            bad = lo - 1 if lo is not None and lo > 0 else hi + 1 if hi is not None else -1
            with pytest.raises(HplsimError, match=f"hpl.{p.name}: {p.label} must be"):
                parse_spec({"hpl": {"n": 2000, p.name: bad}}, "s.yaml")


def test_options_are_the_tables():
    @click.command()
    @hpl_options
    def cmd(**opts):
        click.echo(repr(sorted(k for k, v in opts.items() if v is not None)))

    names = {param.name for param in cmd.params}
    assert names == set(HPL_OPTION_KEYS) == {p.name for p in OPTION_PARAMETERS} | {"hpl_dat"}
    spellings = {s for param in cmd.params for s in [*param.opts, *param.secondary_opts]}
    assert {s for p in OPTION_PARAMETERS for s in p.spellings()} <= spellings
    r = CliRunner().invoke(cmd, ["-N", "1000,2000", "--swap", "1"])
    assert r.exit_code == 0 and r.output.strip() == "['n', 'swap']"


@pytest.mark.parametrize("p", OPTION_PARAMETERS, ids=lambda p: p.name)
def test_each_option_reaches_its_hpl_dat_line(p):
    if p.type is bool:
        value, args = not p.default, [p.spellings()[1 if p.default else 0]]
    else:
        value = next(c for c in p.codes if c != p.default) if p.codes else (p.default or 0) + 1
        args = [p.option, str(value)]

    @click.command()
    @hpl_options
    def cmd(**opts):
        click.echo(format_hpl_dat(params_from_options(HplParams(ns=(1000,)), opts)), nl=False)

    r = CliRunner().invoke(cmd, args)
    assert r.exit_code == 0, r.output
    code = (p.true_code if value else 1 - p.true_code) if p.type is bool else value
    assert r.output.splitlines()[p.line - 1].split()[0] == str(code)


def test_a_flag_option_is_none_unless_given():
    @click.command()
    @_option(dataclasses.replace(PARAMETER["equil"], option="--equil"))
    def cmd(equil):
        click.echo(repr(equil))

    assert [CliRunner().invoke(cmd, args).output.strip() for args in ([], ["--equil"], ["--no-equil"])] == \
        ["None", "True", "False"]


def test_options_replace_the_base_lists():
    opts = {k: None for k in HPL_OPTION_KEYS}
    base = HplParams(ns=(1000,), grids=((1, 2), (2, 1)), swap=0)
    got = params_from_options(base, {**opts, "nb": (32, 64), "q": (4, 4), "swap_threshold": 16})
    assert got == base.replace(nbs=(32, 64), grids=((1, 4), (2, 4)), swap_threshold=16)


def test_docs_table_is_generated_from_the_table():
    text = (REPO / "docs" / "sweep.md").read_text()
    assert docs_block() in text, ("docs/sweep.md's table of HPL parameters is stale: "
                                  "run python -m hplsim.hpl.parameters docs/sweep.md")
