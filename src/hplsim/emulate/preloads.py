"""The libraries preloaded into the simulation process: pure speed, never a different
prediction (each is tested against the run without it, to the bit).

- the free thread clock (`csrc/sim-preload`, E15): SMPI reads the thread's CPU clock around
  every MPI call, a system call, for a measurement `smpi/simulate-computation:no` never
  uses. `HPLSIM_THREAD_CLOCK=real` leaves SMPI the real clock.
- jemalloc (Debian's `libjemalloc2`, docs/predict.md "The simulation process"): SimGrid
  allocates and frees a handful of small objects per simulated message (requests,
  activities, solver variables), and glibc's allocator spent about a tenth of the
  simulation's CPU on them. `HPLSIM_ALLOCATOR=glibc` keeps glibc's; without the package
  the simulation only runs slower.
"""

from __future__ import annotations

import ctypes.util
import functools
import os
from pathlib import Path

from hplsim.hpl.build import preload_library

ALLOCATOR_LIBRARY = "jemalloc"


@functools.cache
def _installed_allocator() -> str | None:
    return ctypes.util.find_library(ALLOCATOR_LIBRARY)  # runs ldconfig -p: once


def allocator() -> str | None:
    """The soname of the allocator to preload (the dynamic loader finds it on its own
    path), or None when it is not installed or `HPLSIM_ALLOCATOR=glibc`."""
    if os.environ.get("HPLSIM_ALLOCATOR") == "glibc":
        return None
    return _installed_allocator()


def simulation_preloads(binary: Path) -> list[str]:
    """What to put in the simulation's LD_PRELOAD for an emulated build `binary`."""
    libs = [] if os.environ.get("HPLSIM_THREAD_CLOCK") == "real" else [str(preload_library(binary))]
    if (alloc := allocator()) is not None:
        libs.append(alloc)
    return libs
