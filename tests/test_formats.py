"""The format layer: declared fields, defaults, and one error naming the file, the field
path, what was expected and what was found."""

from __future__ import annotations

import pytest

from hplsim import formats as f
from hplsim.errors import HplsimError

NET = f.Record({"bandwidth": f.Field(f.number(positive=True), "a positive number", default=1.0, unit="B/s")},
               name="a mapping of network fields")
SPEC = f.Record({
    "nodes": f.Field(f.integer(1), "a positive integer", required=True),
    "placement": f.Field(f.one_of(("block", "cyclic")), "block or cyclic", default="block"),
    "network": NET,
}, name="a mapping")


def test_defaults_and_conversions():
    assert f.read(SPEC, {"nodes": 3}, "s.yaml") == {"nodes": 3, "placement": "block", "network": {"bandwidth": 1.0}}
    assert f.read(SPEC, {"nodes": 3, "network": {"bandwidth": "1e-6"}}, "s.yaml")["network"]["bandwidth"] == 1e-6
    assert f.read(SPEC, {"nodes": 3, "placement": None}, "s.yaml")["placement"] == "block"


@pytest.mark.parametrize("doc, message", [
    ({"nodes": 0}, "s.yaml: nodes: expected a positive integer, got 0"),
    ({"nodes": True}, "s.yaml: nodes: expected a positive integer, got True"),
    ({}, "s.yaml: nodes: expected a positive integer (the field is required), got nothing"),
    ({"nodes": 2, "network": {"bandwidth": 0}}, "s.yaml: network.bandwidth: expected a positive number, got 0"),
    ({"nodes": 2, "network": {"bandwidth": "nan"}}, "s.yaml: network.bandwidth: expected a positive number, got 'nan'"),
    ({"nodes": 2, "network": [1]}, "s.yaml: network: expected a mapping of network fields, got list"),
    ({"nodes": 2, "network": {"lat": 1}}, "s.yaml: network: expected only the fields bandwidth, got unknown field(s) lat"),
    ({"nodes": 2, "colour": "blue", "age": 1},
     "s.yaml: expected only the fields nodes, placement, network, got unknown field(s) age, colour"),
    ({"nodes": 2, "placement": "random"}, "s.yaml: placement: expected one of block, cyclic, got 'random'"),
    ("text", "s.yaml: expected a mapping at the top level, got str"),
])
def test_one_error_names_file_field_expected_and_found(doc, message):
    with pytest.raises(HplsimError) as err:
        f.read(SPEC, doc, "s.yaml")
    assert str(err.value) == message


def test_long_values_are_cut_and_paths_index_lists():
    assert f.shown("x" * 200).endswith("...") and len(f.shown("x" * 200)) == 80
    assert f.join(f.join("seeds", 3), "a") == "seeds[3].a"


def test_described_lists_every_leaf_with_its_unit():
    assert f.described(SPEC) == [("nodes", "a positive integer", ""), ("placement", "block or cyclic", ""),
                                 ("network.bandwidth", "a positive number", "B/s")]


def test_a_nested_part_is_checked_before_its_file_is_known():
    with pytest.raises(f.FieldError) as err:
        f.check(NET, {"bandwidth": -1}, "hosts.a.network")
    assert str(err.value) == "hosts.a.network.bandwidth: expected a positive number, got -1"
    assert str(err.value.at("m.yaml")) == "m.yaml: hosts.a.network.bandwidth: expected a positive number, got -1"


def test_a_converter_may_point_inside_its_value():
    def pairs(value):
        for key, v in value.items():
            if v < 0:
                raise f.Invalid("a non-negative number", at=key)
        return value

    record = f.Record({"smpi": f.Field(pairs, "a mapping of numbers")})
    with pytest.raises(HplsimError, match=r"^s\.yaml: smpi\.b: expected a non-negative number, got -2$"):
        f.read(record, {"smpi": {"a": 1, "b": -2}}, "s.yaml")


@pytest.mark.parametrize("convert, good, bad", [
    (f.integer(0, 3), [0, 3], [4, -1, 1.0, True, "1"]),
    (f.integer(1, floats=True), [1, 4.0], [0.0, 1.5, False]),
    (f.number(), [1, "1e-11", 2.5], [float("inf"), "x", None, True]),
    (f.number(strings=False, positive=True), [1e-9], ["1", 0, -1]),
    (f.exactly("hplsim-model"), ["hplsim-model"], ["other", None]),
])
def test_converters_accept_and_refuse(convert, good, bad):
    for value in good:
        convert(value)
    for value in bad:
        with pytest.raises(f.Invalid):
            convert(value)
