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


# ----------------------------------------------------------- one machine, two workers
# The suite runs on pytest-xdist's workers (pyproject's addopts). Most tests only need a
# core; those marked `exclusive` measure this machine (a calibration's Gflops against the
# BLAS, a ping-pong in microseconds, a probe's delay) and must not share it. Every test
# holds a readers-writer lock on a file all workers see, from the setup of its fixtures to
# its teardown: shared for most, exclusive for the marked ones. The turnstile lets an
# exclusive test in even while the other worker keeps taking shared turns.

def _lock_files(config: pytest.Config) -> tuple[Path, Path] | None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    # each worker's basetemp is <run root>/popen-gwN: the run root is common to them
    root = config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]
    return root / "machine.lock", root / "machine.turnstile"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    import fcntl

    files = _lock_files(item.config)
    if files is None:
        yield
        return
    lock_path, turnstile_path = files
    exclusive = item.get_closest_marker("exclusive") is not None
    with open(lock_path, "a") as lock, open(turnstile_path, "a") as turnstile:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if exclusive:
            fcntl.flock(lock, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# Modules whose shared fixture runs a minute or more of work (docs examples: calibrations,
# real runs, simulations): scheduled first, so that none of them is left for the end while
# the other worker idles (xdist's `loadfile` gives each module to one worker, in the
# order collected).
FIRST = ("test_calibrate_run.py", "test_validate.py", "test_report.py", "test_fit_cli.py", "test_docs_check.py",
         "test_sweep_run.py", "test_real.py", "test_mechanisms.py", "test_factorial_benchmark.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return FIRST.index(name) if name in FIRST else len(FIRST)

    items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    # numpy's and scipy's BLAS on one thread in the test processes: the same arithmetic, and
    # with two workers on two cores a second thread only spins (the fits' thin matrices
    # tripled their CPU). The programs that measure the machine are other processes.
    import numpy  # noqa: F401  (loads the BLAS that the limit applies to)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits  # scikit-learn's dependency

    threadpool_limits(limits=1, user_api="blas")
