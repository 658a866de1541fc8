"""Traces of a simulated run: the one writer and the one reader of the trace format
(docs/formats/trace.md).

The emulated HPL's runtime (csrc/kernel-models/trace.c) writes, per rank, raw 40-byte
records of every modelled kernel and MPI call on the simulated clock, and a table naming
its codes. `write_trace` turns them into one Parquet table, `trace.parquet` (one row per
interval; each MPI interval's waiting part measured by matching sends and receives), and
`trace.json` (the run and each rank's timed region); `read_trace` reads them back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.sysinfo import mem_available

if TYPE_CHECKING:  # pandas is imported where a trace is read or written: `predict` imports
    import pandas as pd  # this module for its request and environment, and pandas takes 0.5 s

FORMAT = "hplsim-trace"
FORMAT_VERSION = 1
EVENTS = "trace.parquet"
META = "trace.json"
CODES = "codes.tsv"
PAJE = "smpi.paje"

RAW_RECORD = np.dtype([
    ("t0", "<f8"), ("t1", "<f8"), ("c", "<i8"), ("a", "<i4"), ("b", "<i4"),
    ("panel", "<i4"), ("code", "<u2"), ("kind", "u1"), ("phase", "u1"),
])
STATES = ("compute", "transfer", "wait")
PHASES = ("fact", "bcast", "swap", "update", "trsv", "none")
SEND_CALLS = ("MPI_Send", "MPI_Ssend", "MPI_Issend")
#: Peak memory of writing a trace, per raw record: 132 bytes measured (the whole `predict`
#: process's maximum RSS, 3.52 GB for the 26.6 million events of a 32x8 spread-roll with
#: look-ahead at N = 50,000, 2026-12-07; 390 before the columns were built without a
#: Python object per event, which a 1,024-rank roll at N = 50,000 took past 23 GB: E95).
WRITE_BYTES_PER_EVENT = 140


@dataclass(frozen=True)
class TraceRequest:
    """What `predict --trace` asked for: where, which panels, and SMPI's Paje trace too."""

    directory: Path
    panels: int | None = None
    paje: bool = False

    @classmethod
    def from_options(cls, directory: Path | None, panels: int | None, paje: bool, configs: int) -> "TraceRequest | None":
        if directory is None:
            if panels is not None or paje:
                raise HplsimError("--trace-panels and --trace-paje need --trace DIR")
            return None
        if configs != 1:
            raise HplsimError(f"--trace records one configuration; {configs} were given")
        if Path(directory).exists() and not Path(directory).is_dir():
            raise HplsimError(f"--trace {directory}: exists and is not a directory")
        return cls(Path(directory), panels, paje)


def trace_env(request: TraceRequest, work: Path) -> tuple[dict[str, str], dict[str, str]]:
    """SimGrid options and runtime variables of a traced run in `work`."""
    raw = work / "trace-raw"
    if raw.exists():
        shutil.rmtree(raw)
    raw.mkdir(parents=True)
    env = {"HPLSIM_TRACE_DIR": str(raw)}
    if request.panels is not None:
        env["HPLSIM_TRACE_PANELS"] = str(request.panels)
    cfg = {}
    if request.paje:
        cfg = {"tracing": "yes", "tracing/smpi": "yes", "tracing/smpi/computing": "yes",
               "tracing/filename": str(work / PAJE)}
        # SMPI traces executions as computing states, not sleeps (docs/predict.md)
        env["HPLSIM_INJECT"] = "exec"
    return cfg, env


def write_run_trace(request: TraceRequest, work: Path, run: dict) -> Path:
    """After a traced run in `work`: the trace (and the Paje file) into the requested directory."""
    keys = [f.name for f in dataclasses.fields(HplConfig)] + ["label"]
    meta = {"config": {k: run[k] for k in keys if k in run},
            **{k: run[k] for k in ("seed", "time_s", "gflops", "platform", "platform_digest", "model",
                                   "model_digest", "hplsim_version") if k in run}}
    write_trace(work / "trace-raw", request.directory, meta, int(run["p"]) * int(run["q"]), request.panels)
    shutil.rmtree(work / "trace-raw")  # converted: not kept, even in a --keep directory
    if request.paje:
        if not (work / PAJE).exists():
            raise HplsimError("SMPI wrote no Paje trace (tracing/filename)")
        os.replace(work / PAJE, request.directory / PAJE)
    else:  # a Paje file of an earlier run must not pass for this one's
        (request.directory / PAJE).unlink(missing_ok=True)
    return request.directory


def _read_codes(raw: Path) -> dict[str, dict[int, str]]:
    import pandas as pd

    try:
        table = pd.read_csv(raw / CODES, sep="\t")
    except (OSError, ValueError) as exc:
        raise HplsimError(f"the simulation wrote no readable trace code table ({raw / CODES}): {exc}") from None
    return {t: dict(zip(g["code"], g["name"])) for t, g in table.groupby("table")}


def _rank_files(raw: Path, ranks: int) -> list[Path]:
    paths = []
    for rank in range(ranks):
        path = raw / f"rank-{rank:06d}.bin"
        if not path.exists():
            raise HplsimError(f"the simulation wrote no trace for rank {rank} ({path})")
        if path.stat().st_size % RAW_RECORD.itemsize:
            raise HplsimError(f"{path} is truncated (not a whole number of {RAW_RECORD.itemsize}-byte records)")
        paths.append(path)
    return paths


def _lookup(names: dict[int, str], categories: list[str], size: int) -> np.ndarray:
    """Raw code -> position of its name among `categories` (-1: not a name of them)."""
    table = np.full(max(size, max(names, default=0) + 1), -1, np.int16)
    for code, name in names.items():
        if name in categories:
            table[code] = categories.index(name)
    return table


def _raw_events(raw: Path, paths: list[Path], total: int) -> tuple[pd.DataFrame, np.ndarray]:
    """The timed region's records of every rank (`paths`, in rank order, `total` records
    in all), in order of rank then start (then end), as the trace's columns. Built column
    by column from the raw records, without a per-event Python object: a 1,024-rank run's
    trace holds tens of millions of events."""
    import pandas as pd

    codes = _read_codes(raw)
    ranks = len(paths)
    cols = {k: np.empty(total, t) for k, t in (("rank", np.int32), ("t0", "<f8"), ("t1", "<f8"), ("kind", "u1"),
                                                ("code", "<u2"), ("phase", "u1"), ("panel", "<i4"), ("a", "<i4"),
                                                ("b", "<i4"), ("c", "<i8"))}
    regions = np.full((ranks, 2), np.nan)
    at = 0
    for rank, path in enumerate(paths):
        rec = np.fromfile(path, RAW_RECORD)
        region = rec[rec["kind"] == 2]
        if len(region) != 1:
            raise HplsimError(f"rank {rank}'s trace has {len(region)} timed regions (expected 1)")
        t0, t1 = region["t0"][0], region["t1"][0]
        regions[rank] = (t0, t1)
        # The timed region only: HPL's set-up and the timing reductions after it are not HPL time.
        rec = rec[(rec["kind"] < 2) & (rec["t1"] > t0) & (rec["t0"] < t1)]
        rec = rec[np.lexsort((rec["t1"], rec["t0"]))]  # stable: ties keep the runtime's order
        n = len(rec)
        cols["rank"][at:at + n] = rank
        for k in ("t0", "t1", "kind", "code", "phase", "panel", "a", "b", "c"):
            cols[k][at:at + n] = rec[k]
        at += n
    c = {k: v[:at] for k, v in cols.items()}
    del cols
    kernel = c["kind"] == 0
    # names: a kernel's code and an MPI call's code are two tables; the categories are the
    # names that occur, sorted (as a categorical built from the names would have them)
    kernel_codes, mpi_codes = codes["kernel"], codes["mpi"]
    width = int(c["code"].max(initial=0)) + 1
    seen_kernel = np.bincount(c["code"][kernel], minlength=width) > 0
    seen_mpi = np.bincount(c["code"][~kernel], minlength=width) > 0
    present = ({kernel_codes.get(int(i)) for i in np.flatnonzero(seen_kernel)}
               | {mpi_codes.get(int(i)) for i in np.flatnonzero(seen_mpi)})
    names = sorted(n for n in present if n is not None)
    name = np.where(kernel, _lookup(kernel_codes, names, width)[c["code"]], _lookup(mpi_codes, names, width)[c["code"]])
    kinds = _lookup(codes["kind"], ["kernel", "mpi"], 3)[c["kind"]]
    phases = _lookup(codes["phase"], list(PHASES), int(c["phase"].max(initial=0)) + 1)[c["phase"]]

    out = pd.DataFrame({
        "rank": c["rank"], "start_s": c["t0"], "end_s": c["t1"],
        "kind": pd.Categorical.from_codes(kinds, categories=["kernel", "mpi"]),
        "name": pd.Categorical.from_codes(name, categories=names),
        "phase": pd.Categorical.from_codes(phases, categories=list(PHASES)),
        "panel": c["panel"],
        "peer": pd.arrays.IntegerArray(c["a"], kernel | (c["a"] < 0)),
        "tag": pd.arrays.IntegerArray(c["b"], kernel | (c["b"] < 0)),
        "bytes": pd.arrays.IntegerArray(c["c"], kernel | (c["c"] < 0)),
        "m": pd.arrays.IntegerArray(c["a"], ~kernel),
        "n": pd.arrays.IntegerArray(c["b"], ~kernel),
        "k": pd.arrays.IntegerArray(c["c"].astype(np.int32), ~kernel),
    }, copy=False)
    return out, regions


def _waits(ev: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of each interval spent waiting for a peer: a receive (or its wait) before
    its message was sent (late sender), a synchronous send (or its wait) before its receive
    was posted (late receiver), and failed probes (polling). Messages are matched as MPI
    orders them: the i-th send from s to d with tag t is the i-th such receive.
    Also returns when the peer's side of each message began (NaN: no message)."""
    import pandas as pd

    wait = np.zeros(len(ev))
    peer_start = np.full(len(ev), np.nan)
    start, end = ev["start_s"].to_numpy(), ev["end_s"].to_numpy()
    categories = list(ev["name"].cat.categories)
    name = ev["name"].cat.codes.to_numpy()

    def called(*names: str) -> np.ndarray:
        return np.isin(name, [categories.index(n) for n in names if n in categories])

    miss = called("MPI_Iprobe(miss)")
    wait[miss] = end[miss] - start[miss]
    rank = ev["rank"].to_numpy()
    peer = ev["peer"].to_numpy(dtype=np.int64, na_value=-1)
    tag = ev["tag"].to_numpy(dtype=np.int64, na_value=-1)

    def numbered(mask: np.ndarray, src: np.ndarray, dst: np.ndarray) -> pd.DataFrame:
        d = pd.DataFrame({"row": np.flatnonzero(mask), "src": src[mask], "dst": dst[mask], "tag": tag[mask],
                          "t0": start[mask]})
        d["seq"] = d.groupby(["src", "dst", "tag"]).cumcount()
        return d

    sends = numbered(called(*SEND_CALLS), rank, peer)
    posts = numbered(called("MPI_Recv", "MPI_Irecv"), peer, rank)
    matched = sends.merge(posts, on=["src", "dst", "tag", "seq"], suffixes=("_s", "_r"))
    sent_at = pd.Series(matched["t0_s"].to_numpy(), index=matched["row_r"])  # by receive post row
    posted_at = pd.Series(matched["t0_r"].to_numpy(), index=matched["row_s"])  # by send row
    del sends, posts, matched

    # A nonblocking call's MPI_Wait completes the i-th pending request of the same peer and tag.
    def completion(post: str, done: str, at: pd.Series) -> pd.Series:
        p = numbered(called(post), rank, peer)
        w = numbered(called(done), rank, peer)
        pair = p.merge(w, on=["src", "dst", "tag", "seq"], suffixes=("_p", "_w"))
        return pd.Series(at.reindex(pair["row_p"]).to_numpy(), index=pair["row_w"])

    def late(rows: pd.Series, only_if_overlapping: bool = False) -> None:
        """rows: interval row -> when the peer's side began; the interval waits until then."""
        rows = rows.dropna()
        idx = rows.index.to_numpy()
        t0, t1 = start[idx], end[idx]
        other = rows.to_numpy(dtype=float)
        w = np.clip(other - t0, 0.0, t1 - t0)
        if only_if_overlapping:  # an eager send returns before the receive is posted: no wait
            w = np.where(t1 > other, w, 0.0)
        wait[idx] = w
        peer_start[idx] = other

    def at(rows: np.ndarray, when: pd.Series) -> pd.Series:
        return pd.Series(when.reindex(rows).to_numpy(), index=rows)

    late(at(np.flatnonzero(called("MPI_Recv")), sent_at))
    late(completion("MPI_Irecv", "MPI_Wait(recv)", sent_at))
    late(at(np.flatnonzero(called("MPI_Send", "MPI_Ssend")), posted_at), only_if_overlapping=True)
    late(completion("MPI_Issend", "MPI_Wait(send)", posted_at))
    return wait, peer_start


def run_id(meta: dict) -> str:
    """What identifies the run a trace comes from (configuration, seed, inputs, result)."""
    keys = ("config", "seed", "platform_digest", "model_digest", "time_s", "panels")
    return hashlib.sha256(json.dumps({k: meta.get(k) for k in keys}, sort_keys=True).encode()).hexdigest()[:16]


def write_trace(raw: Path, out: Path, run: dict, ranks: int, panels: int | None) -> Path:
    """Convert the runtime's raw files in `raw` into `out`/trace.parquet + trace.json.
    `run`: the prediction's fields (config, seed, digests, time_s, gflops)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = _rank_files(raw, ranks)
    events = sum(p.stat().st_size for p in paths) // RAW_RECORD.itemsize
    need, available = events * WRITE_BYTES_PER_EVENT, mem_available()
    if available is not None and need > available:
        raise HplsimError(f"the trace holds {events:,} events: writing it needs about {need / 1e9:.1f} GB and "
                          f"{available / 1e9:.1f} GB are available; trace the first panels only (--trace-panels K)")
    ev, regions = _raw_events(raw, paths, events)
    ev["wait_s"], ev["peer_start_s"] = _waits(ev)
    meta = {
        "format": FORMAT, "version": FORMAT_VERSION, **run, "ranks": ranks, "panels": panels,
        "region_start_s": regions[:, 0].tolist(), "region_end_s": regions[:, 1].tolist(),
        "events": len(ev),
    }
    meta["run_id"] = run_id(meta)
    out.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(ev, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"hplsim_run_id": meta["run_id"].encode()})
    tmp_events, tmp_meta = out / f".{EVENTS}.tmp", out / f".{META}.tmp"
    pq.write_table(table, tmp_events, compression="zstd", row_group_size=1 << 20)
    tmp_meta.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp_events, out / EVENTS)
    os.replace(tmp_meta, out / META)
    return out


@dataclass
class Trace:
    meta: dict
    events: pd.DataFrame

    @property
    def hpl_time_s(self) -> float:
        return float(self.meta["time_s"])

    @property
    def regions(self) -> np.ndarray:
        return np.column_stack([self.meta["region_start_s"], self.meta["region_end_s"]])


def is_trace_dir(path: Path) -> bool:
    return path.is_dir() and (path / META).exists()


def read_trace(path: Path, columns: list[str] | None = None, kinds: list[str] | None = None) -> Trace:
    """Read a trace directory; refuse files that do not belong together. `columns`, `kinds`:
    only those columns, only the events of those kinds (a full-grid trace read whole takes
    about 16 times its file's size in memory)."""
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        meta = json.loads((path / META).read_text())
    except (OSError, ValueError) as exc:
        raise HplsimError(f"{path}: not a readable trace ({META}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise HplsimError(f"{path / META}: not an hplsim trace")
    if meta.get("version") != FORMAT_VERSION:
        raise HplsimError(f"{path / META}: trace format version {meta.get('version')} (this hplsim reads {FORMAT_VERSION})")
    if run_id(meta) != meta.get("run_id"):
        raise HplsimError(f"{path / META}: its run id does not match its content (edited or corrupt)")
    try:
        table = pq.read_table(path / EVENTS, columns=columns,
                              filters=[("kind", "in", list(kinds))] if kinds is not None else None)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise HplsimError(f"{path / EVENTS}: not a readable Parquet file ({' '.join(str(exc).split())[:200]})") from None
    got = (table.schema.metadata or {}).get(b"hplsim_run_id", b"").decode()
    if got != meta["run_id"]:
        raise HplsimError(f"{path}: {EVENTS} is from another run than {META} (run {got or '?'} vs {meta['run_id']})")
    events = table.to_pandas()
    if kinds is None and len(events) != meta.get("events"):
        raise HplsimError(f"{path / EVENTS}: {len(events)} events, {META} says {meta.get('events')}")
    return Trace(meta, events)


def rank_breakdown(trace: Trace) -> pd.DataFrame:
    """Per rank: compute (modelled kernels), transfer and wait (MPI), in seconds, adding up
    to HPL's time. Wait includes the end of the run after the rank's own timed region
    (HPL's time is the slowest rank's). Over the traced panels only with --trace-panels."""
    import pandas as pd

    ev = trace.events
    dur = ev["end_s"] - ev["start_s"]
    ranks = np.arange(trace.meta["ranks"])
    is_kernel = (ev["kind"] == "kernel").to_numpy()
    compute = dur[is_kernel].groupby(ev["rank"][is_kernel]).sum().reindex(ranks, fill_value=0.0)
    mpi = dur[~is_kernel].groupby(ev["rank"][~is_kernel]).sum().reindex(ranks, fill_value=0.0)
    wait = ev["wait_s"][~is_kernel].groupby(ev["rank"][~is_kernel]).sum().reindex(ranks, fill_value=0.0)
    out = pd.DataFrame({"rank": ranks, "compute_s": compute.to_numpy(), "transfer_s": (mpi - wait).to_numpy(),
                        "wait_s": wait.to_numpy()})
    if trace.meta.get("panels") is None:
        # Inside its timed region a rank is always in a kernel or an MPI call; after it, it
        # waits for the slowest rank.
        out["wait_s"] += trace.hpl_time_s - out[["compute_s", "transfer_s", "wait_s"]].sum(axis=1)
    return out


def _rows_by_rank(events: pd.DataFrame, who: str) -> dict[int, np.ndarray]:
    """Each rank's row positions in `events`, checked to be in order of start (the
    analysis helpers below search them by time)."""
    start = events["start_s"].to_numpy()
    groups = events.groupby("rank", sort=False).indices
    for rows in groups.values():
        if np.any(np.diff(start[rows]) < 0):
            raise ValueError(f"{who}: each rank's events must be in order of start")
    return groups


def inside(events: pd.DataFrame, calls: pd.Series, phase: str, nested: str) -> np.ndarray:
    """For the rows of `events` that `calls` selects (events of phase `nested`), in order,
    whether the same rank's nearest events of other phases before and after each are both
    in `phase`: a call of a nested phase made between two steps of another, as the
    look-ahead's broadcast forwarded between the steps of a swap (validation.md E57, E61).
    Each rank's events must be in order of start."""
    start = events["start_s"].to_numpy()
    chosen = calls.to_numpy()
    other = (events["phase"] != nested).to_numpy()
    in_phase = (events["phase"] == phase).to_numpy()
    hit = np.zeros(len(events), dtype=bool)
    for rows in _rows_by_rank(events, "inside").values():
        mine, theirs = rows[chosen[rows]], rows[other[rows]]
        at = np.searchsorted(start[theirs], start[mine])
        ok = (at > 0) & (at < len(theirs))
        ok[ok] &= in_phase[theirs[at[ok] - 1]] & in_phase[theirs[at[ok]]]
        hit[mine] = ok
    return hit[chosen]


def during(events: pd.DataFrame, ranks: np.ndarray, times: np.ndarray) -> pd.DataFrame:
    """What each of `ranks` was doing at the matching time of `times`: the phase, name and
    panel of its event whose interval holds that time (the later one where two meet;
    empty strings and panel −2 if none does: "none" is a phase), as a frame in the order
    asked. Finds what the receiver of a forwarded panel was busy with when the forward
    began (validation.md E62). Each rank's events must be in order of start."""
    ranks, times = np.asarray(ranks, dtype=np.int64), np.asarray(times, dtype=float)
    phase = np.full(len(ranks), "", dtype=object)
    name = np.full(len(ranks), "", dtype=object)
    panel = np.full(len(ranks), -2, dtype=np.int64)
    start, end = events["start_s"].to_numpy(), events["end_s"].to_numpy()
    panels = events["panel"].to_numpy()
    phases, names = events["phase"].astype(str).to_numpy(), events["name"].astype(str).to_numpy()
    groups = _rows_by_rank(events, "during")
    for r in np.unique(ranks):
        rows = groups.get(int(r))
        if rows is None:
            continue
        asked = np.flatnonzero(ranks == r)
        at = np.searchsorted(start[rows], times[asked], side="right") - 1
        ok = at >= 0
        ok[ok] &= end[rows[at[ok]]] >= times[asked[ok]]
        phase[asked[ok]] = phases[rows[at[ok]]]
        name[asked[ok]] = names[rows[at[ok]]]
        panel[asked[ok]] = panels[rows[at[ok]]]
    import pandas as pd

    return pd.DataFrame({"phase": phase, "name": name, "panel": panel})


def held_by(events: pd.DataFrame, ranks: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each (rank, time): follow who waits for whom, from a blocking MPI call still
    waiting at that time (its `wait_s` not over) to its peer, and on, to the first rank
    that is not waiting (computing, transferring, or outside any event). Returns that
    rank and the number of waits followed, in the order asked: what held up a forwarded
    panel's sender through chains of blocked roll partners (validation.md E62). A chain
    that comes back to a rank it passed (which a finished run cannot hold) raises
    ValueError. Each rank's events must be in order of start."""
    ranks, times = np.asarray(ranks, dtype=np.int64), np.asarray(times, dtype=float)
    start = events["start_s"].to_numpy()
    waits_until = start + events["wait_s"].to_numpy()
    is_mpi = (events["kind"] == "mpi").to_numpy()
    peer = events["peer"].astype("float64").to_numpy()  # nullable: NaN for kernels and MPI_Wtime
    groups = _rows_by_rank(events, "held_by")
    holder, hops = ranks.copy(), np.zeros(len(ranks), dtype=np.int64)
    for j, (rank, t) in enumerate(zip(ranks, times)):
        seen = set()
        while True:
            rows = groups.get(int(rank))
            i = -1 if rows is None else np.searchsorted(start[rows], t, side="right") - 1
            if i < 0:
                break
            row = rows[i]
            if not (is_mpi[row] and not np.isnan(peer[row]) and waits_until[row] > t):
                break
            if rank in seen:
                raise ValueError(f"held_by: a cycle of waits through rank {rank} at {t} s")
            seen.add(int(rank))
            rank = int(peer[row])
        holder[j], hops[j] = rank, len(seen)
    return holder, hops
