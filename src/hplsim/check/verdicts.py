"""Per series (host × CPU, in time order): is the latest calibration still the same machine?

The last r observations (r = 1 and r = window) are tested against the reference: the
observations before them since the last applicable changelog entry, known outliers
excluded. The verdict comes from the multivariate test on the chosen metrics; the 1-D
tests of each metric are reported alongside.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from hplsim.check.chew import DegenerateReference, band, chew_test, minimum_reference
from hplsim.check.history import HIGHER_IS_WORSE, LOWER_IS_WORSE
from hplsim.errors import HplsimError

OK, REGRESSION, IMPROVEMENT, NOT_ENOUGH, NOT_TESTABLE = (
    "ok", "regression", "improvement", "not enough history", "not testable")


def parse_time(value: str, what: str) -> float:
    """A date (ISO 8601, e.g. 2019-12-01 or 2019-12-01T10:00) or a Unix time -> Unix time."""
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise HplsimError(f"{what}: {value!r} is neither a date (YYYY-MM-DD) nor a Unix time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


@dataclass(frozen=True)
class ChangelogEntry:
    time: float
    host: str  # a host name or "all"
    reason: str


def read_changelog(path: Path) -> list[ChangelogEntry]:
    """CSV with columns date, host, reason (host "all" resets every series)."""
    df = _read_csv(path, {"date", "host"}, "changelog")
    return [ChangelogEntry(parse_time(r["date"], f"changelog {path}"), str(r["host"]).strip(), str(r.get("reason", "")))
            for r in df.to_dict("records")]


def read_outliers(path: Path) -> set[tuple[str, int | None, str]]:
    """CSV with columns host, cpu (empty: every CPU), run_id[, reason]: runs to exclude."""
    df = _read_csv(path, {"host", "run_id"}, "outlier log")
    out = set()
    for r in df.to_dict("records"):
        cpu = r.get("cpu")
        cpu = None if cpu is None or (isinstance(cpu, float) and np.isnan(cpu)) or str(cpu).strip() == "" else int(cpu)
        out.add((str(r["host"]).strip(), cpu, str(r["run_id"]).strip()))
    return out


def _read_csv(path: Path, needed: set[str], what: str) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise HplsimError(f"cannot read {what} {path}: {exc}") from None
    missing = needed - set(df.columns)
    if missing:
        raise HplsimError(f"{what} {path}: missing column(s) {', '.join(sorted(missing))}")
    return df


@dataclass
class TestOutcome:
    r: int
    n: int
    statistic: float | None = None
    threshold: float | None = None
    alarm: bool = False
    direction: str | None = None
    one_d: dict = field(default_factory=dict)  # metric -> {statistic, threshold, alarm, low, high, mean}


@dataclass
class SeriesVerdict:
    host: str
    cpu: int
    verdict: str
    message: str
    metrics: list[str]
    runs: int
    last_run: str | None
    last_time: float | None
    reset_time: float | None
    tests: list[TestOutcome]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["last_date"] = (datetime.fromtimestamp(self.last_time, timezone.utc).isoformat()
                          if self.last_time is not None else None)
        return d


def _orientation(metric: str) -> int:
    return 1 if metric in HIGHER_IS_WORSE else -1 if metric in LOWER_IS_WORSE else 0


def direction(metrics: list[str], deviation: tuple[float, ...], sd: np.ndarray) -> str:
    """Regression when the oriented, standardised deviations add up to "worse"."""
    score = sum(_orientation(m) * d / s for m, d, s in zip(metrics, deviation, sd) if s > 0)
    return REGRESSION if score > 0 else IMPROVEMENT


def reset_time(changelog: list[ChangelogEntry], host: str, before: float) -> float | None:
    times = [e.time for e in changelog if e.host in (host, "all") and e.time <= before]
    return max(times) if times else None


def evaluate_series(
    series: pd.DataFrame, metrics: list[str], window: int, gamma: float,
    changelog: list[ChangelogEntry] = (),
) -> SeriesVerdict:
    """`series`: one host and CPU, outliers already removed, sorted by start_time."""
    host, cpu = str(series["host"].iloc[0]), int(series["cpu"].iloc[0])
    missing = [m for m in metrics if m not in series.columns]
    if missing:
        raise HplsimError(f"metric(s) {', '.join(missing)} not in the history")
    p = len(metrics)
    last = series.iloc[-1]
    base = dict(host=host, cpu=cpu, metrics=list(metrics), runs=len(series), last_run=str(last["run_id"]),
                last_time=float(last["start_time"]))
    complete = series.dropna(subset=metrics)
    dropped = len(series) - len(complete)
    note = f" ({dropped} run(s) with missing values left out)" if dropped else ""
    need = minimum_reference(p)
    tests: list[TestOutcome] = []
    reset = None
    for r in sorted({1, window}):
        if len(complete) < r + 1:
            return SeriesVerdict(**base, verdict=NOT_ENOUGH, reset_time=None, tests=tests,
                                 message=f"{len(complete)} usable run(s){note}: need {need} reference runs + {r}")
        new = complete.iloc[-r:]
        reset = reset_time(list(changelog), host, float(new["start_time"].iloc[0]))
        ref = complete.iloc[:-r]
        if reset is not None:
            ref = ref[ref["start_time"] > reset]
        if len(ref) < need:
            why = " since the last changelog reset" if reset is not None else ""
            return SeriesVerdict(**base, verdict=NOT_ENOUGH, reset_time=reset, tests=tests,
                                 message=f"{len(ref)} reference run(s){why}{note}: need {need} (window {r})")
        x, y = ref[metrics].to_numpy(float), new[metrics].to_numpy(float)
        try:
            res = chew_test(x, y, gamma)
        except DegenerateReference as exc:
            return SeriesVerdict(**base, verdict=NOT_TESTABLE, reset_time=reset, tests=tests,
                                 message=f"{exc}{note}")
        outcome = TestOutcome(r, len(ref), res.statistic, res.threshold, res.alarm)
        sd = x.std(axis=0, ddof=1)
        if res.alarm:
            outcome.direction = direction(metrics, res.deviation, sd)
        for j, m in enumerate(metrics):
            try:
                one = chew_test(x[:, j], y[:, j], gamma)
                lo, hi = band(x[:, j], r, gamma)
            except DegenerateReference:
                continue
            outcome.one_d[m] = {"statistic": one.statistic, "threshold": one.threshold, "alarm": one.alarm,
                                "low": lo, "high": hi, "mean": float(y[:, j].mean())}
        tests.append(outcome)
    alarms = [t.direction for t in tests if t.alarm]
    verdict = REGRESSION if REGRESSION in alarms else IMPROVEMENT if alarms else OK
    flagged = sorted({m for t in tests for m, o in t.one_d.items() if o["alarm"]})
    message = f"1-D alarms: {', '.join(flagged)}" if flagged else ""
    return SeriesVerdict(**base, verdict=verdict, reset_time=reset, tests=tests, message=(message + note).strip())


def select(history: pd.DataFrame, since: float | None, outliers: set) -> pd.DataFrame:
    df = history
    if since is not None:
        df = df[df["start_time"] >= since]
    if outliers:
        keep = [not ((h, c, r) in outliers or (h, None, r) in outliers)
                for h, c, r in zip(df["host"].astype(str), df["cpu"].astype(int), df["run_id"].astype(str))]
        df = df[keep]
    return df.sort_values(["host", "cpu", "start_time"], kind="stable")


def evaluate(history: pd.DataFrame, metrics: list[str], window: int, gamma: float,
             changelog: list[ChangelogEntry] = (), since: float | None = None,
             outliers: set = frozenset()) -> list[SeriesVerdict]:
    if window < 1:
        raise HplsimError(f"window must be at least 1, got {window}")
    if not 0 < gamma < 1:
        raise HplsimError(f"gamma must be in (0, 1), got {gamma}")
    df = select(history, since, outliers)
    if df.empty:
        raise HplsimError("no calibration run in the history (after --since and the outlier log)")
    return [evaluate_series(g, metrics, window, gamma, changelog)
            for _, g in df.groupby(["host", "cpu"], sort=True)]


def rolling(series: pd.DataFrame, metrics: list[str], gamma: float,
            changelog: list[ChangelogEntry] = ()) -> pd.DataFrame:
    """For the control charts: each run tested alone (r=1) against the runs before it since
    the last reset. Columns: start_time, verdict, and per metric the band low/high."""
    complete = series.dropna(subset=metrics).reset_index(drop=True)
    rows = []
    need = minimum_reference(len(metrics))
    for i in range(len(complete)):
        t = float(complete["start_time"].iloc[i])
        reset = reset_time(list(changelog), str(complete["host"].iloc[0]), t)
        ref = complete.iloc[:i]
        if reset is not None:
            ref = ref[ref["start_time"] > reset]
        row = {"start_time": t, "verdict": NOT_ENOUGH}
        if len(ref) >= need:
            x, y = ref[metrics].to_numpy(float), complete[metrics].iloc[i:i + 1].to_numpy(float)
            try:
                res = chew_test(x, y, gamma)
                row["verdict"] = direction(metrics, res.deviation, x.std(axis=0, ddof=1)) if res.alarm else OK
                for j, m in enumerate(metrics):
                    row[f"{m}_low"], row[f"{m}_high"] = band(x[:, j], 1, gamma)
            except DegenerateReference:
                row["verdict"] = NOT_TESTABLE
        rows.append(row)
    return pd.DataFrame(rows)
