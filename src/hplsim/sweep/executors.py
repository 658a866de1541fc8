"""Executors: where a sweep's runs execute, behind one interface.

``executor.run(tasks, variants)`` yields each task's `Outcome` as it completes, in any
order; the caller (the coordinator) stores it. Executors never write the store, so a
result is stored once, by one process, whatever runs the simulations.

- `LocalExecutor`: a pool of worker processes on this machine (one simulation per core
  by default, fewer if memory is short);
- `DaskExecutor`: a running ``dask.distributed`` scheduler (``dask://host:port``);
- `SubmititExecutor`: Slurm job arrays through submitit (``slurm``), or submitit's local
  mode (``submitit-local``: the same code path with local processes, used in tests).
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Protocol, Sequence

from hplsim.errors import HplsimError
from hplsim.processes import raise_safely, set_parent_death_signal, watch_parent
from hplsim.sweep.tasks import Outcome, Task, now, run_chunk, run_task
from hplsim.sweep.variants import Variant

#: Memory one simulation may take: SimGrid's core plus a few MB per rank (measured:
#: 23-305 MB up to 1,024 ranks; ~2 GB for 1,024 ranks at N = 50k-75k). A rough upper bound.
BASE_MEMORY = 64 * 2**20
MEMORY_PER_RANK = 2 * 2**20
JOB_TIME_PER_RUN = 2 * 3600.0  # s: submitit jobs' time limit per run when runs have no timeout


class Executor(Protocol):
    name: str

    def check(self) -> None:
        """Raise HplsimError now if this executor cannot work here (before the store is touched)."""

    def run(self, tasks: Sequence[Task], variants: Sequence[Variant]) -> Iterator[Outcome]: ...


#: how often a sweep's main thread wakes while it waits for runs, to act on a signal
SIGNAL_CHECK_S = 0.2

def _failed(task: Task, error: str) -> Outcome:
    return Outcome(task.hash, "failed", error=error, started_at=now(), finished_at=now())


def largest_first(tasks: Sequence[Task]) -> list[Task]:
    """Longest runs first: fewer idle workers at the end of the sweep."""
    return sorted(tasks, key=lambda t: -t.cost)


# ------------------------------------------------------------------------------ local


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_estimate(task: Task) -> int:
    return BASE_MEMORY + MEMORY_PER_RANK * task.config.ranks


def default_jobs(tasks: Sequence[Task]) -> tuple[int, str]:
    """One simulation per usable core, fewer when the largest run's estimated memory times
    the number of workers would not fit in the available memory. Returns (jobs, why)."""
    cores = usable_cores()
    memory = available_memory()
    need = max((memory_estimate(t) for t in tasks), default=BASE_MEMORY)
    if memory is None:
        return cores, f"{cores} cores"
    fit = max(1, memory // need)
    if fit < cores:
        return fit, f"{cores} cores, but {memory / 2**30:.1f} GiB available / ~{need / 2**30:.1f} GiB per run"
    return cores, f"{cores} cores, {memory / 2**30:.1f} GiB available"


_WORKER_VARIANTS: Sequence[Variant] = ()
_WORKER_BUSY = False
_WORKER_PROGRESS = None  # a queue of (task hash, panel column, simulated time) to the coordinator


def _worker_init(variants: Sequence[Variant], progress_queue=None) -> None:
    """Runs in each pool process. Ctrl-C goes to the coordinator only (it then stops the
    workers); SIGTERM ends a worker through SystemExit, which kills its simulation
    (run_smpirun kills the smpirun process group on any exception); and a worker whose
    coordinator dies, even by SIGKILL, gets SIGTERM from the kernel (Linux's
    PR_SET_PDEATHSIG) instead of finishing a run nobody will store, and, should the
    signal's handler not get to run, `watch_parent` ends it and its simulation anyway."""
    global _WORKER_VARIANTS, _WORKER_PROGRESS
    _WORKER_VARIANTS = variants
    _WORKER_PROGRESS = progress_queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    parent = os.getppid()
    # not Linux: workers then finish their current run after a SIGKILL
    if set_parent_death_signal() and (parent == 1 or os.getppid() != parent):
        os._exit(1)  # the coordinator died before prctl: nothing to work for (and no traceback)
    watch_parent()


def _on_sigterm(signum, frame) -> None:
    if _WORKER_BUSY:  # unwinds through run_smpirun, which kills the simulation
        raise_safely(signum, frame, SystemExit(128 + signum))
        return
    os._exit(128 + signum)


def _run_in_worker(task: Task) -> Outcome:
    global _WORKER_BUSY
    _WORKER_BUSY = True
    queue = _WORKER_PROGRESS
    progress = (lambda ja, sim_time: queue.put_nowait((task.hash, ja, sim_time))) if queue is not None else None
    try:
        return run_task(task, _WORKER_VARIANTS[task.variant], progress)
    except SystemExit:
        # Leave now: the pool would catch SystemExit, report it and wait for more work on a
        # queue whose other end (the coordinator) may be gone.
        os._exit(143)
    finally:
        _WORKER_BUSY = False


class LocalExecutor:
    """A pool of `jobs` worker processes, each running one simulation at a time."""

    name = "local"

    def __init__(self, jobs: int | None = None):
        self.jobs = jobs
        self.description = ""
        # Set by the coordinator to see each run's panels: called with (task hash, panel's
        # first column, simulated time) from a relay thread.
        self.progress: Callable[[str, int, float], None] | None = None

    def check(self) -> None:
        pass

    #: `run` takes `admit`: asked about each task just before it starts (sweeps sharing a store)
    admits = True

    def run(self, tasks: Sequence[Task], variants: Sequence[Variant],
            admit: Callable[[Task], bool] | None = None) -> Iterator[Outcome]:
        """`admit(task)`: False skips the task (another sweep runs it). Tasks are handed to
        the pool only as workers free up, so that the question is asked when it matters."""
        if not tasks:
            return
        jobs, why = (self.jobs, "--jobs") if self.jobs else default_jobs(tasks)
        jobs = min(jobs, len(tasks))
        self.description = f"local pool of {jobs} ({why})"
        # spawn, not fork: a forked worker would inherit the coordinator's open SQLite
        # connection (SQLite forbids using or closing it across fork) and its threads' locks.
        # a coordinator killed by SIGKILL leaves the pool's semaphores to multiprocessing's
        # resource tracker, which then warns about them in words meant for developers
        os.environ.setdefault("PYTHONWARNINGS", "ignore::UserWarning:multiprocessing.resource_tracker")
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue() if self.progress else None
        relay = threading.Thread(target=_relay, args=(queue, self.progress), daemon=True) if queue else None
        if relay:
            relay.start()
        pool = cf.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_init,
                                      initargs=(list(variants), queue))
        waiting = iter(largest_first(tasks))
        futures: dict[cf.Future, Task] = {}

        def fill() -> None:
            while len(futures) < jobs:
                task = next(waiting, None)
                if task is None:
                    return
                if admit is None or admit(task):
                    futures[pool.submit(_run_in_worker, task)] = task

        finished = False
        try:
            fill()
            while futures:
                # with a timeout: a signal the kernel hands to another of this process's
                # threads only sets Python's flag, and a main thread blocked without one
                # would see it when the run ends (a SIGTERM waited 30 s, or a run's hours)
                done, _ = cf.wait(futures, timeout=SIGNAL_CHECK_S, return_when=cf.FIRST_COMPLETED)
                if not done:
                    continue
                outcomes, broken = [], False
                for future in done:
                    task = futures.pop(future)
                    try:
                        outcomes.append(future.result())
                    except cf.process.BrokenProcessPool:
                        broken = True
                    except Exception as exc:  # noqa: BLE001 - reported as this run's failure
                        outcomes.append(_failed(task, f"worker error: {type(exc).__name__}: {exc}"))
                if not broken:
                    fill()  # the freed workers start their next runs while the outcomes are stored
                yield from outcomes
                if broken:
                    raise HplsimError("a local worker process died (out of memory?); completed runs are stored, "
                                      "re-run the sweep to continue")
            finished = True
        finally:
            if finished:
                pool.shutdown(wait=True)
            else:
                _stop_pool(pool)
            if relay:
                queue.put(None)
                relay.join(timeout=5)


def _relay(queue, listener: Callable[[str, int, float], None]) -> None:
    """Hands the workers' progress records to the coordinator's listener until None."""
    while True:
        try:
            item = queue.get()
        except (EOFError, OSError):
            return
        if item is None:
            return
        try:
            listener(*item)
        except Exception:  # noqa: BLE001 - a display error must not end the sweep
            pass


def _stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Interrupted: drop queued runs and end the running ones now (SIGTERM -> the worker
    kills its smpirun), instead of waiting for them to finish."""
    processes = list(getattr(pool, "_processes", {}).values())  # no public API before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(timeout=10)
    # the executor's manager thread then notices its dead workers and ends; joining it here
    # keeps Python 3.11's exit hook from waking it through a pipe already closed (a
    # traceback on stderr, "Bad file descriptor", after the sweep's one error line)
    pool.shutdown(wait=True)


# ------------------------------------------------------------------------------- dask


def dask_address(executor: str) -> str:
    """``dask://host:port`` -> ``tcp://host:port`` (``tcp://`` / ``tls://`` pass as is)."""
    if executor.startswith("dask://"):
        rest = executor[len("dask://"):]
        if not rest:
            raise HplsimError("--executor dask:// needs the scheduler's address, e.g. dask://10.0.0.1:8786")
        return rest if "://" in rest else f"tcp://{rest}"
    return executor


class DaskExecutor:
    """Runs on the workers of a running Dask scheduler. The variants are sent once to
    every worker (scatter), the tasks one by one. Each worker thread runs one simulation:
    start workers with as many threads as cores (``dask worker ADDR --nthreads N``)."""

    def __init__(self, address: str, connect_timeout: float = 30.0):
        self.address = address
        self.name = f"dask {address}"
        self.description = self.name
        self.connect_timeout = connect_timeout

    def check(self) -> None:
        try:
            import distributed  # noqa: F401
        except ModuleNotFoundError as exc:
            if exc.name != "distributed":  # installed but broken: a bug to report, not an absence
                raise
            raise HplsimError("the dask executor needs dask.distributed (pip install 'dask[distributed]')") from None

    def run(self, tasks: Sequence[Task], variants: Sequence[Variant]) -> Iterator[Outcome]:
        if not tasks:
            return
        from distributed import Client, as_completed
        try:
            client = Client(self.address, timeout=self.connect_timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise HplsimError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        futures = []
        try:
            threads = client.nthreads()  # worker -> threads
            if not threads:
                raise HplsimError(f"the Dask scheduler at {self.address} has no workers")
            self.description = f"dask {self.address} ({len(threads)} workers, {sum(threads.values())} threads)"
            shared = client.scatter(list(variants), broadcast=True, hash=False)
            ordered = largest_first(tasks)
            futures = [client.submit(run_task, t, shared[t.variant], pure=False) for t in ordered]
            by_key = {f.key: t for f, t in zip(futures, ordered)}
            done = as_completed(futures, loop=client.loop)
            while not done.is_empty():
                batch = done.next_batch(block=False)  # never blocked: a signal acts at once (local run)
                if not batch:
                    time.sleep(SIGNAL_CHECK_S)
                    continue
                for future in batch:
                    task = by_key[future.key]
                    try:
                        yield future.result()
                    except Exception as exc:  # noqa: BLE001 - e.g. a worker died: this run failed
                        yield _failed(task, f"dask: {type(exc).__name__}: {exc}")
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                client.cancel(pending)  # runs already started finish on their workers, unstored
            client.close()


# ---------------------------------------------------------------------------- submitit


class SubmititExecutor:
    """One job array; each array element runs a chunk of `chunk` runs one after the other
    and returns their outcomes (short runs would otherwise cost more in scheduling than in
    simulation). On Slurm, `jobs` caps the array elements running at once."""

    def __init__(self, cluster: str, folder: Path, jobs: int | None = None, chunk: int | None = None,
                 parameters: dict | None = None, poll_s: float | None = None):
        if cluster not in ("slurm", "local"):
            raise HplsimError(f"unknown submitit cluster {cluster!r}")
        self.cluster = cluster
        self.folder = Path(folder)
        self.jobs = jobs
        self.chunk = chunk
        self.parameters = dict(parameters or {})  # submitit's update_parameters (slurm_partition, mem_gb ...)
        self.poll_s = poll_s if poll_s is not None else (0.5 if cluster == "local" else 15.0)
        self.name = "slurm" if cluster == "slurm" else "submitit-local"
        self.description = self.name

    def _chunks(self, tasks: list[Task]) -> list[list[Task]]:
        if self.chunk:
            size = self.chunk
        elif self.cluster == "local":  # one chunk per local worker
            size = math.ceil(len(tasks) / (self.jobs or usable_cores()))
        else:
            size = 1
        # Round-robin over the largest-first order: chunks of similar total cost.
        count = math.ceil(len(tasks) / size)
        return [tasks[i::count] for i in range(count)]

    def check(self) -> None:
        try:
            import submitit  # noqa: F401
        except ModuleNotFoundError as exc:
            if exc.name != "submitit":
                raise
            raise HplsimError("the slurm executor needs submitit (pip install submitit)") from None
        if self.cluster == "slurm" and not _which("sbatch"):
            raise HplsimError("--executor slurm: sbatch not found (is this a Slurm login node?); "
                              "use --executor submitit-local to try the same path locally")

    def submitit_executor(self, chunks: list[list[Task]]):
        """submitit's executor, configured (submitit checks the parameter names)."""
        import submitit

        executor = submitit.AutoExecutor(folder=self.folder / "%j", cluster=self.cluster)
        # The job's time limit: its runs' timeouts, or JOB_TIME_PER_RUN each when none is set
        # (24 h per run would ask a batch system for days). --slurm-time overrides it.
        timeout = max((t.timeout or JOB_TIME_PER_RUN) for c in chunks for t in c)
        params: dict = {"timeout_min": math.ceil(max(len(c) for c in chunks) * timeout / 60) + 5,
                        "name": "hplsim-sweep"}
        if self.cluster == "slurm":
            params.update(cpus_per_task=1, slurm_array_parallelism=self.jobs or 256)
        params.update(self.parameters)
        executor.update_parameters(**params)
        return executor

    def run(self, tasks: Sequence[Task], variants: Sequence[Variant]) -> Iterator[Outcome]:
        if not tasks:
            return
        chunks = self._chunks(largest_first(tasks))
        executor = self.submitit_executor(chunks)
        jobs = executor.map_array(run_chunk, chunks, [_variants_for(c, variants) for c in chunks])
        self.description = f"{self.name} ({len(jobs)} array jobs of <= {max(len(c) for c in chunks)} runs, " \
                           f"logs in {self.folder})"
        pending = dict(zip(range(len(jobs)), jobs))
        try:
            while pending:
                for i, job in list(pending.items()):
                    if not job.done():
                        continue
                    del pending[i]
                    try:
                        outcomes = job.result()
                    except Exception as exc:  # noqa: BLE001 - the array element failed: its runs did
                        reason = " ".join(str(exc).split())[-300:]
                        outcomes = [_failed(t, f"{self.name} job {job.job_id} failed: {reason}") for t in chunks[i]]
                    yield from outcomes
                if pending:
                    time.sleep(self.poll_s)
        finally:
            for job in pending.values():
                try:
                    job.cancel(check=False)
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass


def _variants_for(chunk: list[Task], variants: Sequence[Variant]) -> dict[int, Variant]:
    return {t.variant: variants[t.variant] for t in chunk}


def _which(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


# ----------------------------------------------------------------------------- factory


def make_executor(spec: str, jobs: int | None, workdir: Path, chunk: int | None = None,
                  slurm: dict | None = None) -> Executor:
    """`slurm`: submitit parameters for Slurm (slurm_partition, timeout_min, mem_gb ...)."""
    if jobs is not None and jobs < 1:
        raise HplsimError(f"--jobs must be at least 1, got {jobs}")
    if spec == "local":
        return LocalExecutor(jobs)
    if spec.startswith(("dask://", "tcp://", "tls://")):
        return DaskExecutor(dask_address(spec))
    if spec == "slurm":
        return SubmititExecutor("slurm", workdir / "submitit", jobs, chunk, slurm)
    if spec == "submitit-local":
        return SubmititExecutor("local", workdir / "submitit", jobs, chunk)
    raise HplsimError(f"unknown executor {spec!r} (local, dask://HOST:PORT, slurm, submitit-local)")
