"""Property-based fuzzing of every reader: whatever the input, it parses to a valid object
or raises hplsim's own error (HplsimError), never another exception (issue 20).

Each reader gets two kinds of inputs: a valid document with random parts replaced by random
values (the inputs that reach deep into the checks), and raw random text or bytes. The
default suite runs few examples per reader; ``-m slow`` runs many more.
"""

from __future__ import annotations

import io
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hplsim.calibrate.archive import ArchiveWriter, read_archive
from hplsim.calibrate.summary import summarise
from hplsim.calibrate.history import read_history
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig, HplParams
from hplsim.hpl.hpldat import format_hpl_dat, parse_hpl_dat
from hplsim.models.modelfile import load_model, model_from_dict, write_runtime_table
from hplsim.models.readers import read_measurements
from hplsim.platform.spec import load_platform, platform_from_xml, spec_from_dict
from hplsim.sweep.spec import hpl_combinations, parse_spec

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
DEEP = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))

# ----------------------------------------------------------------------- strategies

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["", "0", "-1", "1e400", "nan", "12.5GBps", "1us", "0GBps", "-1us",
                                           "mnk", "dgemm", "default", "fat-tree", "2;4,4;1,2;1,2", "m > n"]),
)
documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4)),
    max_leaves=12)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _replace(doc[head], rest, value)}
    copy = list(doc)
    copy[head] = _replace(doc[head], rest, value)
    return copy


@st.composite
def mutated(draw, valid: Any, rounds: int = 3) -> Any:
    """`valid` with up to `rounds` of its parts (leaves or whole branches) replaced, removed
    or given an unknown sibling."""
    doc = valid
    for _ in range(draw(st.integers(0, rounds))):
        path = draw(st.sampled_from(_paths(doc)))
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "drop" and path:
            parent = path[:-1]
            container = doc
            for p in parent:
                container = container[p]
            if isinstance(container, dict):
                doc = _replace(doc, parent, {k: v for k, v in container.items() if k != path[-1]})
            else:
                doc = _replace(doc, parent, [v for i, v in enumerate(container) if i != path[-1]])
        elif action == "add":
            target = doc
            for p in path:
                target = target[p]
            if isinstance(target, dict):
                doc = _replace(doc, path, {**target, draw(st.text(max_size=8)): draw(documents)})
            else:
                doc = _replace(doc, path, draw(documents))
        else:
            doc = _replace(doc, path, draw(documents))
    return doc


def _own_error_only(call) -> Any:
    """Run `call`; HplsimError is a fine answer, any other exception fails the test."""
    try:
        return call()
    except HplsimError as exc:
        assert str(exc) and "\n" not in str(exc)
        return None


# -------------------------------------------------------------------------- HPL.dat

VALID_HPL_DAT = format_hpl_dat(HplParams.from_config(HplConfig(n=2000, nb=64, p=2, q=2)))
hpl_lines = VALID_HPL_DAT.splitlines()


@st.composite
def hpl_dat_texts(draw) -> str:
    lines = list(hpl_lines)
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["token", "line", "drop", "dup"]))
        if kind == "token":
            words = lines[i].split() or [""]
            j = draw(st.integers(0, len(words) - 1))
            words[j] = draw(st.one_of(st.integers(-2**40, 2**40).map(str), st.text(max_size=6),
                                      st.floats(allow_nan=True).map(str)))
            lines[i] = " ".join(words)
        elif kind == "line":
            lines[i] = draw(st.text(max_size=40))
        elif kind == "drop":
            del lines[i]
        else:
            lines.insert(i, lines[i])
    return "\n".join(lines) + "\n"


def check_hpl_dat(text: str) -> None:
    params = _own_error_only(lambda: parse_hpl_dat(text, "fuzz"))
    if params is not None:
        # a parsed HPL.dat gives configurations (or says why not) and writes back the same
        configs = _own_error_only(params.configs)
        if configs is not None:
            assert all(c.n >= 0 and c.nb >= 1 and c.p >= 1 and c.q >= 1 for c in configs)
        assert parse_hpl_dat(format_hpl_dat(params), "round trip") == params


@FAST
@given(st.one_of(hpl_dat_texts(), st.text(max_size=400)))
def test_hpl_dat(text):
    check_hpl_dat(text)


@pytest.mark.slow
@DEEP
@given(st.one_of(hpl_dat_texts(), st.text(max_size=1000)))
def test_hpl_dat_deep(text):
    check_hpl_dat(text)


# ------------------------------------------------------------------------ model file

VALID_MODEL = {
    "format": "hplsim-model", "version": 1,
    "default": {"kernels": {
        "dgemm": {"mean": {"intercept": 1e-6, "mnk": 1e-11, "mn": -1e-10},
                  "noise": {"family": "halfnormal", "sigma": {"mnk": 1e-12}},
                  "pieces": [{"when": "n > m", "mean": {"mnk": 2e-11}}]},
        "dtrsm": {"mean": {"mnk": 1e-11},
                  "noise": {"family": "mixture", "components": [
                      {"weight": 0.5, "shift": {"intercept": 0}, "sigma": {"mnk": 1e-12}},
                      {"weight": 0.5, "shift": {"intercept": 1e-6}, "sigma": {"mnk": 1e-12}}]}},
        "HPL_dlaswp01T": {"mean": {"mn": 1e-9}, "pieces": [{"when": ["ld % 512 == 0", "m >= 2"], "mean": {"mn": 2e-9}}]},
    }},
    "hosts": {"node-0": {"cpus": [{"kernels": {"dgemm": {"mean": {"mnk": 1e-11}}}}]}},
}


def check_model(doc: Any, tmp: Path) -> None:
    model = _own_error_only(lambda: model_from_dict(doc, "fuzz"))
    if model is not None:
        # what the reader accepts, the emulation's table writer can write
        _own_error_only(lambda: write_runtime_table(model, ["node-0", "node-1"], tmp / "model.table"))


@FAST
@given(st.one_of(mutated(VALID_MODEL), documents))
def test_model_file(doc):
    with tempfile.TemporaryDirectory() as tmp:
        check_model(doc, Path(tmp))


@pytest.mark.slow
@DEEP
@given(st.one_of(mutated(VALID_MODEL, rounds=6), documents))
def test_model_file_deep(doc):
    with tempfile.TemporaryDirectory() as tmp:
        check_model(doc, Path(tmp))


# --------------------------------------------------------------------- platform spec

VALID_PLATFORM = {
    "format": "hplsim-platform", "name": "c", "nodes": 8, "cores_per_node": 2, "ranks_per_node": 2,
    "placement": "cyclic", "host_prefix": "n-", "host_suffix": ".x",
    "network": {"topology": "fat-tree", "fat_tree": "2;4,2;1,2;1,1", "bandwidth": "10GBps", "latency": "1us",
                "sharing_policy": "SHARED", "loopback_bandwidth": "50GBps", "loopback_latency": "0.1us",
                "backbone_bandwidth": "100GBps", "backbone_latency": "0s", "limiter_bandwidth": "25GBps"},
    "smpi": {"smpi/os": "0:1e-7:1e-10;8133:0:0", "smpi/bw-factor": "0:0.5;8133:0.7"},
    "mpi": {"iprobe_reports": "progressed"},
}


def check_platform_doc(doc: Any) -> None:
    spec = _own_error_only(lambda: spec_from_dict(doc, "fuzz"))
    if spec is not None:
        platform = spec.platform()
        assert platform.slots and platform.xml.startswith("<?xml")
        # the XML it writes reads back to the same hosts
        again = platform_from_xml(platform.xml, "round trip", spec.ranks_per_node or spec.cores_per_node)
        assert again.hosts == platform.hosts


@FAST
@given(st.one_of(mutated(VALID_PLATFORM), documents))
def test_platform_spec(doc):
    check_platform_doc(doc)


@pytest.mark.slow
@DEEP
@given(st.one_of(mutated(VALID_PLATFORM, rounds=6), documents))
def test_platform_spec_deep(doc):
    check_platform_doc(doc)


VALID_XML = """<?xml version="1.0"?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="w" routing="Full">
    <cluster id="c" prefix="dahu-" suffix=".g" radical="0-3" speed="1Gf" core="2" bw="10GBps" lat="1us"
             loopback_bw="50GBps" bb_bw="100GBps" bb_lat="0s"/>
    <host id="extra" speed="1Gf" core="4"/>
    <link id="l" bandwidth="1GBps" latency="2us"/>
  </zone>
</platform>
"""


@st.composite
def xml_texts(draw) -> str:
    text = VALID_XML
    for _ in range(draw(st.integers(0, 3))):
        attr = draw(st.sampled_from(["radical", "core", "bw", "lat", "loopback_bw", "bb_bw", "bandwidth", "latency",
                                     "prefix", "id"]))
        value = draw(st.one_of(st.text(max_size=8), st.sampled_from(["0", "-1", "0GBps", "3-1", "0-99999999", "x-y",
                                                                      "1e400Bps", "-2us", "a,b,1-2"])))
        text = text.replace(f'{attr}="', f'{attr}="{value}" old{attr}="', 1)
    if draw(st.booleans()):
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.text(max_size=6)) + text[i:]
    return text


def check_xml(text: str) -> None:
    platform = _own_error_only(lambda: platform_from_xml(text, "fuzz.xml"))
    if platform is not None:
        assert platform.slots


@FAST
@given(st.one_of(xml_texts(), st.text(max_size=200).map(lambda t: "<" + t)))
def test_platform_xml(text):
    check_xml(text)


@pytest.mark.slow
@DEEP
@given(st.one_of(xml_texts(), st.text(max_size=400).map(lambda t: "<" + t)))
def test_platform_xml_deep(text):
    check_xml(text)


@pytest.mark.parametrize("reader", [load_model, load_platform], ids=["model", "platform"])
@FAST
@given(text=st.text(max_size=300))
def test_file_text(reader, text):
    """Any text in a model file or a platform file (YAML, or XML when it starts with <)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.yaml"
        path.write_text(text)
        _own_error_only(lambda: reader(path))


# ------------------------------------------------------------------------ sweep spec

VALID_SWEEP = {
    "name": "s", "description": "d",
    "hpl": {"n": [2000, 3000], "nb": {"from": 32, "to": 128, "step": 32}, "grids": [[1, 2], [2, 1]],
            "bcast": [0, 1], "depth": [0, 1], "pfact": [0, 1, 2], "swap": 2},
    "seeds": [1, 2],
    "platform": {"variations": [{}, {"name": "fast", "bandwidth": 2, "latency": 0.5},
                                {"bandwidth": "25GBps"}, {"nodes": 4}]},
    "model": {"variations": [{}, {"speed": {"node-1*": 0.8}, "drop_slowest": {"hosts": 1}, "noise": False}]},
    "timeout": 60,
}


def check_sweep(doc: Any, tmp: Path) -> None:
    spec = _own_error_only(lambda: parse_spec(doc, "fuzz", tmp))
    if spec is not None:
        _own_error_only(lambda: hpl_combinations(spec))


@FAST
@given(st.one_of(mutated(VALID_SWEEP), documents))
def test_sweep_spec(doc):
    with tempfile.TemporaryDirectory() as tmp:
        check_sweep(doc, Path(tmp))


@pytest.mark.slow
@DEEP
@given(st.one_of(mutated(VALID_SWEEP, rounds=6), documents))
def test_sweep_spec_deep(doc):
    with tempfile.TemporaryDirectory() as tmp:
        check_sweep(doc, Path(tmp))


# ----------------------------------------------------- calibration archive and CSVs

def _valid_archive_members() -> dict[str, bytes]:
    w = ArchiveWriter()
    w.add_table("results/dgemm.csv", [dict(function="dgemm", m=10 + i, n=20, k=30, lda=10, ldb=30, ldc=10,
                                           start=1.0 + i, duration=1.5e-7 * (i + 1), host="h", cpu=0, core=0,
                                           rank=0, repetition=0) for i in range(4)])
    with tempfile.TemporaryDirectory() as tmp:
        path = w.write(Path(tmp) / "a.zip", {"kind": "dgemm", "status": "complete", "seed": 1}, [])
        with zipfile.ZipFile(path) as zf:
            return {n: zf.read(n) for n in zf.namelist()}


ARCHIVE = _valid_archive_members()


@st.composite
def archives(draw) -> bytes:
    members = dict(ARCHIVE)
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(sorted(members)))
        data = members[name]
        kind = draw(st.sampled_from(["cut", "text", "yaml"]))
        if kind == "cut":
            members[name] = data[:draw(st.integers(0, len(data)))]
        elif kind == "text":
            members[name] = draw(st.text(max_size=200)).encode()
        else:
            members[name] = yaml.safe_dump(draw(mutated(yaml.safe_load(ARCHIVE["metadata.yaml"])))).encode()
    raw = _zip(members)
    if draw(st.booleans()):  # a damaged zip
        i = draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + draw(st.binary(max_size=8)) + raw[i + 1:]
    return raw


def check_archive(raw: bytes, tmp: Path) -> None:
    path = tmp / "a.zip"
    path.write_bytes(raw)
    archive = _own_error_only(lambda: read_archive(path))
    if archive is not None:
        _own_error_only(lambda: summarise(archive))
    _own_error_only(lambda: read_measurements([path]))


@FAST
@given(st.one_of(archives(), st.binary(max_size=300)))
def test_calibration_archive(raw):
    with tempfile.TemporaryDirectory() as tmp:
        check_archive(raw, Path(tmp))


@pytest.mark.slow
@DEEP
@given(st.one_of(archives(), st.binary(max_size=600)))
def test_calibration_archive_deep(raw):
    with tempfile.TemporaryDirectory() as tmp:
        check_archive(raw, Path(tmp))


CSV_HEADERS = ["function,m,n,k,duration,host,cpu", "m,n,k,duration,node,cpu",
               "operation,size,duration", "msg_size,duration,experiment,cluster"]
csv_cells = st.one_of(st.integers(-5, 10**6).map(str), st.floats(allow_nan=True).map(str), st.text(max_size=5),
                      st.sampled_from(["dgemm", "dtrsm", "send", "", "nan"]))


@st.composite
def measurement_csvs(draw) -> str:
    header = draw(st.one_of(st.sampled_from(CSV_HEADERS), st.text(max_size=30)))
    width = max(1, header.count(",") + 1)
    rows = draw(st.lists(st.lists(csv_cells, min_size=width - 1, max_size=width + 1), max_size=6))
    return header + "\n" + "".join(",".join(r) + "\n" for r in rows)


@FAST
@given(measurement_csvs())
def test_measurement_csv(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_text(text)
        _own_error_only(lambda: read_measurements([path]))


# --------------------------------------------------------------------- check history

HISTORY_HEADERS = ["host,cpu,run_id,start_time,intercept,mnk,avg_gflops",
                   "intercept,mnk,avg_gflops,function,cluster,node,cpu,jobid,start_time"]


@st.composite
def histories(draw) -> str:
    header = draw(st.one_of(st.sampled_from(HISTORY_HEADERS), st.text(max_size=40)))
    width = max(1, header.count(",") + 1)
    rows = draw(st.lists(st.lists(csv_cells, min_size=width - 1, max_size=width + 1), max_size=6))
    if rows and draw(st.booleans()):
        rows.append(list(rows[0]))  # a duplicated run
    return header + "\n" + "".join(",".join(r) + "\n" for r in rows)


def check_history(text: str, tmp: Path) -> None:
    path = tmp / "h.csv"
    path.write_text(text)
    data = _own_error_only(lambda: read_history(path))
    if data is not None and not data.empty:
        assert not data.duplicated(["host", "cpu", "run_id"]).any()


@FAST
@given(histories())
def test_check_history(text):
    with tempfile.TemporaryDirectory() as tmp:
        check_history(text, Path(tmp))


@pytest.mark.slow
@DEEP
@given(histories())
def test_check_history_deep(text):
    with tempfile.TemporaryDirectory() as tmp:
        check_history(text, Path(tmp))


def test_fuzzers_reach_valid_inputs(tmp_path):
    """The seeds of the fuzzers are valid: the readers accept them unchanged (else the
    mutations would only ever test the first check)."""
    assert parse_hpl_dat(VALID_HPL_DAT).configs()
    assert model_from_dict(VALID_MODEL).default is not None
    assert spec_from_dict(VALID_PLATFORM).nodes == 8
    assert len(platform_from_xml(VALID_XML, "x").slots) == 4 * 2 + 4
    assert hpl_combinations(parse_spec(VALID_SWEEP, "s", tmp_path))
    (tmp_path / "a.zip").write_bytes(_zip(ARCHIVE))
    assert read_archive(tmp_path / "a.zip").table("dgemm").shape[0] == 4
    (tmp_path / "h.csv").write_text(HISTORY_HEADERS[0] + "\nh,0,1,1574848720,1e-6,1e-11,25\n")
    assert len(read_history(tmp_path / "h.csv")) == 1


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


assert os.sep == "/"  # the readers' paths in these tests are POSIX
