"""Facts about this machine that several stages read (Linux /proc)."""

from __future__ import annotations

from pathlib import Path


def meminfo_kib(key: str) -> int | None:
    """A field of /proc/meminfo in KiB (e.g. ``MemAvailable``), or None where unreadable."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def mem_available() -> int | None:
    """Bytes of memory available to new processes, or None where unknown."""
    kib = meminfo_kib("MemAvailable")
    return None if kib is None else kib * 1024
