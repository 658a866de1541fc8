"""Facts about this machine that several stages read (Linux /proc and /sys)."""

from __future__ import annotations

import re
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


def cpu_flags() -> set[str]:
    """The instruction-set flags of this host's first CPU (/proc/cpuinfo), empty where unknown."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except (OSError, IndexError):
        pass
    return set()


#: x86 vector extensions, narrowest first, with the OpenBLAS kernel set (its
#: OPENBLAS_CORETYPE name) that uses each
_VECTOR_ISAS = (("avx", "AVX", "Sandybridge"), ("avx2", "AVX2", "Haswell"), ("avx512f", "AVX-512", "SkylakeX"))
#: OpenBLAS's x86 kernel sets (`openblas_get_corename()`, lower case) by the widest extension
#: they use; a name not listed is an older, SSE-only one (Prescott, Core2, Nehalem, …)
_CORE_ISA = {"sandybridge": "avx", "bulldozer": "avx", "piledriver": "avx", "steamroller": "avx",
             "excavator": "avx", "haswell": "avx2", "zen": "avx2", "skylakex": "avx512f",
             "cooperlake": "avx512f", "sapphirerapids": "avx512f"}


def wider_blas_core(blas_version: str | None, flags: set[str]) -> tuple[str, str, str] | None:
    """When this BLAS runs a narrower vector extension than the CPU has: the kernel set it
    runs, the CPU's widest extension and the OPENBLAS_CORETYPE that selects it. None when it
    uses the widest, or when it cannot tell.

    >>> wider_blas_core("OpenBLAS 0.3.21 DYNAMIC_ARCH (core: Prescott)", {"sse2", "avx", "avx2", "avx512f"})
    ('Prescott', 'AVX-512', 'SkylakeX')
    >>> wider_blas_core("OpenBLAS 0.3.26 (core: Haswell)", {"avx", "avx2"}) is None
    True
    """
    found = re.search(r"\(core: ([\w-]+)\)", blas_version or "")
    have = [isa for isa in _VECTOR_ISAS if isa[0] in flags]
    if found is None or not have:
        return None
    core = found.group(1)
    used = _CORE_ISA.get(core.lower())
    used_rank = next((i for i, isa in enumerate(_VECTOR_ISAS) if isa[0] == used), -1)
    widest = have[-1]
    if _VECTOR_ISAS.index(widest) <= used_rank:
        return None
    return core, widest[1], widest[2]


def blas_below_cpu(blas_version: str | None, flags: set[str]) -> str | None:
    """Why this BLAS runs below the CPU: its kernels use a narrower vector extension than
    the CPU has (a CPU model newer than the OpenBLAS, which then falls back to old
    kernels). None when it uses the widest, or when it cannot tell.

    >>> blas_below_cpu("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64 (core: Prescott)",
    ...                {"sse2", "avx", "avx2", "avx512f"})
    'OpenBLAS runs its Prescott kernels on a CPU with AVX-512: dgemm, and so HPL, runs here well below the CPU; OPENBLAS_CORETYPE=SkylakeX selects the AVX-512 kernels of an OpenBLAS built for several CPUs (DYNAMIC_ARCH)'
    >>> blas_below_cpu("OpenBLAS 0.3.21 DYNAMIC_ARCH (core: SkylakeX)", {"avx", "avx2", "avx512f"}) is None
    True
    >>> blas_below_cpu("OpenBLAS 0.3.26 (core: armv8)", {"fp", "asimd"}) is None
    True
    """
    wider = wider_blas_core(blas_version, flags)
    if wider is None:
        return None
    core, isa, coretype = wider
    return (f"OpenBLAS runs its {core} kernels on a CPU with {isa}: dgemm, and so HPL, runs here well "
            f"below the CPU; OPENBLAS_CORETYPE={coretype} selects the {isa} kernels of an OpenBLAS "
            "built for several CPUs (DYNAMIC_ARCH)")
