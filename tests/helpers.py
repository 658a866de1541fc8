"""The tests' one way to run hplsim's command line.

`run_cli` runs the entry point in this process (click's CliRunner isolation): its error
handling (one ``hplsim: error:`` line, an exit code), its output and the files it writes,
without a new interpreter. `run_process` starts a real ``python -m hplsim.cli`` for the
tests where a process is the point: signals, time limits, children, a fresh interpreter.
Both return an object with ``returncode``, ``stdout`` and ``stderr``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from hplsim.cli import run as hplsim_run

HPLSIM = [sys.executable, "-m", "hplsim.cli"]


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
