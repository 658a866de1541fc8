"""Shared fixtures: the reference data shipped in reference/ and small helpers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


#: the reference data shipped with the project (reference/README.md)
REFERENCE = REPO / "reference"


@pytest.fixture(scope="session")
def dahu_dir() -> Path:
    """``reference/dahu``: real Dahu measurements, shipped with the project. Missing is a
    failure, not a skip: the tests that use it are the suite's independent references."""
    d = REFERENCE / "dahu"
    if not (d / "hpl_reality.csv").is_file():
        pytest.fail(f"reference data missing: {d} (it ships with the project; restore it with git)")
    return d


# ----------------------------------------------------------- the system BLAS's kernels
# Debian's OpenBLAS 0.3.21 does not know recent CPU models and falls back to old kernels
# (Prescott's on an AVX-512 Xeon: a fifth of the speed). `hplsim calibrate` warns about it
# (sysinfo.blas_below_cpu, tested with fake BLAS versions); the benchmarks that run real HPL
# here set OPENBLAS_CORETYPE to the CPU's kernels (docs/tune.md), and so does the suite: its
# real HPL runs and calibrations then run as on a correctly configured machine, and take a
# third of the time. A value set by the user is kept. Done at import, in the controller
# and in every worker, before any process loads that BLAS.

_CORETYPE_PROBE = ("import ctypes; b = ctypes.CDLL('libopenblas.so.0'); "
                   "b.openblas_get_corename.restype = ctypes.c_char_p; print(b.openblas_get_corename().decode())")


def _select_blas_kernels() -> str | None:
    """The OPENBLAS_CORETYPE this suite chose, None when it left the BLAS's own choice."""
    import subprocess
    import sys

    from hplsim.sysinfo import cpu_flags, wider_blas_core

    if "OPENBLAS_CORETYPE" in os.environ:  # the user's, or (in a worker) the controller's choice
        return None
    try:
        out = subprocess.run([sys.executable, "-c", _CORETYPE_PROBE], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    except (OSError, subprocess.TimeoutExpired):
        return None
    wider = wider_blas_core(f"(core: {out.stdout.strip()})", cpu_flags()) if out.returncode == 0 else None
    if wider is None:
        return None
    os.environ["OPENBLAS_CORETYPE"] = wider[2]
    return wider[2]


BLAS_KERNELS_CHOSEN = _select_blas_kernels()


def pytest_report_header(config: pytest.Config) -> str | None:
    if BLAS_KERNELS_CHOSEN:
        return (f"system OpenBLAS: OPENBLAS_CORETYPE={BLAS_KERNELS_CHOSEN} set by tests/conftest.py "
                "(its own choice runs older kernels than this CPU has)")
    return None


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
    asked = time.time()
    with open(lock_path, "a") as lock, open(turnstile_path, "a") as turnstile:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if exclusive:
            fcntl.flock(lock, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_SH)
        started = time.time()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            _timeline(item, exclusive, asked, started)


def _timeline(item: pytest.Item, exclusive: bool, asked: float, started: float) -> None:
    """With HPLSIM_TEST_TIMELINE=FILE, one line per test (worker, waited-from, started,
    ended, exclusive, test): where the suite's wall time goes (benchmarks/suite_time.py)."""
    path = os.environ.get("HPLSIM_TEST_TIMELINE")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.environ.get('PYTEST_XDIST_WORKER', '-')}\t{asked:.3f}\t{started:.3f}\t{time.time():.3f}\t"
                    f"{int(exclusive)}\t{item.nodeid}\n")


# The order of the modules (xdist's `loadfile` gives each module to one worker, in the
# order collected). First the two modules whose tests measure the machine (`exclusive`),
# their exclusive tests first: the workers start on them together and take turns, instead
# of one waiting for the other's longest test to end before it may measure. Then the
# modules whose shared fixture runs a minute or more of work (docs examples: calibrations,
# real runs, simulations), so that none of them is left for the end while the other worker
# idles.
FIRST = ("test_calibrate_run.py", "test_real.py", "test_validate.py", "test_accuracy_local.py", "test_mechanisms.py",
         "test_report.py", "test_fit_cli.py", "test_faults.py", "test_kill.py", "test_tune.py", "test_docs_check.py",
         "test_sweep_run.py", "test_docs_sweep.py", "test_factorial_benchmark.py", "test_bootstrap.py",
         "test_exchanges.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> tuple[int, int]:
        name = item.path.name
        module = FIRST.index(name) if name in FIRST else len(FIRST)
        return module, 0 if item.get_closest_marker("exclusive") else 1

    items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    # numpy's and scipy's BLAS on one thread in the test processes: the same arithmetic, and
    # with two workers on two cores a second thread only spins (the fits' thin matrices
    # tripled their CPU). The programs that measure the machine are other processes.
    import numpy  # noqa: F401  (loads the BLAS that the limit applies to)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits  # scikit-learn's dependency

    threadpool_limits(limits=1, user_api="blas")
