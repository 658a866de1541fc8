"""The sweep stage: plan the runs, skip those already stored, execute the rest anywhere,
store each outcome as it arrives.

Resuming is nothing special: a run is identified by its hash, so re-running a sweep (after
it finished, failed, or was killed) only runs what the store does not hold yet — and,
with ``retry_failed``, what failed before.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hplsim.emulate.progress import RunBars
from hplsim.errors import HplsimError
from hplsim.processes import noted_interrupts
from hplsim.sweep.executors import Executor
from hplsim.sweep.plan import Invalid, make_plan
from hplsim.sweep.spec import SweepSpec
from hplsim.sweep.store import ResultStore, SweepCounts
from hplsim.sweep.tasks import Task

MAX_LISTED = 5  # invalid combinations / failures printed one by one, then counted


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


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    # On a terminal: smooth updates. In a log file: a line now and then, not thousands.
    interval = 0.5 if sys.stderr.isatty() else 10.0
    return tqdm(total=total, desc="sweep", unit="run", file=sys.stderr, disable=not enabled,
                mininterval=interval, dynamic_ncols=True, smoothing=0.05)


def run_sweep(spec: SweepSpec, db: Path, executor: Executor, retry_failed: bool = False,
              progress: bool = True, log: Callable[[str], None] = _eprint) -> SweepResult:
    start = time.perf_counter()
    executor.check()
    plan = make_plan(spec, work_dir(db), spec.timeout)
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
        stored = store.statuses(t.hash for t in plan.tasks)
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
        # Each run's panels under the overall bar, on a terminal, where the executor can say them.
        per_run = RunBars(lambda h: (by_hash[h].config.n, by_hash[h].config.nb, describe_task(by_hash[h])),
                          file=sys.stderr)
        if progress and sys.stderr.isatty() and hasattr(executor, "progress"):
            executor.progress = per_run
        try:
            with noted_interrupts(stop_on_sigterm=True) as signals, _progress_bar(len(todo), progress and bool(todo)) as bar, \
                    contextlib.closing(executor.run(todo, plan.variants)) as outcomes, \
                    contextlib.closing(per_run):
                for outcome in outcomes:
                    task = by_hash.get(outcome.hash)
                    per_run.done(outcome.hash)
                    if task is None:
                        continue
                    store.record(task, plan.variants[task.variant], outcome, sweep_id)
                    if outcome.status == "ok":
                        result.ok += 1
                    else:
                        result.failed += 1
                        if listed_failures < MAX_LISTED:
                            listed_failures += 1
                            bar.write(f"hplsim: failed: {describe_task(task)}: {outcome.error}", file=sys.stderr)
                        bar.set_postfix(failed=result.failed, refresh=False)
                    bar.update(1)
                    if signals:  # an interruption a finaliser swallowed: stop at this run
                        raise KeyboardInterrupt
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
            result.wall_s = time.perf_counter() - start
            result.executor = getattr(executor, "description", "") or executor.name
            counts = SweepCounts(len(plan.tasks), result.already_stored, len(plan.invalid), result.ok, result.failed)
            with contextlib.suppress(Exception):  # never hide the interrupt behind a store error
                store.end_sweep(sweep_id, counts, status)
            if result.interrupted:
                log(f"hplsim: interrupted after {result.ran} of {len(todo)} runs; they are stored, "
                    "re-run the same command to continue")
    if todo:
        log(f"hplsim: {result.ran} runs in {result.wall_s:.1f} s ({result.executor}): {result.ok} ok, "
            f"{result.failed} failed" + (f" (errors: hplsim sweep show {db} --failed)" if result.failed else ""))
    else:
        log(f"hplsim: nothing to run: all {len(plan.tasks)} runs are in {db}")
    return result
