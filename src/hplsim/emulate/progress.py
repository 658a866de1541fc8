"""Progress of a running simulation, from inside it.

Rank 0 of the emulated HPL writes one line ``JA SIMULATED_TIME`` each time HPL
initialises a panel (JA: the panel's first global column) to a pipe whose write end the
simulation inherits (``csrc/kernel-models/progress.c``). `ProgressPipe` reads that pipe
in a thread and hands each record to a listener; `panels_done` and `flops_done` turn a
record into the two measures of progress a bar shows (panels for the time left, flops for
the Gflops so far: docs/predict.md says why).
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Iterable, Iterator

ENV = "HPLSIM_PROGRESS_FD"

Listener = Callable[[int, float], None]  # (first column of the panel being set up, simulated s)


def remaining_flops(r: int) -> float:
    """Floating-point operations of LU (with its right-hand side) left when r columns of an
    r x (r+1) trailing matrix remain: column s (s rows left) costs s-1 divisions and a
    rank-1 update of (s-1) x s, i.e. (s-1)(2s+1). Summed: 2r³/3 + r²/2 - 7r/6; the total
    for r = N is HPL's 2N³/3 + O(N²)."""
    return (2 * r**3) / 3 + r**2 / 2 - 7 * r / 6


def panel_count(n: int, nb: int) -> int:
    return -(-n // nb)


def panels_done(ja: int, nb: int) -> int:
    """Panels before the one starting at column `ja`. With look-ahead (DEPTH d), HPL sets
    a panel up d iterations before factoring it: the count runs up to d panels ahead."""
    return ja // nb


def parse_records(chunks: Iterable[bytes]) -> Iterator[tuple[int, float]]:
    """The (JA, simulated time) records of a byte stream cut anywhere; a malformed line
    (never written by the runtime) is skipped rather than stopping the display."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            fields = line.split()
            if len(fields) != 2:
                continue
            try:
                yield int(fields[0]), float(fields[1])
            except ValueError:
                continue


class ProgressPipe:
    """A pipe for one simulation's progress. Pass `fd` to the simulation (``pass_fds``) and
    `env` to its environment; each record goes to `listener` from a reader thread.

    The write end stays open here until the simulation is over (`close`), so the
    simulation never writes to a pipe without a reader (no SIGPIPE); the runtime writes
    without blocking, so a slow listener only loses lines."""

    def __init__(self, listener: Listener):
        self.listener = listener
        self._read, self.fd = os.pipe()
        self.env = {ENV: str(self.fd)}
        self._thread = threading.Thread(target=self._pump, name="hplsim-progress", daemon=True)
        self._thread.start()

    def _chunks(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = os.read(self._read, 65536)
            except OSError:
                return
            if not chunk:
                return
            yield chunk

    def _pump(self) -> None:
        for ja, sim_time in parse_records(self._chunks()):
            try:
                self.listener(ja, sim_time)
            except Exception:  # noqa: BLE001 - a display error must not end the simulation
                pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        # The simulation has exited (or been killed with its process group): EOF follows.
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            os.close(self._read)

    def __enter__(self) -> "ProgressPipe":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def flops_done(n: int, ja: int) -> float:
    """Flops of the factorization done before column `ja`."""
    return remaining_flops(n) - remaining_flops(n - min(max(ja, 0), n))


class PanelBar:
    """A terminal bar for one simulation (tqdm): panels set up out of ceil(N/NB), wall time
    and the time left, HPL's simulated time and its Gflops so far (flops done / simulated
    time, as HPL 2.2+ prints in its own progress lines).

    The time left is tqdm's: panels left times the recent wall time per panel. Not the flop
    count: a panel's simulation costs about the same whatever its flops (SMPI's cost is per
    event, and HPL's messages and calls per panel barely depend on the trailing matrix),
    whereas its flops fall like the trailing size squared; measured in
    docs/experiments (progress.md)."""

    def __init__(self, n: int, nb: int, desc: str = "", file=None, position: int | None = None,
                 leave: bool = True, disable: bool = False):
        import sys

        from tqdm import tqdm

        self.n, self.nb = n, nb
        self.bar = tqdm(
            total=panel_count(n, nb), desc=desc, unit="panel", file=file or sys.stderr, position=position,
            leave=leave, disable=disable, dynamic_ncols=True, mininterval=0.5, smoothing=0.1,
            bar_format="{desc}{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} panels "
                       "[{elapsed}<{remaining}{postfix}]",
        )

    def __call__(self, ja: int, sim_time: float) -> None:
        done = min(panels_done(ja, self.nb), self.bar.total)
        postfix = f"HPL {sim_time:.4g} s"
        if sim_time > 0 and ja > 0:
            postfix += f", {flops_done(self.n, ja) / sim_time / 1e9:.4g} Gflops so far"
        self.bar.set_postfix_str(postfix, refresh=False)
        if done > self.bar.n:
            self.bar.update(done - self.bar.n)

    def finish(self) -> None:
        """The simulation succeeded: every panel is done (the last records may be lost)."""
        self.bar.update(self.bar.total - self.bar.n)
        self.bar.refresh()  # update() draws at most every mininterval: show the end state

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> "PanelBar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RunBars:
    """One `PanelBar` per simulation in flight (a sweep's), under an overall bar at position
    0: a run's bar appears with its first record and goes when `done` is called. Records
    come from a relay thread, `done` from the coordinator: a lock keeps them apart."""

    def __init__(self, describe: Callable[[str], tuple[int, int, str]], file=None):
        self.describe = describe  # task hash -> (N, NB, label)
        self.file = file
        self.bars: dict[str, PanelBar] = {}
        self.positions: dict[str, int] = {}
        self.finished: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, key: str, ja: int, sim_time: float) -> None:
        with self.lock:
            if key in self.finished:
                return
            bar = self.bars.get(key)
            if bar is None:
                taken = set(self.positions.values())
                position = self.positions[key] = next(p for p in range(1, len(self.bars) + 2) if p not in taken)
                n, nb, label = self.describe(key)
                bar = self.bars[key] = PanelBar(n, nb, f"  {label}: ", file=self.file, position=position, leave=False)
            bar(ja, sim_time)

    def done(self, key: str) -> None:
        with self.lock:
            self.finished.add(key)
            bar = self.bars.pop(key, None)
            self.positions.pop(key, None)
            if bar is not None:
                bar.close()

    def close(self) -> None:
        with self.lock:
            for bar in self.bars.values():
                bar.close()
            self.bars.clear()
            self.positions.clear()
