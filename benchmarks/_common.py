"""Helpers shared by the benchmark scripts (not part of the package)."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def reference_dir(explicit: str | None = None) -> Path:
    for c in [explicit, os.environ.get("HPLSIM_REFERENCE_DATA"), REPO.parent / "shared" / "data"]:
        if c and (Path(c) / "dahu").is_dir():
            return Path(c) / "dahu"
    raise SystemExit("reference data not found: pass --data DIR or set HPLSIM_REFERENCE_DATA")


def spread(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def write_json(path: str | None, doc) -> None:
    if path:
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        tmp.replace(path)
