"""Network models from MPI calibrations: piecewise-linear fits per operation (M') and the
SimGrid/SMPI options derived from them (docs/fit.md, "From fits to SimGrid options").

What SMPI (SimGrid 3.32) does with those options, and so what each one is fitted from:

- A blocking ``MPI_Send`` of fewer than ``smpi/send-is-detached-thresh`` bytes is
  detached: the sender sleeps ``smpi/os(size)`` and returns; the receiver, once the data
  are in, sleeps ``smpi/or(size)``. A larger send injects no overhead and lasts until the
  simulated transfer ends. So ``smpi/os`` is the ``send`` fit below that threshold and 0
  above, ``smpi/or`` the ``recv`` fit below it and 0 above.
- ``MPI_Isend`` always sleeps ``smpi/ois(size)``: the ``isend`` fit, all sizes.
- Messages smaller than ``smpi/async-small-thresh`` go to the receiver's mailbox before it
  posts its receive, so the data can be there when it does (eager); larger ones wait for
  the receive (rendez-vous).
- A transfer takes ``lat-factor(size)·L + size / (bw-factor(size)·B)``, with L the sum of
  the latencies of the links on the route and B its bottleneck bandwidth. A ping-pong's
  one-way time (half its round trip) is ``os + transfer + or`` below the detached
  threshold and ``transfer`` above; subtracting the overheads leaves the transfer's line
  ``a + b·size`` on each interval, hence ``lat-factor = a / L`` and
  ``bw-factor = 1 / (b·B)``.

What ``MPI_Iprobe`` reports is not an SMPI option but hplsim's (the platform's ``mpi:
iprobe_reports``, docs/formats/platform.md): the ``iprobe-late`` measurements say how much
computation passed between the first probe after a message arrived and the probe that
reported it. About one probe gap (``IPROBE_LATE_GAP``) is Open MPI's behaviour
("progressed": a failed probe is what takes arriving messages in); about zero is SMPI's
("arrived").

The thresholds are protocol switches seen in the data: ``send-is-detached-thresh`` is the
breakpoint where ``send`` jumps the most (the sender starts waiting for the transfer),
``async-small-thresh`` the one where ``recv`` jumps the most (a receive of data already
there is a memory copy; a rendez-vous receive waits for the whole transfer), but not
above the former (SimGrid refuses it). Each falls back to the other's, then to SMPI's
default, when its operation shows no jump.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hplsim.errors import HplsimError
from hplsim.models.piecewise import MIN_POINTS, PiecewiseLinear, fit_piecewise, fit_piecewise_joint

SIZED_OPERATIONS = ("send", "recv", "isend", "pingpong")
CONSTANT_OPERATIONS = {"iprobe": "smpi/iprobe", "test": "smpi/test", "wtime": "smpi/wtime"}
#: the computation between two probes of an iprobe-late measurement (LATE_GAP in csrc/calib/calib_mpi.c)
IPROBE_LATE_GAP = 1e-4
#: SMPI's own default for both thresholds, used when the data show no rendez-vous switch
SMPI_DEFAULT_THRESHOLD = 65536
#: a breakpoint is the eager/rendez-vous switch if recv is this much slower just above it
SWITCH_RATIO = 1.5
#: bw-factor cap where the overheads already explain all the per-byte time (tiny messages)
MAX_BW_FACTOR = 100.0


@dataclass
class NetworkFit:
    fits: dict[str, PiecewiseLinear]  # operation -> piecewise fit
    detached_threshold: int  # smpi/send-is-detached-thresh (bytes)
    async_threshold: int  # smpi/async-small-thresh (bytes)
    threshold_reasons: list[str]
    constants: dict[str, float] = field(default_factory=dict)  # iprobe/test/wtime: median seconds
    cluster: str | None = None
    joint: bool = True
    n: dict[str, int] = field(default_factory=dict)
    # "arrived" / "progressed" from the iprobe-late measurements; None without any
    iprobe_reports: str | None = None
    iprobe_late_probes: float | None = None  # median number of probes late

    @property
    def breakpoints(self) -> dict[str, list[float]]:
        return {op: f.breakpoints for op, f in self.fits.items()}

    def _op(self, operation: str) -> PiecewiseLinear:
        try:
            return self.fits[operation]
        except KeyError:
            raise HplsimError(f"no fit of {operation!r} (fitted: {', '.join(self.fits)})") from None

    def predict(self, operation: str, size: np.ndarray) -> np.ndarray:
        """Expected duration (s) of `operation` for messages of `size` bytes, as measured
        (ping-pong: the round trip)."""
        return self._op(operation).predict(size)

    def sample(self, operation: str, size: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self._op(operation).sample(size, rng)


def select_cluster(data: pd.DataFrame, cluster: str | None) -> tuple[pd.DataFrame, str | None]:
    clusters = sorted({str(c) for c in data["cluster"].dropna()}) if "cluster" in data else []
    if cluster is not None:
        if not clusters:
            raise HplsimError(f"--cluster {cluster}: the data have no cluster column")
        if cluster not in clusters:
            raise HplsimError(f"no measurements of cluster {cluster!r} (clusters: {', '.join(clusters)})")
        return data[data["cluster"] == cluster], cluster
    if len(clusters) > 1:
        raise HplsimError(f"the data hold several clusters ({', '.join(clusters)}): choose one with --cluster")
    return data, clusters[0] if clusters else None


def fit_network(
    data: pd.DataFrame,
    *,
    cluster: str | None = None,
    joint: bool = True,
    min_points: int = MIN_POINTS,
    noise: str = "normal",
    seed: int = 0,
) -> NetworkFit:
    """Piecewise fits of every sized operation (breakpoints shared by all operations when
    `joint`), the eager/rendez-vous threshold, and the constant-time operations."""
    from hplsim.models.readers import check_values

    data, cluster = select_cluster(data, cluster)
    if data.empty:
        raise HplsimError("no MPI measurements")
    known = set(SIZED_OPERATIONS) | set(CONSTANT_OPERATIONS) | {"iprobe-late"}
    unknown = sorted(set(data["operation"]) - known)
    if unknown:
        raise HplsimError(f"unknown MPI operation(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    where = f"MPI measurements{f' of {cluster}' if cluster else ''}"
    check_values(data, ["duration"], where, positive=True)
    sized = data[data["operation"].isin(SIZED_OPERATIONS)]
    if sized.empty:
        raise HplsimError(f"{where}: no send, recv, isend or pingpong measurements")
    check_values(sized, ["size"], where, positive=True)
    series = {op: (g["size"].to_numpy(float), g["duration"].to_numpy(float))
              for op, g in sized.groupby("operation", sort=False)}
    series = {op: series[op] for op in SIZED_OPERATIONS if op in series}
    for op, (x, _) in series.items():
        if len(np.unique(x)) < 2:
            raise HplsimError(f"{where}: every {op} measurement has the same size ({x[0]:g} bytes): "
                              "a fit in size needs at least two")
    if joint:
        fits = fit_piecewise_joint(series, min_points=min_points, noise=noise, seed=seed)
    else:
        fits = {op: fit_piecewise(x, y, min_points=min_points, noise=noise, seed=seed, what=op)
                for op, (x, y) in series.items()}
    (detached, async_, reasons) = _thresholds(fits)
    constants = {op: float(g["duration"].median()) for op, g in data.groupby("operation")
                 if op in CONSTANT_OPERATIONS}
    late = data.loc[data["operation"] == "iprobe-late", "duration"]
    late_probes = float(late.median()) / IPROBE_LATE_GAP if len(late) else None
    reports = None if late_probes is None else ("progressed" if late_probes >= 0.5 else "arrived")
    if late_probes is not None and late_probes >= 1.5:
        reasons.append(f"MPI_Iprobe reports a message {late_probes:.1f} probes late (median); "
                       "the emulation models one ('progressed')")
    return NetworkFit(fits, detached, async_, reasons, constants, cluster, joint,
                      {op: len(x) for op, (x, _) in series.items()}, reports, late_probes)


def _jump(fit: PiecewiseLinear | None) -> tuple[float, int] | None:
    """The breakpoint where the fit jumps up the most, if by SWITCH_RATIO or more."""
    if fit is None or not fit.breakpoints:
        return None
    ratio, b = max((float(right.predict(b) / max(left.predict(b), 1e-300)), b)
                   for b, left, right in zip(fit.breakpoints, fit.segments[:-1], fit.segments[1:]))
    return (ratio, int(round(b))) if ratio >= SWITCH_RATIO else None


def _thresholds(fits: dict[str, PiecewiseLinear]) -> tuple[int, int, list[str]]:
    jumps = {op: _jump(fits.get(op)) for op in ("send", "recv")}
    out, reasons = [], []
    for key, first, second in (("smpi/send-is-detached-thresh", "send", "recv"),
                               ("smpi/async-small-thresh", "recv", "send")):
        for op in (first, second):
            if jumps[op] is not None:
                ratio, b = jumps[op]
                out.append(b)
                reasons.append(f"{key} = {b}: {op} is {ratio:.1f}x slower just above {b} B")
                break
        else:
            out.append(SMPI_DEFAULT_THRESHOLD)
            reasons.append(f"{key} = {SMPI_DEFAULT_THRESHOLD} (SMPI's default): neither send nor recv "
                           f"jumps by {SWITCH_RATIO}x or more")
    detached, async_ = out
    if async_ > detached:
        # SimGrid refuses async-small-thresh > send-is-detached-thresh.
        reasons[1] = (f"smpi/async-small-thresh = {detached}: recv switches at {async_} B, but SimGrid needs "
                      f"async-small-thresh <= send-is-detached-thresh; receives of {detached}-{async_} B are "
                      "simulated as rendez-vous (slower than measured)")
        async_ = detached
    return detached, async_, reasons


# ------------------------------------------------------------------ SimGrid options


def _coef(fit: PiecewiseLinear | None, size: float) -> tuple[float, float]:
    if fit is None:
        return 0.0, 0.0
    seg = fit.segments[int(fit.segment_index(np.array([size]))[0])]
    return seg.intercept, seg.slope


def _overhead(fit: PiecewiseLinear, threshold: int | None) -> str:
    """``size:offset:per_byte;...`` of a fit, zeroed from `threshold` on (if given)."""
    items = []
    for seg in fit.segments:
        lower = int(round(seg.lower))
        if threshold is not None and lower >= threshold:
            break
        items.append(f"{lower}:{seg.intercept!r}:{seg.slope!r}")
    if threshold is not None:
        items.append(f"{threshold}:0:0")
    return ";".join(items)


@dataclass(frozen=True)
class TransferSegment:
    lower: int
    latency: float  # seconds: the transfer line's intercept
    per_byte: float  # seconds per byte: its slope
    lat_factor: float
    bw_factor: float


def transfer_segments(fit: NetworkFit, bandwidth: float, route_latency: float) -> list[TransferSegment]:
    """The one-way transfer time of pingpong, net of SMPI's eager overheads, per interval."""
    pp = fit.fits["pingpong"]
    eager_ops = [fit.fits[op] for op in ("send", "recv") if op in fit.fits]
    cuts = {0.0, *pp.breakpoints}
    for f in eager_ops:
        cuts |= {b for b in f.breakpoints if b < fit.detached_threshold}
    cuts.add(float(fit.detached_threshold))
    bounds = sorted({int(round(c)) for c in cuts})
    out = []
    for lo, hi in zip(bounds, [*bounds[1:], math.inf]):
        probe = float(lo) + 0.5 if math.isinf(hi) else 0.5 * (lo + hi)  # inside the interval
        a, b = (c / 2.0 for c in _coef(pp, probe))  # one-way: half the round trip
        if probe < fit.detached_threshold:
            for op in ("send", "recv"):
                oa, ob = _coef(fit.fits.get(op), probe)
                a, b = a - oa, b - ob
        lat = max(a, 0.0) / route_latency if route_latency > 0 else 0.0
        bw = min(1.0 / (b * bandwidth), MAX_BW_FACTOR) if b > 0 else MAX_BW_FACTOR
        out.append(TransferSegment(lo, a, b, lat, bw))
    return out


def smpi_options(fit: NetworkFit, bandwidth: float, route_latency: float) -> tuple[dict[str, str], list[str]]:
    """SimGrid options (string values, SimGrid's syntax) and notes on what was left out.

    bandwidth: the route's bottleneck link bandwidth (bytes/s); route_latency: the sum of
    the latencies of the links between two hosts (seconds).
    """
    if bandwidth <= 0:
        raise HplsimError("the link bandwidth must be positive")
    opts: dict[str, str] = {}
    notes: list[str] = []
    if "send" in fit.fits:
        opts["smpi/os"] = _overhead(fit.fits["send"], fit.detached_threshold)
    else:
        notes.append("no send measurements: smpi/os not set")
    if "recv" in fit.fits:
        opts["smpi/or"] = _overhead(fit.fits["recv"], fit.detached_threshold)
    else:
        notes.append("no recv measurements: smpi/or not set")
    if "isend" in fit.fits:
        opts["smpi/ois"] = _overhead(fit.fits["isend"], None)
    else:
        notes.append("no isend measurements: smpi/ois not set")
    if "pingpong" in fit.fits:
        segs = transfer_segments(fit, bandwidth, route_latency)
        opts["smpi/bw-factor"] = ";".join(f"{s.lower}:{s.bw_factor!r}" for s in segs)
        opts["smpi/lat-factor"] = ";".join(f"{s.lower}:{s.lat_factor!r}" for s in segs)
        capped = [s.lower for s in segs if s.bw_factor >= MAX_BW_FACTOR]
        if capped:
            notes.append(f"bw-factor capped at {MAX_BW_FACTOR:g} from {', '.join(map(str, capped))} B: the eager "
                         "overheads already account for the ping-pong's per-byte time there")
        if any(s.latency < 0 for s in segs):
            notes.append("lat-factor set to 0 where the eager overheads exceed the ping-pong's latency")
    else:
        notes.append("no pingpong measurements: smpi/bw-factor and smpi/lat-factor not set")
    opts["smpi/async-small-thresh"] = str(fit.async_threshold)
    opts["smpi/send-is-detached-thresh"] = str(fit.detached_threshold)
    for op, key in CONSTANT_OPERATIONS.items():
        if op in fit.constants:
            opts[key] = repr(fit.constants[op])
    return opts, notes


def segments_table(fit: NetworkFit) -> pd.DataFrame:
    rows = []
    for op, f in fit.fits.items():
        for i, s in enumerate(f.segments):
            row = {"operation": op, "segment": i, "lower": s.lower, "upper": s.upper, "intercept": s.intercept,
                   "slope": s.slope, "n": s.n, "rel_sd": s.rel_sd}
            if s.noise is not None:
                row["noise"] = "; ".join(f"{w:.3f}:N({m:.3g},{sd:.3g})"
                                         for w, m, sd in zip(s.noise.weights, s.noise.shifts, s.noise.sds))
            rows.append(row)
    return pd.DataFrame(rows)

