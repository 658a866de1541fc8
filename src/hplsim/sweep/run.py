"""The sweep stage: plan the runs, skip those already stored, execute the rest anywhere,
store each outcome as it arrives.

Resuming is nothing special: a run is identified by its hash, so re-running a sweep (after
it finished, failed, or was killed) only runs what the store does not hold yet — and,
with ``retry_failed``, what failed before.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hplsim.emulate.progress import RunBars
from hplsim.errors import HplsimError, warn
from hplsim.processes import noted_interrupts
from hplsim.sweep.executors import Executor
from hplsim.sweep.plan import Invalid, make_plan
from hplsim.sweep.spec import SweepSpec
from hplsim.sweep.store import HEARTBEAT_S, ResultStore, SweepCounts, heartbeat
from hplsim.sweep.tasks import Outcome, Task

MAX_LISTED = 5  # invalid combinations / failures printed one by one, then counted
WAIT_POLL_S = 0.5  # how often a sweep looks whether another sweep stored the runs it waits for
DISK_FULL = "No space left on device"  # strerror(ENOSPC), in a failed simulation's message


def work_dir(db: Path) -> Path:
    """Where a store's derived files live (models, platforms, submitit logs)."""
    return Path(f"{db}.files")


@dataclass
class SweepResult:
    planned: int = 0
    already_stored: int = 0
    failed_before: int = 0  # stored failures not retried
    invalid: list[Invalid] = field(default_factory=list)
    ok: int = 0
    failed: int = 0
    interrupted: bool = False
    by_others: int = 0  # runs of the plan another sweep ran meanwhile (stored by it)
    wall_s: float = 0.0
    executor: str = ""

    @property
    def ran(self) -> int:
        return self.ok + self.failed


def _eprint(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def describe_task(task: Task) -> str:
    c = task.config
    return f"N={c.n} NB={c.nb} {c.p}x{c.q} {c.label()} seed {task.seed}"


def report_invalid(invalid: list[Invalid], log: Callable[[str], None]) -> None:
    if not invalid:
        return
    log(f"hplsim: skipped {len(invalid)} invalid combination{'s' if len(invalid) > 1 else ''}:")
    for item in invalid[:MAX_LISTED]:
        log(f"  {item.description}: {item.reason}")
    reasons = Counter(_reason_kind(i.reason) for i in invalid[MAX_LISTED:])
    for kind, count in reasons.most_common():
        log(f"  ... and {count} more: {kind}")


def _reason_kind(reason: str) -> str:
    """Group messages that differ only by numbers: "NB (256) must not exceed N (200)"."""
    return re.sub(r"\d+", "#", reason)


class _InputFiles:
    """The spec's model and platform files, as they were when the sweep read them. Every
    run uses that content (read once, sent to the workers) and is keyed by its digest; a
    file edited meanwhile does not change the runs, but the user is told that the sweep
    did not run the new content."""

    def __init__(self, spec: SweepSpec):
        self.files = {what: (path, self._stat(path), self._digest(path))
                      for what, path in (("model file", spec.model_path), ("platform file", spec.platform_path))
                      if path is not None}
        self.told: set[str] = set()

    @staticmethod
    def _stat(path: Path) -> tuple | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    @staticmethod
    def _digest(path: Path) -> str | None:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None

    def check(self) -> None:
        for what, (path, stat, digest) in self.files.items():
            if what in self.told or self._stat(path) == stat:  # stat first: a run's check costs no read
                continue
            if self._digest(path) != digest:
                self.told.add(what)
                warn(f"{what} {path} changed on disk during the sweep: this sweep runs and stores the content "
                     "it read at its start, keyed by that content's digest; run the sweep again for the new content")


class _Heartbeat:
    """Keeps this sweep's claims fresh, so that other sweeps on the store wait for its runs
    instead of taking them over (a sweep on another host cannot be seen to die otherwise)."""

    def __init__(self, db: Path, sweep_id: int):
        self.db, self.sweep_id = db, sweep_id
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="hplsim-heartbeat")

    def _run(self) -> None:
        while not self.stopping.wait(HEARTBEAT_S):
            with contextlib.suppress(Exception):  # a missed beat only makes the claims look older
                heartbeat(self.db, self.sweep_id)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    # On a terminal: smooth updates. In a log file: a line now and then, not thousands.
    interval = 0.5 if sys.stderr.isatty() else 10.0
    return tqdm(total=total, desc="sweep", unit="run", file=sys.stderr, disable=not enabled,
                mininterval=interval, dynamic_ncols=True, smoothing=0.05)


def run_sweep(spec: SweepSpec, db: Path, executor: Executor, retry_failed: bool = False,
              progress: bool = True, log: Callable[[str], None] = _eprint,
              select: Callable[[Task], bool] | None = None,
              on_outcome: Callable[[Task, Outcome], None] | None = None) -> SweepResult:
    """Run what the store lacks of the spec's runs (those `select` keeps, when given: a
    subset of the product, as `benchmarks/factorial.py` runs), storing each outcome as it
    comes and then telling `on_outcome`."""
    start = time.perf_counter()
    executor.check()
    inputs = _InputFiles(spec)
    plan = make_plan(spec, work_dir(db), spec.timeout)
    if select is not None:
        plan.tasks = [t for t in plan.tasks if select(t)]
    inputs.check()  # changed while the plan read it: say so now
    result = SweepResult(planned=len(plan.tasks), invalid=plan.invalid)
    report_invalid(plan.invalid, log)
    if not plan.tasks:
        first = plan.invalid[0] if plan.invalid else None
        raise HplsimError(f"sweep spec {spec.source}: no valid combination to run"
                          + (f" (e.g. {first.description}: {first.reason})" if first else ""))
    for v in plan.variants:
        if v.note:
            log(f"hplsim: {v.platform_variation} / {v.model_variation}: {v.note}")

    with ResultStore(db) as store:
        seen = store.stored_state(t.hash for t in plan.tasks)
        stored = {h: status for h, (status, _) in seen.items()}
        todo = [t for t in plan.tasks
                if t.hash not in stored or (retry_failed and stored[t.hash] == "failed")]
        result.already_stored = sum(1 for s in stored.values() if s == "ok")
        result.failed_before = 0 if retry_failed else sum(1 for s in stored.values() if s == "failed")
        seeds = f" x {len(spec.seeds)} seeds" if len(spec.seeds) > 1 else ""
        variants = f" on {len(plan.variants)} platform/model variants" if len(plan.variants) > 1 else ""
        configs = len({(t.config, t.variant) for t in plan.tasks})
        log(f"hplsim: {spec.source}: {len(plan.tasks)} runs ({configs} configurations{seeds}{variants}); "
            f"{result.already_stored} already stored"
            + (f", {result.failed_before} failed before (not retried: --retry-failed)" if result.failed_before else "")
            + (f", {len(stored) - result.already_stored} failed before, retried" if retry_failed and
               len(stored) > result.already_stored else "")
            + f"; {len(todo)} to run")
        by_hash = {t.hash: t for t in todo}
        sweep_id = store.begin_sweep(spec.source, spec.text, executor.name)
        status = "interrupted"
        listed_failures = 0
        elsewhere: dict[str, Task] = {}  # runs another live sweep on the store is running
        # Each run's panels under the overall bar, on a terminal, where the executor can say them.
        per_run = RunBars(lambda h: (by_hash[h].config.n, by_hash[h].config.nb, describe_task(by_hash[h])),
                          file=sys.stderr)
        if progress and sys.stderr.isatty() and hasattr(executor, "progress"):
            executor.progress = per_run
        beat = _Heartbeat(db, sweep_id)
        try:
            with noted_interrupts(stop_on_sigterm=True) as signals, _progress_bar(len(todo), progress and bool(todo)) as bar, \
                    contextlib.closing(per_run):

                def kept(exc: HplsimError, lost: str = "") -> HplsimError:
                    return HplsimError(f"{exc}; {lost}the {result.ran} runs this sweep stored before are kept: "
                                       "re-run the same command to continue")

                def admit(task: Task) -> bool:
                    try:
                        answer = store.claim(task.hash, sweep_id, seen.get(task.hash))
                    except HplsimError as exc:
                        raise kept(exc) from None
                    if answer == "busy":
                        elsewhere[task.hash] = task
                    elif answer == "stored":  # another sweep stored it since this one looked
                        result.by_others += 1
                        bar.update(1)
                    return answer == "mine"

                def execute(tasks: list[Task]) -> None:
                    nonlocal listed_failures
                    if getattr(executor, "admits", False):
                        runs = executor.run(tasks, plan.variants, admit)
                    else:  # an executor that takes every task at once: claim them now
                        runs = executor.run([t for t in tasks if admit(t)], plan.variants)
                    with contextlib.closing(runs) as outcomes:
                        for outcome in outcomes:
                            task = by_hash.get(outcome.hash)
                            per_run.done(outcome.hash)
                            if task is None:
                                continue
                            inputs.check()
                            if outcome.status != "ok" and DISK_FULL in (outcome.error or ""):
                                # the machine's fault, not the run's: stored as failed it would
                                # pass for a result; stop with what is stored, as a full store does
                                raise kept(HplsimError(f"the run {describe_task(task)} could not run: the disk "
                                                       f"is full ({outcome.error})"), "it is not stored, ")
                            try:
                                store.record(task, plan.variants[task.variant], outcome, sweep_id)
                            except HplsimError as exc:
                                raise kept(exc, f"the run {describe_task(task)} is lost, ") from None
                            if on_outcome is not None:
                                on_outcome(task, outcome)
                            if outcome.status == "ok":
                                result.ok += 1
                            else:
                                result.failed += 1
                                if listed_failures < MAX_LISTED:
                                    listed_failures += 1
                                    bar.write(f"hplsim: failed: {describe_task(task)}: {outcome.error}",
                                              file=sys.stderr)
                                bar.set_postfix(failed=result.failed, refresh=False)
                            bar.update(1)
                            if signals:  # an interruption a finaliser swallowed: stop at this run
                                raise KeyboardInterrupt

                beat.start()
                execute(todo)
                told = False
                while elsewhere:  # wait for the other sweep's outcomes; take over those it gave up
                    if signals:
                        raise KeyboardInterrupt
                    now_seen = store.stored_state(elsewhere)
                    for h in [h for h in elsewhere if now_seen.get(h) != seen.get(h)]:
                        del elsewhere[h]
                        result.by_others += 1
                        bar.update(1)
                    orphans = [elsewhere.pop(h) for h in list(elsewhere) if store.claimer(h) is None]
                    if orphans:
                        execute(orphans)
                    elif elsewhere:
                        if not told:
                            told = True
                            bar.write(f"hplsim: waiting for {len(elsewhere)} runs that another sweep on {db} is "
                                      f"running ({store.claimer(next(iter(elsewhere)))})", file=sys.stderr)
                        time.sleep(WAIT_POLL_S)
                if signals:
                    raise KeyboardInterrupt
            status = "done"
        except KeyboardInterrupt:
            result.interrupted = True
            raise
        except BaseException:
            status = "error"  # e.g. the Dask scheduler went away: the runs stored so far stay
            raise
        finally:
            beat.stop()
            result.wall_s = time.perf_counter() - start
            result.executor = getattr(executor, "description", "") or executor.name
            counts = SweepCounts(len(plan.tasks), result.already_stored, len(plan.invalid), result.ok, result.failed)
            with contextlib.suppress(Exception):  # never hide the interrupt behind a store error
                store.end_sweep(sweep_id, counts, status)
            with contextlib.suppress(Exception):
                store.release(sweep_id)
            if result.interrupted:
                log(f"hplsim: interrupted after {result.ran} of {len(todo)} runs; they are stored, "
                    "re-run the same command to continue")
    if todo:
        log(f"hplsim: {result.ran} runs in {result.wall_s:.1f} s ({result.executor}): {result.ok} ok, "
            f"{result.failed} failed" + (f" (errors: hplsim sweep show {db} --failed)" if result.failed else "")
            + (f"; {result.by_others} run by another sweep on the store at the same time" if result.by_others else ""))
    else:
        log(f"hplsim: nothing to run: all {len(plan.tasks)} runs are in {db}")
    return result
