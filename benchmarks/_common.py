"""Helpers shared by the benchmark scripts (not part of the package)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Callable

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


class Parser(argparse.ArgumentParser):
    """argparse with the project's error rule: one ``hplsim: error:`` line, exit code 2
    (argparse's own error prints the usage first)."""

    def error(self, message: str):  # type: ignore[override]
        print(f"hplsim: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
        sys.exit(2)


def run_main(main: Callable[[], int | None]) -> None:
    """A benchmark's entry point: an HplsimError is one ``hplsim: error:`` line and its
    exit code, an interruption one line and 130 (or 128 + the signal), never a traceback."""
    from hplsim.errors import HplsimError, Interrupted
    from hplsim.processes import handle_signals

    handle_signals()
    try:
        sys.exit(main() or 0)
    except HplsimError as exc:
        print(f"hplsim: error: {exc}", file=sys.stderr, flush=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("hplsim: interrupted", file=sys.stderr, flush=True)
        sys.exit(130)
    except Interrupted as exc:
        print(f"hplsim: interrupted by {exc}", file=sys.stderr, flush=True)
        sys.exit(128 + exc.signum)


def reference_data(explicit: str | None = None) -> Path:
    """`reference_dir` for scripts that follow the error rule (run under `run_main`); a
    folder given that holds no ``dahu/`` is an error, not a fall-back."""
    from hplsim.errors import HplsimError

    if explicit and not (Path(explicit) / "dahu").is_dir():
        raise HplsimError(f"--data {explicit}: reference data not found (no dahu/ folder there)")
    try:
        return reference_dir(explicit)
    except SystemExit as exc:
        raise HplsimError(str(exc.code)) from None
