"""Measurements in, two canonical tables out.

Inputs: our calibration archives (zip, see `hplsim.calibrate.archive`) and CSV files
such as the published Dahu data (`dgemm_raw.csv`, `mpi_calibration.csv`).

- kernel calls: ``kernel, m, n, k, duration, host, cpu`` (one row per call; host/cpu may
  be missing when the data do not say where a call ran), and ``run`` when the data say
  which run of a program made the call (a traced real HPL run's ``order``);
- MPI measurements: ``operation, size, duration, cluster, host``.

Where a call ran: our archives carry real host names and the CPU (socket) index within
the host. The Dahu CSVs carry a node number instead (nodes numbered from 1) and the CPU
index 0/1 within the node; a host-name template turns the node into the platform's host
name. The default, ``dahu-{node-1}.grid5000.fr``, is the rule of the data's README (host
``dahu-i`` is node i+1) with the host names of the built-in Dahu platform.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from hplsim import tables
from hplsim.calibrate.archive import read_archive
from hplsim.calibrate.hostnames import DAHU_HOST_FORMAT, check_host_format, host_names
from hplsim.errors import HplsimError
from hplsim.hpl.kernels import routine_names, sided, size_columns

KERNEL_COLUMNS = ["kernel", "m", "n", "k", "duration", "host", "cpu"]
#: the sizes and conditions a kernel call may carry (the table of kernels')
_SIZE_COLUMNS = size_columns()
NETWORK_COLUMNS = ["operation", "size", "duration", "cluster", "host"]

# column spellings we accept -> canonical name
_KERNEL_ALIASES = {"function": "kernel", "kernel": "kernel", **{c: c for c in _SIZE_COLUMNS}, "duration": "duration",
                   "host": "host", "hostname": "host", "cpu": "cpu", "node": "node", "side": "side"}
# a kernel's name in any case, or its C routine's -> its name in the model file
_KERNEL_NAMES = {spelling.lower(): name for routine, name in routine_names().items()
                 for spelling in (routine, name)}
_NETWORK_ALIASES = {"operation": "operation", "experiment": "operation", "op": "operation", "size": "size",
                    "msg_size": "size", "duration": "duration", "cluster": "cluster", "host": "host"}
_EXPECTED = ("kernel calls need m, n, duration (and k, function, host, cpu or node as the kernel and data "
             "allow); MPI measurements need operation|experiment, size|msg_size, duration")


@dataclass
class Measurements:
    kernels: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=KERNEL_COLUMNS))
    network: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=NETWORK_COLUMNS))
    sources: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # source -> archive metadata


# ------------------------------------------------------------------------ tables


def _canonical(df: pd.DataFrame, aliases: Mapping[str, str]) -> pd.DataFrame:
    ren = {c: aliases[str(c).strip().lower()] for c in df.columns if str(c).strip().lower() in aliases}
    return df.rename(columns=ren)


def classify(df: pd.DataFrame) -> str | None:
    """``kernel``, ``network`` or None, from the column names."""
    cols = {str(c).strip().lower() for c in df.columns}
    if {"duration"} <= cols and cols & {"operation", "experiment", "op"} and cols & {"size", "msg_size"}:
        return "network"
    if {"duration", "n"} <= cols and ("m" in cols or "function" in cols or "kernel" in cols):
        return "kernel"
    return None


def _kernel_table(df: pd.DataFrame, source: str, host_format: str) -> pd.DataFrame:
    df = _canonical(df, _KERNEL_ALIASES)
    out = pd.DataFrame(index=df.index)
    out["kernel"] = df["kernel"].map(_kernel_name) if "kernel" in df else None
    for c in _SIZE_COLUMNS:
        if c in df:
            out[c] = pd.to_numeric(df[c], errors="coerce")
    if "side" in df and "m" in df and "n" in df:
        # dtrsm's k is the order of its triangular matrix: m if side is left, n if right
        left = df["side"].astype(str).str.strip().str.lower().str[0].isin(["l", "1"])
        k_side = np.where(left, out["m"], out["n"])
        is_trsm = out["kernel"].astype(str).isin(sided())
        if "k" in out:
            missing = out["k"].isna() | (out["k"] <= 0)
            out["k"] = np.where(is_trsm & missing, k_side, out["k"])
        else:
            out["k"] = np.where(is_trsm, k_side, np.nan)
    out["duration"] = pd.to_numeric(df["duration"], errors="coerce")
    if "host" in df:
        out["host"] = df["host"].astype(str)
    elif "node" in df:
        nodes = pd.to_numeric(df["node"], errors="coerce")
        if (nodes.notna() & (nodes != nodes.round())).any() or (df["node"].notna() & nodes.isna()).any():
            raise HplsimError(f"{source}: the node column holds values that are not node numbers")
        out["host"] = host_names(host_format, nodes)
    else:
        out["host"] = None
    out["cpu"] = pd.to_numeric(df["cpu"], errors="coerce") if "cpu" in df else np.nan
    if "order" in df:
        out["run"] = pd.to_numeric(df["order"], errors="coerce")
    elif "jobid" in df:  # the published calls: the calibration job that measured them
        out["run"] = pd.to_numeric(df["jobid"], errors="coerce")
    out["source"] = source
    out["row"] = df.index + 2  # line in a CSV file with one header line
    return out


def _kernel_name(value: Any) -> str | None:
    """``cblas_dgemm`` / ``DGEMM`` / ``dgemm`` -> ``dgemm``; HPL's own names keep their case."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    name = str(value).strip()
    return _KERNEL_NAMES.get(name.lower(), name)


def _network_table(df: pd.DataFrame, source: str) -> pd.DataFrame:
    df = _canonical(df, _NETWORK_ALIASES)
    out = pd.DataFrame(index=df.index)
    out["operation"] = df["operation"].astype(str).str.strip().str.lower()
    out["size"] = pd.to_numeric(df["size"], errors="coerce")
    out["duration"] = pd.to_numeric(df["duration"], errors="coerce")
    out["cluster"] = df["cluster"].astype(str) if "cluster" in df else None
    out["host"] = df["host"].astype(str) if "host" in df else None
    out["source"] = source
    out["row"] = df.index + 2
    return out


# ------------------------------------------------------------------------ files


def _read_csv(path: Path) -> pd.DataFrame:
    return tables.read_csv(path, str(path))


def _archive_frames(path: Path) -> tuple[dict[str, Any], list[tuple[str, pd.DataFrame]]]:
    """Metadata and result tables of one of our calibration archives."""
    archive = read_archive(path)
    return archive.metadata, list(archive.tables.items())


def read_measurements(paths: Iterable[Path | str], host_format: str = DAHU_HOST_FORMAT) -> Measurements:
    """Read every file (CSV or archive) into the two canonical tables."""
    check_host_format(host_format)
    kernels, network = [], []
    out = Measurements()
    for path in map(Path, paths):
        out.sources.append(str(path))
        if path.suffix.lower() == ".zip" or (path.is_file() and zipfile.is_zipfile(path)):
            metadata, frames = _archive_frames(path)
            out.metadata[str(path)] = metadata
            found = False
            for name, df in frames:
                kind = classify(df)
                if kind == "kernel":
                    kernels.append(_kernel_table(df, f"{path}:{name}", host_format))
                elif kind == "network":
                    network.append(_network_table(df, f"{path}:{name}"))
                found |= kind is not None
            if not found:
                raise HplsimError(f"{path}: no table of kernel calls or MPI measurements in this archive")
            continue
        df = _read_csv(path)
        kind = classify(df)
        if kind is None:
            raise HplsimError(f"{path}: unrecognised columns {', '.join(map(str, df.columns)) or '(none)'} ({_EXPECTED})")
        if df.empty:
            raise HplsimError(f"{path}: no measurements (header only)")
        (kernels if kind == "kernel" else network).append(
            _kernel_table(df, str(path), host_format) if kind == "kernel" else _network_table(df, str(path)))
    if kernels:
        out.kernels = pd.concat(kernels, ignore_index=True)
    if network:
        out.network = pd.concat(network, ignore_index=True)
    return out


def check_values(df: pd.DataFrame, columns: Iterable[str], what: str, positive: bool = False) -> None:
    """One clear line for NaN, infinite or negative values (first offending file and line)."""
    for col in columns:
        v = df[col].to_numpy(dtype=float)
        bad = ~np.isfinite(v) | ((v <= 0) if positive else (v < 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            first = df.iloc[i]
            kind = "NaN, infinite or " + ("not positive" if positive else "negative")
            raise HplsimError(f"{what}: {int(bad.sum())} {col} value(s) are {kind} "
                              f"(first at {first.get('source', '?')} line {first.get('row', '?')}: {v[i]!r})")
