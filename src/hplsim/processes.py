"""Children and temporary folders never outlive hplsim.

- Every program hplsim starts (smpirun, mpirun, the calibration tools) goes through
  `popen`: it gets SIGTERM from the kernel when hplsim dies, even by SIGKILL (Linux's
  PR_SET_PDEATHSIG). SIGTERM, not SIGKILL, so that smpirun and mpirun, which fork the
  real work, pass it on to their own children before they go.
- `handle_signals` turns SIGTERM and SIGHUP into `Interrupted`, raised where hplsim is, so
  that every `finally` runs: children killed, temporary folders removed.
- `run_dir` names each temporary folder after the process that made it
  (``hplsim-<kind>-<pid>-<random>``); `clean_stale_dirs`, run at each start, removes those
  whose process is gone (a SIGKILL runs no code of ours).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from hplsim.errors import HplsimError, Interrupted

_PR_SET_PDEATHSIG = 1
_STALE = re.compile(r"^\.?hplsim-[a-z]+-(\d+)-")


def _prctl():
    """libc's prctl, looked up in the parent: the child between fork and exec must not
    dlopen (another thread of ours may have held the loader's lock at the fork)."""
    global _PRCTL
    if _PRCTL is None:
        try:
            _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _PRCTL = False  # not Linux
    return _PRCTL


_PRCTL = None


def set_parent_death_signal(signum: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send `signum` to this process when its parent thread ends."""
    prctl = _prctl()
    return bool(prctl) and prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0


# Held in the parent while it forks (`popen`): a preexec_fn makes Python run the at-fork
# hooks of the modules (logging's releases its lock), and a signal handler that raises
# there is "ignored" — a traceback on stderr and the interrupt lost (seen: SIGTERM during
# `hplsim calibrate`'s start). Held, the signal waits until the child exists.
_HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def _die_with(parent: int, mask: set[signal.Signals] | None):
    _prctl()

    def preexec() -> None:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # the child's own, as before the fork
        set_parent_death_signal()
        if os.getppid() != parent:  # the parent died between fork and prctl
            os._exit(1)
    return preexec


def popen(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """subprocess.Popen whose child gets SIGTERM when hplsim dies.

    The signal is tied to the thread that starts the child: start it from the thread that
    waits for it (every caller does). SIGINT, SIGTERM and SIGHUP are held while the child
    is created; one that came meanwhile is raised once `popen` has the child, which it then
    stops, so that no caller is left with a child it does not know about."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    proc = None
    try:
        proc = subprocess.Popen(list(argv), preexec_fn=_die_with(os.getpid(), old), **kwargs)
    finally:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a held signal's handler runs here
        except BaseException:
            if proc is not None and kwargs.get("start_new_session"):
                kill_group(proc)
            elif proc is not None:
                proc.kill()
                proc.wait()
            raise
    return proc


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_group(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """Stop a child started in its own session and everything in its process group:
    SIGTERM first when `grace` > 0 (seconds to wait), then SIGKILL; reaps the child."""
    if grace > 0 and proc.returncode is None:
        _signal_group(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    _signal_group(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        proc.wait()


#: process groups (of children started in a session of their own) being waited for in
#: `killed_on_failure`: what `watch_parent` kills if this process's parent dies
_WAITED_GROUPS: set[int] = set()


@contextlib.contextmanager
def killed_on_failure(proc: subprocess.Popen, timeout_message: str) -> Iterator[None]:
    """Wait for `proc` inside the block: if the wait times out, or anything else goes wrong
    (an interruption included), its whole process group is killed; a timeout becomes one
    error line saying `timeout_message`."""
    _WAITED_GROUPS.add(proc.pid)
    try:
        yield
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise HplsimError(timeout_message) from None
    except BaseException:
        kill_group(proc)
        raise
    finally:
        _WAITED_GROUPS.discard(proc.pid)


def watch_parent(period: float = 0.2) -> None:
    """End this process, and the process groups it waits for, soon after its parent dies,
    from a thread of its own: the second line of defence behind PR_SET_PDEATHSIG, which
    only works if the main thread gets to run the signal handler (a sweep's worker killed
    with its coordinator must not finish a run nobody will store, nor leave it running)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(period)
        for group in list(_WAITED_GROUPS):
            _signal_group(group, signal.SIGKILL)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="hplsim-watch-parent", daemon=True).start()


#: how long an interruption that landed inside subprocess's lock waits to be raised again
RETRY_S = 0.01


def in_waitpid_race(frame: Any) -> bool:
    """Whether `frame` is a Popen method that has just taken the Popen's ``_waitpid_lock``
    with ``acquire(False)`` and not yet entered the ``try`` that releases it. Python checks
    for signals right after that call returns: an exception raised there leaves the lock
    held, and every later ``wait()`` (subprocess.run's own clean-up among them) blocks for
    ever. A SIGTERM hung ``hplsim calibrate`` so, in ``git rev-parse``'s run, for 11 min."""
    if frame is None or frame.f_code.co_filename != subprocess.__file__:
        return False
    lock = getattr(frame.f_locals.get("self"), "_waitpid_lock", None)
    if lock is None or not lock.locked():
        return False
    import linecache

    return "_waitpid_lock.acquire(" in linecache.getline(frame.f_code.co_filename, frame.f_lineno)


#: calls of `raise_safely` running: a signal that lands inside one (the retry's own, when the
#: timer thread starts slowly on a loaded machine) is deferred too, since raising it there
#: would leave through the frame the outer one interrupted, inside subprocess's lock
_handling = 0


def _defer(signum: int) -> None:
    """Raise `signum` again a moment later, once the lock is in its try (or released)."""
    threading.Timer(RETRY_S, os.kill, (os.getpid(), signum)).start()


def raise_safely(signum: int, frame: Any, exc: BaseException) -> None:
    """For a signal handler: raise `exc` now, or, if the signal landed where raising would
    leave subprocess's lock held (`in_waitpid_race`) or inside another such handler, send
    `signum` again a moment later and return. Every handler of hplsim's that raises goes
    through here: one that raised at once hung `hplsim calibrate --others spin` on a
    SIGTERM (CI, 2026-12)."""
    global _handling
    if _handling:
        _defer(signum)
        return
    _handling += 1
    try:
        if in_waitpid_race(frame):
            _defer(signum)
            return
    finally:
        _handling -= 1
    raise exc


def interruption(signum: int) -> BaseException:
    """What a signal raises in hplsim: KeyboardInterrupt for SIGINT, else `Interrupted`."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


def _raise(signum: int, frame: Any) -> None:
    raise_safely(signum, frame, interruption(signum))


def handle_signals() -> None:
    """SIGTERM and SIGHUP raise `Interrupted` in the main thread, SIGINT KeyboardInterrupt,
    never inside subprocess's lock (`in_waitpid_race`). Python's default for SIGTERM and
    SIGHUP is to die on the spot, running no `finally`."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _raise)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise)


@contextlib.contextmanager
def noted_interrupts(stop_on_sigterm: bool = False) -> Iterator[list[int]]:
    """Notes each SIGINT and SIGTERM in the list it yields, for a loop to look at between
    its steps: Python drops an exception that a signal's handler raises while a finaliser
    runs (it prints "Exception ignored in …" and goes on), and a sweep or a search whose
    Ctrl-C landed there would run to its end. The handlers already in place still act
    (`handle_signals`'s, which may defer the raise); with `stop_on_sigterm`, SIGTERM
    raises KeyboardInterrupt, so that a batch system's stop is a Ctrl-C. Outside the main
    thread, signals are left alone (and nothing is noted)."""
    seen: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: Any) -> None:
        seen.append(signum)
        before = previous[signum]
        if signum == signal.SIGTERM and stop_on_sigterm:
            raise_safely(signum, frame, KeyboardInterrupt())
        elif callable(before):
            before(signum, frame)
        else:
            raise_safely(signum, frame, interruption(signum))

    try:
        for sig in previous:
            signal.signal(sig, handler)
    except ValueError:  # not the main thread
        yield seen
        return
    try:
        yield seen
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before if before is not None else signal.SIG_DFL)


def raise_noted(seen: Sequence[int]) -> None:
    """Raise the interruption `seen` (from `noted_interrupts`) holds, if any."""
    if seen:
        raise KeyboardInterrupt if seen[-1] == signal.SIGINT else Interrupted(seen[-1])


@contextlib.contextmanager
def run_dir(kind: str, parent: Path | None = None) -> Iterator[Path]:
    """A temporary folder ``hplsim-<kind>-<pid>-XXXX`` (in `parent`, default the system's
    temporary folder), removed when the block ends, however it ends. A `parent` of its own
    (a shared folder next to the output) is cleaned of stale folders first: the start of
    hplsim cleans only the temporary folder."""
    if parent is not None:
        clean_stale_dirs(parent)
    folder = Path(tempfile.mkdtemp(prefix=f"hplsim-{kind}-{os.getpid()}-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's parentheses (field 3 on); None if
    unknown."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _started_at(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), from /proc; None if unknown."""
    stat = _stat(pid)
    try:
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        ticks = float(stat[19])  # field 22
    except (OSError, StopIteration, ValueError, IndexError, TypeError):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def _zombie(pid: int) -> bool:
    """Whether `pid` has exited and waits to be reaped: a killed run's workers stay so until
    their new parent reaps them, which a loaded machine's init can take its time to do."""
    stat = _stat(pid)
    return stat is not None and stat[:1] == ["Z"]


def running(pid: int) -> bool:
    """Whether process `pid` of this host runs: it exists (or is another user's) and is not
    a zombie (a killed process not yet reaped has stopped running)."""
    return _alive(pid) and not _zombie(pid)


def _owner_alive(pid: int, touched_at: float) -> bool:
    """Whether the process that made a folder still runs: a process with its pid that started
    after the folder was last changed is another one (pids wrap at pid_max, 32,768 here, and
    a folder whose owner was killed was kept for a newcomer with its pid); a zombie runs no
    more."""
    if not running(pid):
        return False
    started = _started_at(pid)
    return started is None or started <= touched_at + 1.0  # btime and ticks: to the second


def clean_stale_dirs(parent: Path | None = None) -> list[Path]:
    """Remove the temporary folders left by hplsim processes that no longer run."""
    folder = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _STALE.match(entry.name)
        if not m or not entry.is_dir(follow_symlinks=False):
            continue
        pid = int(m.group(1))
        try:
            touched = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if pid == os.getpid() or _owner_alive(pid, touched):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed
