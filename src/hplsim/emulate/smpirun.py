"""Run one simulation under smpirun: wall time, peak memory (PSS), timeout, clear errors.

Memory is the peak of the proportional set size (``/proc/<pid>/smaps_rollup``) of the
smpirun process tree: RSS would count the folded (shared-malloc) pages once per mapping,
hundreds of GB for a run that uses a few hundred MB.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hplsim.errors import HplsimError
from hplsim.processes import killed_on_failure, popen

# Options every emulated run needs: kernels are injected, the host's own computation is
# not measured (deterministic results); dlopen privatization gives each rank its globals.
# A probe costs its calibrated smpi/iprobe each time, as on a real machine: SimGrid's
# growing delay (shared by all ranks in 3.32) is a simulation shortcut for busy loops,
# which the runtime handles exactly instead (csrc/kernel-models/probe.c).
BASE_CONFIG = {
    "smpi/simulate-computation": "no",
    "smpi/privatization": "dlopen",
    "smpi/grow-injected-times": "no",
}


@dataclass
class SimOutput:
    stdout: str
    stderr: str
    wall_s: float
    peak_pss_bytes: int
    # The kernel's own cost of the folding, which PSS does not show: memory mappings (each
    # one a kernel object, bounded by vm.max_map_count) and page tables, at their peaks.
    peak_maps: int = 0
    peak_page_table_bytes: int = 0


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _maps_and_page_tables(pid: int) -> tuple[int, int]:
    """Memory mappings of a process and its page tables (bytes)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            maps = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        with open(f"/proc/{pid}/status") as f:
            pte = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmPTE:")), 0)
    except (OSError, ValueError, IndexError):
        return 0, 0
    return maps, pte


class _PssMonitor(threading.Thread):
    """Samples the tree's PSS, mappings and page tables: often at first (short runs), then
    every second, and never more than 1 % of a core: reading smaps_rollup walks every page
    table entry of the simulation (≈ 0.13 s of CPU per sample at 1,024 ranks, N = 250,000,
    where one sample a second cost the parent 15 % of a core) under the simulation's
    mmap lock."""

    #: sampling may cost at most this share of one core
    MAX_CPU_SHARE = 0.01
    #: but in a run's first seconds at least one sample per EARLY_MAX_WAIT_S, whatever it
    #: costs: a 1,024-rank run of 2-3 s (N = 1,024) had two samples, and its figure fell back
    #: to the tree's RSS, which counts the ranks' shared code once per rank (818 MB for a
    #: PSS of about 100; docs/validation.md E76)
    EARLY_S = 3.0
    EARLY_MAX_WAIT_S = 0.4
    #: and in those seconds the cost rule allows this share: samples of a few milliseconds
    #: (64 ranks) under the 1 % rule came 0.4 s apart, a run of 0.5 s had two, and its
    #: figure fell back to the RSS (192 MB for a PSS of 42: tests/test_mechanisms.py's folded
    #: panels failed whenever the machine was quiet enough for the run to be that short)
    EARLY_CPU_SHARE = 0.2

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.peak_maps = 0
        self.peak_page_tables = 0
        self.samples = 0  # samples that saw the simulation process (smpirun's child)
        self.stop = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.stop.is_set():
            cpu = time.thread_time()
            tree = _descendants(self.pid)
            total = sum(_pss_bytes(p) for p in tree)
            self.peak = max(self.peak, total)
            self.samples += len(tree) > 1
            kernel = [_maps_and_page_tables(p) for p in tree]
            self.peak_maps = max(self.peak_maps, sum(m for m, _ in kernel))
            self.peak_page_tables = max(self.peak_page_tables, sum(t for _, t in kernel))
            cost = time.thread_time() - cpu
            elapsed = time.monotonic() - start
            schedule = 0.05 if elapsed < 2 else 0.25 if elapsed < 20 else 1.0
            early = elapsed < self.EARLY_S
            wait = max(schedule, cost / (self.EARLY_CPU_SHARE if early else self.MAX_CPU_SHARE))
            if early:
                wait = min(wait, self.EARLY_MAX_WAIT_S)
            self.stop.wait(wait)


#: SimGrid's own words for problems of the input, and what they mean; the checks before a
#: run refuse these inputs already, this names what still slips through.
SIMGRID_MESSAGES = {
    "The Impossible Did Happen": "SimGrid aborted on the platform: a link with a zero bandwidth or an "
                                 "impossible latency?",
    "Insufficient number of radicals": "the platform's fat-tree has more leaves (the product of its down "
                                       "counts) than the cluster has hosts",
    "Too many radicals": "the platform's fat-tree has fewer leaves (the product of its down counts) than the "
                         "cluster has hosts",
    "Cannot allocate memory": "out of memory (a smaller N, or fewer simulations at once)",
}


def _failure_reason(stdout: str, stderr: str, code: int) -> str:
    for words, meaning in SIMGRID_MESSAGES.items():
        if words in stderr:
            return meaning
    for line in stderr.splitlines():
        if "hplsim-runtime: error:" in line:
            return line.split("hplsim-runtime: error:", 1)[1].strip()
    for pattern in (r"\[.*?(CRITICAL|ERROR)\]\s*(.*)", r"(Deadlock)(.*)", r"(Error):?\s*(.*)"):
        for line in stderr.splitlines():
            m = re.search(pattern, line)
            if m:
                return f"{m.group(1)} {m.group(2)}".strip()
    for line in stdout.splitlines():
        if "HPL ERROR" in line or "Illegal input" in line:
            return line.strip()
    if code < 0:
        return f"killed by signal {signal.Signals(-code).name}"
    return f"exit code {code}"


def run_smpirun(
    binary: Path,
    args: list[str],
    workdir: Path,
    platform_xml: Path,
    hostfile: Path,
    nprocs: int,
    config: dict[str, str],
    timeout: float | None,
    preloads: Sequence[str] = (),
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> SimOutput:
    """Run `binary` under smpirun. `preloads`: libraries for the simulation process's
    LD_PRELOAD (`emulate.preloads`); `env`: variables
    for the emulated program's runtime (set over the caller's environment); `pass_fds`:
    descriptors the simulation inherits (the progress pipe)."""
    options = {**BASE_CONFIG, **config}
    argv = [
        "smpirun", "-np", str(nprocs), "-platform", str(platform_xml), "-hostfile", str(hostfile),
        *[f"--cfg={k}:{v}" for k, v in options.items()],
        "--log=root.thres:warning",
        str(binary), *args,
    ]
    # HPLSIM_PROGRAM: what SMPI copies once per rank, whose code the copies then share
    # (csrc/kernel-models/sharedtext.c)
    run_env = {**os.environ, **(env or {}), "SMPI_PRIVATIZATION": "dlopen",
               "HPLSIM_PROGRAM": str(Path(binary).resolve())}
    # LD_PRELOAD separates entries by spaces and colons: a path holding either cannot be
    # preloaded; the run is then only slower, never different.
    usable = [lib for lib in preloads if not set(lib) & set(" :")]
    if usable:
        run_env["LD_PRELOAD"] = " ".join(filter(None, [*usable, os.environ.get("LD_PRELOAD", "")]))
    start = time.perf_counter()
    try:
        # own session (a Ctrl-C reaches hplsim, which then stops the run), and SIGTERM from
        # the kernel if hplsim dies, which smpirun passes on to the simulation
        proc = popen(argv, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     start_new_session=True, env=run_env, pass_fds=pass_fds)
    except FileNotFoundError:
        raise HplsimError("smpirun not found: install SimGrid (libsimgrid-dev; ./bootstrap does)") from None
    monitor = _PssMonitor(proc.pid)
    monitor.start()
    try:
        late = f"simulation did not finish within {timeout:g} s (hung or too large); killed" if timeout else ""
        with killed_on_failure(proc, late):
            stdout, stderr, peak_rss = _wait(proc, timeout)
    finally:
        monitor.stop.set()
        monitor.join()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise HplsimError(f"simulation failed: {_failure_reason(stdout, stderr, proc.returncode)}")
    if "Deadlock detected" in stderr:
        # SimGrid ends a deadlocked simulation with exit code 0 and no result.
        raise HplsimError("simulation deadlocked: every simulated rank waits for a message that "
                          "never comes (a defect of the emulation; please report it with --keep DIR)")
    # A run shorter than a few samples: the kernel's peak RSS of the tree instead (an upper
    # bound of the PSS, and close to it for the small matrices of a short run).
    peak = monitor.peak if monitor.samples >= 3 else max(monitor.peak, peak_rss)
    return SimOutput(stdout, stderr, wall, peak, monitor.peak_maps, monitor.peak_page_tables)


def _wait(proc: subprocess.Popen, timeout: float | None) -> tuple[str, str, int]:
    """(stdout, stderr, peak RSS in bytes of the child and what it waited for), as
    communicate() but reaping with wait4 to get the kernel's resource usage."""
    out: dict[str, str] = {}
    readers = [threading.Thread(target=lambda k=k, f=f: out.__setitem__(k, f.read()), daemon=True)
               for k, f in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for t in readers:
        t.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join()
    proc.stdout.close()
    proc.stderr.close()
    return out.get("stdout", ""), out.get("stderr", ""), usage.ru_maxrss * 1024
