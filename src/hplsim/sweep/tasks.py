"""One run of a sweep: what a worker receives (`Task` + its `Variant`) and returns
(`Outcome`), and the key that identifies it in the results store.

`run_task` runs on whatever executes the sweep (a local worker process, a Dask worker, a
Slurm job): it never touches the store and never raises for a failed simulation — the
failure is an outcome like any other, stored with its message.
"""

from __future__ import annotations

import hashlib
import json
import socket
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from hplsim import __version__
from hplsim.errors import HplsimError
from hplsim.hpl.config import HplConfig
from hplsim.sweep.variants import Variant


def config_key(config: HplConfig, seed: int, platform_digest: str, model_digest: str,
               version: str = __version__) -> str:
    """The canonical JSON of everything a result depends on (the run's identity)."""
    return json.dumps(
        {"hpl": config.as_dict(), "seed": seed, "platform_digest": platform_digest,
         "model_digest": model_digest, "hplsim_version": version},
        sort_keys=True, separators=(",", ":"),
    )


def config_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Task:
    config: HplConfig
    seed: int
    variant: int  # index into the sweep's variants (sent once per worker, not per task)
    key: str
    hash: str
    timeout: float | None

    @property
    def cost(self) -> float:
        """Relative simulation cost: the emulation's wall time grows like N·P·Q/NB
        (one panel broadcast and swap per block column, over all ranks)."""
        return self.config.n * self.config.ranks / self.config.nb


@dataclass(frozen=True)
class Outcome:
    hash: str
    status: str  # "ok" or "failed"
    gflops: float | None = None
    time_s: float | None = None
    sim_wall_s: float | None = None
    sim_memory_bytes: int | None = None
    error: str | None = None
    started_at: str = ""
    finished_at: str = ""
    worker: str = ""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def run_task(task: Task, variant: Variant, progress=None) -> Outcome:
    """`progress`: called with (panel's first column, simulated time) as the run goes."""
    from hplsim.predict import predict  # on workers only: keeps the coordinator's import light

    started = now()
    begin = time.perf_counter()
    worker = socket.gethostname()
    try:
        p = predict(task.config, variant.platform, variant.model, task.seed, task.timeout, progress=progress)
    except HplsimError as exc:
        return Outcome(task.hash, "failed", error=str(exc), started_at=started, finished_at=now(), worker=worker,
                       sim_wall_s=time.perf_counter() - begin)
    except Exception as exc:  # noqa: BLE001 - a bug in one run must not end the sweep; keep its trace short
        return Outcome(task.hash, "failed", error=f"internal error: {type(exc).__name__}: {exc}",
                       started_at=started, finished_at=now(), worker=worker)
    return Outcome(task.hash, "ok", p.gflops, p.time_s, p.sim_wall_s, p.sim_memory_bytes, None,
                   started, now(), worker)


def run_chunk(tasks: list[Task], variants: dict[int, Variant]) -> list[Outcome]:
    """Several tasks one after the other (one Slurm array element runs a chunk)."""
    return [run_task(t, variants[t.variant]) for t in tasks]
