"""The model file: strict reading, exact round trip, and the C runtime drawing the same
law as the Python `KernelModel.sample` (checked on real draws of the runtime's code)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import yaml
from scipy import stats

from hplsim.errors import HplsimError
from hplsim.hpl.build import sampler_binary
from hplsim.models.modelfile import (
    HostModel, KernelModel, ModelFile, Polynomial, load_model, model_from_dict, model_to_dict,
    parse_term, save_model, write_runtime_table,
)
from hplsim.presets import DEFAULT


def doc(kernels: dict, **extra) -> dict:
    return {"format": "hplsim-model", "version": 1, "default": {"kernels": kernels}, **extra}


def test_terms():
    assert parse_term("mnk", ("m", "n", "k")) == (1, 1, 1)
    assert parse_term("nn", ("n",)) == (2,)
    assert parse_term("m1*n", ("m0", "m1", "n")) == (0, 1, 1)
    assert parse_term("intercept", ("m", "n")) == (0, 0)
    with pytest.raises(ValueError):
        parse_term("mq", ("m", "n"))


def test_round_trip_of_the_shipped_dahu_model(tmp_path):
    model = load_model(DEFAULT.model)
    save_model(model, tmp_path / "copy.yaml")
    assert model_to_dict(load_model(tmp_path / "copy.yaml")) == model_to_dict(model)


def test_resolution_cpu_over_host_over_default():
    model = load_model(DEFAULT.model)
    host = "dahu-3.grid5000.fr"
    cpu0, cpu1 = model.resolve(host, 0), model.resolve(host, 1)
    assert cpu0["dgemm"] is model.hosts[host].cpus[0]["dgemm"]
    assert cpu1["dgemm"] is model.hosts[host].cpus[1]["dgemm"]
    assert cpu0["dtrsm"] is model.default.kernels["dtrsm"]
    assert model.resolve("elsewhere", 0)["dgemm"] is model.default.kernels["dgemm"]
    assert "dswap" not in cpu0  # "size 0" kernels cost nothing: absent


@pytest.mark.parametrize("kernels, message", [
    ({"dgemm": {"mean": {"mnk": "x"}}}, "dgemm.mean.mnk: expected a finite number, got 'x'"),
    ({"dgemm": {"mean": {"mnk": -1e-10}}}, "dgemm.mean.mnk: expected a coefficient >= 0 (the constant and the "
                                           "leading terms: large calls would take negative time), got -1e-10"),
    ({"dgemm": {"mean": {"intercept": -1e-6, "mnk": 1e-10}}}, "dgemm.mean.intercept: expected a coefficient >= 0"),
    ({"dgemm": {"noise": {"family": "none"}}}, "dgemm.mean: expected a mapping of term -> coefficient (e.g. mnk: "
                                               "1.1e-11, intercept: 2e-6), got nothing"),
    ({"dgemm": {"mean": {"mnq": 1.0}}}, "dgemm.mean.mnq: expected a term of dgemm's sizes m, n, k (e.g. mnk, mn, "
                                        "intercept), got unknown size variable 'q'"),
    ({"dgemmm": {"mean": {"mnk": 1.0}}}, "kernels.dgemmm: expected a kernel among HPL_dlacpy, "),
    ({"dgemm": {"mean": {"mnk": 1e-10}, "noise": {"family": "cauchy"}}},
     "dgemm.noise.family: expected one of none, normal, halfnormal, mixture, got 'cauchy'"),
    ({"dgemm": {"mean": {"mnk": 1e-10}, "noise": {"family": "normal"}}}, "dgemm.noise.sigma: expected a mapping of "
                                                                         "term -> coefficient"),
    ({"dgemm": {"mean": {"mnk": 1e-10}, "noise": {"family": "mixture", "components": [
        {"weight": 0.5, "sigma": {"intercept": 1e-6}}]}}},
     "dgemm.noise.components: expected weights that sum to 1, got weights sum to 0.5"),
    ({"dgemm": {"mean": {"mnk": 1e-10}, "noise": {"family": "mixture", "components": [
        {"weight": -1, "sigma": {"intercept": 1e-6}}]}}},
     "dgemm.noise.components[0].weight: expected a finite number >= 0, got -1"),
    ({"dgemm": {"mean": {"mnk": float("nan")}}}, "dgemm.mean.mnk: expected a finite number, got nan"),
])
def test_invalid_models_are_refused_with_the_field_path(kernels, message):
    """One line: the file, the field's path, what was expected and what was found."""
    with pytest.raises(HplsimError) as err:
        model_from_dict(doc(kernels), "m.yaml")
    assert str(err.value).startswith("model file m.yaml: default.kernels.") and message in str(err.value)


@pytest.mark.parametrize("top, message", [
    ({"format": "other", "version": 1}, "format: expected 'hplsim-model', got 'other'"),
    ({"format": "hplsim-model", "version": 9}, "version: expected 1 (the version this hplsim reads), got 9"),
    ({"format": "hplsim-model", "version": 1}, "expected a 'default' entry or at least one host, "
                                               "got neither a 'default' entry nor any host"),
    ({"format": "hplsim-model", "version": 1, "default": {}, "colour": 1},
     "expected only the fields format, version, description, provenance, default, hosts, population, uncertainty, "
     "got unknown field(s) colour"),
    ({"format": "hplsim-model", "version": 1, "hosts": {"h": {"cpus": [None]}}},
     "hosts.h.cpus[0]: expected a mapping with 'kernels', got nothing"),
    ({"format": "hplsim-model", "version": 1, "default": {}, "uncertainty": {"dgemm": {"rsd": 1.5}}},
     "uncertainty.dgemm.rsd: expected a relative standard deviation in [0, 1), got 1.5"),
])
def test_invalid_model_files_name_the_field(top, message):
    with pytest.raises(HplsimError) as err:
        model_from_dict(top, "m.yaml")
    assert str(err.value) == f"model file m.yaml: {message}"


def test_cross_terms_may_be_negative():
    model = model_from_dict(doc({"dgemm": {"mean": {"intercept": 1e-6, "mnk": 7e-11, "mn": -5e-10}}}))
    assert model.default.kernels["dgemm"].mean.to_mapping()["mn"] == -5e-10


def test_not_yaml_and_wrong_format(tmp_path):
    (tmp_path / "a.yaml").write_text("default: [unclosed")
    with pytest.raises(HplsimError, match="not valid YAML"):
        load_model(tmp_path / "a.yaml")
    with pytest.raises(HplsimError, match=r"format: expected 'hplsim-model' \(the field is required\), got nothing"):
        model_from_dict({"version": 1, "default": {}})


def _c_draws(model: ModelFile, kernel: str, sizes: tuple, count: int, tmp_path, host="h", local=0, seed=5):
    table = tmp_path / "t.table"
    write_runtime_table(model, [host], table)
    out = subprocess.run(
        [str(sampler_binary()), str(table), host, str(local), str(seed), "0", kernel,
         *map(str, sizes), str(count)],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert out[0] == "cpu"
    return int(out[1]), np.array([float(x) for x in out[2:]])


@pytest.mark.parametrize("noise", [
    {"family": "normal", "sigma": {"intercept": 2e-7, "mnk": 1e-12}},
    {"family": "halfnormal", "sigma": {"intercept": 2e-7, "mnk": 1e-12}},
    {"family": "mixture", "components": [
        {"weight": 0.7, "shift": {"intercept": 0.0}, "sigma": {"intercept": 1e-7}},
        {"weight": 0.3, "shift": {"intercept": 5e-6}, "sigma": {"intercept": 3e-7}}]},
])
def test_runtime_draws_follow_the_python_law(noise, tmp_path):
    model = model_from_dict(doc({"dgemm": {"mean": {"intercept": 1e-5, "mnk": 7e-11}, "noise": noise}}))
    sizes = (64, 64, 64)
    cpu, c_draws = _c_draws(model, "dgemm", sizes, 20000, tmp_path)
    py = model.default.kernels["dgemm"].sample(dict(zip("mnk", sizes)), np.random.default_rng(1))
    py_draws = model.default.kernels["dgemm"].sample(
        {"m": np.full(20000, 64), "n": np.full(20000, 64), "k": np.full(20000, 64)}, np.random.default_rng(2))
    assert np.all(c_draws >= 0)
    expected = model.default.kernels["dgemm"].predict(dict(zip("mnk", sizes)))
    assert c_draws.mean() == pytest.approx(float(expected), rel=2e-3)
    # same distribution: two-sample Kolmogorov-Smirnov between the C and Python draws
    assert stats.ks_2samp(c_draws, py_draws).pvalue > 1e-3
    assert py.shape == ()


def test_runtime_is_reproducible_and_seed_sensitive(tmp_path):
    model = load_model(DEFAULT.model)
    _, a = _c_draws(model, "dgemm", (128, 128, 128), 50, tmp_path, host="dahu-1.grid5000.fr", seed=9)
    _, b = _c_draws(model, "dgemm", (128, 128, 128), 50, tmp_path, host="dahu-1.grid5000.fr", seed=9)
    _, c = _c_draws(model, "dgemm", (128, 128, 128), 50, tmp_path, host="dahu-1.grid5000.fr", seed=10)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_runtime_picks_the_cpu_of_the_local_rank(tmp_path):
    model = load_model(DEFAULT.model)
    host = "dahu-7.grid5000.fr"
    for local in range(4):
        cpu, draws = _c_draws(model, "dgemm", (2048, 2048, 128), 4000, tmp_path, host=host, local=local)
        assert cpu == local % 2
        expected = model.hosts[host].cpus[local % 2]["dgemm"].predict({"m": 2048, "n": 2048, "k": 128})
        assert draws.mean() == pytest.approx(float(expected), rel=3e-3)
    # a host absent from the table uses the default entry
    _, draws = _c_draws(model, "dgemm", (2048, 2048, 128), 4000, tmp_path, host="other")
    assert draws.mean() == pytest.approx(float(model.default.kernels["dgemm"].predict(
        {"m": 2048, "n": 2048, "k": 128})), rel=3e-3)


@pytest.mark.parametrize("coefficient", [0.1, 1 / 3, 7.547639e-09, 2.5e-300, 123456.789])
def test_runtime_reads_each_number_of_the_table_to_the_bit(coefficient, tmp_path):
    """The runtime cuts the table into tokens itself (model.c, E76): a noiseless law's draw
    is its intercept, the very double the table was written from."""
    model = model_from_dict(doc({"dgemm": {"mean": {"intercept": coefficient}}}))
    _, draws = _c_draws(model, "dgemm", (8, 8, 8), 3, tmp_path)
    assert list(draws) == [coefficient] * 3


def test_runtime_refuses_an_unknown_host_without_default(tmp_path):
    model = ModelFile(hosts={"a": HostModel(kernels={"dgemm": KernelModel(
        "dgemm", Polynomial.from_mapping(("m", "n", "k"), {"mnk": 1e-10}))})})
    table = tmp_path / "t.table"
    write_runtime_table(model, ["a"], table)
    out = subprocess.run([str(sampler_binary()), str(table), "b", "0", "1", "0", "dgemm", "1", "1", "1", "1"],
                         capture_output=True, text=True)
    assert out.returncode != 0 and "host b is not in the model" in out.stderr


@pytest.mark.parametrize("order", [("a", "host", "end", "b"), ("b", "end", "host", "a")])
def test_runtime_finds_its_host_wherever_its_block_is(order, tmp_path):
    """A rank parses only its host's block and the default (model.c passes over the others
    by their `host` keyword, E77): each host, even one named after a keyword of the table,
    still draws its own law, first, in the middle or last, and an unknown host the
    default's."""
    law = {name: 1e-6 * (i + 1) for i, name in enumerate(sorted(order))}
    model = ModelFile(
        default=HostModel(kernels={"dgemm": KernelModel("dgemm", Polynomial.from_mapping(("m", "n", "k"), {"1": 5e-3}))}),
        hosts={h: HostModel(kernels={"dgemm": KernelModel(
            "dgemm", Polynomial.from_mapping(("m", "n", "k"), {"1": law[h]}))}) for h in order})
    table = tmp_path / "t.table"
    write_runtime_table(model, list(order), table)
    for host, expected in [*law.items(), ("elsewhere", 5e-3)]:
        out = subprocess.run([str(sampler_binary()), str(table), host, "0", "1", "0", "dgemm", "1", "1", "1", "1"],
                             capture_output=True, text=True, check=True)
        assert [float(v) for v in out.stdout.split()[2:]] == [expected], host


# ----------------------------------------------------------------------- pieces

WIDE_TALL = {"dgemm": {
    "mean": {"mnk": 2.0e-11, "intercept": 1e-6},
    "noise": {"family": "normal", "sigma": {"intercept": 1e-7}},
    "pieces": [{"when": "n > m", "mean": {"mnk": 2.2e-11, "intercept": 1e-6}},
               {"when": ["m >= 2*n", "k < 100"], "mean": {"mnk": 1.9e-11}}],
}}


def test_pieces_choose_the_law_by_the_call_sizes_and_round_trip(tmp_path):
    model = model_from_dict(doc(WIDE_TALL))
    dgemm = model.default.kernels["dgemm"]
    sizes = {"m": np.array([1000, 1500, 4000, 4000]), "n": np.array([2000, 1000, 1000, 1000]),
             "k": np.array([64, 64, 64, 128])}
    flops = sizes["m"] * sizes["n"] * sizes["k"]
    # wide -> first piece; tall, m < 2n -> base; m >= 2n and k < 100 -> second; k = 128 -> base
    np.testing.assert_allclose(dgemm.predict(sizes), [2.2e-11 * flops[0] + 1e-6, 2.0e-11 * flops[1] + 1e-6,
                                                      1.9e-11 * flops[2], 2.0e-11 * flops[3] + 1e-6])
    save_model(model, tmp_path / "m.yaml")
    again = load_model(tmp_path / "m.yaml")
    assert model_to_dict(again) == model_to_dict(model)
    assert model_to_dict(again)["default"]["kernels"]["dgemm"]["pieces"][1]["when"] == ["m >= 2*n", "k < 100"]
    # the deterministic variant keeps the pieces, without noise
    plain = model.without_noise().default.kernels["dgemm"]
    assert plain.family == "none" and len(plain.pieces) == 2
    np.testing.assert_allclose(plain.predict(sizes), dgemm.predict(sizes))


def test_the_runtime_draws_from_the_piece_the_python_model_chooses(tmp_path):
    model = model_from_dict(doc(WIDE_TALL))
    dgemm = model.default.kernels["dgemm"]
    for shape in ((1000, 2000, 64), (1500, 1000, 64), (2000, 1000, 64), (4000, 1000, 128), (1500, 1500, 64)):
        _, draws = _c_draws(model, "dgemm", shape, 2000, tmp_path)
        expected = float(dgemm.predict(dict(zip("mnk", shape))))
        assert draws.mean() == pytest.approx(expected, rel=1e-3), shape
        # only the base law has noise: the pieces' draws are exact
        assert (draws.std() > 0) == (shape in ((1500, 1000, 64), (4000, 1000, 128), (1500, 1500, 64)))


ALIASED_SWAP = {"HPL_dlaswp01T": {
    "mean": {"mn": 4e-9, "intercept": 2e-6},
    "pieces": [{"when": "ld % 512 == 0", "mean": {"mn": 6.6e-9, "intercept": 2e-6}}],
}}


def test_a_row_swap_piece_by_leading_dimension_round_trips_and_the_runtime_follows_it(tmp_path):
    """The row swaps' conditions may name the call's leading dimension (`ld`, not a size of
    the polynomial): `ld % 512 == 0` picks the calls whose columns all fall in one L1 set
    (E25). Python and the C runtime choose the same law."""
    model = model_from_dict(doc(ALIASED_SWAP))
    swap = model.default.kernels["HPL_dlaswp01T"]
    sizes = {"m": np.array([370.0, 370.0, 370.0]), "n": np.array([4000.0] * 3), "ld": np.array([2560, 2440, 1536])}
    np.testing.assert_allclose(swap.predict(sizes), [6.6e-9 * 370 * 4000 + 2e-6, 4e-9 * 370 * 4000 + 2e-6,
                                                     6.6e-9 * 370 * 4000 + 2e-6])
    save_model(model, tmp_path / "m.yaml")
    assert model_to_dict(load_model(tmp_path / "m.yaml")) == model_to_dict(model)
    for ld in (2560, 2440, 1536, 2048 + 8):
        _, draws = _c_draws(model, "HPL_dlaswp01T", (370, 4000, ld), 3, tmp_path)
        expected = float(swap.predict({"m": 370.0, "n": 4000.0, "ld": float(ld)}))
        assert draws == pytest.approx([expected] * 3, rel=1e-12), ld
    with pytest.raises(HplsimError, match="needs each call's ld"):
        swap.predict({"m": 370.0, "n": 4000.0})
    with pytest.raises(HplsimError, match=r"dgemm\.pieces.*'ld' is not one of m, n, k"):
        model_from_dict(doc({"dgemm": {"mean": {"mnk": 1e-11}, "pieces": [
            {"when": "ld % 512 == 0", "mean": {"mnk": 1e-11}}]}}), "m.yaml")


@pytest.mark.parametrize("pieces, message", [
    ([{"when": "n >> m", "mean": {"mnk": 1e-11}}], "is neither a size"),
    ([{"when": "n = m", "mean": {"mnk": 1e-11}}], "expected A > B"),
    ([{"when": "m % 1 == 0", "mean": {"mnk": 1e-11}}], "modulus must be at least 2"),
    ([{"when": "q > m", "mean": {"mnk": 1e-11}}], "is neither a size"),
    ([{"when": "3 > 2", "mean": {"mnk": 1e-11}}], "does not depend on the sizes"),
    ([{"mean": {"mnk": 1e-11}}], "expected a condition"),
    ([{"when": "n > m"}], r"mean: expected a mapping of term -> coefficient .*, got nothing"),
    ([{"when": "n > m", "mean": {"mnk": 1e-11}, "colour": 1}], r"\[0\]: expected only the fields when, mean, "
                                                                r"noise, got unknown field\(s\) colour"),
    ({"when": "n > m"}, "expected a list"),
])
def test_invalid_pieces_are_refused_with_the_field_path(pieces, message):
    with pytest.raises(HplsimError, match=rf"dgemm\.pieces.*{message}"):
        model_from_dict(doc({"dgemm": {"mean": {"mnk": 1e-11}, "pieces": pieces}}), "m.yaml")


def test_the_documented_pieces_example_is_a_valid_kernel():
    """docs/formats/model-file.md's pieces example, as written."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "formats" / "model-file.md").read_text()
    block = text.split("## Pieces", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    dgemm = model_from_dict(doc(yaml.safe_load(block))).default.kernels["dgemm"]
    assert [c.text for p in dgemm.pieces for c in p.when] == ["n > m"]
    assert dgemm.pieces[0].model.family == "halfnormal" and dgemm.family == "none"
    # the row swaps' example: a piece on the leading dimension
    block = text.split("## Pieces", 1)[1].split("```yaml")[2].split("```", 1)[0]
    swap = model_from_dict(doc(yaml.safe_load(block))).default.kernels["HPL_dlaswp01T"]
    assert [c.text for p in swap.pieces for c in p.when] == ["ld % 512 == 0"]
    sizes = {"m": 370.0, "n": 4000.0}
    assert swap.predict({**sizes, "ld": 2560.0}) > 1.4 * swap.predict({**sizes, "ld": 2440.0})
