"""Where the measuring processes run: this host's cores, the hosts of a hostfile (mpirun),
or a Slurm allocation (srun); and how to run a command on one of those hosts to read its
hardware description. Everything is checked before anything runs."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from hplsim.calibrate.metadata import CommandLog
from hplsim.errors import HplsimError

LAUNCHERS = ("auto", "local", "mpirun", "srun")


def parse_cores(text: str) -> list[int]:
    """'0,2,4-7' -> [0, 2, 4, 5, 6, 7], checked against the cores this process may use."""
    cores: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                cores.extend(range(lo, hi + 1))
            else:
                cores.append(int(part))
    except ValueError:
        raise HplsimError(f"--cores {text!r}: expected a list like 0,1 or 0-15") from None
    if not cores:
        raise HplsimError("--cores: no core given")
    if len(set(cores)) != len(cores):
        raise HplsimError(f"--cores {text!r}: a core is listed twice")
    allowed = available_cores()
    missing = [c for c in cores if c not in allowed]
    if missing:
        raise HplsimError(f"core {missing[0]} is not available here (available: {format_cores(allowed)})")
    return cores


def available_cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def format_cores(cores: Sequence[int]) -> str:
    return ",".join(map(str, cores))


def parse_hostfile(path: Path) -> dict[str, int]:
    """Host -> slots, in file order. ``host slots=N`` (OpenMPI) or one line per slot (the
    HPL habit of listing a host once per rank); comments and blank lines ignored."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise HplsimError(f"hostfile {path}: cannot read it ({exc.strerror or exc})") from None
    slots: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        host, count = words[0], 1
        for w in words[1:]:
            m = re.fullmatch(r"(?:slots|max[-_]slots)=(\d+)", w)
            if m and w.startswith("slots"):
                count = int(m.group(1))
            elif not m:
                raise HplsimError(f"hostfile {path}:{lineno}: cannot parse {w!r} (expected slots=N)")
        if count < 1:
            raise HplsimError(f"hostfile {path}:{lineno}: slots must be >= 1")
        slots[host] = slots.get(host, 0) + count
    if not slots:
        raise HplsimError(f"hostfile {path} lists no host")
    return slots


def is_local(host: str) -> bool:
    names = {"localhost", socket.gethostname(), socket.getfqdn()}
    if host in names or host.split(".")[0] == socket.gethostname().split(".")[0]:
        return True
    try:
        addrs = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        return False
    return any(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)


def check_resolvable(hosts: Sequence[str], hostfile: Path) -> None:
    for host in hosts:
        try:
            socket.getaddrinfo(host, None)
        except socket.gaierror:
            raise HplsimError(f"hostfile {hostfile}: host {host!r} is unknown (does not resolve)") from None


def mpirun_base() -> list[str]:
    if shutil.which("mpirun") is None:
        raise HplsimError("mpirun not found: install openmpi-bin (./bootstrap does)")
    argv = ["mpirun"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-run-as-root")  # containers and CI often run as root
    return argv


@dataclass
class Placement:
    """Processes and where they run."""

    launcher: str  # local | mpirun | srun
    processes: int
    hosts: list[str]
    cores: list[int] | None = None  # local launcher: one process per listed core
    hostfile: Path | None = None
    slots: dict[str, int] = field(default_factory=dict)

    def local_processes(self) -> int:
        """Processes on this host (for the memory check)."""
        if self.launcher == "local":
            return self.processes
        return sum(n for h, n in self.slots.items() if is_local(h)) if self.slots else 0

    def metadata(self) -> dict:
        return {"launcher": self.launcher, "processes": self.processes, "cores": self.cores,
                "hostfile": str(self.hostfile) if self.hostfile else None, "hosts": self.hosts,
                "slots": self.slots or None}

    def remote_prefix(self, host: str) -> list[str]:
        """argv prefix running one command on `host`."""
        if self.launcher == "srun":
            return ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={host}"]
        return [*mpirun_base(), "--host", host, "-np", "1"]


def _slurm_hosts(log: CommandLog) -> list[str]:
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        return [socket.gethostname()]
    if shutil.which("scontrol"):
        res = log.run(["scontrol", "show", "hostnames", nodelist], timeout=60)
        if res.returncode == 0 and res.stdout.split():
            return res.stdout.split()
    return [nodelist]


def choose_launcher(launcher: str, hostfile: Path | None, cores: list[int] | None) -> str:
    if launcher not in LAUNCHERS:
        raise HplsimError(f"unknown launcher {launcher!r} (known: {', '.join(LAUNCHERS)})")
    if launcher != "auto":
        if launcher == "local" and hostfile is not None:
            raise HplsimError("--launcher local runs on this host only: drop --hostfile")
        if launcher == "srun" and shutil.which("srun") is None:
            raise HplsimError("srun not found: --launcher srun needs Slurm")
        return launcher
    if hostfile is not None:
        return "mpirun"
    if cores is None and os.environ.get("SLURM_JOB_ID") and shutil.which("srun") \
            and int(os.environ.get("SLURM_NNODES", "1")) > 1:
        return "srun"
    return "local"


def blas_placement(launcher: str, hostfile: Path | None, cores: list[int] | None,
                   log: CommandLog) -> Placement:
    """One process per core: the listed cores, all cores here, a hostfile's slots, or the
    Slurm allocation's tasks."""
    kind = choose_launcher(launcher, hostfile, cores)
    if kind == "local":
        chosen = cores or available_cores()
        return Placement("local", len(chosen), [socket.gethostname()], cores=chosen)
    if cores is not None:
        raise HplsimError("--cores applies to local runs; with a hostfile or srun, binding is per slot")
    if kind == "mpirun":
        if hostfile is None:
            slots = {socket.gethostname(): len(available_cores())}
        else:
            slots = parse_hostfile(hostfile)
            check_resolvable(list(slots), hostfile)
        return Placement("mpirun", sum(slots.values()), list(slots), hostfile=hostfile, slots=slots)
    ntasks = int(os.environ.get("SLURM_NTASKS", "0") or 0)
    if ntasks < 1:
        raise HplsimError("--launcher srun: SLURM_NTASKS is not set (run inside an allocation)")
    return Placement("srun", ntasks, _slurm_hosts(log))


def mpi_placement(launcher: str, hostfile: Path | None, cores: list[int] | None,
                  log: CommandLog) -> Placement:
    """Two ranks: on this host, or on the first two hosts of a hostfile / allocation."""
    kind = choose_launcher(launcher, hostfile, cores)
    if kind == "srun":
        hosts = _slurm_hosts(log)[:2]
        return Placement("srun", 2, hosts)
    if cores is not None and len(cores) != 2:
        raise HplsimError("--cores for an MPI calibration lists exactly two cores (one per rank)")
    if hostfile is not None:
        slots = parse_hostfile(hostfile)
        check_resolvable(list(slots), hostfile)
        hosts = list(slots)[:2]
        if len(hosts) == 1 and slots[hosts[0]] < 2:
            raise HplsimError(f"hostfile {hostfile}: two ranks need two slots or two hosts")
        return Placement("mpirun", 2, hosts, cores=cores, hostfile=hostfile,
                         slots={h: (1 if len(hosts) == 2 else 2) for h in hosts})
    return Placement("mpirun", 2, [socket.gethostname()], cores=cores, slots={socket.gethostname(): 2})
