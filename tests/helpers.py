"""The tests' one way to run hplsim's command line.

`run_cli` runs the entry point in this process (click's CliRunner isolation): its error
handling (one ``hplsim: error:`` line, an exit code), its output and the files it writes,
without a new interpreter. `run_process` starts a real ``python -m hplsim.cli`` for the
tests where a process is the point: signals, time limits, children, a fresh interpreter.
Both return an object with ``returncode``, ``stdout`` and ``stderr``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from hplsim.cli import run as hplsim_run

HPLSIM = [sys.executable, "-m", "hplsim.cli"]
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
EXPERIMENTS = Path(__file__).resolve().parents[1] / "docs" / "experiments"


def load_benchmark(script: str, name: str, folder: Path = BENCHMARKS):
    """A script of benchmarks/ (or of another `folder`, such as the lab notebook's
    `EXPERIMENTS`) imported as the module `name` (registered in sys.modules, where
    dataclasses look their module up), to test its functions without running it."""
    spec = importlib.util.spec_from_file_location(name, folder / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def require_tools(*names: str) -> None:
    """Fail, not skip, when a program that ./bootstrap installs (OpenMPI, SimGrid, Chromium
    …) is missing: on a machine set up as the README says, nothing the suite needs is absent."""
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not found: run ./bootstrap (it installs them)", pytrace=False)


@dataclass
class Result:
    """What `run_cli` saw: the same three fields as `subprocess.CompletedProcess`."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: object, cwd: Path | None = None) -> Result:
    """``hplsim ARGS`` in this process, from folder `cwd` (default: the current one)."""
    runner = CliRunner()
    old, old_argv = Path.cwd(), sys.argv
    argv = [str(a) for a in args]
    if cwd is not None:
        os.chdir(cwd)
    sys.argv = ["hplsim", *argv]  # what the program records as its command line
    try:
        with runner.isolation() as (out, err, *_):
            code = 0
            try:
                hplsim_run(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            sys.stdout.flush()  # json.dump writes into the text wrapper's buffer
            sys.stderr.flush()
            return Result(code, out.getvalue().decode(), err.getvalue().decode())
    finally:
        os.chdir(old)
        sys.argv = old_argv


def invoke(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """`run_cli` as a tuple (exit code, stdout, stderr)."""
    r = run_cli(*args, cwd=cwd)
    return r.returncode, r.stdout, r.stderr


def run_process(*args: object, cwd: Path | None = None, env: dict | None = None,
                timeout: float = 600) -> subprocess.CompletedProcess:
    """``hplsim ARGS`` as a new process, for the tests where a real process is the point."""
    return subprocess.run([*HPLSIM, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


def assert_one_line_error(r: Result | subprocess.CompletedProcess, pattern: str, code: int | None = 2) -> str:
    """The project's error style: exit `code` (any non-zero if None), exactly one stderr line,
    ``hplsim: error: …`` matching `pattern`, no traceback. Returns the message."""
    if code is None:
        assert r.returncode != 0, (r.stdout, r.stderr)
    else:
        assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("hplsim: error: "), r.stderr
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]


def assert_same_document(a: object, b: object, rel: float = 1e-9, path: str = "") -> None:
    """`a` and `b` (parsed YAML or JSON) have the same structure, keys, strings and integers,
    and floats equal to `rel`: a fit's last bits follow the BLAS kernel the CPU selects
    (AVX2 or AVX-512), so a file written on one machine matches a refit on another only
    to rounding."""
    where = path or "the document"
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), f"{where}: {a!r} != {b!r}"
        assert math.isclose(a, b, rel_tol=rel, abs_tol=rel * 1e-3), f"{where}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_same_document(a[key], b[key], rel, f"{path}.{key}" if path else str(key))
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_document(x, y, rel, f"{path}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


_SYSTEM_DGEMM = """
import ctypes, sys, time
n = int(sys.argv[1])
blas = ctypes.CDLL("libopenblas.so.0")
a = (ctypes.c_double * (n * n))(*([0.5] * (n * n)))
b = (ctypes.c_double * (n * n))(*([0.25] * (n * n)))
c = (ctypes.c_double * (n * n))()
args = (102, 111, 111, n, n, n, ctypes.c_double(1.0), a, n, b, n, ctypes.c_double(0.0), c, n)
blas.cblas_dgemm(*args)
best = 1e9
for _ in range(5):
    t0 = time.perf_counter(); blas.cblas_dgemm(*args); best = min(best, time.perf_counter() - t0)
print(2 * n**3 / best / 1e9)
"""


def system_dgemm_gflops(n: int = 1024) -> float:
    """One core's dgemm rate (n³, best of 5) through the BLAS that the real HPL and the
    calibration programs link (Debian's libopenblas), measured now. Not numpy's: numpy
    ships its own OpenBLAS, which may pick another kernel for the same CPU (on an AVX-512
    Xeon that OpenBLAS 0.3.21 does not know, Debian's runs its Prescott kernel at 15
    Gflops and numpy's its SkylakeX one at 75)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _SYSTEM_DGEMM, str(n)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


def processes_mentioning(text: object) -> list[int]:
    """Processes whose command line mentions `text` (a run's temporary folder, a marker
    argument): what a test checks is gone after the command."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if str(text) in (d / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def sigint_in_a_finaliser() -> None:
    """Send this process SIGINT from inside a __del__: Python runs the handler there, and
    drops the KeyboardInterrupt it raises ("Exception ignored in …")."""
    class SignalInFinaliser:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # bytecode: Python runs the handler here, inside __del__
                pass

    SignalInFinaliser()  # collected at once: its __del__ runs here


def marked_processes(marker: str) -> list[int]:
    """Processes carrying ``HPLSIM_TEST_MARKER=marker`` in their environment (a command, its
    workers, their simulations)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"HPLSIM_TEST_MARKER={marker}".encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
