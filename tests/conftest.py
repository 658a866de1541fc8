"""Shared fixtures: the reference data of ../shared/data and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def reference_data_dir() -> Path | None:
    env = os.environ.get("HPLSIM_REFERENCE_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(REPO.parent / "shared" / "data")
    for c in candidates:
        if (c / "dahu").is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def dahu_dir() -> Path:
    """``../shared/data/dahu`` (or ``$HPLSIM_REFERENCE_DATA/dahu``): real Dahu measurements."""
    base = reference_data_dir()
    if base is None:
        pytest.skip("reference data ../shared/data/dahu not found (set HPLSIM_REFERENCE_DATA)")
    return base / "dahu"
