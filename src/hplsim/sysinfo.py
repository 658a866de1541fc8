"""Facts about this machine that several stages read (Linux /proc and /sys)."""

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


def last_level_cache_bytes(default: int = 32 << 20) -> int:
    """Size of the largest CPU cache of this host (sysfs), `default` when not exposed."""
    best = 0
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = f.read_text().strip().upper()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            best = max(best, int(text.rstrip("KMG")) * mult)
        except (OSError, ValueError):
            continue
    return best or default


def l1_set_span_bytes(default: int = 4096) -> int:
    """Bytes after which an address falls in the same set of the first-level data cache
    again (its sets × its line size, sysfs); `default` when not exposed."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for d in sorted(base.glob("index*")):
        try:
            if (d / "level").read_text().strip() == "1" and (d / "type").read_text().strip() in ("Data", "Unified"):
                span = int((d / "number_of_sets").read_text()) * int((d / "coherency_line_size").read_text())
                if span > 0:
                    return span
        except (OSError, ValueError):
            continue
    return default
