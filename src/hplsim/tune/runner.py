"""Running the search's simulations under a hard budget, through the sweep's store and
executors: a run already in the store (same configuration, seed, platform and model) is
reused at no cost, so a tune that was interrupted, or re-run with a larger budget, only
runs what it lacks.

The budget counts the simulations' measured wall time (seconds of one core each). Before a
batch starts, its estimated cost (cost.py) must fit in what is left; each run of the batch
gets a timeout of its share of what is left (its estimate scaled up to the remaining
budget), so the batch, run to the end, cannot overspend: a run that overruns its share is
killed and stored as failed.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.processes import raise_noted
from hplsim.sweep.executors import Executor
from hplsim.sweep.store import ResultStore
from hplsim.sweep.tasks import Outcome, Task, config_hash, config_key, run_task
from hplsim.sweep.variants import Variant
from hplsim.hpl.cost import estimate_s


#: seconds per run that its timeout does not bound: writing its inputs, killing smpirun
RESERVE_PER_RUN_S = 0.3


class BudgetSpent(HplsimError):
    """The next batch does not fit in what is left of the budget."""


@dataclass
class Result:
    gflops: float
    time_s: float


def run_charge(config: HplConfig) -> float:
    """What a run is set against the budget before it starts: its estimated simulation time
    and the reserve for its set-up and kill (the plan prices the first rung with it too)."""
    return estimate_s(config) + RESERVE_PER_RUN_S


@dataclass
class Runner:
    variant: Variant
    store: ResultStore
    executor: Executor | None  # None: in this process, one run after the other
    budget_s: float
    spent_s: float = 0.0
    reused: int = 0
    ran: int = 0
    failed: int = 0
    sweep_id: int | None = None
    log: list[str] = field(default_factory=list)
    mine: set[str] = field(default_factory=set)  # runs this tune launched (the rest were in the store)
    counted: set[str] = field(default_factory=set)
    signals: list[int] = field(default_factory=list)  # noted interruptions (processes.noted_interrupts)
    # the successful runs this tune launched: their estimates (cost.py) and measured walls
    priced_s: float = 0.0
    measured_s: float = 0.0

    def _task(self, config: HplConfig, seed: int, timeout: float | None) -> Task:
        key = config_key(config, seed, self.variant.platform_digest, self.variant.model.digest)
        return Task(config, seed, 0, key, config_hash(key), timeout)

    def charge(self, runs: Sequence[tuple[HplConfig, int]]) -> float:
        """What `run` sets against the budget before starting `runs`: the charge of each of
        those the store does not hold yet."""
        return sum(run_charge(c) for c, _ in self._missing(runs))

    @property
    def left_s(self) -> float:
        return self.budget_s - self.spent_s

    @property
    def law_ratio(self) -> float | None:
        """Measured wall over the cost law's estimate, summed over the successful runs this
        tune launched: below 1, this machine simulates faster than the plan assumed."""
        return self.measured_s / self.priced_s if self.priced_s > 0 else None

    def _missing(self, runs: Sequence[tuple[HplConfig, int]]) -> list[tuple[HplConfig, int]]:
        runs = list(dict.fromkeys(runs))
        stored = self.store.statuses(self._task(c, s, None).hash for c, s in runs)
        return [(c, s) for c, s in runs if stored.get(self._task(c, s, None).hash) != "ok"]

    def stored(self, runs: Sequence[tuple[HplConfig, int]]) -> list[tuple[HplConfig, int]]:
        """Those of `runs` the store already holds as successful: `run` gives them for free."""
        missing = set(self._missing(runs))
        return [r for r in dict.fromkeys(runs) if r not in missing]

    def run(self, runs: Sequence[tuple[HplConfig, int]]) -> dict[tuple[HplConfig, int], Result]:
        """Every run's result (failed runs left out); BudgetSpent if the missing ones'
        estimate exceeds what is left."""
        runs = list(dict.fromkeys(runs))
        todo = self._missing(runs)
        # a run's set-up and its kill on timeout happen outside its timeout: kept in reserve
        left = self.left_s - RESERVE_PER_RUN_S * len(todo)
        estimate = sum(estimate_s(c) for c, _ in todo)
        if todo and estimate > left:
            raise BudgetSpent(f"the next {len(todo)} simulation(s) need about {self.charge(runs):.1f} s, "
                              f"{max(self.left_s, 0):.1f} s of the budget are left")
        if todo:
            scale = left / estimate
            tasks = [self._task(c, s, estimate_s(c) * scale) for c, s in todo]
            for task, outcome in self._execute(tasks):
                self.mine.add(task.hash)
                self.spent_s += outcome.sim_wall_s or 0.0
                self.store.record(task, self.variant, outcome, self.sweep_id)
                if outcome.status == "ok":
                    self.ran += 1
                    self.priced_s += estimate_s(task.config)
                    self.measured_s += outcome.sim_wall_s or 0.0
                else:
                    self.failed += 1
                    self.log.append(f"N={task.config.n} NB={task.config.nb} {task.config.p}x{task.config.q} "
                                    f"{task.config.label()} seed {task.seed}: {outcome.error}")
                raise_noted(self.signals)  # an interruption a finaliser swallowed: stop here
        for c, s in runs:  # each stored run this tune did not launch, once
            h = self._task(c, s, None).hash
            if h not in self.mine and h not in self.counted:
                self.counted.add(h)
                self.reused += 1
        by_hash = {r["hash"]: r for r in self.store.runs("ok")} if runs else {}
        out = {}
        for c, s in runs:
            row = by_hash.get(self._task(c, s, None).hash)
            if row is not None:
                out[(c, s)] = Result(float(row["gflops"]), float(row["time_s"]))
        return out

    def shares(self, config: HplConfig, seed: int) -> dict[str, float] | None:
        """Each kernel's share of HPL's time in one more run of `config` (in this process,
        with the per-kernel report), for the model part of the interval; None when the model
        declares no uncertainty, or the budget cannot pay for it."""
        from hplsim.predict import predict
        from hplsim.models.intervals import kernel_shares

        left = self.left_s - RESERVE_PER_RUN_S
        if not self.variant.model.model.uncertainty or estimate_s(config) > left:
            return None
        start = time.perf_counter()
        try:
            p = predict(config, self.variant.platform, self.variant.model, seed, left, breakdown=True)
        except HplsimError as exc:
            self.log.append(f"the kernel shares' run failed: {exc}")
            return None
        finally:
            self.spent_s += time.perf_counter() - start
        return kernel_shares(p.breakdown, p.time_s)

    def _execute(self, tasks: list[Task]) -> Iterator[tuple[Task, Outcome]]:
        by_hash = {t.hash: t for t in tasks}
        if self.executor is None:
            for t in tasks:
                start = time.perf_counter()
                outcome = run_task(t, self.variant)
                if outcome.sim_wall_s is None:  # a failure before the simulation: its time still counts
                    outcome = Outcome(**{**outcome.__dict__, "sim_wall_s": time.perf_counter() - start})
                yield t, outcome
            return
        with contextlib.closing(self.executor.run(tasks, [self.variant])) as outcomes:
            for outcome in outcomes:
                task = by_hash.get(outcome.hash)
                if task is not None:
                    yield task, outcome


def open_store(db: Path | None, scratch: Path) -> ResultStore:
    return ResultStore(db if db is not None else scratch / "tune.sqlite")
