"""The calibration archive: one writer, one reader, atomic, clear errors."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hplsim.calibrate.archive import BLAS_COLUMNS, MPI_COLUMNS, ArchiveWriter, read_archive
from hplsim.errors import HplsimError


def blas_rows(n: int = 3) -> list[dict]:
    return [dict(function="dgemm", m=10 + i, n=20, k=30, lda=10 + i, ldb=30, ldc=10 + i, start=1.0 + i,
                 duration=1.5e-7 * (i + 1), host="h", cpu=0, core=i, rank=i, repetition=0) for i in range(n)]


def test_round_trip(tmp_path: Path) -> None:
    w = ArchiveWriter()
    w.add_table("results/dgemm.csv", blas_rows())
    w.add_table("results/dtrsm.csv", [dict(function="dtrsm", m=4, n=5, side="L", lda=4, ldb=4, start=2.0,
                                           duration=1e-6, host="h", cpu=0, core=1, rank=0, repetition=1)])
    w.add_table("results/mpi.csv", [dict(operation="send", size=8, duration=2e-7, start=3.0, repetition=0,
                                         rank=0, host="h")])
    w.add_table("design.csv", pd.DataFrame({"order": [0], "m": [1]}))
    w.add_text("hosts/h/cpuinfo", "processor : 0\n")
    w.add_json("environment.json", {"A": "b"})
    out = w.write(tmp_path / "a.zip", {"kind": "dgemm", "status": "complete", "seed": 3}, [{"argv": ["x"]}])

    a = read_archive(out)
    assert a.metadata["kind"] == "dgemm" and a.metadata["status"] == "complete" and a.metadata["seed"] == 3
    assert a.metadata["archive_format"] == 1
    assert set(a.metadata["files"]) == set(a.names)
    assert a.log == [{"argv": ["x"]}]
    dgemm = a.table("dgemm")
    assert list(dgemm.columns) == list(BLAS_COLUMNS)
    assert dgemm.duration.tolist() == [1.5e-7, 3e-7, 4.5e-7]  # full precision survives
    assert (dgemm.side == "").all()  # empty text cells are "" not NaN
    dtrsm = a.table("results/dtrsm.csv")
    assert dtrsm.side.tolist() == ["L"] and dtrsm.k.isna().all()
    assert list(a.table("mpi").columns) == list(MPI_COLUMNS)
    assert set(a.tables) == {"dgemm", "dtrsm", "mpi", "design"}
    assert a.text("hosts/h/cpuinfo").startswith("processor")
    assert a.json("environment.json") == {"A": "b"}
    # metadata comes first in the zip and is plain YAML
    with zipfile.ZipFile(out) as zf:
        assert zf.namelist()[0] == "metadata.yaml"
        assert yaml.safe_load(zf.read("metadata.yaml"))["kind"] == "dgemm"


def test_fixed_columns_are_enforced() -> None:
    w = ArchiveWriter()
    with pytest.raises(ValueError, match="not in the archive format"):
        w.add_table("results/dgemm.csv", [dict(function="dgemm", m=1, bogus=2)])
    with pytest.raises(ValueError):
        w.add_text("metadata.yaml", "x")
    with pytest.raises(ValueError):
        w.add_text("../escape", "x")


def test_metadata_must_say_kind_and_status(tmp_path: Path) -> None:
    w = ArchiveWriter()
    with pytest.raises(ValueError, match="kind"):
        w.write(tmp_path / "a.zip", {"status": "complete"}, [])
    with pytest.raises(ValueError, match="status"):
        w.write(tmp_path / "a.zip", {"kind": "mpi", "status": "half"}, [])
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("metadata, message", [
    ("status: complete\n", "kind: expected one of dgemm, dtrsm, mpi, hpl (the field is required), got nothing"),
    ("kind: zgemm\nstatus: complete\n", "kind: expected one of dgemm, dtrsm, mpi, hpl, got 'zgemm'"),
    ("kind: dgemm\nstatus: half\n", "status: expected one of complete, aborted, got 'half'"),
    ("kind: dgemm\nstatus: complete\nstart_time: yesterday\n",
     "start_time: expected a date and time (ISO 8601, e.g. 2025-01-01T10:00:00+00:00) or Unix seconds, got 'yesterday'"),
    ("kind: dgemm\nstatus: complete\narchive_format: one\n", "archive_format: expected a positive integer, got 'one'"),
    ("kind: dgemm\nstatus: complete\nphases: build\n", "phases: expected a list of phases (mappings: name, start, "
                                                          "end, …), got 'build'"),
    ("- 1\n", "expected a mapping at the top level, got list"),
])
def test_metadata_errors_name_the_member_and_field(tmp_path: Path, metadata: str, message: str) -> None:
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("metadata.yaml", metadata)
    with pytest.raises(HplsimError) as err:
        read_archive(path)
    assert str(err.value) == f"{path}: metadata.yaml: {message}"


def test_metadata_times_as_written_or_as_yaml_reads_them(tmp_path: Path) -> None:
    for start in ("'2025-01-01T10:00:00.123456+00:00'", "2025-01-01 10:00:00", "1735725600.5"):
        path = tmp_path / "a.zip"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("metadata.yaml", f"kind: dgemm\nstatus: complete\nstart_time: {start}\n")
        assert read_archive(path).metadata["start_time"] is not None


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal while writing (KeyboardInterrupt) leaves no archive and no temporary file,
    and an existing archive at the destination is left untouched."""
    dest = tmp_path / "a.zip"
    ArchiveWriter().write(dest, {"kind": "mpi", "status": "complete"}, [])
    before = dest.read_bytes()
    w = ArchiveWriter()
    for i in range(5):
        w.add_text(f"m{i}.txt", "x" * 1000)
    calls = {"n": 0}
    real = zipfile.ZipFile.writestr

    def flaky(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "writestr", flaky)
    with pytest.raises(KeyboardInterrupt):
        w.write(dest, {"kind": "mpi", "status": "complete"}, [])
    assert [p.name for p in tmp_path.iterdir()] == ["a.zip"]
    assert dest.read_bytes() == before


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    (b"not a zip", "not a readable zip"),
    ("zip-without-metadata", "no metadata.yaml"),
])
def test_reader_errors_are_one_line(tmp_path: Path, content, message) -> None:
    path = tmp_path / "x.zip"
    if content == "zip-without-metadata":
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("a.txt", "x")
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(HplsimError, match=message) as exc:
        read_archive(path)
    assert "\n" not in str(exc.value)


def test_missing_member_is_a_clear_error(tmp_path: Path) -> None:
    a = read_archive(ArchiveWriter().write(tmp_path / "a.zip", {"kind": "dgemm", "status": "aborted"}, []))
    assert not a.has_table("dgemm")
    with pytest.raises(HplsimError, match="no member 'results/dgemm.csv'"):
        a.table("dgemm")


def test_summary_of_sparse_archives(tmp_path: Path) -> None:
    """`archive show` copes with archives of other kinds and with aborted, empty ones."""
    from hplsim.calibrate.summary import format_summary, summarise

    w = ArchiveWriter()
    w.add_table("results/hpl.csv", [{"n": 1000, "gflops": 12.5}, {"n": 1000, "gflops": 13.0}])
    text = format_summary(summarise(read_archive(w.write(tmp_path / "h.zip", {"kind": "hpl", "status": "complete"}, []))))
    assert "hpl archive, complete" in text and "2 runs, 12.8 Gflops median" in text
    empty = ArchiveWriter().write(tmp_path / "e.zip", {"kind": "dgemm", "status": "aborted",
                                                        "abort_reason": "interrupted by SIGINT"}, [])
    assert "dgemm calibration, aborted (interrupted by SIGINT)" in format_summary(summarise(read_archive(empty)))
