"""The two side files of `hplsim check`: the changelog (known changes, which restart a
series' reference) and the outlier log (known-bad runs, left out). Formats in
docs/formats/history.md."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from hplsim.errors import HplsimError

ALL_HOSTS = "all"


def parse_time(value: str, what: str) -> float:
    """A date (ISO 8601, e.g. 2019-12-01 or 2019-12-01T10:00, UTC unless it says otherwise)
    or a Unix time -> Unix time."""
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise HplsimError(f"{what}: {value!r} is neither a date (YYYY-MM-DD[THH:MM]) nor a Unix time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.timestamp()


def iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M")


@dataclass(frozen=True)
class ChangelogEntry:
    time: float
    host: str  # a host name or "all"
    reason: str = ""

    def applies_to(self, host: str) -> bool:
        return self.host in (host, ALL_HOSTS)


@dataclass(frozen=True)
class Outlier:
    host: str
    cpu: int | None  # None: every CPU of the host
    run_id: str
    reason: str = ""

    def matches(self, host: str, cpu: int, run_id: str) -> bool:
        return self.host == host and self.run_id == run_id and self.cpu in (None, cpu)


def _read_csv(path: Path, needed: set[str], what: str) -> list[dict[str, str]]:
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise HplsimError(f"cannot read {what} {path}: {' '.join(str(exc).split())}") from None
    df.columns = [c.strip() for c in df.columns]
    missing = needed - set(df.columns)
    if missing:
        raise HplsimError(f"{what} {path}: missing column(s) {', '.join(sorted(missing))}")
    return [{k: str(v).strip() for k, v in r.items()} for r in df.to_dict("records")]


def read_changelog(path: Path) -> list[ChangelogEntry]:
    """CSV date,host,reason: each series' reference restarts at the last change before the
    runs under test (host "all": every series)."""
    entries = []
    for i, r in enumerate(_read_csv(path, {"date", "host"}, "changelog"), start=2):
        if not r["host"]:
            raise HplsimError(f"changelog {path}, line {i}: empty host (a host name or 'all')")
        entries.append(ChangelogEntry(parse_time(r["date"], f"changelog {path}, line {i}"), r["host"],
                                      r.get("reason", "")))
    return sorted(entries, key=lambda e: e.time)


def read_outliers(path: Path) -> list[Outlier]:
    """CSV host,cpu,run_id[,reason]: runs to leave out (an empty or absent cpu: every CPU of
    the host)."""
    out = []
    for i, r in enumerate(_read_csv(path, {"host", "run_id"}, "outlier log"), start=2):
        try:
            cpu = int(r["cpu"]) if r.get("cpu") else None
        except ValueError:
            raise HplsimError(f"outlier log {path}, line {i}: cpu {r['cpu']!r} is not an integer") from None
        out.append(Outlier(r["host"], cpu, r["run_id"], r.get("reason", "")))
    return out
