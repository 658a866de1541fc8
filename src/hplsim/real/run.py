"""Run the real HPL (the same patched HPL 2.0 source as the emulation, built with mpicc and
OpenBLAS) on this machine, a hostfile's hosts or a Slurm allocation, and read back what it
says.

    launch = Launch.choose()                                   # this host's cores
    results = run_real(HplParams(ns=(2000,), nbs=(64,), grids=((1, 2),)).configs(), launch,
                       repeat=3, out=Path("real.zip"))
    results[0].gflops, results[0].gflops_min, results[0].runs[0].residual_check

One configuration per `mpirun` (one HPL.dat holding that configuration only), so that a
result never depends on which other configurations were asked for, as in `predict`.
Repetitions are interleaved: repetition r runs every configuration before repetition r+1
starts (optionally in a shuffled order), so that a slow spell of a shared machine spreads
over configurations instead of biasing one.

Everything that can be checked is checked before the first run: the ranks fit in the
cores or slots, the matrix fits in memory, mpirun (or srun) exists. A residual check that
FAILED, a crash or a timeout is an error (with the archive written up to that run, status
``aborted``), never a number.
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pandas as pd

from hplsim import __version__
from hplsim.calibrate.hosts import mpirun_base
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig, HplParams
from hplsim.hpl.hpldat import write_hpl_dat
from hplsim.hpl.output import FAILED, PHASES, SKIPPED, error_lines, expect_phases, expect_result
from hplsim.outputs import write_or_fallback
from hplsim.processes import kill_group, popen, run_dir
from hplsim.sysinfo import mem_available

if TYPE_CHECKING:
    from hplsim.real.probe import MachineProbe

LAUNCHERS = ("auto", "local", "mpirun", "srun")
DEFAULT_TIMEOUT_S = 24 * 3600.0
DEFAULT_THRESHOLD = 16.0  # HPL.dat's usual residual threshold
MEMORY_FRACTION = 0.9  # of MemAvailable the matrix may take
RANK_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class RealRunError(HplsimError):
    """A run that gave no trustworthy number (crash, FAILED residual, timeout)."""


# ------------------------------------------------------------------ where ranks run


def available_cores() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


@dataclass
class Launch:
    """How the ranks start and how many may run: this host's cores (``local``), a
    hostfile's slots (``mpirun``) or a Slurm allocation's tasks (``srun``)."""

    kind: str
    slots: int
    hosts: list[str]
    hostfile: Path | None = None
    oversubscribe: bool = False
    local_slots: int = 0  # slots on this host (for the memory check)

    @classmethod
    def choose(cls, launcher: str = "auto", hostfile: Path | None = None, oversubscribe: bool = False) -> "Launch":
        if launcher not in LAUNCHERS:
            raise HplsimError(f"unknown launcher {launcher!r} (known: {', '.join(LAUNCHERS)})")
        if launcher == "auto":
            if hostfile is not None:
                launcher = "mpirun"
            elif os.environ.get("SLURM_JOB_ID") and shutil.which("srun"):
                launcher = "srun"
            else:
                launcher = "local"
        if launcher == "local":
            if hostfile is not None:
                raise HplsimError("--launcher local runs on this host only: drop --hostfile")
            mpirun_base()
            cores = len(available_cores())
            return cls("local", cores, [socket.gethostname()], oversubscribe=oversubscribe, local_slots=cores)
        if launcher == "mpirun":
            from hplsim.calibrate.hosts import check_resolvable, is_local, parse_hostfile

            mpirun_base()
            if hostfile is None:
                cores = len(available_cores())
                return cls("mpirun", cores, [socket.gethostname()], oversubscribe=oversubscribe, local_slots=cores)
            slots = parse_hostfile(Path(hostfile))
            check_resolvable(list(slots), Path(hostfile))
            local = sum(n for h, n in slots.items() if is_local(h))
            return cls("mpirun", sum(slots.values()), list(slots), Path(hostfile).resolve(), oversubscribe, local)
        if shutil.which("srun") is None:
            raise HplsimError("srun not found: --launcher srun needs Slurm")
        ntasks = int(os.environ.get("SLURM_NTASKS") or os.environ.get("SLURM_NPROCS") or 0)
        if ntasks < 1:
            raise HplsimError("--launcher srun: SLURM_NTASKS is not set (run inside an allocation, e.g. salloc -n 64)")
        nodes = os.environ.get("SLURM_JOB_NODELIST") or socket.gethostname()
        return cls("srun", ntasks, [nodes], oversubscribe=oversubscribe, local_slots=0)

    @property
    def shared_workdir(self) -> bool:
        """Ranks on other hosts read the run directory: it must be on a shared file system."""
        return self.kind == "srun" or (self.hostfile is not None)

    def describe(self) -> str:
        if self.kind == "local":
            return f"this host's {self.slots} cores"
        if self.kind == "srun":
            return f"the Slurm allocation's {self.slots} tasks"
        return f"{self.slots} slots of {self.hostfile or 'this host'}"

    def metadata(self) -> dict[str, Any]:
        return {"launcher": self.kind, "slots": self.slots, "hosts": self.hosts,
                "hostfile": str(self.hostfile) if self.hostfile else None, "oversubscribe": self.oversubscribe}

    def argv(self, ranks: int, binary: Path, export: Sequence[str] = ()) -> list[str]:
        """The command starting `ranks` ranks of `binary`; `export`: more environment
        variables to pass to the ranks (besides single-threaded BLAS)."""
        if self.kind == "srun":
            env = ",".join(f"{k}={v}" for k, v in RANK_ENV.items())
            return ["srun", f"--ntasks={ranks}", "--cpu-bind=cores", f"--export=ALL,{env}", str(binary)]
        argv = [*mpirun_base(), "-np", str(ranks)]
        if self.hostfile is not None:
            argv += ["--hostfile", str(self.hostfile)]
        if self.oversubscribe:
            argv += ["--oversubscribe", "--bind-to", "none"]
        else:
            argv += ["--map-by", "core", "--bind-to", "core"]
        for k, v in RANK_ENV.items():
            argv += ["-x", f"{k}={v}"]
        for name in export:
            argv += ["-x", name]
        return [*argv, str(binary)]


def matrix_bytes(n: int) -> int:
    """What HPL allocates for the matrix [A | b]: 8·N·(N+1) bytes over all ranks."""
    return 8 * n * (n + 1)


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB" if x >= 1e8 else f"{x / 1e6:.0f} MB"


def check_configs(configs: Sequence[HplConfig], launch: Launch) -> None:
    """Refuse, before anything runs, what cannot run: more ranks than slots, a matrix
    larger than this host's available memory."""
    if not configs:
        raise HplsimError("no HPL configuration to run")
    for c in configs:
        if c.ranks > launch.slots and not launch.oversubscribe:
            raise HplsimError(f"P x Q = {c.p} x {c.q} = {c.ranks} ranks, but {launch.describe()} allow only "
                              f"{launch.slots} (one rank per core; --oversubscribe to force)")
    avail = mem_available()
    if avail is None:
        return
    for c in configs:
        # the share of the matrix held by the ranks of this host (all of it for a local run)
        here = c.ranks if launch.kind == "local" else min(c.ranks, launch.local_slots)
        need = matrix_bytes(c.n) * here / c.ranks
        if need > MEMORY_FRACTION * avail:
            raise HplsimError(f"N = {c.n} needs {_gb(need)} for the matrix on this host (8·N² bytes), more than "
                              f"{MEMORY_FRACTION:.0%} of the {_gb(avail)} available: lower N "
                              f"(at most about {int((MEMORY_FRACTION * avail / 8) ** 0.5)} here)")


# ------------------------------------------------------------------ results


@dataclass
class RealRun:
    """One execution of one configuration."""

    config: HplConfig
    repetition: int
    order: int  # position in the whole sequence of runs
    time_s: float
    gflops: float
    residual: float | None
    residual_check: str
    wall_s: float  # mpirun's whole run, HPL's set-up and residual check included
    start: float  # Unix time
    load_before: float | None  # 1-minute load average when the run started
    other_load: float | None = None  # cores kept busy by other processes during the run (mean)
    probe_before: float | None = None  # the machine's speed just before the run (Gflops/core, probe.py)
    probe_after: float | None = None  # ... and just after it
    phases: dict[str, float] | None = None  # with --phases: HPL's per-phase times (hpl/output.py)

    @property
    def probe(self) -> float | None:
        """The machine's speed around the run: the mean of the probes before and after."""
        if self.probe_before is None or self.probe_after is None:
            return None
        return (self.probe_before + self.probe_after) / 2

    def row(self) -> dict[str, Any]:
        return {"order": self.order, "repetition": self.repetition, "label": self.config.label(),
                **self.config.as_dict(), "time_s": self.time_s, "gflops": self.gflops, "residual": self.residual,
                "residual_check": self.residual_check, "wall_s": self.wall_s, "start": self.start,
                "load_before": self.load_before, "other_load": self.other_load,
                "probe_before_gflops": self.probe_before, "probe_after_gflops": self.probe_after,
                **{f"phase_{name}_s": (self.phases or {}).get(name) for name in PHASES}}


@dataclass
class RealResult:
    """One configuration over its repetitions."""

    config: HplConfig
    runs: list[RealRun] = field(default_factory=list)

    @property
    def gflops(self) -> float:
        return statistics.median(r.gflops for r in self.runs)

    @property
    def gflops_min(self) -> float:
        return min(r.gflops for r in self.runs)

    @property
    def gflops_max(self) -> float:
        return max(r.gflops for r in self.runs)

    @property
    def time_s(self) -> float:
        return statistics.median(r.time_s for r in self.runs)

    @property
    def phases(self) -> dict[str, float] | None:
        """Each phase's median over the runs (with --phases)."""
        if not self.runs or any(r.phases is None for r in self.runs):
            return None
        return {name: statistics.median(r.phases[name] for r in self.runs) for name in PHASES}

    @property
    def residual_check(self) -> str:
        checks = {r.residual_check for r in self.runs}
        return FAILED if FAILED in checks else SKIPPED if SKIPPED in checks else "PASSED"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.config.as_dict(), "label": self.config.label(),
            "gflops": self.gflops, "time_s": self.time_s, "residual_check": self.residual_check,
            "repetitions": len(self.runs), "gflops_min": self.gflops_min, "gflops_max": self.gflops_max,
            "runs": [{"repetition": r.repetition, "gflops": r.gflops, "time_s": r.time_s, "residual": r.residual,
                      "residual_check": r.residual_check, "wall_s": r.wall_s, "load_before": r.load_before,
                      "other_load": r.other_load, "probe_before_gflops": r.probe_before,
                      "probe_after_gflops": r.probe_after, **({"phases": r.phases} if r.phases is not None else {})}
                     for r in self.runs],
            **({"phases": self.phases} if self.phases is not None else {}),
            "hplsim_version": __version__,
        }


@dataclass
class RealRunSet:
    results: list[RealResult]
    archive: Path | None
    status: str
    kernels: "pd.DataFrame | None" = None  # traced runs: every kernel call (docs/formats/archive.md)


# ------------------------------------------------------------------ running


def _kill_group(proc: subprocess.Popen) -> None:
    kill_group(proc, grace=5.0)  # mpirun passes SIGTERM on to its ranks


def _busy_seconds() -> float | None:
    """CPU seconds all processes of this host have used (busy time of /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        ticks = [int(x) for x in fields]
    except (OSError, ValueError, IndexError):
        return None
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _children_seconds() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class _OtherLoad:
    """How many cores other processes kept busy while a run went: the host's busy CPU time
    minus the run's own (mpirun and its ranks are waited-for children), over the wall time.
    Unlike the load average, our own previous run does not count."""

    def __init__(self) -> None:
        self.busy0, self.own0, self.t0 = _busy_seconds(), _children_seconds(), time.monotonic()

    def result(self, local_ranks: int) -> float | None:
        busy1, own1, t1 = _busy_seconds(), _children_seconds(), time.monotonic()
        if self.busy0 is None or busy1 is None or t1 <= self.t0 or local_ranks <= 0:
            return None
        other = (busy1 - self.busy0) - (own1 - self.own0)
        return max(0.0, other / (t1 - self.t0))


def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


@dataclass
class _Outcome:
    argv: list[str]
    start: float
    end: float
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None


def _execute(argv: list[str], cwd: Path, timeout: float | None, env: dict[str, str] | None = None) -> _Outcome:
    start = time.time()
    try:
        # own session: a timeout or Ctrl-C stops mpirun and its ranks together
        proc = popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     errors="replace", start_new_session=True, env=env)
    except OSError as exc:
        raise HplsimError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return _Outcome(argv, start, time.time(), None, out, err, f"timed out after {timeout:g} s")
    except BaseException:
        _kill_group(proc)
        raise
    return _Outcome(argv, start, time.time(), proc.returncode, out, err)


def _failure(config: HplConfig, o: _Outcome) -> str | None:
    what = f"HPL {config.label()} N={config.n} NB={config.nb} {config.p}x{config.q}"
    if o.error:
        return f"{what} {o.error}"
    if o.returncode != 0:
        hints = error_lines(o.stdout + "\n" + o.stderr)
        # OpenMPI frames its messages with lines of dashes: keep the words
        lines = [line.strip() for line in o.stderr.splitlines() if line.strip().strip("-=*")]
        wordy = [line for line in lines if re.search(r"unable|error|not |cannot|failed|abort", line, re.I)]
        detail = hints[0] if hints else (wordy[0] if wordy else lines[-1] if lines else "no message")
        return f"{what} crashed (exit code {o.returncode}): {detail}"
    return None


#: --min-seconds never makes a configuration run more than this many times --repeat
MAX_REPEAT_FACTOR = 3


def _rounds(per_round: list[list[int]], rng: random.Random | None, before_round: Callable[[int], None]):
    """(round, configuration index) in the order to run them: each round holds
    per_round[r][i] runs of configuration i, shuffled when `rng` is given. Each round's
    plan is read after `before_round(r)`, so that the first round's times can still change
    the later ones."""
    for r in range(len(per_round)):
        before_round(r)
        idx = [i for i, k in enumerate(per_round[r]) for _ in range(k)]
        if rng is not None:
            rng.shuffle(idx)
        for i in idx:
            yield r, i


def _spread_extra_runs(per_round: list[list[int]], first_times: Sequence[float], min_seconds: float) -> int:
    """Give each configuration max(R, ceil(min_seconds / t)) runs in all (t: its first
    run's time; at most MAX_REPEAT_FACTOR × R), the extra ones spread evenly over rounds
    1 … R − 1. Returns the number of runs planned in all."""
    repeat = len(per_round)
    if repeat < 2:
        return sum(map(sum, per_round))
    for i, t in enumerate(first_times):
        if not t >= 0:
            continue
        t = max(t, 0.005)  # HPL prints its time to 0.01 s: 0.00 is a run under 5 ms
        total = min(MAX_REPEAT_FACTOR * repeat, max(repeat, math.ceil(min_seconds / t)))
        extra = total - repeat
        for j in range(1, repeat):
            per_round[j][i] = 1 + extra * j // (repeat - 1) - extra * (j - 1) // (repeat - 1)
    return sum(map(sum, per_round))


def run_real(
    configs: Sequence[HplConfig],
    launch: Launch | None = None,
    repeat: int = 1,
    out: Path | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    shuffle: bool = False,
    seed: int = 0,
    binary: Path | None = None,
    workdir: Path | None = None,
    keep_outputs: bool = True,
    progress: Callable[[str], None] | None = None,
    extra_env: dict[str, str] | None = None,
    trace: bool = False,
    probe: "MachineProbe | None" = None,
    between_rounds: Callable[[int], None] | None = None,
    min_seconds: float = 0.0,
    phases: bool = False,
) -> RealRunSet:
    """Run every configuration `repeat` times; write the archive `out` (if given); return
    the results by configuration (in the order given). Raises `RealRunError` at the first
    crash or FAILED residual, after writing the archive (status ``aborted``).

    trace: run the traced HPL (`hplsim.real.trace`): every kernel call the emulation
    models is timed and returned (and archived as results/kernels.csv), tagged with the
    run's ``order``. Local runs only (each rank writes its trace file on its host).

    phases: run HPL built with its per-phase timers (``HPL_DETAILED_TIMING``, the build
    `hplsim predict --phases` emulates) and keep each run's phase times.

    probe: measure the machine's speed (`hplsim.real.probe`) before the first run and after
    every run, so that each run knows the speed of the machine it met. Local runs only.

    between_rounds: called with r after the last run of repetition r, before repetition
    r + 1 starts (not after the last one): `hplsim validate` measures its calibration there,
    so that the models see the machine of the whole period the real runs met.

    min_seconds: a configuration whose first run took t seconds (HPL's time) runs
    max(repeat, ceil(min_seconds / t)) times in all, at most `MAX_REPEAT_FACTOR` × repeat,
    its extra runs spread evenly over the rounds after the first (so with repeat = 1 it
    has no effect). A short run's result moves more with the machine's slow seconds (E19:
    dips of 20–30 % lasting about a second), so the median of a short configuration needs
    more runs than a long one's for the same precision.
    """
    from hplsim.hpl.build import REAL, REAL_TIMING, hpl_binary

    configs = list(configs)
    if repeat < 1:
        raise HplsimError(f"--repeat must be at least 1, got {repeat}")
    launch = launch or Launch.choose()
    if trace and launch.kind != "local":
        raise HplsimError("--trace runs on this host only (each rank writes its trace on its own host)")
    if probe is not None and launch.kind != "local":
        raise HplsimError("--probe runs on this host only (it measures this host's cores)")
    if phases and (trace or binary is not None):
        raise HplsimError("--phases runs HPL's own timing build: not with --trace or another binary")
    check_configs(configs, launch)
    if binary is None:
        if trace:
            from hplsim.real.trace import traced_binary

            binary = traced_binary()
        else:
            binary = hpl_binary(REAL_TIMING if phases else REAL)
    binary = Path(binary)
    say = progress or (lambda msg: None)

    if min_seconds < 0:
        raise HplsimError(f"--min-seconds must be at least 0, got {min_seconds:g}")
    rng = random.Random(seed)
    per_round = [[1] * len(configs) for _ in range(repeat)]  # runs of each configuration in each round
    planned = len(configs) * repeat

    from hplsim.calibrate import metadata as md

    log = md.CommandLog()
    start_time = md.now_iso()
    results = [RealResult(c) for c in configs]
    runs: list[RealRun] = []
    traces: list[pd.DataFrame] = []
    outputs: dict[str, str] = {}
    status, reason, error = "complete", None, None
    env = {**os.environ, **RANK_ENV, **(extra_env or {})}
    parent = None
    if workdir is not None:
        parent = Path(workdir)
    elif launch.shared_workdir:
        parent = (Path(out).resolve().parent if out else Path.cwd())  # remote ranks read it
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    with run_dir("real", parent) as work:
        try:
            speed = probe.measure() if probe is not None and configs else None
            order = 0

            def before_round(r: int) -> None:
                nonlocal planned
                if r == 0:
                    return
                if between_rounds is not None:
                    between_rounds(r - 1)
                if r == 1 and min_seconds > 0:
                    planned = _spread_extra_runs(per_round, [res.runs[0].time_s for res in results], min_seconds)

            for r, i in _rounds(per_round, rng if shuffle else None, before_round):
                config = configs[i]
                write_hpl_dat(HplParams.from_config(config, threshold=threshold), work / "HPL.dat")
                argv = launch.argv(config.ranks, binary, ("HPLSIM_TRACE_DIR",) if trace else ())
                load = _loadavg()
                say(f"run {order + 1}/{planned}: {config.label()} N={config.n} NB={config.nb} "
                    f"{config.p}x{config.q} (round {r + 1}/{repeat}) …")
                if trace:
                    tdir = work / f"trace-{order}"
                    tdir.mkdir()
                    env["HPLSIM_TRACE_DIR"] = str(tdir)
                other = _OtherLoad()
                o = _execute(argv, work, timeout, env)
                other_load = other.result(config.ranks if launch.kind == "local" else launch.local_slots)
                log.add(argv, o.start, o.end, o.returncode, o.stdout, o.stderr, error=o.error)
                if keep_outputs:
                    outputs[f"runs/{order:04d}-{config.label()}-{config.n}-{config.nb}-{config.p}x{config.q}"
                            f"-r{r}.txt"] = o.stdout + ("\n--- stderr ---\n" + o.stderr if o.stderr.strip() else "")
                fail = _failure(config, o)
                phase_times = None
                if fail is None:
                    try:
                        res = expect_result(o.stdout, config)
                    except HplsimError as exc:
                        fail = f"HPL {config.label()} N={config.n}: {exc}"
                    else:
                        if res.residual_check == FAILED:
                            fail = (f"HPL {config.label()} N={config.n} NB={config.nb} {config.p}x{config.q}: "
                                    f"residual check FAILED (scaled residual {res.residual:g} >= threshold "
                                    f"{threshold:g}): the result is wrong, not slow")
                        elif phases:
                            try:
                                phase_times = expect_phases(o.stdout)
                            except HplsimError as exc:
                                fail = f"HPL {config.label()} N={config.n}: {exc}"
                if fail is not None:
                    status, reason = "aborted", fail
                    error = RealRunError(fail)
                    break
                before, speed = speed, (probe.measure() if probe is not None else None)
                run = RealRun(config, r, order, res.time_s, res.gflops, res.residual, res.residual_check,
                              o.end - o.start, o.start, load, other_load, before, speed,
                              phase_times)
                runs.append(run)
                results[i].runs.append(run)
                if trace:
                    from hplsim.real.trace import read_traces

                    calls = read_traces(tdir)
                    calls.insert(0, "order", order)
                    traces.append(calls)
                busy = f", other processes kept {other_load:.2f} core(s) busy" if other_load and other_load >= 0.05 else ""
                say(f"  {res.gflops:.4g} Gflops in {res.time_s:.2f} s, residual check {res.residual_check}{busy}")
                order += 1
        except KeyboardInterrupt:
            status, reason = "aborted", "interrupted"
            if out is not None:
                _write_archive(out, configs, runs, outputs, log, launch, binary, threshold, repeat, shuffle, seed,
                               start_time, status, reason, _concat(traces) if trace else None, probe,
                               min_seconds, planned)
            raise
    kernels = _concat(traces) if trace else None
    archive = None
    if out is not None:
        archive = _write_archive(out, configs, runs, outputs, log, launch, binary, threshold, repeat, shuffle, seed,
                                 start_time, status, reason, kernels, probe, min_seconds, planned)
    if error is not None:
        if archive is not None:
            raise RealRunError(f"{error} (archive {archive}, status aborted)")
        raise error
    return RealRunSet(results, archive, status, kernels)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    from hplsim.real.trace import TRACE_COLUMNS

    if not frames:
        return pd.DataFrame(columns=["order", *TRACE_COLUMNS])
    return pd.concat(frames, ignore_index=True)


def _write_archive(out: Path, configs: Sequence[HplConfig], runs: list[RealRun], outputs: dict[str, str],
                   log: Any, launch: Launch, binary: Path, threshold: float, repeat: int, shuffle: bool, seed: int,
                   start_time: str, status: str, reason: str | None, kernels: pd.DataFrame | None = None,
                   probe: "MachineProbe | None" = None, min_seconds: float = 0.0,
                   planned: int | None = None) -> Path:
    from hplsim.calibrate import metadata as md
    from hplsim.calibrate.archive import ArchiveWriter
    from hplsim.hpl.hpldat import format_hpl_dat

    w = ArchiveWriter()
    columns = ["order", "repetition", "label", *HplConfig.__dataclass_fields__, "time_s", "gflops", "residual",
               "residual_check", "wall_s", "start", "load_before", "other_load", "probe_before_gflops",
               "probe_after_gflops", *(f"phase_{name}_s" for name in PHASES)]
    w.add_table("results/hpl.csv", pd.DataFrame([r.row() for r in runs], columns=columns))
    if kernels is not None:
        w.add_table("results/kernels.csv", kernels)
    for name, text in outputs.items():
        w.add_text(name, text)
    w.add_text("HPL.dat", format_hpl_dat(HplParams.from_configs(configs, threshold)))
    w.add_json("environment.json", md.environment())
    info_log = md.CommandLog()
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    lscpu = info_log.run(["lscpu"]).stdout if shutil.which("lscpu") else ""
    if cpuinfo:
        w.add_text(f"hosts/{socket.gethostname()}/cpuinfo", cpuinfo)
    if lscpu:
        w.add_text(f"hosts/{socket.gethostname()}/lscpu.txt", lscpu)
    if shutil.which("ldd"):
        info_log.run(["ldd", str(binary)])  # which MPI and BLAS libraries the binary loads
    meta: dict[str, Any] = {"kind": "hpl", "status": status}
    if reason:
        meta["abort_reason"] = reason
    meta.update({
        "hplsim": md.git_info(info_log), "command_line": md.command_line(),
        "start_time": start_time, "end_time": md.now_iso(),
        "run": {**launch.metadata(), "binary": str(binary), "rank_environment": RANK_ENV,
                "argv_example": launch.argv(max(c.ranks for c in configs), binary)},
        "traced": kernels is not None,
        "probe": probe.describe() if probe is not None else None,
        "hpl": {"configurations": len(configs), "repeat": repeat, "shuffled": shuffle, "seed": seed,
                "min_seconds": min_seconds, "max_repeat": MAX_REPEAT_FACTOR * repeat,
                "threshold": threshold, "hpl_dat": "HPL.dat lists every configuration; each run used an HPL.dat "
                                                    "holding its configuration only"},
        "cpu": md.cpu_summary(lscpu, cpuinfo), "versions": md.versions(info_log, {}, False),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "counts": {"planned": planned if planned is not None else len(configs) * repeat, "measured": len(runs)},
    })
    return write_or_fallback(out, lambda p: w.write(p, meta, [*log.entries, *info_log.entries]), "the run archive")


def read_results(path: Path, configs: Sequence[HplConfig], repeat: int) -> list[RealResult] | None:
    """The results of `configs` in an archive `run_real` wrote (validate's --reuse), if it is
    complete and holds every configuration at least `repeat` times; else None."""
    from hplsim.calibrate.archive import read_archive

    a = read_archive(path)
    if a.status != "complete" or not a.has_table("hpl"):
        return None
    table = a.table("hpl")
    fields = list(HplConfig.__dataclass_fields__)
    out = []
    for c in configs:
        mine = table
        for f in fields:
            mine = mine[mine[f] == getattr(c, f)]
        if len(mine) < repeat:
            return None
        res = RealResult(c)
        for _, r in mine.iterrows():
            res.runs.append(RealRun(c, int(r.repetition), int(r.order), float(r.time_s), float(r.gflops),
                                    _number(r, "residual"), str(r.residual_check), float(r.wall_s),
                                    float(r.start), _number(r, "load_before"), _number(r, "other_load"),
                                    _number(r, "probe_before_gflops"), _number(r, "probe_after_gflops"),
                                    _phases(r)))
        out.append(res)
    return out


def _phases(row: Any) -> dict[str, float] | None:
    """A run's phase times, if it was run with --phases (archives before them lack the columns)."""
    values = {name: _number(row, f"phase_{name}_s") for name in PHASES}
    return None if any(v is None for v in values.values()) else values  # type: ignore[misc]


def _number(row: Any, column: str) -> float | None:
    v = row.get(column, float("nan"))
    return None if pd.isna(v) else float(v)

