"""Per series (host × CPU, in time order): is the latest calibration still the same machine?

The last r runs (r = 1 and r = window) are tested against the reference: the runs before
them in the series' current segment (since the last changelog entry for that host or
"all"), known outliers and runs with missing values left out. The verdict comes from the
multivariate test on the chosen metrics; the 1-D test of every metric the history carries
is reported alongside. `replay_series` applies the same test after every run, as if the
check had run after each calibration (control charts, `--replay`).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from hplsim.check.chew import DegenerateReference, chew_test, minimum_reference, threshold
from hplsim.check.logs import ChangelogEntry, Outlier, iso
from hplsim.check.metrics import metric_columns, orientation
from hplsim.errors import HplsimError

OK, REGRESSION, IMPROVEMENT, NOT_ENOUGH, NOT_TESTABLE = (
    "ok", "regression", "improvement", "not enough history", "not testable")
# How the verdicts of the r=1 and r=window tests combine: the first one present wins. An
# alarm is never hidden by a test that could not be run, and "ok" needs every test to pass.
PRECEDENCE = (REGRESSION, IMPROVEMENT, NOT_TESTABLE, NOT_ENOUGH, OK)

# Relative spread under which a metric counts as constant (1-D tests).
_CONSTANT = 1e-12


def combine(statuses) -> str:
    present = set(statuses)
    return next((v for v in PRECEDENCE if v in present), NOT_ENOUGH)


def direction(metrics: list[str], z: np.ndarray) -> str:
    """An alarm is a regression when the standardised deviations, each counted positive
    when its metric moved the bad way (durations up, Gflops down, ...), add up to >= 0.
    Ties and vectors of metrics with no better side (t-values) count as regressions:
    a gate should stop on an unexplained change."""
    score = sum(orientation(m) * float(v) for m, v in zip(metrics, z))
    return REGRESSION if score >= 0 else IMPROVEMENT


@dataclass
class Outcome:
    r: int
    status: str
    n: int = 0  # reference runs
    message: str = ""
    statistic: float | None = None
    threshold: float | None = None
    p_value: float | None = None
    first_run: str | None = None  # the oldest of the r runs under test
    first_time: float | None = None
    deviation: dict = field(default_factory=dict)  # metric -> mean_ref, mean_new, sd_ref, z
    one_d: dict = field(default_factory=dict)  # metric -> n, mean_ref, mean_new, low, high, statistic, ...

    @property
    def alarm(self) -> bool:
        return self.status in (REGRESSION, IMPROVEMENT)


@dataclass
class SeriesVerdict:
    host: str
    cpu: int
    verdict: str
    message: str
    metrics: list[str]
    runs: int  # usable runs (dated, complete, not outliers)
    left_out: dict  # why other runs were not used -> count
    last_run: str | None
    last_time: float | None
    reset_time: float | None  # start of the current segment (changelog), if any
    reset_reason: str | None
    tests: list[Outcome]
    alarms: list[dict] | None = None  # with replay: every past run that raised an alarm

    @property
    def name(self) -> str:
        return f"{self.host}/cpu{self.cpu}"

    @property
    def last_date(self) -> str | None:
        return iso(self.last_time)

    def to_dict(self) -> dict:
        d = asdict(self)
        d = {"series": self.name, **d, "last_date": iso(self.last_time), "reset_date": iso(self.reset_time)}
        for t, obj in zip(d["tests"], self.tests):
            t["alarm"] = obj.alarm
            t["first_date"] = iso(obj.first_time)
        if self.alarms is None:
            del d["alarms"]
        return _json_safe(d)


def _json_safe(obj):
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


# --------------------------------------------------------------------------- one series


@dataclass
class Series:
    """One series, ready to test: its usable runs in time order and, for each run, where
    its segment (the runs since the last changelog entry) starts."""

    host: str
    cpu: int
    metrics: list[str]
    watch: list[str]  # every metric, for the 1-D tests
    runs: pd.DataFrame
    x: np.ndarray  # runs × metrics
    w: np.ndarray  # runs × watch
    segment_start: np.ndarray  # per run: index of the first run of its segment
    resets: list[ChangelogEntry | None]  # per run: the changelog entry its segment starts at
    left_out: dict
    # per run, out of `runs` once (by `prepare`): a replay reads them thousands of times
    run_ids: list[str]
    times: np.ndarray


@dataclass
class _Columns:
    """A history's columns as numpy arrays, read out of the frame once: a cluster's history
    has thousands of series, and each pandas selection per series costs about a millisecond."""
    frame: pd.DataFrame
    times: np.ndarray
    values: np.ndarray
    watched: np.ndarray
    run_ids: np.ndarray

    @classmethod
    def of(cls, frame: pd.DataFrame, metrics: list[str], watch: list[str]) -> _Columns:
        return cls(frame, frame["start_time"].to_numpy(float), frame[metrics].to_numpy(float),
                   frame[watch].to_numpy(float) if watch else np.empty((len(frame), 0)),
                   frame["run_id"].to_numpy())


def prepare(group: pd.DataFrame, metrics: list[str], watch: list[str], changelog: list[ChangelogEntry],
            outliers: list[Outlier]) -> Series:
    """One series: `group`'s runs in time order, without the ones that cannot be used."""
    return _series(_Columns.of(group, metrics, watch), np.arange(len(group)), metrics, watch, changelog, outliers)


def _series(columns: _Columns, where: np.ndarray, metrics: list[str], watch: list[str],
            changelog: list[ChangelogEntry], outliers: list[Outlier]) -> Series:
    """`prepare` on the rows `where` of a frame whose columns were read once."""
    frame = columns.frame
    host, cpu = str(frame["host"].iat[where[0]]), int(frame["cpu"].iat[where[0]])
    left_out = {}
    keep = np.ones(len(where), dtype=bool)
    if outliers:
        bad = np.array([any(o.matches(host, cpu, str(r)) for o in outliers) for r in columns.run_ids[where]],
                       dtype=bool)
        if bad.any():
            left_out["outlier log"] = int(bad.sum())
        keep &= ~bad
    all_times = columns.times[where]
    undated = keep & ~np.isfinite(all_times)
    if undated.any():
        left_out["no start time"] = int(undated.sum())
        keep &= ~undated
    values = columns.values[where]
    incomplete = keep & ~np.isfinite(values).all(axis=1)
    if incomplete.any():
        left_out["missing values"] = int(incomplete.sum())
        keep &= ~incomplete
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(all_times[rows], kind="stable")]
    df = frame.iloc[where[rows]].reset_index(drop=True)
    times = all_times[rows]
    entries = [e for e in changelog if e.applies_to(host)]
    resets: list[ChangelogEntry | None] = []
    for t in times:
        before = [e for e in entries if e.time <= t]
        resets.append(before[-1] if before else None)
    starts = np.zeros(len(df), dtype=int)
    for i, e in enumerate(resets):
        starts[i] = 0 if e is None else int(np.searchsorted(times, e.time, side="left"))
    # column-major, as a frame's to_numpy gives them: the tests' means and covariances then
    # sum each metric's runs in the same order, to the bit
    x = np.asfortranarray(values[rows])
    w = np.asfortranarray(columns.watched[where[rows]])
    return Series(host, cpu, list(metrics), list(watch), df, x, w, starts, resets, left_out,
                  [str(r) for r in columns.run_ids[where[rows]]], times)


def _since_reset(s: Series, i: int) -> str:
    e = s.resets[i]
    if e is None:
        return ""
    return f" since the changelog entry of {iso(e.time)}" + (f" ({e.reason})" if e.reason else "")


def _one_d(ref: np.ndarray, new: np.ndarray, r: int, gamma: float, metric: str) -> dict | None:
    """The 1-D test and band of one metric; None when it cannot be run."""
    ref = ref[np.isfinite(ref)]
    n = ref.size
    if n < minimum_reference(1) or not np.isfinite(new).all():
        return None
    mean, sd = float(ref.mean()), float(ref.std(ddof=1))
    if sd <= _CONSTANT * max(abs(mean), 1e-300):
        return None
    d = float(new.mean()) - mean
    t = n * r / (n + r) * d * d / (sd * sd)
    f = threshold(gamma, 1, n - 1)
    half = sd * math.sqrt(f * (n + r) / (n * r))
    alarm = t >= f
    sense = orientation(metric) * (1 if d > 0 else -1)
    way = (REGRESSION if sense > 0 else IMPROVEMENT if sense < 0 else "higher" if d > 0 else "lower") if alarm else None
    return {"n": n, "mean_ref": mean, "mean_new": float(new.mean()), "low": mean - half, "high": mean + half,
            "statistic": t, "threshold": f, "alarm": bool(alarm), "direction": way}


def _sigmas(dev: dict, metrics: list[str]) -> str:
    ranked = sorted(metrics, key=lambda m: -abs(dev[m]["z"]))
    return ", ".join(f"{m} {dev[m]['z']:+.1f}σ" for m in ranked)


def check_at(s: Series, i: int, r: int, gamma: float) -> Outcome:
    """The mean of runs i−r+1..i against the runs before them in their segment."""
    p = len(s.metrics)
    need = minimum_reference(p)
    first = i - r + 1
    if first < 0:
        return Outcome(r, NOT_ENOUGH, 0, f"{i + 1} usable run(s): need {need} reference runs + {r} under test")
    start = int(s.segment_start[i])
    if first < start:
        return Outcome(r, NOT_ENOUGH, 0, f"{i - start + 1} run(s){_since_reset(s, i)}: "
                                              f"need {need} reference runs + {r} under test")
    n = first - start
    out = Outcome(r, NOT_ENOUGH, n, first_run=s.run_ids[first],
                      first_time=float(s.times[first]))
    if n < need:
        out.message = f"{n} reference run(s){_since_reset(s, i)}: need {need} (window {r})"
        return out
    ref, new = s.x[start:first], s.x[first:i + 1]
    try:
        res = chew_test(ref, new, gamma)
    except DegenerateReference as exc:
        out.status, out.message = NOT_TESTABLE, f"{exc} (window {r})"
        return out
    z = np.array(res.deviation) / np.array(res.scale)
    out.statistic, out.threshold, out.p_value = res.statistic, res.threshold, res.p_value
    out.deviation = {m: {"mean_ref": float(ref[:, j].mean()), "mean_new": float(new[:, j].mean()),
                         "sd_ref": res.scale[j], "z": float(z[j])} for j, m in enumerate(s.metrics)}
    for j, m in enumerate(s.watch):
        one = _one_d(s.w[start:first, j], s.w[first:i + 1, j], r, gamma, m)
        if one is not None:
            out.one_d[m] = one
    out.status = direction(s.metrics, z) if res.alarm else OK
    if res.alarm:
        out.message = f"r={r}: {_sigmas(out.deviation, s.metrics)}"
    return out


def _tests_at(s: Series, i: int, window: int, gamma: float) -> list[Outcome]:
    return [check_at(s, i, r, gamma) for r in sorted({1, window})]


def evaluate_series(s: Series, window: int, gamma: float) -> SeriesVerdict:
    base = dict(host=s.host, cpu=s.cpu, metrics=s.metrics, runs=len(s.runs), left_out=s.left_out)
    notes = "; ".join(f"{k}: {v} run(s) left out" for k, v in s.left_out.items())
    if s.runs.empty:
        why = "no usable run" + (f" ({notes})" if notes else "")
        return SeriesVerdict(**base, verdict=NOT_TESTABLE if s.left_out.get("missing values") else NOT_ENOUGH,
                             message=why, last_run=None, last_time=None, reset_time=None, reset_reason=None,
                             tests=[])
    last = len(s.runs) - 1
    tests = _tests_at(s, last, window, gamma)
    verdict = combine(t.status for t in tests)
    # Alarms: every flagged window. Otherwise the reason of the largest window, the one
    # that asks the most history.
    parts = [t.message for t in tests if t.status == verdict and t.message]
    if verdict in (NOT_ENOUGH, NOT_TESTABLE):
        parts = parts[-1:]
    one_d = {}
    for t in tests:
        for m, o in t.one_d.items():
            if o["alarm"]:
                one_d.setdefault(m, o["direction"])
    if one_d:
        parts.append("1-D alarms: " + ", ".join(f"{m} ({w})" for m, w in one_d.items()))
    if notes:
        parts.append(notes)
    reset = s.resets[last]
    return SeriesVerdict(**base, verdict=verdict, message="; ".join(parts), last_run=s.run_ids[last],
                         last_time=float(s.times[last]),
                         reset_time=None if reset is None else reset.time,
                         reset_reason=None if reset is None else reset.reason, tests=tests)


def replay_series(s: Series, window: int, gamma: float) -> pd.DataFrame:
    """Every run of the series tested when it arrived (r=1, and r=window ending at it).
    Columns: run_id, start_time, verdict, then per test r: status_r<r>, statistic_r<r>,
    threshold_r<r>, and per chosen metric its r=1 band: <metric>_low, <metric>_high."""
    rows = []
    for i in range(len(s.runs)):
        tests = _tests_at(s, i, window, gamma)
        row = {"run_id": s.run_ids[i], "start_time": float(s.times[i]),
               "verdict": combine(t.status for t in tests)}
        for t in tests:
            row[f"status_r{t.r}"], row[f"statistic_r{t.r}"], row[f"threshold_r{t.r}"] = (
                t.status, t.statistic, t.threshold)
            if t.r == 1:
                for m in s.metrics:
                    if m in t.one_d:
                        row[f"{m}_low"], row[f"{m}_high"] = t.one_d[m]["low"], t.one_d[m]["high"]
            if t.alarm:
                row.setdefault("message", []).append(t.message)
        row["message"] = "; ".join(row.get("message", []))
        rows.append(row)
    return pd.DataFrame(rows)


def past_alarms(replay: pd.DataFrame) -> list[dict]:
    alarms = replay[replay["verdict"].isin([REGRESSION, IMPROVEMENT])]
    return [{"run_id": r["run_id"], "time": r["start_time"], "date": iso(r["start_time"]), "verdict": r["verdict"],
             "message": r["message"]} for r in alarms.to_dict("records")]


# ------------------------------------------------------------------------------ history


def _natural(text: str) -> list:
    """dahu-2 before dahu-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def series_of(history: pd.DataFrame, metrics: list[str], changelog: list[ChangelogEntry] = (),
              since: float | None = None, until: float | None = None,
              outliers: list[Outlier] = ()) -> list[Series]:
    missing = [m for m in metrics if m not in history.columns]
    if missing:
        known = ", ".join(metric_columns(history.columns)) or "none"
        raise HplsimError(f"metric(s) {', '.join(missing)} not in the history (it has: {known})")
    df = history
    if since is not None:
        df = df[df["start_time"] >= since]
    if until is not None:
        df = df[df["start_time"] <= until]
    if df.empty:
        raise HplsimError("no calibration run in the history" + (" in the --since/--until range"
                                                                 if since is not None or until is not None else ""))
    watch = metric_columns(df.columns)
    columns = _Columns.of(df, metrics, watch)
    groups = sorted(df.groupby(["host", "cpu"], sort=False).indices.items(),
                    key=lambda kv: (_natural(str(kv[0][0])), kv[0][1]))
    changelog, outliers = list(changelog), list(outliers)
    return [_series(columns, where, metrics, watch, changelog, outliers) for _, where in groups]


def evaluate(history: pd.DataFrame, metrics: list[str], window: int = 5, gamma: float = 0.9999,
             changelog: list[ChangelogEntry] = (), since: float | None = None, until: float | None = None,
             outliers: list[Outlier] = (), replay: bool = False,
             replays: dict[str, tuple[Series, pd.DataFrame]] | None = None) -> list[SeriesVerdict]:
    """The verdict of every series. `replay`: each verdict also lists its past alarms.
    `replays`: filled with each series that has runs and its `replay_series` (what the
    control charts draw), computed once for both."""
    if window < 1:
        raise HplsimError(f"window must be at least 1, got {window}")
    if not 0 < gamma < 1:
        raise HplsimError(f"gamma must be in (0, 1), got {gamma}")
    if not metrics:
        raise HplsimError("no metric to test")
    if len(set(metrics)) != len(metrics):
        raise HplsimError(f"a metric is repeated in {', '.join(metrics)}")
    out = []
    for s in series_of(history, metrics, changelog, since, until, outliers):
        v = evaluate_series(s, window, gamma)
        frame = replay_series(s, window, gamma) if len(s.runs) and (replay or replays is not None) else None
        if replay:
            v.alarms = past_alarms(frame) if frame is not None else []
        if replays is not None and frame is not None:
            replays[f"{s.host}/cpu{s.cpu}"] = (s, frame)
        out.append(v)
    return out
