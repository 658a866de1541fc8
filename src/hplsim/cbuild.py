"""Building C into the cache, shared by every build (HPL's in hpl/build.py, the kernel
tracer's in real/trace.py, the calibration tools' in calibrate/tools.py): each keys its
directory by a hash of what goes into it, builds in a temporary directory next to it and
renames it into place, so that an edit rebuilds and concurrent builders never see half a
build."""

from __future__ import annotations

import subprocess
from pathlib import Path


def compiler_version(cc: str) -> str:
    """The first line of ``cc --version`` (part of the build keys), "" when it does not run."""
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.splitlines()[0] if out.stdout else ""


def publish(built: Path, dest: Path, done: Path) -> None:
    """Rename the finished build directory `built` to `dest`. When another builder got
    there first (`done`, a file of its build, exists), keep theirs."""
    try:
        built.rename(dest)
    except OSError:
        if not done.exists():
            raise
