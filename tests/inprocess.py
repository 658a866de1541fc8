"""Run hplsim's entry point in the test process: its error handling (one line, an exit
code) without a new interpreter, for the tests where a real process is not the point."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from click.testing import CliRunner

from hplsim.cli import run as hplsim_run


def invoke(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """hplsim's entry point in this process: (exit code, stdout, stderr)."""
    runner = CliRunner()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with runner.isolation() as (out, err, *_):
            code = 0
            try:
                hplsim_run(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            sys.stdout.flush()  # json.dump writes into the text wrapper's buffer
            sys.stderr.flush()
            return code, out.getvalue().decode(), err.getvalue().decode()
    finally:
        os.chdir(old)
