"""Run a calibration end to end: check the inputs, build the C timers, record the
machine, launch the measuring processes (one pinned process per core for BLAS, two ranks
for MPI), follow their output with a progress bar while a monitor samples frequency and
temperature, and pack everything into one archive.

    calibrate_blas(blas_design("dgemm", rows=60, seed=1), Path("d.zip"), seed=1)
    calibrate_mpi(mpi_design(rows=40, seed=1), Path("m.zip"), seed=1)

Interruption (SIGINT, SIGTERM): before the measurements start nothing is written; once
they run, the processes are stopped, what they measured is kept and the archive is written
with ``status: aborted``. A second signal while writing leaves no archive (the writer
removes its temporary file).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pandas as pd
from tqdm import tqdm

from hplsim.calibrate import metadata as md
from hplsim.calibrate.archive import BLAS_COLUMNS, MPI_COLUMNS, ArchiveWriter
from hplsim.calibrate.designs import BLAS_FUNCTIONS, Design, blas_operand_bytes, sequence
from hplsim.calibrate.hosts import Placement, available_cores, blas_placement, is_local, mpi_placement, mpirun_base
from hplsim.calibrate.monitor import Monitor
from hplsim.calibrate.tools import BLAS_TOOL, MPI_TOOL, build_calibration_tools
from hplsim import processes
from hplsim.errors import HplsimError
from hplsim.outputs import write_or_fallback
from hplsim.processes import run_dir
from hplsim.sysinfo import mem_available

INIT_MODES = ("random", "constant", "sequential", "masked")
# What this host's cores outside the measurement do while it runs (`--others`): nothing of
# ours, or a polling loop like an MPI rank waiting for a message (docs/calibrate.md).
OTHERS = ("idle", "spin")
DEFAULT_PAD_BYTES = 64 << 20  # offset slack per operand: twice a large L3, so calls start cold
TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output
SRUN_LABEL = re.compile(r"^\s*\d+: ")
PHASE = re.compile(r"phase (\w+) ([\d.]+) ([\d.]+)")


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM received while calibrating."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Interrupted` in the main thread (SIGTERM would otherwise
    kill us without stopping the children or cleaning up)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        processes.raise_safely(signum, frame, Interrupted(signum))

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@dataclass
class BlasOptions:
    init: str = "random"
    mask_bits: int = 0
    constant: float = 1.0
    warmup_seconds: float = 1.0
    warmup_passes: int = 0
    pad_bytes: int = DEFAULT_PAD_BYTES
    others: str = "idle"  # what this host's cores outside the measurement do: OTHERS
    repetitions: int = 1
    shuffle: bool = True
    monitor_interval: float = 1.0
    progress: bool | None = None  # None: only on a terminal


@dataclass
class MpiOptions:
    repetitions: int = 5
    shuffle: bool = True
    monitor_interval: float = 1.0
    progress: bool | None = None


@dataclass
class RunResult:
    path: Path
    kind: str
    status: str
    planned: int
    measured: int
    seconds: float
    abort_reason: str | None = None
    results: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)


class Phases:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.offset = time.time() - time.monotonic()

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        m0 = time.monotonic()
        try:
            yield
        finally:
            self.add(name, m0, time.monotonic())

    def add(self, name: str, m0: float, m1: float) -> None:
        self.items.append({"name": name, "start": m0 + self.offset, "end": m1 + self.offset,
                           "start_monotonic": m0, "end_monotonic": m1})


# ---------------------------------------------------------------- processes

@dataclass
class _Proc:
    argv: list[str]
    label: str
    popen: subprocess.Popen
    start: float
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    end: float | None = None
    companion: bool = False  # runs beside the measurement and is stopped after it
    ended_early: bool = False


class Launch:
    """The measuring processes of one run, their output read line by line as it comes."""

    def __init__(self, is_data: Callable[[str], str | None]):
        self.is_data = is_data
        self.procs: list[_Proc] = []
        self.data: list[str] = []
        self._lock = threading.Lock()

    def spawn(self, argv: Sequence[str], env: dict[str, str], label: str, cwd: Path | None = None,
              companion: bool = False) -> None:
        """Start a measuring process, or a companion: a load that runs until the measuring
        ones have ended, then gets SIGTERM (`--others spin`)."""
        try:
            # own session: a Ctrl-C reaches only hplsim, which then stops them in order
            popen = processes.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    errors="replace", env=env, cwd=cwd, start_new_session=True, bufsize=1)
        except OSError as exc:
            raise HplsimError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        proc = _Proc(list(argv), label, popen, time.time(), companion=companion)
        for stream, sink, data in ((popen.stdout, proc.stdout, True), (popen.stderr, proc.stderr, False)):
            t = threading.Thread(target=self._read, args=(stream, sink, data), daemon=True)
            t.start()
            proc.threads.append(t)
        self.procs.append(proc)

    def _read(self, stream: Any, sink: list[str], data: bool) -> None:
        for line in stream:
            sink.append(line)
            if data and line.endswith("\n"):  # a line cut by a kill is not a measurement
                row = self.is_data(line)
                if row is not None:
                    with self._lock:
                        self.data.append(row)

    def count(self) -> int:
        return len(self.data)

    def running(self) -> bool:
        return any(p.popen.poll() is None for p in self.procs if not p.companion)

    def _wait_one(self, timeout: float) -> None:
        """Until a running tool ends or `timeout` passes: a sleep of fixed length would add
        half of it, on average, to every calibration."""
        for p in self.procs:
            if not p.companion and p.popen.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.popen.wait(timeout=timeout)
                return

    def follow(self, total: int, desc: str, progress: bool | None) -> None:
        with tqdm(total=total, desc=desc, unit="row", file=sys.stderr, disable=None if progress is None else not progress,
                  dynamic_ncols=True, leave=False) as bar:
            while self.running():
                bar.update(self.count() - bar.n)
                self._wait_one(0.2)
            bar.update(self.count() - bar.n)
        self.terminate(companions_only=True)

    def terminate(self, grace: float = 5.0, companions_only: bool = False) -> None:
        for p in self.procs:
            if companions_only and not p.companion:
                continue
            if p.companion and p.popen.poll() is not None:
                p.ended_early = True  # a load that stopped before the measurement did
            if p.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for p in self.procs:
            try:
                p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait()
        self.finish()

    def finish(self) -> None:
        for p in self.procs:
            p.popen.wait()
            for t in p.threads:
                t.join(timeout=10)
            if p.end is None:
                p.end = time.time()

    def record(self, log: md.CommandLog) -> None:
        for p in self.procs:
            log.add(p.argv, p.start, p.end or time.time(), p.popen.returncode, "".join(p.stdout), "".join(p.stderr))

    def failures(self) -> list[str]:
        out = []
        for p in self.procs:
            if p.companion and p.ended_early:
                out.append(f"{p.label} ended during the measurement (code {p.popen.returncode})")
            elif p.companion and p.popen.returncode == -signal.SIGTERM:
                continue  # stopped by us before its handler was in place
            elif p.popen.returncode not in (0, None):
                last = next((l.strip() for l in reversed(p.stderr) if l.strip() and "phase " not in l), "no message")
                out.append(f"{p.label} exited with code {p.popen.returncode}: {TAG.sub('', last)}")
        return out

    def warnings(self) -> list[str]:
        return sorted({TAG.sub("", l).strip() for p in self.procs for l in p.stderr if "warning:" in l})

    def companions(self) -> list[str]:
        """What each companion said it did (its last line on stderr)."""
        return [TAG.sub("", next((l for l in reversed(p.stderr) if l.strip()), "no message")).strip()
                for p in self.procs if p.companion]

    def phases(self) -> dict[str, tuple[float, float]]:
        """Phases the programs reported on stderr (monotonic seconds), over all processes."""
        spans: dict[str, tuple[float, float]] = {}
        for p in self.procs:
            for line in p.stderr:
                m = PHASE.search(line)
                if m:
                    name, a, b = m.group(1), float(m.group(2)), float(m.group(3))
                    old = spans.get(name)
                    spans[name] = (min(a, old[0]), max(b, old[1])) if old else (a, b)
        return spans


def _strip(line: str) -> str:
    line = TAG.sub("", line)
    return SRUN_LABEL.sub("", line, count=1).rstrip("\n")


def _data_filter(columns: Sequence[str], first: set[str]) -> Callable[[str], str | None]:
    def is_data(line: str) -> str | None:
        row = _strip(line)
        fields = row.split(",")
        if len(fields) == len(columns) and fields[0] in first:
            return row
        return None
    return is_data


def _frame(lines: list[str], columns: Sequence[str]) -> pd.DataFrame:
    if not lines:
        return pd.DataFrame(columns=list(columns))
    text = ",".join(columns) + "\n" + "\n".join(lines) + "\n"
    frame = pd.read_csv(io.StringIO(text), dtype={"side": str, "host": str})
    return frame


# ---------------------------------------------------------------- checks

def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB" if x >= 1e8 else f"{x / 1e6:.0f} MB"


def check_memory(per_process: int, processes: int, what: str, hint: str) -> None:
    """Refuse a run whose operands do not fit in this host's available memory: a run that
    swaps or gets OOM-killed halfway measures nothing useful."""
    if processes <= 0:
        return
    avail = mem_available()
    if avail is None:
        return
    need = per_process * processes
    if need > 0.9 * avail:
        raise HplsimError(f"{what} need {_gb(per_process)} per process × {processes} = {_gb(need)}, "
                          f"more than the {_gb(avail)} available on this host: {hint}")


def default_out(kind: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(f"calibration-{kind}-{socket.gethostname()}-{stamp}.zip")


# ---------------------------------------------------------------- host description

def _host_files(placement: Placement, log: md.CommandLog,
                writer: ArchiveWriter) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each host's cpuinfo/lscpu/lstopo into the archive; returns the hosts' summaries and
    the detailed CPU summary of this host (sysfs is only readable here)."""
    hosts = []
    local_cpu: dict[str, Any] | None = None
    for host in placement.hosts:
        local = placement.launcher == "local" or is_local(host)
        prefix = [] if local else placement.remote_prefix(host)
        if local:
            try:
                cpuinfo = Path("/proc/cpuinfo").read_text()
            except OSError:
                cpuinfo = ""
        else:
            cpuinfo = log.run([*prefix, "cat", "/proc/cpuinfo"], host=host).stdout
        lscpu = log.run([*prefix, "lscpu"], host=host).stdout if (not local or _which("lscpu")) else ""
        lstopo = ""
        if local:
            exe = _which("lstopo-no-graphics") or _which("lstopo")
            if exe:
                lstopo = log.run([exe, "--of", "console"], host=host).stdout
        else:
            lstopo = log.run([*prefix, "sh", "-c",
                              "command -v lstopo-no-graphics >/dev/null 2>&1 && exec lstopo-no-graphics --of console;"
                              " command -v lstopo >/dev/null 2>&1 && exec lstopo --of console; exit 0"],
                             host=host).stdout
        name = re.sub(r"[^A-Za-z0-9._-]", "_", host)
        if cpuinfo:
            writer.add_text(f"hosts/{name}/cpuinfo", cpuinfo)
        if lscpu:
            writer.add_text(f"hosts/{name}/lscpu.txt", lscpu)
        if lstopo:
            writer.add_text(f"hosts/{name}/lstopo.txt", lstopo)
        summary = md.cpu_summary(lscpu, cpuinfo)
        if local and local_cpu is None:
            local_cpu = summary
        hosts.append({"name": host, "local": local, "cpu_model": summary["model"],
                      "logical_cpus": summary["logical_cpus"], "sockets": summary["sockets"],
                      "lstopo": bool(lstopo)})
    if local_cpu is None:
        local_cpu = md.cpu_summary(log.run(["lscpu"]).stdout if _which("lscpu") else "",
                                   Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else "")
    return hosts, local_cpu


def _which(name: str) -> str | None:
    return shutil.which(name)


# ---------------------------------------------------------------- the common run

@dataclass
class _Run:
    kind: str
    design: Design
    plan: pd.DataFrame
    placement: Placement
    seed: int
    out: Path
    repetitions: int
    shuffle: bool
    monitor_interval: float
    progress: bool | None
    run_meta: dict[str, Any]


def _execute(run: _Run, with_mpi: bool, launch_fn: Callable[[dict[str, Path], Path, Launch], None],
             columns: Sequence[str], first: set[str], results_member: str) -> RunResult:
    t0 = time.monotonic()
    log = md.CommandLog()
    phases = Phases()
    start_time = md.now_iso()
    load_start = _loadavg()
    writer = ArchiveWriter()
    with _signals_raise():
        # Before the measurements: an interruption just stops (no archive).
        with phases("build"):
            tools = build_calibration_tools()
        with phases("system-info"):
            hplsim_info = md.git_info(log)
            versions = md.versions(log, tools, with_mpi)
            hosts, local_cpu = _host_files(run.placement, log, writer)
        monitor = Monitor(run.monitor_interval)
        launch = Launch(_data_filter(columns, first))
        status, reason = "complete", None
        shared = run.placement.launcher != "local"
        # Remote processes read the experiment file: keep it next to the output (a shared
        # file system, as HPL's own runs need) rather than in this host's /tmp.
        tmp_parent = run.out.resolve().parent if shared else None
        with run_dir("calib", tmp_parent) as tmp:
            m0 = time.monotonic()
            try:
                monitor.start()
                launch_fn(tools, Path(tmp), launch)
                launch.follow(len(run.plan) * (run.placement.processes if run.kind != "mpi" else 1),
                              f"{run.kind} calibration", run.progress)
            except Interrupted as exc:
                launch.terminate()
                status, reason = "aborted", f"interrupted by {exc.name}"
                interrupted: Interrupted | None = exc
            else:
                interrupted = None
            finally:
                monitor_rows = monitor.stop()
                m1 = time.monotonic()
        launch.record(log)
        phases.add("measure", m0, m1)
        for name, (a, b) in sorted(launch.phases().items(), key=lambda x: x[1]):
            if run.placement.launcher == "local" or len(run.placement.hosts) == 1:
                phases.add({"measure": "timed-calls"}.get(name, name), a, b)  # monotonic clocks of other hosts do not compare
        failures = launch.failures() if interrupted is None else []
        if failures:
            status, reason = "aborted", "; ".join(failures)
        results = _frame(launch.data, columns)
        planned = len(run.plan) * (run.placement.processes if run.kind != "mpi" else 1)
        if status == "complete" and len(results) != planned:
            status, reason = "aborted", f"{len(results)} of {planned} rows measured"

        writer.add_table("design.csv", run.plan)
        writer.add_table(results_member, results)
        if monitor_rows:
            writer.add_table("monitoring.csv", monitor_rows)
        writer.add_json("environment.json", md.environment())
        meta: dict[str, Any] = {"kind": run.kind, "status": status}
        if reason:
            meta["abort_reason"] = reason
        meta.update({
            "hplsim": hplsim_info, "command_line": md.command_line(),
            "start_time": start_time, "end_time": md.now_iso(), "monotonic_offset": phases.offset,
            "seed": run.seed, "design": run.design.metadata(run.repetitions, run.shuffle),
            "run": run.placement.metadata() | run.run_meta,
            "hosts": hosts, "cpu": local_cpu, "versions": versions, "monitoring": monitor.describe(),
            "phases": phases.items, "counts": {"planned": planned, "measured": len(results)},
            # other jobs on the cores slow the calls down: a busy machine shows here
            "load_average": {"start": load_start, "end": _loadavg(), "logical_cpus": os.cpu_count()},
        })
        if launch.warnings():
            meta["warnings"] = launch.warnings()
        if launch.companions():
            meta["run"]["others_reports"] = launch.companions()
        if monitor.describe()["hosts"] and len(run.placement.hosts) > 1:
            meta["monitoring"]["note"] = "; ".join(filter(None, [meta["monitoring"]["note"],
                                                                  "only the host running hplsim is monitored"]))
        # the measurements are never lost: an archive that cannot go where asked goes next door
        path = write_or_fallback(run.out, lambda p: writer.write(p, meta, log.entries), "the calibration archive",
                                 strict=interrupted is None and not failures)
    result = RunResult(path, run.kind, status, planned, len(results), time.monotonic() - t0, reason, results)
    if interrupted is not None:
        raise CalibrationInterrupted(result, interrupted.signum)
    if failures:
        raise HplsimError(f"{failures[0]} (partial archive {path}, status aborted)")
    return result


class CalibrationInterrupted(Exception):
    """Raised after an interrupted run's archive is written."""

    def __init__(self, result: RunResult, signum: int):
        super().__init__(f"calibration interrupted by {signal.Signals(signum).name}")
        self.result = result
        self.signum = signum


# ---------------------------------------------------------------- BLAS

def calibrate_blas(design: Design, out: Path, seed: int, options: BlasOptions | None = None,
                   launcher: str = "auto", hostfile: Path | None = None,
                   cores: list[int] | None = None) -> RunResult:
    """Measure every point of `design` on every core (dgemm or dtrsm, from the design)."""
    opts = options or BlasOptions()
    if opts.init not in INIT_MODES:
        raise HplsimError(f"unknown --init {opts.init!r} (known: {', '.join(INIT_MODES)})")
    if not 0 <= opts.mask_bits <= 52:
        raise HplsimError(f"--mask-bits must be in 0..52 (the mantissa has 52 bits), got {opts.mask_bits}")
    if opts.warmup_seconds < 0 or opts.warmup_passes < 0:
        raise HplsimError("warm-up must be >= 0")
    if opts.others not in OTHERS:
        raise HplsimError(f"unknown --others {opts.others!r} (known: {', '.join(OTHERS)})")
    functions = sorted(set(design.points["function"]))
    kind = functions[0] if len(functions) == 1 else "dgemm"
    if len(functions) != 1:
        raise HplsimError("a BLAS calibration measures one function per run (dgemm or dtrsm)")
    log = md.CommandLog()
    placement = blas_placement(launcher, hostfile, cores, log)
    others = [c for c in available_cores() if c not in (placement.cores or [])] if placement.launcher == "local" else []
    if opts.others == "spin":
        if placement.launcher != "local":
            raise HplsimError("--others spin needs the local launcher (one host; --cores says which cores measure)")
        if not others:
            raise HplsimError("--others spin: every core here measures; leave some out of --cores to spin")
    plan = sequence(design, opts.repetitions, seed, opts.shuffle)
    per_process = blas_operand_bytes(design.points) + 3 * opts.pad_bytes
    check_memory(per_process, placement.local_processes(), f"{kind} operands",
                 "lower --max-side / --max-product, or measure on fewer --cores")
    run_meta = {"init": opts.init, "mask_bits": opts.mask_bits if opts.init == "masked" else None,
                "constant": opts.constant if opts.init == "constant" else None,
                "data_seed": seed, "warmup_seconds": opts.warmup_seconds, "warmup_passes": opts.warmup_passes,
                "pad_bytes": opts.pad_bytes, "bytes_per_process": per_process,
                "others": opts.others, "other_cores": others if placement.launcher == "local" else None}

    def launch_fn(tools: dict[str, Path], tmp: Path, launch: Launch) -> None:
        exp = tmp / "experiment.csv"
        plan[["function", "m", "n", "k", "side", "lda", "ldb", "ldc", "repetition"]].to_csv(exp, index=False)
        tool = str(tools[BLAS_TOOL])
        run_meta["tool"] = tool
        args = ["--seed", str(seed), "--init", opts.init, "--mask-bits", str(opts.mask_bits),
                "--constant", repr(opts.constant), "--warmup-seconds", repr(opts.warmup_seconds),
                "--warmup-passes", str(opts.warmup_passes), "--pad-bytes", str(opts.pad_bytes)]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        if placement.launcher == "local":
            assert placement.cores is not None
            if opts.others == "spin":  # first, so they are at their steady load before the warm-up ends
                for core in others:
                    launch.spawn([tool, "--spin", "--core", str(core)], env, f"{BLAS_TOOL} spin (core {core})",
                                 companion=True)
            for rank, core in enumerate(placement.cores):
                launch.spawn([tool, "--core", str(core), "--rank", str(rank), *args, str(exp)], env,
                             f"{BLAS_TOOL} rank {rank} (core {core})")
        elif placement.launcher == "mpirun":
            hosts = ["--hostfile", str(hostfile)] if hostfile else []
            launch.spawn([*mpirun_base(), *hosts, "-np", str(placement.processes), "--map-by", "core",
                          "--bind-to", "core", "--tag-output", "-x", "OPENBLAS_NUM_THREADS=1",
                          "-x", "OMP_NUM_THREADS=1", tool, *args, str(exp)], env, "mpirun")
        else:
            launch.spawn(["srun", "--label", "--cpu-bind=cores", f"--ntasks={placement.processes}",
                          "--export=ALL,OPENBLAS_NUM_THREADS=1,OMP_NUM_THREADS=1", tool, *args, str(exp)],
                         env, "srun")

    run = _Run(kind, design, plan, placement, seed, out, opts.repetitions, opts.shuffle,
               opts.monitor_interval, opts.progress, run_meta)
    return _execute(run, False, launch_fn, BLAS_COLUMNS, set(BLAS_FUNCTIONS), f"results/{kind}.csv")


# ---------------------------------------------------------------- MPI

def calibrate_mpi(design: Design, out: Path, seed: int, options: MpiOptions | None = None,
                  launcher: str = "auto", hostfile: Path | None = None,
                  cores: list[int] | None = None) -> RunResult:
    """Measure every (operation, size) point of `design` between two ranks."""
    opts = options or MpiOptions()
    log = md.CommandLog()
    placement = mpi_placement(launcher, hostfile, cores, log)
    plan = sequence(design, opts.repetitions, seed, opts.shuffle)
    max_size = int(design.points["size"].max())
    check_memory(max_size, placement.local_processes(), "MPI buffers", "lower --max-size")
    run_meta: dict[str, Any] = {}

    def launch_fn(tools: dict[str, Path], tmp: Path, launch: Launch) -> None:
        exp = tmp / "experiment.csv"
        plan[["operation", "size", "repetition"]].to_csv(exp, index=False)
        tool = str(tools[MPI_TOOL])
        run_meta["tool"] = tool
        env = dict(os.environ)
        if placement.launcher == "srun":
            argv = ["srun", "--ntasks=2", *(["--ntasks-per-node=1"] if len(placement.hosts) > 1 else []),
                    tool, str(exp)]
        else:
            argv = [*mpirun_base(), "-np", "2"]
            if placement.hostfile is not None:
                argv += ["--host", ",".join(f"{h}:{n}" for h, n in placement.slots.items())]
                argv += ["--map-by", "node" if len(placement.hosts) > 1 else "core"]
            if placement.cores is not None:
                argv += ["--cpu-set", ",".join(map(str, placement.cores)), "--bind-to", "core"]
            elif placement.hostfile is None and len(os.sched_getaffinity(0)) < 2:
                argv += ["--oversubscribe", "--bind-to", "none"]
            elif placement.hostfile is None:
                argv += ["--map-by", "core", "--bind-to", "core"]
            argv += [tool, str(exp)]
        run_meta["argv"] = argv
        launch.spawn(argv, env, argv[0])

    run = _Run("mpi", design, plan, placement, seed, out, opts.repetitions, opts.shuffle,
               opts.monitor_interval, opts.progress, run_meta)
    from hplsim.calibrate.designs import MPI_OPERATIONS

    return _execute(run, True, launch_fn, MPI_COLUMNS, set(MPI_OPERATIONS), "results/mpi.csv")
