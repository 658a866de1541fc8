"""The calibration archive: one zip per run, one writer, one reader.

    w = ArchiveWriter()
    w.add_table("results/dgemm.csv", frame)          # columns checked against the format
    w.add_text("hosts/node1/cpuinfo", text)
    w.write("d.zip", metadata={"kind": "dgemm", "status": "complete", ...}, log=commands)

    a = read_archive("d.zip")
    a.metadata["status"]; a.table("dgemm"); a.tables["mpi"]; a.log[0]["argv"]

The layout is documented in docs/formats/archive.md; other stages (fitting, the
non-regression check) read archives only through `read_archive`.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd
import yaml

from hplsim import formats, tables
from hplsim.errors import HplsimError
from hplsim.formats import Field, Invalid, Record, safe_loader

FORMAT_VERSION = 1
KINDS = ("dgemm", "dtrsm", "mpi", "hpl")  # hpl: real HPL runs (hplsim run-real)
STATUSES = ("complete", "aborted")


def unix_time(value: Any) -> float:
    """A metadata time (ISO 8601 text as written, a YAML timestamp, or Unix seconds) in Unix
    seconds."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        raise Invalid("a date and time (ISO 8601, e.g. 2025-01-01T10:00:00+00:00) or Unix seconds") from None


def _phases(value: Any) -> list:
    if not isinstance(value, list) or not all(isinstance(p, Mapping) for p in value):
        raise Invalid("a list of phases (mappings: name, start, end, …)")
    return value


_DATE = "a date and time (ISO 8601) or Unix seconds"
#: metadata.yaml (docs/formats/archive.md): the fields that readers rely on, declared once;
#: the rest (run, hosts, cpu, versions, design, monitoring, …) describe the run for people
#: and are kept as written.
METADATA = Record({
    "archive_format": Field(formats.integer(1), "a positive integer", FORMAT_VERSION),
    "kind": Field(formats.one_of(KINDS), "one of " + ", ".join(KINDS), required=True),
    "status": Field(formats.one_of(STATUSES), "one of " + ", ".join(STATUSES), required=True),
    "start_time": Field(unix_time, _DATE, unit="UTC"),
    "end_time": Field(unix_time, _DATE, unit="UTC"),
    "phases": Field(_phases, "a list of phases", []),
}, name="a mapping", optional=False, extra=True)

BLAS_COLUMNS = ("function", "m", "n", "k", "side", "lda", "ldb", "ldc",
                "start", "duration", "host", "cpu", "core", "rank", "repetition")
MPI_COLUMNS = ("operation", "size", "duration", "start", "repetition", "rank", "host")
MONITORING_COLUMNS = ("timestamp", "host", "core", "frequency_hz", "temperature_c")

# Members whose columns are fixed by the format (design.csv is free-form but always has
# the columns of the rows it plans, see docs/formats/archive.md).
FIXED_COLUMNS: dict[str, tuple[str, ...]] = {
    "results/dgemm.csv": BLAS_COLUMNS,
    "results/dtrsm.csv": BLAS_COLUMNS,
    "results/mpi.csv": MPI_COLUMNS,
    "monitoring.csv": MONITORING_COLUMNS,
}
TEXT_COLUMNS = {"function", "side", "host", "operation", "label", "residual_check"}

# Short table names accepted by `Archive.table`.
TABLE_MEMBERS = {
    "design": "design.csv",
    "dgemm": "results/dgemm.csv",
    "dtrsm": "results/dtrsm.csv",
    "mpi": "results/mpi.csv",
    "monitoring": "monitoring.csv",
    "hpl": "results/hpl.csv",
    "kernels": "results/kernels.csv",
}


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.StringIO()
    # repr-precision floats: durations of tiny calls are ~1e-7 s and must survive exactly.
    frame.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue().encode()


class ArchiveWriter:
    """Collects the members of an archive in memory, then writes the zip atomically.

    Atomic: the zip is written to a temporary file next to the destination and renamed
    onto it only once complete, so a reader (or an interrupted writer) never sees half an
    archive.
    """

    def __init__(self) -> None:
        self._members: dict[str, bytes] = {}

    @property
    def names(self) -> list[str]:
        return sorted(self._members)

    def add_bytes(self, name: str, data: bytes) -> None:
        if name in ("metadata.yaml", "commands.json"):
            raise ValueError(f"{name} is written by ArchiveWriter.write")
        if name.startswith("/") or ".." in Path(name).parts:
            raise ValueError(f"bad archive member name {name!r}")
        self._members[name] = data

    def add_text(self, name: str, text: str) -> None:
        self.add_bytes(name, text.encode())

    def add_json(self, name: str, obj: Any) -> None:
        self.add_text(name, json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n")

    def add_table(self, name: str, rows: pd.DataFrame | Iterable[Mapping[str, Any]]) -> None:
        """A CSV member. For the members of `FIXED_COLUMNS` the columns are put in the
        format's order; a missing column is written empty, an unknown one is an error."""
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        expected = FIXED_COLUMNS.get(name)
        if expected is not None:
            unknown = [c for c in frame.columns if c not in expected]
            if unknown:
                raise ValueError(f"{name}: columns {unknown} are not in the archive format")
            frame = frame.reindex(columns=list(expected))
        self.add_bytes(name, _csv_bytes(frame))

    def write(self, path: str | os.PathLike[str], metadata: Mapping[str, Any],
              log: list[Mapping[str, Any]]) -> Path:
        meta = dict(metadata)
        meta["archive_format"] = FORMAT_VERSION
        try:
            formats.read(METADATA, meta, "archive metadata")
        except HplsimError as exc:  # the metadata is ours, not the user's: a bug
            raise ValueError(str(exc)) from None
        meta["files"] = sorted([*self._members, "metadata.yaml", "commands.json"])
        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                    # metadata first: `unzip -p x.zip metadata.yaml` and humans find it at once.
                    zf.writestr("metadata.yaml", yaml.safe_dump(_plain(meta), sort_keys=False))
                    zf.writestr("commands.json", json.dumps(_plain(list(log)), indent=1) + "\n")
                    for name in sorted(self._members):
                        zf.writestr(name, self._members[name])
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, dest)
        except BaseException:
            # Also on KeyboardInterrupt: a second Ctrl-C while writing leaves no archive.
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        return dest


def _plain(obj: Any) -> Any:
    """YAML/JSON-safe copy: numpy scalars, paths and tuples become plain types."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if hasattr(obj, "item"):  # numpy scalar
        return obj.item()
    return str(obj)


@dataclass
class Archive:
    """A calibration archive read back. Tables are parsed on first use."""

    path: Path
    metadata: dict[str, Any]
    log: list[dict[str, Any]]
    names: list[str]
    _raw: dict[str, bytes] = field(repr=False)

    @property
    def kind(self) -> str:
        return str(self.metadata.get("kind"))

    @property
    def status(self) -> str:
        return str(self.metadata.get("status"))

    def member(self, name: str) -> bytes:
        try:
            return self._raw[name]
        except KeyError:
            raise HplsimError(f"{self.path}: no member {name!r} in the archive") from None

    def text(self, name: str) -> str:
        return self.member(name).decode(errors="replace")

    def json(self, name: str) -> Any:
        try:
            return json.loads(self.member(name))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HplsimError(f"{self.path}: member {name} is not valid JSON ({exc})") from None

    def has_table(self, name: str) -> bool:
        return TABLE_MEMBERS.get(name, name) in self._raw

    def table(self, name: str) -> pd.DataFrame:
        """A CSV member as a DataFrame: `name` is a short name ("design", "dgemm", "dtrsm",
        "mpi", "monitoring") or the member's path ("results/dgemm.csv")."""
        member = TABLE_MEMBERS.get(name, name)
        cached = self._tables.get(member)
        if cached is None:
            cached = _read_csv(self.member(member), f"{self.path}: member {member}")
            _check_format(cached, member, self.path)
            self._tables[member] = cached
        return cached.copy()

    @cached_property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table present, by short name (results of other members by path)."""
        out: dict[str, pd.DataFrame] = {}
        short = {v: k for k, v in TABLE_MEMBERS.items()}
        for name in self.names:
            if name.endswith(".csv"):
                out[short.get(name, name)] = self.table(name)
        return out

    @cached_property
    def _tables(self) -> dict[str, pd.DataFrame]:
        return {}


def _check_format(frame: pd.DataFrame, member: str, path: Path) -> None:
    """A member of a fixed format has all its columns, and numbers where numbers go."""
    expected = FIXED_COLUMNS.get(member)
    if expected is None:
        return
    missing = [c for c in expected if c not in frame.columns]
    if missing:
        raise HplsimError(f"{path}: member {member} lacks the column(s) {', '.join(missing)}")
    for col in expected:
        if col in TEXT_COLUMNS or frame[col].isna().all():
            continue
        if not pd.api.types.is_numeric_dtype(frame[col]):
            raise HplsimError(f"{path}: member {member}: column {col} holds values that are not numbers")


def _read_csv(data: bytes, what: str) -> pd.DataFrame:
    frame = tables.read_csv(data, what)
    # Text columns: empty cells (side of dgemm) come back as "" rather than NaN, so that
    # `frame.side == "L"` and grouping by host behave.
    for col in TEXT_COLUMNS.intersection(frame.columns):
        frame[col] = frame[col].astype(object).where(frame[col].notna(), "").astype(str)
    return frame


def read_archive(path: str | os.PathLike[str]) -> Archive:
    """Open a calibration archive; one clear `HplsimError` if it is not one."""
    p = Path(path)
    try:
        with zipfile.ZipFile(p) as zf:
            raw = {info.filename: zf.read(info) for info in zf.infolist() if not info.is_dir()}
    except FileNotFoundError:
        raise HplsimError(f"{p}: no such file") from None
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, ValueError,
            NotImplementedError, RuntimeError) as exc:  # damaged, encrypted, unknown compression
        raise HplsimError(f"{p}: not a readable zip archive ({' '.join(str(exc).split()) or type(exc).__name__})") from None
    if "metadata.yaml" not in raw:
        raise HplsimError(f"{p}: not a calibration archive (no metadata.yaml)")
    try:
        metadata = yaml.load(raw["metadata.yaml"], Loader=safe_loader()) or {}
        log = json.loads(raw["commands.json"]) if "commands.json" in raw else []
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise HplsimError(f"{p}: corrupt metadata ({exc})") from None
    formats.read(METADATA, metadata, f"{p}: metadata.yaml")
    return Archive(path=p, metadata=metadata, log=log, names=sorted(raw), _raw=raw)
