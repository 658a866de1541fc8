"""What the archive records besides the measurements: every command run (with its output),
the versions of everything involved, the hosts' hardware description and the environment.
A calibration without them cannot be trusted later ("was that node slower, or was it a
different OpenBLAS?")."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from hplsim import __version__
from hplsim.errors import warn
from hplsim.sysinfo import blas_below_cpu, cpu_flags

MAX_STREAM = 64 * 1024
SECRET = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|COOKIE", re.I)


@dataclass(frozen=True)
class Result:
    returncode: int | None
    stdout: str
    stderr: str


def _clip(text: str) -> tuple[str, bool]:
    data = text.encode(errors="replace")
    if len(data) <= MAX_STREAM:
        return text, False
    return data[:MAX_STREAM].decode(errors="ignore"), True


class CommandLog:
    """The machine-readable log of every command a calibration runs (commands.json)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, argv: Sequence[str], start: float, end: float, exit_code: int | None,
            stdout: str = "", stderr: str = "", host: str | None = None, error: str | None = None) -> None:
        out, out_cut = _clip(stdout)
        err, err_cut = _clip(stderr)
        entry: dict[str, Any] = {
            "argv": [str(a) for a in argv], "start": start, "end": end, "exit_code": exit_code,
            "stdout": out, "stderr": err,
            "stdout_bytes": len(stdout.encode(errors="replace")), "stderr_bytes": len(stderr.encode(errors="replace")),
            "stdout_truncated": out_cut, "stderr_truncated": err_cut,
            "host": host or socket.gethostname(),
        }
        if error:
            entry["error"] = error
        self.entries.append(entry)

    def run(self, argv: Sequence[str], timeout: float = 120, host: str | None = None,
            env: dict[str, str] | None = None) -> Result:
        start = time.time()
        try:
            proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env,
                                  errors="replace")
        except FileNotFoundError as exc:
            self.add(argv, start, time.time(), None, host=host, error=f"not found: {exc.filename}")
            return Result(None, "", "")
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            self.add(argv, start, time.time(), None, out, host=host, error=f"timed out after {timeout} s")
            return Result(None, out, "")
        except OSError as exc:
            self.add(argv, start, time.time(), None, host=host, error=str(exc))
            return Result(None, "", "")
        self.add(argv, start, time.time(), proc.returncode, proc.stdout, proc.stderr, host=host)
        return Result(proc.returncode, proc.stdout, proc.stderr)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


def _first_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def git_info(log: CommandLog) -> dict[str, Any]:
    from hplsim.paths import PACKAGE_DIR

    root = PACKAGE_DIR.parents[1]
    info: dict[str, Any] = {"version": __version__, "git_commit": None, "git_dirty": None}
    if shutil.which("git") and (root / ".git").exists():
        head = log.run(["git", "-C", str(root), "rev-parse", "HEAD"], timeout=30)
        if head.returncode == 0:
            info["git_commit"] = head.stdout.strip()
            status = log.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], timeout=30)
            info["git_dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else None
    return info


def os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None


def versions(log: CommandLog, tools: dict[str, Path], with_mpi: bool) -> dict[str, Any]:
    from hplsim.calibrate.tools import BLAS_TOOL, MPI_TOOL

    out: dict[str, Any] = {"kernel": platform.release(), "os": os_release(),
                           "python": platform.python_version()}
    out["compiler"] = _first_line(log.run(["cc", "--version"], timeout=30).stdout)
    out["mpi"] = _first_line(log.run(["mpirun", "--version"], timeout=30).stdout) if shutil.which("mpirun") else None
    if with_mpi and MPI_TOOL in tools:
        out["mpi_library"] = _first_line(log.run([str(tools[MPI_TOOL]), "--version"], timeout=30).stdout)
    if BLAS_TOOL in tools:
        out["openblas"] = _first_line(log.run([str(tools[BLAS_TOOL]), "--version"], timeout=30).stdout)
        # what the calibration measures is this BLAS, rightly (HPL links it too); but a user
        # who expects the CPU's speed must know why it is a fraction of it
        below = blas_below_cpu(out["openblas"], cpu_flags())
        if below:
            warn(below)
    simgrid = None
    if shutil.which("pkg-config"):
        simgrid = _first_line(log.run(["pkg-config", "--modversion", "simgrid"], timeout=30).stdout)
    out["simgrid"] = f"SimGrid {simgrid}" if simgrid else None
    return out


def _sysfs(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def parse_lscpu(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def cpu_summary(lscpu_text: str, cpuinfo_text: str) -> dict[str, Any]:
    """The local host's CPU as far as it can be read; null for what is not exposed."""
    ls = parse_lscpu(lscpu_text)
    model = ls.get("Model name")
    if not model:
        m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo_text, re.M)
        model = m.group(1).strip() if m else None
    gov = _sysfs("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    fmin = _int(_sysfs("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_min_freq"))
    fmax = _int(_sysfs("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"))
    mhz = re.findall(r"^cpu MHz\s*:\s*([\d.]+)", cpuinfo_text, re.M)
    return {
        "model": model,
        "logical_cpus": _int(ls.get("CPU(s)")) or os.cpu_count(),
        "sockets": _int(ls.get("Socket(s)")),
        "cores_per_socket": _int(ls.get("Core(s) per socket")),
        "threads_per_core": _int(ls.get("Thread(s) per core")),
        "governor": gov,
        "min_frequency_hz": fmin * 1000 if fmin else None,
        "max_frequency_hz": fmax * 1000 if fmax else None,
        "cpuinfo_mhz": sorted({float(x) for x in mhz}) or None,
        "boost": _sysfs("/sys/devices/system/cpu/cpufreq/boost"),
    }


def environment() -> dict[str, str]:
    return {k: ("<redacted>" if SECRET.search(k) else v) for k, v in sorted(os.environ.items())}


def command_line() -> list[str]:
    argv = list(sys.argv)
    if argv and argv[0].endswith(("cli.py", "__main__.py")):
        argv[0] = "hplsim"
    elif argv:
        argv[0] = Path(argv[0]).name
    return argv
